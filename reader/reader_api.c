/*
 * reader_api.c -- funtrace_reader.h: one extraction behind an opaque handle,
 * over the same code coreextract uses (corefile.c, maps.c, rootfind.c,
 * rawwrite*.c, util.c).  What this file adds is only what a caller that
 * cannot pass C structs needs: the memory adapter (core: only what the file
 * holds; an all-or-nothing read narrowed to its readable prefix; rings read
 * once and kept), the file output, and the report.
 */
#define _GNU_SOURCE
#include "funtrace_reader.h"
#include "corefile.h"
#include "live.h"
#include "maps.h"
#include "procmem.h"
#include "rootfind.h"
#include "unwind.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(FTR_OK == FT_EXIT_OK && FTR_NOTRACE == FT_EXIT_NOTRACE && FTR_BADINPUT == FT_EXIT_BADINPUT &&
               FTR_PARTIAL == FT_EXIT_PARTIAL && FTR_WRITE == FT_EXIT_WRITE, "the coreextract exit codes");

#define PAGE 4096u
#define CACHE_BUDGET (256u << 20) /* rings kept between rawwrite's two passes */

struct stack {
    uint32_t tid, unwinder, flags, n;
    uint64_t regs[FT_NREGS];
    uint64_t *pcs;
    size_t added;                 /* insertion order */
    struct ce_unwind_info cut;    /* more than CE_MAX_FRAMES: the frames left out */
};

struct cached { uint64_t addr; size_t len; uint8_t *buf; };

enum kind { FTR_CORE = 1, FTR_STOPPED, FTR_LIVE };

struct ftr {
    int kind;
    ftr_read_fn read;
    void *ctx;
    struct ft_reader rd;          /* the adapter below */
    struct procmem pm;            /* ftr_local_pid: untouched ring pages not read */
    int have_pm;
    char msg[1024];
    /* what the source says */
    int core_ok;
    int core_fd;
    struct core core;
    char *core_path;
    struct ce_maps maps;
    int maps_ok;
    struct root_range *wr;
    size_t nwr;
    int have_crash;
    struct ft_raw_crash crash;
    /* the root */
    int root_ok, by_scan;
    uint64_t root;
    /* stacks */
    struct stack *stacks;
    size_t nstacks, capstacks;
    /* rings, read once (ft_source_info.map / get_scratch) */
    struct cached *cache;
    size_t ncache, capcache, cache_bytes;
    uint8_t *spill;               /* beyond the budget: the latest ring only */
    size_t spill_len;
    /* after ftr_write */
    struct ft_emit_stats st;
    char *path;
    char report[2048];
};

static void set_msg(struct ftr *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(struct ftr *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->msg, sizeof h->msg, fmt, ap);
    va_end(ap);
    for (char *p = h->msg; *p; p++)
        if (*p == '\n') *p = ' ';
}

unsigned ftr_api_version(void) { return FTR_API_VERSION; }
const char *ftr_root_symbol(void) { return FT_ROOT_SYMBOL; }
unsigned ftr_stack_max(void) { return CE_MAX_FRAMES; }

const char *ftr_stack_regs(void)
{
    return "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
           "fs_base gs_base ds es fs gs";
}

const char *ftr_message(const struct ftr *h) { return h ? h->msg : "no handle"; }

/* ---- memory ----------------------------------------------------------------- */

/* The caller's read, which may fail as a whole: the readable prefix of
 * [addr, addr+len), found page by page (bisection) when the whole fails. */
static size_t prefix_read(struct ftr *h, uint64_t addr, uint8_t *buf, size_t len)
{
    size_t got = h->read(h->ctx, addr, buf, len);
    if (got >= len) return len;
    if (got > 0) return got;               /* a real prefix */
    size_t first = PAGE - (size_t)(addr % PAGE);
    if (first >= len) return 0;
    if (h->read(h->ctx, addr, buf, first) < first) return 0;
    /* [addr, addr + first + lo*PAGE) readable, ... + hi*PAGE (or len) not */
    size_t lo = 0, hi = (len - first + PAGE - 1) / PAGE;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2, n = first + mid * PAGE;
        if (n > len) n = len;
        if (h->read(h->ctx, addr, buf, n) >= n) lo = mid;
        else hi = mid;
    }
    size_t n = first + lo * PAGE;
    if (n > len) n = len;
    return h->read(h->ctx, addr, buf, n) >= n ? n : 0;   /* the bisection may have left other bytes in buf */
}

