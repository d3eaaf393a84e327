/*
 * filter.c -- see filter.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "hmap.h"
#include "textfmt.h"
#include "xalloc.h"

struct filter {
    const struct dec_opts *o;
    regex_t *fre, *nre;
    size_t nf, nn;
    uint8_t *mf, *mn; /* per function: 0 not known yet, 1 no match, 2 match */
    size_t nm;
    int have_time;
    int64_t since, until;
    /* per depth in the current batch (st[0..nvalid): the frames of the
     * current context; with coroutines each context's, set aside while
     * another context's calls come: ctxst, by context number) */
    struct fst {
        uint8_t in, drop;
        uint16_t base;
    } *st;
    size_t stcap, nvalid;
    struct hmap ctxidx;
    struct fctx {
        struct fst *st;
        size_t n, cap;
    } *ctxst;
    size_t nctxst, ctxstcap;
};

static int compile(const char *opt, const char *const *re, size_t n, regex_t **out)
{
    *out = n ? xcalloc(n, sizeof **out) : NULL;
    for (size_t i = 0; i < n; i++) {
        int rc = regcomp(&(*out)[i], re[i], REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &(*out)[i], msg, sizeof msg);
            fprintf(stderr, "funtrace-decode: bad %s regular expression '%s': %s\n", opt, re[i], msg);
            for (size_t k = 0; k < i; k++)
                regfree(&(*out)[k]);
            free(*out);
            *out = NULL;
            return -1;
        }
    }
    return 0;
}

int filter_new(const struct dec_opts *o, struct filter **out)
{
    *out = NULL;
    if (!o->tids && !o->nfunc_re && !o->nnot_func_re && !o->since.kind && !o->until.kind && !o->depth &&
        !o->min_dur)
        return 0;
    struct filter *f = xcalloc(1, sizeof *f);
    f->o = o;
    if (compile("-F/--function", o->func_re, o->nfunc_re, &f->fre) ||
        compile("-N/--not-function", o->not_func_re, o->nnot_func_re, &f->nre)) {
        filter_free(f);
        return -1;
    }
    f->nf = o->nfunc_re;
    f->nn = o->nnot_func_re;
    *out = f;
    return 0;
}

void filter_free(struct filter *f)
{
    if (!f)
        return;
    for (size_t i = 0; f->fre && i < f->nf; i++)
        regfree(&f->fre[i]);
    for (size_t i = 0; f->nre && i < f->nn; i++)
        regfree(&f->nre[i]);
    free(f->fre);
    free(f->nre);
    free(f->mf);
    free(f->mn);
    free(f->st);
    for (size_t i = 0; i < f->nctxst; i++)
        free(f->ctxst[i].st);
    free(f->ctxst);
    hm_free(&f->ctxidx);
    free(f);
}

/* --tid: th->shown */
static int resolve_tids(struct dec *d, const char *list)
{
    for (size_t i = 0; i < d->nth; i++)
        d->th[i].shown = list == NULL;
    if (!list)
        return 0;
    const char *p = list;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || (*end && *end != ',')) {
            fprintf(stderr, "funtrace-decode: bad --tid value '%s': give thread ids, e.g. --tid 1234,1240\n", list);
            return -1;
        }
        size_t k = 0;
        for (; k < d->nth; k++)
            if (d->th[k].rt->tid == v)
                break;
        if (k == d->nth) {
            fprintf(stderr, "funtrace-decode: --tid %llu: no such thread in the trace (its threads:", v);
            for (size_t i = 0; i < d->nth && i < 16; i++)
                fprintf(stderr, " %llu", (unsigned long long)d->th[i].rt->tid);
            fprintf(stderr, "%s)\n", d->nth > 16 ? " ..." : "");
            return -1;
        }
        d->th[k].shown = 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* a --since/--until point as own-ns */
static int resolve_point(struct dec *d, const char *opt, const struct ta_point *p, int64_t *ns)
{
    switch (p->kind) {
    case TA_FROM_END:
        *ns = d->end_ns + p->ns;
        return 0;
    case TA_FROM_START:
        *ns = d->base_ns + p->ns;
        return 0;
    case TA_WALL:
    case TA_WALL_TOD:
        if (!d->have_wall) {
            fprintf(stderr, "funtrace-decode: %s: this trace has no wall clock: give a time relative to its "
                            "end (e.g. -50ms) or start (+2s)\n", opt);
            return -1;
        }
        *ns = p->kind == TA_WALL ? p->ns - d->wall_off : local_midnight(d->end_ns + d->wall_off) + p->ns - d->wall_off;
        return 0;
    }
    return -1;
}

int filter_resolve_threads(struct filter *f, struct dec *d)
{
    return resolve_tids(d, f ? f->o->tids : NULL);
}

int filter_resolve_times(struct filter *f, struct dec *d)
{
    if (!f)
        return 0;
    f->since = INT64_MIN;
    f->until = INT64_MAX;
    if (f->o->since.kind && resolve_point(d, "--since", &f->o->since, &f->since))
        return -1;
    if (f->o->until.kind && resolve_point(d, "--until", &f->o->until, &f->until))
        return -1;
    if (f->since > f->until) {
        fprintf(stderr, "funtrace-decode: --since is after --until: nothing to show\n");
        return -1;
    }
    f->have_time = f->o->since.kind || f->o->until.kind;
    return 0;
}

