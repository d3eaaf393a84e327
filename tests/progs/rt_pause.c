/* rt_pause: a thread calling a leaf function in a tight loop while the main
 * thread pauses and resumes tracing 2000 times (funtrace_disable_tracing /
 * funtrace_enable_tracing store every thread's mask, at any point of its
 * hooks).  Afterwards the worker calls pz_marker() and the main thread
 * writes a snapshot to ./funtrace.raw: the worker must still be recording. */
#include <pthread.h>
#include <stdio.h>
#include "rt_common.h"

volatile int sink, phase;

NI void pz_leaf(int i) { sink += i; }
NI void pz_marker(void) { sink++; }

NI void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; !__atomic_load_n(&phase, __ATOMIC_ACQUIRE); i++)
        pz_leaf(i);
    pz_marker();
    __atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 3)
        ; /* no traced calls: pz_marker stays the newest event */
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (sink == 0)
        ;
    for (int i = 0; i < 2000; i++) {
        funtrace_disable_tracing();
        funtrace_enable_tracing();
    }
    __atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 2)
        ;
    funtrace_pause_and_write_current_snapshot();
    __atomic_store_n(&phase, 3, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
}
