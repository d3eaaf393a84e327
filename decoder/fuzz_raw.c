/*
 * fuzz_raw.c -- libFuzzer harness: the raw parser (every sample of the
 * input, every ring read back) and the whole decoding pipeline without
 * symbols (cuts, discovery, replay, every view into /dev/null, with filters on
 * every other input), and the JSON with and without the replay's fast paths
 * (--reference-replay), which must be the same: an abort() when they differ.
 *
 *   make fuzz-decoder [FUZZ_TIME=60]       (clang; seeds: decoder/fuzz/corpus,
 *                                           made by decoder/fuzz/make_seeds.sh)
 *
 * It runs with -close_fd_mask=2: the decoder's own messages about damaged
 * inputs (most inputs) are discarded, while libFuzzer's output and the
 * sanitizers' reports go to libFuzzer's copy of stderr -- and so does the
 * differential check's message (through the sanitizers' report channel).
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
/* sanitizer_common: one line to the reports' file descriptor */
void __sanitizer_report_error_summary(const char *summary) __attribute__((weak));

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

/* what every decode here asks: the input at path, its last sample, no
 * symbols, no sources, no warnings; no view yet */
static void base_opts(struct dec_opts *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->input = path;
    o->sample = -1;
    o->no_source = 1;
    o->sym.no_symbols = 1;
    o->sym.quiet = 1;
}

/* the JSON of the input at path into a memory file (stdout for the decode);
 * its fd, or -1 */
static int json_of(const char *path, int reference)
{
    int fd = memfd_create("json", 0);
    if (fd < 0)
        return -1;
    fflush(stdout);
    int keep = dup(1);
    if (keep < 0 || dup2(fd, 1) < 0) {
        if (keep >= 0)
            close(keep);
        close(fd);
        return -1;
    }
    struct dec_opts o;
    base_opts(&o, path);
    o.json_path = "-";
    o.reference_replay = reference;
    decode_main(&o);
    fflush(stdout);
    dup2(keep, 1);
    close(keep);
    return fd;
}

/* the fast replay and the reference replay write the same JSON */
static void same_replays(const char *path)
{
    int a = json_of(path, 0), b = json_of(path, 1);
    if (a >= 0 && b >= 0) {
        off_t na = lseek(a, 0, SEEK_END), nb = lseek(b, 0, SEEK_END);
        char *ma = na > 0 ? mmap(NULL, (size_t)na, PROT_READ, MAP_SHARED, a, 0) : NULL;
        char *mb = nb > 0 ? mmap(NULL, (size_t)nb, PROT_READ, MAP_SHARED, b, 0) : NULL;
        int mapped = ma != MAP_FAILED && mb != MAP_FAILED; /* (else: not compared) */
        if (na != nb || (na > 0 && mapped && memcmp(ma, mb, (size_t)na))) {
            static const char msg[] = "fuzz_raw: the fast replay's JSON differs from the reference replay's";
            if (__sanitizer_report_error_summary)
                __sanitizer_report_error_summary(msg);
            else
                fprintf(stderr, "%s\n", msg);
            abort();
        }
        if (ma && ma != MAP_FAILED)
            munmap(ma, (size_t)na);
        if (mb && mb != MAP_FAILED)
            munmap(mb, (size_t)nb);
    }
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
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
    base_opts(&o, path);
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
    decode_main(&o);
    same_replays(path);
    close(fd);
    return 0;
}
