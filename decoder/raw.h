/*
 * raw.h -- reader of funtrace raw files (FORMAT.md part 2, funtrace_abi.h
 * Part 2), and of the original funtrace.raw chunk set.
 *
 * A small reusable module: no dependency on the rest of the decoder.  It
 * indexes one trace ("sample": the chunks up to an ENDTRACE) of a raw file:
 * small chunks are parsed into memory, ring payloads (TRACEBUF/TRACEW08) are
 * only located (file offset + count) and read on demand with
 * ftr_read_entries(), so memory stays independent of the ring sizes.
 *
 * Never trusts the input: every length is checked against the file size;
 * a damaged file yields what could be recovered plus problem bits.
 */
#ifndef FT_DECODER_RAW_H
#define FT_DECODER_RAW_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_abi.h"

/* ---- input: a file (pread) or a memory buffer --------------------------- */
/* the part of a file mapped for ftr_entries_view (a window that slides) */
struct ftr_window {
    const uint8_t *p; /* NULL: none mapped */
    uint64_t off, len; /* the file's bytes [off, off + len) at p */
};
struct ftr_src {
    int fd;             /* -1: memory source */
    const uint8_t *mem;
    uint64_t size;
    int named;          /* fd is a file given by name (not a spooled copy of a pipe) */
    struct ftr_window *win; /* ftr_src_fd's: the file's mapped window (NULL: never mapped) */
    uint8_t head[32];   /* ftr_src_fd: the input's first bytes (to say what it is) */
    size_t nhead;
};

/* Use fd as the source.  A non-seekable fd (pipe) is first copied to an
 * unlinked temporary file.  0 on success, -1 with a message in err.  The
 * file is read with pread, and through a window of it mapped into memory by
 * ftr_entries_view (FTR_WINDOW bytes at most: memory stays independent of
 * the file's size): a file that shrinks meanwhile makes a read past its
 * new end raise SIGBUS there (ftr_src_window_has says whether an address
 * is in the window: the caller's to catch). */
#define FTR_WINDOW (4u << 20)
int ftr_src_fd(struct ftr_src *s, int fd, char *err, size_t errlen);
void ftr_src_mem(struct ftr_src *s, const void *p, size_t n);
/* unmap the window and close the fd when it is not 0..2 */
void ftr_src_close(struct ftr_src *s);
/* 1 if addr lies in s's mapped window (async-signal-safe) */
int ftr_src_window_has(const struct ftr_src *s, const void *addr);
/* bytes read at off (short at end of input) */
size_t ftr_read(const struct ftr_src *s, uint64_t off, void *buf, size_t len);

/* ---- the parsed trace ----------------------------------------------------- */
struct ftr_mapping {
    uint64_t start, end, offset;
    uint32_t prot;          /* FT_MAPF_* */
    uint32_t build_id_len;
    uint8_t build_id[FT_BUILD_ID_MAX];
    char *path;             /* "" for anonymous */
};

struct ftr_stack {
    struct ft_raw_stack h;
    uint64_t *pcs;          /* h.nframes entries (possibly fewer: npcs) */
    uint32_t npcs;
};

struct ftr_thread {
    uint64_t pid, tid;
    char name[FT_THREAD_NAME_LEN + 1];
    int has_id;             /* THREADID seen */
    int has_stat;           /* THRDSTAT seen */
    struct ft_raw_thread st;
    uint32_t fmt;           /* FT_FMT_EXACT16 / SAMPLED8 / EXACT8 / SAMPLED4; 0 = no ring chunk */
    uint64_t data_off;      /* file offset of entry 0 */
    uint64_t n;             /* entries (16 bytes) or words (8 bytes) */
    uint64_t rot;           /* item i is stored at (i + rot) % n: the original
                               funtrace dumps its whole ring in buffer order, so
                               its oldest entry is at rot; 0 for our raws */
    int truncated;          /* ring chunk cut short by the end of the file */
    int stack;              /* index into stacks[], -1 if none */
};

