/*
 * slimcore.h -- write a core holding only the memory coreextract kept: an
 * ELF core with the original notes (threads, auxv, NT_FILE, signal) and one
 * PT_LOAD per piece of memory, with bytes for what was kept (zero pages as
 * holes of a sparse file) and none (p_filesz 0) for what was dropped.  Read
 * in one pass, a core of gigabytes becomes one about the size of its rings
 * and stacks that still gives the same trace and the same stacks
 * (coreextract, gdb's bt).
 * More than 65,534 program headers are written the kernel's way: e_phnum =
 * PN_XNUM, the count in section header 0's sh_info, that header last.
 */
#ifndef FT_CE_SLIMCORE_H
#define FT_CE_SLIMCORE_H

#include <stddef.h>
#include "corefile.h"

/* 0, or -1 with a one-line reason (the file is then not left behind) */
int core_write_slim(const struct core *c, const char *path, char *err, size_t errlen);

#endif
