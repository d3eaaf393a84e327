/*
 * gencuts.c -- where each generation starts in a thread's ring.
 *
 * THRDSTAT gen_pos[g % 64] = {g, ring offset of the write position at the
 * boundary}; offset -> item index via first_off (the ring offset of item 0):
 * idx = ((off - first_off) mod ring_size) / item_size.  The cut is checked
 * against the timestamps around it (items before it must not be newer than
 * the generation's start_tsc, items after it not older, within a
 * tolerance); a missing or inconsistent gen_pos falls back to a cut by
 * timestamp (binary search; sampled mode: the first time word >= start).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gencuts.h"
#include "ringevents.h"
#include "xalloc.h"

#define NONE UINT64_MAX

struct stamps {
    uint64_t *idx, *tsc;
    size_t n;
    int done;
};

static void stamps_load(struct dec *d, struct dthread *th, uint64_t ref, struct stamps *s)
{
    static struct ev_sitem buf[8192];
    size_t cap = 0;
    s->done = 1;
    for (uint64_t i = 0; i < th->rt->n;) {
        size_t got = ev_read_sampled(d, th, i, 8192, ref, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            if (buf[k].kind != EVS_TIME && buf[k].kind != EVS_STAMPED)
                continue;
            if (s->n == cap) {
                cap = cap ? cap * 2 : 1024;
                s->idx = xrealloc(s->idx, cap * sizeof *s->idx);
                s->tsc = xrealloc(s->tsc, cap * sizeof *s->tsc);
            }
            s->idx[s->n] = i + k;
            s->tsc[s->n] = buf[k].tsc;
            s->n++;
        }
        i += got;
    }
}

/* A ring read only from item T on (th->checked_from: the text view reads its
 * end, ring8.c): a cut before T is not looked for.  The view replays nothing
 * before T; it only needs to know the generation of the ring's oldest event
 * (the first one shown): 0 for a boundary at or before that event, else T.
 * tT: the time of the first event from T on (T and tT: 0 for a whole ring). */
struct part {
    uint64_t T, tT;
};

static uint64_t before_part(const struct dthread *th, uint64_t S, const struct part *pt)
{
    return th->has_first && S <= th->first_tsc ? 0 : pt->T;
}

static uint64_t tsc_cut(struct dec *d, struct dthread *th, uint64_t S, struct stamps *st, uint64_t ref,
                        const struct part *pt)
{
    uint64_t n = th->rt->n;
    if (pt->T && S <= pt->tT)
        return before_part(th, S, pt);
    if (ev_is_exact(th->rt->fmt)) {
        /* the first item whose event has tsc >= S: an item of word 0 (an
         * escape: no time of its own) goes with the event after it, looked
         * for among the next 64 items (a zeroed stretch can be long: there
         * the items' own tsc, as for any item) */
        uint64_t lo = pt->T, hi = n;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2, m = mid;
            struct ft_entry e[64];
            size_t got = ev_read_exact(d, th, mid, n - mid < 64 ? n - mid : 64, e), k = 0;
            if (!got)
                break;
            while (k < got && !e[k].word)
                k++;
            if (k == got)
                k = 0;
            m = mid + k;
            if (e[k].tsc < S)
                lo = m < hi ? m + 1 : hi;
            else
                hi = mid;
        }
        return lo;
    }
    if (!st->done)
        stamps_load(d, th, ref, st);
    for (size_t i = 0; i < st->n; i++)
        if (st->tsc[i] >= S) /* unstamped events before the ring's first stamp: after S too */
            return i == 0 ? 0 : st->idx[i];
    return n;
}

/* previous time word / stamped return before i (sampled), within a window */
static int prev_stamp(struct dec *d, struct dthread *th, uint64_t i, uint64_t ref, uint64_t *tsc)
{
    struct ev_sitem buf[512];
    uint64_t from = i > 512 ? i - 512 : 0;
    size_t got = ev_read_sampled(d, th, from, i - from, ref, buf);
    for (size_t k = got; k > 0; k--)
        if (buf[k - 1].kind == EVS_TIME || buf[k - 1].kind == EVS_STAMPED) {
            *tsc = buf[k - 1].tsc;
            return 1;
        }
    return 0;
}

/* sampled: the first stamp at or after item i (within 512 items) */
static int next_stamp(struct dec *d, struct dthread *th, uint64_t i, uint64_t ref, uint64_t *tsc)
{
    struct ev_sitem buf[512];
    size_t got = ev_read_sampled(d, th, i, 512, ref, buf);
    for (size_t k = 0; k < got; k++)
        if (buf[k].kind == EVS_TIME || buf[k].kind == EVS_STAMPED) {
            *tsc = buf[k].tsc;
            return 1;
        }
    return 0;
}

