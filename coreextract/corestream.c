/* corestream.c -- read a core once from a stream, keeping what a trace needs (see corestream.h) */
#include "corestream.h"
#include "elfinfo.h"
#include "ringlike.h"
#include "util.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (256u << 10)        /* bytes read at a time */
#define PAGE 4096u
#define PHOFF_MAX (1u << 20)      /* program headers further into the stream: refused */
#define NOTES_MAX (1ull << 30)    /* notes kept (1M threads' NT_PRSTATUS is ~350 MiB) */
#define ROOT_KEEP 4096u           /* bytes kept from a root candidate on (a root is <= 2 KiB) */
#define VDSO_KEEP (1u << 20)
#define DATA_KEEP (256u << 10)    /* dumped bytes kept per mapped file (headers, written data), and of a .bss */
#define SMALL_KEEP (64u << 10)    /* anonymous writable mappings this small are kept... */
#define SMALL_ALL (16u << 20)     /* ... up to this much in all */
#define MAX_PENDING 16            /* root candidates waiting for their bytes */
#define RED_ZONE 128u

struct range { uint64_t lo, hi; uint32_t flags; };

struct cs {
    struct core *c;
    struct ce_src *src;
    const struct core_stream_opts *o;
    struct core_stream_stats *st;
    char *err;
    size_t errlen;
    uint64_t pos;                /* stream offset */
    int eof;
    Elf64_Phdr *ph;
    uint64_t nph;
    struct range *loads;         /* PT_LOAD ranges, sorted (for the plan) */
    size_t nloads;
    struct range *w;             /* wanted address ranges */
    size_t nw, capw;
    int wdirty;
    uint64_t (*code)[2];         /* executable ranges */
    size_t ncode;
    int planned;                 /* static wants made (needs the notes) */
    uint64_t pending[MAX_PENDING];
    size_t npending;
    uint64_t root;               /* valid root found (0: not yet) */
    uint64_t reg_lo, reg_hi;     /* the thread registry (once the root is read) */
    int rings_known;
    uint64_t keep_max, spec;
    int chain;                   /* zero pages after a kept ring-like page are ring too */
    size_t capsegs;
    int unsorted;                /* a piece was added below the last one */
    int open;                    /* the last piece is a CORE_BYTES piece still growing */
    uint64_t open_cap;
    uint8_t *open_buf;
    uint8_t *buf;
};

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

/* ---- pieces ----------------------------------------------------------------- */

static void own(struct core *c, uint8_t *p)
{
    c->owned = ce_xrealloc(c->owned, (c->nowned + 1) * sizeof *c->owned);
    c->owned[c->nowned++] = p;
}

static void close_open(struct cs *s)
{
    if (!s->open) return;
    own(s->c, s->open_buf);
    s->open = 0;
    s->open_buf = NULL;
}

static struct core_seg *push(struct cs *s, uint64_t vaddr)
{
    struct core *c = s->c;
    if (c->nsegs && vaddr < c->segs[c->nsegs - 1].vaddr + c->segs[c->nsegs - 1].memsz) s->unsorted = 1;
    if (c->nsegs == s->capsegs) {
        s->capsegs = s->capsegs ? 2 * s->capsegs : 256;
        c->segs = ce_xrealloc(c->segs, s->capsegs * sizeof *c->segs);
    }
    struct core_seg *g = &c->segs[c->nsegs++];
    memset(g, 0, sizeof *g);
    return g;
}

/* add len bytes at vaddr (file offset off) as a piece of kind k (p: the bytes,
 * for CORE_BYTES), merged into the last piece when contiguous */
static void add(struct cs *s, uint32_t k, uint64_t vaddr, uint64_t len, uint64_t off, uint32_t flags,
                const uint8_t *p)
{
    struct core *c = s->c;
    struct core_seg *l = c->nsegs ? &c->segs[c->nsegs - 1] : NULL;
    int adj = l && l->kind == k && l->flags == flags && l->vaddr + l->memsz == vaddr &&
              l->offset + l->memsz == off && l->filesz == l->memsz &&
              l->avail == (k == CORE_DROPPED ? 0 : l->memsz);
    if (adj && k == CORE_BYTES && !s->open) adj = 0;
    if (adj) {
        if (k == CORE_BYTES) {
            if (l->avail + len > s->open_cap) {
                uint64_t cap = s->open_cap;
                while (cap < l->avail + len) cap *= 2;
                s->open_buf = ce_xrealloc(s->open_buf, (size_t)cap);
                s->open_cap = cap;
                l->data = s->open_buf;
            }
            memcpy(s->open_buf + l->avail, p, (size_t)len);
            c->kept_bytes += len;
        }
        l->memsz += len;
        l->filesz += len;
        if (k != CORE_DROPPED) l->avail += len;
        else c->dropped_bytes += len;
        return;
    }
    if (k == CORE_BYTES) close_open(s);
    struct core_seg *g = push(s, vaddr);
    g->vaddr = vaddr;
    g->memsz = g->filesz = len;
    g->offset = off;
    g->flags = flags;
    g->kind = k;
    g->avail = k == CORE_DROPPED ? 0 : len;
    if (k == CORE_DROPPED) c->dropped_bytes += len;
    if (k == CORE_BYTES) {
        s->open_cap = len > (64u << 10) ? len : (64u << 10);
        s->open_buf = ce_xmalloc((size_t)s->open_cap);
        memcpy(s->open_buf, p, (size_t)len);
        g->data = s->open_buf;
        s->open = 1;
        c->kept_bytes += len;
    }
}

