/*
 * outbuf.h -- a large output buffer with hand-rolled number formatting
 * (JSON can be hundreds of MB: no stdio per event).
 */
#ifndef FT_DECODER_OUTBUF_H
#define FT_DECODER_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct outbuf {
    int fd;
    int err;        /* errno of the first write error, 0 if none */
    char *buf;
    size_t len, cap;
    uint64_t total; /* bytes written so far */
};

int ob_open(struct outbuf *o, int fd, size_t cap);
void ob_flush(struct outbuf *o);
/* flush and free; returns 0 or the errno of the first error */
int ob_close(struct outbuf *o);

static inline char *ob_reserve(struct outbuf *o, size_t n)
{
    if (o->cap - o->len < n)
        ob_flush(o);
    return o->buf + o->len;
}

void ob_write_slow(struct outbuf *o, const void *p, size_t n);
static inline void ob_write(struct outbuf *o, const void *p, size_t n)
{
    if (o->cap - o->len >= n) {
        memcpy(o->buf + o->len, p, n);
        o->len += n;
    } else {
        ob_write_slow(o, p, n);
    }
}
static inline void ob_str(struct outbuf *o, const char *s) { ob_write(o, s, strlen(s)); }
static inline void ob_char(struct outbuf *o, char c)
{
    if (o->len == o->cap)
        ob_flush(o);
    o->buf[o->len++] = c;
}

/* decimal formatting into p; return the number of chars written */
int fmt_u64(char *p, uint64_t v);
int fmt_i64(char *p, int64_t v);
/* ns as microseconds with 3 decimals ("12.345", "-0.001"); p needs 32 bytes of room */
int fmt_us3(char *p, int64_t ns);
/* the same, for a run of close times (a batch's slice starts, durations):
 * the integer part of the last one is kept in c (zeroed: none yet) */
struct us3_cache {
    uint64_t us;
    uint8_t len;
    char s[24]; /* the integer part's digits (copied whole) */
};
extern const uint32_t ob_frac3[1000]; /* ".ddd" of f < 1000, as 4 bytes */
int fmt_us3_cached_slow(char *p, int64_t ns, struct us3_cache *c);
/* (p needs 32 bytes of room) */
static inline int fmt_us3_cached(char *p, int64_t ns, struct us3_cache *c)
{
    if ((uint64_t)ns < 1000) { /* "0.ddd" */
        *p = '0';
        memcpy(p + 1, &ob_frac3[ns], 4);
        return 5;
    }
    uint64_t us = (uint64_t)ns / 1000;
    if (__builtin_expect(us != c->us || ns < 0, 0))
        return fmt_us3_cached_slow(p, ns, c);
    memcpy(p, c->s, sizeof c->s);
    memcpy(p + c->len, &ob_frac3[(uint64_t)ns - us * 1000], 4);
    return c->len + 4;
}

void ob_u64(struct outbuf *o, uint64_t v);
void ob_i64(struct outbuf *o, int64_t v);
void ob_us3(struct outbuf *o, int64_t ns);
void ob_hex(struct outbuf *o, uint64_t v); /* 0x... */
/* a JSON string literal (with quotes) of s[0..n) (invalid UTF-8 bytes become U+FFFD) */
void ob_json_str(struct outbuf *o, const char *s, size_t n);
void ob_printf(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s for a terminal (names from the input may be garbage): printable ASCII
 * and printable UTF-8 as they are, every other byte (controls, DEL, C1,
 * invalid UTF-8) as \xNN */
void ob_text(struct outbuf *o, const char *s);
/* the same into dst (cap bytes, always NUL-terminated; cut at a whole char) */
void text_escape(char *dst, size_t cap, const char *s);

/* JSON string literal into a malloc'd C string */
char *json_quote(const char *s);

#endif
