/*
 * corestream_int.h -- the one-pass reader's state, shared by its files:
 *   corestream.c  reading: headers, notes, memory chunk by chunk, the keep /
 *                 remember-as-zero / drop decision per page;
 *   corekeep.c    what is kept: the pieces of memory (struct core_seg) as they
 *                 are built, and the wanted address ranges;
 *   coreplan.c    what is wanted: from the headers and notes (stacks, the
 *                 root's predicted address, ELF headers...), then from the root
 *                 and the registry as they arrive (ft_raw_needed).
 * Not an API: see corestream.h.
 */
#ifndef FT_CE_CORESTREAM_INT_H
#define FT_CE_CORESTREAM_INT_H

#include <elf.h>
#include <stdint.h>
#include "corestream.h"

#define CHUNK (256u << 10)        /* bytes read at a time */
#define PAGE 4096u
#define PHOFF_MAX (1u << 20)      /* program headers further into the stream: refused */
#define NOTES_MAX (1ull << 30)    /* notes kept (1M threads' NT_PRSTATUS is ~350 MiB) */
#define ROOT_KEEP 4096u           /* bytes kept from a root candidate on (a root is <= 2 KiB) */
#define VDSO_KEEP (1u << 20)
#define DATA_KEEP (256u << 10)    /* dumped bytes kept per mapped file (headers, written data), and of a .bss */
#define SMALL_KEEP (64u << 10)    /* anonymous writable mappings this small are kept... */
#define SMALL_ALL (16u << 20)     /* ... up to this much in all */
#define MAX_PENDING 16            /* root candidates waiting for their bytes */
#define RED_ZONE 128u

struct range { uint64_t lo, hi; uint32_t flags; };

struct cs {
    struct core *c;
    struct ce_src *src;
    const struct core_stream_opts *o;
    struct core_stream_stats *st;
    char *err;
    size_t errlen;
    uint64_t pos;                /* stream offset */
    int eof;
    Elf64_Phdr *ph;
    uint64_t nph;
    struct range *loads;         /* PT_LOAD ranges, sorted (for the plan) */
    size_t nloads;
    struct range *w;             /* wanted address ranges */
    size_t nw, capw;
    int wdirty;
    uint64_t (*code)[2];         /* executable ranges */
    size_t ncode;
    uint64_t (*code32)[2];       /* the same, low 32 bits (ringlike.h) */
    size_t ncode32;
    int planned;                 /* static wants made (needs the notes) */
    uint64_t pending[MAX_PENDING];
    size_t npending;
    uint64_t root;               /* valid root found (0: not yet) */
    uint64_t reg_lo, reg_hi;     /* the thread registry (once the root is read) */
    int rings_known;
    uint64_t keep_max, spec;
    int chain;                   /* zero pages after a kept ring-like page are ring too */
    size_t capsegs;
    int unsorted;                /* a piece was added below the last one */
    int open;                    /* the last piece is a CORE_BYTES piece still growing */
    uint64_t open_cap;
    uint8_t *open_buf;
    uint8_t *buf;
};

/* corekeep.c */
void own(struct core *c, uint8_t *p);
void close_open(struct cs *s);
void add(struct cs *s, uint32_t k, uint64_t vaddr, uint64_t len, uint64_t off, uint32_t flags, const uint8_t *p);
void add_missing(struct cs *s, uint64_t vaddr, uint64_t len, uint64_t off, uint32_t flags);
void want(struct cs *s, uint64_t lo, uint64_t hi);
void wants_normalize(struct cs *s);
int wanted(const struct cs *s, uint64_t lo, uint64_t hi);
int range_cmp(const void *a, const void *b);
const struct range *load_at(const struct cs *s, uint64_t addr);
void want_within_load(struct cs *s, uint64_t lo, uint64_t hi);

/* coreplan.c */
void add_pending(struct cs *s, uint64_t a);
void plan(struct cs *s);
void replan(struct cs *s, uint64_t lo, uint64_t hi);

#endif
