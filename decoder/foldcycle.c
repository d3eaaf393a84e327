/*
 * foldcycle.c -- repeating cycles in lists of frames (see foldcycle.h).
 */
#include "foldcycle.h"
#include "outbuf.h"
#include "symtab.h"

size_t fold_cycle(size_t n, size_t k, size_t maxp, fold_same_fn same, const void *ctx, size_t *period)
{
    size_t best = k + 1;
    *period = 1;
    for (size_t p = 1; p <= maxp && k + p <= n; p++) {
        size_t e = k + p;
        while (e < n && same(ctx, e, e - p))
            e++;
        if (e - k >= 3 * p && e > best) {
            best = e;
            *period = p;
        }
    }
    return best;
}

void fold_cycle_names(struct outbuf *o, struct symtab *sym, const uint32_t *ids, size_t p, const char *sep)
{
    for (size_t j = 0; j < p && j < FOLD_NAMES; j++) {
        if (j)
            ob_str(o, sep);
        if (j == FOLD_NAMES - 1 && p > FOLD_NAMES) {
            ob_printf(o, "... (%zu functions)", p);
            break;
        }
        ob_text(o, sym_func(sym, ids[j])->name);
    }
}
