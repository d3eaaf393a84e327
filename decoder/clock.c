/*
 * clock.c -- see clock.h
 */
#include "clock.h"

void ft_clock_init(struct ft_clock *c, uint64_t ref_tsc, int64_t ref_ns, uint64_t hz)
{
    if (!hz)
        hz = 1000000000ull; /* unknown frequency: ticks are shown as ns */
    /* keep every derived time within +-2^62 ns: no overflow on garbage input */
    if (ref_ns > INT64_MAX / 4)
        ref_ns = INT64_MAX / 4;
    if (ref_ns < -(INT64_MAX / 4))
        ref_ns = -(INT64_MAX / 4);
    c->ref_tsc = ref_tsc;
    c->ref_ns = ref_ns;
    c->hz = hz;
    c->mult = ((unsigned __int128)1000000000ull << 64) / hz;
    c->fast_lim = (uint64_t)(c->mult >> 64) ? 0 : (uint64_t)(INT64_MAX / 4);
}

uint64_t ft_ns_ticks(const struct ft_clock *c, uint64_t ns)
{
    unsigned __int128 t = (unsigned __int128)ns * c->hz / 1000000000ull;
    return t > UINT64_MAX / 4 ? UINT64_MAX / 4 : (uint64_t)t;
}
