/*
 * satadd.h -- sums of durations that saturate instead of overflowing: the
 * times of a damaged raw can be anything (up to 2^62 ns), and the views add
 * them up (report.c, batchtree.c, flamegraph.c).
 */
#ifndef FT_DECODER_SATADD_H
#define FT_DECODER_SATADD_H

#include <stdint.h>

static inline int64_t sat_add64(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t sat_sub64(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

#endif
