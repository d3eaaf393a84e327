/*
 * outbuf.c -- buffered output and number formatting.
 */
#define _GNU_SOURCE
#include "outbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int ob_open(struct outbuf *o, int fd, size_t cap)
{
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->buf = malloc(cap);
    if (!o->buf)
        return -1;
    o->cap = cap;
    return 0;
}

void ob_flush(struct outbuf *o)
{
    size_t off = 0;
    while (off < o->len && !o->err) {
        ssize_t w = write(o->fd, o->buf + off, o->len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            o->err = errno;
            break;
        }
        off += (size_t)w;
    }
    o->total += o->len;
    o->len = 0;
}

int ob_close(struct outbuf *o)
{
    if (o->buf)
        ob_flush(o);
    free(o->buf);
    o->buf = NULL;
    return o->err;
}

void ob_write_slow(struct outbuf *o, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        if (o->len == o->cap)
            ob_flush(o);
        size_t k = o->cap - o->len;
        if (k > n)
            k = n;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

static const char digits2[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                 "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                 "8081828384858687888990919293949596979899";

static const uint64_t pow10_tab[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull, 1000000000ull,
    10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull, 100000000000000ull,
    1000000000000000ull, 10000000000000000ull, 100000000000000000ull, 1000000000000000000ull,
    10000000000000000000ull};

/* decimal digits of v (1 for 0) */
static inline int ndigits(uint64_t v)
{
    v |= 1; /* 0 has one digit; the powers compared with are even */
    int t = (64 - __builtin_clzll(v)) * 1233 >> 12; /* ~log10(2^bits) */
    return t + 1 - (v < pow10_tab[t]);
}

int fmt_u64(char *p, uint64_t v)
{
    int n = ndigits(v);
    char *q = p + n;
    if (v >> 32) { /* the digits beyond 32 bits first, two at a time */
        while (v > UINT32_MAX) {
            unsigned d = (unsigned)(v % 100) * 2;
            v /= 100;
            q -= 2;
            memcpy(q, digits2 + d, 2);
        }
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100) {
        unsigned d = w % 100 * 2;
        w /= 100;
        q -= 2;
        memcpy(q, digits2 + d, 2);
    }
    if (w >= 10) {
        q -= 2;
        memcpy(q, digits2 + w * 2, 2);
    } else {
        *--q = (char)('0' + w);
    }
    return n;
}

int fmt_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p = '-';
        return 1 + fmt_u64(p + 1, (uint64_t)0 - (uint64_t)v);
    }
    return fmt_u64(p, (uint64_t)v);
}

/* the 8 decimal digits of x < 10^8, one per byte, the first digit in the
 * lowest byte (its first byte in memory): both halves of 4 digits, their
 * pairs and their digits are split at once in the lanes of one word */
static inline uint64_t digits8(uint32_t x)
{
    uint64_t merged = (uint64_t)(x / 10000) | (uint64_t)(x % 10000) << 32;
    uint64_t top = (merged * 10486 >> 20) & 0x0000007F0000007Full; /* / 100 in each 32-bit lane */
    uint64_t pairs = (merged - top * 100) << 16 | top;              /* 4 lanes of 16 bits, each < 100 */
    uint64_t tens = (pairs * 103 >> 10) & 0x000F000F000F000Full;    /* / 10 in each lane */
    return (pairs - tens * 10) << 8 | tens;
}

/* ".ddd" of every f < 1000, as the 4 bytes to store (x86-64: little-endian) */
#define FR(a, b, c) ((uint32_t)'.' | (uint32_t)('0' + (a)) << 8 | (uint32_t)('0' + (b)) << 16 | (uint32_t)('0' + (c)) << 24)
#define FR10(a, b) FR(a, b, 0), FR(a, b, 1), FR(a, b, 2), FR(a, b, 3), FR(a, b, 4), FR(a, b, 5), FR(a, b, 6), \
                   FR(a, b, 7), FR(a, b, 8), FR(a, b, 9)
#define FR100(a) FR10(a, 0), FR10(a, 1), FR10(a, 2), FR10(a, 3), FR10(a, 4), FR10(a, 5), FR10(a, 6), FR10(a, 7), \
                 FR10(a, 8), FR10(a, 9)
const uint32_t ob_frac3[1000] = {FR100(0), FR100(1), FR100(2), FR100(3), FR100(4),
                                 FR100(5), FR100(6), FR100(7), FR100(8), FR100(9)};

