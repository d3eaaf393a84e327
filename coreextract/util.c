/* util.c -- see util.h */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ce_verbose;
const char *ce_prog = "coreextract";

static void vline(const char *kind, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* one line, always */
    for (char *p = msg; *p; p++)
        if (*p == '\n') *p = ' ';
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

void ce_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline("warning: ", fmt, ap);
    va_end(ap);
}

static void oom(size_t n)
{
    fprintf(stderr, "%s: out of memory (allocating %zu bytes)\n", ce_prog, n);
    exit(2);
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

static int write_all(int fd, const uint8_t *p, size_t n)
{
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
    if (o->len && write_all(o->fd, o->buf, o->len) != 0) {
        o->err = errno ? errno : EIO;
        return -1;
    }
    o->len = 0;
    return 0;
}

int ce_fdout_write(void *ctx, const void *p, size_t n)
{
    struct ce_fdout *o = ctx;
    if (o->err) return -1;
    if (n >= sizeof o->buf) {
        if (ce_fdout_flush(o)) return -1;
        if (write_all(o->fd, p, n) != 0) {
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
