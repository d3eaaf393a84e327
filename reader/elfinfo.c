/* elfinfo.c -- ELF objects on disk and in target memory (see elfinfo.h) */
#define _GNU_SOURCE
#include "elfinfo.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PAGE_MASK_ (~(uint64_t)0xfff)
#define NOTE_MAX 8192

uint32_t elf_build_id_in_notes(const uint8_t *p, size_t n, uint8_t out[FT_BUILD_ID_MAX])
{
    size_t off = 0;
    while (off + 12 <= n) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p + off, 4);
        memcpy(&descsz, p + off + 4, 4);
        memcpy(&type, p + off + 8, 4);
        uint64_t name_off = off + 12;
        uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~3ull);
        uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~3ull);
        if (next > n) return 0;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + name_off, "GNU", 4) == 0 &&
            descsz > 0) {
            uint32_t len = descsz > FT_BUILD_ID_MAX ? FT_BUILD_ID_MAX : descsz;
            memcpy(out, p + desc_off, len);
            return len;
        }
        off = (size_t)next;
    }
    return 0;
}

/* Can the string table (section link) hold the name sym?  Every symbol's
 * name is in it (possibly as the tail of a longer string): without the
 * string, no symbol table scan is needed (libc's has thousands of symbols). */
static int strtab_has(Elf *elf, size_t link, const char *sym)
{
    Elf_Scn *scn = elf_getscn(elf, link);
    Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
    if (!d || !d->d_buf) return 1; /* cannot tell: scan */
    return memmem(d->d_buf, d->d_size, sym, strlen(sym) + 1) != NULL;
}

int elf_info_load(const char *path, const char *sym, struct elf_info *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %m", path);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s is a directory, not an ELF file", path);
        close(fd);
        return -1;
    }
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
        snprintf(err, errlen, "%s is not an x86-64 ELF file", path);
        if (elf) elf_end(elf);
        close(fd);
        return -1;
    }
    out->type = eh.e_type;
    out->entry = eh.e_entry;
    size_t phnum = 0;
    int have_base = 0;
    if (elf_getphdrnum(elf, &phnum) == 0) {
        for (size_t i = 0; i < phnum && i < ELF_MAX_PHDRS * 16; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(elf, (int)i, &ph)) continue;
            if (ph.p_type == PT_LOAD && !have_base && (ph.p_offset & PAGE_MASK_) == 0) {
                out->base_vaddr = ph.p_vaddr & PAGE_MASK_;
                have_base = 1;
            }
            if (ph.p_type == PT_NOTE && !out->build_id_len && ph.p_filesz) {
                size_t n = ph.p_filesz > NOTE_MAX ? NOTE_MAX : (size_t)ph.p_filesz;
                Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, n, ELF_T_BYTE);
                if (d) out->build_id_len = elf_build_id_in_notes(d->d_buf, d->d_size, out->build_id);
            }
        }
    }
    if (sym) {
        Elf_Scn *scn = NULL;
        while (!out->has_sym && (scn = elf_nextscn(elf, scn)) != NULL) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh)) continue;
            if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
            if (!strtab_has(elf, sh.sh_link, sym)) continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            if (!d || !sh.sh_entsize) continue;
            size_t n = sh.sh_size / sh.sh_entsize;
            for (size_t i = 0; i < n; i++) {
                GElf_Sym s;
                if (!gelf_getsym(d, (int)i, &s)) break;
                if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
                const char *nm = elf_strptr(elf, sh.sh_link, s.st_name);
                if (nm && strcmp(nm, sym) == 0) {
                    out->has_sym = 1;
                    out->sym_value = s.st_value;
                    break;
                }
            }
        }
    }
    elf_end(elf);
    close(fd);
    return 0;
}

/* e_ident and class of an ELF header */
static int ident_ok(const Elf64_Ehdr *eh)
{
    return memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
}

/* ... and its phentsize and phnum */
static int ehdr_ok(const Elf64_Ehdr *eh)
{
    return ident_ok(eh) && eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum != 0 &&
           eh->e_phnum <= ELF_MAX_PHDRS;
}

int elf_phdrs_in_memory(const struct ft_reader *rd, uint64_t start, Elf64_Phdr *ph, unsigned *n)
{
    Elf64_Ehdr eh;
    if (rd->read(rd->ctx, start, &eh, sizeof eh) != sizeof eh) return 0;
    if (!ehdr_ok(&eh) || eh.e_phoff > 1u << 20) return 0;
    size_t len = eh.e_phnum * sizeof(Elf64_Phdr);
    if (rd->read(rd->ctx, start + eh.e_phoff, ph, len) != len) return 0;
    *n = eh.e_phnum;
    return 1;
}

