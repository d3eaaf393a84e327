/*
 * ring8.c -- rings of 8-byte exact-mode entries (FT_FMT_EXACT8, FORMAT.md
 * 1.4) as {word, tsc} entries, and the check of every ring for entries that
 * are zero or invalid inside the emitted window (all formats).
 *
 * An FT_FMT_EXACT8 event holds the low halves of its address and TSC; the
 * high halves are those of the thread's last ADDR_HI / TSC_HI escape.  One
 * sequential pass per thread (rv_prepare) records the decoding state every
 * CK items (checkpoints: random access costs at most CK items) and resolves
 * the high halves of the events that precede the first escape of a run:
 * the oldest events of a wrapped ring, and those after a stretch of zeroed
 * or invalid entries (whose escapes may have been lost with them).
 *   TSC: the high half is constant until the next TSC_HI escape (the runtime
 *   writes one whenever it changes), so the run's last event lies before
 *   the first known time after it and before the first generation boundary
 *   recorded after it (U: the smaller), and after the last known time before
 *   it (L): the high half that puts it latest at or before U (else earliest
 *   at or after L, else nearest the thread's generation reference).
 *   Address: the candidate high half (the next and the previous escape's,
 *   and every module's executable segments') under which most of the run's
 *   addresses fall inside executable code.
 * Only the text view (d->tail_only): the pass covers the end of the ring
 * (th->lo on) and, on demand, the few items other readers look at (the
 * generation cuts), each from a point where its state is the whole-ring
 * pass's (see "reading only part of a ring" below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decstate.h"
#include "ringevents.h"
#include "xalloc.h"
#include "ringesc.h"

struct run *rx_run_new(struct ring8 *r, uint64_t start, int tsc)
{
    r->runs = xgrow(r->runs, &r->runcap, r->nruns + 1, sizeof *r->runs);
    struct run *u = &r->runs[r->nruns++];
    memset(u, 0, sizeof *u);
    u->start = start;
    u->end = start;
    u->tsc = tsc;
    return u;
}

/* how many of the run's sampled addresses fall in executable code with
 * high half hi */
static unsigned addr_score(const struct dec *d, const struct run *u, uint32_t hi)
{
    unsigned score = 0;
    for (unsigned k = 0; k < u->nsamples; k++) {
        uint64_t a = ((uint64_t)hi << 32) | u->samples[k];
        int in = 0;
        for (size_t m = 0; m < d->t.nmods && !in; m++) {
            const struct ft_module *md = &d->t.mods[m];
            for (uint32_t s = 0; s < md->nseg && s < FT_MOD_SEGS && !in; s++)
                in = a - md->seg[s].start < md->seg[s].size;
        }
        for (size_t m = 0; m < d->t.nmaps && !in; m++)
            in = (d->t.maps[m].prot & FT_MAPF_X) && a >= d->t.maps[m].start && a < d->t.maps[m].end;
        score += in;
    }
    return score;
}

/* the high halves [h0, h1] of the range [start, start + size): at most
 * RX_MAX_HALVES of them (real code is far smaller than 4 GiB; a damaged
 * record's range can be 2^64 bytes: its first ones) */
#define RX_MAX_HALVES 16
static uint64_t last_half(uint64_t start, uint64_t size)
{
    uint64_t h0 = start >> 32, h1 = (start + size - 1) >> 32;
    if (start + size - 1 < start) /* (wraps) */
        h1 = UINT32_MAX;
    return h1 - h0 >= RX_MAX_HALVES ? h0 + RX_MAX_HALVES - 1 : h1;
}

uint32_t rx_addr_resolve(const struct dec *d, const struct run *u, int have_next, uint32_t next,
                             int have_prev, uint32_t prev)
{
    /* a run of markers only (a context switch's, FT_MARKER_PAGE: written
     * with high half 0, and an ADDR_HI escape follows them) */
    unsigned markers = 0;
    for (unsigned k = 0; k < u->nsamples; k++)
        markers += u->samples[k] < FT_MARKER_PAGE;
    if (u->nsamples && markers == u->nsamples)
        return 0;
    uint32_t best = have_next ? next : have_prev ? prev : 0;
    unsigned best_score = addr_score(d, u, best);
    if (have_prev && prev != best) {
        unsigned s = addr_score(d, u, prev);
        if (s > best_score) { best = prev; best_score = s; }
    }
    for (size_t m = 0; m < d->t.nmods; m++) {
        const struct ft_module *md = &d->t.mods[m];
        for (uint32_t s = 0; s < md->nseg && s < FT_MOD_SEGS; s++) {
            if (!md->seg[s].size)
                continue;
            for (uint64_t h = md->seg[s].start >> 32, e = last_half(md->seg[s].start, md->seg[s].size); h <= e; h++) {
                unsigned sc = addr_score(d, u, (uint32_t)h);
                if (sc > best_score) { best = (uint32_t)h; best_score = sc; }
            }
        }
    }
    for (size_t m = 0; m < d->t.nmaps; m++) {
        if (!(d->t.maps[m].prot & FT_MAPF_X) || d->t.maps[m].end <= d->t.maps[m].start) continue;
        for (uint64_t h = d->t.maps[m].start >> 32, e = last_half(d->t.maps[m].start, d->t.maps[m].end - d->t.maps[m].start);
             h <= e; h++) {
            unsigned sc = addr_score(d, u, (uint32_t)h);
            if (sc > best_score) { best = (uint32_t)h; best_score = sc; }
        }
    }
    return best;
}

