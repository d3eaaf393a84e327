/* xr_toggle: FUNTRACE_INSTR=xray sleds switched by funtrace_disable_tracing /
 * funtrace_enable_tracing.
 *   toggle   prints leaf's first 3 code bytes while tracing is enabled,
 *            disabled, enabled again (the entry sled: patched 66 90 e8,
 *            unpatched eb 09), calls mid -> leaf x3, tail_to_leaf -> leaf,
 *            while_off -> leaf while disabled, leaf again; snapshot
 *   stress N two threads call mid and tail_to_leaf in loops while main
 *            (once both are in their loops) disables and enables tracing N
 *            times; snapshot; "done" */
#include <funtrace.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NI __attribute__((noinline))
volatile int sink;
static volatile int stop;

NI int leaf(int x) { sink += x; return x + 1; }
NI int mid(int x)
{
    int s = 0;
    for (int i = 0; i < 3; i++)
        s += leaf(x + i);
    sink++;
    return s;
}
NI int tail_to_leaf(int x) { sink++; return leaf(x); }
NI void while_off(void) { leaf(7); sink++; }

static void code_bytes(const char *what)
{
    const unsigned char *p = (const unsigned char *)(void *)leaf;
    printf("%s %02x %02x %02x\n", what, p[0], p[1], p[2]);
}

static int started;

static void *worker(void *arg)
{
    (void)arg;
    int first = 1;
    while (!stop) {
        mid(1);
        tail_to_leaf(2);
        if (first)
            __atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
        first = 0;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "stress")) {
        int n = argc > 2 ? atoi(argv[2]) : 1000;
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, worker, NULL);
        while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < 2) /* both are in their loops */
            sched_yield();
        for (int i = 0; i < n; i++) {
            funtrace_disable_tracing();
            mid(0);
            funtrace_enable_tracing();
            mid(0);
        }
        stop = 1;
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        funtrace_pause_and_write_current_snapshot();
        printf("done\n");
        return 0;
    }
    code_bytes("on");
    mid(1);
    tail_to_leaf(2);
    funtrace_disable_tracing();
    code_bytes("off");
    while_off();
    funtrace_enable_tracing();
    code_bytes("on");
    leaf(3);
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
