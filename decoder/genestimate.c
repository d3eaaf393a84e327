/*
 * genestimate.c -- the generations older than the oldest record, estimated.
 *
 * The runtime keeps the records of the last FT_GEN_SLOTS (64) generations;
 * a big ring can hold events much older than that.  They form the leading
 * synthetic part ("before the oldest record"), which the replay hands to
 * the views as one batch -- one thread's slices of all of it in memory at
 * once, O(ring) instead of O(one generation).  When that part holds more
 * than GEN_EST_ITEMS items in some thread, it is cut again where the
 * generations it spans began: the housekeeper starts a boundary every
 * gen_ms at absolute deadlines, so generation g0 - k began about k periods
 * before the oldest record g0 (the period measured on the records, which
 * also counts the extra boundaries of dlclose).  Only as many cuts as the
 * memory bound needs: halving the span until every thread's items in a part
 * fit GEN_EST_ITEMS, or a part is one period, so a part may stand for
 * several generations (gen..gen_last).  The cuts are by timestamp
 * (gencuts.c: tcut); the parts are marked estimated wherever a view shows
 * generations.
 */
#include <stdlib.h>

#include "genestimate.h"
#include "gencuts.h"
#include "xalloc.h"

#define GEN_EST_ITEMS (1u << 18) /* ring items of one thread per part, at most (unless one period holds more) */
#define GEN_EST_MAX 65536        /* parts at most */

struct est {
    struct dec *d;
    struct tcut **tc;            /* per thread */
    uint64_t S0, P, g0;          /* the oldest record's start and number; the period (ticks) */
    uint64_t (*leaf)[2];         /* the parts found, oldest first: {lo, hi} periods back */
    size_t n, cap;
};

static uint64_t *cuts_at(struct est *e, uint64_t k)
{
    uint64_t *c = xcalloc(e->d->nth, sizeof *c);
    for (size_t i = 0; i < e->d->nth; i++)
        c[i] = tcut_at(e->tc[i], e->S0 - k * e->P);
    return c;
}

/* the span from k = hi to k = lo periods before the oldest record (hi > lo);
 * chi, clo: every thread's cut at its ends */
static void split(struct est *e, uint64_t lo, uint64_t hi, const uint64_t *clo, const uint64_t *chi)
{
    uint64_t most = 0;
    for (size_t i = 0; i < e->d->nth; i++)
        if (clo[i] > chi[i] && clo[i] - chi[i] > most)
            most = clo[i] - chi[i];
    if (hi - lo == 1 || most <= GEN_EST_ITEMS || e->n + 1 >= GEN_EST_MAX) {
        e->leaf = xgrow(e->leaf, &e->cap, e->n + 1, sizeof *e->leaf);
        e->leaf[e->n][0] = lo;
        e->leaf[e->n][1] = hi;
        e->n++;
        return;
    }
    uint64_t mid = lo + (hi - lo) / 2;
    uint64_t *cm = cuts_at(e, mid);
    split(e, mid, hi, cm, chi); /* the older half first: parts in time order */
    split(e, lo, mid, clo, cm);
    free(cm);
}

/* the period, in ticks: measured on the records, else the header's gen_ms */
static uint64_t period(const struct dec *d, size_t r0)
{
    const struct dgen *a = &d->gens[r0], *b = &d->gens[d->ngens - 1];
    if (b->gen > a->gen && b->start_tsc > a->start_tsc)
        return (b->start_tsc - a->start_tsc) / (b->gen - a->gen);
    if (d->t.has_header && d->t.hdr.gen_ms && d->tsc_hz)
        return (uint64_t)((unsigned __int128)d->t.hdr.gen_ms * d->tsc_hz / 1000);
    return 0;
}

int gens_estimate(struct dec *d)
{
    /* a leading synthetic part, then records */
    if (d->ngens < 2 || !d->gens[0].synthetic || d->gens[1].synthetic)
        return 0;
    const size_t r0 = 1;
    const struct dgen *rec = &d->gens[r0];
    uint64_t most = 0, E = UINT64_MAX;
    for (size_t i = 0; i < d->nth; i++) {
        const struct dthread *th = &d->th[i];
        if (th->cut[r0] > most)
            most = th->cut[r0];
        if (th->cut[r0] && th->has_first && th->first_tsc < E)
            E = th->first_tsc;
    }
    uint64_t P = period(d, r0), S0 = rec->start_tsc;
    if (most <= GEN_EST_ITEMS || !P || E >= S0)
        return 0;
    /* periods back to the earliest event, not before generation 0 */
    uint64_t K = (S0 - E + P - 1) / P;
    if (K > rec->gen)
        K = rec->gen;
    if (K > S0 / P)
        K = S0 / P;
    if (!K)
        return 0;

    struct est e = {d, xcalloc(d->nth, sizeof *e.tc), S0, P, rec->gen, NULL, 0, 0};
    for (size_t i = 0; i < d->nth; i++)
        e.tc[i] = tcut_new(d, &d->th[i], rec->clk.ref_tsc);
    uint64_t *clo = xcalloc(d->nth, sizeof *clo);
    for (size_t i = 0; i < d->nth; i++)
        clo[i] = d->th[i].cut[r0];
    uint64_t *chi = cuts_at(&e, K);
    split(&e, 0, K, clo, chi);
    free(clo);
    free(chi);
    for (size_t i = 0; i < d->nth; i++)
        tcut_free(e.tc[i]);
    free(e.tc);

    /* [the synthetic part][the estimated parts][the records] */
    struct dgen *g = xcalloc(d->ngens + e.n + 1, sizeof *g);
    g[0] = d->gens[0];
    for (size_t j = 0; j < e.n; j++) {
        struct dgen *x = &g[1 + j];
        uint64_t lo = e.leaf[j][0], hi = e.leaf[j][1];
        x->estimated = 1;
        x->gen = e.g0 - hi;
        x->gen_last = e.g0 - lo - 1;
        x->start_tsc = S0 - hi * P;
        x->clk = rec->clk;
        x->wall_off = rec->wall_off;
        x->start_ns = ft_clock_ns(&x->clk, x->start_tsc);
        x->space = sym_space(d->sym, x->gen_last, 0);
    }
    for (size_t j = 1; j < d->ngens; j++)
        g[e.n + j] = d->gens[j];
    g[0].gen = g[1].gen ? g[1].gen - 1 : 0;
    g[0].space = sym_space(d->sym, g[0].gen, 0);
    free(d->gens);
    free(e.leaf);
    d->gens = g;
    d->ngens += e.n;
    for (size_t j = 0; j < d->ngens; j++) {
        struct dgen *x = &d->gens[j];
        x->end_ns = j + 1 < d->ngens ? d->gens[j + 1].start_ns : INT64_MAX / 4;
        if (x->end_ns < x->start_ns)
            x->end_ns = x->start_ns;
    }
    for (size_t i = 0; i < d->nth; i++)
        cuts_recompute(d, &d->th[i]);
    return 1;
}
