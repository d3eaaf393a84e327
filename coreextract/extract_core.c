/* extract_core.c -- extract the raw trace from a core file (see extract_core.h) */
#include "extract_core.h"
#include "progress.h"
#include "funtrace_sched.h"
#include "corefile.h"
#include "corestream.h"
#include "elfinfo.h"
#include "input.h"
#include "live.h"
#include "maps.h"
#include "rootfind.h"
#include "slimcore.h"
#include "unwind.h"
#include "util.h"

#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Warnings are said only with a trace (exit 0 or 3): a failure is one line. */
#define MAX_WARN 4
static char warns[MAX_WARN][600];
static int nwarns;

static void later(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void later(const char *fmt, ...)
{
    if (nwarns == MAX_WARN) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warns[nwarns++], sizeof warns[0], fmt, ap);
    va_end(ap);
}

static void say_warnings(void)
{
    for (int i = 0; i < nwarns; i++) ce_warn("%s", warns[i]);
    nwarns = 0;
}

static int core_is_exec(void *ctx, uint64_t addr)
{
    const struct core_seg *s = core_seg_at(ctx, addr);
    return s && (s->flags & PF_X);
}

static int write_stacks(struct core *c, struct ce_maps *maps, const struct ft_reader *rd,
                        const struct ft_writer *w, struct ft_emit_stats *st, int signalled, size_t max_frames)
{
    uint64_t *pcs = ce_xmalloc(sizeof(uint64_t) * max_frames);
    struct ce_unwinder *u = ce_unwinder_new(rd, maps, core_is_exec, c);
    int rc = 0;
    for (size_t i = 0; i < c->nthreads && rc == 0; i++) {
        struct ce_unwind_info ui;
        size_t n = ce_unwind(u, c->threads[i].regs, pcs, max_frames, &ui);
        uint32_t flags = ce_unwind_flags(&ui) | (i == 0 && signalled ? FT_STKF_CRASHED : 0);
        rc = ce_emit_stack(w, st, c->threads[i].tid, FT_UNW_LIBUNWIND, flags, c->threads[i].regs, pcs,
                           (uint32_t)n, &ui);
        ce_note("thread %u: %zu frame(s)%s", c->threads[i].tid, n, ui.truncated ? " (truncated)" : "");
        if (ui.ncut)
            ce_note("thread %u: %u more frames between #%u and the outermost %zu not kept (--max-frames %zu)",
                    c->threads[i].tid, ui.ncut, ui.cut_at, n - ui.cut_at, max_frames);
    }
    ce_unwinder_free(u);
    free(pcs);
    return rc;
}

/* the raw's writes, counted for the progress line (on a terminal, when
 * the extraction takes long) */
struct counted {
    const struct ft_writer *w;
    struct progress prog;
};

static int counted_write(void *ctx, const void *buf, size_t len)
{
    struct counted *k = ctx;
    progress_add(&k->prog, len);
    return k->w->write(k->w->ctx, buf, len);
}

/* sched: the tids of the emitted thread records and of the core's threads */
struct sched_tids {
    uint32_t *t;
    size_t n, cap;
};

static void sched_tid(void *ctx, uint32_t tid)
{
    struct sched_tids *l = ctx;
    if (ce_grow((void **)&l->t, l->n, &l->cap, sizeof *l->t, 64) == 0) l->t[l->n++] = tid;
}

static int sched_write(struct ft_sched_pending *sp, const struct core *c, struct sched_tids *l,
                       const struct ft_writer *w, struct ft_emit_stats *st)
{
    for (size_t i = 0; i < c->nthreads; i++) sched_tid(l, c->threads[i].tid);
    int status;
    int rc = ft_sched_write_pending(sp, w, st, c->psinfo_pid, l->t, l->n, &status);
    ce_note("scheduling events: %s", status == FT_SCHED_OK ? "captured" : "none");
    return rc;
}

/* Open the core: mmap a plain file, else read the stream once.  0, or the
 * exit code having printed the line. */
