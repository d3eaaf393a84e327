/*
 * gencuts.h -- where each generation starts in a thread's ring (gencuts.c).
 */
#ifndef FT_DECODER_GENCUTS_H
#define FT_DECODER_GENCUTS_H

#include "decstate.h"

/* th->cut, incomplete, by_tsc, the lost_* flags and first_tsc */
void cuts_compute(struct dec *d, struct dthread *th);
/* the same again after d->gens changed (genestimate.c) */
void cuts_recompute(struct dec *d, struct dthread *th);
/* A whole ring cut by timestamps alone: tcut_at(c, S) is the first item of
 * the events at or after S (exact mode: the first entry stamped >= S;
 * sampled: the first stamp >= S, unstamped events before it going with it);
 * ref_tsc: the reference for sampled time words' high bits */
struct tcut;
struct tcut *tcut_new(struct dec *d, struct dthread *th, uint64_t ref_tsc);
uint64_t tcut_at(struct tcut *c, uint64_t S);
void tcut_free(struct tcut *c);
/* th->lo moved back (the text view reads further back): prepare the ring
 * from there (ev_prepare_tail) and, if that moved the part read, the cuts
 * again */
void cuts_after_tail(struct dec *d, struct dthread *th);
/* why a thread's older events are missing ("overwritten", "left out by the
 * snapshot's start time", ...), for "older events ..." */
const char *dec_lost_why(const struct dthread *th);

#endif
