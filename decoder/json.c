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

#include "decstate.h"
#include "outbuf.h"
#include "outfile.h"
#include "textfmt.h"
#include "tracefacts.h"
#include "views.h"
#include "xalloc.h"

/* a piece of a slice's text, stored padded to a multiple of 32 bytes, 64 at
 * least (copied 64 bytes at once, or 32 at a time when longer) */
struct jpiece {
    char *s;
    size_t len;
};

/* the args cache's index of the flags f: the SL_* bits shown as names
 * (not SL_PENDING, nor SL_BOUND, whose value follows), SL_JUMPED in the
 * place of SL_WAS_SUSP (not shown) */
#define ARGS_KEYS 0x3fffu
static inline unsigned args_key(unsigned f)
{
    return (f & 0x1fffu & ~(SL_PENDING | SL_BOUND)) | ((f & SL_JUMPED) >> 2);
}

struct json_view {
    struct view v;
    struct outbuf o;
    int64_t base;
    struct jpiece *prefix; /* per thread: {"ph":"X","pid":P,"tid":T,"ts": */
    struct jpiece *tail;   /* per function id f: [2f] ,"name":NAME},\n, [2f + 1] the same after
                              UNM_ARGS (s NULL: not made yet) */
    size_t ntail;
    struct jpiece *args;   /* per SL_* flags (less SL_PENDING, SL_BOUND): ,"args":{... */
    uint64_t nslices;
    struct us3_cache dur_c; /* the last integer part of "dur" */
    struct outfile file;
};

static struct jpiece piece(const char *a, size_t la, const char *b, size_t lb, const char *c, size_t lc)
{
    size_t n = la + lb + lc;
    char *s = xcalloc(n < 64 ? 64 : (n + 31) / 32 * 32 + 32, 1);
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc);
    return (struct jpiece){s, n};
}

/* p must have room for room(x) */
static inline char *put_piece(char *p, const struct jpiece *x)
{
    if (__builtin_expect(x->len <= 64, 1)) {
        memcpy(p, x->s, 64);
    } else {
        for (size_t k = 0; k < x->len; k += 32)
            memcpy(p + k, x->s + k, 32);
    }
    return p + x->len;
}

static inline size_t room(const struct jpiece *x)
{
    return x->len <= 64 ? 64 : (x->len + 31) / 32 * 32;
}

