/*
 * filter.h -- which calls the views show (filter.c): --tid, -F/--function,
 * -N/--not-function, --since/--until, --depth, --min-duration.  They
 * compose: a call is shown when every filter keeps it.
 *
 *   -F RE     calls of functions matching RE, with everything they call;
 *             depths count from the outermost match
 *   -N RE     not the calls of functions matching RE, nor what they call
 *   --depth N only calls less than N frames deep (after -F: below a match)
 *   --min-duration D   only calls that lasted D or more (the whole call)
 *   --since/--until    only calls that ran in [since, until], clipped to it
 *                      (SL_CUT_START / SL_CUT_END)
 *   --tid     only these threads (the replay skips the others)
 *
 * A regular expression (POSIX extended, unanchored) matches a function when
 * it matches its displayed name or that name without its C++ parameter list
 * ("ns::f(int)" or "ns::f").
 */
#ifndef FT_DECODER_FILTER_H
#define FT_DECODER_FILTER_H

#include <stddef.h>
#include <stdint.h>
#include "decstate.h"
#include "timearg.h"
#include "view.h"

struct filter;

/* from the options (regular expressions compiled, -1 with a message on a
 * bad one); NULL when no filter is asked for */
int filter_new(const struct dec_opts *o, struct filter **out);
void filter_free(struct filter *f);

/* once the threads are set up: th->shown (--tid; f may be NULL); once the
 * trace's start and end are known: the times.  0, or -1 after one line on
 * stderr (an unknown tid, a wall-clock time in a trace without one) */
int filter_resolve_threads(struct filter *f, struct dec *d);
int filter_resolve_times(struct filter *f, struct dec *d);

/* does it need the whole calls' durations of the pieces (--min-duration) */
int filter_needs_call_durations(const struct filter *f);

/* a view that filters what it gets and hands the rest to inner (not owned) */
struct view *filter_view_new(struct filter *f, struct view *inner);

#endif
