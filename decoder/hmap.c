/*
 * hmap.c -- see hmap.h
 */
#include "hmap.h"

#include <stdlib.h>
#include <string.h>

static int hm_grow(struct hmap *m)
{
    size_t nc = m->cap ? m->cap * 2 : 1024;
    struct hm_ent *ne = malloc(nc * sizeof *ne);
    if (!ne)
        return -1;
    for (size_t i = 0; i < nc; i++)
        ne[i].v = HMAP_NONE;
    for (size_t i = 0; i < m->cap; i++) {
        struct hm_ent *e = &m->e[i];
        if (e->v == HMAP_NONE)
            continue;
        size_t j = (size_t)hm_hash(e->a, e->b) & (nc - 1);
        while (ne[j].v != HMAP_NONE)
            j = (j + 1) & (nc - 1);
        ne[j] = *e;
    }
    free(m->e);
    m->e = ne;
    m->cap = nc;
    return 0;
}

int hm_put(struct hmap *m, uint64_t a, uint64_t b, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap && hm_grow(m))
        return -1;
    size_t mask = m->cap - 1, i = (size_t)hm_hash(a, b) & mask;
    for (;;) {
        struct hm_ent *e = &m->e[i];
        if (e->v == HMAP_NONE) {
            e->a = a;
            e->b = b;
            e->v = v;
            m->n++;
            return 0;
        }
        if (e->a == a && e->b == b) {
            e->v = v;
            return 0;
        }
        i = (i + 1) & mask;
    }
}

void hm_free(struct hmap *m)
{
    free(m->e);
    memset(m, 0, sizeof *m);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

uint32_t sm_get(const struct smap *m, const char *k)
{
    if (!m->cap)
        return HMAP_NONE;
    size_t mask = m->cap - 1, i = (size_t)str_hash(k) & mask;
    while (m->k[i]) {
        if (!strcmp(m->k[i], k))
            return m->v[i];
        i = (i + 1) & mask;
    }
    return HMAP_NONE;
}

static int sm_grow(struct smap *m)
{
    size_t nc = m->cap ? m->cap * 2 : 256;
    char **nk = calloc(nc, sizeof *nk);
    uint32_t *nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->k[i])
            continue;
        size_t j = (size_t)str_hash(m->k[i]) & (nc - 1);
        while (nk[j])
            j = (j + 1) & (nc - 1);
        nk[j] = m->k[i];
        nv[j] = m->v[i];
    }
    free(m->k);
    free(m->v);
    m->k = nk;
    m->v = nv;
    m->cap = nc;
    return 0;
}

int sm_put(struct smap *m, const char *k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap && sm_grow(m))
        return -1;
    size_t mask = m->cap - 1, i = (size_t)str_hash(k) & mask;
    while (m->k[i]) {
        if (!strcmp(m->k[i], k)) {
            m->v[i] = v;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->k[i] = strdup(k);
    if (!m->k[i])
        return -1;
    m->v[i] = v;
    m->n++;
    return 0;
}

void sm_free(struct smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->k[i]);
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}
