/*
 * decode.c -- the decoding pipeline (see decode.h).
 */
#define _GNU_SOURCE
#include "decode.h"
#include "faults.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "decstate.h"
#include "gencuts.h"
#include "genestimate.h"
#include "replay.h"
#include "ringevents.h"
#include "outfile.h"
#include "outputs.h"
#include "textfmt.h"
#include "textwindow.h"
#include "tracefacts.h"
#include "views.h"
#include "xalloc.h"

/* A mapped input file that shrinks while it is read (another program
 * truncates or rewrites it in place) makes the next read past its new end
 * raise SIGBUS: one line that says so, the output files being written
 * removed, exit EXIT_BAD_INPUT.  A SIGBUS anywhere else is not ours. */
static char bus_msg[512];
static size_t bus_len;
static const struct ftr_src *bus_src;

static void on_input_bus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (ftr_src_window_has(bus_src, si->si_addr)) {
        outfile_drop_all();
        ssize_t w = write(2, bus_msg, bus_len);
        (void)w;
        _exit(EXIT_BAD_INPUT);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_input_bus(const struct ftr_src *src, const char *input)
{
    if (!src->named || !src->win)
        return;
    int n = snprintf(bus_msg, sizeof bus_msg,
                     "funtrace-decode: %s: the file shrank while it was being read (another program truncated or "
                     "rewrote it): decode a copy of it once it is complete\n",
                     strcmp(input, "-") ? input : "stdin");
    bus_len = n < 0 ? 0 : (size_t)n < sizeof bus_msg ? (size_t)n : sizeof bus_msg - 1;
    if (bus_len && bus_msg[bus_len - 1] != '\n')
        bus_msg[bus_len - 1] = '\n';
    bus_src = src;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_input_bus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

static void raw_warn(void *ctx, const char *msg)
{
    dec_warn(ctx, "warning: %s", msg);
}

static void sym_warn(void *ctx, const char *msg)
{
    dec_warn(ctx, "%s", msg);
}

static int gen_cmp(const void *a, const void *b)
{
    const struct ft_gen *x = a, *y = b;
    return x->gen < y->gen ? -1 : x->gen > y->gen;
}

static int64_t clamp62(uint64_t v)
{
    return v > (1ull << 62) ? (int64_t)(1ull << 62) : (int64_t)v;
}

static void build_gens(struct dec *d)
{
    const struct ftr_trace *t = &d->t;
    struct ft_gen *v = xcalloc(t->ngens, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < t->ngens; i++)
        if ((t->gens[i].flags & FT_GENF_VALID) && t->gens[i].start_tsc)
            v[n++] = t->gens[i];
    qsort(v, n, sizeof *v, gen_cmp);
    size_t m = 0; /* drop duplicates and boundaries going back in time */
    for (size_t i = 0; i < n; i++) {
        if (m && (v[i].gen == v[m - 1].gen || v[i].start_tsc < v[m - 1].start_tsc)) {
            dec_warn(d, "warning: generation record %llu is inconsistent and was ignored",
                     (unsigned long long)v[i].gen);
            continue;
        }
        v[m++] = v[i];
    }
    d->gens = xcalloc(m + 1, sizeof *d->gens);
    if (!m) {
        struct dgen *g = &d->gens[0];
        g->synthetic = 1;
        ft_clock_init(&g->clk, 0, 0, d->tsc_hz);
        g->start_ns = INT64_MIN / 4;
        g->end_ns = INT64_MAX / 4;
        g->space = sym_space(d->sym, 0, 1);
        d->ngens = 1;
        free(v);
        return;
    }
    /* events older than the oldest record */
    struct dgen *pre = &d->gens[0];
    pre->synthetic = 1;
    pre->gen = v[0].gen ? v[0].gen - 1 : 0;
    pre->space = sym_space(d->sym, pre->gen, 0);
    for (size_t i = 0; i < m; i++) {
        struct dgen *g = &d->gens[i + 1];
        g->gen = v[i].gen;
        g->start_tsc = v[i].start_tsc;
        ft_clock_init(&g->clk, v[i].clk_tsc, clamp62(v[i].clk_mono_ns), v[i].tsc_hz ? v[i].tsc_hz : d->tsc_hz);
        g->start_ns = ft_clock_ns(&g->clk, g->start_tsc);
        g->wall_off = clamp62(v[i].clk_real_ns) - clamp62(v[i].clk_mono_ns);
        g->space = sym_space(d->sym, g->gen, 0);
        if (v[i].clk_real_ns) {
            d->have_wall = 1;
            d->wall_off = g->wall_off;
        }
    }
    pre->clk = d->gens[1].clk;
    pre->wall_off = d->gens[1].wall_off;
    pre->start_ns = INT64_MIN / 4;
    d->ngens = m + 1;
    for (size_t i = 0; i < d->ngens; i++) {
        struct dgen *g = &d->gens[i];
        g->end_ns = i + 1 < d->ngens ? d->gens[i + 1].start_ns : INT64_MAX / 4;
        if (g->end_ns < g->start_ns)
            g->end_ns = g->start_ns;
    }
    free(v);
}

/* a core file given instead of a raw trace: say what to run first */
static int core_hint(const char *input, const struct ftr_src *src)
{
    if (cli_input_kind(src->head, src->nhead) != CLI_IS_CORE)
        return 0;
    if (!strcmp(input, "-"))
        fprintf(stderr, "funtrace-decode: stdin: this is a core file, not a raw trace: run coreextract CORE > "
                        "trace.raw first\n");
    else
        fprintf(stderr, "funtrace-decode: %s: this is a core file, not a raw trace: run coreextract %s > "
                        "trace.raw first\n", input, input);
    return 1;
}

/* when the thread exited (its record's exit_tsc), 0 if it did not or it is not known */
static uint64_t exit_tsc(const struct ftr_thread *rt)
{
    return rt->has_stat && (rt->st.state == FT_THR_EXITED || rt->st.state == FT_THR_EVICTED) ? rt->st.exit_tsc : 0;
}

static int run(struct dec *d, struct outputs *out)
{
    struct dec_opts *o = &d->o;
    int fd = !strcmp(o->input, "-") ? 0 : open(o->input, O_RDONLY);
    char err[512];
    if (fd < 0) {
        fprintf(stderr, "funtrace-decode: cannot open %s: %s\n", o->input, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    int src_err = ftr_src_fd(&d->src, fd, err, sizeof err);
    if (core_hint(o->input, &d->src))
        return EXIT_BAD_INPUT;
    if (src_err) {
        fprintf(stderr, "funtrace-decode: %s: %s\n", o->input, err);
        return EXIT_BAD_INPUT;
    }
    catch_input_bus(&d->src, o->input);
    int rc = ftr_load(&d->src, o->sample, &d->t, raw_warn, d);
    if (rc == FTR_ENOSAMPLE) {
        fprintf(stderr, "funtrace-decode: %s: there is no sample %d in the file\n", o->input, o->sample);
        return EXIT_BAD_INPUT;
    }
    if (rc != FTR_OK || (!d->t.has_header && !d->t.tsc_hz && !d->t.nthreads)) {
        fprintf(stderr, "funtrace-decode: %s: %s\n", o->input,
                rc == FTR_OK || rc == FTR_ENOTRAW ? "not a funtrace raw file" : ftr_strerror(rc));
        if (rc == FTR_OK)
            ftr_free(&d->t);
        return EXIT_BAD_INPUT;
    }
    struct ftr_trace *t = &d->t;
    d->pid = t->has_header ? t->hdr.pid : 0;
    for (size_t i = 0; !d->pid && i < t->nthreads; i++)
        d->pid = t->threads[i].pid;
    d->tsc_hz = t->has_header && t->hdr.tsc_hz ? t->hdr.tsc_hz : t->tsc_hz;
    if (!d->tsc_hz)
        dec_warn(d, "warning: the TSC frequency is unknown: times are TSC ticks shown as ns");
    d->sampled = t->has_header && t->hdr.time_mode == FT_TIME_SAMPLED;
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].fmt == FT_FMT_SAMPLED8 || t->threads[i].fmt == FT_FMT_SAMPLED4)
            d->sampled = 1;

    d->sym = sym_new(t, &o->sym, sym_warn, d);
    if (!d->sym) {
        fprintf(stderr, "funtrace-decode: out of memory\n");
        return EXIT_BAD_INPUT;
    }
    build_gens(d);
    /* the final stacks' modules (the C library's DWARF: tens of ms) load on a
     * second thread while the rings are read */
    if (!o->sym.no_symbols && t->nstacks) {
        size_t npcs = 0;
        for (size_t k = 0; k < t->nstacks; k++)
            npcs += t->stacks[k].npcs;
        uint64_t *pcs = xcalloc(npcs, sizeof *pcs);
        for (size_t k = 0, at = 0; k < t->nstacks; at += t->stacks[k].npcs, k++)
            if (t->stacks[k].npcs)
                memcpy(pcs + at, t->stacks[k].pcs, t->stacks[k].npcs * sizeof *pcs);
        sym_warm(d->sym, d->gens[d->ngens - 1].space, pcs, npcs);
        free(pcs);
    }

    /* threads */
    d->nth = t->nthreads;
    d->th = xcalloc(d->nth, sizeof *d->th);
    d->crash_tid = t->has_crash ? t->crash.tid : 0;
    const struct ft_fault *died = dec_original_fault(t);
    if (died) /* the thread of the original fault, not of a later signal */
        d->crash_tid = died->tid;
    for (size_t k = 0; !d->crash_tid && k < t->nstacks; k++)
        if (t->stacks[k].h.flags & FT_STKF_CRASHED)
            d->crash_tid = t->stacks[k].h.tid;
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        th->rt = &t->threads[i];
        th->index = (int)i;
        th->crashed = th->rt->tid == d->crash_tid;
        /* another thread's fault froze tracing until the process died: this
         * thread's final stack is from later (replay.c) */
        th->ran_on_possible = died && (died->flags & FT_FAULTF_FROZEN) && th->rt->tid != died->tid;
    }
    if (outputs_resolve_threads(out, d))
        return EXIT_BAD_INPUT;
    /* progress (on a terminal, past a second): every replay of the rings */
    uint64_t items = 0; /* ring bytes */
    for (size_t i = 0; i < d->nth; i++)
        items += d->th[i].shown ? d->th[i].rt->n * ftr_item_size(d->th[i].rt->fmt) : 0;
    int whole = outputs_whole_rings(out);
    progress_begin(&d->prog, o->input, whole ? items * (uint64_t)(1 + outputs_replays(out)) : 0);
    d->tail_only = !whole;
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        /* only the text view: it reads the end of the rings (textwindow.c),
         * and an FT_FMT_EXACT8 ring is prepared from there (ring8.c) */
        if (!whole)
            th->lo = tw_lo(th, text_view_wants(out->text, d, th) ? TW_BASE : TW_TINY);
        cuts_compute(d, th);
    }
    /* a big part older than the oldest generation record: cut where its
     * generations began (the text view reads only the rings' ends) */
    if (whole)
        gens_estimate(d);
    /* the thread that took the fatal signal ran until tracing froze: its
     * last unstamped events (sampled time) happened before then */
    for (size_t i = 0; died && (died->flags & FT_FAULTF_FROZEN) && i < d->nth; i++)
        if (d->th[i].rt->tid == died->tid)
            d->th[i].tail_tsc = died->tsc;
    /* ... a thread that exited, until its exit; and every event of a
     * snapshot (the runtime's: it pauses the threads) is older than it */
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        const struct ftr_thread *rt = th->rt;
        if (th->tail_tsc)
            continue;
        uint64_t ex = exit_tsc(rt);
        if (ex)
            th->tail_tsc = ex;
        else if (t->has_header && t->hdr.source == FT_SRC_SNAPSHOT && t->hdr.taken_tsc)
            th->tail_tsc = t->hdr.taken_tsc;
    }
    /* then the final stacks (their symbols, maybe still loading: sym_warm) */
    for (size_t i = 0; i < d->nth; i++) {
        replay_discover(d, &d->th[i]);
        d->total_events += d->th[i].nevents;
    }
    /* contexts that moved between threads: where each went on meanwhile */
    replay_follow_moves(d);

    /* the end of the trace */
    const struct dgen *lastg = &d->gens[d->ngens - 1];
    d->end_ns = INT64_MIN / 4;
    for (size_t i = 0; i < d->nth; i++)
        if (d->th[i].nevents && d->th[i].last_ns > d->end_ns)
            d->end_ns = d->th[i].last_ns;
    if (t->has_header && t->hdr.taken_tsc && !lastg->synthetic) {
        int64_t tk = ft_clock_ns(&lastg->clk, t->hdr.taken_tsc);
        if (tk > d->end_ns && (d->end_ns < -(INT64_MAX / 4) + 1 || tk - d->end_ns < 3600ll * 1000000000))
            d->end_ns = tk;
    }
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        const struct ftr_thread *rt = th->rt;
        th->end_ns = d->end_ns;
        uint64_t ex = exit_tsc(rt);
        if (ex) {
            size_t gi = d->ngens - 1;
            while (gi > 0 && !d->gens[gi].synthetic && ex < d->gens[gi].start_tsc)
                gi--;
            int64_t e = ft_clock_ns(&d->gens[gi].clk, ex);
            if (e < th->last_ns)
                e = th->last_ns;
            if (e < th->end_ns)
                th->end_ns = e;
        }
    }

    sched_load(d); /* scheduling states (sched_states.c) */
    for (size_t i = 0; i < d->nth; i++)
        if (d->th[i].out_of_order)
            dec_warn(d, "warning: thread %llu: %llu events are stamped earlier than the event before them "
                     "(a damaged ring?); they are kept in ring order",
                     (unsigned long long)d->th[i].rt->tid, (unsigned long long)d->th[i].out_of_order);
    struct problem pr[DEC_MAX_PROBLEMS];
    size_t npr = dec_problems(d, pr, DEC_MAX_PROBLEMS), ndamage = 0;
    for (size_t i = 0; i < npr; i++)
        ndamage += pr[i].damage != 0;

    /* which generations are shown */
    size_t first_data = d->ngens;
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        for (size_t gi = 0; gi < d->ngens && gi < first_data; gi++)
            if (th->cut[gi] < th->cut[gi + 1]) {
                first_data = gi;
                break;
            }
    }
    if (first_data == d->ngens)
        first_data = d->ngens - 1;
    size_t from = first_data;
    if (o->generations > 0 && d->ngens - from > (size_t)o->generations)
        from = d->ngens - (size_t)o->generations;
    d->first_emit = (int)from;
    for (size_t gi = 0; gi < d->ngens; gi++) {
        struct dgen *g = &d->gens[gi];
        g->emit = gi >= from;
        for (size_t i = 0; i < d->nth; i++) {
            struct dthread *th = &d->th[i];
            g->nthreads_with_events += th->cut[gi] < th->cut[gi + 1];
            g->nthreads_incomplete += th->incomplete[gi];
        }
    }
    if (!d->total_events) {
        /* nothing to rebuild: say why, no JSON */
        int vrc = outputs_print_empty(out, d);
        if (!ndamage) {
            progress_end(&d->prog);
        fprintf(stderr, "funtrace-decode: %s: no trace events in the input (%zu threads)\n", o->input, d->nth);
            return vrc ? vrc : EXIT_NO_TRACE;
        }
        fprintf(stderr, "funtrace-decode: %s: no trace events could be recovered: ", o->input);
        for (size_t i = 0, k = 0; i < npr; i++)
            if (pr[i].damage)
                fprintf(stderr, "%s%s", k++ ? "; " : "", pr[i].text);
        fputc('\n', stderr);
        return vrc ? vrc : EXIT_PROBLEMS;
    }

    /* the start of what is shown, and the JSON time origin */
    const struct dgen *fg = &d->gens[from];
    d->base_ns = fg->start_ns;
    if (fg->synthetic) {
        d->base_ns = INT64_MAX;
        for (size_t i = 0; i < d->nth; i++) {
            const struct dthread *th = &d->th[i];
            /* a thread read from the end of its ring: its first event */
            int64_t f = th->lo && th->has_first ? ft_clock_ns(&fg->clk, th->first_tsc) : th->first_ns;
            if (th->nevents && f < d->base_ns)
                d->base_ns = f;
        }
    }
    d->ts_zero_ns = d->base_ns;
    if (o->wallclock && d->have_wall)
        d->ts_zero_ns = local_midnight(d->base_ns + d->wall_off) - d->wall_off;

    if (outputs_resolve_times(out, d))
        return EXIT_BAD_INPUT;
    int out_rc = outputs_write(out, d);
    if (out_rc)
        return out_rc;
    if (!whole) { /* the text view read further back: zeroed items found there too */
        npr = dec_problems(d, pr, DEC_MAX_PROBLEMS);
        for (size_t i = ndamage = 0; i < npr; i++)
            ndamage += pr[i].damage != 0;
    }

    if (ndamage) {
        fprintf(stderr, "funtrace-decode: %s: the trace is incomplete or damaged (see --summary)\n", o->input);
        return EXIT_PROBLEMS;
    }
    return EXIT_OK;
}

int decode_main(struct dec_opts *o)
{
    struct dec d;
    memset(&d, 0, sizeof d);
    d.o = *o;
    struct outputs out;
    int rc = outputs_open(&out, o) ? EXIT_BAD_INPUT : run(&d, &out);
    outputs_close(&out);
    /* release (keeps ASan's leak checker meaningful) */
    sym_free(d.sym);
    sched_free(&d);
    for (size_t i = 0; i < d.nth; i++) {
        struct dthread *th = &d.th[i];
        ev_release(th);
        free(th->cut);
        free(th->incomplete);
        free(th->by_tsc);
        replay_forget(th, 1); /* (what discovery found) */
    }
    free(d.th);
    free(d.gens);
    free(d.sl_spare);
    hm_free(&d.ctx_resumed);
    free(d.ctx_res);
    free(d.ctx_saves);
    hm_free(&d.ctx_saver);
    if (d.t.nthreads || d.t.cmdline)
        ftr_free(&d.t);
    ftr_src_close(&d.src);
    return rc;
}
