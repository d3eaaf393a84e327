/*
 * json.c -- Chrome Trace Event JSON (Perfetto UI, chrome://tracing,
 * viztracer's vizviewer).
 *
 * Complete events ("X") per call, nested per thread (a child's [ts, ts+dur]
 * lies within its parent's; events are written parents first), metadata
 * ("M": process/thread names and sort order), instant events ("i") for
 * generation boundaries, ring starts and the crash, and viztracer's
 * "file_info" (function -> [file, line], file -> [source, lines]).  Times are
 * microseconds with 3 decimals (ns precision) relative to ts_zero_ns: the
 * start of the first generation shown, or with --wallclock its local
 * midnight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "decode.h"

static struct {
    struct outbuf o;
    int open;
    int64_t base;
    char **prefix; /* per thread: {"ph":"X","pid":P,"tid":T,"ts": */
    size_t *prefix_len;
    char *final;   /* the file asked for (symlinks resolved) */
    char *tmp;     /* FINAL.tmp.PID being written, renamed on success; NULL:
                      written in place (stdout, a device, a pipe) */
} J;

/* a half-written JSON is never left behind: not on a write error, not when
 * the decoder exits early (out of memory) or is interrupted */
static volatile sig_atomic_t tmp_live;
static const char *volatile tmp_path;

static void drop_tmp(void)
{
    if (tmp_live) {
        tmp_live = 0;
        unlink(tmp_path);
    }
}

static void on_fatal_signal(int sig)
{
    drop_tmp();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int open_output(const char *path)
{
    if (!strcmp(path, "-"))
        return dup(1);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return open(path, O_WRONLY); /* /dev/null, a FIFO, a terminal */
    J.final = NULL;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        J.final = realpath(path, NULL); /* replace the file, not the link */
    if (!J.final)
        J.final = xstrdup(path);
    if (asprintf(&J.tmp, "%s.tmp.%ld", J.final, (long)getpid()) < 0)
        xalloc_die();
    int fd = open(J.tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        int e = errno;
        free(J.tmp);
        free(J.final);
        J.tmp = J.final = NULL;
        errno = e;
        return -1;
    }
    static int hooked;
    if (!hooked) {
        hooked = 1;
        atexit(drop_tmp);
        static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            if (signal(sigs[i], on_fatal_signal) == SIG_IGN)
                signal(sigs[i], SIG_IGN);
    }
    tmp_path = J.tmp;
    tmp_live = 1;
    return fd;
}

static void ts(struct outbuf *o, int64_t ns)
{
    ob_us3(o, ns - J.base);
}

static void meta(struct dec *d, const char *what, uint64_t tid, const char *key, const char *sval, long ival,
                 const char *tail)
{
    struct outbuf *o = &J.o;
    ob_str(o, "{\"ph\":\"M\",\"pid\":");
    ob_u64(o, d->pid);
    ob_str(o, ",\"tid\":");
    ob_u64(o, tid);
    ob_str(o, ",\"name\":\"");
    ob_str(o, what);
    ob_str(o, "\",\"args\":{\"");
    ob_str(o, key);
    ob_str(o, "\":");
    if (sval)
        ob_json_str(o, sval, strlen(sval));
    else
        ob_i64(o, ival);
    ob_str(o, "}}");
    ob_str(o, tail);
}

static void instant(struct dec *d, uint64_t tid, char scope, int64_t ns, const char *name, const char *args)
{
    struct outbuf *o = &J.o;
    ob_str(o, "{\"ph\":\"i\",\"s\":\"");
    ob_char(o, scope);
    ob_str(o, "\",\"pid\":");
    ob_u64(o, d->pid);
    ob_str(o, ",\"tid\":");
    ob_u64(o, tid);
    ob_str(o, ",\"ts\":");
    ts(o, ns);
    ob_str(o, ",\"name\":");
    ob_json_str(o, name, strlen(name));
    if (args) {
        ob_str(o, ",\"args\":");
        ob_str(o, args);
    }
    ob_str(o, "},\n");
}

void json_instant_thread(struct dec *d, struct dthread *th, int64_t ns, const char *name, const char *args)
{
    if (J.open)
        instant(d, th->rt->tid, 't', ns, name, args);
}

static const char *thread_label(struct dec *d, struct dthread *th, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", th->rt->name[0] ? th->rt->name : "thread",
             th->rt->tid != d->crash_tid ? "" : dec_signal_snapshot(&d->t) ? " [signaled]" : " [crashed]");
    return buf;
}

