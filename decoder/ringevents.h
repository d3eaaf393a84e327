/*
 * ringevents.h -- a thread's ring items as timestamped events (ringevents.c).
 */
#ifndef FT_DECODER_RINGEVENTS_H
#define FT_DECODER_RINGEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include "decstate.h"

/* Ring items of th in [lo, hi) as events, with timestamps (sampled mode:
 * interpolated).  *carry keeps the sampled-mode interpolation state between
 * consecutive ranges of one thread. */
struct ev_carry {
    int have;            /* a stamp was seen */
    uint64_t tsc;        /* last stamp */
    uint64_t ord;        /* its event ordinal */
    uint64_t next_ord;   /* ordinal of the next event */
};
/* exact: EV_EXACT (its own timestamp), EV_DENSE (interpolated in a dense
 * bracket, or one-sided) or EV_LOOSE (interpolated in a bracket [lo, hi]
 * wider than EV_LOOSE_NS per event: the time is anywhere in it); lo = hi =
 * tsc unless EV_LOOSE */
#define EV_DENSE 0
#define EV_EXACT 1
#define EV_LOOSE 2
#define EV_LOOSE_NS 1000
struct ev {
    uint64_t word;       /* address | FT_F_* flags */
    uint64_t tsc;
    uint64_t idx;        /* ring item index */
    uint64_t lo, hi;     /* EV_LOOSE: the bracket (other events: not set) */
    int q;               /* EV_EXACT / EV_DENSE / EV_LOOSE */
};
/* the events in batches, in ring order */
typedef void (*ev_fn)(void *ctx, const struct ev *e, size_t n);
/* A run of FT_FMT_EXACT8 items whose high halves are the run's (the common
 * case of an exact ring), as they lie in the raw: item k < n is ev8_get(run,
 * k) while ev8_plain(ev8_item(run, k)) -- the consumer takes them up to the
 * first other item (an escape, a zeroed item) and says how many it took.  A
 * consumer that takes runs reads them without an array of struct ev in
 * between. */
struct ev8_run {
    const uint8_t *p;    /* the items (8 bytes each, not aligned) */
    size_t n;
    uint64_t idx0;       /* the first one's ring item index */
    uint64_t ahi_sh, thi_sh; /* the address and TSC high halves, << 32 */
};
typedef size_t (*ev8_fn)(void *ctx, const struct ev8_run *run);
static inline int ev8_plain(uint64_t w)
{
    return w && (w & FT_E8_TAG_MASK) != FT_E8_ESC;
}
/* flags of an FT_FMT_EXACT8 event item by its tag (FT_E8_CALL: no catch in a run) */
extern const uint64_t ev8_tagf[4];
/* item k of 8-byte items as they lie in a view of the raw (ftr_entries_view:
 * not aligned) */
static inline uint64_t ev_ld8(const uint8_t *p, size_t k)
{
    uint64_t w;
    __builtin_memcpy(&w, p + 8 * k, 8);
    return w;
}
static inline uint64_t ev8_item(const struct ev8_run *run, size_t k)
{
    return ev_ld8(run->p, k);
}
static inline uint64_t ev8_word(const struct ev8_run *run, uint64_t w)
{
    return run->ahi_sh | (w & FT_E8_ADDR_LO_MASK) | ev8_tagf[w & FT_E8_TAG_MASK];
}
static inline uint64_t ev8_tsc(const struct ev8_run *run, uint64_t w)
{
    return run->thi_sh | (w >> 32);
}
static inline void ev8_get(const struct ev8_run *run, size_t k, struct ev *e)
{
    uint64_t w = ev8_item(run, k);
    e->word = ev8_word(run, w);
    e->tsc = ev8_tsc(run, w);
    e->idx = run->idx0 + k;
    e->q = EV_EXACT;
}
/* A run of FT_FMT_SAMPLED4 plain items (calls and returns with their
 * address, no catch before them) in brackets: each bracket's plain items
 * and the stamped return right after them that closes the bracket densely
 * (after a call; in the run as a plain return of that call's address), the
 * next bracket's items right after it.  Item k < n is the event
 * ev4_get(run, k, bi), bi its bracket (ev4_brk_at): its time interpolated
 * as ringevents.c's pend_times would (EV_DENSE): ta + D * (k0 + k - start)
 * / N, k0 + k - start the event's ordinal after the bracket's first stamp
 * (ta), N the closing stamp's (whose time is then ta + D, EV_EXACT); a
 * bracket's ta is the one before's ta + D.  The consumer takes them all.
 * (An exact run's low halves as a run, for the loops that read no time:
 * no bracket.) */
