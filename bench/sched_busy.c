/* sched_busy.c -- the busy program of bench/sched_cost: two threads pass a
 * token back and forth through pipes (every round trip is two wakeups and at
 * least two context switches: the heaviest load of scheduling events a
 * program makes), each hop through a few traced calls.  Then it takes one
 * snapshot in memory (funtrace_pause_and_get_snapshot), whose SCHEDEVT chunk
 * reads the tracefs instance when FUNTRACE_SCHED names one.
 *
 *   sched_busy ROUNDTRIPS
 * prints: "roundtrip_ns X snapshot_us Y"
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <funtrace.h>

#define NI __attribute__((noinline))
static int ab[2], ba[2];
static long rounds;
volatile long sink;

NI void work(void) { sink++; }
NI void pass(int fd) { work(); if (write(fd, "x", 1) != 1) abort(); }
NI void take(int fd) { char c; if (read(fd, &c, 1) != 1) abort(); work(); }

static void *echo(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        take(ab[0]);
        pass(ba[1]);
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 100000;
    if (pipe(ab) || pipe(ba)) return 2;
    pthread_t t;
    pthread_create(&t, NULL, echo, NULL);
    double t0 = now_ns();
    for (long i = 0; i < rounds; i++) {
        pass(ab[1]);
        take(ba[0]);
    }
    double t1 = now_ns();
    pthread_join(t, NULL);
    double s0 = now_ns();
    struct funtrace_snapshot *s = funtrace_pause_and_get_snapshot();
    double s1 = now_ns();
    funtrace_free_snapshot(s);
    printf("roundtrip_ns %.1f snapshot_us %.1f\n", (t1 - t0) / (double)rounds, (s1 - s0) / 1e3);
    return 0;
}
