/*
 * pltname.c -- PLT entries named by the symbol of the GOT slot they jump
 * through (x86-64: `jmp *disp32(%rip)`, after an endbr64 or with a bnd
 * prefix), as BFD's synthetic symbols name them for gdb.
 */
#include "pltname.h"

#include <string.h>

/* the GOT slot the entry at p (n bytes, at address at) jumps through: the
 * first `ff 25 disp32` in it; 0 if none */
static uint64_t entry_slot(const uint8_t *p, size_t n, uint64_t at)
{
    for (size_t k = 0; k + 6 <= n; k++)
        if (p[k] == 0xff && p[k + 1] == 0x25) {
            int32_t disp;
            memcpy(&disp, p + k + 2, 4);
            return at + k + 6 + (uint64_t)(int64_t)disp;
        }
    return 0;
}

/* the symbol of the relocation of GOT slot got (JUMP_SLOT or GLOB_DAT) */
static const char *slot_symbol(Elf *elf, uint64_t got)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
        GElf_Shdr ssh;
        if (!d || !symscn || !gelf_getshdr(symscn, &ssh))
            continue;
        Elf_Data *sd = elf_getdata(symscn, NULL);
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Rela r;
            if (!gelf_getrela(d, (int)i, &r) || r.r_offset != got)
                continue;
            unsigned ty = (unsigned)GELF_R_TYPE(r.r_info);
            GElf_Sym sym;
            if ((ty != R_X86_64_JUMP_SLOT && ty != R_X86_64_GLOB_DAT) || !sd ||
                !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
                return NULL;
            const char *nm = elf_strptr(elf, ssh.sh_link, sym.st_name);
            return nm && *nm ? nm : NULL;
        }
    }
    return NULL;
}

const char *plt_target(Elf *elf, GElf_Addr bias, uint64_t vaddr, uint64_t *entry)
{
    size_t shstr;
    if (!elf || elf_getshdrstrndx(elf, &shstr) != 0)
        return NULL;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
            continue;
        const uint64_t lo = sh.sh_addr + bias;
        if (vaddr < lo || vaddr - lo >= sh.sh_size)
            continue;
        const char *name = elf_strptr(elf, shstr, sh.sh_name);
        if (!name || (strcmp(name, ".plt") && strcmp(name, ".plt.sec") && strcmp(name, ".plt.got")))
            return NULL;
        const uint64_t es = sh.sh_entsize ? sh.sh_entsize : 16;
        const uint64_t off = (vaddr - lo) / es * es;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || off + es > d->d_size)
            return NULL;
        const uint64_t got = entry_slot((const uint8_t *)d->d_buf + off, (size_t)es, sh.sh_addr + off);
        const char *sym = got ? slot_symbol(elf, got) : NULL;
        if (sym)
            *entry = lo + off;
        return sym;
    }
    return NULL;
}
