/*
 * gencuts.h -- where each generation starts in a thread's ring (gencuts.c).
 */
#ifndef FT_DECODER_GENCUTS_H
#define FT_DECODER_GENCUTS_H

#include "decstate.h"

/* th->cut, incomplete, by_tsc, the lost_* flags and first_tsc */
void cuts_compute(struct dec *d, struct dthread *th);
/* th->lo moved back (the text view reads further back): prepare the ring
 * from there (ev_prepare_tail) and, if that moved the part read, the cuts
 * again */
void cuts_after_tail(struct dec *d, struct dthread *th);
/* why a thread's older events are missing ("overwritten", "left out by the
 * snapshot's start time", ...), for "older events ..." */
const char *dec_lost_why(const struct dthread *th);

#endif