/* the TSC high half of a run: its last event at or before U, else its first
 * at or after L, else nearest ref */
uint32_t rx_tsc_resolve(const struct run *u, int have_u, uint64_t U, int have_l, uint64_t L, uint64_t ref)
{
    if (have_u) {
        uint64_t h = U >> 32;
        if (((h << 32) | u->lo_last) > U && h > 0) h--;
        return (uint32_t)h;
    }
    if (have_l) {
        uint64_t h = L >> 32;
        if (((h << 32) | u->lo_first) < L) h++;
        return (uint32_t)h;
    }
    uint64_t h = ref >> 32, best = h, bd = UINT64_MAX;
    for (uint64_t c = h ? h - 1 : 0; c <= h + 1; c++) {
        uint64_t t = (c << 32) | u->lo_last;
        uint64_t dd = t > ref ? t - ref : ref - t;
        if (dd < bd) { bd = dd; best = c; }
    }
    return (uint32_t)best;
}

/* item i of rt's ring (a 4-byte item widened); 0 if it cannot be read */
static uint64_t item_at(const struct dec *d, const struct ftr_thread *rt, uint64_t i)
{
    if (rt->fmt == FT_FMT_SAMPLED4) {
        uint32_t w;
        return ftr_read_entries(&d->src, rt, i, 1, &w) == 1 ? w : 0;
    }
    uint64_t w;
    return ftr_read_entries(&d->src, rt, i, 1, &w) == 1 ? w : 0;
}

/* w (item_at) is a TSC_HI (tsc) or ADDR_HI escape in rt's format */
static int is_hi_escape(const struct ftr_thread *rt, uint64_t w, int tsc)
{
    if (rt->fmt == FT_FMT_SAMPLED4)
        return FT_S4_IS_ESC(w) && FT_S4_ESC_TYPE(w) == (tsc ? FT_S4_TSC_HI : FT_S4_ADDR_HI);
    return (w & FT_E8_TAG_MASK) == FT_E8_ESC && FT_E8_ESC_TYPE(w) == (tsc ? FT_E8_TSC_HI : FT_E8_ADDR_HI);
}

int rx_time_after_esc(const struct dec *d, const struct ftr_thread *rt, uint64_t i, uint64_t lim, uint64_t *T)
{
    const uint64_t ref = d->gens[d->ngens - 1].clk.ref_tsc;
    const int s4 = rt->fmt == FT_FMT_SAMPLED4;
    for (uint64_t j = i; j < rt->n && j < i + lim; j++) {
        uint64_t w = item_at(d, rt, j);
        if (!w)
            return 0;
        if (!is_hi_escape(rt, w, 1))
            continue;
        /* its time: with the next stamp (sampled, within 64 items) or
         * event (exact, within 8) */
        for (uint64_t m = j + 1; m < rt->n && m < j + (s4 ? 64 : 8); m++) {
            uint64_t w2 = item_at(d, rt, m);
            if (!w2)
                return 0;
            if (s4 ? FT_S4_IS_STAMP(w2) : ev8_plain(w2)) {
                *T = s4 ? (uint64_t)s4_thi((uint32_t)(w >> 5), ref) << 32 | (w2 & ~7ull)
                        : (w & 0xFFFFFFFF00000000ull) | (w2 >> 32);
                return 1;
            }
        }
        return 0;
    }
    return 0;
}

/* item i is an escape a generation boundary makes the next event carry */
static int is_boundary_escape(const struct dec *d, const struct ftr_thread *rt, uint64_t i)
{
    uint64_t w = item_at(d, rt, i);
    return is_hi_escape(rt, w, 0) || is_hi_escape(rt, w, 1);
}

/* *rel: generation g's recorded position in rt's ring, in bytes from the
 * first emitted item; 0 if not recorded */
static int pos_rel(const struct ftr_thread *rt, uint64_t g, uint64_t *rel)
{
    const uint64_t pg = rt->st.gen_pos[g % FT_GEN_SLOTS].gen, off = rt->st.gen_pos[g % FT_GEN_SLOTS].off;
    if (pg != g)
        return 0;
    *rel = (off - rt->st.first_off) & (rt->st.ring_size - 1);
    return 1;
}

/* rx_gen_bound_after's tolerances, in TSC ticks (3 GHz when the frequency
 * is unknown): how far a recorded position's time may lie outside its
 * generation (2 ms), and how late after a boundary the housekeeper may read
 * a ring's position (10 ms) */
#define POS_TIME_TOL(hz) ((hz) ? (hz) / 500 : 6000000ull)
#define POS_READ_LATE(hz) ((hz) ? (hz) / 100 : 30000000ull)

/* *S: an upper bound of the events before item idx, from the oldest
 * generation whose recorded ring position (THRDSTAT gen_pos, as an item
 * index) is at or after idx and is that generation's; 1 if any */