/* ft_reader over the caller's read: a core's memory is what its file holds */
static size_t adapter_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct ftr *h = ctx;
    if (len == 0) return 0;
    if (h->core_ok) len = core_held(&h->core, addr, len);
    return len ? prefix_read(h, addr, buf, len) : 0;
}

/* ring memory: with ftr_local_pid, the pages the process never wrote are
 * zeros without being read (procmem.h), the others go through the adapter */
static size_t adapter_read_ring(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct ftr *h = ctx;
    return h->have_pm ? procmem_read(&h->pm, addr, buf, len, 1) : adapter_read(h, addr, buf, len);
}

/* ft_source_info.map: a ring, read through the adapter once, all of it or
 * nothing (then rawwrite reads it in blocks, page by page).  Rings are kept
 * for rawwrite's second pass up to CACHE_BUDGET bytes; past it, only the
 * latest (rawwrite uses one view at a time, funtrace_rawwrite.h). */
static const void *adapter_map(void *ctx, uint64_t addr, size_t len)
{
    struct ftr *h = ctx;
    for (size_t i = 0; i < h->ncache; i++)
        if (h->cache[i].addr == addr && h->cache[i].len == len) return h->cache[i].buf;
    uint8_t *buf;
    int keep = h->cache_bytes + len <= CACHE_BUDGET;
    if (keep) {
        buf = malloc(len);
    } else {
        if (h->spill_len < len) {
            free(h->spill);
            h->spill = malloc(len);
            h->spill_len = h->spill ? len : 0;
        }
        buf = h->spill;
    }
    if (!buf) return NULL;
    if (adapter_read_ring(h, addr, buf, len) < len) {
        if (keep) free(buf);
        return NULL;
    }
    if (!keep) return buf;
    if (ce_grow((void **)&h->cache, h->ncache, &h->capcache, sizeof *h->cache, 16) != 0) {
        free(buf);
        return NULL;
    }
    h->cache[h->ncache++] = (struct cached){ addr, len, buf };
    h->cache_bytes += len;
    return buf;
}

/* FTR_LIVE: one copy buffer for all rings (ft_source_info.get_scratch) */
static void *adapter_scratch(void *ctx, size_t len)
{
    struct ftr *h = ctx;
    if (h->spill_len < len) {
        free(h->spill);
        h->spill = malloc(len);
        h->spill_len = h->spill ? len : 0;
    }
    return h->spill;
}

/* ---- the handle --------------------------------------------------------------- */

struct ftr *ftr_new(const char *kind_name, ftr_read_fn read, void *ctx)
{
    int kind = !kind_name ? 0 : !strcmp(kind_name, "core") ? FTR_CORE : !strcmp(kind_name, "stopped") ? FTR_STOPPED
             : !strcmp(kind_name, "live") ? FTR_LIVE : 0;
    if (!read || !kind) return NULL;
    struct ftr *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->kind = kind;
    h->read = read;
    h->ctx = ctx;
    h->rd.ctx = h;
    h->rd.read = adapter_read;
    h->rd.read_ring = adapter_read_ring;
    h->pm.pagemap_fd = -1;
    h->core_fd = -1;
    ce_prog = "funtrace";
    return h;
}

static void drop_cache(struct ftr *h)
{
    for (size_t i = 0; i < h->ncache; i++) free(h->cache[i].buf);
    free(h->cache);
    h->cache = NULL;
    h->ncache = h->capcache = h->cache_bytes = 0;
    free(h->spill);
    h->spill = NULL;
    h->spill_len = 0;
}

void ftr_free(struct ftr *h)
{
    if (!h) return;
    drop_cache(h);
    if (h->core_ok) core_close(&h->core);
    if (h->core_fd >= 0) close(h->core_fd);
    procmem_close(&h->pm);
    free(h->core_path);
    maps_free(&h->maps);
    free(h->wr);
    for (size_t i = 0; i < h->nstacks; i++) free(h->stacks[i].pcs);
    free(h->stacks);
    free(h->path);
    free(h);
}

