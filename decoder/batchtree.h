/*
 * batchtree.h -- the call tree inside one batch of slices (batchtree.c): a
 * batch is in pre-order with depths from 0 (view.h), so a slice's parent is
 * the last slice before it one level up.
 */
#ifndef FT_DECODER_BATCHTREE_H
#define FT_DECODER_BATCHTREE_H

#include <stddef.h>
#include <stdint.h>
#include "slice.h"

/* parent[i]: index of slice i's parent in s (-1: a root of the batch);
 * self[i]: its duration minus its children's (the time spent in the
 * function itself, or in calls the filters left out) */
void batch_tree(const struct slice *s, size_t n, int64_t *parent, int64_t *self);

#endif
