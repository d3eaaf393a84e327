/* corefile.c -- parse an x86-64 ELF core (see corefile.h) */
#include "corefile.h"
#include "maps.h"
#include "rootfind.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int seg_cmp(const void *a, const void *b)
{
    const struct core_seg *x = a, *y = b;
    return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

void core_sort_segs(struct core *c)
{
    if (c->nsegs > 1) qsort(c->segs, c->nsegs, sizeof *c->segs, seg_cmp);
}

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* ---- headers ------------------------------------------------------------ */

static const char *etype_name(unsigned t)
{
    return t == ET_EXEC ? "executable" : t == ET_DYN ? "shared object or PIE executable"
           : t == ET_REL ? "object file" : "file of unknown type";
}

int core_check_ehdr(const uint8_t *p, size_t n, Elf64_Ehdr *eh, char *err, size_t errlen)
{
    if (n < EI_NIDENT || memcmp(p, ELFMAG, SELFMAG) != 0) {
        snprintf(err, errlen, "not an ELF file");
        return -1;
    }
    if (p[EI_CLASS] != ELFCLASS64) {
        snprintf(err, errlen, "a 32-bit ELF file (only x86-64 cores are supported)");
        return -1;
    }
    if (p[EI_DATA] != ELFDATA2LSB) {
        snprintf(err, errlen, "a big-endian ELF file (only x86-64 cores are supported)");
        return -1;
    }
    if (n < sizeof *eh) {
        snprintf(err, errlen, "truncated inside its ELF header (%zu bytes)", n);
        return -1;
    }
    memcpy(eh, p, sizeof *eh);
    if (eh->e_machine != EM_X86_64) {
        snprintf(err, errlen, "an ELF file for machine %u, not x86-64", eh->e_machine);
        return -1;
    }
    if (eh->e_type != ET_CORE) {
        snprintf(err, errlen, "not a core file but an ELF %s", etype_name(eh->e_type));
        return -1;
    }
    if (eh->e_phnum == 0) {
        snprintf(err, errlen, "core has no program headers");
        return -1;
    }
    if (eh->e_phentsize != sizeof(Elf64_Phdr)) {
        snprintf(err, errlen, "corrupt ELF header: program header size %u, not %zu", eh->e_phentsize,
                 sizeof(Elf64_Phdr));
        return -1;
    }
    return 0;
}

uint64_t core_phdr_table_end(uint64_t end, const Elf64_Phdr *ph)
{
    if (ph->p_filesz && ph->p_offset < end) end = ph->p_offset;
    return end;
}

/* ---- notes -------------------------------------------------------------- */

static void parse_file_note(struct core *c, const uint8_t *d, size_t n)
{
    if (n < 16) return;
    uint64_t count = rd64(d), page = rd64(d + 8);
    if (count == 0 || count > (n - 16) / 24) return;
    const char *s = (const char *)d + 16 + count * 24, *end = (const char *)d + n;
    c->files = ce_xcalloc(count, sizeof *c->files);
    for (uint64_t i = 0; i < count && s < end; i++) {
        const uint8_t *e = d + 16 + i * 24;
        const char *nul = memchr(s, 0, (size_t)(end - s));
        if (!nul) break;
        struct core_file_map *f = &c->files[c->nfiles++];
        f->start = rd64(e);
        f->end = rd64(e + 8);
        f->offset = rd64(e + 16) * page;
        f->path = s;
        s = nul + 1;
    }
}

static void take_note(struct core *c, uint32_t type, const uint8_t *desc, size_t dn)
{
    switch (type) {
    case NT_PRSTATUS:
        if (dn >= 112 + 8 * FT_NREGS && c->nthreads < CORE_MAX_THREADS) {
            c->threads = ce_xrealloc(c->threads, (c->nthreads + 1) * sizeof *c->threads);
            struct core_thread *t = &c->threads[c->nthreads++];
            int16_t cs;
            memcpy(&cs, desc + 12, 2);
            t->cursig = cs;
            t->tid = rd32(desc + 32);
            memcpy(t->regs, desc + 112, 8 * FT_NREGS);
        }
        break;
    case NT_PRPSINFO:
        if (dn >= 136) {
            c->has_psinfo = 1;
            c->psinfo_pid = rd32(desc + 24);
            memcpy(c->psinfo_fname, desc + 40, 16);
            memcpy(c->psinfo_args, desc + 56, 80);
        }
        break;
    case NT_AUXV:
        c->auxv = desc;
        c->auxv_len = dn - dn % 16;
        break;
    case NT_FILE:
        if (!c->files) parse_file_note(c, desc, dn);
        break;
    case NT_SIGINFO:
        if (dn >= 32) {
            c->has_siginfo = 1;
            memcpy(c->siginfo, desc, dn < sizeof c->siginfo ? dn : sizeof c->siginfo);
        }
        break;
    }
}

/* ELF notes: {namesz, descsz, type}, name and desc each padded to 4 bytes
 * (the kernel's core notes); only the "CORE" ones are used. */
void core_parse_notes(struct core *c, const uint8_t *d, uint64_t n)
{
    c->notes = ce_xrealloc(c->notes, (c->nnotes + 1) * sizeof *c->notes);
    c->notes[c->nnotes].p = d;
    c->notes[c->nnotes++].n = n;
    uint64_t pos = 0;
    while (n - pos >= 12) {
        uint32_t namesz = rd32(d + pos), descsz = rd32(d + pos + 4), type = rd32(d + pos + 8);
        uint64_t name_off = pos + 12;
        uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~3ull);
        uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~3ull);
        if (desc_off > n || descsz > n - desc_off) break;
        if (namesz == 5 && memcmp(d + name_off, "CORE", 5) == 0) take_note(c, type, d + desc_off, descsz);
        if (next > n) break;
        pos = next;
    }
}

