/*
 * tracefacts.c -- what the views say about the trace as a whole: what is
 * missing from the input and why, whether the recorded signal asked for a
 * snapshot, and the mark of the thread it hit.
 */
#include <signal.h>
#include <stdio.h>

#include "tracefacts.h"
#include "textfmt.h"

/* the tids of the threads whose THRDSTAT has one of flags: count, and up to
 * 4 tids into buf */
static size_t tids_with(const struct dec *d, uint32_t flags, char *buf, size_t cap)
{
    size_t n = 0, k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < d->nth; i++) {
        const struct ftr_thread *rt = d->th[i].rt;
        if (!rt->has_stat || !(rt->st.flags & flags))
            continue;
        if (n < 4 && k < cap)
            k += (size_t)snprintf(buf + k, cap - k, "%s%u", n ? ", " : "", rt->st.tid);
        else if (n == 4 && k < cap)
            k += (size_t)snprintf(buf + k, cap - k, ", ...");
        n++;
    }
    return n;
}

size_t dec_problems(const struct dec *d, struct problem *out, size_t max)
{
    const struct ftr_trace *t = &d->t;
    size_t n = 0;
#define ADD(dmg, ...)                                                   \
    do {                                                                \
        if (n < max) {                                                  \
            snprintf(out[n].text, sizeof out[n].text, __VA_ARGS__);     \
            out[n++].damage = (dmg);                                    \
        }                                                               \
    } while (0)
    if (t->problems & FTR_P_TRUNCATED)
        ADD(1, "the raw file is truncated (no ENDTRACE, or a chunk cut short)");
    if (t->problems & FTR_P_CORRUPT)
        ADD(1, "a corrupt chunk header: the rest of the file was ignored");
    if (t->problems & FTR_P_BADCHUNK)
        ADD(1, "chunks with invalid contents were skipped (see the warnings)");
    if (t->problems & FTR_P_PARTIAL)
        ADD(1, "the producer could not read all of its source (PARTIAL: e.g. a truncated core, unreadable memory)");
    if (t->problems & FTR_P_LOST)
        ADD(1, "%u of the process's %llu thread records could not be read: those threads and their events are missing",
            t->hdr.nthreads_lost, (unsigned long long)t->hdr.nthreads + t->hdr.nthreads_lost);
    if (t->problems & FTR_P_COUNT) {
        size_t nstat = 0;
        for (size_t i = 0; i < d->nth; i++)
            nstat += d->th[i].rt->has_stat;
        ADD(1, "%zu of the %u threads the header announces are in the file", nstat, t->hdr.nthreads);
    }
    if (t->has_header && (t->hdr.flags & FT_RAWF_TIME_FILTERED))
        ADD(0, "events older than a time limit were left out by the producer");
    if (t->has_header && t->hdr.records_reused != FT_RAW_UNKNOWN && t->hdr.records_reused)
        ADD(0, "%llu exited threads are not in the file: their rings were freed for the memory budget "
            "(FUNTRACE_BUDGET) and their records reused (%llu threads created, %llu rings freed)",
            (unsigned long long)t->hdr.records_reused, (unsigned long long)t->hdr.threads_created,
            (unsigned long long)t->hdr.rings_evicted);
    static const struct {
        uint32_t flag;
        int damage;
        const char *what;
    } rings[] = {
        {FT_TSF_RING_MISSING, 1, "missing from the source: no events"},
        {FT_TSF_BAD_POS, 1, "not emitted: its write position is invalid"},
        {FT_TSF_RING_PARTIAL, 1, "partly missing from the source"},
        {FT_TSF_COPY_RACED, 0, "missing the events overwritten while it was copied"},
    };
    /* zeroed or invalid entries inside a ring's window (ring8.c): lost events */
    for (size_t i = 0; i < d->nth; i++) {
        const struct dthread *th = &d->th[i];
        char when[96] = "";
        if (!th->ninvalid)
            continue;
        if (th->has_invalid_tsc && th->has_first && th->invalid_tsc >= th->first_tsc) {
            char dur[32];
            fmt_dur(dur, sizeof dur,
                    ft_clock_ns(&d->gens[d->ngens - 1].clk, th->invalid_tsc) -
                        ft_clock_ns(&d->gens[d->ngens - 1].clk, th->first_tsc));
            snprintf(when, sizeof when, ", after the event %s after its oldest one", dur);
        }
        if (th->checked_from) /* the text view: only the end of the ring was read */
            ADD(1, "the ring of thread %llu has %llu zeroed or invalid entries in the last %llu of its %llu entries, "
                "the part read and checked (items %llu..%llu%s): the events there are lost",
                (unsigned long long)th->rt->tid, (unsigned long long)th->ninvalid,
                (unsigned long long)(th->rt->n - th->checked_from), (unsigned long long)th->rt->n,
                (unsigned long long)th->invalid_first, (unsigned long long)th->invalid_last, when);
        else
            ADD(1, "the ring of thread %llu has %llu zeroed or invalid entries inside its trace (items %llu..%llu%s): "
                "the events there are lost",
                (unsigned long long)th->rt->tid, (unsigned long long)th->ninvalid,
                (unsigned long long)th->invalid_first, (unsigned long long)th->invalid_last, when);
    }
    for (size_t k = 0; k < sizeof rings / sizeof rings[0]; k++) {
        char tids[64];
        size_t c = tids_with(d, rings[k].flag, tids, sizeof tids);
        if (c)
            ADD(rings[k].damage, "the ring of %zu thread%s is %s (tid %s)", c, c > 1 ? "s" : "", rings[k].what,
                tids);
    }
#undef ADD
    return n;
}

int dec_signal_snapshot(const struct ftr_trace *t)
{
    int s = t->crash.signo;
    return t->has_header && t->hdr.source == FT_SRC_SNAPSHOT && t->has_crash && s &&
           s != SIGSEGV && s != SIGBUS && s != SIGFPE && s != SIGILL && s != SIGABRT;
}

const char *dec_thread_mark(const struct dec *d, uint64_t tid)
{
    if (tid != d->crash_tid)
        return "";
    return dec_signal_snapshot(&d->t) ? " [signaled]" : " [crashed]";
}

void dec_gen_name(const struct dgen *g, char *buf, size_t len)
{
    if (g->estimated && g->gen_last > g->gen)
        snprintf(buf, len, "generations %llu..%llu (estimated)", (unsigned long long)g->gen,
                 (unsigned long long)g->gen_last);
    else
        snprintf(buf, len, "generation %llu%s", (unsigned long long)g->gen, g->estimated ? " (estimated)" : "");
}
