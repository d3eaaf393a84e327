/*
 * threads.c -- thread create+join cost (ns per pthread_create + the thread
 * running one traced function + pthread_join), built uninstrumented and with
 * funtrace-gcc by bench/run.
 *
 *   threads [--threads N] [--runs R]
 *
 * Prints "ns_per_op <value>" per run (N create+join pairs, one at a time).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t thread_work(uint64_t x)
{
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

static void *body(void *arg)
{
    sink += thread_work((uint64_t)(uintptr_t)arg);
    return NULL;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = 1000;
    int runs = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: threads [--threads N] [--runs R]\n");
            return 2;
        }
    }
    if (n < 1 || runs < 1) {
        fprintf(stderr, "threads: bad arguments\n");
        return 2;
    }
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
        uint64_t t0 = now_ns();
        for (long i = 0; i < n; i++) {
            pthread_t th;
            if (pthread_create(&th, NULL, body, (void *)(uintptr_t)i)) {
                fprintf(stderr, "threads: pthread_create failed\n");
                return 1;
            }
            pthread_join(th, NULL);
        }
        uint64_t t1 = now_ns();
        if (r >= 0)
            printf("ns_per_op %.1f\n", (double)(t1 - t0) / (double)n);
    }
    return 0;
}
