/*
 * ring4.c -- sampled-mode rings as a sequence of items with or without a
 * time (struct ev_sitem): FT_FMT_SAMPLED8 words (time words stamp the next
 * event) and FT_FMT_SAMPLED4 items (FORMAT.md 1.4).
 *
 * FT_FMT_SAMPLED4 items hold the low halves of addresses; the high halves
 * come from ADDR_HI escapes, the TSC's of stamped returns from TSC_HI
 * escapes (27-bit payloads: bits 58..32; the bits above from the newest
 * generation's clock).  A stamped return records no address: it is a leaf
 * return, whose address is that of the call item right before it (a stamped
 * return without that call -- the first item of a window -- is left out: it
 * would close a frame of unknown function at the ring's start).  One
 * sequential pass per thread (rx_prepare4) records checkpoints (random access
 * costs at most CK items) and resolves the high halves of items before the
 * first escape of a run, as ring8.c does (oldest items of a wrapped ring;
 * after zeroed items).
 */
#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>

#include "decstate.h"
#include "ringevents.h"
#include "xalloc.h"
#include "ringesc.h"

/* the first item in [k, lim) of a view that is not plain (a call or a
 * return with its address: a tag other than 3, not 0), else lim */
static size_t plain_end(const uint8_t *buf, size_t k, size_t lim)
{
    /* four at a time (SSE2, x86-64's baseline): the lanes whose tag is 3
     * or that are 0, the first of them by its movemask bits */
    const __m128i three = _mm_set1_epi32(3), zero = _mm_setzero_si128();
    for (; k + 4 <= lim; k += 4) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(buf + 4 * k));
        const __m128i bad = _mm_or_si128(_mm_cmpeq_epi32(_mm_and_si128(x, three), three), _mm_cmpeq_epi32(x, zero));
        const unsigned m = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(bad));
        if (m)
            return k + (size_t)__builtin_ctz(m);
    }
    for (; k < lim; k++) {
        const uint32_t w = ev_ld4(buf, k);
        if ((w & 3u) == FT_S4_SPECIAL || !w)
            break;
    }
    return k;
}

