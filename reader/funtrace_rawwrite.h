/*
 * funtrace_rawwrite.h -- the one reader of the in-memory ABI and writer of
 * raw chunks, shared by every C producer of raw files:
 *   - the runtime's snapshot writer (reading its own memory),
 *   - coreextract (reading a core file, or a live pid with process_vm_readv),
 *   - funtrace-oomwatch (live pids).
 * The gdb extension uses it too, through the shared library's handle API
 * (funtrace_reader.h).
 *
 * Constraints: async-signal-safe (no malloc, no stdio, no locks), bounded
 * stack use (< 64 KiB), never trusts target memory (every pointer and size
 * read from the target is range-checked; all reads go through ft_reader).
 * Implementation: reader/rawwrite.c and rawwrite_ring.c, compiled once
 * (reader/build.mk) and linked into libfuntrace.a and libfuntrace_reader.a.
 */
#ifndef FUNTRACE_RAWWRITE_H
#define FUNTRACE_RAWWRITE_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads target memory.  Returns the number of bytes read starting at addr
 * (0..len); a short count means the rest is unreadable/missing. */
struct ft_reader {
    void *ctx;
    size_t (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    /* optional (NULL: read): read ring memory, which the runtime maps private
     * and anonymous (FORMAT.md 1.4): a page never written may come back as
     * zeros without being faulted in (reader/procmem.h) */
    size_t (*read_ring)(void *ctx, uint64_t addr, void *buf, size_t len);
};

/* Consumes output bytes. Returns 0 on success, -1 on error (errno set). */
struct ft_writer {
    void *ctx;
    int (*write)(void *ctx, const void *buf, size_t len);
};

/* What the caller knows about the source that the root does not say. */
struct ft_source_info {
    uint32_t source;                 /* enum ft_raw_source_kind */
    uint64_t pid;                    /* 0: take root->pid */
    const struct ft_raw_crash *crash;/* NULL: no SIGINFO chunk */
    const void *mappings;            /* MAPPINGS payload built by the caller */
    size_t mappings_len;             /*   (ft_mapping_record_size & co.) */
    uint64_t min_tsc;                /* leave out events older than this (0: none) */
    uint64_t taken_tsc;              /* see ft_raw_header.taken_tsc */
    int live;                        /* target may be running: re-read each
                                        ring's pos after copying it and drop
                                        what may have been overwritten */
    uint32_t extra_flags;            /* OR'ed into ft_raw_header.flags */
    /* appended: live mode copy buffer (optional, may be NULL).  When set and
     * it returns a buffer of >= len bytes, each live ring is copied ONCE into
     * it between two reads of pos and linearized from the copy (exact
     * COPY_RACED accounting).  Without it a live ring is read twice (plan,
     * then stream) and a race during the stream is only flagged (FORMAT.md
     * 2.3).  The buffer is used until the next call or the end of ft_raw_emit. */
    void *(*get_scratch)(void *scratch_ctx, size_t len);
    void *scratch_ctx;
    /* appended: in-place access for non-live sources (optional, may be
     * NULL).  Returns a pointer to the `len` bytes of target memory at addr
     * if the source holds ALL of them contiguously in the caller's address
     * space (e.g. a core file's mmap), else NULL (then they are read through
     * the ft_reader).  The memory must stay valid and unchanged until the
     * next call of map or the end of ft_raw_emit (the writer works on one
     * ring at a time; the shared library's adapter relies on it).  Used for
     * rings (planned and streamed in place, no copy); ignored when `live`
     * is set. */
    const void *(*map)(void *map_ctx, uint64_t addr, size_t len);
    void *map_ctx;
    /* appended: called with the tid of every thread record emitted (optional,
     * may be NULL); the SCHEDEVT writer keeps the events of these threads */
    void (*on_thread)(void *on_thread_ctx, uint32_t tid);
    void *on_thread_ctx;
};

/* What was emitted. */
struct ft_emit_stats {
    uint32_t abi_version;
    uint32_t header_flags;   /* ft_raw_header.flags as written */
    uint32_t nthreads;       /* threads emitted */
    uint32_t nthreads_lost;  /* registry records that could not be read */
    uint32_t nrings_missing; /* threads whose ring memory was not readable */
    uint32_t ngens;
    uint32_t nmodules;
    uint64_t nevents;        /* entries/words emitted in all */
    uint64_t bytes;          /* bytes written so far by ft_raw_* calls */
    char problem[160];       /* first problem met, "" if none (one line) */
    uint64_t pid;            /* FTHEADER.pid as written (appended) */
};

/* Validate a root candidate at addr: magic, self-pointer == addr, known ABI
 * version, word size 8, little-endian, sane table sizes.
 * Returns 0 if valid, else a negative FT_ROOT_E* code. */
#define FT_ROOT_EREAD -1     /* unreadable */
#define FT_ROOT_EMAGIC -2    /* no magic there */
#define FT_ROOT_ESELF -3     /* self-pointer does not match */
#define FT_ROOT_EVERSION -4  /* unknown ABI version */
#define FT_ROOT_ELAYOUT -5   /* word size / endianness / table sizes invalid */
int ft_root_check(const struct ft_reader *rd, uint64_t addr);
const char *ft_root_strerror(int code);

/* Emit FUNTRACE, FTHEADER, CMD LINE, [SIGINFO], MAPPINGS, PROCMAPS, MODULES, GENERATN
 * and every thread's THREADID/THRDSTAT/TRACE* chunks, in FORMAT.md order.
 * Does NOT write FINSTACK or ENDTRACE (the caller appends its stacks, then
 * calls ft_raw_end).  Returns 0 on success (possibly with PARTIAL set in
 * stats->header_flags), -1 if the output could not be written, -2 if the
 * root is invalid (nothing written). */
int ft_raw_emit(const struct ft_reader *rd, uint64_t root_addr,
                const struct ft_source_info *si, const struct ft_writer *w,
                struct ft_emit_stats *stats);

/* The target memory ft_raw_emit would read, as far as rd can tell now: for a
 * reader that must decide what to keep before it can read it all (coreextract
 * reading a core once from a pipe).  need(ctx, what, addr, len) is called for
 * the root, the command line, the module and generation tables and the thread
 * registry, and for the ring of every registry record that starts in
 * [lo, hi) and that rd can read (a range may be reported again on a later
 * call).  Returns the number of those records rd cannot read (yet), or a
 * negative FT_ROOT_E* code if there is no valid root at root_addr (nothing
 * reported). */
enum ft_need_what { FT_NEED_ROOT, FT_NEED_CMDLINE, FT_NEED_MODULES, FT_NEED_GENS, FT_NEED_REGISTRY,
                    FT_NEED_RING };
int ft_raw_needed(const struct ft_reader *rd, uint64_t root_addr, uint64_t lo, uint64_t hi,
                  void (*need)(void *ctx, int what, uint64_t addr, uint64_t len), void *ctx);

/* Write one chunk: 8-char magic, u64 length, payload. 0 / -1. */
int ft_raw_chunk(const struct ft_writer *w, const char magic[8],
                 const void *payload, uint64_t len, struct ft_emit_stats *stats);
/* Write a chunk header only (payload follows through w). 0 / -1. */
int ft_raw_chunk_header(const struct ft_writer *w, const char magic[8],
                        uint64_t len, struct ft_emit_stats *stats);
/* Write ENDTRACE. 0 / -1. */
int ft_raw_end(const struct ft_writer *w, struct ft_emit_stats *stats);

/* For a live process that cannot execute rdtsc for us (stopped under a
 * debugger): its TSC at CLOCK_MONOTONIC time now_mono_ns, from the newest
 * valid generation's clock snapshot (clk_tsc + elapsed * tsc_hz; the root's
 * tsc_hz if the generation has none).  0 if there is no generation, no rate
 * or no valid root.  FORMAT.md 2.4. */
uint64_t ft_raw_estimate_tsc(const struct ft_reader *rd, uint64_t root_addr, uint64_t now_mono_ns);

/* MAPPINGS payload helpers: size of one record with a path of path_len
 * bytes, and encode one record into buf (returns bytes written, 0 if cap is
 * too small). */
size_t ft_mapping_record_size(size_t path_len);
size_t ft_mapping_record_encode(void *buf, size_t cap, const struct ft_raw_mapping *m,
                                const char *path, size_t path_len);

#ifdef __cplusplus
}
#endif
#endif
