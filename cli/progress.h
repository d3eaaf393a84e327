/*
 * progress.h -- progress on stderr for work that can take long (progress.c):
 * a decode of a big raw, an extraction from a big core.  Shown only when
 * stderr is a terminal, and only once the work has run for about a second
 * (FUNTRACE_PROGRESS_AFTER_MS overrides the delay); one line ("PROG: WHAT:
 * 42%", or "PROG: WHAT: 430 MiB" when the total is not known), rewritten in
 * place at most 10 times a second, erased when the work ends.
 */
#ifndef FT_PROGRESS_H
#define FT_PROGRESS_H

#include <stdint.h>

struct progress {
    const char *what;   /* "decoding trace.raw" */
    uint64_t total;     /* units of work; 0: unknown (then they are bytes) */
    uint64_t done;
    int64_t start_ms, next_ms, delay_ms;
    int tty, shown;
};

/* begin: what is shown before the percentage (kept, not copied) */
void progress_begin(struct progress *p, const char *what, uint64_t total);
/* done units so far (cheap: reads a coarse clock) */
void progress_set(struct progress *p, uint64_t done);
static inline void progress_add(struct progress *p, uint64_t n)
{
    progress_set(p, p->done + n);
}
/* erase the line before another message (the next update redraws it) */
void progress_clear(struct progress *p);
/* the work is over: erase the line if one was shown */
void progress_end(struct progress *p);

#endif
