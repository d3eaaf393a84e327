/*
 * clock.h -- TSC -> nanoseconds with exact integer arithmetic.
 *
 * ns(tsc) = ref_ns + (tsc - ref_tsc) * 1e9 / hz, computed as a 64.64 fixed
 * point multiplication in unsigned __int128 (error < 1 ns over any span),
 * never through doubles.
 */
#ifndef FT_DECODER_CLOCK_H
#define FT_DECODER_CLOCK_H

#include <stdint.h>

struct ft_clock {
    uint64_t ref_tsc;
    int64_t ref_ns;
    uint64_t hz;
    uint64_t fast_lim; /* the spans (tsc - ref_tsc) ft_clock_ns takes in one multiplication:
                          up to INT64_MAX / 4 when mult < 2^64 (hz >= 1 GHz), else 0 */
    unsigned __int128 mult; /* floor(1e9 * 2^64 / hz) */
};

void ft_clock_init(struct ft_clock *c, uint64_t ref_tsc, int64_t ref_ns, uint64_t hz);

/* ticks -> ns (saturating) */
static inline uint64_t ft_ticks_ns(const struct ft_clock *c, uint64_t d)
{
    unsigned __int128 hi = (unsigned __int128)d * (uint64_t)(c->mult >> 64);
    unsigned __int128 lo = ((unsigned __int128)d * (uint64_t)c->mult) >> 64;
    unsigned __int128 r = hi + lo;
    return r > (unsigned __int128)(INT64_MAX / 4) ? (uint64_t)(INT64_MAX / 4) : (uint64_t)r;
}

static inline int64_t ft_clock_ns(const struct ft_clock *c, uint64_t tsc)
{
    /* the common case (hz >= 1 GHz: mult < 2^64; a span the saturation
     * cannot reach, as the result is at most the span) in one multiplication;
     * a tsc before ref_tsc makes the difference wrap far above fast_lim */
    uint64_t d = tsc - c->ref_tsc;
    if (d <= c->fast_lim)
        return c->ref_ns + (int64_t)(uint64_t)(((unsigned __int128)d * (uint64_t)c->mult) >> 64);
    if (tsc >= c->ref_tsc)
        return c->ref_ns + (int64_t)ft_ticks_ns(c, tsc - c->ref_tsc);
    return c->ref_ns - (int64_t)ft_ticks_ns(c, c->ref_tsc - tsc);
}

/* ns -> ticks (for tolerances) */
uint64_t ft_ns_ticks(const struct ft_clock *c, uint64_t ns);

#endif