static int rx_gen_bound_after(const struct dec *d, const struct dthread *th, uint64_t idx, uint64_t *S)
{
    const struct ftr_thread *rt = th->rt;
    if (!rt->has_stat || !rt->st.ring_size || (rt->st.ring_size & (rt->st.ring_size - 1)))
        return 0;
    const uint64_t tol = POS_TIME_TOL(d->tsc_hz);
    for (size_t gi = 0; gi < d->ngens; gi++) {
        const struct dgen *g = &d->gens[gi];
        uint64_t rel, rel2;
        if (g->synthetic || !pos_rel(rt, g->gen, &rel))
            continue;
        size_t isz = ftr_item_size(rt->fmt);
        if (rel % isz || rel / isz > rt->n || rel / isz < idx)
            continue;
        const uint64_t k = rel / isz;
        if (k < rt->n) {
            /* a position in the window counts where the boundary's escapes
             * lie (the runtime makes the first event after a boundary carry
             * them) and the time after them is this generation's: a wrapped
             * ring's position may be laps old and fall on the escapes of a
             * later boundary (or of a high half's change).  A thread that
             * slept across boundaries has them all at one position: the
             * time is the last one's, the bound the first one's. */
            uint64_t T;
            if (!is_boundary_escape(d, rt, k) || !rx_time_after_esc(d, rt, k, rt->fmt == FT_FMT_SAMPLED4 ? 64 : 2, &T))
                continue;
            size_t gj = gi; /* the last of the generations recorded at this position */
            while (gj + 1 < d->ngens && pos_rel(rt, d->gens[gj + 1].gen, &rel2) && rel2 == rel)
                gj++;
            if (T + tol < g->start_tsc || (gj + 1 < d->ngens && T >= d->gens[gj + 1].start_tsc + tol))
                continue;
        } else if (rt->st.flags & FT_TSF_WRAPPED) {
            continue; /* the end of a wrapped ring: any lap's */
        }
        /* the housekeeper reads the position a little after the boundary's
         * time: events just before that position may be up to this late */
        *S = g->start_tsc + POS_READ_LATE(d->tsc_hz);
        return 1;
    }
    return 0;
}

void rx_tsc_upper(const struct dec *d, const struct dthread *th, uint64_t end, int *have, uint64_t *U)
{
    /* a tighter upper bound: the start of the first generation whose
     * recorded ring position lies after the run (its events are older than
     * that boundary; a thread that slept across boundaries has them all
     * recorded at one position) */
    uint64_t S;
    if (rx_gen_bound_after(d, th, end, &S) && (!*have || S < *U)) {
        *have = 1;
        *U = S;
    }
    /* an exited thread's events are older than its exit */
    if (!*have && th->rt->has_stat && th->rt->st.exit_tsc) {
        *have = 1;
        *U = th->rt->st.exit_tsc;
    }
}

/* is the TSC run u the ring's newest: no zeroed item nor TSC_HI escape after
 * it (at most 4096 items: a sampled run ends at its last stamp) */
static int newest_run(const struct dec *d, const struct ftr_thread *rt, const struct run *u)
{
    if (!u->tsc || u->end > rt->n || rt->n - u->end > 4096)
        return 0;
    for (uint64_t j = u->end; j < rt->n; j++) {
        uint64_t w = item_at(d, rt, j);
        if (!w || is_hi_escape(rt, w, 1))
            return 0;
    }
    return 1;
}

int rx_tsc_hi_recorded(const struct dec *d, const struct dthread *th, const struct run *u, uint32_t *hi)
{
    const struct ftr_thread *rt = th->rt;
    if (!rt->has_stat || !(rt->st.flags & FT_TSF_TSC_HI) || !newest_run(d, rt, u))
        return 0;
    *hi = rt->st.tsc_hi;
    return 1;
}

uint64_t rx_tsc_ref(const struct dec *d, const struct dthread *th, const struct run *u)
{
    uint64_t ref = d->gens[d->ngens - 1].clk.ref_tsc;
    const struct ftr_trace *t = &d->t;
    if (t->has_header && t->hdr.taken_tsc > ref &&
        (t->hdr.source == FT_SRC_LIVE || t->hdr.source == FT_SRC_SNAPSHOT) && newest_run(d, th->rt, u))
        ref = t->hdr.taken_tsc;
    return ref;
}

void rx_note_invalid(struct dthread *th, uint64_t i)
{
    if (!th->ninvalid)
        th->invalid_first = i;
    th->invalid_last = i;
    th->ninvalid++;
}

/* the lower bound of the ring's oldest event: the snapshot's time filter, or
 * the thread's start */
uint64_t rx_ring_lower(const struct dec *d, const struct dthread *th, int *have)
{
    uint64_t l = 0;
    if (th->rt->has_stat && th->rt->st.start_tsc && !(th->rt->st.flags & FT_TSF_WRAPPED))
        l = th->rt->st.start_tsc;
    if (d->t.has_header && (d->t.hdr.flags & FT_RAWF_TIME_FILTERED) && d->t.hdr.min_tsc > l)
        l = d->t.hdr.min_tsc;
    *have = l != 0;
    return l;
}

/* the zeroed/invalid items a scan found (merged into th by note_merge) */
struct inval {
    uint64_t n, first, last;
};

static void inval_note(struct inval *v, uint64_t i)
{
    if (!v->n)
        v->first = i;
    v->last = i;
    v->n++;
}

/* the scan's items precede every item counted before (a text view reading
 * further back) */
static void note_merge(struct dthread *th, const struct inval *v)
{
    if (!v->n)
        return;
    if (!th->ninvalid)
        th->invalid_last = v->last;
    th->invalid_first = v->first;
    th->ninvalid += v->n;
}

/* resolve runs[from..]: U / the next escape's high half = the first known
 * value after the run */
