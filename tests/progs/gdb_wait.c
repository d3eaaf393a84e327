/*
 * gdb_wait -- a traced program for the live gdb tests (tests/test_gdb.py).
 *
 * main starts a worker thread "gdb-worker"; both run a known call chain
 * (gdb_outer -> gdb_middle -> gdb_leaf), then main calls
 * gdb_breakpoint_here (the tests break there), prints "ready" and parks in
 * gdb_park (pause() forever), so a test can attach with `gdb -p`.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define TRACED __attribute__((noinline))

static volatile unsigned long sink;
static pthread_barrier_t chains_done;

TRACED void gdb_leaf(int i) { sink += (unsigned long)i; }

TRACED void gdb_middle(int i)
{
    gdb_leaf(i);
    gdb_leaf(i + 1);
}

TRACED void gdb_outer(int n)
{
    for (int i = 0; i < n; i++)
        gdb_middle(i);
}

TRACED void gdb_breakpoint_here(void) { sink++; }

TRACED void gdb_park(void)
{
    for (;;)
        pause();
}

TRACED void gdb_worker_chain(void) { gdb_outer(3); }

TRACED static void *gdb_worker(void *arg)
{
    (void)arg;
    gdb_worker_chain();
    pthread_barrier_wait(&chains_done);
    gdb_park();
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_barrier_init(&chains_done, NULL, 2);
    if (pthread_create(&t, NULL, gdb_worker, NULL) != 0)
        return 1;
    pthread_setname_np(t, "gdb-worker");
    gdb_outer(5);
    pthread_barrier_wait(&chains_done);
    gdb_breakpoint_here();
    printf("ready\n");
    fflush(stdout);
    gdb_park();
    return 0;
}
