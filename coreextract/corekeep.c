/* corekeep.c -- what the one-pass reader keeps (see corestream_int.h) */
#include "corestream_int.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* ---- pieces ----------------------------------------------------------------- */

void own(struct core *c, uint8_t *p)
{
    c->owned = ce_xrealloc(c->owned, (c->nowned + 1) * sizeof *c->owned);
    c->owned[c->nowned++] = p;
}

void close_open(struct cs *s)
{
    if (!s->open) return;
    own(s->c, s->open_buf);
    s->open = 0;
    s->open_buf = NULL;
}

static struct core_seg *push(struct cs *s, uint64_t vaddr)
{
    struct core *c = s->c;
    if (c->nsegs && vaddr < c->segs[c->nsegs - 1].vaddr + c->segs[c->nsegs - 1].memsz) s->unsorted = 1;
    if (c->nsegs == s->capsegs) {
        s->capsegs = s->capsegs ? 2 * s->capsegs : 256;
        c->segs = ce_xrealloc(c->segs, s->capsegs * sizeof *c->segs);
    }
    struct core_seg *g = &c->segs[c->nsegs++];
    memset(g, 0, sizeof *g);
    return g;
}

/* add len bytes at vaddr (file offset off) as a piece of kind k (p: the bytes,
 * for CORE_BYTES), merged into the last piece when contiguous */
void add(struct cs *s, uint32_t k, uint64_t vaddr, uint64_t len, uint64_t off, uint32_t flags,
                const uint8_t *p)
{
    struct core *c = s->c;
    struct core_seg *l = c->nsegs ? &c->segs[c->nsegs - 1] : NULL;
    int adj = l && l->kind == k && l->flags == flags && l->vaddr + l->memsz == vaddr &&
              l->offset + l->memsz == off && l->filesz == l->memsz &&
              l->avail == (k == CORE_DROPPED ? 0 : l->memsz);
    if (adj && k == CORE_BYTES && !s->open) adj = 0;
    if (adj) {
        if (k == CORE_BYTES) {
            if (l->avail + len > s->open_cap) {
                uint64_t cap = s->open_cap;
                while (cap < l->avail + len) cap *= 2;
                s->open_buf = ce_xrealloc(s->open_buf, (size_t)cap);
                s->open_cap = cap;
                l->data = s->open_buf;
            }
            memcpy(s->open_buf + l->avail, p, (size_t)len);
            c->kept_bytes += len;
        }
        l->memsz += len;
        l->filesz += len;
        if (k != CORE_DROPPED) l->avail += len;
        else c->dropped_bytes += len;
        return;
    }
    if (k == CORE_BYTES) close_open(s);
    struct core_seg *g = push(s, vaddr);
    g->vaddr = vaddr;
    g->memsz = g->filesz = len;
    g->offset = off;
    g->flags = flags;
    g->kind = k;
    g->avail = k == CORE_DROPPED ? 0 : len;
    if (k == CORE_DROPPED) c->dropped_bytes += len;
    if (k == CORE_BYTES) {
        s->open_cap = len > (64u << 10) ? len : (64u << 10);
        s->open_buf = ce_xmalloc((size_t)s->open_cap);
        memcpy(s->open_buf, p, (size_t)len);
        g->data = s->open_buf;
        s->open = 1;
        c->kept_bytes += len;
    }
}

/* memory the core does not hold: not dumped (past p_filesz) or past the end of the stream */
void add_missing(struct cs *s, uint64_t vaddr, uint64_t len, uint64_t off, uint32_t flags)
{
    if (!len) return;
    struct core_seg *g = push(s, vaddr);
    g->vaddr = vaddr;
    g->memsz = len;
    g->offset = off;
    g->flags = flags;
    g->kind = CORE_BYTES;
}

/* ---- wants ------------------------------------------------------------------ */

void want(struct cs *s, uint64_t lo, uint64_t hi)
{
    if (hi <= lo) return;
    if (s->nw == s->capw) {
        s->capw = s->capw ? 2 * s->capw : 64;
        s->w = ce_xrealloc(s->w, s->capw * sizeof *s->w);
    }
    s->w[s->nw].lo = lo;
    s->w[s->nw].hi = hi;
    s->nw++;
    s->wdirty = 1;
}

int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void wants_normalize(struct cs *s)
{
    if (!s->wdirty) return;
    qsort(s->w, s->nw, sizeof *s->w, range_cmp);
    size_t n = 0;
    for (size_t i = 0; i < s->nw; i++) {
        if (n && s->w[i].lo <= s->w[n - 1].hi) {
            if (s->w[i].hi > s->w[n - 1].hi) s->w[n - 1].hi = s->w[i].hi;
        } else {
            s->w[n++] = s->w[i];
        }
    }
    s->nw = n;
    s->wdirty = 0;
}

int wanted(const struct cs *s, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = s->nw;
    while (a < b) { /* first want ending after lo */
        size_t m = a + (b - a) / 2;
        if (s->w[m].hi <= lo) a = m + 1;
        else b = m;
    }
    return a < s->nw && s->w[a].lo < hi;
}

/* the PT_LOAD range holding addr, or NULL */
const struct range *load_at(const struct cs *s, uint64_t addr)
{
    size_t a = 0, b = s->nloads;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->loads[m].lo <= addr) a = m + 1;
        else b = m;
    }
    return a && addr < s->loads[a - 1].hi ? &s->loads[a - 1] : NULL;
}

void want_within_load(struct cs *s, uint64_t lo, uint64_t hi)
{
    const struct range *l = load_at(s, lo);
    if (!l) return;
    want(s, lo & ~(uint64_t)(PAGE - 1), hi < l->hi ? hi : l->hi);
}
