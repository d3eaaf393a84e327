/*
 * hotpath.c -- the hook microbenchmark: ns per call+return of noinline
 * functions at call depth 1 (loop -> leaf) and 3 (loop -> d3a -> d3b -> leaf).
 *
 * Built once per instrumentation mode by bench/run (uninstrumented gcc,
 * funtrace-gcc -pg, -finstrument-functions, funtrace-clang, and linked with a
 * bench-local "floor" hook); the funtrace runtime is optional (weak symbols),
 * so the same source links without it.
 *
 *   hotpath [--depth 1|3] [--calls N] [--runs R] [--threads T] [--disable]
 *   hotpath --rdtsc      ns per rdtsc instruction
 *   hotpath --tsc        the runtime's TSC frequency and where it came from
 *
 * Prints one line per run: "ns_per_call <value>" (wall ns of the timed loop
 * divided by the number of call+return pairs, per thread), then
 * "ring_bytes_per_call <value>" when the runtime's ring of this thread can be
 * found (or the floor hook's position), else "ring_bytes_per_call -".
 * --threads 2 runs the same loop in 2 threads at once, each pinned to its own
 * CPU; the figure is the mean of the threads' per-call times.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "funtrace_abi.h"

/* the runtime, when linked in */
extern struct ft_root funtrace_root __attribute__((weak));
extern void funtrace_disable_tracing(void) __attribute__((weak));
extern uint64_t funtrace_ticks_per_second(void) __attribute__((weak));
/* the floor hooks' write position, when linked with them */
extern uint64_t bench_floor_get_pos(uint64_t *ring_size) __attribute__((weak));
extern void bench_floor_thread_init(void) __attribute__((weak));

#define NOINL __attribute__((noinline))

static volatile uint64_t sink;

NOINL int leaf(int x)
{
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}
NOINL int d3b(int x)
{
    int r = leaf(x);
    __asm__ volatile("" : "+r"(r));
    return r + 1;
}
NOINL int d3a(int x)
{
    int r = d3b(x);
    __asm__ volatile("" : "+r"(r));
    return r + 1;
}

NOINL uint64_t loop1(long n)
{
    uint64_t s = 0;
    for (long i = 0; i < n; i++)
        s += (uint64_t)leaf((int)i);
    return s;
}
NOINL uint64_t loop3(long n)
{
    uint64_t s = 0;
    for (long i = 0; i < n; i++)
        s += (uint64_t)d3a((int)i);
    return s;
}

static int depth = 1;
static long calls = 2000000; /* call+return pairs per run */
static int runs = 5;
static int nthreads = 1;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* one timed run: ns per call+return */
static double timed_run(void)
{
    long iters = calls / depth;
    uint64_t t0 = now_ns();
    sink += depth == 1 ? loop1(iters) : loop3(iters);
    uint64_t t1 = now_ns();
    return (double)(t1 - t0) / (double)(iters * depth);
}

/* this thread's ring position (address of the next slot) and ring size, from
 * the runtime's registry or the floor hook; *ring_size = 0 if unknown */
__attribute__((no_instrument_function)) static uint64_t ring_pos(uint64_t *ring_size)
{
    if (&funtrace_root && funtrace_root.threads) {
        uint32_t tid = (uint32_t)syscall(SYS_gettid);
        struct ft_thread *th = (struct ft_thread *)(uintptr_t)funtrace_root.threads;
        for (uint32_t i = 0; i < funtrace_root.threads_used; i++)
            if (th[i].tid == tid && th[i].state == FT_THR_ALIVE && th[i].ring) {
                *ring_size = th[i].ring_size;
                return __atomic_load_n(&th[i].pos, __ATOMIC_RELAXED) - th[i].ring;
            }
    }
    if (bench_floor_get_pos) {
        return bench_floor_get_pos(ring_size);
    }
    *ring_size = 0;
    return 0;
}

/* bytes of ring written by one loop1(n) */
__attribute__((no_instrument_function)) static uint64_t ring_bytes_of_loop(long n, uint64_t *size)
{
    uint64_t a = ring_pos(size), b;
    if (!*size)
        return 0;
    sink += loop1(n);
    b = ring_pos(size);
    return (b - a) & (*size - 1);
}

/* bytes of ring written per call+return: the difference between loops of n
 * and 2n calls (so loop1's own entry and return cancel out); < 0 if unknown */
