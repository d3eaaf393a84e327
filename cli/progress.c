/*
 * progress.c -- see progress.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void progress_begin(struct progress *p, const char *what, uint64_t total)
{
    p->what = what;
    p->total = total;
    p->done = 0;
    p->tty = isatty(2);
    p->shown = 0;
    const char *e = getenv("FUNTRACE_PROGRESS_AFTER_MS");
    p->delay_ms = e && *e ? atol(e) : 1000;
    p->start_ms = now_ms();
    p->next_ms = p->start_ms + p->delay_ms;
}

static void size_str(char *buf, size_t n, uint64_t v)
{
    if (v >= (1ull << 30))
        snprintf(buf, n, "%.1f GiB", (double)v / (1ull << 30));
    else
        snprintf(buf, n, "%.0f MiB", (double)v / (1ull << 20));
}

void progress_set(struct progress *p, uint64_t done)
{
    p->done = done;
    if (!p->tty)
        return;
    int64_t t = now_ms();
    if (t < p->next_ms)
        return;
    p->next_ms = t + 100;
    if (p->total) {
        unsigned pct = (unsigned)(done >= p->total ? 100 : done * 100 / p->total);
        fprintf(stderr, "\r%s: %s: %u%%\033[K", cli_prog(), p->what, pct);
    } else {
        char a[32];
        size_str(a, sizeof a, done);
        fprintf(stderr, "\r%s: %s: %s\033[K", cli_prog(), p->what, a);
    }
    p->shown = 1;
}

void progress_clear(struct progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
    p->shown = 0;
}

void progress_end(struct progress *p)
{
    progress_clear(p);
    p->tty = 0;
}