static int open_core(const struct ce_core_opts *o, const char *name, struct ce_input *in, struct core *c,
                     struct core_stream_stats *ss, int *truncated)
{
    memset(ss, 0, sizeof *ss);
    char err[1024];
    if (ce_input_open(o->core, o->one_pass || o->slim, in, err, sizeof err) != 0) {
        ce_error("%s: %s", name, err);
        return FT_EXIT_BADINPUT;
    }
    int rc;
    if (in->is_file) {
        rc = core_open(c, in->fd, err, sizeof err);
    } else {
        struct core_stream_opts so = { o->exe, o->stacks, o->keep_max };
        rc = core_stream_open(c, in->src, &so, ss, err, sizeof err);
        if (rc == 0) {
            ce_note("%s: input is %s, read once: %llu bytes, %llu kept (%llu of them ring-like pages kept before "
                    "the registry was read), %llu dropped; root %s", name, in->how, (unsigned long long)c->size,
                    (unsigned long long)c->kept_bytes, (unsigned long long)ss->kept_spec,
                    (unsigned long long)c->dropped_bytes,
                    ss->root_early ? (ss->root_predicted ? "where the executable's symbol said" : "found by its magic")
                                  : "not found while streaming");
            if (ss->warn[0]) later("%s: %s", name, ss->warn);
            if (ss->spec_refused)
                ce_note("%s: %llu bytes of ring-like pages dropped past --keep-max", name,
                        (unsigned long long)ss->spec_refused);
            if (ce_src_truncated(in->src)) later("%s: the compressed stream ends early; the core is truncated", name);
        }
    }
    if (rc != 0) {
        ce_error("%s: %s", name, err);
        return FT_EXIT_BADINPUT;
    }
    if (c->phnum_xnum)
        ce_note("%s: e_phnum is PN_XNUM: %llu program headers (%s)", name, (unsigned long long)c->phnum,
                !c->phnum_inferred ? "from section header 0"
                : c->phnum_mismatch ? "inferred from where the data begins: section header 0 does not agree"
                                    : "inferred from where the data begins: section header 0 is missing");
    if (c->phnum_mismatch)
        later("%s: e_phnum is PN_XNUM and section header 0 says %llu program headers, but %llu fit before the "
              "data; read %llu", name, (unsigned long long)c->phnum_sh, (unsigned long long)c->phnum_fit,
              (unsigned long long)c->phnum);
    *truncated = c->size < c->expected_size || (in->src && ce_src_truncated(in->src));
    return 0;
}

/* no root: exit 1 (a program without the runtime, or not initialised), or 2
 * when the core is cut before the trace */
static int no_root(const char *name, const struct core *c, const struct root_found *rf, int truncated)
{
    const char *why = rf->why_not[0] ? rf->why_not : "no root found";
    if (truncated && !(rf->exe_without_runtime && !rf->runtime_seen)) {
        ce_error("%s: core truncated at %llu of %llu bytes, before the funtrace trace: %s (get the "
                 "whole core, e.g. raise the core size limit)", name, (unsigned long long)c->size,
                (unsigned long long)c->expected_size, why);
        return FT_EXIT_BADINPUT;
    }
    char trunc_note[128] = "";
    if (truncated)
        snprintf(trunc_note, sizeof trunc_note, " (the core is truncated: %llu of %llu bytes)",
                 (unsigned long long)c->size, (unsigned long long)c->expected_size);
    if (rf->runtime_seen)
        ce_error("%s: the funtrace runtime is linked but no trace could be read%s: %s", name, trunc_note, why);
    else
        ce_error("%s: no funtrace trace in this core%s (not a funtrace-instrumented program?): %s", name,
                 trunc_note, why);
    return FT_EXIT_NOTRACE;
}

