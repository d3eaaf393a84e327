/*
 * corefile.h -- a Linux x86-64 ELF core: its memory as a sorted list of
 * pieces (address ranges with their bytes, or known to be zero, or absent),
 * its threads and the notes coreextract needs (NT_PRSTATUS per thread,
 * NT_PRPSINFO, NT_AUXV, NT_FILE, NT_SIGINFO).
 *
 * Two ways to fill it, one parser of headers and notes:
 *   - core_open: a core FILE, mmapped (never read whole); one piece per
 *     PT_LOAD, its bytes in the mapping (coreextract, and the reader
 *     library's core handles, reader_api.c);
 *   - core_stream_open (coreextract/corestream.h): a core read ONCE from a
 *     pipe or a decompressor, keeping only the memory a trace needs.
 * Program headers: e_phnum, or with PN_XNUM (0xffff, a process with more than
 * 65,534 mappings) the true count from section header 0's sh_info, as the
 * kernel writes it (fs/binfmt_elf.c fill_extnum_info).
 */
#ifndef FT_CE_COREFILE_H
#define FT_CE_COREFILE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"

#define CORE_MAX_SEGS (1u << 22)    /* program headers accepted */
#define CORE_MAX_THREADS (1u << 20) /* NT_PRSTATUS notes accepted */

enum core_piece_kind {
    CORE_BYTES = 0,   /* avail bytes at data */
    CORE_ZERO = 1,    /* avail bytes, all zero (kept by the one-pass reader without storing them) */
    CORE_DROPPED = 2, /* in the core, but dropped by the one-pass reader (avail = 0) */
};

/* One piece of memory: a PT_LOAD (file), or a part of one (stream). */
struct core_seg {
    uint64_t vaddr, memsz;
    uint64_t offset, filesz; /* in the core file; filesz: as the PT_LOAD says (<= memsz) */
    uint64_t avail;          /* bytes of it actually present (<= filesz) */
    uint32_t flags;          /* PF_R/W/X of its PT_LOAD */
    uint32_t kind;           /* enum core_piece_kind */
    const uint8_t *data;     /* CORE_BYTES: the avail bytes */
};

struct core_thread {
    uint32_t tid;
    int32_t cursig;
    uint64_t regs[FT_NREGS]; /* struct user_regs_struct order */
};

struct core_file_map {
    uint64_t start, end, offset; /* offset in bytes */
    const char *path;            /* points into the notes */
};

struct core {
    const uint8_t *map;          /* core_open: the file's mapping */
    uint64_t size;               /* bytes in the file (stream: bytes read) */
    uint64_t expected_size;      /* bytes the headers say the file has */
    uint64_t phnum;              /* program headers (the true count with PN_XNUM) */
    int phnum_xnum;              /* e_phnum was PN_XNUM */
    int phnum_inferred;          /* PN_XNUM: the count was taken from where the data
                                    begins (no usable section header 0) */
    int phnum_mismatch;          /* PN_XNUM: section header 0 said phnum_sh, but */
    uint64_t phnum_sh, phnum_fit;/* phnum_fit headers fit before the data */
    struct core_seg *segs;       /* sorted by vaddr */
    size_t nsegs;
    struct core_thread *threads; /* NT_PRSTATUS order (first = signalled) */
    size_t nthreads;
    struct core_file_map *files; /* NT_FILE order */
    size_t nfiles;
    const uint8_t *auxv;
    size_t auxv_len;
    int has_siginfo;
    uint8_t siginfo[128];
    int has_psinfo;
    uint32_t psinfo_pid;
    char psinfo_fname[17];
    char psinfo_args[81];
    int notes_truncated;
    struct core_blob { const uint8_t *p; uint64_t n; } *notes; /* each PT_NOTE's bytes */
    size_t nnotes;
    /* stream only (corestream.c): memory it owns, what it dropped */
    uint8_t **owned;
    size_t nowned;
    uint64_t dropped_bytes;      /* bytes of memory dropped as they streamed by */
    uint64_t dropped_hit;        /* first address a read wanted from dropped memory (0: none) */
    uint64_t kept_bytes;         /* bytes of memory kept */
};

/* Open and parse a core file. On failure returns -1 with a one-line reason in
 * err (call core_close either way). */
int core_open(struct core *c, int fd, char *err, size_t errlen);
void core_close(struct core *c);

/* ---- shared by core_open and the one-pass reader ---- */

/* Check an ELF header (n bytes at p, n >= EI_NIDENT) for an x86-64 ELF core;
 * 0 with *eh filled, or -1 with the one-line reason. */
int core_check_ehdr(const uint8_t *p, size_t n, Elf64_Ehdr *eh, char *err, size_t errlen);
/* Program header count when e_phnum is PN_XNUM and section header 0 is not
 * available: the table ends where the data begins (the lowest p_offset of
 * the headers read so far).  Call with phdrs one at a time: returns the table
 * end (file offset) after taking ph into account. */
uint64_t core_phdr_table_end(uint64_t end, const Elf64_Phdr *ph);
/* PN_XNUM: the count to use from section header 0's sh_info (have_sh: it
 * was read) and the count that fits before the data (inferred); sets
 * c->phnum and the phnum_* flags. */
void core_xnum_count(struct core *c, int have_sh, uint64_t sh_info, uint64_t inferred);
/* Parse n bytes of PT_NOTE content (kept alive by the caller until core_close;
 * remembered in c->notes). */
void core_parse_notes(struct core *c, const uint8_t *d, uint64_t n);
/* Sort the pieces (after filling segs). */
void core_sort_segs(struct core *c);

/* ---- reading ---- */

/* how many of the len bytes at addr the core holds, contiguously from addr
 * (what core_read would read) */
size_t core_held(const struct core *c, uint64_t addr, size_t len);

/* ft_reader callback over the core's memory */
size_t core_read(void *ctx, uint64_t addr, void *buf, size_t len);

/* ft_source_info.map callback: the core's own bytes for [addr, addr+len) when
 * one piece holds all of them, else NULL.  A large range (a ring) of a mapped
 * file is faulted in with one madvise the first time it is asked for
 * (rawwrite streams it with write(), where page faults are dear). */
const void *core_map(void *ctx, uint64_t addr, size_t len);

/* auxv lookup (0 if absent) */
uint64_t core_auxv(const struct core *c, uint64_t type);

/* the piece containing addr, or NULL */
const struct core_seg *core_seg_at(const struct core *c, uint64_t addr);

/* The executable's path as mapped: the NT_FILE mapping holding AT_PHDR (else
 * AT_ENTRY, else the first one); NULL if unknown. */
const char *core_exe_path(const struct core *c);

/* The core's file mappings (NT_FILE, at most max of them; prot from the
 * PT_LOAD holding each start) into maps, then maps_finish. */
struct ce_maps;
void core_load_maps(const struct core *c, const struct ft_reader *rd, struct ce_maps *maps, size_t max);

/* The writable memory the core holds (PF_W pieces, their present part), in
 * address order, for the root scan: a malloc'ed array, *n entries. */
struct root_range;
struct root_range *core_writable_ranges(const struct core *c, size_t *n);

/* the signal info for SIGINFO (0: no signal known) */
int core_crash(const struct core *c, struct ft_raw_crash *out);

#endif
