/*
 * ringevents.c -- ring items -> timestamped events.
 *
 * Exact mode: every entry has its own TSC (FT_FMT_EXACT8 entries are
 * expanded by ring8.c).  Sampled mode: a time word
 * (bits 63..61 = 111) stamps the event word right after it; the TSC's high
 * 3 bits are restored from a reference (the generation's clk_tsc), and the
 * events between two stamps get times interpolated by their event ordinal
 * (exact integer arithmetic); they are reported with exact = EV_DENSE.
 *
 * Loose brackets: interpolation assumes the events between two stamps are
 * evenly spaced, which holds when the thread ran traced code all along.
 * When the bracket is wider than its events can explain -- more than
 * EV_LOOSE_NS (1 us) per event on average, e.g. a sleep, a blocking
 * syscall or a long uninstrumented computation somewhere inside it -- the
 * time went to an unknown place in the bracket and an interpolated time
 * means nothing: such events are reported with exact = EV_LOOSE and the
 * bracket [lo, hi], and a call with an end in a loose bracket gets an upper
 * bound (end's hi - start's lo) instead of a point estimate (replay.c).
 * Events before the first / after the last stamp (one-sided) keep the
 * nearest stamp as their time (EV_DENSE, lo = hi = that time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringevents.h"
#include "xalloc.h"

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
    if (ev_is_exact(rt->fmt)) {
        struct ft_entry e;
        if (ev_read_exact(d, th, i, 1, &e) != 1 || !e.word)
            return 0;
        *tsc = e.tsc;
        return 1;
    }
    struct ev_sitem e;
    if (ev_read_sampled(d, th, i, 1, ref_tsc, &e) != 1 || (e.kind != EVS_TIME && e.kind != EVS_STAMPED))
        return 0;
    *tsc = e.tsc;
    return 1;
}

struct pend {
    uint64_t w, idx, ord;
};

static struct pend *pendv;
static size_t npend, pendcap;

static void pend_push(uint64_t w, uint64_t idx, uint64_t ord)
{
    pendv = xgrow(pendv, &pendcap, npend + 1, sizeof *pendv);
    pendv[npend++] = (struct pend){w, idx, ord};
}

/* a bracket of ticks over nev event intervals: wider than its events explain? */
static int loose(uint64_t ticks, uint64_t nev, uint64_t hz)
{
    return (unsigned __int128)ticks * 1000000000u > (unsigned __int128)nev * hz * EV_LOOSE_NS;
}

static void pend_flush(int have_a, uint64_t ta, uint64_t oa, int have_b, uint64_t tb, uint64_t ob,
                       uint64_t ref, uint64_t hz, ev_fn fn, void *ctx)
{
    int both = have_a && have_b && tb >= ta && ob > oa;
    int q = both && loose(tb - ta, ob - oa, hz) ? EV_LOOSE : EV_DENSE;
    for (size_t i = 0; i < npend; i++) {
        struct pend *p = &pendv[i];
        uint64_t t;
        if (both)
            t = ta + (uint64_t)((unsigned __int128)(tb - ta) * (p->ord - oa) / (ob - oa));
        else if (have_a)
            t = ta;
        else if (have_b)
            t = tb;
        else
            t = ref;
        fn(ctx, p->w, t, q, p->idx, q == EV_LOOSE ? ta : t, q == EV_LOOSE ? tb : t);
    }
    npend = 0;
}

static void run_exact(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, ev_fn fn, void *ctx)
{
    static struct ft_entry *buf;
    if (!buf)
        buf = xmalloc(BLK * sizeof *buf);
    for (uint64_t i = lo; i < hi;) {
        uint64_t want = hi - i < BLK ? hi - i : BLK;
        size_t got = ev_read_exact(d, th, i, want, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++)
            if (buf[k].word)
                fn(ctx, buf[k].word, buf[k].tsc, EV_EXACT, i + k, buf[k].tsc, buf[k].tsc);
        i += got;
    }
}