static int first_tsc(struct dec *d, struct dthread *th, uint64_t ref, uint64_t *tsc)
{
    static struct ev_sitem buf[1024];
    for (uint64_t i = 0; i < th->rt->n && i < (1u << 22);) {
        if (ev_is_exact(th->rt->fmt)) {
            struct ft_entry e[64];
            size_t got = ev_read_exact(d, th, i, 64, e);
            if (!got)
                return 0;
            for (size_t k = 0; k < got; k++)
                if (e[k].word) {
                    *tsc = e[k].tsc;
                    return 1;
                }
            i += got;
        } else {
            size_t got = ev_read_sampled(d, th, i, 1024, ref, buf);
            if (!got)
                return 0;
            for (size_t k = 0; k < got; k++)
                if (buf[k].kind == EVS_TIME || buf[k].kind == EVS_STAMPED) {
                    *tsc = buf[k].tsc;
                    return 1;
                }
            i += got;
        }
    }
    return 0;
}

/* Exact mode: the housekeeper records a thread's position a little after the
 * boundary's timestamp (more under load); move the cut to the first entry
 * stamped at or after the boundary, within a window around it, so that a
 * generation's events are also the ones of its time span. */
static uint64_t refine(struct dec *d, struct dthread *th, uint64_t idx, uint64_t S)
{
    enum { W = 512 };
    static struct ft_entry e[2 * W];
    uint64_t from = idx > W ? idx - W : 0;
    size_t got = ev_read_exact(d, th, from, 2 * W, e);
    size_t j = 0;
    while (j < got && (!e[j].word || e[j].tsc < S))
        j++;
    if ((j == 0 && from > 0) || (j == got && from + got < th->rt->n))
        return idx; /* the boundary is outside the window: keep the recorded cut */
    while (j > 0 && !e[j - 1].word)
        j--; /* escapes (word 0: no time of their own) go with the event after them */
    return from + j;
}

/* th->cut, incomplete, by_tsc, the lost_* flags and first_tsc, from the
 * ring as prepared */
static void cuts(struct dec *d, struct dthread *th)
{
    const struct ftr_thread *rt = th->rt;
    size_t G = d->ngens;
    uint64_t n = rt->n;
    memset(th->cut, 0, (G + 1) * sizeof *th->cut);
    memset(th->incomplete, 0, G);
    memset(th->by_tsc, 0, G);
    struct stamps st = {0};
    struct part pt = {th->checked_from, 0};
    if (pt.T) { /* the time of the first event from T on */
        struct ft_entry e[64];
        uint64_t i = pt.T;
        int found = 0;
        for (size_t got; !found && (got = ev_read_exact(d, th, i, 64, e)) > 0; i += got)
            for (size_t k = 0; k < got && !found; k++)
                if (e[k].word) {
                    found = 1;
                    pt.tT = e[k].tsc;
                }
        if (!found)
            pt.tT = UINT64_MAX;
    }
    uint64_t ref_last = d->gens[G - 1].clk.ref_tsc;

    if (rt->has_stat) {
        /* n_dropped also counts a torn slot: the rest was the time filter
         * (or a copy race, reported by its own flag) */
        uint64_t torn = (rt->st.flags & FT_TSF_TORN) ? 1 : 0;
        th->lost_overwritten = !!(rt->st.flags & (FT_TSF_WRAPPED | FT_TSF_COPY_RACED | FT_TSF_RING_PARTIAL));
        th->lost_filtered = d->t.has_header && (d->t.hdr.flags & FT_RAWF_TIME_FILTERED) &&
                            !(rt->st.flags & FT_TSF_COPY_RACED) && rt->st.n_dropped > torn;
        th->lost_older = th->lost_overwritten || th->lost_filtered;
    } else {
        th->lost_older = th->lost_overwritten = 1; /* original format: cannot tell */
    }
    th->has_first = first_tsc(d, th, ref_last, &th->first_tsc);

    uint64_t tol = ft_ns_ticks(&d->gens[G - 1].clk, 2000000); /* 2 ms */
    size_t isz = ev_item_size(rt->fmt);
    uint64_t prev = 0;
    for (size_t gi = 0; gi < G; gi++) {
        const struct dgen *g = &d->gens[gi];
        uint64_t idx = 0;
        if (!g->synthetic) {
            uint64_t S = g->start_tsc, ref = g->clk.ref_tsc;
            idx = NONE;
            int had_pos = 0;
            if (rt->has_stat && rt->st.ring_size && !(rt->st.ring_size & (rt->st.ring_size - 1))) {
                const unsigned slot = (unsigned)(g->gen % FT_GEN_SLOTS);
                if (rt->st.gen_pos[slot].gen == g->gen) {
                    had_pos = 1;
                    uint64_t rel = (rt->st.gen_pos[slot].off - rt->st.first_off) & (rt->st.ring_size - 1);
                    if (rel % isz == 0 && rel / isz <= n)
                        idx = rel / isz;
                    else if (rel % isz == 0)
                        idx = 0; /* overwritten: the ring starts after the boundary */
                }
            }
            if (pt.T && idx != NONE && idx > 0 && idx < pt.T)
                idx = NONE; /* before T: by timestamps from T on */
            if (idx != NONE && idx > 0 && idx <= n) { /* check against timestamps */
                uint64_t t;
                int ok = 1;
                if (ev_is_exact(rt->fmt)) {
                    if (ev_tsc_at(d, th, idx - 1, ref, &t) && t > S + tol)
                        ok = 0;
                    if (idx < n && ev_tsc_at(d, th, idx, ref, &t) && t + tol < S)
                        ok = 0;
                } else {
                    int before = prev_stamp(d, th, idx, ref, &t);
                    if (before && t > S + tol)
                        ok = 0;
                    /* no stamp before it (the ring starts fewer items than
                     * a sampling period before): only a stamp close after
                     * it vouches for it, else a laps-old position on a later
                     * boundary's escapes would put the items before it
                     * before this generation */
                    if (idx < n && next_stamp(d, th, idx, ref, &t) && (t + tol < S || (!before && t > S + tol)))
                        ok = 0;
                }
                if (!ok)
                    idx = NONE;
                else if (ev_is_exact(rt->fmt))
                    idx = refine(d, th, idx, S);
            } else if (idx == 0 && th->has_first && th->first_tsc + tol < S) {
                idx = NONE; /* the ring starts well before the boundary: inconsistent */
            }
            if (idx == NONE) {
                idx = tsc_cut(d, th, S, &st, ref, &pt);
                /* a wrapped ring whose events all follow the boundary: its
                 * position was overwritten (expected, not unusable) */
                th->by_tsc[gi] = (uint8_t)(had_pos && (idx > 0 || !(rt->st.flags & FT_TSF_WRAPPED)));
            }
        }
        if (idx < prev)
            idx = prev;
        if (idx > n)
            idx = n;
        th->cut[gi] = prev = idx;
    }
    th->cut[G] = n;

    /* generations whose start the ring does not reach */
    uint64_t tstart = rt->has_stat ? rt->st.start_tsc : 0;
    uint64_t texit = rt->has_stat ? rt->st.exit_tsc : 0;
    for (size_t gi = 0; gi < G; gi++) {
        const struct dgen *g = &d->gens[gi];
        if (!th->lost_older || !th->has_first)
            continue;
        if (g->synthetic) {
            th->incomplete[gi] = 1; /* before the oldest record: its start is unknown */
            continue;
        }
        uint64_t S = g->start_tsc;
        uint64_t E = gi + 1 < G ? d->gens[gi + 1].start_tsc : UINT64_MAX;
        uint64_t from = S > tstart ? S : tstart;
        if (th->first_tsc > from && tstart < E && (!texit || texit > S))
            th->incomplete[gi] = 1;
    }
    free(st.idx);
    free(st.tsc);
}

