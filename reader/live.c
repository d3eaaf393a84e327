/* live.c -- the trace out of a live process (see live.h) */
#define _GNU_SOURCE
#include "live.h"
#include "funtrace_sched.h"
#include "elfinfo.h"
#include "maps.h"
#include "procmem.h"
#include "rootfind.h"
#include "unwind.h"
#include "util.h"

#include <dirent.h>
#include <stdarg.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct live {
    int pid;
    struct root_range *xr;  /* executable mappings */
    size_t nxr;
    int verbose;
    struct ce_maps maps;
    struct root_range *wr;
    size_t nwr;
    struct root_range *anon; /* private anonymous mappings: untouched pages are not read (procmem.h) */
    size_t nanon;
    struct procmem pm;
    uint8_t *scratch;
    size_t scratch_len;
    uint32_t max_frames;    /* ft_live_opts.max_frames */
};

static size_t live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct live *l = ctx;
    size_t done = 0;
    while (done < len) {
        /* the part in (or before) the next private anonymous mapping */
        uint64_t a = addr + done, end = addr + len;
        int anon = 0;
        for (size_t i = 0; i < l->nanon; i++) {
            if (l->anon[i].end <= a) continue;
            if (l->anon[i].start <= a) {
                anon = 1;
                if (l->anon[i].end < end) end = l->anon[i].end;
            } else if (l->anon[i].start < end) {
                end = l->anon[i].start;
            }
            break;
        }
        size_t n = (size_t)(end - a);
        size_t got = procmem_read(&l->pm, a, (uint8_t *)buf + done, n, anon);
        done += got;
        if (got < n) break;
    }
    return done;
}

static void *live_scratch(void *ctx, size_t len)
{
    struct live *l = ctx;
    if (len > l->scratch_len) {
        void *p = realloc(l->scratch, len);
        if (!p) return NULL; /* rawwrite falls back to reading twice */
        l->scratch = p;
        l->scratch_len = len;
    }
    return l->scratch;
}

static void set_problem(struct ft_emit_stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_problem(struct ft_emit_stats *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->problem, sizeof st->problem, fmt, ap);
    va_end(ap);
}

/* /proc/PID/maps -> file mappings + writable ranges */
static int read_maps(struct live *l, struct ft_emit_stats *st)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", l->pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        set_problem(st, errno == ENOENT ? "no such process" : "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    struct ce_buf text = { 0 };
    size_t got;
    do {
        ce_buf_reserve(&text, 65536);
        got = fread(text.p + text.len, 1, text.cap - text.len - 1, f);
        text.len += got;
    } while (got > 0);
    fclose(f);
    text.p[text.len] = 0;
    maps_parse_text(&l->maps, (char *)text.p, &l->wr, &l->nwr, &l->xr, &l->nxr, &l->anon, &l->nanon);
    ce_buf_free(&text);
    return 0;
}

static int live_is_exec(void *ctx, uint64_t addr)
{
    const struct live *l = ctx;
    for (size_t i = 0; i < l->nxr; i++)
        if (addr >= l->xr[i].start && addr < l->xr[i].end) return 1;
    return 0;
}

static uint64_t live_auxv(int pid, uint64_t type)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    uint64_t v[2], r = 0;
    while (read(fd, v, sizeof v) == sizeof v) {
        if (v[0] == type) { r = v[1]; break; }
        if (v[0] == AT_NULL) break;
    }
    close(fd);
    return r;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* ---- stacks (--stacks): stop every thread with PTRACE_SEIZE+INTERRUPT ---- */

struct lthr {
    int tid;
    int seized, stopped;
    uint64_t regs[FT_NREGS];
};

static int list_tasks(int pid, struct lthr **out)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int tid = atoi(e->d_name);
        if (tid <= 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = ce_xrealloc(*out, (size_t)cap * sizeof **out);
        }
        memset(&(*out)[n], 0, sizeof **out);
        (*out)[n++].tid = tid;
    }
    closedir(d);
    /* deterministic order: by tid */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (*out)[j - 1].tid > (*out)[j].tid; j--) {
            struct lthr t = (*out)[j];
            (*out)[j] = (*out)[j - 1];
            (*out)[j - 1] = t;
        }
    return n;
}

