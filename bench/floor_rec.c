/* floor_rec.c -- rings for the bench-local floor hooks (floor_pg.S,
 * floor_cyg.c).  Never instrumented.  The main thread's record is set up by a
 * constructor; other threads call bench_floor_thread_init() (hotpath.c does,
 * through a weak reference) before their timed loop; with BENCH_FLOOR_SHARED
 * set they keep the main record (a hot line shared by the threads, to show
 * what that costs). */
#include <stdlib.h>
#include "floor.h"

#define FLOOR_RING (1u << 20) /* the runtime's default ring size */

static struct bench_rec main_rec __attribute__((aligned(64)));
__thread struct bench_rec *bench_self __attribute__((tls_model("initial-exec"))) = &main_rec;

static struct bench_rec *new_rec(void)
{
    struct bench_rec *r = aligned_alloc(64, sizeof *r);
    void *ring = aligned_alloc(2 * FLOOR_RING, FLOOR_RING);
    if (!r || !ring)
        abort();
    r->pos = (uint64_t)(uintptr_t)ring;
    r->mask = (uint64_t)(uintptr_t)ring | (FLOOR_RING - 1);
    return r;
}

__attribute__((constructor(101))) static void floor_init(void)
{
    struct bench_rec *r = new_rec();
    main_rec = *r;
    bench_self = &main_rec;
}

void bench_floor_thread_init(void)
{
    if (getenv("BENCH_FLOOR_SHARED")) /* keep writing through the main record */
        return;
    bench_self = new_rec();
}

/* this thread's write position as an offset into its ring */
uint64_t bench_floor_get_pos(uint64_t *ring_size)
{
    *ring_size = FLOOR_RING;
    return bench_self->pos & (FLOOR_RING - 1);
}
