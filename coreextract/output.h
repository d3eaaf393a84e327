/*
 * output.h -- where coreextract writes the raw: stdout (refused when it is a
 * terminal) or -o FILE, written as FILE.tmp and renamed when complete (a
 * failed run removes FILE.tmp and leaves no FILE behind).
 */
#ifndef FT_CE_OUTPUT_H
#define FT_CE_OUTPUT_H

#include <stddef.h>
#include "funtrace_rawwrite.h"
#include "util.h"

struct ce_out {
    char *path;      /* NULL: stdout */
    char *tmp;
    struct ce_fdout *o;
    struct ft_writer w;
};

/* 0 ok, else the exit status with err: FT_EXIT_BADINPUT (refuses a terminal),
 * FT_EXIT_WRITE (FILE.tmp cannot be created) */
int ce_out_open(struct ce_out *out, const char *path, char *err, size_t errlen);
/* flush and rename into place; 0 ok, -1 with err */
int ce_out_commit(struct ce_out *out, char *err, size_t errlen);
/* drop a partial output (removes FILE.tmp) */
void ce_out_abort(struct ce_out *out);

#endif