int ftr_core_file(struct ftr *h, const char *path)
{
    if (!h || !path || h->kind != FTR_CORE || h->core_ok) {
        if (h) set_msg(h, "ftr_core_file: %s", !path ? "no path" : h->core_ok ? "a core file was given already"
                                                                               : "not a core extraction");
        return FTR_BADINPUT;
    }
    char err[512];
    h->core_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (h->core_fd < 0) {
        set_msg(h, "cannot read core file %s: %s", path, strerror(errno));
        return FTR_BADINPUT;
    }
    if (core_open(&h->core, h->core_fd, err, sizeof err) != 0) {
        set_msg(h, "%s: %s", path, err);
        core_close(&h->core);
        close(h->core_fd);
        h->core_fd = -1;
        return FTR_BADINPUT;
    }
    h->core_ok = 1;
    h->core_path = ce_xstrdup(path);
    core_load_maps(&h->core, &h->rd, &h->maps, h->core.nfiles);
    h->maps_ok = 1;
    free(h->wr);
    h->wr = core_writable_ranges(&h->core, &h->nwr);
    h->have_crash = core_crash(&h->core, &h->crash);
    return FTR_OK;
}

int ftr_local_pid(struct ftr *h, int pid)
{
    if (!h || h->kind == FTR_CORE || pid <= 0) {
        if (h) set_msg(h, "ftr_local_pid: %s", pid <= 0 ? "no pid" : "a core is not a process");
        return FTR_BADINPUT;
    }
    procmem_close(&h->pm);
    procmem_open(&h->pm, pid, -1);
    h->pm.read = adapter_read;
    h->pm.read_ctx = h;
    h->have_pm = h->pm.pagemap_fd >= 0;
    return FTR_OK;
}

int ftr_proc_maps(struct ftr *h, const char *text, size_t len)
{
    if (!h || !text || h->kind == FTR_CORE) {
        if (h) set_msg(h, "ftr_proc_maps: %s", !text ? "no text" : "a core's mappings come from ftr_core_file");
        return FTR_BADINPUT;
    }
    char *t = malloc(len + 1);
    if (!t) {
        set_msg(h, "out of memory");
        return FTR_BADINPUT;
    }
    memcpy(t, text, len);
    t[len] = 0;
    maps_free(&h->maps);
    free(h->wr);
    h->wr = NULL;
    h->nwr = 0;
    maps_parse_text(&h->maps, t, &h->wr, &h->nwr, NULL, NULL, NULL, NULL);
    free(t);
    maps_finish(&h->maps, &h->rd, 0);
    h->maps_ok = 1;
    return FTR_OK;
}

void ftr_signal(struct ftr *h, int signo, int code, int err, uint32_t tid, uint64_t fault_addr,
                uint32_t sender_pid)
{
    if (!h || h->kind == FTR_CORE) return;
    h->have_crash = signo > 0;
    if (h->have_crash) ce_crash_fill(&h->crash, signo, code, err, tid, fault_addr, sender_pid);
}

int ftr_find_root(struct ftr *h, uint64_t symbol_addr)
{
    if (!h) return FTR_BADINPUT;
    h->root_ok = 0;
    char problem[600] = "";
    int rc = 0;
    if (symbol_addr) {
        rc = ft_root_check(&h->rd, symbol_addr);
        if (rc == 0) {
            h->root = symbol_addr;
            h->root_ok = 1;
            h->by_scan = 0;
            return FTR_OK;
        }
        snprintf(problem, sizeof problem, "symbol %s at %#llx: %s", FT_ROOT_SYMBOL,
                 (unsigned long long)symbol_addr, ft_root_strerror(rc));
    }
    struct root_found rf;
    if (root_scan(&h->rd, h->wr, h->nwr, &rf) == 0) {
        h->root = rf.addr;
        h->root_ok = 1;
        h->by_scan = 1;
        return FTR_OK;
    }
    if (problem[0] && rc == FT_ROOT_EMAGIC)
        set_msg(h, "funtrace runtime not initialized in this process (%s)", problem);
    else if (problem[0])
        set_msg(h, "no valid funtrace root (%s)", problem);
    else
        set_msg(h, "no funtrace runtime in this process");
    return FTR_NOTRACE;
}

