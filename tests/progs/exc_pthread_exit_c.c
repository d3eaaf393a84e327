/* exc_pthread_exit_c.c -- the C twin of exc_pthread_exit.cc: C code built
 * with -fexceptions, whose __attribute__((cleanup)) handlers pthread_exit's
 * forced unwinding runs through C's personality routine
 * (__gcc_personality_v0).  A thread ("worker") leaves through pthread_exit
 * from worker_leave, under worker_inner and worker_outer, each with a
 * guarded variable whose cleanup (guard_release) calls on_cleanup.  main
 * joins it and writes a snapshot (funtrace.raw). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <funtrace.h>

#define NI __attribute__((noinline))
volatile int sink;

NI void on_cleanup(int v) { sink += v; }
NI void guard_release(int *v) { on_cleanup(*v); }
NI void worker_leave(void) { pthread_exit(NULL); }
NI void worker_inner(void)
{
    int g __attribute__((cleanup(guard_release))) = 2;
    worker_leave();
    sink += g;
}
NI void worker_outer(void)
{
    int g __attribute__((cleanup(guard_release))) = 1;
    worker_inner();
    sink += g;
}
NI void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    worker_outer();
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
        return 1;
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