static void resolve_runs(struct dec *d, struct dthread *th, struct run *runs, size_t nruns)
{
    const struct ftr_thread *rt = th->rt;
    for (size_t ri = 0; ri < nruns; ri++) {
        struct run *u = &runs[ri];
        if (u->tsc && rx_tsc_hi_recorded(d, th, u, &u->hi)) {
            /* the ring's newest events: the thread's record has their high half */
        } else if (u->tsc) {
            /* U: the first event after the run with a known TSC */
            int have_u = 0;
            uint64_t U = 0;
            have_u = rx_time_after_esc(d, th->rt, u->end, 64, &U);
            rx_tsc_upper(d, th, u->end, &have_u, &U);
            u->hi = rx_tsc_resolve(u, have_u, U, u->have_l, u->L, rx_tsc_ref(d, th, u));
        } else {
            /* the next ADDR_HI escape after the run */
            int have_n = 0;
            uint32_t nx = 0;
            for (uint64_t j = u->end, lim = 0; j < rt->n && lim < 64; j++, lim++) {
                uint64_t w;
                if (ftr_read_entries(&d->src, rt, j, 1, &w) != 1 || !w)
                    break;
                if ((w & FT_E8_TAG_MASK) == FT_E8_ESC && FT_E8_ESC_TYPE(w) == FT_E8_ADDR_HI) {
                    have_n = 1;
                    nx = (uint32_t)(w >> 32);
                    break;
                }
            }
            u->hi = rx_addr_resolve(d, u, have_n, nx, u->have_prev, u->prev);
        }
    }
}

/* the scan's state between items (all unknown at the ring's start) */
struct scanst {
    struct ck s;
    int have_known, have_prev_ahi;
    uint64_t last_known;
    uint32_t prev_ahi;
};

/* The forward scan from item p0 in state *st (0 or as the whole-ring scan): checkpoints at and after item c into r->ck (c: where the scan's
 * state is that of a scan from item 0), the runs into t (those starting
 * before c are not the whole-ring scan's), the zeroed/invalid items before
 * item count_hi into *inv.  It stops at item b, or later where no run is
 * open (a run's end and resolution need its whole extent); returns where. */
static uint64_t scan8(struct dec *d, struct dthread *th, struct ring8 *t, uint64_t p0, const struct scanst *st,
                      uint64_t c, uint64_t b, uint64_t count_hi, struct inval *inv)
{
    const struct ftr_thread *rt = th->rt;
    struct ring8 *r = th->ring8;
    uint64_t *scratch = xmalloc(BLK * sizeof *scratch);
    struct ck s = st->s;
    size_t tr = SIZE_MAX, ar = SIZE_MAX; /* open runs (indices: runs[] grows) */
    int have_known = st->have_known;   /* a full TSC seen (L for the next TSC run) */
    uint64_t last_known = st->last_known;
    int have_prev_ahi = st->have_prev_ahi;
    uint32_t prev_ahi = st->prev_ahi;
    int lower_have;
    uint64_t lower = rx_ring_lower(d, th, &lower_have);
    uint64_t i = p0, stop = rt->n;

    while (i < rt->n) {
        size_t got;
        const uint8_t *buf = ftr_entries_view(&d->src, rt, i, BLK, scratch, &got);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t idx = i + k, w = ev_ld8(buf, k);
            if (idx >= b && tr == SIZE_MAX && ar == SIZE_MAX) {
                stop = idx;
                goto done;
            }
            if (idx % CK == 0 && idx >= c) {
                r->ck[idx / CK] = s;
                if (r->ckok)
                    r->ckok[idx / CK] = 1;
            }
            if (s.tknown && s.aknown && ev8_plain(w)) {
                /* the common case: events with both high halves known (no
                 * run is open then), up to the next checkpoint or b; only
                 * the last one's time is kept */
                uint64_t lim = (idx / CK + 1) * CK;
                if (b > idx && b < lim)
                    lim = b;
                size_t kl = lim - i < got ? (size_t)(lim - i) : got, k2 = k + 1;
                /* four at a time: one branch for four (an event has a tag
                 * other than 3 and is not 0) */
                while (k2 + 4 <= kl) {
                    uint64_t w0 = ev_ld8(buf, k2), w1 = ev_ld8(buf, k2 + 1), w2 = ev_ld8(buf, k2 + 2), w3 = ev_ld8(buf, k2 + 3);
                    /* tag 3: bits 1 and 0 both set */
                    uint64_t esc = ((w0 & (w0 >> 1)) | (w1 & (w1 >> 1)) | (w2 & (w2 >> 1)) | (w3 & (w3 >> 1))) & 1;
                    if (esc | (w0 == 0) | (w1 == 0) | (w2 == 0) | (w3 == 0))
                        break;
                    k2 += 4;
                }
                while (k2 < kl && ev8_plain(ev_ld8(buf, k2)))
                    k2++;
                w = ev_ld8(buf, k2 - 1);
                have_known = 1;
                last_known = s.last_tsc = ((uint64_t)s.thi << 32) | (w >> 32);
                have_prev_ahi = 1;
                prev_ahi = s.ahi;
                s.catch_next = 0;
                k = k2 - 1;
                continue;
            }
            if (!w) { /* zeroed inside the window: the state may have changed unseen */
                if (idx < count_hi)
                    inval_note(inv, idx);
                if (s.aknown) { have_prev_ahi = 1; prev_ahi = s.ahi; }
                s.aknown = s.tknown = 0;
                s.catch_next = 0;
                tr = ar = SIZE_MAX;
                continue;
            }
            if ((w & FT_E8_TAG_MASK) == FT_E8_ESC) {
                unsigned ty = FT_E8_ESC_TYPE(w);
                if (ty == FT_E8_ADDR_HI) {
                    s.ahi = (uint32_t)(w >> 32);
                    s.aknown = 1;
                    ar = SIZE_MAX;
                } else if (ty == FT_E8_TSC_HI) {
                    s.thi = (uint32_t)(w >> 32);
                    s.tknown = 1;
                    tr = SIZE_MAX;
                } else if (ty == FT_E8_CATCH && !(w & FT_E8_ESC_ZERO_MASK)) {
                    s.catch_next = 1;
                } else if (idx < count_hi) {
                    inval_note(inv, idx);
                }
                continue;
            }
            uint32_t lo = (uint32_t)(w >> 32);
            if (!s.tknown) {
                if (tr == SIZE_MAX) {
                    struct run *u = rx_run_new(t, idx, 1);
                    u->lo_first = lo;
                    u->have_l = have_known;
                    u->L = last_known;
                    if (!have_known && idx == 0 && lower_have) {
                        u->have_l = 1;
                        u->L = lower;
                    }
                    tr = (size_t)(u - t->runs);
                }
                t->runs[tr].end = idx + 1;
                t->runs[tr].lo_last = lo;
            } else {
                have_known = 1;
                last_known = ((uint64_t)s.thi << 32) | lo;
                s.last_tsc = last_known;
            }
            if (!s.aknown) {
                if (ar == SIZE_MAX) {
                    struct run *u = rx_run_new(t, idx, 0);
                    u->have_prev = have_prev_ahi;
                    u->prev = prev_ahi;
                    ar = (size_t)(u - t->runs);
                }
                struct run *u = &t->runs[ar];
                u->end = idx + 1;
                if (u->nsamples < NSAMPLE) {
                    u->samples[u->nsamples++] = (uint32_t)(w & FT_E8_ADDR_LO_MASK);
                } else if (!s.tknown) {
                    /* both high halves unknown, the samples taken: until the
                     * next escape, zeroed item or checkpoint only the runs'
                     * ends move (a wrapped ring's oldest lap, up to its first
                     * boundary: the text view reads it to date the ring's
                     * oldest event) */
                    size_t k2 = k + 1;
                    while (k2 < got && ev8_plain(ev_ld8(buf, k2)) && (i + k2) % CK != 0)
                        k2++;
                    if (k2 > k + 1) {
                        u->end = t->runs[tr].end = i + k2;
                        t->runs[tr].lo_last = (uint32_t)(ev_ld8(buf, k2 - 1) >> 32);
                        k = k2 - 1;
                    }
                }
            } else {
                have_prev_ahi = 1;
                prev_ahi = s.ahi;
            }
            s.catch_next = 0;
        }
        i += got;
    }
    stop = i < rt->n ? i : rt->n;
