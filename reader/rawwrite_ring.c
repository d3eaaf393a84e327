/*
 * rawwrite_ring.c -- the ring half of rawwrite.c: ring access (blocks with
 * per-page "missing"), ring planning and streaming (FORMAT.md 2.3), and the
 * per-thread chunks (THREADID, THRDSTAT, TRACEBUF/TRACEW08).
 *
 * Same rules as rawwrite.c (async-signal-safe, bounded stack, target memory
 * only through the ft_reader and the layout table's offsets, every value
 * from the target range-checked); shared internals in rawwrite_int.h.
 */
#include "rawwrite_int.h"

#include <string.h>

static inline uint64_t rw_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* ---- ring access: blocks with per-page "missing" -------------------------- */

/* Read [addr, addr+len) into out; pages with any unreadable byte are
 * zero-filled and flagged in miss[] (index: page - first page). */
static void read_pages(const struct ft_reader *r, uint64_t addr, uint8_t *out, uint64_t len,
                       uint8_t *miss)
{
    uint64_t pg0 = addr / RW_PAGE, done = 0;
    /* one read for the common all-readable case (a live copy must be fast);
     * the pages it fully covered are readable, the rest goes page by page */
    uint64_t got = ft_rw_rd_ring(r, addr, out, (size_t)len);
    if (got < len) got -= (addr + got) % RW_PAGE < got ? (addr + got) % RW_PAGE : got;
    for (; done < got; ) {
        uint64_t a = addr + done;
        uint64_t n = RW_PAGE - a % RW_PAGE;
        if (n > got - done) n = got - done;
        miss[a / RW_PAGE - pg0] = 0;
        done += n;
    }
    while (done < len) {
        uint64_t a = addr + done;
        uint64_t n = RW_PAGE - a % RW_PAGE;
        if (n > len - done) n = len - done;
        uint8_t m = ft_rw_rd_ring(r, a, out + done, (size_t)n) != n;
        if (m) memset(out + done, 0, (size_t)n);
        miss[a / RW_PAGE - pg0] = m;
        done += n;
    }
}

static void rv_load(struct rview *v, uint64_t off)
{
    uint64_t len = v->size - off;
    if (len > RW_BLK) len = RW_BLK;
    v->boff = off;
    v->blen = len;
    v->pg0 = (v->ring + off) / RW_PAGE;
    if (v->copy) return;
    read_pages(v->c->rd, v->ring + off, v->buf, len, v->pmiss);
}

/* pointer to the slot at ring offset off (esz bytes); *missing set */
static const uint8_t *rv_slot(struct rview *v, uint64_t off, int *missing)
{
    if (v->copy) {
        *missing = v->cmiss ? v->cmiss[(v->ring + off) / RW_PAGE - v->ring / RW_PAGE] : 0;
        return v->copy + off;
    }
    if (off < v->boff || off + v->esz > v->boff + v->blen) rv_load(v, off);
    *missing = v->pmiss[(v->ring + off) / RW_PAGE - v->pg0];
    return v->buf + (off - v->boff);
}

static uint64_t u64at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Count missing pages of the ring (reads it all). */
static void ring_readability(struct rview *v, uint64_t *pages, uint64_t *missing)
{
    uint64_t first = v->ring / RW_PAGE, last = (v->ring + v->size - 1) / RW_PAGE;
    *pages = last - first + 1;
    *missing = 0;
    if (v->copy) {
        for (uint64_t i = 0; v->cmiss && i < *pages; i++) *missing += v->cmiss[i];
        return;
    }
    for (uint64_t off = 0; off < v->size; off += RW_BLK) {
        rv_load(v, off);
        uint64_t np = (v->ring + off + v->blen - 1) / RW_PAGE - v->pg0 + 1;
        for (uint64_t i = 0; i < np; i++) {
            /* a page straddling two blocks is counted once, in the block it starts */
            if (i == 0 && off != 0 && (v->ring + off) % RW_PAGE != 0) continue;
            *missing += v->pmiss[i];
        }
    }
}

/* ---- ring planning (FORMAT.md 2.3) ---------------------------------------- */

struct plan {
    uint32_t tsf;            /* FT_TSF_* */
    uint32_t fmt;            /* enum ft_entry_format */
    int emit_ring;           /* geometry valid: ring read */
    uint64_t pos_off;
    uint64_t first_off;      /* first emitted slot (ring offset) */
    uint64_t range_start;    /* ring offset where the planned walk range starts */
    uint64_t n_range;        /* slots in the range (emitted: readable ones, see tsc_limit) */
    uint64_t n_entries;      /* emitted: readable slots in the range (+ uncommitted) */
    uint64_t n_dropped;
    int has_unc;
    uint8_t unc[16];         /* the uncommitted entry */
    int at_pos_ok;
    uint64_t at_pos;         /* the word of the slot at pos (read before any walk) */
    uint64_t tsc_limit;      /* live, exact: entries newer than this are left out (0: none) */
    uint64_t pages, missing_pages;
};

