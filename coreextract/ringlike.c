/* ringlike.c -- ring page recognition for the one-pass reader (see ringlike.h) */
#include "ringlike.h"
#include "funtrace_abi.h"

#include <string.h>

static int is_code(const struct ce_code *c, uint64_t a)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) { /* first range with lo > a */
        size_t mid = lo + (hi - lo) / 2;
        if (c->r[mid][0] <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && a < c->r[lo - 1][1];
}

static uint64_t w64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int exact16(const uint8_t *p, size_t len, const struct ce_code *c)
{
    int any = 0;
    for (size_t i = 0; i + 16 <= len; i += 16) {
        uint64_t w = w64(p + i), t = w64(p + i + 8);
        if (w == 0) {
            if (t != 0) return 0;
            continue;
        }
        if (FT_IS_TIME_WORD(w) || !is_code(c, w & FT_ADDR_MASK)) return 0;
        any = 1;
    }
    return any;
}

static int sampled8(const uint8_t *p, size_t len, const struct ce_code *c)
{
    int events = 0;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t w = w64(p + i);
        if (w == 0 || FT_IS_TIME_WORD(w)) continue;
        if (!is_code(c, w & FT_ADDR_MASK)) return 0;
        events = 1;
    }
    return events;
}

int ce_ringlike(const uint8_t *p, size_t len, const struct ce_code *code)
{
    if (len < 16 || code->n == 0) return 0;
    /* cheap reject first: the first non-zero word must be a code address or a time word */
    size_t i = 0;
    while (i + 8 <= len && w64(p + i) == 0) i += 8;
    if (i + 8 > len) return 0;
    uint64_t w = w64(p + i);
    if (!FT_IS_TIME_WORD(w) && !is_code(code, w & FT_ADDR_MASK)) return 0;
    return exact16(p, len, code) || sampled8(p, len, code);
}

int ce_all_zero(const uint8_t *p, size_t len)
{
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        uint64_t v[8];
        memcpy(v, p + i, 64);
        acc |= v[0] | v[1] | v[2] | v[3] | v[4] | v[5] | v[6] | v[7];
        if (acc) return 0;
    }
    for (; i < len; i++) acc |= p[i];
    return acc == 0;
}
