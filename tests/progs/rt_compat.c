/* rt_compat: a program written for the original funtrace's funtrace.h --
 * uses every call and both macros; built as C (funtrace-gcc) and as C++
 * (funtrace-g++ compiles .c as C++) with -Wall -Wextra -Werror.
 *   rt_compat api       every call once (exit 0)
 *   rt_compat samples   three snapshots appended to ./funtrace.raw, one
 *                       marker function (mark0/1/2) before each
 *   rt_compat log N     funtrace_set_thread_log_buf_size(N) in a thread
 *                       named "sized", which then calls sized_work()
 *   rt_compat toggle    4 workers call toggle_work() while another thread
 *                       disables/enables tracing 20000 times; then every
 *                       worker calls after_toggle() and a snapshot is written
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <funtrace.h>

#ifdef __clang__
#define NI __attribute__((noinline))
#else
#define NI __attribute__((noinline, noclone))
#endif

volatile int sink;
NOFUNTRACE NI void never_traced(void) { sink++; }
DOFUNTRACE NI void always_traced(void) { sink++; }
NI void mark0(void) { sink++; }
NI void mark1(void) { sink++; }
NI void mark2(void) { sink++; }
NI void sized_work(void) { sink++; }
NI void toggle_work(void) { sink++; }
NI void after_toggle(void) { sink++; }

static int api(void)
{
    struct funtrace_snapshot *s;
    uint64_t t0 = funtrace_time();
    uint64_t hz = funtrace_ticks_per_second();
    never_traced();
    always_traced();
    funtrace_free_snapshot(NULL);
    s = funtrace_pause_and_get_snapshot();
    if (!s)
        return 1;
    funtrace_write_snapshot("full.raw", s);
    /* unwritable path: one line on stderr, no crash */
    funtrace_write_snapshot("/nonexistent-dir/x.raw", s);
    funtrace_free_snapshot(s);
    s = funtrace_pause_and_get_snapshot_starting_at_time(t0);
    funtrace_free_snapshot(s);
    s = funtrace_pause_and_get_snapshot_up_to_age(hz / 10);
    if (!s)
        return 1;
    funtrace_write_snapshot("age.raw", s);
    funtrace_free_snapshot(s);
    funtrace_disable_tracing();
    funtrace_enable_tracing();
    funtrace_pause_and_write_current_snapshot();
    funtrace_set_thread_log_buf_size(16);
    funtrace_ignore_this_thread();
    printf("hz=%llu\n", (unsigned long long)hz);
    return 0;
}

static int samples(void)
{
    mark0();
    funtrace_pause_and_write_current_snapshot();
    mark1();
    funtrace_pause_and_write_current_snapshot();
    mark2();
    funtrace_pause_and_write_current_snapshot();
    return 0;
}

static int log_size;
static void *sized(void *a)
{
    (void)a;
    pthread_setname_np(pthread_self(), "sized");
    funtrace_set_thread_log_buf_size(log_size);
    for (int i = 0; i < 1000; i++)
        sized_work();
    funtrace_pause_and_write_current_snapshot();
    return NULL;
}

static volatile int stop;
static pthread_barrier_t bar;
static void *worker(void *a)
{
    (void)a;
    while (!stop)
        toggle_work();
    pthread_barrier_wait(&bar);
    after_toggle();
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    return NULL;
}

static void *toggler(void *a)
{
    (void)a;
    for (int i = 0; i < 20000; i++) {
        funtrace_disable_tracing();
        funtrace_enable_tracing();
    }
    return NULL;
}

static int toggle(void)
{
    pthread_t w[4], t;
    pthread_barrier_init(&bar, NULL, 5);
    for (int i = 0; i < 4; i++)
        pthread_create(&w[i], NULL, worker, NULL);
    pthread_create(&t, NULL, toggler, NULL);
    pthread_join(t, NULL);
    stop = 1;
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar); /* every worker has called after_toggle() */
    funtrace_pause_and_write_current_snapshot();
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 4; i++)
        pthread_join(w[i], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "api"))
        return api();
    if (argc == 2 && !strcmp(argv[1], "samples"))
        return samples();
    if (argc == 3 && !strcmp(argv[1], "log")) {
        pthread_t t;
        log_size = atoi(argv[2]);
        pthread_create(&t, NULL, sized, NULL);
        pthread_join(t, NULL);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "toggle"))
        return toggle();
    fprintf(stderr, "usage: rt_compat api|samples|log N|toggle\n");
    return 2;
}