int json_begin(struct dec *d, const char *path)
{
    int fd = open_output(path);
    if (fd < 0)
        return errno ? errno : EIO;
    if (ob_open(&J.o, fd, 4u << 20))
        xalloc_die();
    J.open = 1;
    J.base = d->ts_zero_ns;
    struct outbuf *o = &J.o;
    ob_str(o, "{\"traceEvents\":[\n");
    char buf[128];
    meta(d, "process_name", d->pid, "name", d->t.cmdline[0] ? d->t.cmdline : "traced process", 0, ",\n");
    J.prefix = xcalloc(d->nth, sizeof *J.prefix);
    J.prefix_len = xcalloc(d->nth, sizeof *J.prefix_len);
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        meta(d, "thread_name", th->rt->tid, "name", thread_label(d, th, buf, sizeof buf), 0, ",\n");
        meta(d, "thread_sort_index", th->rt->tid, "sort_index", NULL, th->rt->tid == d->crash_tid ? -1 : (long)i, ",\n");
        char *p;
        int n = asprintf(&p, "{\"ph\":\"X\",\"pid\":%llu,\"tid\":%llu,\"ts\":", (unsigned long long)d->pid,
                         (unsigned long long)th->rt->tid);
        if (n < 0)
            xalloc_die();
        J.prefix[i] = p;
        J.prefix_len[i] = (size_t)n;
    }
    /* generation boundaries */
    for (size_t gi = 0; gi < d->ngens; gi++) {
        const struct dgen *g = &d->gens[gi];
        if (!g->emit || g->synthetic)
            continue;
        char name[64], args[256];
        snprintf(name, sizeof name, "generation %llu", (unsigned long long)g->gen);
        char wall[64] = "";
        if (d->have_wall)
            fmt_wall(wall, sizeof wall, g->start_ns + g->wall_off, 1);
        snprintf(args, sizeof args, "{\"gen\":%llu,\"wallclock\":\"%s\",\"threads_incomplete\":%u}",
                 (unsigned long long)g->gen, wall, g->nthreads_incomplete);
        instant(d, 0, 'g', g->start_ns, name, args);
    }
    /* the crash */
    if (d->t.has_crash && d->t.crash.signo) {
        char name[96], args[256];
        const struct ft_raw_crash *c = &d->t.crash;
        snprintf(name, sizeof name, "%s at 0x%llx", sig_name(c->signo), (unsigned long long)c->addr);
        snprintf(args, sizeof args,
                 "{\"signal\":%d,\"signal_name\":\"%s\",\"si_code\":%d,\"fault_address\":\"0x%llx\","
                 "\"thread\":%u,\"sender_pid\":%u}",
                 c->signo, sig_name(c->signo), c->si_code, (unsigned long long)c->addr, c->tid, c->sender_pid);
        instant(d, c->tid ? c->tid : d->pid, 't', d->end_ns, name, args);
    }
    return 0;
}

static int thread_index(struct dec *d, struct dthread *th)
{
    return (int)(th - d->th);
}

static void flag_args(struct outbuf *o, unsigned f, int64_t ub)
{
    static const struct {
        unsigned bit;
        const char *txt;
    } names[] = {
        {SL_FROM_PREV, "\"from_previous_generation\":true"},
        {SL_TO_NEXT, "\"continues_in_next_generation\":true"},
        {SL_OPEN, "\"open_at_end\":true"},
        {SL_ABANDONED, "\"return_missing\":true"},
        {SL_UNWOUND, "\"unwound_by_exception\":true"},
        {SL_START_UNK, "\"started_before_ring\":true"},
        {SL_UNMEASURED, "\"measured\":false"},
    };
    int first = 1;
    ob_str(o, ",\"args\":{");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(f & names[i].bit))
            continue;
        if (!first)
            ob_char(o, ',');
        ob_str(o, names[i].txt);
        first = 0;
    }
    if (f & SL_BOUND) /* with "measured":false */
        ob_printf(o, ",\"upper_bound_ns\":%lld", (long long)ub);
    ob_char(o, '}');
}

