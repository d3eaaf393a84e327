/*
 * ringevents.h -- a thread's ring items as timestamped events (ringevents.c).
 */
#ifndef FT_DECODER_RINGEVENTS_H
#define FT_DECODER_RINGEVENTS_H

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
typedef void (*ev_fn)(void *ctx, uint64_t word, uint64_t tsc, int exact, uint64_t idx, uint64_t lo, uint64_t hi);
void ev_run(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref_tsc,
            struct ev_carry *carry, ev_fn fn, void *ctx);
/* timestamp at ring item i (exact mode) / of the time word at i (sampled);
 * returns 0 if there is none */
int ev_tsc_at(struct dec *d, struct dthread *th, uint64_t i, uint64_t ref_tsc, uint64_t *tsc);
uint64_t ev_restore_tsc(uint64_t low61, uint64_t ref);

#endif