void rx_prepare4(struct dec *d, struct dthread *th)
{
    const struct ftr_thread *rt = th->rt;
    struct ring8 *r = xcalloc(1, sizeof *r);
    th->ring8 = r;
    r->nck = rt->n / CK + 1;
    r->ck = xcalloc(r->nck, sizeof *r->ck);
    uint32_t *scratch = xmalloc(BLK * sizeof *scratch);
    uint64_t ref = d->gens[d->ngens - 1].clk.ref_tsc;
    struct ck s = {0};
    size_t tr = SIZE_MAX, ar = SIZE_MAX;
    int have_known = 0, have_prev_ahi = 0, lower_have;
    uint64_t last_known = 0, lower = rx_ring_lower(d, th, &lower_have);
    uint32_t prev_ahi = 0;

    for (uint64_t i = 0; i < rt->n;) {
        size_t got;
        const uint8_t *buf = ftr_entries_view(&d->src, rt, i, BLK, scratch, &got);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t idx = i + k;
            uint32_t w = ev_ld4(buf, k);
            if (idx % CK == 0)
                r->ck[idx / CK] = s;
            if (__builtin_expect(s.aknown && w && (w & 3u) != FT_S4_SPECIAL, 1)) {
                /* the common case: calls and returns with their high half
                 * known, up to the next checkpoint (the last one's effect
                 * is theirs: below) */
                const size_t kl = got - k < CK - idx % CK ? got : k + (CK - idx % CK);
                k = plain_end(buf, k + 1, kl) - 1;
                have_prev_ahi = 1;
                prev_ahi = s.ahi;
                s.catch_next = 0;
                continue;
            }
            if (!w) {
                rx_note_invalid(th, idx);
                if (s.aknown) { have_prev_ahi = 1; prev_ahi = s.ahi; }
                s.aknown = s.tknown = 0;
                s.catch_next = 0;
                tr = ar = SIZE_MAX;
                continue;
            }
            if (FT_S4_IS_STAMP(w)) {
                uint64_t lo = w & ~7u;
                if (!s.tknown) {
                    if (tr == SIZE_MAX) {
                        struct run *u = rx_run_new(r, idx, 1);
                        u->lo_first = lo;
                        u->have_l = have_known;
                        u->L = last_known;
                        if (!have_known && idx == 0 && lower_have) {
                            u->have_l = 1;
                            u->L = lower;
                        }
                        tr = (size_t)(u - r->runs);
                    }
                    r->runs[tr].end = idx + 1;
                    r->runs[tr].lo_last = lo;
                } else {
                    have_known = 1;
                    last_known = ((uint64_t)s.thi << 32) | lo;
                }
                s.catch_next = 0;
                continue;
            }
            if ((w & 3u) == FT_S4_SPECIAL) {
                unsigned ty = FT_S4_ESC_TYPE(w);
                uint32_t pl = w >> 5;
                if (ty == FT_S4_ADDR_HI) {
                    s.ahi = pl;
                    s.aknown = 1;
                    ar = SIZE_MAX;
                } else if (ty == FT_S4_TSC_HI) {
                    s.thi = s4_thi(pl, ref);
                    s.tknown = 1;
                    tr = SIZE_MAX;
                } else if (ty == FT_S4_CATCH && !pl) {
                    s.catch_next = 1;
                } else {
                    rx_note_invalid(th, idx);
                }
                continue;
            }
            /* a call or a return with its address */
            if (!s.aknown) {
                if (ar == SIZE_MAX) {
                    struct run *u = rx_run_new(r, idx, 0);
                    u->have_prev = have_prev_ahi;
                    u->prev = prev_ahi;
                    ar = (size_t)(u - r->runs);
                }
                struct run *u = &r->runs[ar];
                u->end = idx + 1;
                if (u->nsamples < NSAMPLE)
                    u->samples[u->nsamples++] = w & ~3u;
            } else {
                have_prev_ahi = 1;
                prev_ahi = s.ahi;
            }
            s.catch_next = 0;
        }
        i += got;
    }
    free(scratch);

    /* resolve the runs (as ring8.c): the next escape after each */
    for (size_t ri = 0; ri < r->nruns; ri++) {
        struct run *u = &r->runs[ri];
        int have_n = 0;
        uint64_t U = 0;
        uint32_t nx = 0;
        for (uint64_t j = u->end, lim = 0; j < rt->n && lim < 64 && !have_n; j++, lim++) {
            uint32_t w;
            if (ftr_read_entries(&d->src, rt, j, 1, &w) != 1 || !w)
                break;
            if (!FT_S4_IS_ESC(w))
                continue;
            unsigned ty = FT_S4_ESC_TYPE(w);
            if (u->tsc && ty == FT_S4_TSC_HI) {
                have_n = rx_time_after_esc(d, rt, j, 1, &U);
                break;
            }
            if (!u->tsc && ty == FT_S4_ADDR_HI) {
                have_n = 1;
                nx = w >> 5;
            }
        }
        if (u->tsc && rx_tsc_hi_recorded(d, th, u, &u->hi)) {
            /* the ring's newest events: the thread's record has their high half */
        } else if (u->tsc) {
            rx_tsc_upper(d, th, u->end, &have_n, &U);
            u->hi = rx_tsc_resolve(u, have_n, U, u->have_l, u->L, rx_tsc_ref(d, th, u));
        } else {
            u->hi = rx_addr_resolve(d, u, have_n, nx, u->have_prev, u->prev);
        }
    }
}

/* the decoding state after the last read4, so that a read that continues
 * it starts there instead of at its checkpoint */
static struct {
    const struct ring8 *r;
    uint64_t next, last_call;
    struct ck s;
} resume4;

void rx_forget4(const struct ring8 *r)
{
    if (resume4.r == r)
        resume4.r = NULL;
}

#define RB 8192u /* items per read of the raw */

/* an event item w's word with the address high half ahi_sh (tag 0 with
 * catch_next: a catch); *last_call: its address if a call, else 0 */