static void meta(struct json_view *J, struct dec *d, const char *what, uint64_t tid, const char *key, const char *sval, long ival,
                 const char *tail)
{
    struct outbuf *o = &J->o;
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

static void instant(struct json_view *J, struct dec *d, uint64_t tid, char scope, int64_t ns, const char *name,
                    const struct view_arg *args, size_t nargs)
{
    struct outbuf *o = &J->o;
    ob_str(o, "{\"ph\":\"i\",\"s\":\"");
    ob_char(o, scope);
    ob_str(o, "\",\"pid\":");
    ob_u64(o, d->pid);
    ob_str(o, ",\"tid\":");
    ob_u64(o, tid);
    ob_str(o, ",\"ts\":");
    ob_us3(o, ns - J->base);
    ob_str(o, ",\"name\":");
    ob_json_str(o, name, strlen(name));
    if (nargs) {
        ob_str(o, ",\"args\":{");
        for (size_t i = 0; i < nargs; i++) {
            if (i)
                ob_char(o, ',');
            ob_json_str(o, args[i].key, strlen(args[i].key));
            ob_char(o, ':');
            if (args[i].str)
                ob_json_str(o, args[i].str, strlen(args[i].str));
            else
                ob_i64(o, args[i].num);
        }
        ob_char(o, '}');
    }
    ob_str(o, "},\n");
}

static void j_instant(struct view *v, struct dec *d, struct dthread *th, int64_t ns, const char *name,
                      const struct view_arg *args, size_t nargs)
{
    instant((struct json_view *)v, d, th->rt->tid, 't', ns, name, args, nargs);
}

static const char *thread_label(struct dec *d, struct dthread *th, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", th->rt->name[0] ? th->rt->name : "thread", dec_thread_mark(d, th->rt->tid));
    return buf;
}

static int j_begin(struct view *v, struct dec *d)
{
    struct json_view *J = (struct json_view *)v;
    int err = outfile_open(&J->file, v->path);
    if (err)
        return err;
    if (ob_open(&J->o, J->file.fd, 4u << 20))
        xalloc_die();
    J->base = d->ts_zero_ns;
    struct outbuf *o = &J->o;
    ob_str(o, "{\"traceEvents\":[\n");
    char buf[128];
    meta(J, d, "process_name", d->pid, "name", d->t.cmdline[0] ? d->t.cmdline : "traced process", 0, ",\n");
    J->prefix = xcalloc(d->nth, sizeof *J->prefix);
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        if (!th->shown)
            continue;
        meta(J, d, "thread_name", th->rt->tid, "name", thread_label(d, th, buf, sizeof buf), 0, ",\n");
        meta(J, d, "thread_sort_index", th->rt->tid, "sort_index", NULL, th->rt->tid == d->crash_tid ? -1 : (long)i, ",\n");
        char p[128];
        int n = snprintf(p, sizeof p, "{\"ph\":\"X\",\"pid\":%llu,\"tid\":%llu,\"ts\":",
                         (unsigned long long)d->pid, (unsigned long long)th->rt->tid);
        J->prefix[i] = piece(p, (size_t)n, "", 0, "", 0);
    }
    /* generation boundaries */
    for (size_t gi = 0; gi < d->ngens; gi++) {
        const struct dgen *g = &d->gens[gi];
        if (!g->emit || g->synthetic)
            continue;
        char name[64];
        dec_gen_name(g, name, sizeof name);
        char wall[64] = "";
        if (d->have_wall)
            fmt_wall(wall, sizeof wall, g->start_ns + g->wall_off, 1);
        struct view_arg args[] = {
            {"gen", NULL, (int64_t)g->gen},
            {"wallclock", wall, 0},
            {"threads_incomplete", NULL, g->nthreads_incomplete},
        };
        instant(J, d, 0, 'g', g->start_ns, name, args, 3);
    }
    /* the crash */
    if (d->t.has_crash && d->t.crash.signo) {
        char name[96], addr[32];
        const struct ft_raw_crash *c = &d->t.crash;
        snprintf(name, sizeof name, "%s at 0x%llx", sig_name(c->signo), (unsigned long long)c->addr);
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)c->addr);
        struct view_arg args[] = {
            {"signal", NULL, c->signo},   {"signal_name", sig_name(c->signo), 0},
            {"si_code", NULL, c->si_code}, {"fault_address", addr, 0},
            {"thread", NULL, c->tid},      {"sender_pid", NULL, c->sender_pid},
        };
        instant(J, d, c->tid ? c->tid : d->pid, 't', d->end_ns, name, args, 6);
    }
    return 0;
}

/* ,"args":{ and the names of the flags f (not SL_BOUND's: its value follows) */
static __attribute__((noinline)) const struct jpiece *make_flag_args(struct json_view *J, unsigned f)
{
    static const struct {
        unsigned bit;
        const char *txt;
    } names[] = {
        {SL_FROM_PREV, "\"from_previous_generation\":true"},
        {SL_TO_NEXT, "\"continues_in_next_generation\":true"},
        {SL_OPEN, "\"open_at_end\":true"},
        {SL_ABANDONED, "\"return_missing\":true"},
        {SL_JUMPED, "\"left_by_longjmp\":true"},
        {SL_UNWOUND, "\"unwound_by_exception\":true"},
        {SL_START_UNK, "\"started_before_ring\":true"},
        {SL_UNMEASURED, "\"measured\":false"},
        {SL_CUT_START, "\"clipped_by_since\":true"},
        {SL_CUT_END, "\"clipped_by_until\":true"},
        {SL_SUSPENDED, "\"suspended\":true"},
        {SL_RESUMED, "\"resumed\":true"},
    };
    if (!J->args)
        J->args = xcalloc(ARGS_KEYS + 1, sizeof *J->args);
    struct jpiece *a = &J->args[args_key(f)];
    if (a->s)
        return a;
    char buf[512];
    size_t n = 0;
    int first = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(f & names[i].bit))
            continue;
        if (!first)
            buf[n++] = ',';
        memcpy(buf + n, names[i].txt, strlen(names[i].txt));
        n += strlen(names[i].txt);
        first = 0;
    }
    *a = piece(",\"args\":{", 9, buf, n, "", 0);
    return a;
}

