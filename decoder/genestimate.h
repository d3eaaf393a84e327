/*
 * genestimate.h -- the generations older than the oldest record, estimated
 * (genestimate.c).
 */
#ifndef FT_DECODER_GENESTIMATE_H
#define FT_DECODER_GENESTIMATE_H

#include "decstate.h"

/* After cuts_compute of every thread: when the part older than the oldest
 * generation record is big, cut it at the boundaries its generations had
 * (struct dgen.estimated), and compute every thread's cuts again; 1 if it
 * did */
int gens_estimate(struct dec *d);

#endif
