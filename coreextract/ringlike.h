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
 * and at least one word is not zero.  A new ring encoding must be added here:
 * the stream-vs-file tests (tests/test_coreextract_stream.py) fail otherwise.
 */
#ifndef FT_CE_RINGLIKE_H
#define FT_CE_RINGLIKE_H

#include <stddef.h>
#include <stdint.h>

/* executable address ranges [lo, hi), sorted, not overlapping */
struct ce_code {
    const uint64_t (*r)[2];
    size_t n;
};

/* 1 if the len bytes at p (a page, 16-byte aligned in the target) could be
 * ring memory holding at least one event, else 0 */
int ce_ringlike(const uint8_t *p, size_t len, const struct ce_code *code);

/* 1 if all len bytes at p are zero */
int ce_all_zero(const uint8_t *p, size_t len);

#endif
