/*
 * text.c -- the terminal view (--text): a header about the process and its
 * end, then per thread (the crashing thread first) the last N calls as an
 * indented timeline, times relative to the end of the trace (or absolute
 * with --wallclock), and the thread's final stack.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

static const char *src_kind(const struct dec *d)
{
    if (d->t.original)
        return "original funtrace.raw";
    switch (d->t.hdr.source) {
    case FT_SRC_CORE: return "core file";
    case FT_SRC_LIVE: return "live process";
    case FT_SRC_SNAPSHOT: return "snapshot";
    }
    return "unknown source";
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static const char *thread_mark(const struct dec *d, const struct ftr_thread *rt)
{
    if (rt->tid != d->crash_tid)
        return "";
    return dec_signal_snapshot(&d->t) ? " [signaled]" : " [crashed]";
}

static void header(struct dec *d, struct outbuf *o)
{
    char b1[96], b2[96];
    ob_str(o, "funtrace: `");
    ob_text(o, d->t.cmdline[0] ? d->t.cmdline : "?");
    ob_printf(o, "` (pid %llu), from a %s\n", (unsigned long long)d->pid, src_kind(d));
    if (d->t.has_crash && d->t.crash.signo) {
        const struct ft_raw_crash *c = &d->t.crash;
        const char *tn = "";
        for (size_t i = 0; i < d->nth; i++)
            if (d->th[i].rt->tid == c->tid)
                tn = d->th[i].rt->name;
        if (dec_signal_snapshot(&d->t))
            ob_printf(o, "  snapshot:   on %s (%s), si_code %d", sig_name(c->signo), strsignal(c->signo),
                      c->si_code);
        else
            ob_printf(o, "  signal:     %s (%s), si_code %d", sig_name(c->signo), strsignal(c->signo),
                      c->si_code);
        if (c->signo == SIGSEGV || c->signo == SIGBUS || c->signo == SIGFPE || c->signo == SIGILL)
            ob_printf(o, ", fault address 0x%llx", (unsigned long long)c->addr);
        if (c->sender_pid)
            ob_printf(o, ", sent by pid %u", c->sender_pid);
        if (c->tid) {
            ob_printf(o, ", thread %u \"", c->tid);
            ob_text(o, tn);
            ob_char(o, '"');
        }
        ob_char(o, '\n');
    } else {
        ob_str(o, "  signal:     none recorded\n");
    }
    int64_t last = INT64_MIN, last_own = INT64_MIN; /* measured; own ns (see replay.c) */
    for (size_t i = 0; i < d->nth; i++)
        if (d->th[i].nevents) {
            if (d->th[i].last_mns > last)
                last = d->th[i].last_mns;
            if (d->th[i].last_ns > last_own)
                last_own = d->th[i].last_ns;
        }
    if (!d->total_events) {
        ob_str(o, "  last event: none (no events in the input)");
    } else if (d->have_wall) {
        fmt_wall(b1, sizeof b1, last + d->wall_off, 1);
        ob_printf(o, "  last event: %s", b1);
    } else {
        ob_str(o, "  last event: (no wall clock in this trace)");
    }
    if (d->total_events && d->end_ns > last_own) {
        fmt_dur(b2, sizeof b2, d->end_ns - last_own);
        ob_printf(o, "; the trace was taken %s later (times below are relative to that)", b2);
    }
    ob_char(o, '\n');
    size_t ne = 0, first = 0, lastg = 0;
    for (size_t gi = 0; gi < d->ngens; gi++)
        if (d->gens[gi].emit) {
            if (!ne++)
                first = gi;
            lastg = gi;
        }
    int64_t span = d->total_events ? d->end_ns - d->base_ns : 0;
    fmt_dur(b2, sizeof b2, span < 0 ? 0 : span);
    ob_printf(o, "  trace:      %zu threads, %llu events, ", d->nth, (unsigned long long)d->total_events);
    if (ne && !(d->ngens == 1 && d->gens[0].synthetic))
        ob_printf(o, "generations %llu..%llu, ", (unsigned long long)d->gens[first].gen + d->gens[first].synthetic,
                  (unsigned long long)d->gens[lastg].gen);
    ob_printf(o, "%s shown\n", b2);
    struct problem pr[DEC_MAX_PROBLEMS];
    size_t np = dec_problems(d, pr, DEC_MAX_PROBLEMS);
    for (size_t i = 0; i < np; i++)
        ob_printf(o, "  %s %s\n", i ? "           " : "incomplete:", pr[i].text);
    sched_status_line(d, o, "  sched:      "); /* scheduling states (sched_views.c) */
}