/* the same, made once per flag combination */
static inline const struct jpiece *flag_args(struct json_view *J, unsigned f)
{
    if (__builtin_expect(J->args != NULL, 1)) {
        const struct jpiece *a = &J->args[args_key(f)];
        if (__builtin_expect(a->s != NULL, 1))
            return a;
    }
    return make_flag_args(J, f);
}

/* the args of a slice whose only flag is SL_UNMEASURED (nearly every slice
 * of a sampled trace), as make_flag_args and j_slices write them */
#define UNM_ARGS ",\"args\":{\"measured\":false}"

/* ,"name":NAME},\n of function f, after UNM_ARGS if unm: made */
static __attribute__((noinline)) const struct jpiece *make_tail(struct json_view *J, struct dec *d, uint32_t f,
                                                                int unm)
{
    const size_t k = 2 * (size_t)f + (unm != 0);
    if (k >= J->ntail) {
        size_t n = J->ntail;
        J->tail = xgrow(J->tail, &J->ntail, k + 2, sizeof *J->tail);
        memset(J->tail + n, 0, (J->ntail - n) * sizeof *J->tail);
    }
    struct func *fn = sym_func(d->sym, f);
    fn->used = 1;
    J->tail[k] = unm ? piece(UNM_ARGS ",\"name\":", sizeof UNM_ARGS - 1 + 8, fn->jname, strlen(fn->jname), "},\n", 3)
                     : piece(",\"name\":", 8, fn->jname, strlen(fn->jname), "},\n", 3);
    return &J->tail[k];
}

/* the most a slice's line takes besides its pieces: two numbers of at most
 * 21 characters, ",\"dur\":", the bound, the context, and the 64 bytes that
 * put_piece may copy past a short piece's end */
#define J_LINE_EXTRA 256

/* the slices' lines; unm_tail: a slice whose only flag is SL_UNMEASURED
 * takes its args from its name's piece (a sampled trace's, no contexts).
 * A line starts with the thread's prefix and the integer part of "ts":
 * made once for each microsecond (head), copied whole. */