/* walk the circular range starting at slot `start`, `n` slots */
#define SLOT_AT(v, start, i) ((((start) + (i)) & (v)->nmask) * (v)->esz)

/* slots from ring offset off to the end of its page (or of the ring): one
 * missing page is skipped at once (a ring a core lost may claim 1 GiB) */
static uint64_t rv_page_rest(const struct rview *v, uint64_t off)
{
    uint64_t end = ((v->ring + off) / RW_PAGE + 1) * RW_PAGE - v->ring;
    if (end > v->size) end = v->size;
    uint64_t k = end > off ? (end - off) / v->esz : 1;
    return k ? k : 1;
}
/* in a walk over [.., lim) with index x at ring offset off, on a missing slot */
#define MISS_SKIP(x, off, lim) do { (x) += rv_page_rest(v, (off)) - 1; if ((x) >= (lim)) (x) = (lim) - 1; } while (0)

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Geometry of a thread's ring; returns 1 if the ring can be read. */
static int ring_geometry(const uint64_t ring, uint64_t size, uint32_t fmt, uint64_t pos,
                         struct plan *pl, unsigned *esz)
{
    *esz = fmt == FT_FMT_EXACT16 ? 16 : (fmt == FT_FMT_SAMPLED8 || fmt == FT_FMT_EXACT8) ? 8
         : fmt == FT_FMT_SAMPLED4 ? 4 : 0;
    pl->fmt = fmt;
    pl->pos_off = pos - ring;
    if (ring == 0 || size == 0) { pl->tsf |= FT_TSF_RING_MISSING; return 0; }
    if (*esz == 0 || !is_pow2(size) || size < 2ull * *esz || size > RW_MAX_RING ||
        ring % size != 0 || ring + size < ring || pos - ring >= size || (pos - ring) % *esz) {
        pl->tsf |= FT_TSF_BAD_POS;
        return 0;
    }
    return 1;
}

/* Every slot of the planned walk is emitted: no page missing, no live time
 * limit, and the view cannot change between plan and stream (a copy, a
 * mapping, or a source that is not live). */
static int rv_all_emitted(const struct rview *v, const struct plan *pl)
{
    return !pl->missing_pages && !pl->tsc_limit && (v->copy || !v->c->si->live);
}

/* Stream n_range slots from range_start (all readable, see rv_all_emitted),
 * then the uncommitted entry: at most two contiguous spans of the ring,
 * written in place from a copy/mapping, else block by block. */
static int ring_stream_spans(struct rview *v, const struct plan *pl)
{
    uint64_t off = pl->range_start, left = pl->n_range * v->esz;
    while (left) {
        uint64_t n = v->size - off;         /* to the end of the ring */
        if (n > left) n = left;
        if (v->copy) {
            if (ft_rw_wr(v->c, v->copy + off, (size_t)n)) return -1;
        } else {
            for (uint64_t o = 0; o < n; ) {
                rv_load(v, off + o);
                uint64_t k = v->blen < n - o ? v->blen : n - o;
                if (ft_rw_wr(v->c, v->buf, (size_t)k)) return -1;
                o += k;
            }
        }
        left -= n;
        off = 0;
    }
    return pl->has_unc ? ft_rw_wr(v->c, pl->unc, v->esz) : 0;
}

/* Plan a ring whose view v is set up; pos_off in pl.  live_k: number of slots
 * starting at pos (inclusive of the slot the writer reached) that may have
 * been overwritten during a live copy (0 if none / not live). */
/* live: is the slot s (readable) left out as written after the copy began? */
static int after_limit(const struct plan *pl, const uint8_t *s)
{
    return pl->tsc_limit && u64at(s) != 0 && u64at(s + 8) > pl->tsc_limit;
}

/* a slot's first word: the whole 4-byte item of an FT_FMT_SAMPLED4 ring */
static uint64_t slotw(const struct rview *v, const uint8_t *s)
{
    uint32_t w;
    if (v->esz != 4) return u64at(s);
    memcpy(&w, s, 4);
    return w;
}

/* ---- FT_FMT_SAMPLED4 (FORMAT.md 1.4, 2.3) ---- */

static int s4_tsc_hi(uint64_t w) { return FT_S4_IS_ESC(w) && FT_S4_ESC_TYPE(w) == FT_S4_TSC_HI; }
/* the full TSC of a stamped return w under the TSC_HI payload hi, the bits
 * above 58 taken from top */
static uint64_t s4_time(uint64_t top, uint32_t hi, uint64_t w)
{
    return (top & ~((1ull << (32 + FT_S4_PAYLOAD_BITS)) - 1)) | ((uint64_t)hi << 32) | (w & ~7ull & 0xFFFFFFFFull);
}

