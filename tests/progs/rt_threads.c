/* rt_threads: threads that exit in every way (return, pthread_exit,
 * cancellation), threads alive at the snapshot, names set by
 * pthread_setname_np (by the thread itself and by another thread) and by
 * prctl.  argv[1] == "budget": 10 short threads one after another.
 * argv[1] == "budget-abort" N: N short threads one after another, then
 * abort() (a core with the registry counters).  argv[1] == "tids": the
 * main thread renames itself, then 8 short threads one after another print
 * the tid and name the kernel gave them; the main thread names every other
 * one (pthread_setname_np) before its first traced call.  argv[1] ==
 * "prctl-early": 80 threads rename themselves with prctl before their first
 * traced call and stay alive over a few generations (FUNTRACE_GEN_MS=10). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "rt_common.h"

volatile int sink;
static pthread_barrier_t ready;
static int release_pipe[2];

NI void thr_work(int i) { sink += i; }
NI void *thr_return(void *a) { (void)a; pthread_setname_np(pthread_self(), "t-return"); thr_work(1); return NULL; }
NI void thr_exit_deep(void) { thr_work(2); pthread_exit(NULL); }
NI void *thr_exit(void *a) { (void)a; pthread_setname_np(pthread_self(), "t-exit"); thr_exit_deep(); return NULL; }
NI void *thr_cancel(void *a)
{
    (void)a;
    pthread_setname_np(pthread_self(), "t-cancel");
    thr_work(3);
    pthread_barrier_wait(&ready);
    for (;;)
        pause(); /* cancellation point */
    return NULL;
}
NI void *thr_alive(void *a)
{
    char c;
    int by_prctl = a != NULL;
    if (by_prctl)
        prctl(PR_SET_NAME, "t-prctl", 0, 0, 0);
    thr_work(4);
    pthread_barrier_wait(&ready);
    if (read(release_pipe[0], &c, 1) < 0)
        perror("read");
    return NULL;
}
NI void *thr_short(void *a) { thr_work((int)(long)a); return NULL; }
static pthread_barrier_t early_done;
/* not traced: renames itself before the thread's first traced call */
__attribute__((no_instrument_function)) void *thr_early(void *a)
{
    char name[16], c;
    snprintf(name, sizeof name, "t-early-%ld", (long)a);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    thr_work((int)(long)a);
    pthread_barrier_wait(&early_done);
    if (read(release_pipe[0], &c, 1) < 0)
        perror("read");
    return NULL;
}
NI void thr_tell(long i)
{
    char name[17] = {0};
    thr_work((int)i);
    prctl(PR_GET_NAME, name, 0, 0, 0);
    printf("tid %ld %s\n", (long)syscall(SYS_gettid), name);
}
/* not traced: waits for its name before the thread's first traced call */
__attribute__((no_instrument_function)) void *thr_tell_start(void *a)
{
    char c;
    if (read(release_pipe[0], &c, 1) != 1)
        return NULL;
    thr_tell((long)a);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t1, t2, t3, t4, t5;
    if (argc > 1 && !strcmp(argv[1], "budget")) {
        for (long i = 0; i < 10; i++) {
            pthread_t t;
            pthread_create(&t, NULL, thr_short, (void *)i);
            pthread_join(t, NULL);
        }
        funtrace_pause_and_write_current_snapshot();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "tids")) {
        pthread_setname_np(pthread_self(), "m-renamed");
        if (pipe(release_pipe))
            return 1;
        for (long i = 0; i < 8; i++) {
            pthread_t t;
            char name[16];
            pthread_create(&t, NULL, thr_tell_start, (void *)i);
            snprintf(name, sizeof name, "t-named-%ld", i);
            if (i % 2)
                pthread_setname_np(t, name);
            if (write(release_pipe[1], "x", 1) != 1)
                return 1;
            pthread_join(t, NULL);
        }
        fflush(stdout);
        funtrace_pause_and_write_current_snapshot();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "prctl-early")) {
        enum { N = 80 };
        pthread_t t[N];
        if (pipe(release_pipe))
            return 1;
        pthread_barrier_init(&early_done, NULL, N + 1);
        for (long i = 0; i < N; i++)
            pthread_create(&t[i], NULL, thr_early, (void *)i);
        pthread_barrier_wait(&early_done);
        usleep(50 * 1000); /* a few generations with FUNTRACE_GEN_MS=10 */
        funtrace_pause_and_write_current_snapshot();
        for (long i = 0; i < N; i++)
            if (write(release_pipe[1], "x", 1) != 1)
                return 1;
        for (long i = 0; i < N; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "budget-abort")) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++) {
            pthread_t t;
            pthread_create(&t, NULL, thr_short, (void *)i);
            pthread_join(t, NULL);
        }
        abort();
    }
    if (pipe(release_pipe))
        return 1;
    pthread_barrier_init(&ready, NULL, 4);
    pthread_create(&t1, NULL, thr_return, NULL);
    pthread_join(t1, NULL);
    pthread_create(&t2, NULL, thr_exit, NULL);
    pthread_join(t2, NULL);
    pthread_create(&t3, NULL, thr_cancel, NULL);
    pthread_create(&t4, NULL, thr_alive, NULL);
    pthread_create(&t5, NULL, thr_alive, (void *)1);
    pthread_barrier_wait(&ready);
    pthread_setname_np(t4, "t-alive"); /* named by another thread */
    pthread_cancel(t3);
    pthread_join(t3, NULL);
    usleep(100 * 1000); /* > 1 generation with FUNTRACE_GEN_MS=10: comm refresh */
    funtrace_pause_and_write_current_snapshot();
    if (write(release_pipe[1], "xx", 2) != 2)
        return 1;
    pthread_join(t4, NULL);
    pthread_join(t5, NULL);
    printf("done\n");
    return 0;
}
