/*
 * util.h -- small helpers shared by coreextract's files: the one-line error
 * message, verbose notes, checked allocation, buffered fd writer.
 */
#ifndef FT_CE_UTIL_H
#define FT_CE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"

extern int ce_verbose;
extern const char *ce_prog; /* "coreextract" */

/* progress note to stderr, only with -v */
void ce_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* warning line to stderr (always) */
void ce_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* the one line of a failure, "coreextract: ..." on stderr.  Every line of
 * these three is one line: control characters (e.g. from a corrupt core's
 * file names) are written as '?'. */
void ce_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What a PARTIAL trace is missing, as one line for the final message: the
 * threads whose records or rings could not be read (counted over all of
 * them, from st), then st->problem unless those counts already cover it. */
void ce_missing_summary(const struct ft_emit_stats *st, char *buf, size_t len);

/* What every extractor says about a finished trace, as one line (without the
 * program's prefix), shared by coreextract and the gdb extension:
 *   partial:              "trace incomplete[, core truncated at S of E bytes]: WHAT"
 *                         (WHAT: ce_missing_summary); returns 1
 *   complete, truncated:  "the core is truncated (S of E bytes) but the trace is complete"
 *   complete:             ""; both return 0
 * size/expected: the core's size and the size its headers promise (expected
 * <= size: not truncated, or not a core). */
int ce_trace_note(const struct ft_emit_stats *st, uint64_t size, uint64_t expected, char *buf, size_t len);

/* A SIGINFO chunk from a siginfo's fields (FORMAT.md 2.2): the fault address
 * is kept for SIGSEGV/SIGBUS/SIGFPE/SIGILL with code > 0, the sender's pid
 * for code <= 0 (kill, tgkill, sigqueue, abort). */
void ce_crash_fill(struct ft_raw_crash *out, int signo, int code, int err, uint32_t tid, uint64_t fault_addr,
                   uint32_t sender_pid);

/* Make room for one more element in *v (n used of *cap, elements of elt
 * bytes; the first allocation holds `first`).  Does not exit on failure, for
 * the watcher's paths: 0, or -1 (the array is unchanged). */
int ce_grow(void **v, size_t n, size_t *cap, size_t elt, size_t first);

void *ce_xmalloc(size_t n);
void *ce_xcalloc(size_t n, size_t sz);
void *ce_xrealloc(void *p, size_t n);
char *ce_xstrdup(const char *s);

/* growable byte buffer */
struct ce_buf {
    uint8_t *p;
    size_t len, cap;
};
void ce_buf_reserve(struct ce_buf *b, size_t extra);
void ce_buf_free(struct ce_buf *b);

/* "N", "NK", "NM", "NG" (also KiB/KB...) -> bytes; 0, or -1 if not a size */
int ce_parse_bytes(const char *s, uint64_t *v);

/* write all n bytes (retries short writes and EINTR); 0, or -1 with errno */
int ce_write_all(int fd, const void *buf, size_t n);

/* buffered writer over a file descriptor (ft_writer compatible).  src: a
 * file mapped read-only in our memory (a core): a large write of its bytes
 * is copied file to file by the kernel (copy_file_range) where the output
 * allows it, never through the mapping (whose pages, touched first there,
 * cost more than the copy: 16 MiB of rings in ~3 ms instead of ~10); else it
 * is written from the mapping, faulted in first (MADV_POPULATE_READ) */
struct ce_fdout {
    int fd;
    int err;           /* errno of the first failure, 0 if none */
    size_t len;
    const uint8_t *src_map; /* NULL: no source file */
    uint64_t src_len;
    int src_fd;
    int src_nocopy;    /* copy_file_range refused once: plain writes */
    uint8_t buf[1 << 16];
};
int ce_fdout_write(void *ctx, const void *p, size_t n);
int ce_fdout_flush(struct ce_fdout *o);

#endif