void json_slices(struct dec *d, struct dthread *th, const struct slice *s, size_t n)
{
    struct outbuf *o = &J.o;
    int ti = thread_index(d, th);
    const char *pre = J.prefix[ti];
    size_t pl = J.prefix_len[ti];
    for (size_t i = 0; i < n; i++) {
        struct func *fn = sym_func(d->sym, s[i].func);
        fn->used = 1;
        size_t jl = strlen(fn->jname);
        char *p = ob_reserve(o, pl + jl + 96);
        memcpy(p, pre, pl);
        p += pl;
        p += fmt_us3(p, s[i].start - J.base);
        memcpy(p, ",\"dur\":", 7);
        p += 7;
        p += fmt_us3(p, s[i].end - s[i].start);
        o->len = (size_t)(p - o->buf);
        if (s[i].flags & ~(SL_PENDING))
            flag_args(o, s[i].flags, s[i].ub);
        p = ob_reserve(o, jl + 16);
        memcpy(p, ",\"name\":", 8);
        p += 8;
        memcpy(p, fn->jname, jl);
        p += jl;
        memcpy(p, "},\n", 3);
        p += 3;
        o->len = (size_t)(p - o->buf);
    }
}

/* viztracer's file_info: sources of the functions in the output */
static void file_info(struct dec *d)
{
    struct outbuf *o = &J.o;
    struct smap done = {0};
    uint32_t nf = sym_nfuncs(d->sym);
    ob_str(o, "\"file_info\":{\"files\":{");
    int first = 1;
    if (!d->o.no_source) {
        for (uint32_t i = 0; i < nf; i++) {
            struct func *fn = sym_func(d->sym, i);
            if (!fn->used || !fn->file || sm_get(&done, fn->file) != HMAP_NONE)
                continue;
            sm_put(&done, fn->file, 1);
            char *path = sym_subst(d->sym, fn->file);
            FILE *f = fopen(path, "rb");
            free(path);
            if (!f)
                continue;
            struct stat st;
            if (fstat(fileno(f), &st) != 0 || st.st_size > (16 << 20)) {
                fclose(f);
                continue;
            }
            char *buf = malloc((size_t)st.st_size + 1);
            size_t len = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
            fclose(f);
            if (!buf)
                continue;
            size_t lines = 0;
            for (size_t k = 0; k < len; k++)
                lines += buf[k] == '\n';
            if (len && buf[len - 1] != '\n')
                lines++;
            if (!first)
                ob_str(o, ",\n");
            first = 0;
            ob_json_str(o, fn->file, strlen(fn->file));
            ob_str(o, ":[");
            ob_json_str(o, buf, len);
            ob_char(o, ',');
            ob_u64(o, lines);
            ob_char(o, ']');
            free(buf);
        }
    }
    ob_str(o, "},\n\"functions\":{");
    first = 1;
    struct smap jdone = {0};
    for (uint32_t i = 0; i < nf; i++) {
        struct func *fn = sym_func(d->sym, i);
        if (!fn->used || !fn->file || sm_get(&jdone, fn->jname) != HMAP_NONE)
            continue;
        sm_put(&jdone, fn->jname, 1);
        if (!first)
            ob_str(o, ",\n");
        first = 0;
        ob_str(o, fn->jname);
        ob_str(o, ":[");
        ob_json_str(o, fn->file, strlen(fn->file));
        ob_char(o, ',');
        ob_u64(o, fn->line);
        ob_char(o, ']');
    }
    ob_str(o, "}}");
    sm_free(&done);
    sm_free(&jdone);
}

int json_end(struct dec *d)
{
    struct outbuf *o = &J.o;
    /* every event ends with ",\n": close the list with one without it */
    meta(d, "process_labels", d->pid, "labels", "funtrace", 0, "");
    ob_str(o, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":\"funtrace-decode\"");
    if (d->have_wall) {
        char wall[64];
        fmt_wall(wall, sizeof wall, d->ts_zero_ns + d->wall_off, 1);
        ob_str(o, ",\"ts_zero_wallclock\":");
        ob_json_str(o, wall, strlen(wall));
    }
    ob_str(o, ",\"ts_zero_ns\":");
    ob_i64(o, d->ts_zero_ns);
    ob_str(o, "},\n\"viztracer_metadata\":{\"version\":\"0.16.3\",\"overflow\":false,\"producer\":\"funtrace-decode\"},\n");
    sched_json(d, o, J.base); /* "systemTraceEvents": scheduling states (sched_views.c) */
    file_info(d);
    ob_str(o, "}\n");
    for (size_t i = 0; i < d->nth; i++)
        free(J.prefix[i]);
    free(J.prefix);
    free(J.prefix_len);
    J.open = 0;
    int err = ob_close(o);
    if (close(o->fd) != 0 && !err)
        err = errno;
    if (J.tmp) {
        if (!err && rename(J.tmp, J.final) == 0)
            tmp_live = 0;
        else if (!err)
            err = errno;
        drop_tmp();
        free(J.tmp);
        J.tmp = NULL;
    }
    free(J.final);
    J.final = NULL;
    return err;
}
