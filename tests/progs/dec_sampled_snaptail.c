/* dec_sampled_snaptail.c -- the last calls of threads in a snapshot, in
 * sampled time: a worker thread and then main each call `spin`, which calls a
 * leaf and then busy-waits about SPIN_US microseconds without a traced call
 * (its return is no leaf's: never stamped).  The worker then exits; main
 * takes a snapshot (./funtrace.raw) and exits.  Each thread's last stamp is
 * before its wait: only the worker's exit and the snapshot's time bound
 * spin's end. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <funtrace.h>

#define SPIN_US 400

volatile int sink;

__attribute__((noinline)) void leaf(int x) { sink += x; }

/* (not traced: the wait logs nothing) */
__attribute__((no_instrument_function)) static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void spin(void)
{
    leaf(1);
    uint64_t end = now_ns() + SPIN_US * 1000u;
    while (now_ns() < end)
        sink++;
}

__attribute__((noinline)) void work(void)
{
    for (int i = 0; i < 1000; i++)
        leaf(i);
    spin();
}

static void *worker(void *arg)
{
    (void)arg;
    work();
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    work();
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