int ftr_add_stack(struct ftr *h, const char *unwinder, uint32_t tid, int truncated, const uint64_t *regs,
                  const uint64_t *pcs, uint32_t n)
{
    if (!h) return FTR_BADINPUT;
    uint32_t unw = !unwinder ? 0 : !strcmp(unwinder, "gdb") ? FT_UNW_GDB
                 : !strcmp(unwinder, "libunwind") ? FT_UNW_LIBUNWIND : !strcmp(unwinder, "ptrace") ? FT_UNW_PTRACE : 0;
    if (!unw || (n && !pcs)) {
        set_msg(h, "ftr_add_stack: %s", !unw ? "unknown unwinder" : "no pcs");
        return FTR_BADINPUT;
    }
    uint32_t cut_at = 0, ncut = 0;
    if (n > CE_MAX_FRAMES) { /* keep the innermost and the outermost frames (unwind.h) */
        cut_at = CE_MAX_FRAMES - CE_KEEP_OUTER(CE_MAX_FRAMES);
        ncut = n - CE_MAX_FRAMES;
    }
    if (ce_grow((void **)&h->stacks, h->nstacks, &h->capstacks, sizeof *h->stacks, 16) != 0) {
        set_msg(h, "out of memory");
        return FTR_BADINPUT;
    }
    struct stack *s = &h->stacks[h->nstacks];
    memset(s, 0, sizeof *s);
    s->pcs = malloc((n ? (ncut ? CE_MAX_FRAMES : n) : 1) * sizeof *s->pcs);
    if (!s->pcs) {
        set_msg(h, "out of memory");
        return FTR_BADINPUT;
    }
    s->tid = tid;
    s->unwinder = unw;
    s->flags = truncated ? FT_STKF_TRUNCATED : 0;
    s->n = ncut ? CE_MAX_FRAMES : n;
    s->cut.cut_at = cut_at;
    s->cut.ncut = ncut;
    if (regs) memcpy(s->regs, regs, sizeof s->regs);
    if (ncut) {
        memcpy(s->pcs, pcs, cut_at * sizeof *pcs);
        memcpy(s->pcs + cut_at, pcs + cut_at + ncut, (CE_MAX_FRAMES - cut_at) * sizeof *pcs);
    } else if (n) {
        memcpy(s->pcs, pcs, n * sizeof *pcs);
    }
    s->added = h->nstacks++;
    return FTR_OK;
}

/* a stack's place: the core's thread order, else the order it was added */
static size_t stack_rank(const struct ftr *h, const struct stack *s)
{
    if (h->core_ok)
        for (size_t i = 0; i < h->core.nthreads; i++)
            if (h->core.threads[i].tid == s->tid) return i;
    return (h->core_ok ? h->core.nthreads : 0) + s->added;
}

static const struct ftr *sort_h;
static int stack_cmp(const void *a, const void *b)
{
    size_t x = stack_rank(sort_h, a), y = stack_rank(sort_h, b);
    return x < y ? -1 : x > y;
}

static uint64_t now_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* ---- writing --------------------------------------------------------------- */

static int emit(struct ftr *h, struct ce_fdout *o)
{
    struct ft_writer w = { o, ce_fdout_write };
    struct ce_buf mp = { 0 };
    if (h->maps_ok) maps_payload(&h->maps, &mp);
    struct ft_source_info si;
    memset(&si, 0, sizeof si);
    si.source = h->kind == FTR_CORE ? FT_SRC_CORE : FT_SRC_LIVE;
    si.crash = h->have_crash ? &h->crash : NULL;
    si.mappings = mp.p;
    si.mappings_len = mp.len;
    si.extra_flags = h->by_scan ? FT_RAWF_ROOT_BY_SCAN : 0;
    if (h->kind == FTR_LIVE) {
        si.live = 1;
        si.taken_tsc = rdtsc();
        si.get_scratch = adapter_scratch;
        si.scratch_ctx = h;
    } else if (h->core_ok) {
        /* a core's rings: in place, from the core file mapped by ftr_core_file
         * (the bytes the read function would give, without copying them) */
        si.map = core_map;
        si.map_ctx = &h->core;
        if (h->core.map) { /* ... and written to the output file by the kernel (ce_fdout_write) */
            o->src_map = h->core.map;
            o->src_len = h->core.size;
            o->src_fd = h->core_fd;
        }
    } else {
        si.map = adapter_map;
        si.map_ctx = h;
        if (h->kind == FTR_STOPPED) si.taken_tsc = ft_raw_estimate_tsc(&h->rd, h->root, now_mono_ns());
    }
    memset(&h->st, 0, sizeof h->st);
    int e = ft_raw_emit(&h->rd, h->root, &si, &w, &h->st);
    ce_buf_free(&mp);
    drop_cache(h);
    if (e == -2) return FTR_NOTRACE;
    sort_h = h;
    qsort(h->stacks, h->nstacks, sizeof *h->stacks, stack_cmp);
    for (size_t i = 0; i < h->nstacks && e == 0; i++) {
        struct stack *s = &h->stacks[i];
        uint32_t flags = s->flags | (h->have_crash && s->tid == h->crash.tid ? FT_STKF_CRASHED : 0);
        e = ce_emit_stack(&w, &h->st, s->tid, s->unwinder, flags, s->regs, s->pcs, s->n, &s->cut);
    }
    if (e == 0) e = ft_raw_end(&w, &h->st);
    if (e == 0) e = ce_fdout_flush(o);
    return e == 0 ? FTR_OK : FTR_WRITE;
}