/* problem bits (struct ftr_trace.problems) */
#define FTR_P_TRUNCATED   0x01u /* file ends inside a chunk, or no ENDTRACE */
#define FTR_P_CORRUPT     0x02u /* unparsable chunk header: rest of file ignored */
#define FTR_P_BADCHUNK    0x04u /* a chunk with an invalid length/content was skipped */
#define FTR_P_UNKNOWN     0x08u /* unknown chunks were skipped (not a problem by itself) */
#define FTR_P_PARTIAL     0x10u /* FTHEADER says PARTIAL */
#define FTR_P_LOST        0x20u /* threads could not be read (nthreads_lost) */
#define FTR_P_COUNT       0x40u /* fewer threads than FTHEADER announced */

struct ftr_trace {
    int sample;             /* index of this sample in the file (0-based) */
    int nsamples;           /* samples in the file (a trailing unterminated one counts) */
    int original;           /* no FTHEADER: written by the original funtrace */
    int ended;              /* ENDTRACE seen */
    uint64_t tsc_hz;        /* FUNTRACE chunk (0 if absent) */
    int has_header;
    struct ft_raw_header hdr;
    char *cmdline;          /* "" if absent */
    int has_crash;
    struct ft_raw_crash crash;
    uint64_t faults_total;  /* FAULTS chunk: fatal-signal episodes in all (0: none/absent) */
    struct ft_fault faults[FT_FAULT_SLOTS]; /* the last ones, oldest first */
    uint32_t nfaults;
    struct ftr_mapping *maps;
    size_t nmaps;
    int maps_from_procmaps; /* maps parsed from a PROCMAPS chunk */
    struct ft_module *mods;
    size_t nmods;
    struct ft_gen *gens;    /* as in the file (valid ones, ascending) */
    size_t ngens;
    struct ftr_thread *threads;
    size_t nthreads;
    struct ftr_stack *stacks;
    size_t nstacks;
    /* SCHEDEVT (scheduling events; decoder/sched_states.c reads it): located only */
    int has_sched;
    uint64_t sched_off, sched_len; /* payload's file offset and length */
    uint32_t problems;      /* FTR_P_* */
    uint64_t bytes;         /* bytes of this sample in the file */
};

typedef void (*ftr_warn_fn)(void *ctx, const char *msg);

/* ftr_load results */
#define FTR_OK 0
#define FTR_ENOTRAW -1   /* the input does not start with a chunk */
#define FTR_EEMPTY -2    /* empty input */
#define FTR_ENOSAMPLE -3 /* no such sample */
#define FTR_ENOMEM -4

/* Index sample `sample` of the file (0-based; -1 = the last one).  warn (may
 * be NULL) gets one line per problem met.  On FTR_OK, t must be released
 * with ftr_free(). */
int ftr_load(const struct ftr_src *src, int sample, struct ftr_trace *t, ftr_warn_fn warn,
             void *ctx);
void ftr_free(struct ftr_trace *t);
const char *ftr_strerror(int code);

/* Read ring items [i, i+n) of th (16-byte struct ft_entry, or 8-byte words
 * / FT_FMT_EXACT8 entries, depending on th->fmt), oldest first, into buf.  Returns the number of
 * items read.  Items whose word is 0 were never written: skip them. */
/* bytes per ring item of a format */
static inline size_t ftr_item_size(uint32_t fmt)
{
    return fmt == FT_FMT_EXACT16 ? 16 : fmt == FT_FMT_SAMPLED4 ? 4 : 8;
}
size_t ftr_read_entries(const struct ftr_src *src, const struct ftr_thread *th, uint64_t i,
                        uint64_t n, void *buf);
/* The same without a copy where it can: items [i, i + *got) (*got <= n) at
 * the pointer returned, which points into the input in memory (a memory
 * source, or a file's mapped window; not aligned: chunks are not padded,
 * read the items with memcpy) -- then *got may be less than n where the
 * stored ring wraps or the window ends: ask again for the rest -- else into
 * buf, read as ftr_read_entries reads them (n items of room).  *got 0: none. */
const void *ftr_entries_view(const struct ftr_src *src, const struct ftr_thread *th, uint64_t i, uint64_t n,
                             void *buf, size_t *got);

/* Parse /proc/PID/maps text into mappings (used for PROCMAPS).  Returns the
 * number of mappings, -1 on allocation failure. */
long ftr_parse_procmaps(const char *text, size_t len, struct ftr_mapping **out);

#endif
