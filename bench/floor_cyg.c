/* floor_cyg.c -- the bench-local floor hook for -finstrument-functions (gcc,
 * clang): slot = pos & mask; store address; store rdtsc; pos = slot + 16.
 * With -DBENCH_COUNTER the TSC is replaced by the position (a counter). */
#include "floor.h"

#define BENCH_F_RET (1ULL << 63)

static inline __attribute__((always_inline)) void floor_event(uint64_t word)
{
    struct bench_rec *r = bench_self;
    uint64_t slot = r->pos & r->mask;
    uint64_t *e = (uint64_t *)(uintptr_t)slot;
    e[0] = word;
    __asm__ volatile("" ::: "memory");
#ifdef BENCH_COUNTER
    e[1] = r->pos;
#else
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    e[1] = ((uint64_t)hi << 32) | lo;
#endif
    __asm__ volatile("" ::: "memory");
    r->pos = slot + 16;
}

void __cyg_profile_func_enter(void *fn, void *cs)
{
    (void)cs;
    floor_event((uint64_t)(uintptr_t)fn);
}

void __cyg_profile_func_exit(void *fn, void *cs)
{
    (void)cs;
    floor_event((uint64_t)(uintptr_t)fn | BENCH_F_RET);
}
