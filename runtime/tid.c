/*
 * tid.c -- the calling thread's kernel thread id without a system call,
 * where the C library's thread descriptor holds it.
 *
 * glibc keeps each thread's tid in its descriptor (pthread_self()): the
 * kernel writes it there when the thread is created (CLONE_PARENT_SETTID)
 * and glibc after fork (set_tid_address).  Its offset is private to glibc,
 * so it is learnt, not assumed: on the thread that initialises the runtime
 * the descriptor's first FT_TID_SCAN bytes must hold gettid() at exactly one
 * aligned offset; each of the next FT_TID_CONFIRM threads compares that slot
 * with its own gettid().  One disagreement and every later thread makes the
 * system call.  A gettid costs ~1 µs on some virtual machines, a third of a
 * traced thread's start there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ft_internal.h"

#define FT_TID_SCAN 1024   /* bytes of the descriptor searched (glibc 2.36: offset 720) */
#define FT_TID_CONFIRM 4   /* threads that check the offset before it is trusted */

static int32_t tid_off = -1;  /* offset of the tid in the descriptor; -1: use gettid */
static uint32_t to_confirm;   /* threads left that check it; under the registry lock */

static uint32_t sys_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* the tid slot of thread th's descriptor (tid_off known) */
static int32_t desc_tid(pthread_t th)
{
    return *(const volatile int32_t *)((const char *)(uintptr_t)th + tid_off);
}

void ft_tid_init(void)
{
#ifdef __GLIBC__
    const volatile int32_t *d = (const volatile int32_t *)(uintptr_t)pthread_self();
    int32_t tid = (int32_t)sys_gettid(), found = -1;
    for (int32_t i = 0; i < FT_TID_SCAN / 4; i++) {
        if (d[i] != tid)
            continue;
        if (found >= 0)
            return; /* ambiguous: keep the system call */
        found = i * 4;
    }
    tid_off = found;
    to_confirm = FT_TID_CONFIRM;
#endif
}

uint32_t ft_gettid(void)
{
    uint32_t tid;
    if (tid_off < 0)
        return sys_gettid();
    tid = (uint32_t)desc_tid(pthread_self());
    if (to_confirm) {
        uint32_t real = sys_gettid();
        if (tid != real) {
            tid_off = -1;
            return real;
        }
        to_confirm--;
    }
    if ((int32_t)tid <= 0)
        return sys_gettid();
    return tid;
}

int ft_tid_of(pthread_t th, uint32_t *tid)
{
    int32_t v;
    if (tid_off < 0)
        return 0;
    v = desc_tid(th);
    if (v <= 0)
        return 0;
    *tid = (uint32_t)v;
    return 1;
}