static const char *signame(int signo, char *buf, size_t len)
{
    const char *ab = signo > 0 && signo < SIGRTMIN ? sigabbrev_np(signo) : NULL;
    if (ab) snprintf(buf, len, "SIG%s", ab);
    else if (signo >= SIGRTMIN && signo <= SIGRTMAX) snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
    else snprintf(buf, len, "signal %d", signo);
    return buf;
}

static void make_report(struct ftr *h)
{
    const struct ft_emit_stats *st = &h->st;
    size_t n = 0, cap = sizeof h->report;
#define ADD(...) (n += (size_t)snprintf(h->report + n, n < cap ? cap - n : 0, __VA_ARGS__), n = n < cap ? n : cap - 1)
    ADD("wrote %s: %u thread%s, %llu event%s, %u generation%s, %llu bytes", h->path, st->nthreads,
        st->nthreads == 1 ? "" : "s", (unsigned long long)st->nevents, st->nevents == 1 ? "" : "s", st->ngens,
        st->ngens == 1 ? "" : "s", (unsigned long long)st->bytes);
    if (h->core_ok) ADD("\nfrom core %s", h->core_path);
    else ADD("\nfrom %s process", h->kind == FTR_LIVE ? "running" : "live");
    ADD(", pid %llu, root %#llx%s", (unsigned long long)st->pid, (unsigned long long)h->root,
        h->by_scan ? " (found by scanning memory)" : "");
    if (h->have_crash) {
        char sb[32];
        ADD("\nthread %u got %s", h->crash.tid, signame(h->crash.signo, sb, sizeof sb));
        if (h->crash.addr) ADD(" at %#llx", (unsigned long long)h->crash.addr);
        else if (h->crash.si_code <= 0 && h->crash.sender_pid) ADD(" sent by pid %u", h->crash.sender_pid);
    }
    char note[768];
    uint64_t size = h->core_ok ? h->core.size : 0, expected = h->core_ok ? h->core.expected_size : 0;
    if (ce_trace_note(st, size, expected, note, sizeof note) || note[0]) ADD("\nwarning: %s", note);
#undef ADD
}

int ftr_write(struct ftr *h, const char *path)
{
    if (!h) return FTR_BADINPUT;
    if (!path || !path[0]) {
        set_msg(h, "ftr_write: no path");
        return FTR_BADINPUT;
    }
    if (!h->root_ok) {
        set_msg(h, "no funtrace root (ftr_find_root first)");
        return FTR_NOTRACE;
    }
    free(h->path);
    h->path = ce_xstrdup(path);
    h->report[0] = 0;
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        set_msg(h, "out of memory");
        return FTR_WRITE;
    }
    snprintf(tmp, tl, "%s.tmp.%d", path, (int)getpid());
    struct ce_fdout *o = calloc(1, sizeof *o);
    o->fd = o ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
    if (!o || o->fd < 0) {
        set_msg(h, "cannot write %s: %s", path, strerror(o ? errno : ENOMEM));
        free(o);
        free(tmp);
        return FTR_WRITE;
    }
    int rc = emit(h, o);
    int err = o->err ? o->err : errno;
    if (close(o->fd) != 0 && rc == FTR_OK) {
        rc = FTR_WRITE;
        err = errno;
    }
    if (rc == FTR_OK && rename(tmp, path) != 0) {
        rc = FTR_WRITE;
        err = errno;
    }
    if (rc != FTR_OK) {
        unlink(tmp);
        if (rc == FTR_WRITE) set_msg(h, "cannot write %s: %s", path, strerror(err ? err : EIO));
        else set_msg(h, "%s", h->st.problem);
    } else {
        make_report(h);
        rc = (h->st.header_flags & FT_RAWF_PARTIAL) ? FTR_PARTIAL : FTR_OK;
        set_msg(h, "%s", rc == FTR_PARTIAL ? h->st.problem : "");
    }
    free(o);
    free(tmp);
    return rc;
}

const char *ftr_report(struct ftr *h) { return h ? h->report : ""; }
