/* corestream.c -- read a core once from a stream, keeping what a trace needs (see corestream.h) */
#include "corestream_int.h"
#include "elfinfo.h"
#include "ringlike.h"
#include "util.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- stream --------------------------------------------------------------- */

/* read up to n bytes; a read error after the headers ends the stream (the
 * core reads as truncated there, the reason in st->warn) */
static uint64_t sread(struct cs *s, void *buf, uint64_t n, int fatal)
{
    if (s->eof) return 0;
    char e[160];
    ssize_t r = ce_src_read(s->src, buf, (size_t)n, e, sizeof e);
    if (r < 0) {
        s->eof = 1;
        if (fatal) {
            snprintf(s->err, s->errlen, "%s", e);
            return (uint64_t)-1;
        }
        snprintf(s->st->warn, sizeof s->st->warn, "%.160s; the core is read up to byte %llu", e,
                 (unsigned long long)s->pos);
        return 0;
    }
    if ((uint64_t)r < n) s->eof = 1;
    s->pos += (uint64_t)r;
    return (uint64_t)r;
}

static void skip(struct cs *s, uint64_t n)
{
    while (n && !s->eof) {
        uint64_t k = n < CHUNK ? n : CHUNK;
        uint64_t r = sread(s, s->buf, k, 0);
        n -= r;
        if (r < k) break;
    }
}

/* ---- memory ------------------------------------------------------------------ */

static const uint8_t root_magic[FT_ROOT_MAGIC_LEN] = FT_ROOT_MAGIC;

/* root candidates in [va, va+len): magic and self-pointer */
static void scan_roots(struct cs *s, uint64_t va, const uint8_t *p, uint64_t len)
{
    uint64_t m0;
    memcpy(&m0, root_magic, 8);
    uint64_t i = (8 - (va & 7)) & 7;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != m0) continue;
        uint64_t a = va + i, self;
        if (i + 32 <= len) {
            memcpy(&self, p + i + 24, 8);
            if (memcmp(p + i, root_magic, FT_ROOT_MAGIC_LEN) != 0 || self != a) continue;
        }
        add_pending(s, a);
    }
}

/* one chunk of a PT_LOAD: keep, remember as zero, or drop each page */
static void take(struct cs *s, const Elf64_Phdr *ph, uint64_t va, const uint8_t *p, uint64_t len, uint64_t off)
{
    struct ce_code code = { (const uint64_t (*)[2])s->code, s->ncode, (const uint64_t (*)[2])s->code32,
                            s->ncode32 };
    int writable = (ph->p_flags & PF_W) != 0;
    if (!s->root && writable) scan_roots(s, va, p, len);
    wants_normalize(s);
    int spec_on = !s->rings_known && writable;
    uint64_t kept_lo = UINT64_MAX, kept_hi = 0;
    for (uint64_t a = va; a < va + len;) {
        uint64_t next = (a | (PAGE - 1)) + 1;
        if (next > va + len || next < a) next = va + len;
        uint64_t pl = next - a;
        const uint8_t *q = p + (a - va);
        uint32_t k;
        if (wanted(s, a, next)) {
            k = ce_all_zero(q, pl) ? CORE_ZERO : CORE_BYTES;
            if (a < kept_lo) kept_lo = a;
            kept_hi = next;
        } else if (!spec_on) {
            k = CORE_DROPPED;
        } else if (ce_all_zero(q, pl)) {
            k = s->chain ? CORE_ZERO : CORE_DROPPED;
        } else if (ce_ringlike(q, pl, &code)) {
            if (s->spec + pl <= s->keep_max) {
                k = CORE_BYTES;
                s->spec += pl;
                s->chain = 1;
            } else {
                k = CORE_DROPPED;
                s->st->spec_refused += pl;
                s->chain = 0;
            }
        } else {
            k = CORE_DROPPED;
            s->chain = 0;
        }
        add(s, k, a, pl, off + (a - va), ph->p_flags, q);
        a = next;
    }
    if (kept_hi || s->npending) replan(s, kept_hi ? kept_lo : 0, kept_hi);
}

static void stream_load(struct cs *s, const Elf64_Phdr *ph)
{
    uint64_t fsz = ph->p_filesz < ph->p_memsz ? ph->p_filesz : ph->p_memsz;
    uint64_t va = ph->p_vaddr, off = ph->p_offset, done = 0;
    if (!s->planned) plan(s);
    if (fsz && off < s->pos && !s->eof) {
        /* behind us (out of order, or overlapping an earlier one): gone */
        add(s, CORE_DROPPED, va, fsz, off, ph->p_flags, NULL);
        done = fsz;
    } else if (fsz) {
        skip(s, off - s->pos);
        s->chain = 0;
        while (done < fsz && !s->eof) {
            uint64_t k = fsz - done < CHUNK ? fsz - done : CHUNK;
            uint64_t r = sread(s, s->buf, k, 0);
            if (r) take(s, ph, va + done, s->buf, r, off + done);
            done += r;
        }
    }
    add_missing(s, va + done, fsz - done, off + done, ph->p_flags);
    add_missing(s, va + fsz, ph->p_memsz - fsz, off + fsz, ph->p_flags);
}