/* ---- core files --------------------------------------------------------- */

static void add_load(struct core *c, const Elf64_Phdr *ph)
{
    struct core_seg *s = &c->segs[c->nsegs++];
    s->vaddr = ph->p_vaddr;
    s->memsz = ph->p_memsz;
    s->offset = ph->p_offset;
    s->filesz = ph->p_filesz < ph->p_memsz ? ph->p_filesz : ph->p_memsz;
    s->flags = ph->p_flags;
    s->kind = CORE_BYTES;
    if (s->offset >= c->size) s->avail = 0;
    else s->avail = s->filesz < c->size - s->offset ? s->filesz : c->size - s->offset;
    s->data = s->avail ? c->map + s->offset : NULL;
}

/* The program header count of a mapped core (PN_XNUM: section header 0's
 * sh_info, else inferred).  0, or -1 with err. */
void core_xnum_count(struct core *c, int have_sh, uint64_t sh_info, uint64_t inferred)
{
    c->phnum_xnum = 1;
    c->phnum_sh = have_sh ? sh_info : 0;
    c->phnum_fit = inferred;
    /* trust section header 0 unless the table it says would run into the data */
    if (have_sh && sh_info && sh_info <= inferred) {
        c->phnum = sh_info;
        c->phnum_inferred = 0;
    } else {
        c->phnum = inferred;
        c->phnum_inferred = 1;
    }
    c->phnum_mismatch = have_sh && sh_info != inferred;
}

/* The program header count of a mapped core (PN_XNUM: section header 0's
 * sh_info, checked against where the data begins). */
static void file_phnum(struct core *c, const Elf64_Ehdr *eh)
{
    c->phnum = eh->e_phnum;
    if (eh->e_phnum != PN_XNUM) return;
    uint64_t end = UINT64_MAX, n = 0; /* the table ends where the data begins */
    uint64_t room = eh->e_phoff <= c->size ? (c->size - eh->e_phoff) / sizeof(Elf64_Phdr) : 0;
    while (n < CORE_MAX_SEGS && n < room && eh->e_phoff + (n + 1) * sizeof(Elf64_Phdr) <= end) {
        Elf64_Phdr ph;
        memcpy(&ph, c->map + eh->e_phoff + n * sizeof ph, sizeof ph);
        end = core_phdr_table_end(end, &ph);
        n++;
    }
    Elf64_Shdr sh;
    int have_sh = eh->e_shoff >= sizeof *eh && eh->e_shoff <= c->size && c->size - eh->e_shoff >= sizeof sh &&
                  eh->e_shentsize == sizeof sh;
    if (have_sh) memcpy(&sh, c->map + eh->e_shoff, sizeof sh);
    core_xnum_count(c, have_sh, have_sh ? sh.sh_info : 0, n);
    if (eh->e_shoff + sizeof sh > c->expected_size && eh->e_shoff + sizeof sh > eh->e_shoff)
        c->expected_size = eh->e_shoff + sizeof sh;
}