/* the TSC_HI payload that puts the stamp with low half lo at or before R */
static uint32_t s4_hi_before(uint64_t R, int have_lo, uint64_t lo)
{
    uint64_t h = (R >> 32) & FT_S4_HI_MASK;
    if (have_lo && s4_time(R, (uint32_t)h, lo) > R) h = (h - 1) & FT_S4_HI_MASK;
    return (uint32_t)h;
}

/* ---- FT_FMT_EXACT8 (FORMAT.md 1.4, 2.3) ---- */

static int e8_event(uint64_t w) { return w && (w & FT_E8_TAG_MASK) != FT_E8_ESC; }
static int e8_tsc_hi(uint64_t w) { return (w & FT_E8_TAG_MASK) == FT_E8_ESC && FT_E8_ESC_TYPE(w) == FT_E8_TSC_HI; }

/* the nearest readable event slot from slot i going dir (+1/-1), circular,
 * at most 8 slots away (escape runs are shorter); 1 if found */
static int e8_near(struct rview *v, uint64_t i, int dir, uint64_t n, uint64_t *w)
{
    int miss;
    for (unsigned k = 1; k <= 8 && k < n; k++) {
        uint64_t j = (i + n + (dir > 0 ? k : n - k)) % n;
        const uint8_t *s = rv_slot(v, j * 8, &miss);
        if (miss) return 0;
        if (e8_event(u64at(s))) { *w = u64at(s); return 1; }
        if (!u64at(s)) return 0;
    }
    return 0;
}

/* The slot at pos (A, an event) in a ring whose slots after pos are written
 * (or pos is the last slot): the thread's newest entry, written but not
 * committed, or the oldest entry of the wrapped ring?  The TSC low halves
 * decide: from the newest committed event N to A is a short step forward if
 * A is newer, and from A to the event after it is a short step forward if A
 * is the oldest (steps taken modulo 2^32). */
static int e8_uncommitted(struct rview *v, uint64_t p, uint64_t n, uint64_t a)
{
    uint64_t nw, aw;
    if (!e8_near(v, p, -1, n, &nw)) return 0;
    uint32_t d1 = (uint32_t)((a >> 32) - (nw >> 32));
    uint32_t d2 = e8_near(v, p, +1, n, &aw) ? (uint32_t)((aw >> 32) - (a >> 32)) : UINT32_MAX;
    return d1 < d2;
}

/* walking the ring: the full TSC of an event (*known = 0 before the walk's
 * first TSC_HI escape: only the low half then) */
struct e8_clock {
    int known;
    uint32_t hi;
};

static uint64_t e8_clock_step(struct e8_clock *k, uint64_t w, int *is_event)
{
    *is_event = e8_event(w);
    if (e8_tsc_hi(w)) { k->known = 1; k->hi = (uint32_t)(w >> 32); }
    return ((uint64_t)k->hi << 32) | (w >> 32);
}

