/*
 * speedprobe.c -- how fast this CPU runs right now: the best of 5 timings of
 * a fixed chain of 2^22 dependent multiply-adds (no memory, no system call),
 * in ns.  bench/run takes one before and after every section: on a VM the
 * host can slow the guest down for seconds (another guest on the core, a
 * lower clock) without the guest's load average showing anything, and a
 * section whose probe is well above the run's fastest is NOISY.
 *
 *   speedprobe      prints one line: <ns>
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(void)
{
    double best = 0;
    uint64_t x = 1;
    for (int r = 0; r < 5; r++) {
        double t0 = now_ns();
        for (uint32_t i = 0; i < (1u << 22); i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        double t = now_ns() - t0;
        if (r == 0 || t < best)
            best = t;
    }
    /* (x printed to stderr only when 0: keeps the chain from being optimized out) */
    if (!x)
        fprintf(stderr, "speedprobe: x = 0\n");
    printf("%.0f\n", best);
    return 0;
}
