/* coreplan.c -- what the one-pass reader wants (see corestream_int.h) */
#include "corestream_int.h"
#include "elfinfo.h"
#include "util.h"

#include <string.h>

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

void add_pending(struct cs *s, uint64_t a)
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
void plan(struct cs *s)
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
void replan(struct cs *s, uint64_t lo, uint64_t hi)
{
    struct ft_reader rd = { s->c, core_read, NULL };
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