static void ring_plan(struct rview *v, struct plan *pl, uint64_t live_k, uint64_t min_tsc, int live)
{
    const uint64_t n = v->size / v->esz, p = pl->pos_off / v->esz;
    const int exact = v->esz == 16;
    const int e8 = pl->fmt == FT_FMT_EXACT8;
    const int s4 = pl->fmt == FT_FMT_SAMPLED4;
    int miss, a_ok = 0, n_ok = 0;
    uint64_t a_w = 0, a_t = 0, n_t = 0;

    ring_readability(v, &pl->pages, &pl->missing_pages);
    if (pl->missing_pages == pl->pages) pl->tsf |= FT_TSF_RING_MISSING;
    else if (pl->missing_pages) pl->tsf |= FT_TSF_RING_PARTIAL;

    if (live_k >= n - 1) {             /* the writer lapped the whole ring while copying */
        pl->tsf |= FT_TSF_COPY_RACED;
        live_k = n;
    }
    /* slot at pos (A) and the slot before it (N, newest committed) */
    if (live_k == 0) {
        const uint8_t *s = rv_slot(v, pl->pos_off, &miss);
        if (!miss) {
            a_ok = 1;
            a_w = slotw(v, s);
            pl->at_pos_ok = 1;
            pl->at_pos = a_w;
            if (exact) { a_t = u64at(s + 8); memcpy(pl->unc, s, 16); }
        }
    }
    {
        const uint8_t *s = rv_slot(v, ((p + n - 1) % n) * v->esz, &miss);
        if (!miss && slotw(v, s) != 0) { n_ok = 1; if (exact) n_t = u64at(s + 8); }
    }
    /* F: a written slot after pos (to the end of the ring), past the live
     * drop zone and, in sampled mode, past the word the writer may have in
     * flight after pos */
    int F = 0;
    {
        uint64_t i = p + 1 + (live_k ? live_k : 0) + ((exact || e8 || s4) ? 0 : 1);
        for (; i < n && !F; i++) {
            const uint8_t *s = rv_slot(v, i * v->esz, &miss);
            if (miss) MISS_SKIP(i, i * v->esz, n);
            else if (slotw(v, s) != 0) F = 1;
        }
    }
    int wrapped, e8_unc = 0;
    if (e8 && a_ok && a_w) {
        /* one store per slot: nothing is torn.  An event at pos is the
         * uncommitted newest one or the oldest of a wrapped ring; an escape
         * there is not emitted (uncommitted: counted as dropped; at the
         * last slot it cannot be told from the oldest: taken as that) */
        if (!F && p + 1 < n)
            e8_unc = e8_event(a_w);
        else if (e8_event(a_w))
            e8_unc = e8_uncommitted(v, p, n, a_w);
        wrapped = F || (p + 1 >= n && !e8_unc);
    } else if (e8)
        wrapped = F;
    else if (s4)
        wrapped = F || (a_ok && a_w && p + 1 >= n);
    else if (exact)
        wrapped = F || (a_ok && a_w && a_t && n_ok && a_t <= n_t);
    else
        wrapped = F || (a_ok && a_w && p + 2 >= n);
    if (live_k >= n) wrapped = 1;
    if (wrapped) pl->tsf |= FT_TSF_WRAPPED;

    if (a_ok && a_w) {
        if (e8) {
            if (e8_unc) { pl->has_unc = 1; memcpy(pl->unc, &a_w, 8); }
            else if (!wrapped) pl->n_dropped++;
        } else if (exact && a_t && (!n_ok || a_t > n_t)) {
            pl->has_unc = 1;
        } else if (!wrapped) {
            if (exact) pl->tsf |= FT_TSF_TORN;
            pl->n_dropped++;
        }
    }

    /* the walk: wrapped -> p+1 .. p-1, else 0 .. p-1 */
    uint64_t start, len;
    if (wrapped) { start = (p + 1) % n; len = n - 1; }
    else { start = 0; len = p; }
    if (live_k) {
        pl->tsf |= FT_TSF_COPY_RACED;
        if (wrapped) {
            uint64_t k = live_k > len ? len : live_k;
            pl->n_dropped += live_k >= n ? len : live_k;
            start = (start + k) % n;
            len -= k;
        } else {
            /* first lap: the writer's new slots p..p+k lie after the walk,
             * unless they wrapped to its start */
            pl->n_dropped += live_k;
            if (p + live_k >= n) {
                uint64_t k = p + live_k - n + 1;
                if (k > len) k = len;
                start = (start + k) % n;
                len -= k;
                pl->tsf |= FT_TSF_WRAPPED;
            }
        }
    }
    /* skip leading never-written / missing slots */
    uint64_t i = 0;
    for (; i < len; i++) {
        const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
        if (miss) MISS_SKIP(i, SLOT_AT(v, start, i), len);
        else if (slotw(v, s) != 0) break;
    }
    /* time filter: leading entries older than min_tsc */
    if (min_tsc && s4) {
        /* from the first stamped return at or after min_tsc (stamps dated
         * with the TSC_HI escapes met on the way; before the first one, the
         * high half that puts the last stamp before it at or before that
         * one's time, else before now) */
        uint64_t lo_last = 0, R = 0;
        int have_last = 0;
        for (uint64_t j = i; j < len && !R; j++) {
            const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
            if (miss) { MISS_SKIP(j, SLOT_AT(v, start, j), len); continue; }
            uint64_t w = slotw(v, s);
            if (s4_tsc_hi(w)) {
                for (uint64_t m = j + 1; m < len && m < j + 8 && !R; m++) {
                    const uint8_t *s2 = rv_slot(v, SLOT_AT(v, start, m), &miss);
                    if (!miss && FT_S4_IS_STAMP(slotw(v, s2)))
                        R = s4_time(rw_rdtsc(), (uint32_t)(w >> 5) & FT_S4_HI_MASK, slotw(v, s2));
                }
                break;
            }
            if (FT_S4_IS_STAMP(w)) { lo_last = w; have_last = 1; }
        }
        if (!R) R = rw_rdtsc();
        uint32_t hi = s4_hi_before(R, have_last, lo_last);
        uint64_t j = i, skipped = 0;
        for (; j < len; j++) {
            const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
            if (miss) { MISS_SKIP(j, SLOT_AT(v, start, j), len); continue; }
            uint64_t w = slotw(v, s);
            if (s4_tsc_hi(w)) hi = (uint32_t)(w >> 5) & FT_S4_HI_MASK;
            if (FT_S4_IS_STAMP(w) && s4_time(R, hi, w) >= min_tsc) break;
            if (w) skipped++;
        }
        pl->n_dropped += skipped;
        i = j;
    } else if (min_tsc) {
        if (e8) {
            /* events before the walk's first TSC_HI escape share one high
             * half: the one that puts the last of them at or before the first
             * known time after them (else before now) */
            uint64_t lo_last = 0, R = 0;
            int have_last = 0;
            for (uint64_t j = i; j < len && !R; j++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
                if (miss) { MISS_SKIP(j, SLOT_AT(v, start, j), len); continue; }
                uint64_t w = u64at(s);
                if (e8_tsc_hi(w)) {
                    for (uint64_t m = j + 1; m < len && m < j + 8 && !R; m++) {
                        const uint8_t *s2 = rv_slot(v, SLOT_AT(v, start, m), &miss);
                        if (!miss && e8_event(u64at(s2))) R = (w & 0xFFFFFFFF00000000ull) | (u64at(s2) >> 32);
                    }
                    break;
                }
                if (e8_event(w)) { lo_last = w >> 32; have_last = 1; }
            }
            if (!R) R = rw_rdtsc();
            struct e8_clock k = {1, (uint32_t)(R >> 32)};
            if (have_last && (((uint64_t)k.hi << 32) | lo_last) > R) k.hi--;
            for (; i < len; i++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
                if (miss) { MISS_SKIP(i, SLOT_AT(v, start, i), len); continue; }
                int ev;
                uint64_t t = e8_clock_step(&k, u64at(s), &ev);
                if (ev && t >= min_tsc) break;
                if (u64at(s)) pl->n_dropped++;
            }
            /* keep the TSC_HI escape that dates the first kept event */
            if (i < len && i > 0) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i - 1), &miss);
                if (!miss && e8_tsc_hi(u64at(s))) { i--; pl->n_dropped--; }
            }
            if (pl->has_unc && (((uint64_t)k.hi << 32) | (u64at(pl->unc) >> 32)) < min_tsc) {
                pl->has_unc = 0;
                pl->n_dropped++;
            }
        } else if (exact) {
            for (; i < len; i++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
                if (miss) { MISS_SKIP(i, SLOT_AT(v, start, i), len); continue; }
                if (u64at(s + 8) >= min_tsc) break;
                pl->n_dropped++;
            }
        } else {
            uint64_t j = i, skipped = 0;
            for (; j < len; j++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
                if (miss) { MISS_SKIP(j, SLOT_AT(v, start, j), len); continue; }
                uint64_t w = u64at(s);
                if (FT_IS_TIME_WORD(w) && (w & FT_TIME_WORD_TSC_MASK) >= (min_tsc & FT_TIME_WORD_TSC_MASK))
                    break;
                if (w) skipped++;
            }
            pl->n_dropped += skipped;
            i = j;
        }
        if (pl->has_unc && u64at(pl->unc + 8) < min_tsc) { pl->has_unc = 0; pl->n_dropped++; }
    }
    /* live: the copy must be time-ordered.  Exact mode: entries newer than
     * tsc_limit (taken when pos was read) were written while copying, over an
     * older entry (the writer lapped the ring: pos alone cannot show it): left
     * out.  Then, both modes: a tsc stepping back means the same; only what
     * follows the last step back is kept. */
    if (live) {
        uint64_t cut = i, prev = 0;
        int have = 0;
        struct e8_clock kk = {0, 0};
        int s4_known = 0;
        uint32_t s4_hi = 0;
        for (uint64_t j = i; j < len; j++) {
            const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
            if (miss) { MISS_SKIP(j, SLOT_AT(v, start, j), len); continue; }
            uint64_t w = slotw(v, s), t;
            if (s4) {
                if (s4_tsc_hi(w)) { s4_known = 1; s4_hi = (uint32_t)(w >> 5) & FT_S4_HI_MASK; }
                if (!FT_S4_IS_STAMP(w)) continue;
                t = ((uint64_t)s4_hi << 32) | (w & ~7ull);
            } else if (e8) {
                int ev;
                t = e8_clock_step(&kk, w, &ev);
                if (!ev) continue;
            } else if (exact) {
                if (!w || after_limit(pl, s)) continue;
                t = u64at(s + 8);
            } else {
                if (!FT_IS_TIME_WORD(w)) continue;
                t = w & FT_TIME_WORD_TSC_MASK;
            }
            /* FT_FMT_EXACT8 before the first TSC_HI escape: low halves, which
             * step back when they wrap (2^32 ticks) */
            if (have && t < prev && !(e8 && !kk.known && prev - t > 0x80000000u) &&
                !(s4 && !s4_known && prev - t > 0x80000000u))
                cut = j;
            prev = t;
            have = 1;
        }
        if (cut != i) {
            for (; i < cut; i++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
                if (!miss && slotw(v, s)) pl->n_dropped++;
            }
            pl->tsf |= FT_TSF_COPY_RACED;
        }
    }
    /* count what is emitted: readable slots of [i, len) (exact live: not
     * newer than tsc_limit) */
    uint64_t cnt = 0, first = len;
    if (rv_all_emitted(v, pl)) {
        cnt = len - i;
        first = i;
    } else for (uint64_t j = i; j < len; j++) {
        const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
        if (miss) { MISS_SKIP(j, SLOT_AT(v, start, j), len); continue; }
        if (exact && after_limit(pl, s)) {
            pl->n_dropped++;
            pl->tsf |= FT_TSF_COPY_RACED;
            continue;
        }
        if (first == len) first = j;
        cnt++;
    }
    pl->first_off = first < len ? SLOT_AT(v, start, first) : pl->pos_off;
    pl->n_range = len - i;
    pl->range_start = i < len ? SLOT_AT(v, start, i) : pl->pos_off;
    if (pl->has_unc) {
        pl->tsf |= FT_TSF_UNCOMMITTED;
        cnt++;
    }
    pl->n_entries = cnt;
}

