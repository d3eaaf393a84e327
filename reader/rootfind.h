/*
 * rootfind.h -- locate funtrace_root in a target (core or live process):
 *  1. the `funtrace_root` symbol (.dynsym/.symtab) of the executable, then of
 *     every other mapped ELF object, at its load bias -- skipped for an object
 *     whose on-disk build-id differs from the one in the target's memory;
 *  2. else a scan of the writable memory for the 16-byte root magic, accepting
 *     only a root whose self-pointer equals its address and whose ABI version
 *     is known (ft_root_check).
 */
#ifndef FT_CE_ROOTFIND_H
#define FT_CE_ROOTFIND_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"
#include "maps.h"

struct root_search {
    const struct ft_reader *rd;
    struct ce_maps *maps;
    const char *exe;                 /* executable path as mapped (may be NULL) */
    const char *exe_file;            /* file to open for it (NULL: exe), e.g. /proc/PID/exe */
    uint64_t exe_bias;               /* load bias from auxv (valid if exe_bias_ok) */
    int exe_bias_ok;
    const struct root_range *writable; /* for the scan, address order */
    size_t nwritable;
};

struct root_found {
    uint64_t addr;
    int by_scan;
    char how[512];                   /* for -v */
    char why_not[512];               /* when not found: the reason */
    int runtime_seen;                /* funtrace_root symbol exists (runtime linked) */
    int exe_without_runtime;         /* the executable that ran (its build-id checked when the
                                        target holds one) has no funtrace_root symbol */
    char warning[512];               /* to print if the root is found anyway (EXE build-id differs) */
};

/* 0: found; -1: not found (why_not says why). */
int root_find(const struct root_search *s, struct root_found *f);

/* Step 2 alone: scan the writable ranges (address order) for a valid root.
 * 0: found (f->by_scan set); -1: not found (f->why_not says what was
 * rejected, "" if no candidate at all). */
int root_scan(const struct ft_reader *rd, const struct root_range *writable, size_t n, struct root_found *f);

#endif
