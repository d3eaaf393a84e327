/*
 * ringlike.h -- does a page of a core look like part of a funtrace ring?
 *
 * The one-pass reader (corestream.c) meets most rings before the thread
 * registry that says where they are (the runtime maps the registry first, the
 * rings later, and the kernel dumps memory in address order, top-down mmaps
 * last).  It keeps such pages on speculation when every word of the page is
 * what a ring holds (FORMAT.md 1.2):
 *   FT_FMT_EXACT16   {word, tsc} pairs: {0, 0} (never written), or a word
 *                    whose address is in executable memory (any tsc: a
 *                    torn entry keeps an older one);
 *   FT_FMT_SAMPLED8  words: 0, a time word (bits 63..61 = 111), or an event
 *                    word whose address is in executable memory;
 *   FT_FMT_EXACT8    8-byte entries: 0 (never written), a valid escape
 *                    (ADDR_HI, TSC_HI, CATCH with payload 0), or an event
 *                    whose address's low 32 bits are those of an executable
 *                    address (the high half is in an earlier escape);
 *   FT_FMT_SAMPLED4  4-byte items: 0, a stamped return (any stamp), a valid
 *                    escape, or a call/return as in FT_FMT_EXACT8;
 * and at least one is an event.  A new ring encoding must be added here:
 * the stream-vs-file tests (tests/test_coreextract_stream.py) fail otherwise.
 */
#ifndef FT_CE_RINGLIKE_H
#define FT_CE_RINGLIKE_H

#include <stddef.h>
#include <stdint.h>

/* executable address ranges [lo, hi), sorted, not overlapping; and the same
 * ranges reduced to their low 32 bits (ce_code_lo32) */
struct ce_code {
    const uint64_t (*r)[2];
    size_t n;
    const uint64_t (*lo32)[2];
    size_t nlo32;
};

/* the low-32-bit ranges of the n ranges r, sorted and merged, into out (room
 * for 2 * n: a range that crosses a 4 GiB boundary is split); their count */
size_t ce_code_lo32(const uint64_t (*r)[2], size_t n, uint64_t (*out)[2]);

/* 1 if the len bytes at p (a page, 16-byte aligned in the target) could be
 * ring memory holding at least one event, else 0 */
int ce_ringlike(const uint8_t *p, size_t len, const struct ce_code *code);

/* 1 if all len bytes at p are zero */
int ce_all_zero(const uint8_t *p, size_t len);

#endif
