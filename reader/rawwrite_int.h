/*
 * rawwrite_int.h -- internals shared by rawwrite.c (context, reading/writing
 * helpers, chunk framing, root, modules, generations, command line,
 * ft_raw_emit) and rawwrite_ring.c (rings and per-thread chunks).
 *
 * Not installed, not part of any API: everything declared here is hidden
 * (never in a traced program's .dynsym) and async-signal-safe.
 */
#ifndef FUNTRACE_RAWWRITE_INT_H
#define FUNTRACE_RAWWRITE_INT_H

#include "funtrace_rawwrite.h"

#include <stddef.h>
#include <stdint.h>

#define FT_RW_HIDDEN __attribute__((visibility("hidden")))

/* ---- limits (documented in FORMAT.md 2.3) -------------------------------- */
#define RW_ROOT_MAX 2048u          /* largest root accepted */
#define RW_STRUCT_MAX 2048u        /* largest thread/module/gen record accepted */
#ifndef RW_MAX_THREADS                /* (the fuzz harness lowers it: FUZZING.md) */
#define RW_MAX_THREADS (1u << 20)  /* registry capacity accepted */
#endif
#define RW_MAX_MODULES (1u << 16)
#define RW_MAX_RING (1ull << 40)   /* largest ring accepted */
#define RW_CMDLINE_MAX (1u << 20)  /* longer command lines are cut */
#define RW_PAGE 4096u              /* unit of "missing" memory */
#define RW_BLK 8192u               /* ring read block (stack) */
#define RW_OUT 2048u               /* output staging buffer (stack) */

#define RW_UNKNOWN_OFF UINT64_MAX  /* gen_pos outside the ring */
#define RW_TSC_SKEW 10000u         /* live: TSC ticks allowed between CPUs (FORMAT.md 2.3) */

/* ---- context ------------------------------------------------------------- */

struct rw {
    const struct ft_reader *rd;
    const struct ft_writer *w;
    const struct ft_source_info *si;
    struct ft_emit_stats *st;
    uint64_t root_addr;
    uint32_t root_size;
    uint32_t sizes[FT_S_COUNT];
    uint16_t offs[FT_F_COUNT];
    uint8_t root[RW_ROOT_MAX];
    /* root values */
    uint64_t pid, threads, modules, gens;
    uint32_t threads_used, modules_used, gens_cap;
    int partial;
};

/* ---- ring view: a thread's ring, read in blocks (rawwrite_ring.c) ---------- */

struct rview {
    struct rw *c;
    uint64_t ring, size;
    unsigned esz;
    uint64_t nmask;         /* slots - 1 (slots: a power of two) */
    const uint8_t *copy;    /* live copy (scratch), the source's own memory
                               (ft_source_info.map), or NULL: read in blocks */
    const uint8_t *cmiss;   /* copy: 1 byte per ring page, 1 = missing;
                               NULL with a mapping: nothing missing */
    uint64_t boff, blen;    /* block currently in buf (ring offsets) */
    uint64_t pg0;           /* page number of ring+boff */
    uint8_t pmiss[RW_BLK / RW_PAGE + 2];
    uint8_t buf[RW_BLK];
};

/* a thread registry record */
struct trec {
    uint64_t addr;
    uint8_t b[RW_STRUCT_MAX];
};

#define TF(t, id) ft_rw_fget(c, (t)->b, c->sizes[FT_S_THREAD], id)

/* ---- rawwrite.c ---------------------------------------------------------- */

/* Record the first problem: "<what> <num> <what2> <hex>" (any part optional). */
FT_RW_HIDDEN void ft_rw_problem(struct rw *c, const char *a, int has_n, uint64_t n, const char *b2,
                                int has_x, uint64_t x);
/* read up to len bytes at addr; returns the count read */
FT_RW_HIDDEN size_t ft_rw_rd(const struct ft_reader *r, uint64_t addr, void *buf, size_t len);
/* the same for ring memory (r->read_ring if set) */
FT_RW_HIDDEN size_t ft_rw_rd_ring(const struct ft_reader *r, uint64_t addr, void *buf, size_t len);
FT_RW_HIDDEN int ft_rw_rd_full(const struct ft_reader *r, uint64_t addr, void *buf, size_t len);
/* field `id` of a record held in buf[0..len); absent/out of range -> 0 */
FT_RW_HIDDEN uint64_t ft_rw_fget(const struct rw *c, const uint8_t *buf, size_t len, int id);
/* field `id` of the structure at addr, read again from the source; old if absent or unreadable */
FT_RW_HIDDEN uint64_t ft_rw_fread(const struct rw *c, uint64_t addr, int id, uint64_t old);
/* copy a byte-array field (absent -> zeros) */
FT_RW_HIDDEN void ft_rw_fbytes(const struct rw *c, const uint8_t *buf, size_t len, int id, void *out);
FT_RW_HIDDEN int ft_rw_wr(struct rw *c, const void *p, size_t n);
FT_RW_HIDDEN int ft_rw_chunk_hdr(struct rw *c, const char *magic, uint64_t len);

/* ---- rawwrite_ring.c ------------------------------------------------------ */

/* read registry record i; returns 1 if readable */
FT_RW_HIDDEN int ft_rw_trec_read(struct rw *c, uint32_t i, struct trec *t);
/* is a record in state s emitted (THREADID/THRDSTAT/TRACE*)? */
FT_RW_HIDDEN int ft_rw_state_emitted(uint64_t s);
/* pre-pass over one record: flags partial if its ring is (partly) missing or invalid */
FT_RW_HIDDEN void ft_rw_thread_prepass(struct rw *c, struct trec *t, struct rview *v, uint32_t idx);
/* THREADID, THRDSTAT and the ring chunk of one record */
FT_RW_HIDDEN int ft_rw_emit_thread(struct rw *c, struct trec *t, struct rview *v);

#endif
