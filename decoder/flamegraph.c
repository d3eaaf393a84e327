/*
 * flamegraph.c -- --flamegraph FILE: folded stacks, one line per distinct
 * stack, "outer;...;inner NS" with NS the self time (ns) spent there, the
 * format of flamegraph.pl (Brendan Gregg's stackcollapse output), speedscope
 * and other flame graph viewers.  The weights add up to the time in the
 * outermost calls shown, and per function to --report's self times.  With
 * --by-thread every stack starts with its thread ("name tid N").  Stacks
 * deeper than FLAME_MAX_DEPTH frames (a runaway recursion) end in a frame
 * "[N deeper frames]" that holds the time below.  ';' in a name becomes ':'
 * and control characters '?'.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batchtree.h"
#include "decstate.h"
#include "hmap.h"
#include "outbuf.h"
#include "outfile.h"
#include "satadd.h"
#include "views.h"
#include "xalloc.h"

#define FLAME_MAX_DEPTH 1024
#define KEY_THREAD (1ull << 62)   /* a node key for a thread's root frame */
#define KEY_DEEPER (1ull << 61)   /* ... for the frame holding the deeper ones */

struct node {
    uint32_t parent;  /* HMAP_NONE: a root */
    uint64_t key;     /* function id, or KEY_THREAD | thread, or KEY_DEEPER | depth */
    int64_t weight;   /* self ns */
};

struct flame {
    struct view v;
    struct outfile file;
    struct hmap children; /* (parent node + 1, key) -> node */
    struct node *nodes;
    size_t nnodes, cap;
    int64_t *parent, *self;
    uint32_t *at;         /* the node of each slice of the batch */
    size_t scap;
};

static uint32_t node_of(struct flame *F, uint32_t parent, uint64_t key)
{
    uint64_t p = parent == HMAP_NONE ? 0 : (uint64_t)parent + 1;
    uint32_t k = hm_get(&F->children, p, key);
    if (k != HMAP_NONE)
        return k;
    F->nodes = xgrow(F->nodes, &F->cap, F->nnodes + 1, sizeof *F->nodes);
    F->nodes[F->nnodes] = (struct node){parent, key, 0};
    if (hm_put(&F->children, p, key, (uint32_t)F->nnodes))
        xalloc_die();
    return (uint32_t)F->nnodes++;
}

static void f_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n)
{
    struct flame *F = (struct flame *)v;
    (void)gi;
    if (F->scap < n) {
        F->scap = n;
        F->parent = xrealloc(F->parent, n * sizeof *F->parent);
        F->self = xrealloc(F->self, n * sizeof *F->self);
        F->at = xrealloc(F->at, n * sizeof *F->at);
    }
    batch_tree(s, n, F->parent, F->self);
    uint32_t root = d->o.by_thread ? node_of(F, HMAP_NONE, KEY_THREAD | (uint64_t)th->index) : HMAP_NONE;
    for (size_t i = 0; i < n; i++) {
        uint32_t up = F->parent[i] >= 0 ? F->at[F->parent[i]] : root;
        if (s[i].depth < FLAME_MAX_DEPTH)
            F->at[i] = node_of(F, up, s[i].func);
        else if (s[i].depth == FLAME_MAX_DEPTH)
            F->at[i] = node_of(F, up, KEY_DEEPER);
        else
            F->at[i] = up; /* inside the [deeper frames] frame */
        F->nodes[F->at[i]].weight = sat_add64(F->nodes[F->at[i]].weight, F->self[i]);
    }
}

static int f_begin(struct view *v, struct dec *d)
{
    struct flame *F = (struct flame *)v;
    (void)d;
    return outfile_open(&F->file, v->path);
}

/* one frame's name, folded-stack safe */
static void frame_name(struct dec *d, const struct node *nd, struct outbuf *o)
{
    char buf[64];
    const char *name;
    if (nd->key & KEY_THREAD) {
        const struct ftr_thread *rt = d->th[nd->key & ~KEY_THREAD].rt;
        snprintf(buf, sizeof buf, "%s tid %llu", rt->name[0] ? rt->name : "thread", (unsigned long long)rt->tid);
        name = buf;
    } else if (nd->key & KEY_DEEPER) {
        name = "[deeper frames]";
    } else {
        name = sym_func(d->sym, (uint32_t)nd->key)->uname;
    }
    for (const char *p = name; *p; p++)
        ob_char(o, *p == ';' ? ':' : (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
}

static int f_end(struct view *v, struct dec *d)
{
    struct flame *F = (struct flame *)v;
    struct outbuf ob;
    if (ob_open(&ob, F->file.fd, 1 << 20))
        xalloc_die();
    uint32_t *path = xcalloc(FLAME_MAX_DEPTH + 2, sizeof *path);
    for (size_t i = 0; i < F->nnodes; i++) {
        if (F->nodes[i].weight <= 0)
            continue;
        size_t n = 0;
        for (uint32_t k = (uint32_t)i; k != HMAP_NONE && n < FLAME_MAX_DEPTH + 2; k = F->nodes[k].parent)
            path[n++] = k;
        for (size_t j = n; j > 0; j--) {
            frame_name(d, &F->nodes[path[j - 1]], &ob);
            ob_char(&ob, j > 1 ? ';' : ' ');
        }
        ob_i64(&ob, F->nodes[i].weight);
        ob_char(&ob, '\n');
    }
    free(path);
    return outfile_close(&F->file, ob_close(&ob));
}

static void f_destroy(struct view *v)
{
    struct flame *F = (struct flame *)v;
    hm_free(&F->children);
    free(F->nodes);
    free(F->parent);
    free(F->self);
    free(F->at);
    free(F);
}

static const struct view_ops flame_ops = {
    .begin = f_begin, .slices = f_slices, .end = f_end, .destroy = f_destroy,
};

struct view *flamegraph_view_new(const char *path)
{
    struct flame *F = xcalloc(1, sizeof *F);
    F->v.ops = &flame_ops;
    F->v.kind = VIEW_PIECES;
    F->v.path = path;
    return &F->v;
}
