/*
 * bigcore.c -- the program behind the coreextract / gdb / decoder benchmarks.
 * Built with funtrace-gcc.  Touches (memsets) HEAP_MIB of heap so that the
 * kernel dumps it, starts THREADS threads that each fill their ring with
 * calls of a few functions (CALLS call+return pairs each), then either
 * aborts (a core) or writes a snapshot of every ring to a file.
 *
 *   bigcore --heap-mib N --threads T --calls C (--abort | --snapshot FILE)
 *
 * Ring sizes come from the runtime's settings (FUNTRACE_BUF, FUNTRACE_BUDGET).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "funtrace.h"

#define NOINL __attribute__((noinline))

static volatile uint64_t sink;

NOINL static uint64_t parse_field(uint64_t x) { __asm__ volatile("" : "+r"(x)); return x * 3 + 1; }
NOINL static uint64_t check_field(uint64_t x) { __asm__ volatile("" : "+r"(x)); return x ^ 0x5a; }
NOINL static uint64_t parse_record(uint64_t x) { return parse_field(x) + check_field(x); }
NOINL static uint64_t hash_record(uint64_t x) { __asm__ volatile("" : "+r"(x)); return x * 0x9e3779b97f4a7c15ull; }
NOINL static uint64_t store_record(uint64_t x) { return hash_record(x) + parse_record(x >> 3); }
NOINL static uint64_t handle_request(uint64_t x)
{
    uint64_t s = 0;
    for (int i = 0; i < 4; i++)
        s += store_record(x + (uint64_t)i);
    return s;
}

static long calls_per_thread = 100000;
static pthread_barrier_t done;

/* handle_request does 1 + 4 * (1 + 1 + 1 + 2) = 21 call+return pairs */
NOINL static void *worker(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg;
    for (long i = 0; i < calls_per_thread / 21 + 1; i++)
        s += handle_request(s + (uint64_t)i);
    sink += s;
    pthread_barrier_wait(&done);
    pthread_barrier_wait(&done); /* never passes the second time when aborting */
    return NULL;
}

int main(int argc, char **argv)
{
    long heap_mib = 0, threads = 4;
    const char *snap = NULL;
    int do_abort = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--heap-mib") && i + 1 < argc)
            heap_mib = atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atol(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls_per_thread = atol(argv[++i]);
        else if (!strcmp(argv[i], "--snapshot") && i + 1 < argc)
            snap = argv[++i];
        else if (!strcmp(argv[i], "--abort"))
            do_abort = 1;
        else {
            fprintf(stderr, "usage: bigcore --heap-mib N --threads T --calls C (--abort | --snapshot FILE)\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 256 || heap_mib < 0 || (!do_abort && !snap)) {
        fprintf(stderr, "bigcore: bad arguments\n");
        return 2;
    }
    if (heap_mib) {
        size_t n = (size_t)heap_mib << 20;
        char *heap = malloc(n);
        if (!heap) {
            fprintf(stderr, "bigcore: cannot allocate %ld MiB\n", heap_mib);
            return 1;
        }
        memset(heap, 0x5a, n); /* touched: the kernel dumps it */
        sink += (uint64_t)heap[n - 1];
    }
    pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
    pthread_t th[256];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t)) {
            fprintf(stderr, "bigcore: pthread_create failed\n");
            return 1;
        }
    pthread_barrier_wait(&done); /* every worker filled its ring */
    if (do_abort)
        abort();
    struct funtrace_snapshot *s = funtrace_pause_and_get_snapshot();
    if (!s) {
        fprintf(stderr, "bigcore: no snapshot\n");
        return 1;
    }
    funtrace_write_snapshot(snap, s);
    funtrace_free_snapshot(s);
    pthread_barrier_wait(&done);
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    return 0;
}