static void stream_notes(struct cs *s, const Elf64_Phdr *ph)
{
    struct core *c = s->c;
    if (ph->p_offset < s->pos || s->eof) {
        c->notes_truncated = 1;
        return;
    }
    skip(s, ph->p_offset - s->pos);
    uint64_t n = ph->p_filesz;
    if (n > NOTES_MAX) {
        n = NOTES_MAX;
        c->notes_truncated = 1;
    }
    uint8_t *d = NULL;
    uint64_t got = 0, cap = 0;
    while (got < n && !s->eof) { /* grown as the bytes come: p_filesz may lie */
        uint64_t k = n - got < CHUNK ? n - got : CHUNK;
        if (got + k > cap) {
            cap = cap ? 2 * cap : CHUNK;
            if (cap > n) cap = n;
            d = ce_xrealloc(d, (size_t)cap);
        }
        uint64_t r = sread(s, d + got, k, 0);
        got += r;
        if (r < k) break;
    }
    if (got < ph->p_filesz) c->notes_truncated = 1;
    if (!d) return;
    own(c, d);
    core_parse_notes(c, d, got);
    s->planned = 0; /* plan again with what the notes said */
}

/* ---- headers ------------------------------------------------------------------ */

static int off_cmp(const void *a, const void *b)
{
    const Elf64_Phdr *x = *(Elf64_Phdr *const *)a, *y = *(Elf64_Phdr *const *)b;
    if (x->p_offset != y->p_offset) return x->p_offset < y->p_offset ? -1 : 1;
    return x < y ? -1 : x > y; /* stable */
}

static int read_phdrs(struct cs *s, const Elf64_Ehdr *eh)
{
    struct core *c = s->c;
    if (eh->e_phoff < sizeof *eh || eh->e_phoff >= (1ull << 40)) {
        snprintf(s->err, s->errlen, "corrupt ELF header: program headers at offset %llu",
                 (unsigned long long)eh->e_phoff);
        return -1;
    }
    if (eh->e_phoff > PHOFF_MAX) {
        snprintf(s->err, s->errlen, "program headers at offset %llu: not a core that can be read in one pass "
                 "(save it to a file and run coreextract on the file)", (unsigned long long)eh->e_phoff);
        return -1;
    }
    skip(s, eh->e_phoff - s->pos);
    uint64_t end = UINT64_MAX, cap = 0;
    c->phnum_xnum = eh->e_phnum == PN_XNUM;
    c->phnum_inferred = c->phnum_xnum; /* checked against section header 0 at the end */
    uint64_t want_n = c->phnum_xnum ? CORE_MAX_SEGS : eh->e_phnum;
    while (s->nph < want_n && (!c->phnum_xnum || s->pos + sizeof(Elf64_Phdr) <= end)) {
        if (s->nph == cap) {
            cap = cap ? 2 * cap : 1024;
            s->ph = ce_xrealloc(s->ph, cap * sizeof *s->ph);
        }
        uint64_t r = sread(s, &s->ph[s->nph], sizeof *s->ph, 1);
        if (r == (uint64_t)-1) return -1;
        if (r < sizeof *s->ph) {
            snprintf(s->err, s->errlen, "core truncated inside its program headers (%llu bytes)",
                     (unsigned long long)s->pos);
            return -1;
        }
        end = core_phdr_table_end(end, &s->ph[s->nph]);
        s->nph++;
    }
    c->phnum = s->nph;
    if (s->nph == 0) {
        snprintf(s->err, s->errlen, "core has no readable program headers");
        return -1;
    }
    return 0;
}

