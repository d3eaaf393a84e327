/*
 * elfinfo.h -- what coreextract needs to know about an ELF object: on disk
 * (type, entry, load base, a symbol's value, build-id) and in target memory
 * (build-id read from the ELF headers and notes of a mapping).
 */
#ifndef FT_CE_ELFINFO_H
#define FT_CE_ELFINFO_H

#include <elf.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"

#define ELF_MAX_PHDRS 256 /* more program headers: not an object we read */

struct elf_info {
    uint16_t type;          /* ET_EXEC / ET_DYN */
    uint64_t entry;         /* e_entry */
    uint64_t base_vaddr;    /* p_vaddr (page-aligned) of the PT_LOAD at file offset 0 */
    int has_sym;
    uint64_t sym_value;     /* st_value of the requested symbol */
    uint32_t build_id_len;  /* 0: none */
    uint8_t build_id[FT_BUILD_ID_MAX];
};

/* Read an ELF file on disk; sym may be NULL. Returns 0, or -1 with err set. */
int elf_info_load(const char *path, const char *sym, struct elf_info *out, char *err, size_t errlen);

/* The program headers of a 64-bit ELF object (at most ELF_MAX_PHDRS):
 * mapped at `start` in the target (read through rd), or held whole in memory
 * (p, size).  1 with *n set, 0 if not an ELF object / not readable. */
int elf_phdrs_in_memory(const struct ft_reader *rd, uint64_t start, Elf64_Phdr *ph, unsigned *n);
int elf_phdrs_in_file(const uint8_t *p, uint64_t size, Elf64_Phdr *ph, unsigned *n);

/* Build-id of the ELF object mapped at `start` (its offset-0 mapping), read
 * through rd. Returns the length (0 if not found/readable). */
uint32_t elf_build_id_in_memory(const struct ft_reader *rd, uint64_t start, uint8_t out[FT_BUILD_ID_MAX]);

/* Build-id of an ELF file held in memory (e.g. mmapped whole), from its
 * PT_NOTE segments. Returns the length (0 if none). */
uint32_t elf_build_id_in_file(const uint8_t *p, uint64_t size, uint8_t out[FT_BUILD_ID_MAX]);

/* The section called name of an ELF file held in memory (p, size): 0 with
 * its address, bytes and size, or -1 if there is none, it lies outside the
 * file or has no address (not an ELF64 file, unreadable section headers). */
int elf_section_in_file(const uint8_t *p, uint64_t size, const char *name, uint64_t *addr, const uint8_t **sec,
                        uint64_t *len);

/* The ELF header of an x86-64 core whose phnum program headers follow it.
 * From 65,535 on the count does not fit e_phnum: the kernel's way
 * (fs/binfmt_elf.c fill_extnum_info) is e_phnum = PN_XNUM and the count in
 * the sh_info of one section header (SHT_NULL, sh_size 1, sh_link 0) at
 * e_shoff, written after the memory: elf_core_xnum fills that header and the
 * ELF header's fields for it, shoff being where it goes.  Returns whether
 * one is needed. */
int elf_core_ehdr(Elf64_Ehdr *eh, uint64_t phnum);
void elf_core_xnum(Elf64_Ehdr *eh, Elf64_Shdr *sh, uint64_t phnum, uint64_t shoff);

/* Find an NT_GNU_BUILD_ID in a note buffer. Returns length or 0. */
uint32_t elf_build_id_in_notes(const uint8_t *p, size_t n, uint8_t out[FT_BUILD_ID_MAX]);

#endif
