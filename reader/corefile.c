/* corefile.c -- parse an x86-64 ELF core (see corefile.h) */
#include "corefile.h"
#include "maps.h"
#include "rootfind.h"
#include "util.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SEGS (1u << 22)   /* bound on phdrs accepted */
#define MAX_THREADS (1u << 20)
#define POPULATE_MIN (64u << 10)
#ifdef MADV_POPULATE_READ
#define MADV_POPULATE_READ_ MADV_POPULATE_READ
#else
#define MADV_POPULATE_READ_ 22 /* Linux 5.14; older kernels: EINVAL, ignored */
#endif

static int seg_cmp(const void *a, const void *b)
{
    const struct core_seg *x = a, *y = b;
    return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static void parse_file_note(struct core *c, const uint8_t *d, size_t n)
{
    if (n < 16) return;
    uint64_t count = rd64(d), page = rd64(d + 8);
    if (count == 0 || count > (n - 16) / 24) return;
    const char *s = (const char *)d + 16 + count * 24, *end = (const char *)d + n;
    c->files = ce_xcalloc(count, sizeof *c->files);
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *e = d + 16 + i * 24;
        const char *nul = memchr(s, 0, (size_t)(end - s));
        if (!nul) break;
        struct core_file_map *f = &c->files[c->nfiles++];
        f->start = rd64(e);
        f->end = rd64(e + 8);
        f->offset = rd64(e + 16) * page;
        f->path = s;
        s = nul + 1;
        if (s >= end && i + 1 < count) break;
    }
}

static void parse_notes(struct core *c, Elf *elf, const GElf_Phdr *ph)
{
    uint64_t off = ph->p_offset, sz = ph->p_filesz;
    if (off >= c->size) { c->notes_truncated = 1; return; }
    if (sz > c->size - off) { sz = c->size - off; c->notes_truncated = 1; }
    Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)off, (size_t)sz, ELF_T_NHDR);
    if (!data) return;
    size_t pos = 0, name_off, desc_off;
    GElf_Nhdr nh;
    size_t maxthreads = MAX_THREADS;
    while (pos < data->d_size) {
        size_t next = gelf_getnote(data, pos, &nh, &name_off, &desc_off);
        if (next == 0 || next <= pos) break;
        pos = next;
        /* point into our own mmap: libelf's chunk dies with elf_end() */
        const uint8_t *desc = c->map + off + desc_off;
        const char *name = (const char *)c->map + off + name_off;
        size_t dn = nh.n_descsz;
        if (desc_off + dn > data->d_size) break;
        int is_core = nh.n_namesz == 5 && memcmp(name, "CORE", 5) == 0;
        if (!is_core) continue;
        switch (nh.n_type) {
        case NT_PRSTATUS:
            if (dn >= 112 + 8 * FT_NREGS && c->nthreads < maxthreads) {
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
}

int core_open(struct core *c, int fd, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
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
    unsigned char id[EI_NIDENT + 4];
    if (pread(fd, id, sizeof id, 0) < EI_NIDENT) {
        snprintf(err, errlen, "cannot read the file");
        return -1;
    }
    if (memcmp(id, ELFMAG, SELFMAG) != 0) {
        snprintf(err, errlen, "not an ELF file");
        return -1;
    }
    if (id[EI_CLASS] != ELFCLASS64) {
        snprintf(err, errlen, "a 32-bit ELF file (only x86-64 cores are supported)");
        return -1;
    }
    if (id[EI_DATA] != ELFDATA2LSB) {
        snprintf(err, errlen, "a big-endian ELF file (only x86-64 cores are supported)");
        return -1;
    }
    Elf64_Ehdr rh;
    if (c->size < sizeof rh || pread(fd, &rh, sizeof rh, 0) != (ssize_t)sizeof rh) {
        snprintf(err, errlen, "truncated inside its ELF header (%llu bytes)", (unsigned long long)c->size);
        return -1;
    }
    if (rh.e_machine != EM_X86_64) {
        snprintf(err, errlen, "an ELF file for machine %u, not x86-64", rh.e_machine);
        return -1;
    }
    if (rh.e_type != ET_CORE) {
        snprintf(err, errlen, "not a core file but an ELF %s",
                 rh.e_type == ET_EXEC ? "executable" : rh.e_type == ET_DYN ? "shared object or PIE executable"
                 : rh.e_type == ET_REL ? "object file" : "file of unknown type");
        return -1;
    }
    if (rh.e_phnum != PN_XNUM &&
        (rh.e_phoff > c->size || (uint64_t)rh.e_phnum * rh.e_phentsize > c->size - rh.e_phoff)) {
        snprintf(err, errlen, "core truncated inside its program headers (%llu bytes)", (unsigned long long)c->size);
        return -1;
    }
    c->map = mmap(NULL, (size_t)c->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (c->map == MAP_FAILED) {
        c->map = NULL;
        snprintf(err, errlen, "cannot mmap the file");
        return -1;
    }
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!elf || !gelf_getehdr(elf, &eh)) {
        snprintf(err, errlen, "corrupt ELF header");
        if (elf) elf_end(elf);
        return -1;
    }
    if (eh.e_machine != EM_X86_64) {
        snprintf(err, errlen, "an ELF file for machine %u, not x86-64", eh.e_machine);
        elf_end(elf);
        return -1;
    }
    if (eh.e_type != ET_CORE) {
        snprintf(err, errlen, "not a core file but an ELF %s",
                 eh.e_type == ET_EXEC ? "executable" : eh.e_type == ET_DYN ? "shared object or PIE executable"
                 : eh.e_type == ET_REL ? "object file" : "file of unknown type");
        elf_end(elf);
        return -1;
    }
    size_t phnum;
    if (elf_getphdrnum(elf, &phnum) != 0 || phnum == 0 || phnum > MAX_SEGS) {
        snprintf(err, errlen, "core has no readable program headers");
        elf_end(elf);
        return -1;
    }
    if (eh.e_phoff > c->size || (uint64_t)phnum * eh.e_phentsize > c->size - eh.e_phoff) {
        snprintf(err, errlen, "core truncated inside its program headers");
        elf_end(elf);
        return -1;
    }
    c->segs = ce_xcalloc(phnum, sizeof *c->segs);
    c->expected_size = 0;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph)) continue;
        if (ph.p_filesz && ph.p_offset + ph.p_filesz > c->expected_size &&
            ph.p_offset + ph.p_filesz >= ph.p_offset)
            c->expected_size = ph.p_offset + ph.p_filesz;
        if (ph.p_type == PT_NOTE) {
            parse_notes(c, elf, &ph);
        } else if (ph.p_type == PT_LOAD && ph.p_memsz && ph.p_vaddr + ph.p_memsz > ph.p_vaddr) {
            struct core_seg *s = &c->segs[c->nsegs++];
            s->vaddr = ph.p_vaddr;
            s->memsz = ph.p_memsz;
            s->offset = ph.p_offset;
            s->filesz = ph.p_filesz < ph.p_memsz ? ph.p_filesz : ph.p_memsz;
            s->flags = ph.p_flags;
            if (s->offset >= c->size) s->avail = 0;
            else s->avail = s->filesz < c->size - s->offset ? s->filesz : c->size - s->offset;
        }
    }
    elf_end(elf);
    qsort(c->segs, c->nsegs, sizeof *c->segs, seg_cmp);
    if (c->nsegs == 0 && c->nthreads == 0) {
        snprintf(err, errlen, "core has neither memory segments nor threads");
        return -1;
    }
    return 0;
}

