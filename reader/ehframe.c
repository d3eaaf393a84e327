/* ehframe.c -- the lookup table of an .eh_frame without .eh_frame_hdr (see ehframe.h) */
#include "ehframe.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

/* pointer encodings (DW_EH_PE_*): the value's format, low nibble; how it
 * applies, high bits */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APPLY 0x70
#define PE_INDIRECT 0x80
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10

/* a bounded cursor over the section: every read past end sets bad */
struct cur {
    const uint8_t *p;
    uint64_t pos, end;
    int bad;
};

static uint64_t rd_n(struct cur *c, unsigned n)
{
    if (c->bad || c->end - c->pos < n || c->pos > c->end) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[c->pos + i] << (8 * i);
    c->pos += n;
    return v;
}

static uint64_t rd_leb(struct cur *c, int sign)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        uint64_t b = rd_n(c, 1);
        if (c->bad)
            return 0;
        if (shift < 64)
            v |= (b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    if (sign && shift < 64 && (v >> (shift - 1)) & 1)
        v |= ~0ull << shift;
    return v;
}

/* a value of encoding enc's format (its application is the caller's) */
static uint64_t rd_enc(struct cur *c, unsigned enc)
{
    switch (enc & PE_FORMAT) {
    case PE_ABSPTR: case PE_UDATA8: case PE_SDATA8: return rd_n(c, 8);
    case PE_UDATA2: return rd_n(c, 2);
    case PE_SDATA2: return (uint64_t)(int64_t)(int16_t)rd_n(c, 2);
    case PE_UDATA4: return rd_n(c, 4);
    case PE_SDATA4: return (uint64_t)(int64_t)(int32_t)rd_n(c, 4);
    case PE_ULEB128: return rd_leb(c, 0);
    case PE_SLEB128: return rd_leb(c, 1);
    default: c->bad = 1; return 0;
    }
}

/* the FDE pointer encoding of the CIE at off (its 'R' augmentation;
 * absolute if it has none), or -1 if the CIE cannot be read */
static int cie_fde_encoding(const uint8_t *sec, uint64_t len, uint64_t off)
{
    struct cur c = {sec, off, len, 0};
    uint64_t n = rd_n(&c, 4), idsize = 4;
    if (n == 0xffffffffu) {
        n = rd_n(&c, 8);
        idsize = 8;
    }
    if (c.bad || n > len - c.pos)
        return -1;
    c.end = c.pos + n;
    if (rd_n(&c, (unsigned)idsize) != 0) /* not a CIE */
        return -1;
    unsigned version = (unsigned)rd_n(&c, 1);
    const char *aug = (const char *)sec + c.pos;
    size_t alen = strnlen(aug, c.end > c.pos ? c.end - c.pos : 0);
    if (c.bad || c.pos + alen >= c.end)
        return -1;
    c.pos += alen + 1;
    if (strstr(aug, "eh"))
        rd_n(&c, 8); /* (gcc 2's eh pointer) */
    rd_leb(&c, 0);   /* code alignment */
    rd_leb(&c, 1);   /* data alignment */
    if (version == 1)
        rd_n(&c, 1); /* return address register */
    else
        rd_leb(&c, 0);
    int enc = PE_ABSPTR;
    if (aug[0] == 'z') {
        rd_leb(&c, 0); /* augmentation data's length */
        for (size_t i = 1; i < alen && !c.bad; i++) {
            if (aug[i] == 'R')
                enc = (int)rd_n(&c, 1);
            else if (aug[i] == 'P')
                rd_enc(&c, (unsigned)rd_n(&c, 1)); /* the personality routine */
            else if (aug[i] == 'L')
                rd_n(&c, 1);
            else if (aug[i] != 'S' && aug[i] != 'B')
                break; /* unknown: the encoding is what was read so far */
        }
    }
    return c.bad ? -1 : enc;
}

static int by_start(const void *a, const void *b)
{
    const struct eh_entry *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

size_t eh_frame_index(const uint8_t *sec, uint64_t len, uint64_t addr, struct eh_entry **out)
{
    struct eh_entry *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t last_cie = UINT64_MAX;
    int enc = -1;
    struct cur c = {sec, 0, len, 0};
    while (c.pos < len) {
        uint64_t rec = c.pos, size = rd_n(&c, 4), idsize = 4;
        if (c.bad || size == 0) /* the terminator */
            break;
        if (size == 0xffffffffu) {
            size = rd_n(&c, 8);
            idsize = 8;
        }
        if (c.bad || size > len - c.pos)
            break;
        uint64_t next = c.pos + size, idpos = c.pos;
        uint64_t id = rd_n(&c, (unsigned)idsize);
        if (c.bad)
            break;
        if (id != 0 && id <= idpos) { /* an FDE: id is the distance back to its CIE */
            uint64_t cie = idpos - id;
            if (cie != last_cie) {
                last_cie = cie;
                enc = cie_fde_encoding(sec, len, cie);
            }
            struct cur f = {sec, c.pos, next, 0};
            uint64_t at = addr + f.pos;
            int usable = enc >= 0 && enc != PE_OMIT && !(enc & PE_INDIRECT) &&
                         ((enc & PE_APPLY) == 0 || (enc & PE_APPLY) == PE_PCREL);
            uint64_t loc = usable ? rd_enc(&f, (unsigned)enc) : 0;
            if (usable && !f.bad && loc) {
                if ((enc & PE_APPLY) == PE_PCREL)
                    loc += at;
                int64_t s = (int64_t)(loc - addr);
                if (s >= INT32_MIN && s <= INT32_MAX && rec <= INT32_MAX) {
                    if (n == cap) {
                        cap = cap ? cap * 2 : 256;
                        v = ce_xrealloc(v, cap * sizeof *v);
                    }
                    v[n++] = (struct eh_entry){(int32_t)s, (int32_t)rec};
                }
            }
        }
        c.pos = next;
    }
    if (n)
        qsort(v, n, sizeof *v, by_start);
    *out = v;
    return n;
}
