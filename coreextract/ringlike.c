/* ringlike.c -- ring page recognition for the one-pass reader (see ringlike.h) */
#include "ringlike.h"
#include "funtrace_abi.h"

#include <stdlib.h>
#include <string.h>

static int in_ranges(const uint64_t (*r)[2], size_t n, uint64_t a)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first range with lo > a */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid][0] <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && a < r[lo - 1][1];
}

static int is_code(const struct ce_code *c, uint64_t a) { return in_ranges(c->r, c->n, a); }

/* an address's low 32 bits (4-byte granular, FORMAT.md 1.4: -pg rounds down,
 * -finstrument-functions up by at most 3) in executable memory */
static int is_code_lo(const struct ce_code *c, uint32_t lo)
{
    return in_ranges(c->lo32, c->nlo32, lo) || in_ranges(c->lo32, c->nlo32, (uint64_t)lo - 3);
}

/* an event's address low half: code, or a marker in the first page (a
 * landing pad's catch at FT_LANDING_PAD_ADDR, exc_events.c; a context
 * switch's marker and key digits, contexts.c; a setjmp's or longjmp's,
 * setjmps.c, interpose.c) */
static int is_event_lo(const struct ce_code *c, uint32_t lo)
{
    return lo == FT_LANDING_PAD_ADDR || lo == FT_CTX_SAVE_ADDR || lo == FT_CTX_RESUME_ADDR ||
           lo == FT_JMP_SET_ADDR || lo == FT_JMP_LONG_ADDR ||
           (lo >= FT_CTX_DIGIT_BASE && lo < FT_MARKER_PAGE) || is_code_lo(c, lo);
}

static int pair_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

size_t ce_code_lo32(const uint64_t (*r)[2], size_t n, uint64_t (*out)[2])
{
    const uint64_t M = 1ull << 32;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = r[i][0], b = r[i][1];
        if (b - a >= M) { /* every low half */
            out[0][0] = 0;
            out[0][1] = M;
            return 1;
        }
        uint64_t la = a & (M - 1), lb = la + (b - a);
        if (lb <= M) {
            out[k][0] = la;
            out[k++][1] = lb;
        } else {
            out[k][0] = la;
            out[k++][1] = M;
            out[k][0] = 0;
            out[k++][1] = lb - M;
        }
    }
    qsort(out, k, sizeof *out, pair_cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && out[i][0] <= out[m - 1][1]) {
            if (out[i][1] > out[m - 1][1]) out[m - 1][1] = out[i][1];
        } else {
            out[m][0] = out[i][0];
            out[m++][1] = out[i][1];
        }
    }
    return m;
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

/* fmt 3 (FT_FMT_EXACT8): an escape is exactly FT_E8_ESCAPE(type, payload) of a
 * known type, CATCH's payload 0; an event's address low half is code (or a
 * landing pad's marker) */
static int exact8(const uint8_t *p, size_t len, const struct ce_code *c)
{
    int events = 0;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t w = w64(p + i);
        if (w == 0) continue;
        if ((w & FT_E8_TAG_MASK) == FT_E8_ESC) {
            unsigned type = (unsigned)FT_E8_ESC_TYPE(w);
            uint64_t payload = w >> 32;
            if (w != FT_E8_ESCAPE(type, payload) || type < FT_E8_ADDR_HI || type > FT_E8_CATCH ||
                (type == FT_E8_CATCH && payload))
                return 0;
            continue;
        }
        if (!is_event_lo(c, (uint32_t)(w & FT_E8_ADDR_LO_MASK))) return 0;
        events = 1;
    }
    return events;
}

/* fmt 4 (FT_FMT_SAMPLED4): a stamped return; an escape of a known type, CATCH's
 * payload 0; else an event's address low half is code (or a landing pad's
 * marker) */
static int sampled4(const uint8_t *p, size_t len, const struct ce_code *c)
{
    int events = 0;
    for (size_t i = 0; i + 4 <= len; i += 4) {
        uint32_t v;
        memcpy(&v, p + i, 4);
        if (v == 0) continue;
        if (FT_S4_IS_STAMP(v)) {
            events = 1;
            continue;
        }
        if (FT_S4_IS_ESC(v)) {
            unsigned type = FT_S4_ESC_TYPE(v);
            if (type > FT_S4_CATCH || (type == FT_S4_CATCH && (v >> (32 - FT_S4_PAYLOAD_BITS)))) return 0;
            continue;
        }
        if (!is_event_lo(c, v & ~FT_S4_TAG_MASK)) return 0;
        events = 1;
    }
    return events;
}

int ce_ringlike(const uint8_t *p, size_t len, const struct ce_code *code)
{
    if (len < 16 || code->n == 0) return 0;
    /* each test stops at the first slot its encoding cannot hold */
    return exact8(p, len, code) || sampled4(p, len, code) || exact16(p, len, code) || sampled8(p, len, code);
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