static inline __attribute__((always_inline)) uint64_t s4_word(uint64_t ahi_sh, uint32_t w, int catch_next,
                                                              uint64_t *last_call)
{
    uint64_t a = ahi_sh | (w & ~3u);
    *last_call = (w & 3u) == 1u ? 0 : a;
    if ((w & 3u) == 1u)
        return a | FT_F_RET;
    if ((w & 3u) == 2u)
        return a | FT_F_CALL_RET_ON_THROW;
    return catch_next ? a | FT_F_CATCH : a;
}

static size_t read4(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev_sitem *out)
{
    const struct ftr_thread *rt = th->rt;
    const struct ring8 *r = th->ring8;
    struct ck s;
    uint64_t last_call = 0; /* the address of the call item just before (0: none) */
    static uint32_t scratch[RB];
    size_t done = 0;
    uint64_t from, j;
    if (resume4.r == r && resume4.next == i) {
        from = i;
        s = resume4.s;
        last_call = resume4.last_call;
    } else {
        /* from the checkpoint's item, or the one before it (the state there
         * is the checkpoint's, its effects idempotent): a stamped return at
         * the checkpoint needs the call item before it */
        s = r->ck[i / CK];
        from = i / CK * CK;
        if (from > 0)
            from--;
    }
    uint64_t ahi_sh = (uint64_t)s.ahi << 32;
    for (j = from; j < i + n;) {
        uint64_t want = i + n - j < RB ? i + n - j : RB;
        size_t got;
        const uint8_t *buf = ftr_entries_view(&d->src, rt, j, want, scratch, &got);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t idx = j + k;
            uint32_t w = ev_ld4(buf, k);
            struct ev_sitem e = {0, 0, EVS_NONE};
            if (__builtin_expect((w & 3u) != FT_S4_SPECIAL && w && s.aknown && !s.catch_next, 1)) {
                /* the common case: a call or a return with its address */
                e.kind = EVS_EVENT;
                e.word = s4_word(ahi_sh, w, 0, &last_call);
            } else if (!w) {
                s.aknown = s.tknown = 0;
                s.catch_next = 0;
                last_call = 0;
            } else if (FT_S4_IS_STAMP(w)) {
                uint32_t thi = s.thi;
                if (!s.tknown && rx_run_hi(r, idx, 1, &thi)) { /* the run's: the state until its end */
                    s.thi = thi;
                    s.tknown = 1;
                }
                if (last_call) { /* else: its call is not in the window */
                    e.kind = EVS_STAMPED;
                    e.word = FT_F_RET | last_call;
                    e.tsc = ((uint64_t)thi << 32) | (w & ~7u);
                }
                s.catch_next = 0;
                last_call = 0;
            } else if ((w & 3u) == FT_S4_SPECIAL) {
                unsigned ty = FT_S4_ESC_TYPE(w);
                if (ty == FT_S4_ADDR_HI) {
                    s.ahi = w >> 5;
                    s.aknown = 1;
                    ahi_sh = (uint64_t)s.ahi << 32;
                } else if (ty == FT_S4_TSC_HI) {
                    s.thi = s4_thi(w >> 5, d->gens[d->ngens - 1].clk.ref_tsc);
                    s.tknown = 1;
                } else if (ty == FT_S4_CATCH && !(w >> 5)) {
                    s.catch_next = 1;
                }
            } else {
                uint32_t ahi = s.ahi;
                if (!s.aknown && rx_run_hi(r, idx, 0, &ahi)) { /* the run's: the state until its end */
                    s.ahi = ahi;
                    s.aknown = 1;
                    ahi_sh = (uint64_t)ahi << 32;
                }
                e.kind = EVS_EVENT;
                e.word = s4_word((uint64_t)ahi << 32, w, s.catch_next, &last_call);
                s.catch_next = 0;
            }
            if (idx >= i)
                out[done++] = e;
        }
        j += got; /* (a short view: the stored ring's wrap, ask for the rest) */
    }
    resume4.r = r;
    resume4.next = j;
    resume4.last_call = last_call;
    resume4.s = s;
    return done;
}

