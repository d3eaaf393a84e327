/*
 * corestream.h -- read a core ONCE, in file order, from a pipe or a
 * decompressor (a core_pattern handler's stdin, a zstd/lz4/xz core), keeping
 * only the memory a trace needs: memory O(rings + stacks), no temporary file.
 *
 * A kernel core arrives as: ELF header, program headers, notes (threads'
 * registers, auxv, NT_FILE), then the memory segments in address order.  Kept:
 *   - the root: where the executable's funtrace_root symbol says (its file on
 *     disk + the load bias from auxv), or wherever a valid root (magic and
 *     self-pointer) streams by;
 *   - what the root points to (command line, module and generation tables,
 *     thread registry) and the rings the registry points to, when they come
 *     after it;
 *   - rings that come BEFORE the registry (the usual case: they are mapped
 *     after it, below it): pages that look like ring memory (ringlike.h) are
 *     kept on speculation, at most keep_max bytes; zero pages are remembered,
 *     not stored;
 *   - each thread's stack from its stack pointer up (at most CE_STREAM_STACK
 *     bytes), the vdso, and the first pages of every mapped ELF file (build-ids).
 * Everything else is dropped as it goes by.  Memory a trace needs that was
 * dropped (e.g. a registry that came before the root, a ring that did not
 * look like one, speculation over its bound) reads as missing: the extraction
 * reports it (core->dropped_hit), it is never made up.
 */
#ifndef FT_CE_CORESTREAM_H
#define FT_CE_CORESTREAM_H

#include <stddef.h>
#include <stdint.h>
#include "corefile.h"
#include "input.h"

#define CE_STREAM_STACK (64ull << 20)       /* stack kept per thread, from its sp up */
#define CE_STREAM_KEEP_MAX (1ull << 30)     /* default bound on memory kept on speculation */

struct core_stream_opts {
    const char *exe;       /* the EXE argument (NULL: the executable named in the core) */
    int stacks;            /* keep the threads' stacks (for unwinding) */
    uint64_t keep_max;     /* bound on speculation (0: CE_STREAM_KEEP_MAX) */
};

struct core_stream_stats {
    uint64_t kept_spec;    /* bytes kept on speculation (ring-like pages) */
    uint64_t spec_refused; /* ring-like bytes dropped because keep_max was reached */
    int root_predicted;    /* the root's address was known from the executable */
    int root_early;        /* the root was found while streaming */
    int rings_known;       /* the registry was read before the end (every ring known) */
    char warn[256];        /* a warning to print (e.g. PN_XNUM count mismatch), "" if none */
};

/* Read and parse the whole stream into c (pieces of kept memory).  0, or -1
 * with a one-line reason in err (not a core, or unreadable/corrupt input);
 * a stream that ends early is not an error: c->size < c->expected_size. */
int core_stream_open(struct core *c, struct ce_src *src, const struct core_stream_opts *o,
                     struct core_stream_stats *st, char *err, size_t errlen);

#endif
