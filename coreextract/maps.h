/*
 * maps.h -- the target's file mappings (from a core's NT_FILE or a live
 * /proc/PID/maps): the MAPPINGS chunk payload, and per-object information the
 * root finder and the unwinders need (load bias, .eh_frame_hdr, text range).
 */
#ifndef FT_CE_MAPS_H
#define FT_CE_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"
#include "util.h"

struct ce_map {
    uint64_t start, end, offset;
    uint32_t prot;                 /* FT_MAPF_* (0 unknown) */
    uint32_t build_id_len;
    uint8_t build_id[FT_BUILD_ID_MAX];
    char *path;                    /* "" for anonymous (live only) */
};

struct ce_obj {                    /* one ELF object (distinct path) */
    char *path;
    uint64_t start0;               /* start of its offset-0 mapping */
    int info_ok;                   /* phdrs were found (memory or disk) */
    uint64_t bias;                 /* load bias */
    uint64_t lo, hi;               /* address range of its mappings */
    uint64_t eh_hdr;               /* runtime address of .eh_frame_hdr, 0 if none */
    uint64_t text_lo, text_hi;     /* executable PT_LOADs, runtime addresses */
    int fd;                        /* for reading file-backed bytes, -1 if not open */
};

struct ce_maps {
    struct ce_map *v;
    size_t n;
    struct ce_obj *objs;
    size_t nobjs;
};

void maps_add(struct ce_maps *m, uint64_t start, uint64_t end, uint64_t offset, uint32_t prot,
              const char *path);
/* Fill build-ids (offset-0 mappings: from memory through rd, else the file on
 * disk) and the object list (phdrs from memory, else disk). */
void maps_finish(struct ce_maps *m, const struct ft_reader *rd, uint64_t vdso);
void maps_free(struct ce_maps *m);

/* MAPPINGS payload (all mappings with a path, in order) */
void maps_payload(const struct ce_maps *m, struct ce_buf *out);

/* object containing addr (by its mappings' range), or NULL */
struct ce_obj *maps_obj_at(const struct ce_maps *m, uint64_t addr);

/* Read target bytes from the mapped files (for memory a core does not hold).
 * Returns bytes read (prefix). */
size_t maps_file_read(struct ce_maps *m, uint64_t addr, void *buf, size_t len);

#endif
