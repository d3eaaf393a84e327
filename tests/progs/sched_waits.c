/* sched_waits.c -- scheduling states for the sched tests (test_sched.py):
 *   thread "waiter": ROUNDS x wait_for_token() -> read() on a pipe (blocked
 *                    until the waker writes: a few ms each time)
 *   thread "waker":  ROUNDS x { waits until the waiter sleeps (off its CPU,
 *                    blocked in read: /proc/.../syscall); do_work() (spins ~3 ms); hand_over() -> write() }
 *   so every round the waiter blocks >= 3 ms and is woken by the waker, however
 *   loaded the machine is
 * then, by argv[1]:
 *   snapshot  funtrace_pause_and_write_current_snapshot() (./funtrace.raw), exit 0
 *   crash     crash_here() -> SIGSEGV (a core)
 *   hold      print "ready <waiter tid> <waker tid>" and wait in idle_wait() until killed
 * Always prints "tids <waiter> <waker>" first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <funtrace.h>

#define NI __attribute__((noinline))
#define ROUNDS 5
static int fds[2];
static volatile int waiter_tid, waker_tid;
volatile unsigned long sink;

NOFUNTRACE static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

NI void wait_for_token(void)
{
    char c;
    if (read(fds[0], &c, 1) != 1) abort();
}

NI void do_work(void)
{
    double t0 = now_ms();
    while (now_ms() - t0 < 3.0) sink++;
}

/* a /proc/self/task/TID file's first bytes */
NOFUNTRACE static void task_file(int tid, const char *name, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", tid, name);
    FILE *f = fopen(path, "r");
    if (!f) abort();
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
}

/* the waiter asleep in its read() of the pipe: /proc/.../syscall answers only
 * once the thread is off its CPU and dequeued (the kernel waits for that), so
 * its sched_switch out, sleeping (S), has happened -- /proc's state letter S
 * is set before the switch, and a waiter preempted right then would be woken
 * without ever switching out asleep.  And its state is S: a waiter woken by
 * the previous token but still waiting for a CPU (R) is off its CPU inside
 * read() too (a busy host: the next round's wait would then be short) */
NOFUNTRACE static int asleep_in_read(int tid)
{
    char buf[512];
    task_file(tid, "syscall", buf, sizeof buf);
    long nr = -1, fd = -1;
    if (sscanf(buf, "%ld 0x%lx", &nr, &fd) != 2 || nr != 0 /* read */ || fd != fds[0])
        return 0;
    task_file(tid, "stat", buf, sizeof buf);
    const char *s = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return s && s[1] == ' ' && s[2] == 'S';
}

NI void hand_over(void)
{
    if (write(fds[1], "x", 1) != 1) abort();
}

NI void *waiter(void *a)
{
    (void)a;
    waiter_tid = gettid();
    pthread_setname_np(pthread_self(), "waiter");
    for (int i = 0; i < ROUNDS; i++) wait_for_token();
    return NULL;
}

NI void *waker(void *a)
{
    (void)a;
    waker_tid = gettid();
    pthread_setname_np(pthread_self(), "waker");
    for (int i = 0; i < ROUNDS; i++) {
        while (!waiter_tid || !asleep_in_read(waiter_tid)) usleep(100);
        do_work();
        hand_over();
    }
    return NULL;
}

NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

NI void idle_wait(void)
{
    for (;;) pause();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "snapshot";
    pthread_t a, b;
    if (pipe(fds)) return 2;
    pthread_create(&a, NULL, waiter, NULL);
    pthread_create(&b, NULL, waker, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("tids %d %d\n", waiter_tid, waker_tid);
    fflush(stdout);
    if (!strcmp(mode, "crash")) crash_here();
    if (!strcmp(mode, "hold")) {
        printf("ready\n");
        fflush(stdout);
        idle_wait();
    }
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
