/* dec_epoch SECONDS: calls a traced leaf for SECONDS seconds, prints
 * "crash_at <CLOCK_REALTIME ns>" (flushed) and crashes in a traced function.
 * Run with FUNTRACE_GEN_MS=0 (no generation boundaries): after 2^32 TSC ticks
 * (about 2 s at 2 GHz) the ring holds no TSC_HI escape any more, and only the
 * thread's record knows the high half of its events' times. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NI __attribute__((noinline))

NI int epoch_leaf(int x)
{
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

NI void epoch_crash(void)
{
    *(volatile int *)0x28 = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.5, t0 = now_s();
    int x = 0;
    while (now_s() - t0 < secs)
        for (int i = 0; i < 10000; i++)
            x = epoch_leaf(x);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    printf("crash_at %lld (%d)\n", (long long)rt.tv_sec * 1000000000ll + rt.tv_nsec, x & 1);
    fflush(stdout);
    epoch_crash();
    return 0;
}