/* stream the planned range: its readable slots (live exact: not newer than
 * tsc_limit), then the uncommitted entry; exactly pl->n_entries entries are
 * written (zero entries pad if a live source lost memory since planning). */
static int ring_stream(struct rview *v, const struct plan *pl)
{
    if (rv_all_emitted(v, pl) && pl->n_entries - (pl->has_unc ? 1 : 0) == pl->n_range)
        return ring_stream_spans(v, pl);
    uint8_t out[RW_OUT];
    size_t o = 0;
    uint64_t written = 0, limit = pl->n_entries - (pl->has_unc ? 1 : 0);
    uint64_t start = pl->range_start / v->esz;
    int miss;
    for (uint64_t i = 0; i < pl->n_range && written < limit; i++) {
        const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
        if (miss) { MISS_SKIP(i, SLOT_AT(v, start, i), pl->n_range); continue; }
        if (v->esz == 16 && after_limit(pl, s)) continue;
        memcpy(out + o, s, v->esz);
        o += v->esz;
        written++;
        if (o == sizeof out) {
            if (ft_rw_wr(v->c, out, o)) return -1;
            o = 0;
        }
    }
    while (written < limit) {   /* live source changed since planning */
        memset(out + o, 0, v->esz);
        o += v->esz;
        written++;
        if (o == sizeof out) {
            if (ft_rw_wr(v->c, out, o)) return -1;
            o = 0;
        }
    }
    if (pl->has_unc) {
        if (o + v->esz > sizeof out) {
            if (ft_rw_wr(v->c, out, o)) return -1;
            o = 0;
        }
        memcpy(out + o, pl->unc, v->esz);
        o += v->esz;
    }
    return ft_rw_wr(v->c, out, o);
}

