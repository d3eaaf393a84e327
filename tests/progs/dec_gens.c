/* dec_gens.c -- generations and wrapped rings for the decoder tests.
 *
 * Threads (names set with prctl):
 *   "sleeper": sleeper_main -> outer -> { inner -> leaf x2; napper (usleep 3 ms) }
 *              forever: every generation boundary falls inside outer (mostly in napper)
 *   "busy":    a 2 KiB ring (256 exact entries) that wraps many times per generation:
 *              busy_main -> busy_outer -> { busy_step -> leaf x50; napper (1 ms) }
 *              (argv[2]: leaf calls per round, default 50; 2 makes the ring span
 *              ~30 ms, so it holds several boundaries' escapes)
 *   main:      waits (untraced) until both threads have done their first round, then
 *              main -> main_wait (usleep argv[1] ms, default 120) -> crash_here (SIGSEGV)
 * Run with FUNTRACE_GEN_MS=10 to get ~12 generations.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "funtrace.h"

#define NI __attribute__((noinline))
volatile int sink;
static int busy_leaves = 50;
static int started; /* threads that have done a first round (a busy machine may start them late) */

NI void leaf(void) { sink++; __asm__ volatile(""); }
NI void napper(int ms) { usleep(ms * 1000); }
NI void inner(void) { leaf(); leaf(); }
NI void outer(void)
{
    for (int first = 1;; first = 0) {
        inner();
        if (first)
            __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
        napper(3);
    }
}
NI void *sleeper_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "sleeper", 0, 0, 0);
    outer();
    return 0;
}
NI void busy_step(void)
{
    for (int i = 0; i < busy_leaves; i++)
        leaf();
}
NI void busy_outer(void)
{
    for (int first = 1;; first = 0) {
        busy_step();
        if (first)
            __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
        napper(1);
    }
}
NI void *busy_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "busy", 0, 0, 0);
    funtrace_set_thread_log_buf_size(11);
    busy_outer();
    return 0;
}
NI void main_wait(int ms) { usleep(ms * 1000); }
NI void crash_here(void) { *(volatile int *)(long)sink = 1; }

int main(int argc, char **argv)
{
    pthread_t a, b;
    sink = 0;
    if (argc > 2)
        busy_leaves = atoi(argv[2]);
    pthread_create(&a, 0, sleeper_main, 0);
    pthread_create(&b, 0, busy_main, 0);
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2)
        usleep(1000);
    main_wait(argc > 1 ? atoi(argv[1]) : 120);
    crash_here();
    return 0;
}