int core_open(struct core *c, int fd, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "not a regular file");
        return -1;
    }
    c->size = (uint64_t)st.st_size;
    if (c->size < EI_NIDENT) {
        snprintf(err, errlen, c->size ? "not an ELF file (only %llu bytes)" : "empty file",
                 (unsigned long long)c->size);
        return -1;
    }
    uint8_t hb[sizeof(Elf64_Ehdr)];
    ssize_t hn = pread(fd, hb, sizeof hb, 0);
    if (hn < EI_NIDENT) {
        snprintf(err, errlen, "cannot read the file");
        return -1;
    }
    Elf64_Ehdr eh;
    if (core_check_ehdr(hb, (size_t)hn, &eh, err, errlen) != 0) return -1;
    if (eh.e_phnum != PN_XNUM &&
        (eh.e_phoff > c->size || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > c->size - eh.e_phoff)) {
        snprintf(err, errlen, "core truncated inside its program headers (%llu bytes)", (unsigned long long)c->size);
        return -1;
    }
    c->map = mmap(NULL, (size_t)c->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (c->map == MAP_FAILED) {
        c->map = NULL;
        snprintf(err, errlen, "cannot mmap the file");
        return -1;
    }
    file_phnum(c, &eh);
    if (c->phnum == 0 || c->phnum > CORE_MAX_SEGS) {
        snprintf(err, errlen, "core has no readable program headers");
        return -1;
    }
    if (eh.e_phoff > c->size || c->phnum * sizeof(Elf64_Phdr) > c->size - eh.e_phoff) {
        snprintf(err, errlen, "core truncated inside its program headers (%llu bytes)", (unsigned long long)c->size);
        return -1;
    }
    c->segs = ce_xcalloc(c->phnum, sizeof *c->segs);
    for (uint64_t i = 0; i < c->phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, c->map + eh.e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_filesz && ph.p_offset + ph.p_filesz > c->expected_size && ph.p_offset + ph.p_filesz >= ph.p_offset)
            c->expected_size = ph.p_offset + ph.p_filesz;
        if (ph.p_type == PT_NOTE) {
            uint64_t sz = ph.p_filesz;
            if (ph.p_offset >= c->size) { c->notes_truncated = 1; continue; }
            if (sz > c->size - ph.p_offset) { sz = c->size - ph.p_offset; c->notes_truncated = 1; }
            core_parse_notes(c, c->map + ph.p_offset, sz);
        } else if (ph.p_type == PT_LOAD && ph.p_memsz && ph.p_vaddr + ph.p_memsz > ph.p_vaddr) {
            add_load(c, &ph);
        }
    }
    core_sort_segs(c);
    if (c->nsegs == 0 && c->nthreads == 0) {
        snprintf(err, errlen, "core has neither memory segments nor threads");
        return -1;
    }
    return 0;
}

void core_close(struct core *c)
{
    if (c->map) munmap((void *)c->map, (size_t)c->size);
    for (size_t i = 0; i < c->nowned; i++) free(c->owned[i]);
    free(c->owned);
    free(c->segs);
    free(c->threads);
    free(c->files);
    free(c->notes);
    memset(c, 0, sizeof *c);
}

/* ---- reading ------------------------------------------------------------ */

