/* dec_idle.c -- a thread whose ring wrapped and all of whose events predate a
 * snapshot's start time:
 *   worker: churn x20000 { leaf }, then tells main it is done and waits
 *   main:   waits for that, t0 = funtrace_time(), after_start(),
 *           snapshot starting at t0 -> idle.raw, then lets the worker exit */
#include <pthread.h>

#include "funtrace.h"

#define NI __attribute__((noinline))
static volatile int sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int churned, may_exit;

NI void leaf(void) { sink++; }
NI void churn(void)
{
    for (int i = 0; i < 20000; i++)
        leaf();
}
NI void after_start(void) { sink++; }

static void *worker(void *arg)
{
    (void)arg;
    churn();
    pthread_mutex_lock(&mu);
    churned = 1;
    pthread_cond_broadcast(&cv);
    while (!may_exit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&mu);
    while (!churned)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    unsigned long long t0 = funtrace_time();
    after_start();
    struct funtrace_snapshot *s = funtrace_pause_and_get_snapshot_starting_at_time(t0);
    funtrace_write_snapshot("idle.raw", s);
    funtrace_free_snapshot(s);
    pthread_mutex_lock(&mu);
    may_exit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    return 0;
}
