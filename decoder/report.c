/*
 * report.c -- --report: one line per function, the table a user reads
 * first: calls, total time (time with the function on the stack: a
 * recursion counts once), self time (minus what it called: the calls the
 * filters left out count as its own), the longest call, the average call,
 * its source location; sorted by self time (--sort), for all threads or
 * per thread (--by-thread).  Built from the same filtered slices as the JSON
 * and Perfetto views (VIEW_PIECES, own ns): its totals are the sums of their
 * slices.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batchtree.h"
#include "decstate.h"
#include "hmap.h"
#include "outbuf.h"
#include "satadd.h"
#include "textfmt.h"
#include "tracefacts.h"
#include "views.h"
#include "xalloc.h"

struct row {
    uint32_t func;
    int32_t thread;   /* -1: all threads */
    uint64_t calls;
    int64_t total, self, max, sum; /* sum: of every call's duration (for the average) */
};

struct rthread {
    int64_t *acc;     /* acc[d]: the call at depth d so far (its pieces) */
    size_t cap;
};

struct report {
    struct view v;
    struct hmap index; /* (thread + 1 or 0, func) -> row */
    struct row *rows;
    size_t nrows, cap;
    struct rthread *th;
    size_t nth;
    int64_t *parent, *self;
    size_t scap;
    uint32_t *active;  /* per function: frames of it open in the batch walk */
    size_t nactive;
    uint32_t *open;    /* the batch walk's stack of functions */
    size_t ocap;
};

static struct row *row_of(struct report *R, int32_t thread, uint32_t func)
{
    uint32_t k = hm_get(&R->index, (uint64_t)(thread + 1), func);
    if (k != HMAP_NONE)
        return &R->rows[k];
    R->rows = xgrow(R->rows, &R->cap, R->nrows + 1, sizeof *R->rows);
    struct row *r = &R->rows[R->nrows];
    memset(r, 0, sizeof *r);
    r->func = func;
    r->thread = thread;
    if (hm_put(&R->index, (uint64_t)(thread + 1), func, (uint32_t)R->nrows))
        xalloc_die();
    R->nrows++;
    return r;
}

static void r_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n)
{
    struct report *R = (struct report *)v;
    (void)gi;
    if (R->scap < n) {
        R->scap = n;
        R->parent = xrealloc(R->parent, n * sizeof *R->parent);
        R->self = xrealloc(R->self, n * sizeof *R->self);
    }
    batch_tree(s, n, R->parent, R->self);
    struct rthread *rt = &R->th[th->index];
    int32_t thread = d->o.by_thread ? th->index : -1;
    size_t depth = 0; /* the walk's stack: open[0 .. depth) */
    for (size_t i = 0; i < n; i++) {
        const struct slice *sl = &s[i];
        size_t dp = sl->depth;
        while (depth > dp) /* leave the frames this slice is not inside */
            R->active[R->open[--depth]]--;
        if (sl->func >= R->nactive) {
            size_t old = R->nactive;
            R->active = xgrow(R->active, &R->nactive, (size_t)sl->func + 1, sizeof *R->active);
            memset(R->active + old, 0, (R->nactive - old) * sizeof *R->active);
        }
        struct row *r = row_of(R, thread, sl->func);
        int64_t dur = sat_sub64(sl->end, sl->start);
        if (!R->active[sl->func])
            r->total = sat_add64(r->total, dur); /* not inside another call of itself */
        r->self = sat_add64(r->self, R->self[i]);
        /* a call's pieces (one per generation it spans) add up to it */
        if (dp >= rt->cap)
            rt->acc = xgrow(rt->acc, &rt->cap, dp + 1, sizeof *rt->acc);
        if (!(sl->flags & (SL_FROM_PREV | SL_RESUMED))) {
            r->calls++;
            rt->acc[dp] = 0;
        }
        rt->acc[dp] = sat_add64(rt->acc[dp], dur);
        if (!(sl->flags & (SL_TO_NEXT | SL_SUSPENDED))) {
            /* a call that was suspended (swapcontext): its whole duration,
             * from its call to its return (other contexts' calls at its
             * depth came between its pieces) */
            const int64_t cd = sl->flags & SL_WAS_SUSP ? slice_cdur(s, th->slice_cdur, i) : -1;
            int64_t c = cd >= 0 ? cd : rt->acc[dp];
            if (c > r->max)
                r->max = c;
            r->sum = sat_add64(r->sum, c);
        }
        R->open = xgrow(R->open, &R->ocap, depth + 1, sizeof *R->open);
        R->open[depth++] = sl->func;
        R->active[sl->func]++;
    }
    while (depth > 0)
        R->active[R->open[--depth]]--;
}

static int r_begin(struct view *v, struct dec *d)
{
    struct report *R = (struct report *)v;
    R->nth = d->nth;
    R->th = xcalloc(d->nth, sizeof *R->th);
    return 0;
}

