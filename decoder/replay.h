/*
 * replay.h -- rebuilding a thread's call stack from its events (replay.c;
 * the rules are there and in the README).
 *
 * Discovery replays a thread's ring without output and fills in what the
 * emission replay needs: the frames open at the ring start (th->pre), the
 * frames the final stack proves abandoned or live, and the counters.
 * Emission then replays it generation by generation and hands its slices
 * and instants to a view (view.h): VIEW_PIECES clipped per generation in
 * own ns, VIEW_CALLS whole calls in measured times.  Both replay the ring
 * items from th->lo on (0: the whole ring; the text view reads only the end
 * of a ring, see textwindow.c): the frames open at th->lo are found the same
 * way as those open at the ring's start.
 */
#ifndef FT_DECODER_REPLAY_H
#define FT_DECODER_REPLAY_H

#include <stddef.h>
#include "decstate.h"
#include "view.h"

void replay_discover(struct dec *d, struct dthread *th);
/* undo replay_discover (owned: free its arrays; else they belong to the
 * thread th was copied from) */
void replay_forget(struct dthread *th, int owned);

/* after every thread's discovery: contexts that moved between threads (a
 * key saved on two threads) are followed -- the threads that switch
 * contexts are discovered again, twice (to collect those keys' saves, then
 * with them: a context taken up where it was saved knows whether it went on
 * elsewhere meanwhile) */
void replay_follow_moves(struct dec *d);

struct replay;
/* an emission replay of th into out (out->kind: VIEW_PIECES or VIEW_CALLS) */
struct replay *replay_new(struct dec *d, struct dthread *th, struct view *out);
/* VIEW_PIECES: replay the thread once without output first, so that every
 * piece of a call that spans generations carries the whole call's duration
 * (slice.cdur; else -1 on the pieces that go on in the next generation) */
void replay_measure(struct replay *r);
/* replay generation gi (call for gi = 0 .. d->ngens - 1 in order) */
void replay_gen(struct replay *r, size_t gi);
void replay_free(struct replay *r);

#endif