void core_close(struct core *c)
{
    if (c->map) munmap((void *)c->map, (size_t)c->size);
    free(c->segs);
    free(c->threads);
    free(c->files);
    free(c->populated);
    memset(c, 0, sizeof *c);
}

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

size_t core_held(const struct core *c, uint64_t addr, size_t len)
{
    size_t done = 0;
    while (done < len) {
        const struct core_seg *s = core_seg_at(c, addr);
        if (!s) break;
        uint64_t in = addr - s->vaddr;
        if (in >= s->avail) break;
        uint64_t n = s->avail - in;
        if (n > len - done) n = len - done;
        done += (size_t)n;
        addr += n;
        if (in + n < s->memsz && done < len) break;
    }
    return done;
}

size_t core_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const struct core *c = ctx;
    size_t done = 0;
    while (done < len) {
        const struct core_seg *s = core_seg_at(c, addr);
        if (!s) break;
        uint64_t in = addr - s->vaddr;
        if (in >= s->avail) break; /* not dumped / truncated */
        uint64_t n = s->avail - in;
        if (n > len - done) n = len - done;
        memcpy((uint8_t *)buf + done, c->map + s->offset + in, (size_t)n);
        done += (size_t)n;
        addr += n;
        if (in + n < s->memsz && done < len) break; /* rest of seg missing */
    }
    return done;
}

/* Was [addr, addr+len) populated before?  rawwrite asks for the rings in
 * the same order in its pre-pass and in its emit pass: the asks are logged,
 * and an ask matching the log entry at the cursor is a repeat (O(1); any
 * other ask is logged and populated, which is merely redundant if it was a
 * repeat out of order). */
static int was_populated(struct core *c, uint64_t addr, uint64_t len)
{
    size_t i = c->next_populated;
    if (i < c->npopulated && c->populated[i].addr == addr && c->populated[i].len == len) {
        c->next_populated = i + 1;
        return 1;
    }
    if (c->npopulated == c->cap_populated) {
        c->cap_populated = c->cap_populated ? 2 * c->cap_populated : 64;
        c->populated = ce_xrealloc(c->populated, c->cap_populated * sizeof *c->populated);
    }
    c->populated[c->npopulated].addr = addr;
    c->populated[c->npopulated].len = len;
    c->npopulated++;
    return 0;
}

const void *core_map(void *ctx, uint64_t addr, size_t len)
{
    struct core *c = ctx;
    const struct core_seg *s = core_seg_at(c, addr);
    if (!s || len == 0) return NULL;
    uint64_t in = addr - s->vaddr;
    if (in >= s->avail || len > s->avail - in) return NULL;
    const uint8_t *p = c->map + s->offset + in;
    if (len >= POPULATE_MIN && !was_populated(c, addr, len)) {
        uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
        (void)madvise((void *)a, (uintptr_t)p + len - a, MADV_POPULATE_READ_);
    }
    return p;
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