/* ---- threads ------------------------------------------------------------- */

/* read registry record i; returns 1 if readable */
int ft_rw_trec_read(struct rw *c, uint32_t i, struct trec *t)
{
    uint32_t sz = c->sizes[FT_S_THREAD];
    t->addr = c->threads + (uint64_t)i * sz;
    return ft_rw_rd_full(c->rd, t->addr, t->b, sz);
}

int ft_rw_state_emitted(uint64_t s)
{
    return s == FT_THR_ALIVE || s == FT_THR_EXITED || s == FT_THR_EVICTED || s == FT_THR_IGNORED;
}

static int has_ring(uint64_t s) { return s == FT_THR_ALIVE || s == FT_THR_EXITED; }

static void rv_init(struct rview *v, struct rw *c, uint64_t ring, uint64_t size, unsigned esz)
{
    v->c = c;
    v->ring = ring;
    v->size = size;
    v->esz = esz;
    v->nmask = size / esz - 1;
    v->copy = NULL;
    v->cmiss = NULL;
    v->boff = 0;
    v->blen = 0; /* forces a load */
    /* a non-live source that holds the ring in our address space: use it in
     * place (no copy, nothing missing) */
    if (!c->si->live && c->si->map) {
        const void *p = c->si->map(c->si->map_ctx, ring, (size_t)size);
        if (p) v->copy = p;
    }
}

/* Pre-pass over one record: sets *emit, and flags partial if its ring is
 * (partly) missing or invalid. */
void ft_rw_thread_prepass(struct rw *c, struct trec *t, struct rview *v, uint32_t idx)
{
    uint64_t state = TF(t, FT_F_THR_STATE);
    if (!has_ring(state)) return;
    struct plan pl;
    memset(&pl, 0, sizeof pl);
    unsigned esz;
    uint64_t ring = TF(t, FT_F_THR_RING), size = TF(t, FT_F_THR_RING_SIZE);
    uint64_t tid = TF(t, FT_F_THR_TID);
    if (!ring_geometry(ring, size, (uint32_t)TF(t, FT_F_THR_FMT), TF(t, FT_F_THR_POS), &pl, &esz)) {
        c->partial = 1;
        if (pl.tsf & FT_TSF_BAD_POS)
            ft_rw_problem(c, "thread ", 1, tid, " has an invalid ring or write position; ring at ", 1, ring);
        else
            ft_rw_problem(c, "thread ", 1, tid, " has no ring", 0, 0);
        (void)idx;
        return;
    }
    rv_init(v, c, ring, size, esz);
    uint64_t pages, missing;
    ring_readability(v, &pages, &missing);
    if (missing) {
        c->partial = 1;
        ft_rw_problem(c, "ring of thread ", 1, tid,
                missing == pages ? " is missing from the source, at " : " is partly missing from the source, at ",
                1, ring);
    }
}