int fmt_us3(char *p, int64_t ns)
{
    int n = 0;
    uint64_t a;
    if (ns < 0) {
        p[n++] = '-';
        a = (uint64_t)0 - (uint64_t)ns;
    } else {
        a = (uint64_t)ns;
    }
    uint64_t us = a / 1000;
    if (us < 100000000) { /* (the times of a trace: under 100 s) at most 8 digits, written as one word */
        uint64_t dg = digits8((uint32_t)us);
        int lead = dg ? __builtin_ctzll(dg) >> 3 : 7; /* leading zero digits ("0" keeps one) */
        uint64_t w = (dg + 0x3030303030303030ull) >> (lead * 8);
        memcpy(p + n, &w, 8);
        n += 8 - lead;
    } else {
        n += fmt_u64(p + n, us);
    }
    memcpy(p + n, &ob_frac3[a % 1000], 4);
    return n + 4;
}

int fmt_us3_cached_slow(char *p, int64_t ns, struct us3_cache *c)
{
    if (ns < 0)
        return fmt_us3(p, ns);
    uint64_t us = (uint64_t)ns / 1000;
    c->us = us;
    c->len = (uint8_t)fmt_u64(c->s, us);
    memcpy(p, c->s, c->len);
    memcpy(p + c->len, &ob_frac3[(uint64_t)ns - us * 1000], 4);
    return c->len + 4;
}

void ob_u64(struct outbuf *o, uint64_t v)
{
    char *p = ob_reserve(o, 24);
    o->len += (size_t)fmt_u64(p, v);
}

void ob_i64(struct outbuf *o, int64_t v)
{
    char *p = ob_reserve(o, 24);
    o->len += (size_t)fmt_i64(p, v);
}

void ob_us3(struct outbuf *o, int64_t ns)
{
    char *p = ob_reserve(o, 32);
    o->len += (size_t)fmt_us3(p, ns);
}

void ob_hex(struct outbuf *o, uint64_t v)
{
    char *p = ob_reserve(o, 20);
    static const char hx[] = "0123456789abcdef";
    char tmp[16];
    int i = 16;
    do {
        tmp[--i] = hx[v & 15];
        v >>= 4;
    } while (v);
    p[0] = '0';
    p[1] = 'x';
    memcpy(p + 2, tmp + i, (size_t)(16 - i));
    o->len += (size_t)(2 + 16 - i);
}

/* length of a valid UTF-8 sequence at s (max n bytes), 0 if invalid */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t l;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        l = 2;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        l = 3;
        min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        l = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (l > n)
        return 0;
    unsigned cp = c & (0x7f >> l);
    for (size_t i = 1; i < l; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return l;
}

void ob_json_str(struct outbuf *o, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    static const char hx[] = "0123456789abcdef";
    ob_char(o, '"');
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            ob_write(o, s + i, run - i);
            i = run;
            continue;
        }
        unsigned c = s[i];
        char e[8];
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            ob_write(o, e, 2);
            i++;
        } else if (c < 0x20) {
            const char *esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
            if (esc) {
                ob_write(o, esc, 2);
            } else {
                memcpy(e, "\\u00", 4);
                e[4] = hx[c >> 4];
                e[5] = hx[c & 15];
                ob_write(o, e, 6);
            }
            i++;
        } else {
            size_t l = utf8_len(s + i, n - i);
            if (l) {
                ob_write(o, s + i, l);
                i += l;
            } else {
                ob_write(o, "\\ufffd", 6);
                i++;
            }
        }
    }
    ob_char(o, '"');
}

/* bytes of the next piece of s for a terminal: a printable character kept
 * as it is (1..4 bytes, *esc = 0) or one byte to escape (*esc = 1) */
static size_t text_piece(const unsigned char *s, size_t n, int *esc)
{
    size_t l = utf8_len(s, n);
    unsigned c = s[0];
    *esc = !l || c < 0x20 || c == 0x7f || (c == 0xc2 && s[1] < 0xa0); /* C0, DEL, C1 */
    return *esc ? 1 : l;
}

void ob_text(struct outbuf *o, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    while (n) {
        int esc;
        size_t l = text_piece(s, n, &esc);
        if (esc)
            ob_printf(o, "\\x%02x", s[0]);
        else
            ob_write(o, s, l);
        s += l;
        n -= l;
    }
}

void text_escape(char *dst, size_t cap, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str), k = 0;
    while (n) {
        int esc;
        size_t l = text_piece(s, n, &esc);
        size_t need = esc ? 4 : l;
        if (k + need + 1 > cap)
            break;
        if (esc)
            snprintf(dst + k, 5, "\\x%02x", s[0]);
        else
            memcpy(dst + k, s, l);
        k += need;
        s += l;
        n -= l;
    }
    if (cap)
        dst[k < cap ? k : cap - 1] = 0;
}

void ob_printf(struct outbuf *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        ob_write(o, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ob_write(o, big, (size_t)n);
    free(big);
}

char *json_quote(const char *s)
{
    /* format into a memory outbuf without an fd: use a growing buffer */
    size_t n = strlen(s);
    size_t cap = n * 6 + 3;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    struct outbuf o = {.fd = -1, .buf = out, .cap = cap};
    ob_json_str(&o, s, n); /* never flushes: cap is the worst case */
    out[o.len] = 0;
    return out;
}