static int core_extract(const struct ce_core_opts *o, struct ft_sched_pending *sched)
{
    const char *name = strcmp(o->core, "-") == 0 ? "<stdin>" : o->core;
    char err[1024];
    struct ce_input in;
    nwarns = 0;
    struct core c;
    struct core_stream_stats ss;
    memset(&c, 0, sizeof c);
    int truncated = 0;
    int rc = open_core(o, name, &in, &c, &ss, &truncated);
    if (rc != 0) {
        core_close(&c);
        ce_input_close(&in);
        return rc;
    }
    ce_note("%s: %zu segment(s), %zu thread(s), %zu file mapping(s), %llu of %llu bytes present", name, c.nsegs,
            c.nthreads, c.nfiles, (unsigned long long)c.size, (unsigned long long)c.expected_size);
    if (o->slim) {
        if (core_write_slim(&c, o->slim, err, sizeof err) != 0) {
            ce_error("%s", err);
            core_close(&c);
            ce_input_close(&in);
            return FT_EXIT_WRITE;
        }
        ce_note("%s: wrote the memory kept as %s", name, o->slim);
    }
    struct ft_reader rd = { &c, core_read, NULL };

    /* mappings */
    struct ce_maps maps;
    core_load_maps(&c, &rd, &maps, c.nfiles);

    /* root */
    size_t nwr;
    struct root_range *wr = core_writable_ranges(&c, &nwr);
    struct root_search rs;
    memset(&rs, 0, sizeof rs);
    rs.rd = &rd;
    rs.maps = &maps;
    rs.exe = core_exe_path(&c);
    rs.exe_file = o->exe;
    rs.writable = wr;
    rs.nwritable = nwr;
    /* exe bias from AT_ENTRY - e_entry (PIE and non-PIE) */
    uint64_t at_entry = core_auxv(&c, AT_ENTRY);
    struct elf_info ei;
    const char *exe_file = o->exe ? o->exe : rs.exe;
    if (exe_file && at_entry && elf_info_load(exe_file, NULL, &ei, err, sizeof err) == 0 && ei.entry) {
        rs.exe_bias = at_entry - ei.entry;
        rs.exe_bias_ok = 1;
    }
    struct root_found rf;
    if (root_find(&rs, &rf) != 0) {
        free(wr);
        maps_free(&maps);
        rc = no_root(name, &c, &rf, truncated);
        core_close(&c);
        ce_input_close(&in);
        return rc;
    }
    free(wr);
    if (rf.warning[0]) later("%s", rf.warning);
    ce_note("%s", rf.how);

    /* output */
    struct ce_out out;
    int orc = ce_out_open(&out, o->out, err, sizeof err);
    if (orc != 0) {
        ce_error("%s", err);
        ce_out_abort(&out);
        maps_free(&maps);
        core_close(&c);
        ce_input_close(&in);
        return orc;
    }
    if (in.is_file && c.map) { /* the rings are the core's bytes: copied file to file */
        out.o->src_map = c.map;
        out.o->src_len = c.size;
        out.o->src_fd = in.fd;
    }
    struct ce_buf mp = { 0 };
    maps_payload(&maps, &mp);
    struct ft_raw_crash crash;
    int signalled = core_crash(&c, &crash);
    struct ft_source_info si;
    memset(&si, 0, sizeof si);
    si.source = FT_SRC_CORE;
    si.crash = signalled ? &crash : NULL;
    si.mappings = mp.p;
    si.mappings_len = mp.len;
    si.extra_flags = rf.by_scan ? FT_RAWF_ROOT_BY_SCAN : 0;
    si.map = core_map;
    si.map_ctx = &c;
    struct ft_emit_stats st;
    memset(&st, 0, sizeof st);
    struct sched_tids stids = { NULL, 0, 0 };
    si.on_thread = sched_tid;
    si.on_thread_ctx = &stids;
    struct counted cw = { &out.w, { 0 } };
    struct ft_writer w = { &cw, counted_write };
    progress_begin(&cw.prog, "writing the trace", 0);
    c.dropped_hit = 0;
    int e = ft_raw_emit(&rd, rf.addr, &si, &w, &st);
    uint64_t dropped_hit = c.dropped_hit; /* the trace needed memory the one-pass read dropped */
    if (e == 0 && sched) e = sched_write(sched, &c, &stids, &w, &st);
    free(stids.t);
    if (e == 0 && o->stacks) e = write_stacks(&c, &maps, &rd, &w, &st, signalled,
                                              o->max_frames ? o->max_frames : CE_MAX_FRAMES) ? -1 : 0;
    if (e == 0) e = ft_raw_end(&w, &st);
    progress_end(&cw.prog);
    ce_buf_free(&mp);
    maps_free(&maps);
    if (e == -2) { /* cannot happen: root was checked */
        ce_error("%s: %s", name, st.problem);
        ce_out_abort(&out);
        rc = FT_EXIT_NOTRACE;
    } else if (e != 0 || ce_out_commit(&out, err, sizeof err) != 0) {
        if (e != 0) snprintf(err, sizeof err, "cannot write the output: %s", strerror(out.o->err));
        ce_error("%s", err);
        ce_out_abort(&out);
        rc = FT_EXIT_WRITE;
    } else {
        ce_note("wrote %llu bytes: %u thread(s), %llu event(s), %u module(s), %u generation(s)",
                (unsigned long long)st.bytes, st.nthreads, (unsigned long long)st.nevents, st.nmodules, st.ngens);
        say_warnings();
        char note[768];
        if (ce_trace_note(&st, c.size, truncated ? c.expected_size : 0, note, sizeof note)) {
            char one[192] = "";
            if (dropped_hit)
                snprintf(one, sizeof one, "; read in one pass, memory at %#llx was dropped before the registry "
                         "or root pointing to it arrived (give coreextract the core as a file%s)",
                         (unsigned long long)dropped_hit, ss.spec_refused ? ", or raise --keep-max" : "");
            ce_error("%s: %s%s", name, note, one);
            rc = FT_EXIT_PARTIAL;
        } else {
            if (note[0]) ce_warn("%s: %s", name, note);
            rc = FT_EXIT_OK;
        }
        ce_out_abort(&out); /* frees; the committed file stays */
    }
    core_close(&c);
    ce_input_close(&in);
    return rc;
}

int ce_core_extract(const struct ce_core_opts *o)
{
    /* sched: a core_pattern pipe handler takes every task's scheduling events
     * now, before reading the core, while the dying process's are still in
     * the tracefs buffer; its threads' are kept once the core says who they
     * are (FORMAT.md 2.6) */
    struct ft_sched_pending *sched = !strcmp(o->core, "-") ? ft_sched_capture_all(getenv(FT_SCHED_ENV)) : NULL;
    int rc = core_extract(o, sched);
    ft_sched_pending_free(sched);
    return rc;
}
