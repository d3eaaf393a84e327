/*
 * viewtee.c -- see viewtee.h.
 */
#include <stdlib.h>

#include "viewtee.h"
#include "xalloc.h"

struct tee {
    struct view v;
    struct view **to;
    size_t n;
};

static void tee_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s,
                       size_t n)
{
    struct tee *t = (struct tee *)v;
    for (size_t i = 0; i < t->n; i++)
        if (t->to[i]->ops->slices)
            t->to[i]->ops->slices(t->to[i], d, th, gi, s, n);
}

static void tee_instant(struct view *v, struct dec *d, struct dthread *th, int64_t ns, const char *name,
                        const struct view_arg *args, size_t nargs)
{
    struct tee *t = (struct tee *)v;
    for (size_t i = 0; i < t->n; i++)
        if (t->to[i]->ops->instant)
            t->to[i]->ops->instant(t->to[i], d, th, ns, name, args, nargs);
}

static void tee_thread_end(struct view *v, struct dec *d, struct dthread *th)
{
    struct tee *t = (struct tee *)v;
    for (size_t i = 0; i < t->n; i++)
        if (t->to[i]->ops->thread_end)
            t->to[i]->ops->thread_end(t->to[i], d, th);
}

static void tee_destroy(struct view *v)
{
    struct tee *t = (struct tee *)v;
    free(t->to);
    free(t);
}

static const struct view_ops tee_ops = {.slices = tee_slices, .instant = tee_instant, .thread_end = tee_thread_end,
                                     .destroy = tee_destroy};

struct view *view_tee_new(int kind, struct view *const *v, size_t n)
{
    struct tee *t = xcalloc(1, sizeof *t);
    t->v.ops = &tee_ops;
    t->v.kind = kind;
    t->to = xcalloc(n, sizeof *t->to);
    for (size_t i = 0; i < n; i++)
        t->to[i] = v[i];
    t->n = n;
    return &t->v;
}
