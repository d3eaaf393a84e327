/* maps.c -- file mappings and ELF objects of the target (see maps.h) */
#include "maps.h"
#include "elfinfo.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE_MASK_ (~(uint64_t)0xfff)
#define MAX_PHDRS 256

void maps_add(struct ce_maps *m, uint64_t start, uint64_t end, uint64_t offset, uint32_t prot,
              const char *path)
{
    m->v = ce_xrealloc(m->v, (m->n + 1) * sizeof *m->v);
    struct ce_map *x = &m->v[m->n++];
    memset(x, 0, sizeof *x);
    x->start = start;
    x->end = end;
    x->offset = offset;
    x->prot = prot;
    x->path = ce_xstrdup(path ? path : "");
}

/* phdrs of the object at start0 from memory: bias, eh_frame_hdr, text */
static int obj_from_phdrs(struct ce_obj *o, const Elf64_Phdr *ph, unsigned n)
{
    int have_base = 0;
    uint64_t base = 0;
    for (unsigned i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_offset & PAGE_MASK_) == 0) {
            base = ph[i].p_vaddr & PAGE_MASK_;
            have_base = 1;
            break;
        }
    if (!have_base) return 0;
    o->bias = o->start0 - base;
    o->text_lo = UINT64_MAX;
    o->text_hi = 0;
    for (unsigned i = 0; i < n; i++) {
        if (ph[i].p_type == PT_GNU_EH_FRAME) o->eh_hdr = o->bias + ph[i].p_vaddr;
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
            uint64_t lo = o->bias + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
            if (lo < o->text_lo) o->text_lo = lo;
            if (hi > o->text_hi) o->text_hi = hi;
        }
    }
    if (o->text_lo > o->text_hi) o->text_lo = o->text_hi = 0;
    return 1;
}

static int read_phdrs_mem(const struct ft_reader *rd, uint64_t start, Elf64_Phdr *ph, unsigned *n)
{
    Elf64_Ehdr eh;
    if (rd->read(rd->ctx, start, &eh, sizeof eh) != sizeof eh) return 0;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS ||
        eh.e_phoff > 1u << 20)
        return 0;
    size_t len = eh.e_phnum * sizeof(Elf64_Phdr);
    if (rd->read(rd->ctx, start + eh.e_phoff, ph, len) != len) return 0;
    *n = eh.e_phnum;
    return 1;
}

static int read_phdrs_fd(int fd, Elf64_Phdr *ph, unsigned *n)
{
    Elf64_Ehdr eh;
    if (fd < 0 || pread(fd, &eh, sizeof eh, 0) != sizeof eh) return 0;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS)
        return 0;
    size_t len = eh.e_phnum * sizeof(Elf64_Phdr);
    if (pread(fd, ph, len, (off_t)eh.e_phoff) != (ssize_t)len) return 0;
    *n = eh.e_phnum;
    return 1;
}

static struct ce_obj *obj_get(struct ce_maps *m, const char *path)
{
    for (size_t i = 0; i < m->nobjs; i++)
        if (strcmp(m->objs[i].path, path) == 0) return &m->objs[i];
    m->objs = ce_xrealloc(m->objs, (m->nobjs + 1) * sizeof *m->objs);
    struct ce_obj *o = &m->objs[m->nobjs++];
    memset(o, 0, sizeof *o);
    o->path = ce_xstrdup(path);
    o->lo = UINT64_MAX;
    o->fd = -1;
    return o;
}

void maps_finish(struct ce_maps *m, const struct ft_reader *rd, uint64_t vdso)
{
    Elf64_Phdr ph[MAX_PHDRS];
    unsigned n;
    for (size_t i = 0; i < m->n; i++) {
        struct ce_map *x = &m->v[i];
        if (!x->path[0] || x->path[0] == '[') continue;
        struct ce_obj *o = obj_get(m, x->path);
        if (x->start < o->lo) o->lo = x->start;
        if (x->end > o->hi) o->hi = x->end;
        if (x->offset == 0 && !o->start0) o->start0 = x->start;
        if (x->offset != 0) continue;
        x->build_id_len = elf_build_id_in_memory(rd, x->start, x->build_id);
        if (!x->build_id_len) {
            struct elf_info ei;
            char err[256];
            if (elf_info_load(x->path, NULL, &ei, err, sizeof err) == 0 && ei.build_id_len) {
                x->build_id_len = ei.build_id_len;
                memcpy(x->build_id, ei.build_id, ei.build_id_len);
            }
        }
    }
    for (size_t i = 0; i < m->nobjs; i++) {
        struct ce_obj *o = &m->objs[i];
        o->fd = open(o->path, O_RDONLY | O_CLOEXEC);
        if (!o->start0) continue;
        if (read_phdrs_mem(rd, o->start0, ph, &n) || read_phdrs_fd(o->fd, ph, &n))
            o->info_ok = obj_from_phdrs(o, ph, n);
    }
    if (vdso && read_phdrs_mem(rd, vdso, ph, &n)) {
        struct ce_obj *o = obj_get(m, "[vdso]");
        o->start0 = vdso;
        o->info_ok = obj_from_phdrs(o, ph, n);
        if (o->info_ok) {
            o->lo = vdso;
            o->hi = o->text_hi > vdso ? o->text_hi : vdso + 0x2000;
        }
    }
}

void maps_free(struct ce_maps *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->v[i].path);
    for (size_t i = 0; i < m->nobjs; i++) {
        free(m->objs[i].path);
        if (m->objs[i].fd >= 0) close(m->objs[i].fd);
    }
    free(m->v);
    free(m->objs);
    memset(m, 0, sizeof *m);
}

void maps_payload(const struct ce_maps *m, struct ce_buf *out)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct ce_map *x = &m->v[i];
        if (!x->path[0]) continue;
        struct ft_raw_mapping r;
        memset(&r, 0, sizeof r);
        r.start = x->start;
        r.end = x->end;
        r.offset = x->offset;
        r.prot = x->prot;
        r.build_id_len = x->build_id_len;
        memcpy(r.build_id, x->build_id, sizeof r.build_id);
        size_t pl = strlen(x->path);
        size_t need = ft_mapping_record_size(pl);
        ce_buf_reserve(out, need);
        out->len += ft_mapping_record_encode(out->p + out->len, need, &r, x->path, pl);
    }
}

struct ce_obj *maps_obj_at(const struct ce_maps *m, uint64_t addr)
{
    for (size_t i = 0; i < m->nobjs; i++)
        if (addr >= m->objs[i].lo && addr < m->objs[i].hi) return &m->objs[i];
    return NULL;
}

size_t maps_file_read(struct ce_maps *m, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        const struct ce_map *x = NULL;
        for (size_t i = 0; i < m->n; i++)
            if (addr >= m->v[i].start && addr < m->v[i].end && m->v[i].path[0]) { x = &m->v[i]; break; }
        if (!x) break;
        struct ce_obj *o = NULL;
        for (size_t i = 0; i < m->nobjs; i++)
            if (strcmp(m->objs[i].path, x->path) == 0) { o = &m->objs[i]; break; }
        if (!o || o->fd < 0) break;
        size_t n = len - done;
        if (n > x->end - addr) n = (size_t)(x->end - addr);
        ssize_t r = pread(o->fd, (uint8_t *)buf + done, n, (off_t)(x->offset + (addr - x->start)));
        if (r <= 0) break;
        done += (size_t)r;
        addr += (uint64_t)r;
        if ((size_t)r < n) break;
    }
    return done;
}