static int live_stacks(struct live *l, const struct ft_reader *rd, const struct ft_writer *w,
                       struct ft_emit_stats *st)
{
    struct lthr *t = NULL;
    int n = list_tasks(l->pid, &t);
    for (int i = 0; i < n; i++) {
        if (ptrace(PTRACE_SEIZE, t[i].tid, 0, 0) != 0) {
            ce_note("thread %d: cannot ptrace it: %s; no stack", t[i].tid, strerror(errno));
            continue;
        }
        t[i].seized = 1;
        ptrace(PTRACE_INTERRUPT, t[i].tid, 0, 0);
    }
    /* wait for the stops, 2 s in all (frozen tasks never stop) */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int pending = 0;
    for (int i = 0; i < n; i++) pending += t[i].seized;
    while (pending > 0) {
        int status;
        pid_t r = waitpid(-1, &status, __WALL | WNOHANG);
        if (r > 0) {
            for (int i = 0; i < n; i++)
                if (t[i].tid == r && t[i].seized && !t[i].stopped) {
                    if (WIFSTOPPED(status)) { t[i].stopped = 1; pending--; }
                    else if (WIFEXITED(status) || WIFSIGNALED(status)) { t[i].seized = 0; pending--; }
                }
            continue;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > 2000000000L) break;
        struct timespec ms = { 0, 2000000 };
        nanosleep(&ms, NULL);
    }
    size_t max_frames = l->max_frames ? l->max_frames : CE_MAX_FRAMES;
    uint64_t *pcs = ce_xmalloc(sizeof(uint64_t) * max_frames);
    struct ce_unwinder *u = ce_unwinder_new(rd, &l->maps, live_is_exec, l);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!t[i].stopped) {
            if (t[i].seized) ce_note("thread %d did not stop (frozen?); no stack", t[i].tid);
            continue;
        }
        struct user_regs_struct ur;
        if (ptrace(PTRACE_GETREGS, t[i].tid, 0, &ur) == 0) {
            memcpy(t[i].regs, &ur, sizeof t[i].regs);
            struct ce_unwind_info ui;
            size_t nf = ce_unwind(u, t[i].regs, pcs, max_frames, &ui);
            if (rc == 0)
                rc = ce_emit_stack(w, st, (uint32_t)t[i].tid, FT_UNW_PTRACE, ce_unwind_flags(&ui), t[i].regs, pcs,
                                   (uint32_t)nf, &ui);
        }
        ptrace(PTRACE_DETACH, t[i].tid, 0, 0);
    }
    ce_unwinder_free(u);
    free(pcs);
    free(t);
    return rc;
}

/* the tids of the thread records emitted (ft_source_info.on_thread) */
struct tidlist {
    uint32_t *t;
    size_t n, cap;
};

static void tid_collect(void *ctx, uint32_t tid)
{
    struct tidlist *l = ctx;
    if (ce_grow((void **)&l->t, l->n, &l->cap, sizeof *l->t, 64) == 0) l->t[l->n++] = tid;
}