__attribute__((no_instrument_function)) static double ring_bytes_per_call(void)
{
    uint64_t size = 0;
    long n = 1000;
    uint64_t a = ring_bytes_of_loop(n, &size);
    if (!size)
        return -1;
    if ((uint64_t)n * 2 * 64 > size / 2)
        n = (long)(size / 256);
    a = ring_bytes_of_loop(n, &size);
    uint64_t b = ring_bytes_of_loop(2 * n, &size);
    return ((double)b - (double)a) / (double)n;
}

/* ns per rdtsc instruction (back to back, the median of 5 loops) */
__attribute__((no_instrument_function)) static double rdtsc_cost(void)
{
    double v[5];
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = now_ns(), acc = 0;
        for (int i = 0; i < 1000000; i++) {
            uint32_t lo, hi;
            __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
            acc += lo ^ hi;
        }
        sink += acc;
        v[r] = (double)(now_ns() - t0) / 1e6;
    }
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
        }
    return v[2];
}

struct worker {
    pthread_t th;
    int cpu;
    pthread_barrier_t *bar;
    double ns[64];
};

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort */
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pin(w->cpu);
    if (bench_floor_thread_init)
        bench_floor_thread_init();
    sink += depth == 1 ? loop1(calls / 10) : loop3(calls / 30); /* warm up */
    for (int r = 0; r < runs; r++) {
        pthread_barrier_wait(w->bar);
        w->ns[r] = timed_run();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int disable = 0;
    if (argc == 2 && !strcmp(argv[1], "--rdtsc")) {
        printf("ns_per_rdtsc %.3f\n", rdtsc_cost());
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--tsc")) {
        if (!funtrace_ticks_per_second || !&funtrace_root) {
            fprintf(stderr, "hotpath: --tsc needs the funtrace runtime\n");
            return 2;
        }
        uint64_t hz = funtrace_ticks_per_second();
        /* enum ft_tsc_source (funtrace_abi.h) */
        static const char *src[] = { "none", "perf_event page", "CPUID 0x15", "sysfs", "calibrated",
                                     "/proc/cpuinfo" };
        uint32_t s = funtrace_root.tsc_hz_source;
        if (s < sizeof src / sizeof src[0])
            printf("tsc_hz %llu source %s\n", (unsigned long long)hz, src[s]);
        else
            printf("tsc_hz %llu source %u (unknown to bench/hotpath.c)\n", (unsigned long long)hz, s);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--depth") && i + 1 < argc)
            depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--disable"))
            disable = 1;
        else {
            fprintf(stderr, "usage: hotpath [--depth 1|3] [--calls N] [--runs R] [--threads T] [--disable]\n");
            return 2;
        }
    }
    if ((depth != 1 && depth != 3) || calls < 3 || runs < 1 || runs > 64 || nthreads < 1 || nthreads > 16) {
        fprintf(stderr, "hotpath: bad arguments\n");
        return 2;
    }
    if (disable) {
        if (!funtrace_disable_tracing) {
            fprintf(stderr, "hotpath: --disable needs the funtrace runtime\n");
            return 2;
        }
        funtrace_disable_tracing();
    }
    if (nthreads == 1) {
        pin(0);
        sink += depth == 1 ? loop1(calls / 10) : loop3(calls / 30); /* warm up, create the record */
        for (int r = 0; r < runs; r++)
            printf("ns_per_call %.3f\n", timed_run());
    } else {
        struct worker w[16];
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        for (int t = 0; t < nthreads; t++) {
            w[t].cpu = (int)(t % (ncpu > 0 ? ncpu : 1));
            w[t].bar = &bar;
            pthread_create(&w[t].th, NULL, worker_main, &w[t]);
        }
        for (int t = 0; t < nthreads; t++)
            pthread_join(w[t].th, NULL);
        for (int r = 0; r < runs; r++) {
            double s = 0;
            for (int t = 0; t < nthreads; t++)
                s += w[t].ns[r];
            printf("ns_per_call %.3f\n", s / nthreads);
        }
    }
    double b = ring_bytes_per_call();
    if (b < 0)
        printf("ring_bytes_per_call -\n");
    else
        printf("ring_bytes_per_call %.2f\n", b);
    return 0;
}
