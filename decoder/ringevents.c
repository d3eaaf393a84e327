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
 * nearest stamp as their time (EV_DENSE) -- except the last events of a
 * thread whose end is known (th->tail_tsc: the thread that took the fatal
 * signal ran until tracing froze, an exited thread until its exit, every
 * thread of a runtime snapshot until it was taken): that time closes their
 * bracket like a stamp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringevents.h"
#include "xalloc.h"


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

/* a bracket of ticks over nev event intervals: wider than its events explain? */
static int loose(uint64_t ticks, uint64_t nev, uint64_t hz)
{
    return (unsigned __int128)ticks * 1000000000u > (unsigned __int128)nev * hz * EV_LOOSE_NS;
}

/* events per batch */
#define EVB 4096

/* the times of the unstamped events e[0..n) (consecutive ordinals from o0)
 * between the stamp (ta, oa) before them (if have_a) and (tb, ob) after them
 * (if have_b): ta + (tb - ta) * (ord - oa) / (ob - oa), computed
 * incrementally (quotient and remainder), exactly as that formula */
static void pend_times(struct ev *e, size_t n, uint64_t o0, int have_a, uint64_t ta, uint64_t oa, int have_b,
                       uint64_t tb, uint64_t ob, uint64_t ref, uint64_t hz)
{
    int both = have_a && have_b && tb >= ta && ob > oa;
    if (!both) {
        uint64_t t = have_a ? ta : have_b ? tb : ref;
        for (size_t i = 0; i < n; i++) {
            e[i].tsc = t;
            e[i].q = EV_DENSE;
        }
        return;
    }
    int q = loose(tb - ta, ob - oa, hz) ? EV_LOOSE : EV_DENSE;
    uint64_t D = tb - ta, N = ob - oa, rm, qt = ev_interp(D, o0 - oa, N, &rm);
    uint64_t dq = D / N, dr = D % N;
    if (q == EV_LOOSE)
        for (size_t i = 0; i < n; i++) {
            e[i].lo = ta; /* (read for EV_LOOSE only) */
            e[i].hi = tb;
        }
    for (size_t i = 0; i < n; i++) {
        e[i].tsc = ta + qt;
        e[i].q = q;
        qt = ev4_step(qt, &rm, dq, dr, N);
    }
}

