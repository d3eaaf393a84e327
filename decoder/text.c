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

#include "decstate.h"
#include "faults.h"
#include "finalstack.h"
#include "foldcycle.h"
#include "gencuts.h"
#include "outbuf.h"
#include "textfmt.h"
#include "tracefacts.h"
#include "views.h"
#include "xalloc.h"

/* per thread: the calls shown and the frames enclosing the first of them */
struct tthread {
    struct slice *calls; /* the last N calls, in call order (in these copies, and anc's,
                            an SL_BOUND slice ends at the latest it can have:
                            start + its upper bound, th->slice_ub) */
    uint32_t *ctx;       /* the context each was made in (th->slice_ctx); NULL:
                            the thread switched no stacks */
    uint32_t anc_ctx;    /* the context of the enclosing frames (the first call's) */
    size_t ncalls;
    uint64_t total;      /* calls in the generations shown */
    struct slice *anc;   /* the enclosing frames, outermost first */
    size_t nanc;
    uint64_t nenc;       /* the frames enclosing the first call (more than nanc
                            when a marker among them stands for several) */
    int got;             /* slices came since the last thread_end */
    int replayed;        /* the thread was replayed for this view: */
    uint64_t nevents;    /* events read */
    uint64_t lo;         /* the first ring item read (textwindow.c) */
    int no_outer;        /* read from the middle of its ring without a whole
                            final stack: frames open since before are unknown */
};

struct text_view {
    struct view v;
    struct tthread *th; /* [d->nth] */
    size_t nth;
};

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

/* the events the text view read of thread i (its own replay if it did one) */
static uint64_t events_read(const struct text_view *T, const struct dec *d, size_t i, int *partial)
{
    const struct tthread *tt = &T->th[i];
    if (tt->replayed) {
        *partial |= tt->lo > 0;
        return tt->nevents;
    }
    *partial |= d->th[i].lo > 0;
    return d->th[i].nevents;
}