static struct dec *sort_dec;

static int cmp_rows(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    int64_t kx = 0, ky = 0;
    switch (sort_dec->o.sort) {
    case SORT_TOTAL: kx = x->total; ky = y->total; break;
    case SORT_CALLS: kx = (int64_t)x->calls; ky = (int64_t)y->calls; break;
    case SORT_MAX: kx = x->max; ky = y->max; break;
    case SORT_AVG:
        kx = x->calls ? x->sum / (int64_t)x->calls : 0;
        ky = y->calls ? y->sum / (int64_t)y->calls : 0;
        break;
    case SORT_NAME: {
        int c = strcmp(sym_func(sort_dec->sym, x->func)->name, sym_func(sort_dec->sym, y->func)->name);
        if (c)
            return c;
        break;
    }
    default: kx = x->self; ky = y->self; break;
    }
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

static const char *const sort_names[] = {"self time", "total time", "calls", "longest call", "average call",
                                         "name"};

static void table(struct dec *d, const struct row *rows, size_t n, struct outbuf *o)
{
    int64_t all = 0;
    uint64_t calls = 0;
    for (size_t i = 0; i < n; i++) {
        all = sat_add64(all, rows[i].self);
        calls += rows[i].calls;
    }
    char b[5][32];
    fmt_dur(b[0], sizeof b[0], all);
    ob_printf(o, "  %llu calls of %zu functions, %s in calls; by %s\n", (unsigned long long)calls, n, b[0],
              sort_names[d->o.sort]);
    ob_printf(o, "  %10s  %12s  %12s  %6s  %12s  %12s  %s\n", "calls", "total", "self", "self%", "max", "avg",
              "function");
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        struct func *fn = sym_func(d->sym, r->func);
        fmt_dur(b[0], sizeof b[0], r->total);
        fmt_dur(b[1], sizeof b[1], r->self);
        fmt_dur(b[2], sizeof b[2], r->max);
        fmt_dur(b[3], sizeof b[3], r->calls ? r->sum / (int64_t)r->calls : 0);
        double pct = all > 0 ? 100.0 * (double)r->self / (double)all : 0;
        ob_printf(o, "  %10llu  %12s  %12s  %5.1f%%  %12s  %12s  ", (unsigned long long)r->calls, b[0], b[1], pct,
                  b[2], b[3]);
        ob_text(o, fn->name);
        if (fn->file) {
            const char *base = strrchr(fn->file, '/');
            ob_str(o, "  ");
            ob_text(o, base ? base + 1 : fn->file);
            ob_printf(o, ":%u", fn->line);
        }
        ob_char(o, '\n');
    }
}

static int r_end(struct view *v, struct dec *d)
{
    struct report *R = (struct report *)v;
    struct outbuf ob, *o = &ob;
    if (ob_open(o, 1, 1 << 16))
        xalloc_die();
    if (d->o.summary || d->o.text) /* after them */
        ob_char(o, '\n');
    ob_str(o, "funtrace report: `");
    ob_text(o, d->t.cmdline[0] ? d->t.cmdline : "?");
    ob_printf(o, "` (pid %llu)\n", (unsigned long long)d->pid);
    sort_dec = d;
    if (R->nrows)
        qsort(R->rows, R->nrows, sizeof *R->rows, cmp_rows);
    if (!d->o.by_thread) {
        table(d, R->rows, R->nrows, o);
    } else {
        for (size_t i = 0; i < R->nrows;) {
            size_t j = i;
            while (j < R->nrows && R->rows[j].thread == R->rows[i].thread)
                j++;
            const struct dthread *th = &d->th[R->rows[i].thread];
            ob_printf(o, "\nthread %llu \"", (unsigned long long)th->rt->tid);
            ob_text(o, th->rt->name);
            ob_printf(o, "\"%s\n", dec_thread_mark(d, th->rt->tid));
            table(d, R->rows + i, j - i, o);
            i = j;
        }
    }
    if (!R->nrows)
        ob_str(o, "  (no calls)\n");
    return ob_close(o);
}

static void r_destroy(struct view *v)
{
    struct report *R = (struct report *)v;
    for (size_t i = 0; i < R->nth; i++)
        free(R->th[i].acc);
    free(R->th);
    hm_free(&R->index);
    free(R->rows);
    free(R->parent);
    free(R->self);
    free(R->active);
    free(R->open);
    free(R);
}

static const struct view_ops report_ops = {
    .begin = r_begin, .slices = r_slices, .end = r_end, .destroy = r_destroy,
};

struct view *report_view_new(void)
{
    struct report *R = xcalloc(1, sizeof *R);
    R->v.ops = &report_ops;
    R->v.kind = VIEW_PIECES;
    return &R->v;
}
