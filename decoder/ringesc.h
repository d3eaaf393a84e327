/*
 * ringesc.h -- internals shared by ring8.c (FT_FMT_EXACT8) and ring4.c
 * (FT_FMT_SAMPLED4): the rings whose items hold low halves and whose high
 * halves come from escape items (FORMAT.md 1.4).  Not used elsewhere.
 */
#ifndef FT_DECODER_RINGESC_H
#define FT_DECODER_RINGESC_H

#include <stdint.h>
#include "decstate.h"

#define CK 4096u     /* items per checkpoint */
#define BLK 8192u    /* items per read */
#define NSAMPLE 64u  /* addresses kept to choose an unknown address high half */

/* the decoding state at a checkpoint */
struct ck {
    uint32_t ahi, thi;
    uint8_t aknown, tknown, catch_next, pad;
    uint64_t last_tsc;
};

/* a run of items whose address / TSC high half is not known from an
 * escape before them: [start, end) items */
struct run {
    uint64_t start, end;
    int tsc;             /* 1: TSC run, 0: address run */
    uint32_t hi;         /* resolved high half */
    /* while scanning */
    uint64_t lo_first, lo_last; /* TSC runs: low halves of the first/last timed item */
    int have_l;          /* TSC runs: the last known time before the run (L) */
    uint64_t L;
    int have_prev;       /* address runs: the last known high half before it */
    uint32_t prev;
    uint32_t samples[NSAMPLE];
    unsigned nsamples;
};

/* items [lo, hi) whose runs are all known (a ring prepared in part) */
struct span {
    uint64_t lo, hi;
};

struct ring8 {
    struct ck *ck;
    size_t nck;
    struct run *runs;    /* in order of their start (both kinds interleaved) */
    size_t nruns, runcap;
    /* FT_FMT_EXACT8 prepared in part (ring8.c: only the text view): which
     * checkpoints are set, which items' runs known; NULL: the whole ring */
    uint8_t *ckok;
    struct span *spans;
    size_t nspans, spancap;
};

struct run *rx_run_new(struct ring8 *r, uint64_t start, int tsc);
uint32_t rx_addr_resolve(const struct dec *d, const struct run *u, int have_next, uint32_t next, int have_prev,
                         uint32_t prev);
uint32_t rx_tsc_resolve(const struct run *u, int have_u, uint64_t U, int have_l, uint64_t L, uint64_t ref);
/* the time a TSC run with no bound is dated nearest to: the last generation's
 * clock reference, or for the ring's newest run in a raw read from a running
 * process or snapshotted (its events end about then) the time of the read,
 * when later -- a process with no generation boundaries (FUNTRACE_GEN_MS=0)
 * has only its start's, and a run read seconds later was put an epoch of
 * 2^32 ticks early */
uint64_t rx_tsc_ref(const struct dec *d, const struct dthread *th, const struct run *u);
/* the upper bound U of a TSC run ending at item end (have: U known, from the
 * escapes after it): tightened by the first generation boundary recorded after
 * the run, else, unknown, the thread's exit */
void rx_tsc_upper(const struct dec *d, const struct dthread *th, uint64_t end, int *have, uint64_t *U);
/* the TSC high half of run u from the thread's record (THRDSTAT
 * FT_TSF_TSC_HI: the high half of the last TSC_HI escape it wrote, which
 * holds for every event after the ring's last escape): 1 (and *hi) only for
 * a run that nothing follows in the ring but items of its own high half --
 * no TSC_HI escape, no zeroed item (where such an escape may have been lost) */
int rx_tsc_hi_recorded(const struct dec *d, const struct dthread *th, const struct run *u, uint32_t *hi);
/* the full TSC of the first timed item after the first TSC_HI escape in
 * items [i, i + lim) (fmt 3: the first event within 8 items after it; fmt
 * 4: the first stamp within 64); 1 if found */
int rx_time_after_esc(const struct dec *d, const struct ftr_thread *rt, uint64_t i, uint64_t lim, uint64_t *T);
/* fmt 4: the 32-bit TSC high half of a TSC_HI payload (bits 58..32), the
 * bits above taken from ref */
static inline uint32_t s4_thi(uint32_t payload, uint64_t ref)
{
    return (uint32_t)((ref >> 32) & ~(uint64_t)FT_S4_HI_MASK) | (payload & FT_S4_HI_MASK);
}
void rx_note_invalid(struct dthread *th, uint64_t i);
uint64_t rx_ring_lower(const struct dec *d, const struct dthread *th, int *have);
int rx_run_hi(const struct ring8 *r, uint64_t idx, int tsc, uint32_t *hi);
void rx_prepare4(struct dec *d, struct dthread *th);
/* r is about to be freed: ring4.c keeps no state of it */
void rx_forget4(const struct ring8 *r);

#endif