size_t ev_plain_sampled4(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev *out)
{
    static uint32_t scratch[RB];
    const struct ftr_thread *rt = th->rt;
    if (resume4.r != th->ring8 || resume4.next != i || !resume4.s.aknown || resume4.s.catch_next || i >= rt->n)
        return 0;
    if (n > rt->n - i)
        n = rt->n - i;
    const uint64_t ahi_sh = (uint64_t)resume4.s.ahi << 32;
    uint64_t last_call = resume4.last_call;
    size_t done = 0;
    while (done < n) {
        size_t got;
        const uint8_t *buf = ftr_entries_view(&d->src, rt, i + done, n - done < RB ? n - done : RB, scratch, &got);
        size_t k = 0;
        for (; k < got; k++) {
            uint32_t w = ev_ld4(buf, k);
            if ((w & 3u) == FT_S4_SPECIAL || !w)
                break;
            struct ev *e = &out[done + k];
            e->word = s4_word(ahi_sh, w, 0, &last_call);
            e->idx = i + done + k;
        }
        done += k;
        if (!got || k < got)
            break;
    }
    resume4.next = i + done;
    resume4.last_call = last_call;
    return done;
}

size_t ev_brackets4(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, uint32_t *items, uint64_t *ahi_sh,
                    size_t *ends, uint64_t *tbs, size_t nbmax)
{
    static uint32_t scratch[RB];
    const struct ftr_thread *rt = th->rt;
    const struct ck *s = &resume4.s;
    if (resume4.r != th->ring8 || resume4.next != i || !s->aknown || !s->tknown || s->catch_next || i >= rt->n)
        return 0;
    if (n > rt->n - i)
        n = rt->n - i;
    size_t got;
    const uint8_t *buf = ftr_entries_view(&d->src, rt, i, n < RB ? n : RB, scratch, &got);
    size_t nb = 0, k = 0;
    while (nb < nbmax) {
        const size_t e = plain_end(buf, k, got);
        /* the stamp: in the view, after a call (a leaf return: read4's EVS_STAMPED) */
        if (e == k || e == got || !FT_S4_IS_STAMP(ev_ld4(buf, e)) || (ev_ld4(buf, e - 1) & 3u) == FT_E8_RET)
            break;
        ends[nb] = e + 1;
        tbs[nb++] = ((uint64_t)s->thi << 32) | (ev_ld4(buf, e) & ~7u);
        k = e + 1;
    }
    if (!nb)
        return 0;
    *ahi_sh = (uint64_t)s->ahi << 32;
    /* a copy, aligned, each stamp a return of its call's address: the run
     * loops read plain items only */
    memcpy(items, buf, 4 * k);
    for (size_t b = 0; b < nb; b++)
        items[ends[b] - 1] = (items[ends[b] - 2] & ~FT_S4_TAG_MASK) | (uint32_t)FT_E8_RET;
    return nb;
}

void ev_took_sampled4(uint64_t next)
{
    resume4.next = next;
    resume4.last_call = 0; /* (read4's, after a stamp) */
}

size_t ev_read_sampled(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, uint64_t ref,
                       struct ev_sitem *out)
{
    const struct ftr_thread *rt = th->rt;
    if (i >= rt->n)
        return 0;
    if (n > rt->n - i)
        n = rt->n - i;
    if (rt->fmt == FT_FMT_SAMPLED4)
        return read4(d, th, i, n, out);
    /* FT_FMT_SAMPLED8: time words stamp the event word after them */
    uint64_t buf[512];
    size_t done = 0;
    while (done < n) {
        uint64_t want = n - done < 512 ? n - done : 512;
        size_t got = ftr_read_entries(&d->src, rt, i + done, want, buf);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            uint64_t w = buf[k];
            struct ev_sitem *e = &out[done + k];
            e->word = w;
            e->tsc = 0;
            e->kind = EVS_EVENT;
            if (!w) {
                e->kind = EVS_NONE;
            } else if (FT_IS_TIME_WORD(w)) {
                e->kind = EVS_TIME;
                e->word = 0;
                e->tsc = ev_restore_tsc(w, ref);
            }
        }
        done += got;
    }
    return done;
}