static void header(const struct text_view *T, struct dec *d, struct outbuf *o)
{
    char b1[96], b2[96];
    ob_str(o, "funtrace: `");
    ob_text(o, d->t.cmdline[0] ? d->t.cmdline : "?");
    const char *kind = src_kind(d);
    ob_printf(o, "` (pid %llu), from %s %s\n", (unsigned long long)d->pid, strchr("aeiou", kind[0]) ? "an" : "a",
              kind);
    /* the original fault, when the signal below is not it (faults.c) */
    int orig_is_other = dec_original_fault(&d->t) && !faults_print_header(d, o, "  ");
    if (d->t.has_crash && d->t.crash.signo) {
        const struct ft_raw_crash *c = &d->t.crash;
        const char *tn = "";
        for (size_t i = 0; i < d->nth; i++)
            if (d->th[i].rt->tid == c->tid)
                tn = d->th[i].rt->name;
        char code[64];
        fmt_si_code(code, sizeof code, c->signo, c->si_code);
        if (dec_signal_snapshot(&d->t))
            ob_printf(o, "  snapshot:   on %s (%s), %s", sig_name(c->signo), strsignal(c->signo), code);
        else
            ob_printf(o, "  signal:     %s (%s), %s", sig_name(c->signo), strsignal(c->signo), code);
        if (c->si_code > 0 && (c->signo == SIGSEGV || c->signo == SIGBUS || c->signo == SIGFPE || c->signo == SIGILL))
            ob_printf(o, ", fault address 0x%llx", (unsigned long long)c->addr);
        if (c->sender_pid)
            ob_printf(o, ", sent by pid %u", c->sender_pid);
        if (c->tid) {
            ob_printf(o, ", thread %u \"", c->tid);
            ob_text(o, tn);
            ob_char(o, '"');
        }
        if (orig_is_other) /* the runtime recorded an earlier fault (faults.c) */
            ob_str(o, c->si_code > 0 ? " -- a second fault, not the original one"
                      : c->signo == dec_original_fault(&d->t)->signo && c->sender_pid == d->pid
                          ? " -- raised again by the program, not the original fault"
                          : " -- not the original fault");
        ob_char(o, '\n');
    } else if (!dec_original_fault(&d->t)) {
        ob_str(o, "  signal:     none recorded\n");
    }
    faults_print_after(d, o, "  ");
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
    uint64_t nev = 0;
    int partial = 0;
    for (size_t i = 0; i < d->nth; i++)
        nev += events_read(T, d, i, &partial);
    ob_printf(o, "  trace:      %zu threads, %llu events%s, ", d->nth, (unsigned long long)nev,
              partial ? " read from the ends of the rings" : "");
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

/* one call line: start, duration, indented name, marks; ctx: the number of
 * the context (call stack) the call was made in, on a thread that switched
 * stacks (coroutines), else NULL */
static void call_line(struct dec *d, const struct slice *t, int enclosing, int partial, const uint32_t *ctx,
                      struct outbuf *o)
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
        fmt_dur(du, sizeof du, t->end - t->start); /* (bound: the upper bound, t_slices) */
        snprintf(b2, sizeof b2, "%s%s%s", t->flags & (SL_START_UNK | SL_CUT_START | SL_CUT_END) ? ">" : "",
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
        ob_str(o, t->flags & SL_MOVED       ? "  [still open]  [suspended, then resumed by another thread]"
                  : t->flags & SL_SUSPENDED ? "  [still open]  [suspended]"
                                            : "  [still open]");
    if (t->flags & SL_ABANDONED)
        ob_str(o, t->flags & SL_JUMPED ? "  [left by longjmp]" : "  [return missing]");
    if (t->flags & SL_UNWOUND)
        ob_str(o, "  [unwound by exception]");
    if (t->flags & SL_START_UNK)
        ob_str(o, partial ? "  [started before the part read]" : "  [started before the ring]");
    if (t->flags & SL_CUT_START)
        ob_str(o, "  [started before --since]");
    if (t->flags & SL_CUT_END)
        ob_str(o, "  [went on past --until]");
    if (ctx)
        ob_printf(o, "  [context %u]", *ctx);
    if (enclosing)
        ob_str(o, "  [enclosing]");
    ob_char(o, '\n');
}

/* the columns of a line that stands for frames from depth a on: empty
 * start and duration, then the indentation of depth a (none past
 * MAX_INDENT: the lines around it show the depths) */
static void fold_prefix(struct outbuf *o, int a)
{
    ob_printf(o, "  %18s  %12s  ", "", "");
    for (int k = 0; k < a && a <= MAX_INDENT; k++)
        ob_str(o, "  ");
}

static int same_func(const void *ctx, size_t i, size_t j)
{
    const struct slice *s = ctx;
    return s[i].func == s[j].func;
}

/* the frames enclosing the first call shown (anc[0..n)), outermost first;
 * deep stacks keep the outermost and innermost ones, and say which
 * functions the frames left out of the middle run: a run of one function,
 * a repeating cycle of functions (a recursion through several), and after
 * ANC_RUNS of those the number of frames and runs up to the next cycle or
 * marker; markers ("[... frames not kept by the unwinder]") are always
 * shown, at their depth */
static void enclosing(struct dec *d, const struct slice *anc, size_t n, int partial, const uint32_t *ctx,
                      struct outbuf *o)
{
    size_t lo = n, hi = n;
    if (n > ANC_OUTER + ANC_INNER) {
        lo = ANC_OUTER;
        hi = n - ANC_INNER;
    }
    for (size_t i = 0; i < lo; i++)
        call_line(d, &anc[i], 1, partial, ctx, o);
    size_t runs = 0;
    for (size_t i = lo; i < hi;) {
        if (sym_func(d->sym, anc[i].func)->special) { /* "[frames not unwound]": never folded away */
            call_line(d, &anc[i], 1, partial, ctx, o);
            i++;
            continue;
        }
        size_t e = i; /* up to a marker */
        while (e < hi && !sym_func(d->sym, anc[e].func)->special)
            e++;
        size_t p, c = fold_cycle(e, i, FS_MAX_PERIOD, same_func, anc, &p);
        if (p > 1) { /* a recursion through p functions */
            fold_prefix(o, anc[i].depth);
            ob_printf(o, "... %zu more open frames repeating ", c - i);
            uint32_t ids[FOLD_NAMES];
            for (size_t j = 0; j < p && j < FOLD_NAMES; j++)
                ids[j] = anc[i + j].func;
            fold_cycle_names(o, d->sym, ids, p, " -> ");
            ob_str(o, " ...\n");
            runs++;
            i = c;
            continue;
        }
        if (runs >= ANC_RUNS) { /* the runs up to the next cycle */
            size_t nr = 0, k = i;
            for (; k < e; k++) {
                if (k > i && anc[k].func == anc[k - 1].func)
                    continue;
                if (k > i && fold_cycle(e, k, FS_MAX_PERIOD, same_func, anc, &p) > k + 1 && p > 1)
                    break;
                nr++;
            }
            fold_prefix(o, anc[i].depth);
            ob_printf(o, "... %zu more open frame%s in %zu run%s of functions ...\n", k - i, k - i == 1 ? "" : "s",
                      nr, nr == 1 ? "" : "s");
            i = k;
            continue;
        }
        size_t j = i + 1;
        while (j < e && anc[j].func == anc[i].func)
            j++;
        runs++;
        fold_prefix(o, anc[i].depth);
        ob_printf(o, "... %zu more open frame%s of ", j - i, j - i == 1 ? "" : "s");
        ob_text(o, sym_func(d->sym, anc[i].func)->name);
        ob_str(o, " ...\n");
        i = j;
    }
    for (size_t i = hi; i < n; i++)
        call_line(d, &anc[i], 1, partial, ctx, o);
}

static void one_thread(struct dec *d, struct dthread *th, const struct tthread *tt, struct outbuf *o)
{
    const struct ftr_thread *rt = th->rt;
    ob_printf(o, "\nthread %llu \"", (unsigned long long)rt->tid);
    ob_text(o, rt->name);
    ob_printf(o, "\"%s -- %llu events", dec_thread_mark(d, rt->tid), (unsigned long long)tt->nevents);
    if (tt->lo)
        ob_printf(o, " read from the end of its ring (the last %llu of %llu entries%s%s)",
                  (unsigned long long)(rt->n - tt->lo), (unsigned long long)rt->n,
                  th->lost_older ? "; older ones " : "", th->lost_older ? dec_lost_why(th) : "");
    else if (th->lost_older && tt->nevents)
        ob_printf(o, " (older ones %s)", dec_lost_why(th));
    else if (th->lost_filtered && !th->nevents) /* all of them older than the start time */
        ob_printf(o, " (its %llu older ring items %s)", (unsigned long long)rt->st.n_dropped, dec_lost_why(th));
    if (tt->ncalls == 0) {
        ob_str(o, "; no calls in the generations shown\n");
    } else {
        ob_printf(o, "; last %zu calls", tt->ncalls);
        if (tt->nenc)
            ob_printf(o, " (and the %llu enclosing the first)", (unsigned long long)tt->nenc);
        ob_printf(o, ", %s:\n", d->o.wallclock ? "wall-clock times" : "start times relative to the end");
        ob_printf(o, "  %18s  %12s  %s\n", "start", "duration", "function");
        enclosing(d, tt->anc, tt->nanc, tt->lo > 0, tt->ctx ? &tt->anc_ctx : NULL, o);
        /* the calls, and between them the long waits (sched_views.c) and the
         * fatal-signal episodes (faults.c) */
        for (size_t k = 0; k < tt->ncalls; k++) {
            if (k) {
                sched_text_waits(d, th, tt->calls[k - 1].start, tt->calls[k].start, tt->calls, k, o);
                faults_print_thread(d, th, tt->calls[k - 1].start, tt->calls[k].start, o);
            }
            call_line(d, &tt->calls[k], 0, tt->lo > 0, tt->ctx ? &tt->ctx[k] : NULL, o);
        }
        sched_text_waits(d, th, tt->calls[tt->ncalls - 1].start, INT64_MAX, tt->calls, tt->ncalls, o);
        faults_print_thread(d, th, tt->calls[tt->ncalls - 1].start, INT64_MAX, o);
        if (tt->no_outer)
            ob_str(o, "  (calls made before the part read that were still running are not shown: "
                      "no whole final stack for this thread)\n");
    }
    if (rt->stack >= 0) {
        final_stack_print(d, &d->t.stacks[rt->stack], o);
        if (th->ran_on)
            ob_printf(o, "  (taken when the process died: this thread ran on, untraced, after tracing froze at the "
                         "fault; %zu call%s still open where its trace ends returned later, not on it)\n",
                      th->ran_on, th->ran_on == 1 ? "" : "s");
    }
}

/* one thread's calls (VIEW_CALLS: the whole thread, in call order): keep
 * the last N and the frames enclosing the first of them */
static void t_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n)
{
    struct text_view *T = (struct text_view *)v;
    struct tthread *tt = &T->th[th->index];
    (void)gi;
    tt->got = 1;
    size_t N = (size_t)d->o.ncalls, from = n > N ? n - N : 0;
    tt->total = n;
    tt->ncalls = n - from;
    tt->calls = xrealloc(tt->calls, tt->ncalls * sizeof *tt->calls);
    memcpy(tt->calls, s + from, tt->ncalls * sizeof *tt->calls);
    const int64_t *ub = th->slice_ub;
    for (size_t k = 0; ub && k < tt->ncalls; k++)
        if (tt->calls[k].flags & SL_BOUND)
            tt->calls[k].end = tt->calls[k].start + ub[from + k];
    const uint32_t *cx = th->slice_ctx;
    free(tt->ctx);
    tt->ctx = NULL;
    if (cx) {
        tt->ctx = xmalloc((tt->ncalls ? tt->ncalls : 1) * sizeof *tt->ctx);
        memcpy(tt->ctx, cx + from, tt->ncalls * sizeof *tt->ctx);
        tt->anc_ctx = n ? cx[from] : 0;
    }
    /* in call order the frame enclosing a call at depth k is the last call
     * before it at depth k - 1 -- made in the same context (swapcontext:
     * th->slice_ctx), another context's calls have depths of their own */
    size_t need = from ? s[from].depth : 0;
    tt->nanc = need;
    tt->anc = xrealloc(tt->anc, (need ? need : 1) * sizeof *tt->anc);
    for (size_t j = from; j > 0 && need > 0; j--)
        if (s[j - 1].depth == need - 1 && (!cx || cx[j - 1] == cx[from])) {
            tt->anc[--need] = s[j - 1];
            if (ub && (s[j - 1].flags & SL_BOUND))
                tt->anc[need].end = tt->anc[need].start + ub[j - 1];
        }
    if (need) { /* a saturated depth (> 65535 frames): show what was found */
        memmove(tt->anc, tt->anc + need, (tt->nanc - need) * sizeof *tt->anc);
        tt->nanc -= need;
    }
    tt->nenc = tt->nanc;
    /* the depths shown: the frames inside a marker of frames the unwinder
     * left out (and the ring does not hold) are deeper than their place in
     * the replay's stack by all but one of the frames it stands for.  Not
     * when -F counts depths from the match. */
    if (th->pre_cut_n > 1 && th->pre_cut < th->npre && !d->o.nfunc_re) {
        uint64_t extra = th->pre_cut_n - 1;
        for (int pass = 0; pass < 2; pass++) {
            struct slice *v = pass ? tt->anc : tt->calls;
            size_t nv = pass ? tt->nanc : tt->ncalls;
            for (size_t k = 0; k < nv; k++)
                if (v[k].depth > th->pre_cut)
                    v[k].depth = (uint16_t)(v[k].depth + extra > 65535 ? 65535 : v[k].depth + extra);
        }
        if (tt->nanc > th->pre_cut && tt->anc[th->pre_cut].func == th->pre[th->pre_cut])
            tt->nenc += extra;
    }
}

