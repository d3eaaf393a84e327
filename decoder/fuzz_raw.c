/*
 * fuzz_raw.c -- libFuzzer harness: the raw parser (every sample of the
 * input, every ring read back) and the whole decoding pipeline without
 * symbols (cuts, discovery, replay, every view into /dev/null, with filters on
 * every other input).
 *
 *   make fuzz-decoder [FUZZ_TIME=60]       (clang; seeds: decoder/fuzz/corpus)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decode.h"
#include "raw.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, 1); /* --text / --summary output */
        close(fd);
    }
    return 0;
}

static void parse_all(const uint8_t *data, size_t size)
{
    struct ftr_src src;
    ftr_src_mem(&src, data, size);
    for (int sample = -1; sample < 3; sample++) {
        struct ftr_trace t;
        if (ftr_load(&src, sample, &t, NULL, NULL) != FTR_OK)
            continue;
        for (size_t i = 0; i < t.nthreads; i++) {
            const struct ftr_thread *th = &t.threads[i];
            uint8_t buf[16 * 64];
            for (uint64_t k = 0; k < th->n && k < 4096; k += 64)
                ftr_read_entries(&src, th, k, 64, buf);
        }
        ftr_free(&t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_all(data, size);

    int fd = memfd_create("raw", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct dec_opts o;
    memset(&o, 0, sizeof o);
    o.input = path;
    o.json_path = "/dev/null";
    o.perfetto_path = "/dev/null";
    o.flame_path = "/dev/null";
    o.text = 1;
    o.summary = 1;
    o.report = 1;
    /* the filters, on every other input */
    if (size & 1) {
        o.depth = 3;
        o.min_dur = 2;
        o.since.kind = TA_FROM_END;
        o.since.ns = -1000000;
    }
    o.ncalls = 8;
    o.sample = -1;
    o.no_source = 1;
    o.sym.no_symbols = 1;
    o.sym.quiet = 1;
    decode_main(&o);
    close(fd);
    return 0;
}
