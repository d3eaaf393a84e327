/*
 * symwarm.c -- see symwarm.h
 */
#include "symwarm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { SW_SETTLED = 0, SW_QUEUED = 1, SW_BUSY = 2 };

struct symwarm {
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct sw_item *items;
    size_t n;
};

static void warm_module(const struct sw_item *it, size_t n)
{
    Dwfl_Module *m = it[0].mod;
    Dwarf_Addr bias;
    dwfl_module_getsymtab(m);
    if (!dwfl_module_getdwarf(m, &bias))
        return;
    for (size_t k = 0; k < n; k++) {
        dwfl_module_addrdie(m, it[k].vaddr, &bias);
        dwfl_module_getsrc(m, it[k].vaddr);
    }
}

static void *warm_main(void *arg)
{
    struct symwarm *w = arg;
    for (size_t i = 0, j; i < w->n; i = j) {
        for (j = i + 1; j < w->n && w->items[j].claim == w->items[i].claim;)
            j++;
        atomic_int *c = w->items[i].claim;
        pthread_mutex_lock(&w->mu);
        int mine = atomic_load(c) == SW_QUEUED;
        if (mine)
            atomic_store(c, SW_BUSY);
        pthread_mutex_unlock(&w->mu);
        if (!mine)
            continue;
        warm_module(&w->items[i], j - i);
        pthread_mutex_lock(&w->mu);
        atomic_store(c, SW_SETTLED);
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

struct symwarm *sw_start(const struct sw_item *items, size_t n)
{
    if (!n)
        return NULL;
    struct symwarm *w = calloc(1, sizeof *w);
    if (!w || !(w->items = malloc(n * sizeof *items))) {
        free(w);
        return NULL;
    }
    memcpy(w->items, items, n * sizeof *items);
    w->n = n;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (size_t i = 0; i < n; i++)
        atomic_store(items[i].claim, SW_QUEUED);
    if (pthread_create(&w->thr, NULL, warm_main, w) != 0) {
        for (size_t i = 0; i < n; i++)
            atomic_store(items[i].claim, SW_SETTLED);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w->items);
        free(w);
        return NULL;
    }
    return w;
}

void sw_claim(struct symwarm *w, atomic_int *claim)
{
    if (!w || atomic_load_explicit(claim, memory_order_acquire) == SW_SETTLED)
        return;
    pthread_mutex_lock(&w->mu);
    if (atomic_load(claim) == SW_QUEUED)
        atomic_store(claim, SW_SETTLED); /* not started: ours */
    while (atomic_load(claim) == SW_BUSY)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void sw_end(struct symwarm *w)
{
    if (!w)
        return;
    pthread_join(w->thr, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->items);
    free(w);
}