struct ev4_brk {
    size_t start, end;   /* its items [start, end), the stamp end - 1 */
    uint64_t ta, D, N, k0;
    uint64_t dq, dr;     /* D / N, D % N */
};
struct ev4_run {
    const uint32_t *p;   /* the items (a copy of the raw's: the stamps changed) */
    size_t n;
    uint64_t idx0;       /* the first one's ring item index */
    uint64_t ahi_sh;     /* the address high half, << 32 */
    const struct ev4_brk *b;
    size_t nb;           /* b[nb - 1].end == n */
};
typedef void (*ev4_fn)(void *ctx, const struct ev4_run *run);
#define EV4_RUN_MAX 8192u /* the most items a run has */
static inline uint32_t ev_ld4(const uint8_t *p, size_t k)
{
    uint32_t w;
    __builtin_memcpy(&w, p + 4 * k, 4);
    return w;
}
/* the word of a plain FT_FMT_SAMPLED4 item w (its tag is FT_E8_*'s) */
static inline uint64_t ev4_word(uint64_t ahi_sh, uint32_t w)
{
    return ahi_sh | (w & FT_E8_ADDR_LO_MASK) | ev8_tagf[w & FT_E8_TAG_MASK];
}
/* the interpolation of the event ord events after a bracket's first stamp,
 * D ticks and N events to its closing one: D * ord / N, its remainder *rm */
static inline uint64_t ev_interp(uint64_t D, uint64_t ord, uint64_t N, uint64_t *rm)
{
    if (D <= UINT32_MAX && ord <= UINT32_MAX) {
        *rm = D * ord % N;
        return D * ord / N;
    }
    const unsigned __int128 p = (unsigned __int128)D * ord;
    *rm = (uint64_t)(p % N);
    return (uint64_t)(p / N);
}
/* item k's (of bracket b) interpolated TSC as a quotient ta + qt and its
 * remainder rm (mod N): the loops step them by dq, dr per item.  The
 * ordinals 1, N - 1 and N (a bracket's first item, its last two) from dq
 * and dr, without a division: D * (N - 1) / N = D - ceil(D / N), its
 * remainder -D mod N */