/* Fill the THRDSTAT (without ring results) from a record. */
static void thread_stat(struct rw *c, const struct trec *t, struct ft_raw_thread *rt)
{
    memset(rt, 0, sizeof *rt);
    rt->tid = (uint32_t)TF(t, FT_F_THR_TID);
    rt->state = (uint32_t)TF(t, FT_F_THR_STATE);
    rt->fmt = (uint32_t)TF(t, FT_F_THR_FMT);
    rt->flags = ((uint32_t)TF(t, FT_F_THR_FLAGS) & 0xFFFFu) << 16;
    rt->ring = TF(t, FT_F_THR_RING);
    rt->ring_size = TF(t, FT_F_THR_RING_SIZE);
    rt->pos_off = TF(t, FT_F_THR_POS) - rt->ring;
    rt->start_tsc = TF(t, FT_F_THR_START_TSC);
    rt->exit_tsc = TF(t, FT_F_THR_EXIT_TSC);
    rt->seq = TF(t, FT_F_THR_SEQ);
    /* the high half of the newest events (their TSC_HI escape may be long
     * overwritten); not for a record without the field, nor "escape next" */
    if ((rt->fmt == FT_FMT_EXACT8 || rt->fmt == FT_FMT_SAMPLED4) && c->offs[FT_F_THR_TSC_HI] != FT_OFF_ABSENT &&
        TF(t, FT_F_THR_TSC_HI) != FT_E8_HI_NONE) {
        rt->tsc_hi = (uint32_t)TF(t, FT_F_THR_TSC_HI);
        rt->flags |= FT_TSF_TSC_HI;
    }
    uint32_t tsz = c->sizes[FT_S_THREAD];
    uint16_t go = c->offs[FT_F_THR_GEN_POS];
    for (unsigned g = 0; g < FT_GEN_SLOTS; g++) {
        uint64_t gen = FT_GEN_NONE, pos = 0;
        if (go != FT_OFF_ABSENT && (uint32_t)go + 16 * FT_GEN_SLOTS <= tsz) {
            gen = u64at(t->b + go + 16 * g);
            pos = u64at(t->b + go + 16 * g + 8);
        }
        rt->gen_pos[g].gen = gen;
        if (gen == FT_GEN_NONE) rt->gen_pos[g].off = pos;
        else if (rt->ring && rt->ring_size && pos - rt->ring < rt->ring_size)
            rt->gen_pos[g].off = pos - rt->ring;
        else rt->gen_pos[g].off = RW_UNKNOWN_OFF;
    }
}

/* is w, the word at pos, a TSC_HI escape with the record's high half hi?
 * The runtime stores the record's value before the escape and commits the
 * escape on its own: such an escape at pos is not committed, and neither
 * are the events it would precede -- the record's value is not yet that of
 * the ring's newest events */
static int tsc_hi_in_flight(uint32_t fmt, uint64_t w, uint32_t hi)
{
    if (fmt == FT_FMT_EXACT8)
        return (w & FT_E8_TAG_MASK) == FT_E8_ESC && FT_E8_ESC_TYPE(w) == FT_E8_TSC_HI && (uint32_t)(w >> 32) == hi;
    uint32_t x = (uint32_t)w;
    return FT_S4_IS_ESC(x) && FT_S4_ESC_TYPE(x) == FT_S4_TSC_HI && (x >> 5) == (hi & FT_S4_HI_MASK);
}

/* live: slots the writer advanced from pos to pos2 (ring size/esz if pos2 is
 * not a valid position of this ring, i.e. the ring was replaced) */
static uint64_t live_slots(uint64_t pos, uint64_t pos2, uint64_t ring, uint64_t size, unsigned esz)
{
    if (pos2 - ring >= size || (pos2 - ring) % esz) return size / esz;
    return ((pos2 - pos) & (size - 1)) / esz;
}