static void run_exact(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, ev_fn fn, ev8_fn fn8,
                      void *ctx)
{
    static struct ft_entry buf[EVB];
    static struct ev out[EVB];
    if (th->rt->fmt == FT_FMT_EXACT8) {
        for (uint64_t i = lo; i < hi;) {
            struct ev8_run run;
            size_t k = fn8 && ev_plain_exact8(d, th, i, hi - i, &run) ? fn8(ctx, &run) : 0;
            if (k) {
                ev_took_exact8(&run, k);
                i += k;
                continue;
            }
            /* (with fn8: one item, back to the runs after it) */
            size_t want = fn8 ? 1 : hi - i < EVB ? hi - i : EVB;
            size_t m, got = ev_events_exact8(d, th, i, want, out, &m);
            if (!got)
                break;
            if (m)
                fn(ctx, out, m);
            i += got;
        }
        return;
    }
    for (uint64_t i = lo; i < hi;) {
        uint64_t want = hi - i < EVB ? hi - i : EVB;
        size_t got = ev_read_exact(d, th, i, want, buf);
        if (!got)
            break;
        size_t m = 0;
        for (size_t k = 0; k < got; k++) {
            if (!buf[k].word)
                continue;
            struct ev *e = &out[m++];
            e->word = buf[k].word;
            e->tsc = buf[k].tsc;
            e->idx = i + k;
            e->q = EV_EXACT;
        }
        if (m)
            fn(ctx, out, m);
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
    static struct ev_sitem buf[EVB];
    uint64_t st = 0, blk = 64; /* a lookahead: usually a few items */
    /* FT_FMT_SAMPLED8: a time word right before lo stamps the first event */
    int stamp = th->rt->fmt == FT_FMT_SAMPLED8 && lo > 0 && ev_tsc_at(d, th, lo - 1, ref, &st);
    for (uint64_t i = lo; i < hi; blk = blk * 4 < EVB ? blk * 4 : EVB) {
        uint64_t want = hi - i < blk ? hi - i : blk;
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

/* room in run_sampled's buffer out[cap] holding n events, p0 of them
 * final: hand those over and keep the pending ones, or (none final: a
 * bracket longer than the buffer) a buffer twice as big */
static void out_room(struct ev **out, size_t *cap, size_t *n, size_t *p0, ev_fn fn, void *ctx)
{
    if (*p0) {
        fn(ctx, *out, *p0);
        memmove(*out, *out + *p0, (*n - *p0) * sizeof **out);
        *n -= *p0;
        *p0 = 0;
    } else {
        *cap *= 2;
        *out = xrealloc(*out, *cap * sizeof **out);
    }
}

/* Sampled: the unstamped events wait in out[p0..n) for the stamp after
 * them (their ordinals: o0 ...); everything before p0 is final. */
static void run_sampled(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref,
                        struct ev_carry *c, ev_fn fn, ev4_fn fn4, void *ctx)
{
    static struct ev_sitem buf[EVB];
    static struct ev *out;
    static size_t cap;
    if (!out) {
        cap = 4 * EVB;
        out = xmalloc(cap * sizeof *out);
    }
    size_t n = 0, p0 = 0;
    uint64_t o0 = 0, st = 0, hz = d->tsc_hz;
    int sampled8 = th->rt->fmt == FT_FMT_SAMPLED8;
    /* FT_FMT_SAMPLED8: a time word right before lo stamps the first event */
    int stamp = sampled8 && lo > 0 && ev_tsc_at(d, th, lo - 1, ref, &st);
    for (uint64_t i = lo; i < hi;) {
        if (!sampled8 && fn4 && n == p0 && c->have) {
            /* nothing pending: the plain items up to a stamp that closes
             * their bracket densely, and the brackets right after it that
             * do too (up to EV4_RUN_MAX items), go to fn4 as a run with
             * their stamps (ob: each one's ordinal), with their times */
            static uint32_t items[EV4_RUN_MAX];
            static struct ev4_brk brk[EV4_RUN_MAX / 2];
            static size_t ends[EV4_RUN_MAX / 2];
            static uint64_t tbs[EV4_RUN_MAX / 2];
            struct ev4_run run = {.p = items, .idx0 = i, .b = brk};
            const size_t nb = ev_brackets4(d, th, i, hi - i < EV4_RUN_MAX ? hi - i : EV4_RUN_MAX, items,
                                           &run.ahi_sh, ends, tbs, EV4_RUN_MAX / 2);
            for (size_t bi = 0; bi < nb; bi++) {
                const size_t m = ends[bi] - run.n;
                const uint64_t oa = c->ord, ob = c->next_ord + m - 1, tb = tbs[bi];
                if (tb < c->tsc || loose(tb - c->tsc, ob - oa, hz))
                    break;
                struct ev4_brk *b = &brk[run.nb++];
                b->start = run.n;
                b->end = ends[bi];
                b->ta = c->tsc;
                b->D = tb - c->tsc;
                b->N = ob - oa;
                b->k0 = c->next_ord - oa;
                b->dq = b->D / b->N;
                b->dr = b->D % b->N;
                run.n = ends[bi];
                c->next_ord += m;
                c->tsc = tb;
                c->ord = ob;
            }
            if (run.nb) {
                if (n) {
                    fn(ctx, out, n);
                    n = p0 = 0;
                }
                /* (the reading goes on after the run before fn4 reads any
                 * other item) */
                ev_took_sampled4(i + run.n);
                fn4(ctx, &run);
                i += run.n;
                continue;
            }
        }
        if (!sampled8) {
            /* the plain items (events without a time) straight into out,
             * pending: then the item after them through ev_read_sampled */
            if (cap - n < EVB)
                out_room(&out, &cap, &n, &p0, fn, ctx);
            size_t m = ev_plain_sampled4(d, th, i, hi - i < EVB ? hi - i : EVB, out + n);
            if (m) {
                if (n == p0)
                    o0 = c->next_ord;
                c->next_ord += m;
                n += m;
                i += m;
                continue;
            }
        }
        /* (sampled4: one item, back to the plain ones after it) */
        uint64_t want = sampled8 ? (hi - i < EVB ? hi - i : EVB) : 1;
        size_t got = ev_read_sampled(d, th, i, want, ref, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            const struct ev_sitem *it = &buf[k];
            if (it->kind == EVS_TIME) {
                stamp = 1;
                st = it->tsc;
                continue;
            }
            if (it->kind == EVS_NONE) {
                if (sampled8)
                    stamp = 0;
                continue;
            }
            int stamped = it->kind == EVS_STAMPED || stamp;
            uint64_t t = it->kind == EVS_STAMPED ? it->tsc : st;
            stamp = 0;
            if (n == cap)
                out_room(&out, &cap, &n, &p0, fn, ctx);
            uint64_t ord = c->next_ord++;
            struct ev *e = &out[n];
            e->word = it->word;
            e->idx = i + k;
            if (!stamped) {
                if (n == p0)
                    o0 = ord;
                n++;
                continue;
            }
            if (n > p0)
                pend_times(out + p0, n - p0, o0, c->have, c->tsc, c->ord, 1, t, ord, ref, hz);
            e->tsc = t;
            e->q = EV_EXACT;
            p0 = ++n;
            c->have = 1;
            c->tsc = t;
            c->ord = ord;
            if (n >= EVB) { /* nothing is pending right after a stamp: a batch of the usual size */
                fn(ctx, out, n);
                n = p0 = 0;
            }
        }
        i += got;
    }
    if (n > p0) {
        struct look l = {0, 0};
        int hb = scan_sampled(d, th, hi, th->rt->n, ref, look_cb, &l);
        if (!hb && th->tail_tsc && (!c->have || th->tail_tsc >= c->tsc)) {
            /* the ring's last events: before the thread's end (the fatal
             * signal's freeze), as if that were the stamp of the next event */
            hb = 1;
            l.tsc = th->tail_tsc;
        }
        pend_times(out + p0, n - p0, o0, c->have, c->tsc, c->ord, hb, l.tsc, c->next_ord + l.before, ref, hz);
    }
    if (n)
        fn(ctx, out, n);
}

void ev_run(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref_tsc,
            struct ev_carry *carry, ev_fn fn, ev8_fn fn8, ev4_fn fn4, void *ctx)
{
    if (hi > th->rt->n)
        hi = th->rt->n;
    if (lo >= hi)
        return;
    if (!ev_is_exact(th->rt->fmt))
        run_sampled(d, th, lo, hi, ref_tsc, carry, fn, fn4, ctx);
    else
        run_exact(d, th, lo, hi, fn, fn8, ctx);
}