const struct core_seg *core_seg_at(const struct core *c, uint64_t addr)
{
    size_t lo = 0, hi = c->nsegs;
    while (lo < hi) { /* first seg with vaddr > addr */
        size_t mid = lo + (hi - lo) / 2;
        if (c->segs[mid].vaddr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    const struct core_seg *s = &c->segs[lo - 1];
    return addr - s->vaddr < s->memsz ? s : NULL;
}

/* Read (buf != NULL) or count the bytes the core holds from addr on; the
 * first address wanted from dropped memory goes to *dropped (if 0). */
static size_t walk(const struct core *c, uint64_t addr, void *buf, size_t len, uint64_t *dropped)
{
    size_t done = 0;
    while (done < len) {
        const struct core_seg *s = core_seg_at(c, addr);
        if (!s) break;
        uint64_t in = addr - s->vaddr;
        if (in >= s->avail) { /* not dumped, truncated, or dropped */
            if (s->kind == CORE_DROPPED && dropped && !*dropped) *dropped = addr;
            break;
        }
        uint64_t n = s->avail - in;
        if (n > len - done) n = len - done;
        if (buf && s->kind == CORE_ZERO) memset((uint8_t *)buf + done, 0, (size_t)n);
        else if (buf) memcpy((uint8_t *)buf + done, s->data + in, (size_t)n);
        done += (size_t)n;
        addr += n;
    }
    return done;
}

size_t core_held(const struct core *c, uint64_t addr, size_t len)
{
    return walk(c, addr, NULL, len, NULL);
}

size_t core_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct core *c = ctx;
    return walk(c, addr, buf, len, &c->dropped_hit);
}

const void *core_map(void *ctx, uint64_t addr, size_t len)
{
    struct core *c = ctx;
    const struct core_seg *s = core_seg_at(c, addr);
    if (!s || len == 0 || s->kind != CORE_BYTES) return NULL;
    uint64_t in = addr - s->vaddr;
    if (in >= s->avail || len > s->avail - in) return NULL;
    /* (not faulted in here: the writer copies a ring file to file where it
     * can, reading only a few of its slots through the mapping, and faults
     * in what it writes from the mapping itself: ce_fdout_write) */
    return s->data + in;
}

uint64_t core_auxv(const struct core *c, uint64_t type)
{
    for (size_t i = 0; i + 16 <= c->auxv_len; i += 16) {
        uint64_t t = rd64(c->auxv + i);
        if (t == type) return rd64(c->auxv + i + 8);
        if (t == AT_NULL) break;
    }
    return 0;
}

const char *core_exe_path(const struct core *c)
{
    uint64_t keys[2] = { core_auxv(c, AT_PHDR), core_auxv(c, AT_ENTRY) };
    for (int k = 0; k < 2; k++) {
        if (!keys[k]) continue;
        for (size_t i = 0; i < c->nfiles; i++)
            if (keys[k] >= c->files[i].start && keys[k] < c->files[i].end) return c->files[i].path;
    }
    return c->nfiles ? c->files[0].path : NULL;
}

int core_crash(const struct core *c, struct ft_raw_crash *out)
{
    memset(out, 0, sizeof *out);
    if (c->nthreads) out->tid = c->threads[0].tid;
    if (c->has_siginfo) {
        int32_t signo, err, code;
        memcpy(&signo, c->siginfo, 4);
        memcpy(&err, c->siginfo + 4, 4);
        memcpy(&code, c->siginfo + 8, 4);
        if (signo <= 0) return 0;
        /* si_addr and si_pid share the union at offset 16 */
        ce_crash_fill(out, signo, code, err, out->tid, rd64(c->siginfo + 16), rd32(c->siginfo + 16));
        return 1;
    }
    if (c->nthreads && c->threads[0].cursig > 0) {
        out->signo = c->threads[0].cursig;
        return 1;
    }
    return 0;
}

struct root_range *core_writable_ranges(const struct core *c, size_t *n)
{
    struct root_range *wr = ce_xcalloc(c->nsegs ? c->nsegs : 1, sizeof *wr);
    *n = 0;
    for (size_t i = 0; i < c->nsegs; i++)
        if ((c->segs[i].flags & PF_W) && c->segs[i].avail) {
            wr[*n].start = c->segs[i].vaddr;
            wr[*n].end = c->segs[i].vaddr + c->segs[i].avail;
            (*n)++;
        }
    return wr;
}

static uint32_t prot_of(uint32_t pf)
{
    return ((pf & PF_R) ? FT_MAPF_R : 0) | ((pf & PF_W) ? FT_MAPF_W : 0) | ((pf & PF_X) ? FT_MAPF_X : 0);
}

void core_load_maps(const struct core *c, const struct ft_reader *rd, struct ce_maps *maps, size_t max)
{
    memset(maps, 0, sizeof *maps);
    for (size_t i = 0; i < c->nfiles && i < max; i++) {
        const struct core_seg *s = core_seg_at(c, c->files[i].start);
        maps_add(maps, c->files[i].start, c->files[i].end, c->files[i].offset, s ? prot_of(s->flags) : 0,
                 c->files[i].path);
    }
    maps_finish(maps, rd, core_auxv(c, AT_SYSINFO_EHDR));
}