/* memory the core does not hold: not dumped (past p_filesz) or past the end of the stream */
static void add_missing(struct cs *s, uint64_t vaddr, uint64_t len, uint64_t off, uint32_t flags)
{
    if (!len) return;
    struct core_seg *g = push(s, vaddr);
    g->vaddr = vaddr;
    g->memsz = len;
    g->offset = off;
    g->flags = flags;
    g->kind = CORE_BYTES;
}

/* ---- wants ------------------------------------------------------------------ */

static void want(struct cs *s, uint64_t lo, uint64_t hi)
{
    if (hi <= lo) return;
    if (s->nw == s->capw) {
        s->capw = s->capw ? 2 * s->capw : 64;
        s->w = ce_xrealloc(s->w, s->capw * sizeof *s->w);
    }
    s->w[s->nw].lo = lo;
    s->w[s->nw].hi = hi;
    s->nw++;
    s->wdirty = 1;
}

static void need_cb(void *ctx, int what, uint64_t addr, uint64_t len)
{
    struct cs *s = ctx;
    uint64_t hi = addr + len < addr ? UINT64_MAX : addr + len;
    if (what == FT_NEED_REGISTRY) {
        s->reg_lo = addr;
        s->reg_hi = hi;
    }
    want(s, addr & ~(uint64_t)(PAGE - 1), hi);
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void wants_normalize(struct cs *s)
{
    if (!s->wdirty) return;
    qsort(s->w, s->nw, sizeof *s->w, range_cmp);
    size_t n = 0;
    for (size_t i = 0; i < s->nw; i++) {
        if (n && s->w[i].lo <= s->w[n - 1].hi) {
            if (s->w[i].hi > s->w[n - 1].hi) s->w[n - 1].hi = s->w[i].hi;
        } else {
            s->w[n++] = s->w[i];
        }
    }
    s->nw = n;
    s->wdirty = 0;
}

static int wanted(const struct cs *s, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = s->nw;
    while (a < b) { /* first want ending after lo */
        size_t m = a + (b - a) / 2;
        if (s->w[m].hi <= lo) a = m + 1;
        else b = m;
    }
    return a < s->nw && s->w[a].lo < hi;
}

/* the PT_LOAD range holding addr, or NULL */
static const struct range *load_at(const struct cs *s, uint64_t addr)
{
    size_t a = 0, b = s->nloads;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->loads[m].lo <= addr) a = m + 1;
        else b = m;
    }
    return a && addr < s->loads[a - 1].hi ? &s->loads[a - 1] : NULL;
}

static int load_is_writable(const struct cs *s, const struct range *l)
{
    (void)s;
    return (l->flags & PF_W) != 0;
}

static int file_at(const struct core *c, uint64_t addr)
{
    for (size_t i = 0; i < c->nfiles; i++)
        if (addr >= c->files[i].start && addr < c->files[i].end) return 1;
    return 0;
}

static void want_within_load(struct cs *s, uint64_t lo, uint64_t hi)
{
    const struct range *l = load_at(s, lo);
    if (!l) return;
    want(s, lo & ~(uint64_t)(PAGE - 1), hi < l->hi ? hi : l->hi);
}

static void add_pending(struct cs *s, uint64_t a)
{
    for (size_t i = 0; i < s->npending; i++)
        if (s->pending[i] == a) return;
    if (s->npending == MAX_PENDING) return;
    s->pending[s->npending++] = a;
    want(s, a, a + ROOT_KEEP);
}

/* The root's address from the executable's symbol (file on disk + load bias). */
static uint64_t predict_root(struct cs *s)
{
    struct core *c = s->c;
    const char *mapped = core_exe_path(c);
    const char *file = s->o->exe ? s->o->exe : mapped;
    struct elf_info ei;
    char e[512];
    if (!file || elf_info_load(file, FT_ROOT_SYMBOL, &ei, e, sizeof e) != 0 || !ei.has_sym) return 0;
    uint64_t at_entry = core_auxv(c, AT_ENTRY);
    if (at_entry && ei.entry) return at_entry - ei.entry + ei.sym_value;
    if (ei.type == ET_EXEC) return ei.sym_value;
    for (size_t i = 0; mapped && i < c->nfiles; i++)
        if (c->files[i].offset == 0 && strcmp(c->files[i].path, mapped) == 0)
            return c->files[i].start - ei.base_vaddr + ei.sym_value;
    return 0;
}

