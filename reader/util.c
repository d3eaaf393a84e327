/* util.c -- see util.h */
#define _GNU_SOURCE
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int ce_verbose;
const char *ce_prog = "coreextract";

static void vline(const char *kind, const char *fmt, va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* one line, always, and nothing a terminal would act on: control
     * characters and bytes that are not UTF-8 (e.g. from a corrupt core's
     * file names) are written as '?' */
    for (unsigned char *p = (unsigned char *)msg; *p;) {
        unsigned n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        unsigned k = 1;
        while (n > 1 && k < n && (p[k] & 0xc0) == 0x80) k++;
        if (n == 1) {
            if (*p == '\n') *p = ' ';
            else if (*p < 0x20 || *p == 0x7f) *p = '?';
            p++;
        } else if (n && k == n && !(n == 2 && p[0] == 0xc2 && p[1] < 0xa0) && !(n == 2 && p[0] < 0xc2)) {
            p += n; /* a UTF-8 character (not a C1 control, not overlong) */
        } else {
            *p++ = '?';
        }
    }
    fprintf(stderr, "%s: %s%s\n", ce_prog, kind, msg);
}

void ce_note(const char *fmt, ...)
{
    if (!ce_verbose) return;
    va_list ap;
    va_start(ap, fmt);
    vline("", fmt, ap);
    va_end(ap);
}

void ce_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline("", fmt, ap);
    va_end(ap);
}

void ce_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline("warning: ", fmt, ap);
    va_end(ap);
}

static void add_part(char *buf, size_t len, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_part(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    if (*n >= len) return;
    if (*n) *n += (size_t)snprintf(buf + *n, len - *n, ", ");
    if (*n >= len) return;
    va_list ap;
    va_start(ap, fmt);
    *n += (size_t)vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
}

void ce_missing_summary(const struct ft_emit_stats *st, char *buf, size_t len)
{
    size_t n = 0;
    uint32_t all = st->nthreads + st->nthreads_lost;
    buf[0] = 0;
    if (st->nthreads_lost && !st->nthreads)
        add_part(buf, len, &n, "thread registry not readable (0 of %u threads)", all);
    else if (st->nthreads_lost)
        add_part(buf, len, &n, "%u thread record(s) not readable (%u of %u threads)", st->nthreads_lost,
                 st->nthreads, all);
    const char *p = st->problem;
    int ring_first = st->nrings_missing && !strncmp(p, "ring of thread", 14);
    if (st->nrings_missing)
        add_part(buf, len, &n, "ring memory of %u of %u threads missing%s%s%s", st->nrings_missing, all,
                 ring_first ? " (" : "", ring_first ? p : "", ring_first ? ")" : "");
    int covered = ring_first || (st->nthreads_lost && !strncmp(p, "thread record", 13));
    if (p[0] && !covered) add_part(buf, len, &n, "%s", p);
    if (!buf[0]) snprintf(buf, len, "parts were not readable");
}

int ce_trace_note(const struct ft_emit_stats *st, uint64_t size, uint64_t expected, char *buf, size_t len)
{
    int truncated = expected > size;
    buf[0] = 0;
    if (st->header_flags & FT_RAWF_PARTIAL) {
        char what[512], cut[96] = "";
        ce_missing_summary(st, what, sizeof what);
        if (truncated)
            snprintf(cut, sizeof cut, ", core truncated at %llu of %llu bytes", (unsigned long long)size,
                     (unsigned long long)expected);
        snprintf(buf, len, "trace incomplete%s: %s", cut, what);
        return 1;
    }
    if (truncated)
        snprintf(buf, len, "the core is truncated (%llu of %llu bytes) but the trace is complete",
                 (unsigned long long)size, (unsigned long long)expected);
    return 0;
}

void ce_crash_fill(struct ft_raw_crash *out, int signo, int code, int err, uint32_t tid, uint64_t fault_addr,
                   uint32_t sender_pid)
{
    memset(out, 0, sizeof *out);
    out->signo = signo;
    out->si_code = code;
    out->si_errno = err;
    out->tid = tid;
    if (code > 0 && (signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL))
        out->addr = fault_addr;
    else if (code <= 0)
        out->sender_pid = sender_pid;
}

static void oom(size_t n)
{
    fprintf(stderr, "%s: out of memory (allocating %zu bytes)\n", ce_prog, n);
    exit(2);
}

int ce_grow(void **v, size_t n, size_t *cap, size_t elt, size_t first)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : first;
    void *nv = realloc(*v, nc * elt);
    if (!nv) return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

void *ce_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *ce_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) oom(n * sz);
    return p;
}

void *ce_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *ce_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = ce_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void ce_buf_reserve(struct ce_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    b->p = ce_xrealloc(b->p, cap);
    b->cap = cap;
}

void ce_buf_free(struct ce_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int ce_write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ce_fdout_flush(struct ce_fdout *o)
{
    if (o->err) return -1;
    if (o->len && ce_write_all(o->fd, o->buf, o->len) != 0) {
        o->err = errno ? errno : EIO;
        return -1;
    }
    o->len = 0;
    return 0;
}

#ifdef MADV_POPULATE_READ
#define MADV_POPULATE_READ_ MADV_POPULATE_READ
#else
#define MADV_POPULATE_READ_ 22 /* Linux 5.14; older kernels: EINVAL, ignored */
#endif

/* [p, p+n) lies in the source file's mapping: copy it file to file.  1 done,
 * 0 nothing copied and none will be (write it), -1 error (errno) */
static int fdout_copy_src(struct ce_fdout *o, const uint8_t *p, size_t n)
{
    loff_t off = (loff_t)(p - o->src_map);
    size_t done = 0;
    while (done < n) {
        ssize_t k = copy_file_range(o->src_fd, &off, o->fd, NULL, n - done, 0);
        if (k > 0) {
            done += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && done == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                                   errno == EBADF || errno == EPERM || errno == ETXTBSY)) {
            o->src_nocopy = 1; /* (a pipe, an O_APPEND file, another file system's file...) */
            return 0;
        }
        if (k == 0) errno = EIO; /* the source file shrank under us */
        return -1;
    }
    return 1;
}

int ce_fdout_write(void *ctx, const void *p, size_t n)
{
    struct ce_fdout *o = ctx;
    if (o->err) return -1;
    if (n >= sizeof o->buf) {
        if (ce_fdout_flush(o)) return -1;
        const uint8_t *b = p;
        int in_src = o->src_map && b >= o->src_map && (uint64_t)(b - o->src_map) < o->src_len &&
                     n <= o->src_len - (uint64_t)(b - o->src_map);
        if (in_src && !o->src_nocopy) {
            int r = fdout_copy_src(o, b, n);
            if (r > 0) return 0;
            if (r < 0) {
                o->err = errno ? errno : EIO;
                return -1;
            }
        }
        if (in_src) {
            /* written from the mapping: its pages faulted in at once, not one
             * fault per few pages inside write() */
            uintptr_t a = (uintptr_t)b & ~(uintptr_t)4095;
            (void)madvise((void *)a, (uintptr_t)b + n - a, MADV_POPULATE_READ_);
        }
        if (ce_write_all(o->fd, p, n) != 0) {
            o->err = errno ? errno : EIO;
            return -1;
        }
        return 0;
    }
    if (sizeof o->buf - o->len < n && ce_fdout_flush(o)) return -1;
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    return 0;
}

int ce_parse_bytes(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    if (!s || !isdigit((unsigned char)s[0]))
        return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' && shift)
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (shift && x > (UINT64_MAX >> shift)))
        return -1;
    *v = (uint64_t)x << shift;
    return 0;
}