int ft_rw_emit_thread(struct rw *c, struct trec *t, struct rview *v)
{
    struct ft_raw_thread rt;
    struct ft_raw_threadid ti;
    struct plan pl;
    memset(&pl, 0, sizeof pl);
    thread_stat(c, t, &rt);
    memset(&ti, 0, sizeof ti);
    ti.pid = c->pid;
    ti.tid = rt.tid;
    ft_rw_fbytes(c, t->b, c->sizes[FT_S_THREAD], FT_F_THR_NAME, ti.name);

    unsigned esz = 0;
    int ring_ok = 0, reread = 0;
    uint64_t pos = TF(t, FT_F_THR_POS), pos2 = pos;
    const struct ft_source_info *si = c->si;
    if (has_ring(rt.state)) {
        ring_ok = ring_geometry(rt.ring, rt.ring_size, rt.fmt, pos, &pl, &esz);
        if (!ring_ok) {
            c->partial = 1;
            if (c->st && (pl.tsf & FT_TSF_RING_MISSING)) c->st->nrings_missing++;
        }
    }
    if (ring_ok) {
        rv_init(v, c, rt.ring, rt.ring_size, esz);
        if (!si->live) {
            ring_plan(v, &pl, 0, si->min_tsc, 0);
        } else {
            /* live: pos (fresh) and the time, copy, pos again */
            uint64_t p1 = ft_rw_fread(c, t->addr, FT_F_THR_POS, pos);
            uint64_t limit = rw_rdtsc() + RW_TSC_SKEW;
            if (p1 != pos && p1 - rt.ring < rt.ring_size && (p1 - rt.ring) % esz == 0) {
                pos = pos2 = p1;
                pl.pos_off = pos - rt.ring;
            }
            pl.tsc_limit = rt.fmt == FT_FMT_EXACT16 ? limit : 0;
            uint8_t *copy = NULL;
            uint64_t npages = (rt.ring + rt.ring_size - 1) / RW_PAGE - rt.ring / RW_PAGE + 1;
            if (si->get_scratch)
                copy = si->get_scratch(si->scratch_ctx, (size_t)(rt.ring_size + npages));
            if (copy) {
                read_pages(c->rd, rt.ring, copy, rt.ring_size, copy + rt.ring_size);
                v->copy = copy;
                v->cmiss = copy + rt.ring_size;
            } else {
                /* no copy: the plan itself is the first read */
                ring_plan(v, &pl, 0, si->min_tsc, 1);
                reread = 1;
            }
            pos2 = ft_rw_fread(c, t->addr, FT_F_THR_POS, pos);
            if (copy || pos2 != pos) {
                uint64_t k = live_slots(pos, pos2, rt.ring, rt.ring_size, esz);
                memset(&pl, 0, sizeof pl);
                ring_geometry(rt.ring, rt.ring_size, rt.fmt, pos, &pl, &esz);
                pl.tsc_limit = rt.fmt == FT_FMT_EXACT16 ? limit : 0;
                ring_plan(v, &pl, k, si->min_tsc, 1);
            }
        }
        if (pl.tsf & (FT_TSF_RING_MISSING | FT_TSF_RING_PARTIAL)) {
            c->partial = 1;
            if (c->st && (pl.tsf & FT_TSF_RING_MISSING)) c->st->nrings_missing++;
        }
        if (pl.tsf & FT_TSF_COPY_RACED)
            ft_rw_problem(c, "ring of thread ", 1, rt.tid,
                    " was written while it was copied; its oldest events were dropped", 0, 0);
    }
    rt.flags |= pl.tsf;
    /* the record's tsc_hi: not while its escape is in flight, nor (live) if it
     * changed while the ring was copied */
    if ((rt.flags & FT_TSF_TSC_HI) &&
        (!ring_ok || (pl.at_pos_ok && tsc_hi_in_flight(rt.fmt, pl.at_pos, rt.tsc_hi)) ||
         (si->live && ft_rw_fread(c, t->addr, FT_F_THR_TSC_HI, FT_E8_HI_NONE) != rt.tsc_hi))) {
        rt.flags &= ~FT_TSF_TSC_HI;
        rt.tsc_hi = 0;
    }
    if (ring_ok) {
        rt.pos_off = pl.pos_off;
        rt.first_off = pl.first_off;
        rt.n_entries = pl.n_entries;
        rt.n_dropped = pl.n_dropped;
    } else {
        rt.first_off = rt.pos_off;
    }
    const char *tm = rt.fmt == FT_FMT_SAMPLED8 ? FT_CHUNK_TRACEW08
                   : rt.fmt == FT_FMT_EXACT8  ? FT_CHUNK_TRACEE08
                   : rt.fmt == FT_FMT_SAMPLED4 ? FT_CHUNK_TRACES04 : FT_CHUNK_TRACEBUF;
    if (ft_raw_chunk(c->w, FT_CHUNK_THREADID, &ti, sizeof ti, c->st)) return -1;
    if (ft_raw_chunk(c->w, FT_CHUNK_THREADSTAT, &rt, sizeof rt, c->st)) return -1;
    if (ft_rw_chunk_hdr(c, tm, ring_ok ? pl.n_entries * esz : 0)) return -1;
    if (ring_ok && pl.n_entries) {
        if (ring_stream(v, &pl)) return -1;
        /* without a copy, writes during the stream cannot be undone: say so */
        if (reread && ft_rw_fread(c, t->addr, FT_F_THR_POS, pos2) != pos2)
            ft_rw_problem(c, "ring of thread ", 1, rt.tid,
                    " was written while it was streamed; its oldest events may be newer ones", 0, 0);
    }
    if (c->st) {
        c->st->nthreads++;
        c->st->nevents += ring_ok ? pl.n_entries : 0;
    }
    return 0;
}