static void t_thread_end(struct view *v, struct dec *d, struct dthread *th)
{
    struct text_view *T = (struct text_view *)v;
    struct tthread *tt = &T->th[th->index];
    if (!tt->got) {
        tt->ncalls = tt->nanc = tt->total = 0;
        tt->nenc = 0;
        free(tt->ctx);
        tt->ctx = NULL;
    }
    tt->got = 0;
    tt->replayed = 1;
    tt->nevents = th->nevents;
    tt->lo = th->lo;
    const struct ftr_stack *fs = th->rt->stack >= 0 ? &d->t.stacks[th->rt->stack] : NULL;
    tt->no_outer = th->lo > 0 && (!fs || (fs->h.flags & FT_STKF_TRUNCATED) || d->o.sym.no_symbols);
}

int text_view_wants(const struct view *v, const struct dec *d, const struct dthread *th)
{
    (void)v;
    (void)d;
    return th->shown;
}

size_t text_view_calls(const struct view *v, const struct dthread *th)
{
    const struct text_view *T = (const struct text_view *)v;
    return T->th[th->index].ncalls;
}

static int t_begin(struct view *v, struct dec *d)
{
    struct text_view *T = (struct text_view *)v;
    T->nth = d->nth;
    T->th = xcalloc(d->nth, sizeof *T->th);
    return 0;
}

