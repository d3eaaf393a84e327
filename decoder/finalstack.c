/*
 * finalstack.c -- final stacks as gdb shows them (see finalstack.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "finalstack.h"
#include "foldcycle.h"
#include "xalloc.h"

#define MAX_INLINE 64 /* inlined callers of one machine frame */

static struct fs_frame *push(struct fs_frame **v, size_t *n, size_t *cap)
{
    *v = xgrow(*v, cap, *n + 1, sizeof **v);
    struct fs_frame *f = &(*v)[(*n)++];
    memset(f, 0, sizeof *f);
    return f;
}

size_t fs_frames(struct dec *d, const struct ftr_stack *fs, struct fs_frame **out)
{
    struct fs_frame *v = NULL;
    size_t n = 0, cap = 0;
    struct sym_frame sf[MAX_INLINE];
    int space = d->gens[d->ngens - 1].space;
    int after_tramp = 0; /* the previous machine frame was the signal trampoline */
    int cut = (fs->h.flags & FT_STKF_CUT) && fs->h.ncut && fs->h.cut_at > 0 && fs->h.cut_at < fs->npcs;
    for (uint32_t k = 0; k < fs->npcs; k++) {
        uint64_t pc = fs->pcs[k];
        if (cut && k == fs->h.cut_at) {
            struct fs_frame *f = push(&v, &n, &cap);
            f->phys = k;
            f->flags = FSF_CUT;
            f->ncut = fs->h.ncut;
            char nm[64];
            snprintf(nm, sizeof nm, "[%u frames not kept by the unwinder]", fs->h.ncut);
            f->func = sym_special(d->sym, nm);
            after_tramp = 0;
        }
        if (k > 0 && !d->o.sym.no_symbols && sym_is_sigtramp(d->sym, space, pc)) {
            struct fs_frame *f = push(&v, &n, &cap);
            f->phys = k;
            f->pc = pc;
            f->flags = FSF_SIGTRAMP | FSF_EXACT;
            f->func = sym_special(d->sym, "<signal handler called>");
            after_tramp = 1;
            continue;
        }
        int exact = k == 0 || after_tramp; /* a return address otherwise: look up pc - 1 */
        after_tramp = 0;
        size_t m = sym_frames(d->sym, space, pc, exact, sf, MAX_INLINE);
        for (size_t i = 0; i < m; i++) {
            struct fs_frame *f = push(&v, &n, &cap);
            f->phys = k;
            f->pc = pc;
            f->func = sf[i].func;
            f->file = sf[i].file;
            f->line = sf[i].line;
            f->flags = (sf[i].inlined ? FSF_INLINED : 0) | (exact ? FSF_EXACT : 0);
        }
        /* functions that tail-called this one, between it and its caller */
        if (k + 1 < fs->npcs && !(cut && k + 1 == fs->h.cut_at) && !d->o.sym.no_symbols) {
            struct sym_tailcall tc[8];
            size_t nt = sym_tailcalls(d->sym, space, fs->pcs[k + 1], pc, exact, tc, 8);
            for (size_t i = 0; i < nt; i++) {
                struct fs_frame *f = push(&v, &n, &cap);
                f->phys = k;
                f->pc = tc[i].pc;
                f->func = tc[i].func;
                f->file = tc[i].file;
                f->line = tc[i].line;
                f->flags = FSF_TAILCALL;
            }
        }
    }
    if (fs->h.flags & FT_STKF_TRUNCATED) {
        struct fs_frame *f = push(&v, &n, &cap);
        f->phys = fs->npcs;
        f->flags = FSF_OUTER;
        f->func = sym_special(d->sym, "[outer frames unknown: unwinding stopped]");
    }
    *out = v;
    return n;
}

static int same(const void *ctx, size_t i, size_t j)
{
    const struct fs_frame *a = (const struct fs_frame *)ctx + i, *b = (const struct fs_frame *)ctx + j;
    return a->pc == b->pc && a->func == b->func && a->flags == b->flags && a->line == b->line &&
           !(a->flags & (FSF_CUT | FSF_OUTER));
}

static void frame_line(struct dec *d, const struct fs_frame *f, uint64_t num, struct outbuf *o)
{
    if (f->flags & (FSF_INLINED | FSF_TAILCALL))
        ob_printf(o, "    #%-3llu %-18s  ", (unsigned long long)num, f->flags & FSF_INLINED ? "[inlined]" : "[tail-call]");
    else
        ob_printf(o, "    #%-3llu 0x%016llx  ", (unsigned long long)num, (unsigned long long)f->pc);
    ob_text(o, sym_func(d->sym, f->func)->name);
    if (f->file) {
        ob_str(o, " at ");
        ob_text(o, f->file);
        ob_printf(o, ":%d", f->line > 0 ? f->line : 0);
    }
    ob_char(o, '\n');
}

void final_stack_print(struct dec *d, const struct ftr_stack *fs, struct outbuf *o)
{
    static const char *unw[] = {"?", "libunwind", "gdb", "ptrace"};
    struct fs_frame *f;
    size_t n = fs_frames(d, fs, &f);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += f[i].flags & FSF_CUT ? f[i].ncut : f[i].flags & FSF_OUTER ? 0 : 1;
    ob_printf(o, "  final stack (%s, %llu frames", fs->h.unwinder < 4 ? unw[fs->h.unwinder] : "?",
              (unsigned long long)total);
    if (fs->h.flags & FT_STKF_CUT)
        ob_printf(o, ", %u of them not kept", fs->h.ncut);
    ob_str(o, fs->h.flags & FT_STKF_TRUNCATED ? ", truncated):\n" : "):\n");
    uint64_t num = 0; /* gdb's frame numbers */
    for (size_t k = 0; k < n; k++) {
        if (f[k].flags & FSF_CUT) {
            ob_printf(o, "    ... #%llu..#%llu: %u frames not kept by the unwinder (it keeps the innermost %u and the "
                      "outermost %u; coreextract --max-frames) ...\n",
                      (unsigned long long)num, (unsigned long long)(num + f[k].ncut - 1), f[k].ncut, fs->h.cut_at,
                      fs->npcs - fs->h.cut_at);
            num += f[k].ncut;
            continue;
        }
        if (f[k].flags & FSF_OUTER) {
            ob_str(o, "    ... [the unwinder stopped here: an error or a corrupt stack; outer frames unknown] ...\n");
            continue;
        }
        size_t p, e = fold_cycle(n, k, FS_MAX_PERIOD, same, f, &p);
        frame_line(d, &f[k], num++, o);
        if (e - k < 3 * p)
            continue;
        if (p == 1) {
            ob_printf(o, "    ... #%llu..#%llu: %zu more frames at the same address ...\n", (unsigned long long)num,
                      (unsigned long long)(num + e - k - 2), e - k - 1);
        } else {
            for (size_t j = k + 1; j < k + p; j++) /* the first cycle in full */
                frame_line(d, &f[j], num++, o);
            ob_printf(o, "    ... #%llu..#%llu: %zu more frames repeating ", (unsigned long long)num,
                      (unsigned long long)(num + e - k - p - 1), e - k - p);
            uint32_t ids[FOLD_NAMES];
            for (size_t j = 0; j < p && j < FOLD_NAMES; j++)
                ids[j] = f[k + j].func;
            fold_cycle_names(o, d->sym, ids, p, " <- ");
            ob_str(o, " ...\n");
            num += e - k - p;
            k = e - 1;
            continue;
        }
        num += e - k - 1;
        k = e - 1;
    }
    free(f);
}
