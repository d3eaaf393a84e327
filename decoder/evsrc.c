/*
 * evsrc.c -- ring items -> timestamped events.
 *
 * Exact mode: every entry has its own TSC.  Sampled mode: a time word
 * (bits 63..61 = 111) stamps the event word right after it; the TSC's high
 * 3 bits are restored from a reference (the generation's clk_tsc), and the
 * events between two stamps get times interpolated by their event ordinal
 * (exact integer arithmetic); they are reported with exact = 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

#define BLK 65536

uint64_t ev_restore_tsc(uint64_t low61, uint64_t ref)
{
    const uint64_t span = 1ull << 61, half = 1ull << 60;
    uint64_t t = (ref & ~FT_TIME_WORD_TSC_MASK) | (low61 & FT_TIME_WORD_TSC_MASK);
    if (t > ref && t - ref > half && t >= span)
        t -= span;
    else if (t < ref && ref - t > half && t <= UINT64_MAX - span)
        t += span;
    return t;
}

int ev_tsc_at(struct dec *d, struct dthread *th, uint64_t i, uint64_t ref_tsc, uint64_t *tsc)
{
    const struct ftr_thread *rt = th->rt;
    if (rt->fmt == FT_FMT_EXACT16) {
        struct ft_entry e;
        if (ftr_read_entries(&d->src, rt, i, 1, &e) != 1 || !e.word)
            return 0;
        *tsc = e.tsc;
        return 1;
    }
    uint64_t w;
    if (ftr_read_entries(&d->src, rt, i, 1, &w) != 1 || !FT_IS_TIME_WORD(w))
        return 0;
    *tsc = ev_restore_tsc(w, ref_tsc);
    return 1;
}

static void *xbuf(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "funtrace-decode: out of memory\n");
        exit(EXIT_BAD_INPUT);
    }
    return p;
}

struct pend {
    uint64_t w, idx, ord;
};

static struct pend *pendv;
static size_t npend, pendcap;

static void pend_push(uint64_t w, uint64_t idx, uint64_t ord)
{
    if (npend == pendcap) {
        size_t nc = pendcap ? pendcap * 2 : 1024;
        struct pend *n = realloc(pendv, nc * sizeof *n);
        if (!n) {
            fprintf(stderr, "funtrace-decode: out of memory\n");
            exit(EXIT_BAD_INPUT);
        }
        pendv = n;
        pendcap = nc;
    }
    pendv[npend++] = (struct pend){w, idx, ord};
}

static void pend_flush(int have_a, uint64_t ta, uint64_t oa, int have_b, uint64_t tb, uint64_t ob,
                       uint64_t ref, ev_fn fn, void *ctx)
{
    for (size_t i = 0; i < npend; i++) {
        struct pend *p = &pendv[i];
        uint64_t t;
        if (have_a && have_b && tb >= ta && ob > oa)
            t = ta + (uint64_t)((unsigned __int128)(tb - ta) * (p->ord - oa) / (ob - oa));
        else if (have_a)
            t = ta;
        else if (have_b)
            t = tb;
        else
            t = ref;
        fn(ctx, p->w, t, 0, p->idx);
    }
    npend = 0;
}

static void run_exact(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, ev_fn fn, void *ctx)
{
    static struct ft_entry *buf;
    if (!buf)
        buf = xbuf(BLK * sizeof *buf);
    for (uint64_t i = lo; i < hi;) {
        uint64_t want = hi - i < BLK ? hi - i : BLK;
        size_t got = ftr_read_entries(&d->src, th->rt, i, want, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++)
            if (buf[k].word)
                fn(ctx, buf[k].word, buf[k].tsc, 1, i + k);
        i += got;
    }
}

/* find the next stamp at or after item `from`: its tsc and the number of
 * events before it; 0 if none */
static int lookahead(struct dec *d, struct dthread *th, uint64_t from, uint64_t ref, uint64_t *tsc,
                     uint64_t *events_before)
{
    static uint64_t *buf;
    if (!buf)
        buf = xbuf(BLK * sizeof *buf);
    uint64_t nev = 0;
    int stamp = 0;
    uint64_t st = 0;
    for (uint64_t i = from; i < th->rt->n;) {
        size_t got = ftr_read_entries(&d->src, th->rt, i, BLK, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t w = buf[k];
            if (FT_IS_TIME_WORD(w)) {
                stamp = 1;
                st = ev_restore_tsc(w, ref);
            } else if (w) {
                if (stamp) {
                    *tsc = st;
                    *events_before = nev;
                    return 1;
                }
                nev++;
            } else {
                stamp = 0;
            }
        }
        i += got;
    }
    return 0;
}

static void run_sampled(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref,
                        struct ev_carry *c, ev_fn fn, void *ctx)
{
    static uint64_t *buf;
    if (!buf)
        buf = xbuf(BLK * sizeof *buf);
    int stamp = 0;
    uint64_t st = 0;
    if (lo > 0 && ev_tsc_at(d, th, lo - 1, ref, &st))
        stamp = 1; /* a time word right before the range stamps its first event */
    npend = 0;
    for (uint64_t i = lo; i < hi;) {
        uint64_t want = hi - i < BLK ? hi - i : BLK;
        size_t got = ftr_read_entries(&d->src, th->rt, i, want, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t w = buf[k];
            if (FT_IS_TIME_WORD(w)) {
                stamp = 1;
                st = ev_restore_tsc(w, ref);
                continue;
            }
            if (!w) {
                stamp = 0;
                continue;
            }
            uint64_t ord = c->next_ord++;
            if (stamp) {
                pend_flush(c->have, c->tsc, c->ord, 1, st, ord, ref, fn, ctx);
                fn(ctx, w, st, 1, i + k);
                c->have = 1;
                c->tsc = st;
                c->ord = ord;
                stamp = 0;
            } else {
                pend_push(w, i + k, ord);
            }
        }
        i += got;
    }
    if (npend) {
        uint64_t tb = 0, before = 0;
        int hb = lookahead(d, th, hi, ref, &tb, &before);
        pend_flush(c->have, c->tsc, c->ord, hb, tb, c->next_ord + before, ref, fn, ctx);
    }
}

void ev_run(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref_tsc,
            struct ev_carry *carry, ev_fn fn, void *ctx)
{
    if (hi > th->rt->n)
        hi = th->rt->n;
    if (lo >= hi)
        return;
    if (th->rt->fmt == FT_FMT_SAMPLED8)
        run_sampled(d, th, lo, hi, ref_tsc, carry, fn, ctx);
    else
        run_exact(d, th, lo, hi, fn, ctx);
}
