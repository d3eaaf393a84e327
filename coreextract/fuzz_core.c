/*
 * fuzz_core.c -- the coreextract fuzz harness (libFuzzer and AFL++'s
 * libAFLDriver): one input = one core file, run through exactly what
 * `coreextract CORE` runs, twice -- mapped as a file (core_open), and read
 * once as from a pipe (core_stream_open, `coreextract -`): header and note
 * parsing, PN_XNUM, the one-pass keep/drop decisions, mappings and build-ids,
 * root search (symbol, magic scan), ft_raw_emit, unwinding, the messages and
 * exit codes.  The raw goes to /dev/null.  Build and run: `make fuzz`
 * (FUZZING.md); seeds: coreextract/fuzz/seeds (coreextract/fuzz_seeds.sh).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "extract_core.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    int fd = open("/dev/null", O_WRONLY); /* the raw output (coreextract refuses a terminal) */
    if (fd >= 0 && fd != 1) {
        dup2(fd, 1);
        close(fd);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("core", MFD_CLOEXEC);
    if (fd < 0) return 0;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    if (done == size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        struct ce_core_opts o = { .core = path, .stacks = 1 };
        ce_core_extract(&o);
        o.one_pass = 1;
        ce_core_extract(&o);
    }
    close(fd);
    return 0;
}