static inline __attribute__((always_inline)) void slices(struct json_view *J, struct dec *d, struct dthread *th,
                                                         const struct slice *s, size_t n, const int unm_tail)
{
    struct outbuf *o = &J->o;
    const struct jpiece pre = J->prefix[th->index];
    const uint32_t *cx = th->slice_ctx; /* a thread that switched stacks: each piece's context */
    const int64_t *ub = th->slice_ub;
    const int64_t base = J->base;
    /* head: the prefix and the digits of microsecond head_us (its room:
     * the prefix's, 24 digits, a 32-byte copy past its end) */
    char head[256] = {0};
    size_t head_len = 0;
    uint64_t head_us = UINT64_MAX;
    if (pre.len > sizeof head - 64)
        xalloc_die(); /* (a prefix of two numbers) */
    const size_t pre_room = sizeof head + (cx ? 64 : 0);
    /* in locals: the stores into the buffer could alias J's fields */
    struct us3_cache dur_c = J->dur_c;
    const struct jpiece *tail = J->tail;
    size_t ntail = J->ntail;
    char *p = o->buf + o->len, *lim = o->buf + o->cap;
    for (size_t i = 0; i < n; i++) {
        unsigned fl = s[i].flags & ~SL_PENDING;
        const int unm = unm_tail && fl == SL_UNMEASURED;
        const size_t k = 2 * (size_t)s[i].func + (unm != 0);
        if (__builtin_expect(k >= ntail || !tail[k].s, 0)) {
            make_tail(J, d, s[i].func, unm);
            tail = J->tail;
            ntail = J->ntail;
        }
        const struct jpiece *tl = &tail[k];
        const struct jpiece *args = fl && !unm ? flag_args(J, fl) : NULL;
        size_t need = pre_room + J_LINE_EXTRA + (tl->len <= 64 ? 0 : room(tl)) + (args ? room(args) : 0);
        if (__builtin_expect((size_t)(lim - p) < need, 0)) {
            o->len = (size_t)(p - o->buf);
            ob_flush(o);
            if (o->cap < need)
                xalloc_die(); /* a name longer than the whole buffer */
            p = o->buf;
        }
        const int64_t ts = s[i].start - base;
        if (__builtin_expect(ts >= 0, 1)) {
            const uint64_t us = (uint64_t)ts / 1000;
            if (__builtin_expect(us != head_us, 0)) {
                char dig[24];
                memcpy(head, pre.s, pre.len);
                const int nd = fmt_u64(dig, us);
                memcpy(head + pre.len, dig, sizeof dig);
                head_len = pre.len + (size_t)nd;
                head_us = us;
            }
            if (__builtin_expect(head_len <= 64, 1)) {
                memcpy(p, head, 64);
            } else {
                for (size_t c = 0; c < head_len; c += 32)
                    memcpy(p + c, head + c, 32);
            }
            memcpy(p + head_len, &ob_frac3[(uint64_t)ts - us * 1000], 4);
            p += head_len + 4;
        } else {
            p = put_piece(p, &pre);
            p += fmt_us3(p, ts);
        }
        memcpy(p, ",\"dur\":", 8); /* (the 8th byte is overwritten next) */
        p += 7;
        p += fmt_us3_cached(p, s[i].end - s[i].start, &dur_c);
        if (args || cx) {
            if (args) {
                p = put_piece(p, args);
            } else {
                memcpy(p, ",\"args\":{", 9);
                p += 9;
            }
            if (fl & SL_BOUND) { /* with "measured":false */
                memcpy(p, ",\"upper_bound_ns\":", 18);
                p += 18;
                p += fmt_i64(p, ub ? ub[i] : s[i].end - s[i].start);
            }
            if (cx) {
                if (p[-1] != '{')
                    *p++ = ',';
                memcpy(p, "\"context\":", 10);
                p += 10;
                p += fmt_i64(p, cx[i]);
            }
            *p++ = '}';
        }
        p = put_piece(p, tl);
    }
    o->len = (size_t)(p - o->buf);
    J->dur_c = dur_c;
}

static void j_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n)
{
    struct json_view *J = (struct json_view *)v;
    (void)gi;
    J->nslices += n;
    if (d->sampled && !th->slice_ctx)
        slices(J, d, th, s, n, 1);
    else
        slices(J, d, th, s, n, 0);
}

/* viztracer's file_info: sources of the functions in the output */
static void file_info(struct json_view *J, struct dec *d)
{
    struct outbuf *o = &J->o;
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

static int j_end(struct view *v, struct dec *d)
{
    struct json_view *J = (struct json_view *)v;
    struct outbuf *o = &J->o;
    /* every event ends with ",\n": close the list with one without it */
    meta(J, d, "process_labels", d->pid, "labels", "funtrace", 0, "");
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
    sched_json(d, o, J->base); /* "systemTraceEvents": scheduling states (sched_views.c) */
    file_info(J, d);
    ob_str(o, "}\n");
    for (size_t i = 0; i < d->nth; i++)
        free(J->prefix[i].s);
    free(J->prefix);
    for (size_t i = 0; i < J->ntail; i++)
        free(J->tail[i].s);
    free(J->tail);
    for (size_t i = 0; J->args && i <= ARGS_KEYS; i++)
        free(J->args[i].s);
    free(J->args);
    return outfile_close(&J->file, ob_close(o));
}

static void j_destroy(struct view *v)
{
    free(v);
}

static const struct view_ops json_ops = {
    .begin = j_begin, .slices = j_slices, .instant = j_instant, .end = j_end, .destroy = j_destroy,
};

struct view *json_view_new(const char *path)
{
    struct json_view *J = xcalloc(1, sizeof *J);
    J->v.ops = &json_ops;
    J->v.kind = VIEW_PIECES;
    J->v.path = path;
    return &J->v;
}

uint64_t json_view_slices(const struct view *v)
{
    return ((const struct json_view *)v)->nslices;
}