int filter_needs_call_durations(const struct filter *f)
{
    return f && f->o->min_dur > 0;
}

/* name without its C++ parameter list ("ns::f(int) const" -> "ns::f") */
static size_t bare_len(const char *name)
{
    size_t n = strlen(name);
    const char *close = strrchr(name, ')');
    if (!close || close == name)
        return n;
    int depth = 0;
    for (const char *p = close; p >= name; p--) {
        if (*p == ')')
            depth++;
        else if (*p == '(' && --depth == 0)
            return p > name ? (size_t)(p - name) : n;
    }
    return n;
}

static int any_match(const regex_t *re, size_t n, const char *name)
{
    size_t bl = bare_len(name);
    char *bare = bl < strlen(name) ? strndup(name, bl) : NULL;
    int m = 0;
    for (size_t i = 0; i < n && !m; i++)
        m = !regexec(&re[i], name, 0, NULL, 0) || (bare && !regexec(&re[i], bare, 0, NULL, 0));
    free(bare);
    return m;
}

/* does function id match -F (which = 0) / -N (1) */
static int matches(struct filter *f, struct dec *d, uint32_t func, int which)
{
    if (func >= f->nm) {
        size_t n = sym_nfuncs(d->sym);
        if (n <= func)
            n = func + 1;
        f->mf = xrealloc(f->mf, n);
        f->mn = xrealloc(f->mn, n);
        memset(f->mf + f->nm, 0, n - f->nm);
        memset(f->mn + f->nm, 0, n - f->nm);
        f->nm = n;
    }
    uint8_t *m = which ? &f->mn[func] : &f->mf[func];
    if (!*m)
        *m = any_match(which ? f->nre : f->fre, which ? f->nn : f->nf, sym_func(d->sym, func)->name) ? 2 : 1;
    return *m == 2;
}

/* the per-depth state of context c (a context number) becomes the current
 * one; the current one (cur) is set aside */
static void switch_ctx(struct filter *f, int have_cur, uint32_t cur, uint32_t c)
{
    uint32_t v;
    if (have_cur) {
        v = hm_get(&f->ctxidx, cur, 0);
        if (v == HMAP_NONE) {
            f->ctxst = xgrow(f->ctxst, &f->ctxstcap, f->nctxst + 1, sizeof *f->ctxst);
            v = (uint32_t)f->nctxst++;
            f->ctxst[v] = (struct fctx){NULL, 0, 0};
            if (hm_put(&f->ctxidx, cur, 0, v) != 0)
                xalloc_die();
        }
        struct fctx *x = &f->ctxst[v];
        x->st = xgrow(x->st, &x->cap, f->nvalid ? f->nvalid : 1, sizeof *x->st);
        memcpy(x->st, f->st, f->nvalid * sizeof *f->st);
        x->n = f->nvalid;
    }
    v = hm_get(&f->ctxidx, c, 0);
    f->nvalid = 0;
    if (v != HMAP_NONE && f->ctxst[v].n) {
        f->st = xgrow(f->st, &f->stcap, f->ctxst[v].n, sizeof *f->st);
        memcpy(f->st, f->ctxst[v].st, f->ctxst[v].n * sizeof *f->st);
        f->nvalid = f->ctxst[v].n;
    }
}

/* filter a batch in place (slices in pre-order, depths from 0 -- per
 * context with coroutines; cx: their contexts, kept with them, or NULL; ub,
 * cd: their side arrays, slice.h, kept with them -- cd_in: the batch's
 * slice_cdur, or NULL: every slice's call lasted end - start -- into cd);
 * the number kept */