#define ANC_OUTER 3 /* enclosing frames shown outermost ... */
#define ANC_INNER 8 /* ... and innermost; the rest collapsed */
#define ANC_RUNS 4  /* collapsed runs of one function shown one line each */
#define MAX_INDENT 40

/* one call line: start, duration, indented name, marks */
static void call_line(struct dec *d, const struct trec *t, int enclosing, struct outbuf *o)
{
    char b1[64], b2[64];
    struct func *fn = sym_func(d->sym, t->func);
    if (d->o.wallclock && d->have_wall)
        fmt_wall(b1, sizeof b1, t->start + d->wall_off, 0);
    else
        fmt_dur(b1, sizeof b1, t->start - d->end_ns);
    if (t->flags & (SL_OPEN | SL_PENDING)) {
        snprintf(b2, sizeof b2, "open");
    } else {
        char du[48];
        /* sampled mode: "~" interpolated in a dense bracket, "<=" an end in a
         * loose one: only an upper bound is known (ringevents.c) */
        int bound = (t->flags & SL_BOUND) != 0;
        fmt_dur(du, sizeof du, bound ? t->ub : t->end - t->start);
        snprintf(b2, sizeof b2, "%s%s%s", t->flags & SL_START_UNK ? ">" : "",
                 bound ? "<=" : t->flags & SL_UNMEASURED ? "~" : "", du);
    }
    int depth = t->depth;
    ob_printf(o, "  %18s  %12s  ", b1, b2);
    if (depth > MAX_INDENT) {
        ob_printf(o, "[depth %d] ", depth);
        depth = 0;
    }
    for (int k = 0; k < depth; k++)
        ob_str(o, "  ");
    ob_text(o, fn->name);
    if (fn->file) {
        ob_str(o, "  ");
        ob_text(o, base_name(fn->file));
        ob_printf(o, ":%u", fn->line);
    }
    if (t->flags & (SL_OPEN | SL_PENDING))
        ob_str(o, "  [still open]");
    if (t->flags & SL_ABANDONED)
        ob_str(o, "  [return missing]");
    if (t->flags & SL_UNWOUND)
        ob_str(o, "  [unwound by exception]");
    if (t->flags & SL_START_UNK)
        ob_str(o, "  [started before the ring]");
    if (enclosing)
        ob_str(o, "  [enclosing]");
    ob_char(o, '\n');
}

/* the frames enclosing the first call shown (anc[0..n)), outermost first;
 * deep stacks keep the outermost and innermost ones, and say which
 * functions the frames left out of the middle run */
static void enclosing(struct dec *d, const struct trec *anc, size_t n, struct outbuf *o)
{
    size_t lo = n, hi = n;
    if (n > ANC_OUTER + ANC_INNER) {
        lo = ANC_OUTER;
        hi = n - ANC_INNER;
    }
    for (size_t i = 0; i < lo; i++)
        call_line(d, &anc[i], 1, o);
    size_t runs = 0;
    for (size_t i = lo; i < hi;) {
        size_t j = i + 1;
        while (j < hi && anc[j].func == anc[i].func)
            j++;
        char pad[MAX_INDENT * 2 + 1];
        int ind = anc[i].depth > MAX_INDENT ? 0 : anc[i].depth;
        memset(pad, ' ', (size_t)ind * 2);
        pad[ind * 2] = 0;
        if (runs++ == ANC_RUNS) {
            size_t nr = 0;
            for (size_t k = i; k < hi; k++) /* the runs left */
                if (k == i || anc[k].func != anc[k - 1].func)
                    nr++;
            ob_printf(o, "  %18s  %12s  %s... %zu more open frames in %zu runs of functions ...\n", "", "", pad,
                      hi - i, nr);
            break;
        }
        ob_printf(o, "  %18s  %12s  %s... %zu more open frame%s of ", "", "", pad, j - i, j - i == 1 ? "" : "s");
        ob_text(o, sym_func(d->sym, anc[i].func)->name);
        ob_str(o, " ...\n");
        i = j;
    }
    for (size_t i = hi; i < n; i++)
        call_line(d, &anc[i], 1, o);
}

/* A recursion in a final stack: the frames from k on that repeat a cycle of
 * *period (1..4) frames (a run at one address, a mutual recursion a -> b ->
 * a ...).  Returns the end of the repeating part (k + *period at least); the
 * longest wins, ties go to the shortest period. */
static uint32_t cycle(const uint64_t *pcs, uint32_t n, uint32_t k, uint32_t *period)
{
    uint32_t best = k + 1;
    *period = 1;
    for (uint32_t p = 1; p <= 4 && k + p <= n; p++) {
        uint32_t e = k + p;
        while (e < n && pcs[e] == pcs[e - p])
            e++;
        if (e - k >= 3 * p && e > best) {
            best = e;
            *period = p;
        }
    }
    return best;
}