int elf_phdrs_in_file(const uint8_t *p, uint64_t size, Elf64_Phdr *ph, unsigned *n)
{
    Elf64_Ehdr eh;
    if (!p || size < sizeof eh) return 0;
    memcpy(&eh, p, sizeof eh);
    if (!ehdr_ok(&eh)) return 0;
    size_t len = eh.e_phnum * sizeof(Elf64_Phdr);
    if (eh.e_phoff > size || len > size - eh.e_phoff) return 0;
    memcpy(ph, p + eh.e_phoff, len);
    *n = eh.e_phnum;
    return 1;
}

uint32_t elf_build_id_in_memory(const struct ft_reader *rd, uint64_t start, uint8_t out[FT_BUILD_ID_MAX])
{
    Elf64_Phdr ph[ELF_MAX_PHDRS];
    unsigned nph;
    if (!elf_phdrs_in_memory(rd, start, ph, &nph)) return 0;
    uint64_t base = 0;
    int have_base = 0;
    for (unsigned i = 0; i < nph; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_offset & PAGE_MASK_) == 0) {
            base = ph[i].p_vaddr & PAGE_MASK_;
            have_base = 1;
            break;
        }
    if (!have_base) return 0;
    for (unsigned i = 0; i < nph; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_filesz == 0) continue;
        uint8_t buf[NOTE_MAX];
        size_t len = ph[i].p_filesz > NOTE_MAX ? NOTE_MAX : (size_t)ph[i].p_filesz;
        uint64_t addr = start + (ph[i].p_vaddr - base);
        size_t got = rd->read(rd->ctx, addr, buf, len);
        uint32_t r = elf_build_id_in_notes(buf, got, out);
        if (r) return r;
    }
    return 0;
}

uint32_t elf_build_id_in_file(const uint8_t *p, uint64_t size, uint8_t out[FT_BUILD_ID_MAX])
{
    Elf64_Phdr ph[ELF_MAX_PHDRS];
    unsigned nph;
    if (!elf_phdrs_in_file(p, size, ph, &nph)) return 0;
    for (unsigned i = 0; i < nph; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_filesz == 0 || ph[i].p_offset >= size) continue;
        uint64_t n = ph[i].p_filesz < size - ph[i].p_offset ? ph[i].p_filesz : size - ph[i].p_offset;
        uint32_t r = elf_build_id_in_notes(p + ph[i].p_offset, n > NOTE_MAX ? NOTE_MAX : (size_t)n, out);
        if (r) return r;
    }
    return 0;
}

int elf_core_ehdr(Elf64_Ehdr *eh, uint64_t phnum)
{
    memset(eh, 0, sizeof *eh);
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
    eh->e_type = ET_CORE;
    eh->e_machine = EM_X86_64;
    eh->e_version = EV_CURRENT;
    eh->e_phoff = sizeof *eh;
    eh->e_ehsize = sizeof *eh;
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_phnum = phnum >= PN_XNUM ? PN_XNUM : (Elf64_Half)phnum;
    return phnum >= PN_XNUM;
}

void elf_core_xnum(Elf64_Ehdr *eh, Elf64_Shdr *sh, uint64_t phnum, uint64_t shoff)
{
    memset(sh, 0, sizeof *sh);
    sh->sh_type = SHT_NULL;
    sh->sh_size = 1;          /* e_shnum */
    sh->sh_link = SHN_UNDEF;  /* e_shstrndx */
    sh->sh_info = (Elf64_Word)phnum;
    eh->e_shoff = shoff;
    eh->e_shentsize = sizeof *sh;
    eh->e_shnum = 1;
    eh->e_shstrndx = SHN_UNDEF;
}

int elf_section_in_file(const uint8_t *p, uint64_t size, const char *name, uint64_t *addr, const uint8_t **sec,
                        uint64_t *len)
{
    Elf64_Ehdr eh;
    if (!p || size < sizeof eh)
        return -1;
    memcpy(&eh, p, sizeof eh);
    if (!ident_ok(&eh) || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
        eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum)
        return -1;
    Elf64_Shdr str;
    memcpy(&str, p + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof str, sizeof str);
    if (str.sh_offset > size || str.sh_size > size - str.sh_offset)
        return -1;
    size_t want = strlen(name) + 1;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, p + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_PROGBITS || sh.sh_name >= str.sh_size || str.sh_size - sh.sh_name < want ||
            memcmp(p + str.sh_offset + sh.sh_name, name, want) != 0)
            continue;
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || !sh.sh_addr)
            return -1;
        *addr = sh.sh_addr;
        *sec = p + sh.sh_offset;
        *len = sh.sh_size;
        return 0;
    }
    return -1;
}