static int t_end(struct view *v, struct dec *d)
{
    struct text_view *T = (struct text_view *)v;
    struct outbuf ob, *o = &ob;
    if (ob_open(o, 1, 1 << 16))
        xalloc_die();
    if (d->o.summary) /* after the summary */
        ob_char(o, '\n');
    header(T, d, o);
    size_t shown = 0, skipped = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < d->nth; i++) {
            struct dthread *th = &d->th[i];
            int crashed = th->rt->tid == d->crash_tid;
            if ((pass == 0) != crashed || !th->shown)
                continue;
            if (!th->nevents && th->rt->has_stat && th->rt->st.state == FT_THR_IGNORED) {
                skipped++; /* e.g. the runtime's own housekeeping thread */
                continue;
            }
            if (d->o.max_threads_text && shown >= (size_t)d->o.max_threads_text) {
                ob_printf(o, "\n(%zu more threads not shown; see --threads)\n", d->nth - shown);
                return ob_close(o);
            }
            one_thread(d, th, &T->th[i], o);
            shown++;
        }
    if (skipped)
        ob_printf(o, "\n(%zu ignored threads without events not shown)\n", skipped);
    return ob_close(o);
}

static void t_destroy(struct view *v)
{
    struct text_view *T = (struct text_view *)v;
    for (size_t i = 0; i < T->nth; i++) {
        free(T->th[i].calls);
        free(T->th[i].ctx);
        free(T->th[i].anc);
    }
    free(T->th);
    free(T);
}

static const struct view_ops text_ops = {
    .begin = t_begin, .slices = t_slices, .thread_end = t_thread_end, .end = t_end, .destroy = t_destroy,
};

struct view *text_view_new(void)
{
    struct text_view *T = xcalloc(1, sizeof *T);
    T->v.ops = &text_ops;
    T->v.kind = VIEW_CALLS;
    return &T->v;
}
