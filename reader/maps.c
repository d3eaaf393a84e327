/* maps.c -- file mappings and ELF objects of the target (see maps.h) */
#include "maps.h"
#include "elfinfo.h"
#include "procmem.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE_MASK_ (~(uint64_t)0xfff)

int maps_parse_line(char *line, struct ce_maps_line *out)
{
    unsigned long long start, end, off, ino;
    char perms[8];
    int pathpos = 0;
    line[strcspn(line, "\n")] = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &off, &ino, &pathpos) < 5 ||
        strlen(perms) < 4)
        return -1;
    out->start = start;
    out->end = end;
    out->offset = off;
    out->inode = ino;
    out->prot = (perms[0] == 'r' ? FT_MAPF_R : 0) | (perms[1] == 'w' ? FT_MAPF_W : 0) |
                (perms[2] == 'x' ? FT_MAPF_X : 0);
    out->shared = perms[3] == 's';
    out->path = pathpos > 0 ? line + pathpos : line + strlen(line);
    return 0;
}

static void range_add(struct root_range **v, size_t *n, uint64_t start, uint64_t end)
{
    if (!v) return;
    if ((*n & (*n - 1)) == 0) *v = ce_xrealloc(*v, (*n ? *n * 2 : 16) * sizeof **v);
    (*v)[*n].start = start;
    (*v)[*n].end = end;
    (*n)++;
}

void maps_parse_text(struct ce_maps *m, char *text, struct root_range **wr, size_t *nwr,
                     struct root_range **xr, size_t *nxr, struct root_range **anon, size_t *nanon)
{
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        struct ce_maps_line ml;
        if (maps_parse_line(line, &ml) == 0) {
            const char *p = ml.path;
            if (p[0] == '/') maps_add(m, ml.start, ml.end, ml.offset, ml.prot, p);
            if (ml.prot & FT_MAPF_X) range_add(xr, nxr, ml.start, ml.end);
            if ((ml.prot & (FT_MAPF_R | FT_MAPF_W)) == (FT_MAPF_R | FT_MAPF_W) && strcmp(p, "[vvar]") != 0 &&
                strcmp(p, "[vsyscall]") != 0)
                range_add(wr, nwr, ml.start, ml.end);
            if (procmem_is_private_anon(ml.inode, ml.shared, p))
                range_add(anon, nanon, ml.start, ml.end);
        }
        line = next;
    }
}

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
    x->obj = -1;
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

/* mmap the object's file whole (regular files only: never open a FIFO or a
 * device for reading); NULL if it cannot be read */
static void obj_map_file(struct ce_obj *o)
{
    int fd = open(o->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            o->file = p;
            o->file_size = (uint64_t)st.st_size;
        }
    }
    close(fd);
}

static size_t obj_index(struct ce_maps *m, const char *path)
{
    for (size_t i = 0; i < m->nobjs; i++)
        if (strcmp(m->objs[i].path, path) == 0) return i;
    m->objs = ce_xrealloc(m->objs, (m->nobjs + 1) * sizeof *m->objs);
    struct ce_obj *o = &m->objs[m->nobjs];
    memset(o, 0, sizeof *o);
    o->path = ce_xstrdup(path);
    o->lo = UINT64_MAX;
    return m->nobjs++;
}

static struct ce_obj *obj_get(struct ce_maps *m, const char *path)
{
    size_t i = obj_index(m, path); /* may move m->objs */
    return &m->objs[i];
}

void maps_finish(struct ce_maps *m, const struct ft_reader *rd, uint64_t vdso)
{
    Elf64_Phdr ph[ELF_MAX_PHDRS];
    unsigned n;
    for (size_t i = 0; i < m->n; i++) {
        struct ce_map *x = &m->v[i];
        if (!x->path[0] || x->path[0] == '[') continue;
        x->obj = (int)obj_index(m, x->path);
        struct ce_obj *o = &m->objs[x->obj];
        if (x->start < o->lo) o->lo = x->start;
        if (x->end > o->hi) o->hi = x->end;
        if (x->offset == 0 && !o->start0) o->start0 = x->start;
        if (x->offset != 0) continue;
        x->build_id_len = elf_build_id_in_memory(rd, x->start, x->build_id);
        if (x->build_id_len && !o->mem_build_id_len) {
            o->mem_build_id_len = x->build_id_len;
            memcpy(o->mem_build_id, x->build_id, x->build_id_len);
        }
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
        obj_map_file(o);
        uint8_t fid[FT_BUILD_ID_MAX];
        uint32_t flen = o->file ? elf_build_id_in_file(o->file, o->file_size, fid) : 0;
        if (o->mem_build_id_len && flen &&
            (flen != o->mem_build_id_len || memcmp(fid, o->mem_build_id, flen) != 0)) {
            ce_note("%s: its build-id differs from the one the process mapped; not read for unwinding",
                    o->path);
            munmap((void *)o->file, (size_t)o->file_size);
            o->file = NULL;
            o->file_size = 0;
        }
        if (!o->start0) continue;
        if (elf_phdrs_in_memory(rd, o->start0, ph, &n) || elf_phdrs_in_file(o->file, o->file_size, ph, &n))
            o->info_ok = obj_from_phdrs(o, ph, n);
    }
    if (vdso && elf_phdrs_in_memory(rd, vdso, ph, &n)) {
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
        free(m->objs[i].ehf);
        if (m->objs[i].file) munmap((void *)m->objs[i].file, (size_t)m->objs[i].file_size);
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

struct ce_obj *maps_obj_at(struct ce_maps *m, uint64_t addr)
{
    if (m->last_obj < m->nobjs && addr >= m->objs[m->last_obj].lo && addr < m->objs[m->last_obj].hi)
        return &m->objs[m->last_obj];
    for (size_t i = 0; i < m->nobjs; i++)
        if (addr >= m->objs[i].lo && addr < m->objs[i].hi) {
            m->last_obj = i;
            return &m->objs[i];
        }
    return NULL;
}

/* the file mapping holding addr, or NULL */
static const struct ce_map *file_map_at(struct ce_maps *m, uint64_t addr)
{
    if (m->last_map < m->n) {
        const struct ce_map *x = &m->v[m->last_map];
        if (addr >= x->start && addr < x->end && x->obj >= 0) return x;
    }
    for (size_t i = 0; i < m->n; i++)
        if (addr >= m->v[i].start && addr < m->v[i].end && m->v[i].obj >= 0) {
            m->last_map = i;
            return &m->v[i];
        }
    return NULL;
}

size_t maps_file_read(struct ce_maps *m, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        const struct ce_map *x = file_map_at(m, addr);
        if (!x) break;
        const struct ce_obj *o = &m->objs[x->obj];
        uint64_t foff = x->offset + (addr - x->start);
        if (!o->file || foff < x->offset || foff >= o->file_size) break;
        uint64_t n = len - done;
        if (n > x->end - addr) n = x->end - addr;
        if (n > o->file_size - foff) n = o->file_size - foff;
        memcpy((uint8_t *)buf + done, o->file + foff, (size_t)n);
        done += (size_t)n;
        addr += n;
        if (foff + n == o->file_size) break; /* end of the file */
    }
    return done;
}
