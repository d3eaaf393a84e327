/* dec_sampled_tail.c -- the last calls before a crash, in sampled time: a
 * SIGSEGV handler of the program's own (so the runtime records when the
 * fatal signal froze tracing), then `spin`, which calls a leaf and then
 * busy-waits about SPIN_US microseconds without a traced call (its return
 * is no leaf's: never stamped), then the fault in crash_here.  The last stamp is
 * before the wait; only the freeze's time bounds spin's end. */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define SPIN_US 400

volatile int sink;
int *volatile nullp;

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

__attribute__((noinline)) void crash_here(void) { *nullp = 1; }

static void on_segv(int sig)
{
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    for (int i = 0; i < 1000; i++)
        leaf(i);
    spin();
    crash_here();
    return 0;
}