static size_t apply(struct filter *f, struct dec *d, struct slice *s, uint32_t *cx, int64_t *ub, const int64_t *cd_in,
                    int64_t *cd, size_t n)
{
    const struct dec_opts *o = f->o;
    size_t k = 0;
    int have_cur = 0;
    uint32_t cur = 0;
    for (size_t i = 0; i < f->nctxst; i++) /* (a batch of its own: no context set aside) */
        f->ctxst[i].n = 0;
    f->nvalid = 0;
    for (size_t i = 0; i < n; i++) {
        struct slice sl = s[i];
        const int64_t cdur = slice_cdur(s, cd_in, i); /* (before the clipping below) */
        size_t dep = sl.depth;
        if (cx && (!have_cur || cx[i] != cur)) {
            switch_ctx(f, have_cur, cur, cx[i]);
            cur = cx[i];
            have_cur = 1;
        }
        if (dep >= f->stcap)
            f->st = xgrow(f->st, &f->stcap, dep + 1, sizeof *f->st);
        struct fst parent = {.in = !f->nf, .drop = 0, .base = 0};
        if (dep > 0 && dep - 1 < f->nvalid)
            parent = f->st[dep - 1];
        f->nvalid = dep + 1;
        struct fst *me = &f->st[dep];
        me->in = parent.in || (f->nf && matches(f, d, sl.func, 0));
        me->base = parent.in ? parent.base : (uint16_t)dep;
        me->drop = parent.drop || (f->nn && matches(f, d, sl.func, 1));
        if (!me->in || me->drop)
            continue;
        size_t rel = dep - me->base;
        if (o->depth && rel >= (size_t)o->depth)
            continue;
        if (o->min_dur && cdur >= 0 && cdur < o->min_dur)
            continue;
        if (f->have_time) {
            int overlap = (sl.start < f->until && sl.end > f->since) ||
                          (sl.start == sl.end && sl.start >= f->since && sl.start <= f->until);
            if (!overlap)
                continue;
            if (sl.start < f->since) {
                sl.start = f->since;
                sl.flags = (uint16_t)((sl.flags & ~SL_FROM_PREV) | SL_CUT_START);
            }
            if (sl.end > f->until) {
                sl.end = f->until;
                sl.flags = (uint16_t)((sl.flags & ~(SL_TO_NEXT | SL_OPEN | SL_PENDING)) | SL_CUT_END);
            }
        }
        sl.depth = (uint16_t)rel;
        if (cx)
            cx[k] = cx[i];
        if (ub && (sl.flags & SL_BOUND)) /* (clipped: at least the duration left) */
            ub[k] = ub[i] < sl.end - sl.start ? sl.end - sl.start : ub[i];
        if (sl.flags & SL_OWN_CDUR) /* (a clipped slice's call: its own duration) */
            cd[k] = cdur;
        s[k++] = sl;
    }
    return k;
}

/* ---- the filtering view ------------------------------------------------ */

struct fview {
    struct view v;
    struct filter *f;
    struct view *inner;
    struct slice *buf;
    size_t cap;
    uint32_t *cx; /* the batch's th->slice_ctx, filtered with it */
    size_t cxcap;
    int64_t *ub;  /* ... and its th->slice_ub (the SL_BOUND slices' entries) */
    size_t ubcap;
    int64_t *cd;  /* ... and its th->slice_cdur (the SL_OWN_CDUR slices' entries: clipping makes
                     more of them) */
    size_t cdcap;
};

static void fv_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n)
{
    struct fview *fv = (struct fview *)v;
    if (!th->shown || !fv->inner->ops->slices)
        return;
    fv->buf = xgrow(fv->buf, &fv->cap, n, sizeof *fv->buf);
    memcpy(fv->buf, s, n * sizeof *s);
    const uint32_t *cx = th->slice_ctx;
    if (cx) {
        fv->cx = xgrow(fv->cx, &fv->cxcap, n, sizeof *fv->cx);
        memcpy(fv->cx, cx, n * sizeof *cx);
    }
    const int64_t *ub = th->slice_ub;
    if (ub) {
        fv->ub = xgrow(fv->ub, &fv->ubcap, n, sizeof *fv->ub);
        for (size_t i = 0; i < n; i++)
            if (s[i].flags & SL_BOUND)
                fv->ub[i] = ub[i];
    }
    const int64_t *cd = th->slice_cdur;
    fv->cd = xgrow(fv->cd, &fv->cdcap, n, sizeof *fv->cd);
    size_t k = apply(fv->f, d, fv->buf, cx ? fv->cx : NULL, ub ? fv->ub : NULL, cd, fv->cd, n);
    if (k) {
        th->slice_ctx = cx ? fv->cx : NULL;
        th->slice_ub = ub ? fv->ub : NULL;
        th->slice_cdur = fv->cd;
        fv->inner->ops->slices(fv->inner, d, th, gi, fv->buf, k);
        th->slice_ctx = cx;
        th->slice_ub = ub;
        th->slice_cdur = cd;
    }
}

static void fv_instant(struct view *v, struct dec *d, struct dthread *th, int64_t ns, const char *name,
                       const struct view_arg *args, size_t nargs)
{
    struct fview *fv = (struct fview *)v;
    if (!th->shown || !fv->inner->ops->instant || (fv->f->have_time && (ns < fv->f->since || ns > fv->f->until)))
        return;
    fv->inner->ops->instant(fv->inner, d, th, ns, name, args, nargs);
}

static void fv_thread_end(struct view *v, struct dec *d, struct dthread *th)
{
    struct fview *fv = (struct fview *)v;
    if (th->shown && fv->inner->ops->thread_end)
        fv->inner->ops->thread_end(fv->inner, d, th);
}

static void fv_destroy(struct view *v)
{
    struct fview *fv = (struct fview *)v;
    free(fv->buf);
    free(fv->cx);
    free(fv->ub);
    free(fv->cd);
    free(fv);
}

static const struct view_ops fview_ops = {
    .slices = fv_slices, .instant = fv_instant, .thread_end = fv_thread_end, .destroy = fv_destroy,
};

struct view *filter_view_new(struct filter *f, struct view *inner)
{
    struct fview *fv = xcalloc(1, sizeof *fv);
    fv->v.ops = &fview_ops;
    fv->v.kind = inner->kind;
    fv->v.path = inner->path;
    fv->f = f;
    fv->inner = inner;
    return &fv->v;
}
