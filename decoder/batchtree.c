/*
 * batchtree.c -- see batchtree.h.
 */
#include <stdlib.h>

#include "batchtree.h"
#include "satadd.h"
#include "xalloc.h"

void batch_tree(const struct slice *s, size_t n, int64_t *parent, int64_t *self)
{
    static int64_t *last; /* last[d]: the latest slice seen at depth d */
    static size_t cap;
    size_t top = 0;       /* depths [0, top) are set */
    for (size_t i = 0; i < n; i++) {
        size_t d = s[i].depth;
        if (d >= cap)
            last = xgrow(last, &cap, d + 1, sizeof *last);
        int64_t p = d > 0 && d - 1 < top ? last[d - 1] : -1;
        parent[i] = p;
        self[i] = sat_sub64(s[i].end, s[i].start);
        if (p >= 0)
            self[p] = sat_sub64(self[p], self[i]);
        last[d] = (int64_t)i;
        top = d + 1;
    }
}