done:
    free(scratch);
    return stop;
}

static void prepare8(struct dec *d, struct dthread *th)
{
    const struct ftr_thread *rt = th->rt;
    struct ring8 *r = xcalloc(1, sizeof *r);
    th->ring8 = r;
    r->nck = rt->n / CK + 1;
    r->ck = xcalloc(r->nck, sizeof *r->ck);
    struct inval inv = {0};
    struct scanst st = {0};
    scan8(d, th, r, 0, &st, 0, rt->n, UINT64_MAX, &inv);
    note_merge(th, &inv);
    resolve_runs(d, th, r->runs, r->nruns);
}

/* ---- reading only part of a ring (the text view: its end) ----------------
 * The scan's state after an event whose address and TSC high halves both
 * come from escapes (the last ADDR_HI and TSC_HI before it, with no zeroed
 * item after them) is known from that event and those two escapes alone:
 * both high halves known, the last time that event's, no run open.  So
 * reading a part of the ring needs only a look back from its start for the
 * last such event and its escapes, and a scan from there; its checkpoints
 * and runs are those of the whole-ring scan. */

/* the scan's start for items from a on (*st: its state there), found by
 * reading back from a: the item after the last event before a preceded by
 * a TSC_HI and an ADDR_HI escape with no zeroed item in between (0: the
 * ring's start, *st unknown) */
