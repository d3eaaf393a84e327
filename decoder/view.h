/*
 * view.h -- the output interface: what the replay hands to the views.
 *
 * A view (JSON, text, Perfetto, report, flame graph, ...) is a struct view
 * whose ops the pipeline (decode.c) calls; the replay (replay.c) knows only
 * this interface, never a particular view.  Two kinds of views:
 *
 *   VIEW_PIECES  one batch of slices per (thread, generation), in own-ns
 *                times (every event of a thread at its own nanosecond, so
 *                slices nest without ambiguity); a call that spans a
 *                generation boundary comes as one piece per generation
 *                (SL_TO_NEXT / SL_FROM_PREV).  Every batch starts with the
 *                frames open at the generation's start, outermost first, so
 *                a batch reads alone.  Memory: one generation of one thread.
 *   VIEW_CALLS   one batch per thread: whole calls in measured times (a call
 *                of 0 TSC ticks lasts 0 ns), for the terminal view.
 *
 * In a batch slices are in start order, parents before their children
 * (pre-order); slice.depth is the depth in the thread's stack (after the
 * filters: relative to the outermost frame kept).  What does not come from
 * the rings (the process, the crash, generation boundaries, final stacks,
 * problems) a view reads from struct dec / struct dthread in begin or end.
 * A hook left NULL means the view is not interested.
 */
#ifndef FT_DECODER_VIEW_H
#define FT_DECODER_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include "slice.h"

struct dec;
struct dthread;
struct view;

/* one argument of an instant: a number (str == NULL) or a string */
struct view_arg {
    const char *key;
    const char *str;
    int64_t num;
};

struct view_ops {
    /* before the replay: 0, or an errno (the output cannot be opened) */
    int (*begin)(struct view *v, struct dec *d);
    /* a batch of slices of thread th (gi: its generation; VIEW_CALLS: the
     * last generation shown) */
    void (*slices)(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n);
    /* a point in time on thread th's track (own ns) */
    void (*instant)(struct view *v, struct dec *d, struct dthread *th, int64_t ns, const char *name,
                    const struct view_arg *args, size_t nargs);
    /* thread th is replayed: no more slices of it follow (th: the state
     * its slices came from) */
    void (*thread_end)(struct view *v, struct dec *d, struct dthread *th);
    /* after the replay: write everything out; 0, or an errno */
    int (*end)(struct view *v, struct dec *d);
    void (*destroy)(struct view *v);
};

#define VIEW_PIECES 0
#define VIEW_CALLS 1

struct view {
    const struct view_ops *ops;
    int kind;          /* VIEW_PIECES / VIEW_CALLS */
    const char *path;  /* the output file, or NULL: stdout */
};

#endif
