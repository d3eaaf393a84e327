/*
 * maps.h -- the target's file mappings (from a core's NT_FILE or a live
 * /proc/PID/maps): the MAPPINGS chunk payload, and per-object information the
 * root finder and the unwinders need (load bias, .eh_frame_hdr, text range).
 */
#ifndef FT_CE_MAPS_H
#define FT_CE_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include "ehframe.h"
#include "funtrace_rawwrite.h"
#include "util.h"

struct ce_map {
    uint64_t start, end, offset;
    uint32_t prot;                 /* FT_MAPF_* (0 unknown) */
    uint32_t build_id_len;
    uint8_t build_id[FT_BUILD_ID_MAX];
    char *path;                    /* "" for anonymous (live only) */
    int obj;                       /* index in objs (after maps_finish), -1 none */
};

struct ce_obj {                    /* one ELF object (distinct path) */
    char *path;
    uint64_t start0;               /* start of its offset-0 mapping */
    int info_ok;                   /* phdrs were found (memory or disk) */
    uint64_t bias;                 /* load bias */
    uint64_t lo, hi;               /* address range of its mappings */
    uint64_t eh_hdr;               /* runtime address of .eh_frame_hdr, 0 if none */
    uint64_t text_lo, text_hi;     /* executable PT_LOADs, runtime addresses */
    uint32_t mem_build_id_len;     /* build-id read from the target's memory (0: none) */
    uint8_t mem_build_id[FT_BUILD_ID_MAX];
    const uint8_t *file;           /* the file on disk, mmapped whole; file-backed
                                      bytes come from it.  NULL: not readable, or
                                      not the file the target mapped (build-id) */
    uint64_t file_size;
    int eh_state;                  /* .eh_frame_hdr: 0 not checked, 1 usable, -1 not */
    uint32_t fde_count;            /* its table's entries (eh_state 1) */
    int ehf_state;                 /* no hdr: .eh_frame indexed from the file (ehframe.h):
                                      0 not tried, 1 usable, -1 not */
    struct eh_entry *ehf;          /* that index, sorted (ehf_state 1) */
    size_t nehf;
    uint64_t ehf_addr;             /* the section's runtime address */
};

struct ce_maps {
    struct ce_map *v;
    size_t n;
    struct ce_obj *objs;
    size_t nobjs;
    size_t last_map, last_obj;     /* lookup caches (indexes of the last hits) */
};

/* an address range [start, end) of the target */
struct root_range { uint64_t start, end; };

/* One line of /proc/PID/maps (or a mapping header line of smaps). */
struct ce_maps_line {
    uint64_t start, end, offset, inode;
    uint32_t prot;                 /* FT_MAPF_* from the permissions */
    int shared;                    /* 's' (else 'p') */
    const char *path;              /* inside the line ("" if none; "[heap]" & co.) */
};
/* Parse one line; cuts the line's newline.  0, or -1 if it is not a mapping
 * line (e.g. an smaps "Key: value" line). */
int maps_parse_line(char *line, struct ce_maps_line *out);

/* /proc/PID/maps text (cut into lines in place): every file mapping (path
 * starting with '/') into m, and malloc'ed arrays of the readable+writable
 * ranges (the root scan's; not [vvar]/[vsyscall]), of the executable ranges
 * and of the private anonymous ranges (procmem.h), in address order (any
 * array pointer may be NULL: not wanted). */
void maps_parse_text(struct ce_maps *m, char *text, struct root_range **wr, size_t *nwr,
                     struct root_range **xr, size_t *nxr, struct root_range **anon, size_t *nanon);

void maps_add(struct ce_maps *m, uint64_t start, uint64_t end, uint64_t offset, uint32_t prot,
              const char *path);
/* Fill build-ids (offset-0 mappings: from memory through rd, else the file on
 * disk) and the object list (phdrs from memory, else disk).  A file on disk
 * whose build-id differs from the one in memory is not used (a note). */
void maps_finish(struct ce_maps *m, const struct ft_reader *rd, uint64_t vdso);
void maps_free(struct ce_maps *m);

/* MAPPINGS payload (all mappings with a path, in order) */
void maps_payload(const struct ce_maps *m, struct ce_buf *out);

/* object containing addr (by its mappings' range), or NULL */
struct ce_obj *maps_obj_at(struct ce_maps *m, uint64_t addr);

/* Read target bytes from the mapped files (for memory a core does not hold):
 * each object's file is mmapped once by maps_finish, so this is a lookup and
 * a memcpy.  Returns bytes read (prefix; short at the end of a file). */
size_t maps_file_read(struct ce_maps *m, uint64_t addr, void *buf, size_t len);

#endif
