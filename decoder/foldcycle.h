/*
 * foldcycle.h -- finding a repeating cycle in a list of frames (a deep
 * recursion), so that it is printed in a few lines: the final stack
 * (finalstack.c) and the frames enclosing the first call shown (text.c).
 */
#ifndef FT_DECODER_FOLDCYCLE_H
#define FT_DECODER_FOLDCYCLE_H

#include <stddef.h>
#include <stdint.h>

/* same(ctx, a, b): items a and b of the list are alike */
typedef int (*fold_same_fn)(const void *ctx, size_t a, size_t b);

/* items [k, n) of a list: the end of the part from k on that repeats a
 * cycle of *period (1..maxp) items at least 3 times, k + 1 if none (then
 * *period = 1); the longest part wins, ties go to the shortest period */
size_t fold_cycle(size_t n, size_t k, size_t maxp, fold_same_fn same, const void *ctx, size_t *period);

/* a cycle's functions as one line shows them: the names of the first of
 * them (ids[0..FOLD_NAMES), or fewer: up to p) joined by sep, "... (p
 * functions)" in place of the 7th and later when there are more than 7 */
#define FOLD_NAMES 7
struct outbuf;
struct symtab;
void fold_cycle_names(struct outbuf *o, struct symtab *sym, const uint32_t *ids, size_t p, const char *sep);

#endif
