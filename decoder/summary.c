/*
 * summary.c -- --summary: what the raw holds, what was decoded, and what is
 * incomplete and why.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "decode.h"

static const char *state_name(uint32_t s)
{
    static const char *n[] = {"free", "alive", "exited", "evicted", "ignored"};
    return s < 5 ? n[s] : "?";
}

static void tsf(struct outbuf *o, uint32_t f)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } t[] = {
        {FT_TSF_WRAPPED, "WRAPPED"},         {FT_TSF_UNCOMMITTED, "UNCOMMITTED"}, {FT_TSF_TORN, "TORN"},
        {FT_TSF_RING_MISSING, "RING_MISSING"}, {FT_TSF_RING_PARTIAL, "RING_PARTIAL"},
        {FT_TSF_COPY_RACED, "COPY_RACED"},   {FT_TSF_BAD_POS, "BAD_POS"},
    };
    int any = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (f & t[i].bit) {
            ob_printf(o, "%s%s", any ? "," : "", t[i].name);
            any = 1;
        }
    if (!any)
        ob_str(o, "-");
}

void summary_print(struct dec *d, struct outbuf *o)
{
    const struct ftr_trace *t = &d->t;
    char b1[64], b2[64];
    ob_str(o, "input:       ");
    ob_text(o, d->o.input);
    ob_printf(o, ", sample %d of %d (%llu bytes)%s\n", t->sample, t->nsamples, (unsigned long long)t->bytes,
              t->original ? ", original funtrace format" : "");
    if (t->has_header) {
        static const char *src[] = {"?", "core", "live process", "snapshot"};
        ob_printf(o, "source:      %s, raw version %u, ABI %u\n", t->hdr.source < 4 ? src[t->hdr.source] : "?",
                  t->hdr.raw_version, t->hdr.abi_version);
    }
    ob_printf(o, "process:     pid %llu, `", (unsigned long long)d->pid);
    ob_text(o, t->cmdline);
    ob_str(o, "`\n");
    ob_printf(o, "clock:       TSC %llu Hz, %s time\n", (unsigned long long)d->tsc_hz,
              d->sampled ? "sampled" : "exact");
    if (dec_signal_snapshot(t)) {
        ob_printf(o, "snapshot:    on %s (%s), si_code %d", sig_name(t->crash.signo), strsignal(t->crash.signo),
                  t->crash.si_code);
        if (t->crash.sender_pid)
            ob_printf(o, ", sent by pid %u", t->crash.sender_pid);
        ob_printf(o, ", thread %u\n", t->crash.tid);
    } else if (t->has_crash && t->crash.signo) {
        ob_printf(o, "signal:      %s, si_code %d, address 0x%llx, thread %u\n", sig_name(t->crash.signo),
                  t->crash.si_code, (unsigned long long)t->crash.addr, t->crash.tid);
    }
    ob_printf(o, "modules:     %zu in the module table, %zu mappings%s\n", t->nmods, t->nmaps,
              t->maps_from_procmaps ? " (PROCMAPS)" : "");

    /* generations */
    size_t real = 0;
    for (size_t gi = 0; gi < d->ngens; gi++)
        real += !d->gens[gi].synthetic;
    ob_printf(o, "generations: %zu recorded", real);
    if (t->has_header)
        ob_printf(o, ", current #%llu, every %llu ms", (unsigned long long)t->hdr.gen_current,
                  (unsigned long long)t->hdr.gen_ms);
    ob_char(o, '\n');
    for (size_t gi = 0; gi < d->ngens; gi++) {
        const struct dgen *g = &d->gens[gi];
        if (!g->emit && !g->nthreads_with_events) { /* a run of generations no ring covers: one line */
            size_t e = gi;
            while (e + 1 < d->ngens && !d->gens[e + 1].emit && !d->gens[e + 1].nthreads_with_events)
                e++;
            if (e == gi && g->synthetic)
                continue; /* nothing older than the oldest record */
            {
                size_t a = g->synthetic ? gi + 1 : gi;
                if (a <= e)
                    ob_printf(o, "  #%llu..#%llu: no events in any ring (%s)\n", (unsigned long long)d->gens[a].gen,
                              (unsigned long long)d->gens[e].gen,
                              d->total_events ? "overwritten or before the threads" : "none recovered: see problems");
                gi = e;
                continue;
            }
        }
        if (g->synthetic && real)
            ob_str(o, "  (before the oldest record)");
        else if (g->synthetic)
            ob_str(o, "  (whole trace)     ");
        else
            ob_printf(o, "  #%-6llu           ", (unsigned long long)g->gen);
        if (!g->synthetic && d->have_wall) {
            fmt_wall(b1, sizeof b1, g->start_ns + g->wall_off, 0);
            ob_printf(o, " start %s", b1);
        }
        int64_t end = g->end_ns < d->end_ns ? g->end_ns : d->end_ns;
        if (!g->synthetic && end >= g->start_ns) {
            fmt_dur(b2, sizeof b2, end - g->start_ns);
            ob_printf(o, "  length %s", b2);
        }
        ob_printf(o, "  threads with events %u, incomplete %u%s\n", g->nthreads_with_events, g->nthreads_incomplete,
                  g->emit ? "" : "  (not decoded)");
    }

    /* threads */
    ob_printf(o, "threads:     %zu", d->nth);
    if (t->has_header)
        ob_printf(o, " (header: %u, lost %u)", t->hdr.nthreads, t->hdr.nthreads_lost);
    if (t->has_header && t->hdr.threads_created != FT_RAW_UNKNOWN)
        ob_printf(o, "; the process created %llu, rings freed for the budget %llu, records reused %llu",
                  (unsigned long long)t->hdr.threads_created, (unsigned long long)t->hdr.rings_evicted,
                  (unsigned long long)t->hdr.records_reused);
    ob_char(o, '\n');
    for (size_t i = 0; i < d->nth; i++) {
        const struct dthread *th = &d->th[i];
        const struct ftr_thread *rt = th->rt;
        int64_t span = th->nevents ? th->last_ns - th->first_ns : 0;
        fmt_dur(b1, sizeof b1, span);
        char name[4 * FT_THREAD_NAME_LEN + 1];
        text_escape(name, sizeof name, rt->name);
        ob_printf(o, "  tid %-8llu %-16s %-8s %-7s %10llu events  span %-12s flags ", (unsigned long long)rt->tid,
                  name, rt->has_stat ? state_name(rt->st.state) : "?",
                  rt->fmt == FT_FMT_SAMPLED8 ? "sampled" : rt->fmt ? "exact" : "none",
                  (unsigned long long)th->nevents, b1);
        tsf(o, rt->has_stat ? rt->st.flags : 0);
        if (rt->truncated)
            ob_str(o, ",TRUNCATED");
        if (rt->tid == d->crash_tid)
            ob_str(o, dec_signal_snapshot(t) ? "  [signaled]" : "  [crashed]");
        int retired = rt->has_stat && ((rt->st.flags >> 16) & FT_THRF_RETIRED);
        if (retired)
            ob_str(o, "  (retired: ring resized, the thread goes on in a newer record)");
        ob_char(o, '\n');
        int any = 0;
        for (size_t gi = 0; gi < d->ngens; gi++)
            if (th->incomplete[gi] && d->gens[gi].emit) {
                if (!any)
                    ob_printf(o, "      incomplete (older events %s) in generations:",
                              dec_lost_why(th));
                if (d->gens[gi].synthetic)
                    ob_printf(o, " (before #%llu)",
                              (unsigned long long)(gi + 1 < d->ngens ? d->gens[gi + 1].gen : d->gens[gi].gen));
                else
                    ob_printf(o, " #%llu", (unsigned long long)d->gens[gi].gen);
                any = 1;
            }
        if (any)
            ob_char(o, '\n');
        any = 0;
        for (size_t gi = 0; gi < d->ngens; gi++)
            if (th->by_tsc[gi] && d->gens[gi].emit && !retired) {
                if (!any)
                    ob_str(o, "      recorded ring position unusable, cut by timestamps in generations:");
                ob_printf(o, " #%llu", (unsigned long long)d->gens[gi].gen);
                any = 1;
            }
        if (any)
            ob_char(o, '\n');
        if (th->orphans || th->mismatches || th->unmatched_catches || th->out_of_order || th->nabandoned ||
            th->unnamed)
            ob_printf(o,
                      "      %llu orphan returns (calls overwritten), %llu returns with missing inner returns, "
                      "%llu unmatched catches, %llu out-of-order timestamps, %zu frames not on the final stack, "
                      "%llu unresolvable returns\n",
                      (unsigned long long)th->orphans, (unsigned long long)th->mismatches,
                      (unsigned long long)th->unmatched_catches, (unsigned long long)th->out_of_order,
                      th->nabandoned, (unsigned long long)th->unnamed);
        if (rt->stack >= 0)
            ob_printf(o, "      final stack: %u frames, %zu of them open during the whole ring\n",
                      d->t.stacks[rt->stack].npcs, th->npre_final);
    }

    sched_status_line(d, o, "sched:       "); /* scheduling states (sched_views.c) */
    struct sym_stats ss;
    sym_stats(d->sym, &ss);
    ob_printf(o, "symbols:     %u files opened, %u missing, %u build-id mismatches, %u unresolved addresses\n",
              ss.files - ss.files_missing, ss.files_missing, ss.buildid_mismatch, ss.unknown_addrs);

    struct problem pr[DEC_MAX_PROBLEMS];
    size_t np = dec_problems(d, pr, DEC_MAX_PROBLEMS);
    ob_str(o, "problems:    ");
    for (size_t i = 0; i < np; i++) {
        if (i)
            ob_str(o, "\n             ");
        ob_str(o, pr[i].text);
    }
    if (!np)
        ob_str(o, "none");
    ob_char(o, '\n');
}

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
