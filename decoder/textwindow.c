/*
 * textwindow.c -- the text view shows the last N calls of each thread, and
 * their time must not grow with the raw: it replays only the last TW_BASE
 * items of each ring, as if the ring started there (the frames open at that
 * point are found from their returns and the final stack, as those open at
 * a ring's start), and reads further back (4 times as much each time) only
 * while the filters leave fewer than N calls.  Rings up to TW_BASE items (the default 1 MiB
 * ring) are read whole, exactly as the other views read them.  With no other
 * view, an FT_FMT_EXACT8 ring is also prepared only from there (ring8.c:
 * ev_prepare_tail), and its generation cuts again when it reads further back
 * (gencuts.c).
 */
#include <stdlib.h>
#include <string.h>

#include "gencuts.h"
#include "replay.h"
#include "textwindow.h"
#include "views.h"

uint64_t tw_lo(const struct dthread *th, uint64_t w)
{
    return th->rt->n > w ? th->rt->n - w : 0;
}

/* replay one thread (its discovery done) into out */
static void replay_thread(struct dec *d, struct dthread *th, struct view *out)
{
    struct replay *r = replay_new(d, th, out);
    for (size_t gi = 0; gi < d->ngens; gi++)
        replay_gen(r, gi);
    replay_free(r);
}

void tw_replay(struct dec *d, struct view *text, struct view *out, int own)
{
    size_t want = (size_t)d->o.ncalls;
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *base = &d->th[i];
        if (!text_view_wants(text, d, base))
            continue;
        struct dthread copy, *th = base;
        uint64_t w = TW_BASE;
        if (!own) {
            copy = *base;
            th = &copy;
            replay_forget(th, 0); /* the arrays are base's */
            th->lo = tw_lo(th, w);
            replay_discover(d, th);
        }
        for (;;) {
            replay_thread(d, th, out);
            if (th->lo == 0 || text_view_calls(text, th) >= want)
                break;
            /* not enough calls pass the filters: read further back */
            w = w > (UINT64_MAX >> 2) ? UINT64_MAX : w * 4;
            replay_forget(th, 1);
            th->lo = tw_lo(th, w);
            cuts_after_tail(d, th);
            replay_discover(d, th);
        }
        if (!own)
            replay_forget(th, 1);
    }
}
