/*
 * corefile.h -- a Linux x86-64 ELF core file, parsed with libelf from an
 * mmap of the file (never read whole): PT_LOAD segments (address -> file
 * offset map; bytes past the end of a truncated file or past p_filesz read as
 * missing), and the notes coreextract needs (NT_PRSTATUS per thread,
 * NT_PRPSINFO, NT_AUXV, NT_FILE, NT_SIGINFO).
 */
#ifndef FT_CE_COREFILE_H
#define FT_CE_COREFILE_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"

struct core_seg {
    uint64_t vaddr, memsz;
    uint64_t offset, filesz; /* filesz: as in the phdr */
    uint64_t avail;          /* bytes of it actually in the file (<= filesz) */
    uint32_t flags;          /* PF_R/W/X */
};

struct core_thread {
    uint32_t tid;
    int32_t cursig;
    uint64_t regs[FT_NREGS]; /* struct user_regs_struct order */
};

struct core_file_map {
    uint64_t start, end, offset; /* offset in bytes */
    const char *path;            /* points into the mmapped note */
};

struct core {
    int fd;
    const uint8_t *map;
    uint64_t size;               /* bytes in the file */
    uint64_t expected_size;      /* bytes the headers say the file has */
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
    struct core_range { uint64_t addr, len; } *populated; /* core_map: faulted in already */
    size_t npopulated, cap_populated, next_populated;
};

/* Open and parse. On failure returns -1 with a one-line reason in err
 * (call core_close either way). */
int core_open(struct core *c, int fd, char *err, size_t errlen);
void core_close(struct core *c);

/* how many of the len bytes at addr the file holds, contiguously from addr
 * (what core_read would read) */
size_t core_held(const struct core *c, uint64_t addr, size_t len);

/* ft_reader callback over the core's memory */
size_t core_read(void *ctx, uint64_t addr, void *buf, size_t len);

/* ft_source_info.map callback: the core's own bytes (in its mmap) for
 * [addr, addr+len) when one segment holds all of them, else NULL.  A large
 * range (a ring) is faulted in with one madvise the first time it is asked
 * for (rawwrite streams it with write(), where page faults are dear). */
const void *core_map(void *ctx, uint64_t addr, size_t len);

/* auxv lookup (0 if absent) */
uint64_t core_auxv(const struct core *c, uint64_t type);

/* PT_LOAD containing addr, or NULL */
const struct core_seg *core_seg_at(const struct core *c, uint64_t addr);

/* The core's file mappings (NT_FILE, at most max of them; prot from the
 * PT_LOAD holding each start) into maps, then maps_finish. */
struct ce_maps;
void core_load_maps(const struct core *c, const struct ft_reader *rd, struct ce_maps *maps, size_t max);

/* The writable memory the core holds (PF_W segments, their dumped part), in
 * segment order, for the root scan: a malloc'ed array, *n entries. */
struct root_range;
struct root_range *core_writable_ranges(const struct core *c, size_t *n);

/* the signal info for SIGINFO (0: no signal known) */
int core_crash(const struct core *c, struct ft_raw_crash *out);

#endif
