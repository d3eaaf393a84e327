/*
 * sched_chunk.c -- the SCHEDEVT chunk (FORMAT.md 2.6): the captured events
 * put in time order, optionally filtered once more, and written.
 * Async-signal-safe (funtrace_sched.h).
 */
#include "funtrace_sched.h"

#include <string.h>

static void reverse(struct ft_raw_sched_event *a, size_t n)
{
    for (size_t i = 0, j = n ? n - 1 : 0; i < j; i++, j--) {
        struct ft_raw_sched_event t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

void ft_sched_finish(struct ft_sched_buf *b, struct ft_sched_filter *f)
{
    if (b->n == b->cap && b->next && b->cap) { /* wrapped: oldest at next */
        reverse(b->ev, b->next);
        reverse(b->ev + b->next, b->cap - b->next);
        reverse(b->ev, b->cap);
    }
    b->next = b->n == b->cap ? 0 : b->n;
    /* events were left out: before the oldest one held, states are unknown */
    if ((b->hdr.flags & FT_SCHEDF_DROPPED) && b->n && b->ev[0].tsc > b->hdr.oldest_tsc)
        b->hdr.oldest_tsc = b->ev[0].tsc;
    if (f) {
        size_t k = 0;
        for (size_t i = 0; i < b->n; i++)
            if (ft_sched_filter_keep(f, &b->ev[i])) b->ev[k++] = b->ev[i];
        b->n = k;
        b->next = k == b->cap ? 0 : k;
        b->hdr.pid = f->pid;
        b->hdr.from_tsc = f->from_tsc;
        b->hdr.to_tsc = f->to_tsc;
    }
    b->hdr.nevents = (uint32_t)b->n;
}

int ft_sched_emit(const struct ft_writer *w, struct ft_emit_stats *st, const struct ft_sched_buf *b)
{
    struct ft_raw_sched h = b->hdr;
    h.version = FT_SCHED_VERSION;
    h.nevents = h.status == FT_SCHED_OK ? (uint32_t)b->n : 0;
    h.why[sizeof h.why - 1] = 0;
    size_t nb = (size_t)h.nevents * sizeof(struct ft_raw_sched_event);
    if (ft_raw_chunk_header(w, FT_CHUNK_SCHED, sizeof h + nb, st)) return -1;
    if (w->write(w->ctx, &h, sizeof h)) return -1;
    if (nb && w->write(w->ctx, b->ev, nb)) return -1;
    if (st) st->bytes += sizeof h + nb;
    return 0;
}

int ft_sched_emit_status(const struct ft_writer *w, struct ft_emit_stats *st, uint64_t pid, int status,
                         const char *why)
{
    struct ft_sched_buf b;
    ft_sched_buf_init(&b, NULL, 0);
    b.hdr.status = (uint32_t)status;
    b.hdr.pid = pid;
    size_t n = 0;
    while (why && why[n] && n + 1 < sizeof b.hdr.why) {
        b.hdr.why[n] = why[n];
        n++;
    }
    return ft_sched_emit(w, st, &b);
}