static void one_thread(struct dec *d, struct dthread *th, struct outbuf *o)
{
    const struct ftr_thread *rt = th->rt;
    ob_printf(o, "\nthread %llu \"", (unsigned long long)rt->tid);
    ob_text(o, rt->name);
    ob_printf(o, "\"%s -- %llu events", thread_mark(d, rt), (unsigned long long)th->nevents);
    if (th->lost_older && th->nevents)
        ob_printf(o, " (older ones %s)", dec_lost_why(th));
    uint64_t N = (uint64_t)d->o.ncalls;
    uint64_t from = th->ring_seq > N ? th->ring_seq - N : 0;
    if (th->ring_seq == 0) {
        ob_str(o, "; no calls in the generations shown\n");
    } else {
        ob_printf(o, "; last %llu calls", (unsigned long long)(th->ring_seq - from));
        if (th->nanc)
            ob_printf(o, " (and the %zu enclosing the first)", th->nanc);
        ob_printf(o, ", %s:\n", d->o.wallclock ? "wall-clock times" : "start times relative to the end");
        ob_printf(o, "  %18s  %12s  %s\n", "start", "duration", "function");
        enclosing(d, th->anc, th->nanc, o);
        /* the calls, and between them the long waits (sched_views.c) */
        size_t nsh = (size_t)(th->ring_seq - from);
        struct trec *sh = xmalloc(nsh * sizeof *sh);
        for (size_t k = 0; k < nsh; k++)
            sh[k] = th->ring[(from + k) % N];
        for (size_t k = 0; k < nsh; k++) {
            if (k)
                sched_text_waits(d, th, sh[k - 1].start, sh[k].start, sh, k, o);
            call_line(d, &sh[k], 0, o);
        }
        sched_text_waits(d, th, sh[nsh - 1].start, INT64_MAX, sh, nsh, o);
        free(sh);
    }
    if (rt->stack >= 0) {
        const struct ftr_stack *fs = &d->t.stacks[rt->stack];
        static const char *unw[] = {"?", "libunwind", "gdb", "ptrace"};
        ob_printf(o, "  final stack (%s, %u frames%s):\n", fs->h.unwinder < 4 ? unw[fs->h.unwinder] : "?",
                  fs->npcs, fs->h.flags & FT_STKF_TRUNCATED ? ", truncated" : "");
        int space = d->gens[d->ngens - 1].space;
        for (uint32_t k = 0; k < fs->npcs; k++) {
            uint32_t p, e = cycle(fs->pcs, fs->npcs, k, &p);
            ob_printf(o, "    #%-3u 0x%016llx  ", k, (unsigned long long)fs->pcs[k]);
            sym_describe_pc(d->sym, space, fs->pcs[k], k > 0, o, "                              ");
            if (p == 1 && e - k > 2) {
                ob_printf(o, "    ... #%u..#%u: %u more frames at the same address ...\n", k + 1, e - 1, e - k - 1);
                k = e - 1;
            } else if (p > 1 && e - k >= 3 * p) {
                for (uint32_t j = k + 1; j < k + p; j++) { /* the first cycle in full */
                    ob_printf(o, "    #%-3u 0x%016llx  ", j, (unsigned long long)fs->pcs[j]);
                    sym_describe_pc(d->sym, space, fs->pcs[j], 1, o, "                              ");
                }
                ob_printf(o, "    ... #%u..#%u: %u more frames repeating ", k + p, e - 1, e - k - p);
                for (uint32_t j = k; j < k + p; j++) {
                    uint64_t pc = fs->pcs[j];
                    if (j > k)
                        ob_str(o, " <- ");
                    ob_text(o, sym_func(d->sym, sym_lookup(d->sym, space, j && pc ? pc - 1 : pc))->name);
                }
                ob_str(o, " ...\n");
                k = e - 1;
            }
        }
    }
}

void text_print(struct dec *d, struct outbuf *o)
{
    header(d, o);
    size_t shown = 0, skipped = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < d->nth; i++) {
            struct dthread *th = &d->th[i];
            int crashed = th->rt->tid == d->crash_tid;
            if ((pass == 0) != crashed)
                continue;
            if (!th->nevents && th->rt->has_stat && th->rt->st.state == FT_THR_IGNORED) {
                skipped++; /* e.g. the runtime's own housekeeping thread */
                continue;
            }
            if (d->o.max_threads_text && shown >= (size_t)d->o.max_threads_text) {
                ob_printf(o, "\n(%zu more threads not shown; see --threads)\n", d->nth - shown);
                return;
            }
            one_thread(d, th, o);
            shown++;
        }
    if (skipped)
        ob_printf(o, "\n(%zu ignored threads without events not shown)\n", skipped);
}
