/* floor.h -- the bench-local "floor" hook's per-thread record (bench only).
 * Same shape as the runtime's hot line: pos (address of the next slot) at 0,
 * mask at 8; the ring is aligned to 2*size and slot = pos & mask. */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H
#include <stdint.h>
struct bench_rec {
    uint64_t pos;
    uint64_t mask;
    uint64_t pad[6]; /* one cache line per thread */
};
extern __thread struct bench_rec *bench_self __attribute__((tls_model("initial-exec")));
uint64_t bench_floor_get_pos(uint64_t *ring_size);
void bench_floor_thread_init(void);
#endif
