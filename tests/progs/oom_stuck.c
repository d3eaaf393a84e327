/*
 * oom_stuck -- a process the core writer cannot fully stop: one thread
 * waits in vfork (a killable-only sleep that PTRACE_INTERRUPT does not end)
 * for a child that sleeps, while the main thread allocates until its cgroup
 * parks it at the v1 OOM limit.  Used by tests/test_oom.py to check that a
 * watcher which cannot finish (or dies meanwhile) leaves nothing frozen and
 * no limit raised.
 *
 *   oom_stuck          prints "oom_stuck: pid N ready" when the vfork waits
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRACED __attribute__((noinline))

static char child_stack[64 * 1024] __attribute__((aligned(16)));

static int child_main(void *arg)
{
    (void)arg;
    struct timespec ts = {120, 0};
    nanosleep(&ts, NULL);
    _exit(0);
}

TRACED static void wait_for_child(void)
{
    /* CLONE_VFORK: this thread sleeps until the child exits (killable only) */
    clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
}

static void *waiter(void *arg)
{
    (void)arg;
    wait_for_child();
    return NULL;
}

TRACED static void touch(char *p, size_t n)
{
    for (size_t o = 0; o < n; o += 4096)
        p[o] = 1;
}

TRACED static void alloc_block(void)
{
    char *p = malloc(1 << 20);
    if (!p)
        abort();
    touch(p, 1 << 20);
}

int main(void)
{
    pthread_t th;
    pthread_create(&th, NULL, waiter, NULL);
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    printf("oom_stuck: pid %d ready\n", (int)getpid());
    fflush(stdout);
    for (;;) {
        alloc_block();
        ts.tv_nsec = 1000000L;
        nanosleep(&ts, NULL);
    }
}
