/*
 * foldcycle.c -- repeating cycles in lists of frames (see foldcycle.h).
 */
#include "foldcycle.h"

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
