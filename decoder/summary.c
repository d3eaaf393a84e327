/*
 * summary.c -- --summary: what the raw holds, what was decoded, and what is
 * incomplete and why.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decstate.h"
#include "gencuts.h"
#include "outbuf.h"
#include "textfmt.h"
#include "tracefacts.h"
#include "views.h"
#include "xalloc.h"
#include "faults.h"

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

static void summary_print(struct dec *d, struct outbuf *o)
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
    } else {
        faults_print_header(d, o, "");
        if (t->has_crash && t->crash.signo)
            ob_printf(o, "signal:      %s, si_code %d, address 0x%llx, thread %u\n", sig_name(t->crash.signo),
                      t->crash.si_code, (unsigned long long)t->crash.addr, t->crash.tid);
        faults_print_after(d, o, "");
    }
    ob_printf(o, "modules:     %zu in the module table, %zu mappings%s\n", t->nmods, t->nmaps,
              t->maps_from_procmaps ? " (PROCMAPS)" : "");

    /* generations */
    size_t real = 0;
    size_t nest = 0;
    for (size_t gi = 0; gi < d->ngens; gi++) {
        real += !d->gens[gi].synthetic && !d->gens[gi].estimated;
        nest += d->gens[gi].estimated;
    }
    ob_printf(o, "generations: %zu recorded", real);
    if (t->has_header)
        ob_printf(o, ", current #%llu, every %llu ms", (unsigned long long)t->hdr.gen_current,
                  (unsigned long long)t->hdr.gen_ms);
    if (nest)
        ob_printf(o, "; %zu older part%s estimated from the period (the ring holds more than the records)", nest,
                  nest == 1 ? "" : "s");
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
                              (unsigned long long)(d->gens[e].estimated ? d->gens[e].gen_last : d->gens[e].gen),
                              d->total_events ? "overwritten or before the threads" : "none recovered: see problems");
                gi = e;
                continue;
            }
        }
        if (g->synthetic && nest)
            ob_str(o, "  (before the estimates)    ");
        else if (g->synthetic && real)
            ob_str(o, "  (before the oldest record)");
        else if (g->synthetic)
            ob_str(o, "  (whole trace)     ");
        else if (g->estimated) {
            char r[48];
            snprintf(r, sizeof r, g->gen_last > g->gen ? "#%llu..#%llu" : "#%llu", (unsigned long long)g->gen,
                     (unsigned long long)g->gen_last);
            ob_printf(o, "  %-14s estimated", r);
        } else
            ob_printf(o, "  #%-6llu           ", (unsigned long long)g->gen);
        if (!g->synthetic && d->have_wall) {
            fmt_wall(b1, sizeof b1, g->start_ns + g->wall_off, 0);
            ob_printf(o, " start %s%s", g->estimated ? "~" : "", b1);
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
        if (!th->shown)
            continue;
        int64_t span = th->nevents ? th->last_ns - th->first_ns : 0;
        fmt_dur(b1, sizeof b1, span);
        char name[4 * FT_THREAD_NAME_LEN + 1];
        text_escape(name, sizeof name, rt->name);
        ob_printf(o, "  tid %-8llu %-16s %-8s %-7s %10llu events  span %-12s flags ", (unsigned long long)rt->tid,
                  name, rt->has_stat ? state_name(rt->st.state) : "?",
                  (rt->fmt == FT_FMT_SAMPLED8 || rt->fmt == FT_FMT_SAMPLED4) ? "sampled" : rt->fmt ? "exact" : "none",
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
        if (!th->nevents && th->lost_filtered) /* every event it had is older: say so, not just "0 events" */
            ob_printf(o, "      no events since the snapshot's start time: its %llu older ring items were %s\n",
                      (unsigned long long)rt->st.n_dropped, dec_lost_why(th));
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

static int s_end(struct view *v, struct dec *d)
{
    (void)v;
    struct outbuf ob;
    if (ob_open(&ob, 1, 1 << 16))
        xalloc_die();
    summary_print(d, &ob);
    return ob_close(&ob);
}

static void s_destroy(struct view *v)
{
    free(v);
}

static const struct view_ops summary_ops = {.end = s_end, .destroy = s_destroy};

struct view *summary_view_new(void)
{
    struct view *v = xcalloc(1, sizeof *v);
    v->ops = &summary_ops;
    v->kind = VIEW_PIECES;
    return v;
}
