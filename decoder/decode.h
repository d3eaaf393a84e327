/*
 * decode.h -- the decoding pipeline (decode.c): load the raw (raw.c) ->
 * generations with their clocks -> per-thread generation cuts (gencuts.c)
 * -> discovery pass per thread (replay.c: the stack at the ring's start,
 * reconciled with the final stack) -> emission replays, generation by
 * generation, into the views (view.h: JSON, text, summary, ...).
 */
#ifndef FT_DECODER_DECODE_H
#define FT_DECODER_DECODE_H

#include "opts.h"

/* decode o->input into the views o asks for; returns the exit code */
int decode_main(struct dec_opts *o);

#endif