static int u64pair_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* executable ranges, PT_LOAD ranges, expected size */
static void index_phdrs(struct cs *s, const Elf64_Ehdr *eh)
{
    struct core *c = s->c;
    s->code = ce_xcalloc(s->nph, sizeof *s->code);
    s->loads = ce_xcalloc(s->nph, sizeof *s->loads);
    for (uint64_t i = 0; i < s->nph; i++) {
        const Elf64_Phdr *ph = &s->ph[i];
        if (ph->p_filesz && ph->p_offset + ph->p_filesz > c->expected_size && ph->p_offset + ph->p_filesz >= ph->p_offset)
            c->expected_size = ph->p_offset + ph->p_filesz;
        if (ph->p_type != PT_LOAD || !ph->p_memsz || ph->p_vaddr + ph->p_memsz <= ph->p_vaddr) continue;
        s->loads[s->nloads].lo = ph->p_vaddr;
        s->loads[s->nloads].flags = ph->p_flags;
        s->loads[s->nloads++].hi = ph->p_vaddr + ph->p_memsz;
        if (ph->p_flags & PF_X) {
            s->code[s->ncode][0] = ph->p_vaddr;
            s->code[s->ncode++][1] = ph->p_vaddr + ph->p_memsz;
        }
    }
    qsort(s->loads, s->nloads, sizeof *s->loads, range_cmp);
    qsort(s->code, s->ncode, sizeof *s->code, u64pair_cmp);
    size_t n = 0; /* merge overlapping code ranges (binary search needs disjoint ones) */
    for (size_t i = 0; i < s->ncode; i++) {
        if (n && s->code[i][0] <= s->code[n - 1][1]) {
            if (s->code[i][1] > s->code[n - 1][1]) s->code[n - 1][1] = s->code[i][1];
        } else {
            s->code[n][0] = s->code[i][0];
            s->code[n++][1] = s->code[i][1];
        }
    }
    s->ncode = n;
    s->code32 = ce_xcalloc(2 * n + 1, sizeof *s->code32);
    s->ncode32 = ce_code_lo32((const uint64_t (*)[2])s->code, s->ncode, s->code32);
    if (c->phnum_xnum && eh->e_shoff + sizeof(Elf64_Shdr) > c->expected_size)
        c->expected_size = eh->e_shoff + sizeof(Elf64_Shdr);
}

/* PN_XNUM: section header 0 comes last (the kernel writes it after the memory) */
static void check_xnum(struct cs *s, const Elf64_Ehdr *eh)
{
    struct core *c = s->c;
    if (!c->phnum_xnum || eh->e_shoff < s->pos || s->eof) return;
    skip(s, eh->e_shoff - s->pos);
    Elf64_Shdr sh;
    if (sread(s, &sh, sizeof sh, 0) < sizeof sh) return;
    uint64_t n = c->phnum; /* what was read: the count cannot be changed now */
    core_xnum_count(c, 1, sh.sh_info, n);
    c->phnum = n;
    c->phnum_inferred = sh.sh_info != n;
}

int core_stream_open(struct core *c, struct ce_src *src, const struct core_stream_opts *o,
                     struct core_stream_stats *st, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    memset(st, 0, sizeof *st);
    struct cs s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.src = src;
    s.o = o;
    s.st = st;
    s.err = err;
    s.errlen = errlen;
    s.keep_max = o->keep_max ? o->keep_max : CE_STREAM_KEEP_MAX;
    int rc = -1;
    uint8_t hb[sizeof(Elf64_Ehdr)];
    uint64_t hn = sread(&s, hb, sizeof hb, 1);
    Elf64_Ehdr eh;
    if (hn == (uint64_t)-1) goto out;
    if (hn == 0) {
        snprintf(err, errlen, "empty input");
        goto out;
    }
    if (core_check_ehdr(hb, (size_t)hn, &eh, err, errlen) != 0) goto out;
    s.buf = ce_xmalloc(CHUNK);
    if (read_phdrs(&s, &eh) != 0) goto out;
    index_phdrs(&s, &eh);
    /* the data in file order: notes first in a kernel core, then memory in address order */
    Elf64_Phdr **order = ce_xcalloc(s.nph, sizeof *order);
    size_t n = 0;
    for (uint64_t i = 0; i < s.nph; i++)
        if (s.ph[i].p_type == PT_NOTE || (s.ph[i].p_type == PT_LOAD && s.ph[i].p_memsz &&
                                          s.ph[i].p_vaddr + s.ph[i].p_memsz > s.ph[i].p_vaddr))
            order[n++] = &s.ph[i];
    qsort(order, n, sizeof *order, off_cmp);
    for (size_t i = 0; i < n; i++) {
        if (order[i]->p_type == PT_NOTE) stream_notes(&s, order[i]);
        else stream_load(&s, order[i]);
    }
    free(order);
    check_xnum(&s, &eh);
    skip(&s, UINT64_MAX); /* the rest: counted, so a short stream reads as truncated */
    close_open(&s);
    c->size = s.pos;
    core_sort_segs(c);
    if (c->nsegs == 0 && c->nthreads == 0) {
        snprintf(err, errlen, "core has neither memory segments nor threads");
        goto out;
    }
    st->kept_spec = s.spec;
    rc = 0;
out:
    close_open(&s);
    c->dropped_hit = 0; /* reads while streaming do not count */
    free(s.buf);
    free(s.ph);
    free(s.loads);
    free(s.w);
    free(s.code);
    free(s.code32);
    return rc;
}
