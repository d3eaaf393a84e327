/*
 * input.h -- open coreextract's input: a core file, `-` (stdin, e.g. from a
 * core_pattern pipe), or a zstd / lz4-frame / xz compressed core (detected by
 * magic).  Anything that is not a plain regular file is streamed into an
 * unlinked temporary file (mkstemp in $TMPDIR, else /tmp) so it can be mmapped.
 */
#ifndef FT_CE_INPUT_H
#define FT_CE_INPUT_H

#include <stddef.h>

struct ce_input {
    int fd;              /* seekable regular file with the raw core */
    int is_temp;
    char how[64];        /* "", "zstd", "lz4", "xz", "stdin", "stdin, zstd" ... */
    int truncated;       /* the compressed stream ended early */
};

/* 0 ok; -1 with a one-line reason in err */
int ce_input_open(const char *path, struct ce_input *in, char *err, size_t errlen);
void ce_input_close(struct ce_input *in);

#endif