static inline uint64_t ev4_qt(const struct ev4_brk *b, size_t k, uint64_t *rm)
{
    const uint64_t ord = b->k0 + (k - b->start);
    if (ord == 1) {
        *rm = b->dr;
        return b->dq;
    }
    if (ord == b->N) {
        *rm = 0;
        return b->D;
    }
    if (ord + 1 == b->N) {
        *rm = b->dr ? b->N - b->dr : 0;
        return b->D - b->dq - (b->dr != 0);
    }
    return ev_interp(b->D, ord, b->N, rm);
}
/* the bracket of item k < run->n */
static inline size_t ev4_brk_at(const struct ev4_run *run, size_t k)
{
    size_t lo = 0, hi = run->nb - 1;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (run->b[mid].end <= k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
/* item k's TSC (bracket bi) */
static inline uint64_t ev4_tsc(const struct ev4_run *run, size_t k, size_t bi)
{
    uint64_t rm;
    return run->b[bi].ta + ev4_qt(&run->b[bi], k, &rm);
}
/* item k's time quality (bracket bi): its bracket's stamp is exact */
static inline int ev4_q(const struct ev4_run *run, size_t k, size_t bi)
{
    return k + 1 == run->b[bi].end ? EV_EXACT : EV_DENSE;
}
/* the next item's quotient after qt (remainder *rm) */
static inline uint64_t ev4_step(uint64_t qt, uint64_t *rm, uint64_t dq, uint64_t dr, uint64_t N)
{
    qt += dq;
    *rm += dr;
    if (*rm >= N) {
        *rm -= N;
        qt++;
    }
    return qt;
}
static inline void ev4_get(const struct ev4_run *run, size_t k, size_t bi, struct ev *e)
{
    e->word = ev4_word(run->ahi_sh, run->p[k]);
    e->tsc = ev4_tsc(run, k, bi);
    e->idx = run->idx0 + k;
    e->q = ev4_q(run, k, bi);
}
/* fn8 (NULL: none): FT_FMT_EXACT8 rings hand their runs of such items to
 * it; fn4 (NULL: none): FT_FMT_SAMPLED4 rings theirs; everything else goes
 * to fn */
void ev_run(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref_tsc,
            struct ev_carry *carry, ev_fn fn, ev8_fn fn8, ev4_fn fn4, void *ctx);
/* timestamp at ring item i (exact mode) / of the time word at i (sampled);
 * returns 0 if there is none */
int ev_tsc_at(struct dec *d, struct dthread *th, uint64_t i, uint64_t ref_tsc, uint64_t *tsc);
uint64_t ev_restore_tsc(uint64_t low61, uint64_t ref);

/* ring8.c: ev_prepare before anything reads a thread's ring (counts the
 * zeroed/invalid items of every format; FT_FMT_EXACT8 / SAMPLED4 decoding
 * state); ev_read_exact: exact-mode items [i, i+n) (FT_FMT_EXACT16 or
 * EXACT8) as {word = address | FT_F_* flags, tsc}; word 0: not an event
 * (escape, zeroed); returns the count read */
struct ring8;
void ev_prepare(struct dec *d, struct dthread *th);
size_t ev_read_exact(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ft_entry *out);
void ev_release(struct dthread *th);
/* d->tail_only: an FT_FMT_EXACT8 ring is prepared (and checked for zeroed
 * or invalid items) from th->lo on, the rest only where it is read; call
 * when th->lo moves back (other formats: the whole ring, at ev_prepare) */
void ev_prepare_tail(struct dec *d, struct dthread *th);
/* FT_FMT_EXACT8 items [i, i+n): the events only (struct ev, below), *nev of
 * them; returns the number of items read */
size_t ev_events_exact8(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev *out, size_t *nev);
/* FT_FMT_EXACT8: the items from i on (at most n, up to where the raw's
 * view ends) into *run, its plain ones as ev_events_exact8 would give them;
 * only where the last reading of th's ring stopped at i (else 0: read the
 * item with ev_events_exact8).  Returns its length; ev_took_exact8 then
 * says how many the consumer took (the plain ones before the first other:
 * the reading goes on after them). */
size_t ev_plain_exact8(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev8_run *run);
void ev_took_exact8(const struct ev8_run *run, size_t k);
static inline int ev_is_exact(uint32_t fmt) { return fmt == FT_FMT_EXACT16 || fmt == FT_FMT_EXACT8; }
static inline size_t ev_item_size(uint32_t fmt) { return ftr_item_size(fmt); }

/* ring4.c: sampled-mode items [i, i+n) (FT_FMT_SAMPLED8 or SAMPLED4); ref:
 * the reference TSC for the high bits of FT_FMT_SAMPLED8 time words */
struct ev_sitem {
    uint64_t word;       /* address | FT_F_* flags (EVS_EVENT / EVS_STAMPED) */
    uint64_t tsc;        /* EVS_TIME / EVS_STAMPED */
    uint8_t kind;
};
#define EVS_NONE 0       /* not an event: escape, zeroed */
#define EVS_TIME 1       /* FT_FMT_SAMPLED8 time word: stamps the next event */
#define EVS_EVENT 2      /* an event without a time */
#define EVS_STAMPED 3    /* FT_FMT_SAMPLED4 stamped return: an event with its own time */
size_t ev_read_sampled(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, uint64_t ref,
                       struct ev_sitem *out);
/* FT_FMT_SAMPLED4, the common case straight into struct ev: the items from
 * i on (at most n) that are events with their address, known high half and
 * no catch before them, up to the first other item (a stamp, an escape, a
 * zeroed item) -- their word and idx only (no time: unstamped), as
 * ev_read_sampled would give them; only where the last ev_read_sampled (or
 * this) of th's ring stopped at i (else 0: read the item with it).  Returns
 * the number taken. */
size_t ev_plain_sampled4(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, struct ev *out);
/* FT_FMT_SAMPLED4, the brackets of a run (struct ev4_run), at most nbmax:
 * the plain items from i on (at most n) and the stamped return after them,
 * if it is within those n, read where ev_plain_sampled4 would, and the
 * brackets right after it, copied to items (each stamp as a return of its
 * call's address); *ahi_sh: their address high half << 32, ends[b]: the
 * item after bracket b's stamp (from i), tbs[b]: that stamp's TSC.
 * Returns the number of brackets (0: none); ev_took_sampled4(next) then
 * says where the consumer stops taking them (the reading goes on there). */
size_t ev_brackets4(struct dec *d, struct dthread *th, uint64_t i, uint64_t n, uint32_t *items, uint64_t *ahi_sh,
                    size_t *ends, uint64_t *tbs, size_t nbmax);
void ev_took_sampled4(uint64_t next);

#endif