static uint64_t converge_from(struct dec *d, const struct dthread *th, uint64_t a, struct scanst *st)
{
    enum { B = 16384 };
    const struct ftr_thread *rt = th->rt;
    static uint64_t buf[B];
    uint64_t cand = UINT64_MAX, cw = 0;
    int got_t = 0, got_a = 0;
    uint32_t thi = 0, ahi = 0;
    memset(st, 0, sizeof *st);
    for (uint64_t j = a; j > 0;) {
        uint64_t from = j > B ? j - B : 0;
        size_t got = ftr_read_entries(&d->src, rt, from, j - from, buf);
        if (got != j - from)
            break;
        for (size_t k = got; k > 0; k--) {
            uint64_t w = buf[k - 1];
            if (w && (w & FT_E8_TAG_MASK) != FT_E8_ESC) { /* an event: the candidate, or before it */
                if (cand == UINT64_MAX) {
                    cand = from + k - 1;
                    cw = w;
                }
                continue;
            }
            if (!w) {
                cand = UINT64_MAX;
                got_t = got_a = 0;
                continue;
            }
            if (cand == UINT64_MAX)
                continue;
            unsigned ty = FT_E8_ESC_TYPE(w);
            if (ty == FT_E8_TSC_HI && !got_t) {
                got_t = 1;
                thi = (uint32_t)(w >> 32);
            } else if (ty == FT_E8_ADDR_HI && !got_a) {
                got_a = 1;
                ahi = (uint32_t)(w >> 32);
            }
            if (got_t && got_a) {
                st->s.ahi = ahi;
                st->s.thi = thi;
                st->s.aknown = st->s.tknown = 1;
                st->s.last_tsc = st->last_known = ((uint64_t)thi << 32) | (cw >> 32);
                st->have_known = st->have_prev_ahi = 1;
                st->prev_ahi = ahi;
                return cand + 1;
            }
        }
        j = from;
    }
    memset(st, 0, sizeof *st);
    return 0;
}

static int run_cmp(const void *a, const void *b)
{
    const struct run *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->tsc < y->tsc) - (x->tsc > y->tsc); /* a TSC run first, as the scan makes them */
}