static void cuts_alloc(struct dec *d, struct dthread *th)
{
    size_t G = d->ngens;
    th->cut = xcalloc(G + 1, sizeof *th->cut);
    th->incomplete = xcalloc(G, 1);
    th->by_tsc = xcalloc(G, 1);
}

void cuts_compute(struct dec *d, struct dthread *th)
{
    ev_prepare(d, th);
    cuts_alloc(d, th);
    cuts(d, th);
}

void cuts_recompute(struct dec *d, struct dthread *th)
{
    free(th->cut);
    free(th->incomplete);
    free(th->by_tsc);
    cuts_alloc(d, th);
    cuts(d, th);
}

/* ---- cuts by time alone ---------------------------------------------------- */

struct tcut {
    struct dec *d;
    struct dthread *th;
    uint64_t ref;
    struct stamps st;
};

struct tcut *tcut_new(struct dec *d, struct dthread *th, uint64_t ref_tsc)
{
    struct tcut *c = xcalloc(1, sizeof *c);
    c->d = d;
    c->th = th;
    c->ref = ref_tsc;
    return c;
}

uint64_t tcut_at(struct tcut *c, uint64_t S)
{
    struct part whole = {0, 0};
    return tsc_cut(c->d, c->th, S, &c->st, c->ref, &whole);
}

void tcut_free(struct tcut *c)
{
    if (!c)
        return;
    free(c->st.idx);
    free(c->st.tsc);
    free(c);
}

void cuts_after_tail(struct dec *d, struct dthread *th)
{
    uint64_t T = th->checked_from;
    ev_prepare_tail(d, th);
    if (th->checked_from != T)
        cuts(d, th);
}

const char *dec_lost_why(const struct dthread *th)
{
    if (th->lost_filtered)
        return th->lost_overwritten ? "left out by the snapshot's start time; the ring also wrapped"
                                    : "left out by the snapshot's start time";
    return "overwritten";
}