int ft_live_extract(int pid, const struct ft_live_opts *opts, const struct ft_writer *w,
                    struct ft_emit_stats *st_out)
{
    struct ft_emit_stats st_local;
    struct ft_emit_stats *st = st_out ? st_out : &st_local;
    memset(st, 0, sizeof *st);
    int saved_verbose = ce_verbose;
    if (opts && opts->verbose) ce_verbose = 1;
    struct live l;
    memset(&l, 0, sizeof l);
    l.pid = pid;
    procmem_open(&l.pm, pid, -1);
    int rc;
    struct ft_reader rd = { &l, live_read, NULL }; /* (live_read itself skips untouched pages) */
    if (pid <= 0) {
        set_problem(st, "invalid pid %d", pid);
        rc = FT_EXIT_BADINPUT;
        goto out;
    }
    if (read_maps(&l, st) != 0) {
        rc = FT_EXIT_BADINPUT;
        goto out;
    }
    /* can we read it at all? */
    {
        uint8_t b;
        int ok = 0;
        errno = 0;
        for (size_t i = 0; i < l.nwr && !ok; i++) ok = live_read(&l, l.wr[i].start, &b, 1) == 1;
        if (!ok && l.nwr) {
            set_problem(st, "cannot read the process's memory: %s", errno ? strerror(errno) : "unreadable");
            rc = errno == ESRCH ? FT_EXIT_BADINPUT : FT_EXIT_BADINPUT;
            goto out;
        }
    }
    maps_finish(&l.maps, &rd, live_auxv(pid, AT_SYSINFO_EHDR));
    char exe[4096], exe_file[64];
    snprintf(exe_file, sizeof exe_file, "/proc/%d/exe", pid);
    ssize_t el = readlink(exe_file, exe, sizeof exe - 1);
    if (el > 0) exe[el] = 0;
    else exe[0] = 0;
    struct root_search rs;
    memset(&rs, 0, sizeof rs);
    rs.rd = &rd;
    rs.maps = &l.maps;
    rs.exe = exe[0] ? exe : NULL;
    rs.exe_file = exe_file;
    rs.writable = l.wr;
    rs.nwritable = l.nwr;
    uint64_t at_entry = live_auxv(pid, AT_ENTRY);
    struct elf_info ei;
    char err[256];
    if (at_entry && elf_info_load(exe_file, NULL, &ei, err, sizeof err) == 0 && ei.entry) {
        rs.exe_bias = at_entry - ei.entry;
        rs.exe_bias_ok = 1;
    }
    struct root_found rf;
    if (root_find(&rs, &rf) != 0) {
        set_problem(st, "%s: %s", rf.runtime_seen ? "the funtrace runtime is linked but holds no trace"
                                                  : "no funtrace trace in this process (not a funtrace-instrumented program?)",
                    rf.why_not[0] ? rf.why_not : "no root found");
        rc = FT_EXIT_NOTRACE;
        goto out;
    }
    if (rf.warning[0]) ce_note("%s", rf.warning);
    ce_note("pid %d: %s", pid, rf.how);
    struct ce_buf mp = { 0 };
    maps_payload(&l.maps, &mp);
    struct ft_source_info si;
    memset(&si, 0, sizeof si);
    si.source = FT_SRC_LIVE;
    si.pid = (uint64_t)pid;
    si.mappings = mp.p;
    si.mappings_len = mp.len;
    si.taken_tsc = rdtsc();
    si.live = 1;
    si.extra_flags = (rf.by_scan ? FT_RAWF_ROOT_BY_SCAN : 0) | (opts ? opts->extra_flags : 0);
    si.get_scratch = live_scratch;
    si.scratch_ctx = &l;
    struct tidlist tl = { NULL, 0, 0 };
    si.on_thread = tid_collect;
    si.on_thread_ctx = &tl;
    int e = ft_raw_emit(&rd, rf.addr, &si, w, st);
    /* the scheduling events of its threads up to now (FORMAT.md 2.6) */
    if (e == 0) {
        int sst;
        e = ft_sched_write_live(w, st, getenv(FT_SCHED_ENV), (uint64_t)pid, tl.t, tl.n, 0, rdtsc(), &sst);
        ce_note("pid %d: scheduling events: %s", pid, sst == FT_SCHED_OK ? "captured" : "none");
    }
    free(tl.t);
    ce_buf_free(&mp);
    free(l.scratch);
    l.scratch = NULL;
    if (e == -2) {
        rc = FT_EXIT_NOTRACE;
        goto out;
    }
    if (e == 0 && opts && opts->stacks) {
        l.max_frames = opts->max_frames;
        e = live_stacks(&l, &rd, w, st);
    }
    if (e == 0) e = ft_raw_end(w, st);
    if (e != 0) {
        set_problem(st, "cannot write the output: %s", strerror(errno));
        rc = FT_EXIT_WRITE;
        goto out;
    }
    ce_note("pid %d: wrote %llu bytes: %u thread(s), %llu event(s); %llu untouched page(s) not read", pid,
            (unsigned long long)st->bytes, st->nthreads, (unsigned long long)st->nevents,
            (unsigned long long)l.pm.zero_pages);
    rc = (st->header_flags & FT_RAWF_PARTIAL) ? FT_EXIT_PARTIAL : FT_EXIT_OK;
    if (rc == FT_EXIT_OK) st->problem[0] = 0;
out:
    maps_free(&l.maps);
    free(l.wr);
    free(l.xr);
    free(l.anon);
    free(l.scratch);
    procmem_close(&l.pm);
    ce_verbose = saved_verbose;
    return rc;
}
