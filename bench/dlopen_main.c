/*
 * dlopen_main.c -- dlopen + dlsym + one call + dlclose cost of a small
 * library (dlopen_lib.c), built uninstrumented and with funtrace-gcc (the
 * runtime then records the module table change on each dlopen/dlclose).
 *
 *   dlopen_main LIBPATH [--iters N] [--runs R]
 *
 * Prints "ns_per_op <value>" per run.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile long sink;

int main(int argc, char **argv)
{
    long n = 500;
    int runs = 5;
    const char *lib = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !lib)
            lib = argv[i];
        else {
            fprintf(stderr, "usage: dlopen_main LIBPATH [--iters N] [--runs R]\n");
            return 2;
        }
    }
    if (!lib || n < 1 || runs < 1) {
        fprintf(stderr, "dlopen_main: bad arguments\n");
        return 2;
    }
    for (int r = -1; r < runs; r++) {
        uint64_t t0 = now_ns();
        for (long i = 0; i < n; i++) {
            void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                fprintf(stderr, "dlopen_main: %s\n", dlerror());
                return 1;
            }
            long (*fn)(long) = (long (*)(long))dlsym(h, "bench_plugin_run");
            if (!fn) {
                fprintf(stderr, "dlopen_main: no bench_plugin_run in %s\n", lib);
                return 1;
            }
            sink += fn(i);
            dlclose(h);
        }
        uint64_t t1 = now_ns();
        if (r >= 0)
            printf("ns_per_op %.1f\n", (double)(t1 - t0) / (double)n);
    }
    return 0;
}
