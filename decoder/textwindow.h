/*
 * textwindow.h -- the text view reads only the end of each ring
 * (textwindow.c): which part, and its replay.
 */
#ifndef FT_DECODER_TEXTWINDOW_H
#define FT_DECODER_TEXTWINDOW_H

#include <stdint.h>
#include "decstate.h"
#include "view.h"

/* ring items the text view reads from the end of a thread's ring at first
 * (more when the filters leave fewer than N calls in them) */
#define TW_BASE 65536
/* ... of the threads it does not show (their last events still tell when
 * the trace ends) */
#define TW_TINY 1024

/* the first item of the last w items of th's ring */
uint64_t tw_lo(const struct dthread *th, uint64_t w);

/* Replay the end of every thread's ring into the text view (through out:
 * the view, or a tee with the filters in front of it).  own: d->th were
 * discovered with tw_lo(TW_BASE) (only the text view is asked for); else
 * they hold whole-ring discoveries for the other views, and the text view
 * works on copies. */
void tw_replay(struct dec *d, struct view *text, struct view *out, int own);

#endif
