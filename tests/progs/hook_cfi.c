/* hook_cfi.c -- test_hook_cfi.py: leaf and mid are traced; gdb steps
 * through the hooks their calls and returns run, and delivers SIGUSR1 at
 * each instruction (handler: not instrumented, so that the signal frame is
 * the only thing between the handler and the hook).  Argument: how many
 * mid() calls before the worker thread starts. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int mid(int x)
{
    int r = leaf(x) + 2;
    sink += r;
    return r;
}
__attribute__((noinline, no_instrument_function)) void handler(int sig) { sink += sig; }
__attribute__((noinline)) void *worker(void *a)
{
    sink += mid((int)(long)a);
    return NULL;
}

int main(int argc, char **argv)
{
    signal(SIGUSR1, handler);
    int n = argc > 1 ? atoi(argv[1]) : 40;
    for (int i = 0; i < n; i++)
        sink += mid(i);
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)1L);
    pthread_join(t, NULL);
    printf("%d\n", sink);
    return 0;
}
