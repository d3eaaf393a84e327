/*
 * extract_core.h -- `coreextract CORE [EXE]`: the raw trace out of a core.
 */
#ifndef FT_CE_CORE_EXTRACT_H
#define FT_CE_CORE_EXTRACT_H

#include <stdint.h>
#include "output.h"

struct ce_core_opts {
    const char *core;      /* path or "-" */
    const char *exe;       /* NULL: from the core */
    const char *out;       /* NULL: stdout */
    int stacks;            /* FINSTACK chunks (default 1) */
    size_t max_frames;     /* frames kept per stack (0: CE_MAX_FRAMES; unwind.h) */
    uint64_t keep_max;     /* one-pass read: bound on memory kept on speculation (0: default) */
    int one_pass;          /* read even a core file once, as a pipe is read */
    const char *slim;      /* also write a core of the memory kept (implies one_pass) */
};

/* returns the exit code (live.h FT_EXIT_*), having printed its one line */
int ce_core_extract(const struct ce_core_opts *o);

#endif