/* the event words of a sampled ring in [lo, hi), in order: cb(ctx, word,
 * item index, stamped, tsc), stamped when the word right before it is a
 * time word (also for the first event, whose time word may lie before lo).
 * Stops early when cb returns nonzero; returns that value, else 0. */
typedef int (*word_fn)(void *ctx, uint64_t w, uint64_t idx, int stamped, uint64_t tsc);
static int scan_sampled(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref, word_fn cb,
                        void *ctx)
{
    static struct ev_sitem *buf;
    if (!buf)
        buf = xmalloc(BLK * sizeof *buf);
    uint64_t st = 0;
    /* FT_FMT_SAMPLED8: a time word right before lo stamps the first event */
    int stamp = th->rt->fmt == FT_FMT_SAMPLED8 && lo > 0 && ev_tsc_at(d, th, lo - 1, ref, &st);
    for (uint64_t i = lo; i < hi;) {
        uint64_t want = hi - i < BLK ? hi - i : BLK;
        size_t got = ev_read_sampled(d, th, i, want, ref, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            const struct ev_sitem *e = &buf[k];
            if (e->kind == EVS_TIME) {
                stamp = 1;
                st = e->tsc;
                continue;
            }
            int rc = 0;
            if (e->kind == EVS_STAMPED)
                rc = cb(ctx, e->word, i + k, 1, e->tsc);
            else if (e->kind == EVS_EVENT)
                rc = cb(ctx, e->word, i + k, stamp, st);
            if (rc)
                return rc;
            if (e->kind != EVS_NONE || th->rt->fmt == FT_FMT_SAMPLED8)
                stamp = 0;
        }
        i += got;
    }
    return 0;
}

/* lookahead: the next stamped event at or after an item, and the number of
 * unstamped events before it */
struct look {
    uint64_t tsc, before;
};

static int look_cb(void *ctx, uint64_t w, uint64_t idx, int stamped, uint64_t tsc)
{
    struct look *l = ctx;
    (void)w;
    (void)idx;
    if (stamped) {
        l->tsc = tsc;
        return 1;
    }
    l->before++;
    return 0;
}

struct sampled_run {
    struct ev_carry *c;
    uint64_t ref, hz;
    ev_fn fn;
    void *ctx;
};

static int sampled_cb(void *ctx, uint64_t w, uint64_t idx, int stamped, uint64_t st)
{
    struct sampled_run *s = ctx;
    struct ev_carry *c = s->c;
    uint64_t ord = c->next_ord++;
    if (stamped) {
        pend_flush(c->have, c->tsc, c->ord, 1, st, ord, s->ref, s->hz, s->fn, s->ctx);
        s->fn(s->ctx, w, st, EV_EXACT, idx, st, st);
        c->have = 1;
        c->tsc = st;
        c->ord = ord;
    } else {
        pend_push(w, idx, ord);
    }
    return 0;
}

static void run_sampled(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref,
                        struct ev_carry *c, ev_fn fn, void *ctx)
{
    struct sampled_run s = {c, ref, d->tsc_hz, fn, ctx};
    npend = 0;
    scan_sampled(d, th, lo, hi, ref, sampled_cb, &s);
    if (npend) {
        struct look l = {0, 0};
        int hb = scan_sampled(d, th, hi, th->rt->n, ref, look_cb, &l);
        pend_flush(c->have, c->tsc, c->ord, hb, l.tsc, c->next_ord + l.before, ref, d->tsc_hz, fn, ctx);
    }
}

void ev_run(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref_tsc,
            struct ev_carry *carry, ev_fn fn, void *ctx)
{
    if (hi > th->rt->n)
        hi = th->rt->n;
    if (lo >= hi)
        return;
    if (!ev_is_exact(th->rt->fmt))
        run_sampled(d, th, lo, hi, ref_tsc, carry, fn, ctx);
    else
        run_exact(d, th, lo, hi, fn, ctx);
}