/* the runs of t from item c on (resolved) into r->runs, in order, once */
static void runs_merge(struct ring8 *r, struct ring8 *t, uint64_t c)
{
    size_t n0 = r->nruns;
    for (size_t k = 0; k < t->nruns; k++) {
        const struct run *u = &t->runs[k];
        if (u->start < c)
            continue;
        int dup = 0;
        for (size_t lo = 0, hi = n0; lo < hi && !dup;) { /* r->runs[0..n0) are sorted */
            size_t mid = lo + (hi - lo) / 2;
            int cmp = run_cmp(&r->runs[mid], u);
            if (!cmp)
                dup = 1;
            else if (cmp < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (dup)
            continue;
        r->runs = xgrow(r->runs, &r->runcap, r->nruns + 1, sizeof *r->runs);
        r->runs[r->nruns++] = *u;
    }
    if (r->nruns > n0)
        qsort(r->runs, r->nruns, sizeof *r->runs, run_cmp);
}

/* items [lo, hi) of r's ring lie in one span of scanned items */
static int covered(const struct ring8 *r, uint64_t lo, uint64_t hi)
{
    for (size_t k = 0; k < r->nspans; k++)
        if (r->spans[k].lo <= lo && hi <= r->spans[k].hi)
            return 1;
    return 0;
}

static void span_add(struct ring8 *r, uint64_t lo, uint64_t hi)
{
    r->spans = xgrow(r->spans, &r->spancap, r->nspans + 1, sizeof *r->spans);
    r->spans[r->nspans].lo = lo;
    r->spans[r->nspans++].hi = hi;
    /* merge the overlapping ones (the runs of both are known) */
    for (int again = 1; again;) {
        again = 0;
        for (size_t x = 0; x < r->nspans && !again; x++)
            for (size_t y = x + 1; y < r->nspans && !again; y++) {
                struct span *p = &r->spans[x], *q = &r->spans[y];
                if (p->lo <= q->hi && q->lo <= p->hi) {
                    p->lo = p->lo < q->lo ? p->lo : q->lo;
                    p->hi = p->hi > q->hi ? p->hi : q->hi;
                    *q = r->spans[--r->nspans];
                    again = 1;
                }
            }
    }
}

/* make items [a, b) readable (a: a checkpoint): their checkpoint and runs;
 * count: note the zeroed/invalid items from the scan's start up to the
 * part counted before (th->checked_from) */
static void ensure8(struct dec *d, struct dthread *th, uint64_t a, uint64_t b, int count)
{
    struct ring8 *r = th->ring8;
    if (!count && r->ckok[a / CK] && covered(r, a, b))
        return;
    struct scanst st;
    uint64_t c = converge_from(d, th, a, &st);
    uint64_t bb = (b + CK - 1) / CK * CK;
    struct ring8 t = {0};
    struct inval inv = {0};
    uint64_t e = scan8(d, th, &t, c, &st, c, bb, count ? th->checked_from : 0, &inv);
    if (count && c < th->checked_from) {
        note_merge(th, &inv);
        th->checked_from = c;
    }
    resolve_runs(d, th, t.runs, t.nruns);
    runs_merge(r, &t, c);
    free(t.runs);
    span_add(r, c, e);
}

static void invalid_when(struct dec *d, struct dthread *th);

void ev_prepare_tail(struct dec *d, struct dthread *th)
{
    struct ring8 *r = th->ring8;
    if (!r || !r->ckok || th->lo >= th->checked_from)
        return;
    uint64_t old = th->ninvalid;
    ensure8(d, th, th->lo / CK * CK, th->rt->n, 1);
    if (th->ninvalid != old) {
        th->has_invalid_tsc = 0;
        invalid_when(d, th);
    }
}

/* the resolved high half of item idx in a run of the given kind (runs of one
 * kind are disjoint and in index order) */
int rx_run_hi(const struct ring8 *r, uint64_t idx, int tsc, uint32_t *hi)
{
    size_t lo = 0, hi_i = r->nruns;
    /* runs are appended in index order (both kinds interleaved): binary
     * search on start, then look back for the kind */
    while (lo < hi_i) {
        size_t mid = lo + (hi_i - lo) / 2;
        if (r->runs[mid].start <= idx)
            lo = mid + 1;
        else
            hi_i = mid;
    }
    for (size_t k = lo; k > 0; k--) {
        const struct run *u = &r->runs[k - 1];
        if (u->tsc != tsc)
            continue;
        if (idx < u->end) {
            *hi = u->hi;
            return 1;
        }
        return 0;
    }
    return 0;
}

/* the decoding state after the last ev_read_exact, so that a read that
 * continues it (the replays read a ring front to back) starts there instead
 * of at its checkpoint */
static struct {
    const struct ring8 *r;
    uint64_t next;
    struct ck s;
} resume8;

#define RB 4096u /* items per read of the raw */

/* items [i, i+n) of an FT_FMT_EXACT8 ring (n clamped): as positional
 * entries into ents (word 0: not an event), or (ents NULL) the events only
 * into evs (*nev of them); returns the number of items read */
static inline __attribute__((always_inline)) size_t read8(struct dec *d, struct dthread *th, uint64_t i, uint64_t n,
                                                          struct ft_entry *ents, struct ev *evs, size_t *nev)
{
    const struct ftr_thread *rt = th->rt;
    struct ring8 *r = th->ring8;
    if (r->ckok) /* only part of the ring is prepared */
        ensure8(d, th, i / CK * CK, i + n, 0);
    uint64_t from;
    struct ck s;
    if (resume8.r == r && resume8.next == i) {
        from = i;
        s = resume8.s;
    } else {
        from = i / CK * CK;
        s = r->ck[i / CK];
    }
    static uint64_t scratch[RB];
    /* flags of an event item by its tag (FT_E8_CALL: a catch after a CATCH escape) */
    const uint64_t *const tagf = ev8_tagf;
    size_t done = 0, ne = 0;
    uint64_t j = from;
    uint64_t ahi_sh = (uint64_t)s.ahi << 32, thi_sh = (uint64_t)s.thi << 32;
    while (j < i + n) {
        uint64_t want = i + n - j < RB ? i + n - j : RB;
        size_t got;
        const uint8_t *buf = ftr_entries_view(&d->src, rt, j, want, scratch, &got);
        if (!got)
            break;
        size_t k = 0;
        if (j < i) { /* up to i from the checkpoint: the state only */
            size_t m = i - j < got ? (size_t)(i - j) : got;
            for (; k < m && s.aknown && s.tknown && !s.catch_next; k++) {
                uint64_t w = ev_ld8(buf, k);
                if ((w & FT_E8_TAG_MASK) == FT_E8_ESC || !w)
                    break;
                s.last_tsc = thi_sh | (w >> 32);
            }
        }
        for (; k < got; k++) {
            if (j + k >= i && s.aknown && s.tknown && !s.catch_next) {
                /* the common case: events with both high halves known */
                uint64_t last = s.last_tsc;
                if (ents) {
                    for (; k < got; k++) {
                        uint64_t w = ev_ld8(buf, k), tag = w & FT_E8_TAG_MASK;
                        if (tag == FT_E8_ESC || !w)
                            break;
                        ents[done].word = ahi_sh | (w & FT_E8_ADDR_LO_MASK) | tagf[tag];
                        ents[done++].tsc = last = thi_sh | (w >> 32);
                    }
                } else {
                    for (; k < got; k++) {
                        uint64_t w = ev_ld8(buf, k), tag = w & FT_E8_TAG_MASK;
                        if (tag == FT_E8_ESC || !w)
                            break;
                        struct ev *v = &evs[ne++];
                        v->word = ahi_sh | (w & FT_E8_ADDR_LO_MASK) | tagf[tag];
                        v->tsc = last = thi_sh | (w >> 32);
                        v->idx = j + k;
                        v->q = EV_EXACT;
                        done++;
                    }
                }
                s.last_tsc = last;
                if (k == got)
                    break;
            }
            uint64_t idx = j + k, w = ev_ld8(buf, k), tag = w & FT_E8_TAG_MASK;
            struct ft_entry e = {0, s.last_tsc};
            if (!w) {
                s.aknown = s.tknown = 0;
                s.catch_next = 0;
            } else if (tag == FT_E8_ESC) {
                unsigned ty = FT_E8_ESC_TYPE(w);
                if (ty == FT_E8_ADDR_HI) {
                    s.ahi = (uint32_t)(w >> 32);
                    s.aknown = 1;
                    ahi_sh = (uint64_t)s.ahi << 32;
                } else if (ty == FT_E8_TSC_HI) {
                    s.thi = (uint32_t)(w >> 32);
                    s.tknown = 1;
                    thi_sh = (uint64_t)s.thi << 32;
                } else if (ty == FT_E8_CATCH && !(w & FT_E8_ESC_ZERO_MASK)) {
                    s.catch_next = 1;
                }
            } else {
                /* in a run: its resolved high half holds up to the next
                 * escape of its kind or zeroed item, so it becomes the
                 * state (the following items take the common path) */
                uint32_t ahi = s.ahi, thi = s.thi;
                if (!s.aknown && rx_run_hi(r, idx, 0, &ahi)) {
                    s.ahi = ahi;
                    s.aknown = 1;
                    ahi_sh = (uint64_t)ahi << 32;
                }
                if (!s.tknown && rx_run_hi(r, idx, 1, &thi)) {
                    s.thi = thi;
                    s.tknown = 1;
                    thi_sh = (uint64_t)thi << 32;
                }
                e.word = ((uint64_t)ahi << 32) | (w & FT_E8_ADDR_LO_MASK) | tagf[tag];
                if (tag == FT_E8_CALL && s.catch_next)
                    e.word |= FT_F_CATCH;
                e.tsc = ((uint64_t)thi << 32) | (w >> 32);
                s.last_tsc = e.tsc;
                s.catch_next = 0;
            }
            if (idx < i)
                continue;
            if (ents) {
                ents[done] = e;
            } else if (e.word) {
                struct ev *v = &evs[ne++];
                v->word = e.word;
                v->tsc = e.tsc;
                v->idx = idx;
                v->q = EV_EXACT;
            }
            done++;
        }
        j += got; /* (a short view: the stored ring's wrap, ask for the rest) */
    }
    resume8.r = r;
    resume8.next = j;
    resume8.s = s;
    if (nev)
        *nev = ne;
    return done;
}

const uint64_t ev8_tagf[4] = {0, FT_F_RET, FT_F_CALL_RET_ON_THROW, 0};

size_t ev_plain_exact8(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev8_run *run)
{
    static uint64_t scratch[RB];
    const struct ftr_thread *rt = th->rt;
    const struct ring8 *r = th->ring8;
    const struct ck *s = &resume8.s;
    if (resume8.r != r || r->ckok || resume8.next != i || !s->aknown || !s->tknown || s->catch_next || i >= rt->n)
        return 0;
    size_t got;
    const uint8_t *buf = ftr_entries_view(&d->src, rt, i, n < RB ? n : RB, scratch, &got);
    *run = (struct ev8_run){buf, got, i, (uint64_t)s->ahi << 32, (uint64_t)s->thi << 32};
    return got;
}

void ev_took_exact8(const struct ev8_run *run, size_t k)
{
    if (!k)
        return;
    resume8.next = run->idx0 + k;
    resume8.s.last_tsc = ev8_tsc(run, ev8_item(run, k - 1));
}

size_t ev_read_exact(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ft_entry *out)
{
    const struct ftr_thread *rt = th->rt;
    if (rt->fmt != FT_FMT_EXACT8)
        return ftr_read_entries(&d->src, rt, i, n, out);
    if (i >= rt->n)
        return 0;
    if (n > rt->n - i)
        n = rt->n - i;
    return read8(d, th, i, n, out, NULL, NULL);
}

size_t ev_events_exact8(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev *out, size_t *nev)
{
    const struct ftr_thread *rt = th->rt;
    *nev = 0;
    if (i >= rt->n)
        return 0;
    if (n > rt->n - i)
        n = rt->n - i;
    return read8(d, th, i, n, NULL, out, nev);
}

/* items of the ring that cannot be decoded: zero (FT_FMT_EXACT16/8 and
 * sampled words) or an unknown escape (FT_FMT_EXACT8) */
static void invalid_when(struct dec *d, struct dthread *th)
{
    if (!th->ninvalid || !ev_is_exact(th->rt->fmt))
        return;
    struct ft_entry e[64];
    uint64_t from = th->invalid_first > 64 ? th->invalid_first - 64 : 0;
    size_t got = ev_read_exact(d, th, from, th->invalid_first - from, e);
    for (size_t k = got; k > 0; k--)
        if (e[k - 1].word) {
            th->has_invalid_tsc = 1;
            th->invalid_tsc = e[k - 1].tsc;
            return;
        }
}

void ev_prepare(struct dec *d, struct dthread *th)
{
    const struct ftr_thread *rt = th->rt;
    if (rt->fmt == FT_FMT_EXACT8 && d->tail_only) {
        /* only the text view: the end of the ring (th->lo on), the rest on
         * demand (the generation cuts read a few items around each cut) */
        struct ring8 *r = xcalloc(1, sizeof *r);
        th->ring8 = r;
        r->nck = rt->n / CK + 1;
        r->ck = xcalloc(r->nck, sizeof *r->ck);
        r->ckok = xcalloc(r->nck, 1);
        th->checked_from = rt->n;
        ev_prepare_tail(d, th);
        return;
    }
    if (rt->fmt == FT_FMT_EXACT8) {
        prepare8(d, th);
        invalid_when(d, th);
        return;
    }
    if (rt->fmt == FT_FMT_SAMPLED4) {
        rx_prepare4(d, th);
        return;
    }
    /* the original funtrace dumps its whole ring, never-written slots and
     * all: zeros there are not damage */
    if (!rt->has_stat)
        return;
    size_t isz = rt->fmt == FT_FMT_SAMPLED8 ? 8 : 16;
    uint8_t *buf = xmalloc(BLK * 16);
    for (uint64_t i = 0; i < rt->n;) {
        size_t got = ftr_read_entries(&d->src, rt, i, BLK, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t w;
            memcpy(&w, buf + k * isz, 8);
            if (!w)
                rx_note_invalid(th, i + k);
        }
        i += got;
    }
    free(buf);
    invalid_when(d, th);
}

void ev_release(struct dthread *th)
{
    struct ring8 *r = th->ring8;
    if (!r)
        return;
    if (resume8.r == r)
        resume8.r = NULL;
    rx_forget4(r);
    free(r->ck);
    free(r->ckok);
    free(r->spans);
    free(r->runs);
    free(r);
    th->ring8 = NULL;
}