/* What is known from the headers and notes: the root's predicted address, the
 * stacks, the vdso, the ELF headers of mapped files. */
static void plan(struct cs *s)
{
    struct core *c = s->c;
    s->planned = 1;
    uint64_t r = predict_root(s);
    if (r) {
        s->st->root_predicted = 1;
        add_pending(s, r);
    }
    for (size_t i = 0; s->o->stacks && i < c->nthreads; i++) {
        uint64_t sp = c->threads[i].regs[19];
        uint64_t lo = sp > RED_ZONE ? sp - RED_ZONE : 0;
        want_within_load(s, lo, sp + CE_STREAM_STACK < sp ? UINT64_MAX : sp + CE_STREAM_STACK);
    }
    /* small anonymous writable mappings: the dynamic linker's own allocations
     * (the link_map of each library: gdb lists the libraries from them) */
    uint64_t small = 0;
    for (size_t i = 0; i < s->nloads && small < SMALL_ALL; i++) {
        const struct range *l = &s->loads[i];
        if ((l->flags & PF_W) && l->hi - l->lo <= SMALL_KEEP && !file_at(c, l->lo)) {
            want(s, l->lo, l->hi);
            small += l->hi - l->lo;
        }
    }
    uint64_t vdso = core_auxv(c, AT_SYSINFO_EHDR);
    if (vdso) want_within_load(s, vdso, vdso + VDSO_KEEP);
    for (size_t i = 0; i < c->nfiles; i++) {
        /* what the kernel dumped of a mapped file: its ELF headers (build-id),
         * its written data (.dynamic, .data) and the .bss after it: the
         * dynamic linker's list of loaded objects, where gdb finds the
         * libraries of a core */
        const struct core_file_map *f = &c->files[i];
        uint64_t hi = f->end - f->start > DATA_KEEP ? f->start + DATA_KEEP : f->end;
        want_within_load(s, f->start, hi);
        const struct range *l = load_at(s, f->start);
        if (l && load_is_writable(s, l)) {
            const struct range *b = load_at(s, f->end);
            if (b && b->lo == f->end && load_is_writable(s, b) && !file_at(c, f->end))
                want_within_load(s, b->lo, b->hi - b->lo > DATA_KEEP ? b->lo + DATA_KEEP : b->hi);
        }
    }
}

/* after the bytes [lo, hi) were kept: validate root candidates, then learn
 * what the root points to, and the rings of the registry records that came */
static void replan(struct cs *s, uint64_t lo, uint64_t hi)
{
    struct ft_reader rd = { s->c, core_read };
    if (s->unsorted) { /* core_read looks pieces up by address */
        close_open(s);
        core_sort_segs(s->c);
        s->unsorted = 0;
    }
    if (!s->root) {
        size_t n = 0;
        for (size_t i = 0; i < s->npending; i++) {
            int rc = ft_root_check(&rd, s->pending[i]);
            if (rc == 0) {
                s->root = s->pending[i];
                break;
            }
            if (rc == FT_ROOT_EREAD) s->pending[n++] = s->pending[i]; /* bytes still to come */
        }
        if (!s->root) {
            s->npending = n;
            return;
        }
        s->npending = 0;
        s->st->root_early = 1;
        lo = 0; /* everything kept so far may be registry */
        hi = UINT64_MAX;
    }
    if (s->rings_known) return;
    if (s->reg_hi && (hi <= s->reg_lo || lo >= s->reg_hi)) return; /* not the registry */
    /* a record may straddle lo: look from one record size (<= 2 KiB) before it */
    int unknown = ft_raw_needed(&rd, s->root, lo > 2048 ? lo - 2048 : 0, hi, need_cb, s);
    if (unknown == 0 && s->reg_hi && hi >= s->reg_hi) /* the last record came: all of them? */
        unknown = ft_raw_needed(&rd, s->root, s->reg_lo, s->reg_hi, need_cb, s);
    if (unknown == 0 && (hi >= s->reg_hi || !s->reg_hi)) s->rings_known = s->st->rings_known = 1;
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
    struct ce_code code = { (const uint64_t (*)[2])s->code, s->ncode };
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
    if (eh->e_phoff < sizeof *eh || eh->e_phoff > PHOFF_MAX) {
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
    c->phnum_inferred = 0;
    if (sh.sh_info != c->phnum)
        snprintf(s->st->warn, sizeof s->st->warn,
                 "e_phnum is PN_XNUM and section header 0 says %u program headers, but %llu precede the data; "
                 "read %llu", sh.sh_info, (unsigned long long)c->phnum, (unsigned long long)c->phnum);
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
    return rc;
}
