/*
 * foldcycle.h -- finding a repeating cycle in a list of frames (a deep
 * recursion), so that it is printed in a few lines: the final stack
 * (finalstack.c) and the frames enclosing the first call shown (text.c).
 */
#ifndef FT_DECODER_FOLDCYCLE_H
#define FT_DECODER_FOLDCYCLE_H

#include <stddef.h>

/* same(ctx, a, b): items a and b of the list are alike */
typedef int (*fold_same_fn)(const void *ctx, size_t a, size_t b);

/* items [k, n) of a list: the end of the part from k on that repeats a
 * cycle of *period (1..maxp) items at least 3 times, k + 1 if none (then
 * *period = 1); the longest part wins, ties go to the shortest period */
size_t fold_cycle(size_t n, size_t k, size_t maxp, fold_same_fn same, const void *ctx, size_t *period);

#endif
