/*
 * input.h -- open coreextract's input: a core file, `-` (stdin, e.g. from a
 * core_pattern pipe), or a zstd / lz4-frame / xz compressed core (detected by
 * magic).  A plain regular file (also as stdin) is mmapped by core_open;
 * anything else -- a pipe, a compressed core -- is read once, in order,
 * through ce_src_read (decompressed on the fly, nothing written to disk) by
 * the one-pass reader (corestream.h).
 */
#ifndef FT_CE_INPUT_H
#define FT_CE_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ce_src;

struct ce_input {
    int fd;              /* the opened input */
    int is_file;         /* a plain regular file: core_open(fd) */
    struct ce_src *src;  /* else: the byte stream to read once */
    char how[64];        /* "", "zstd", "lz4", "xz", "stdin", "stdin, zstd" ... */
};

/* 0 ok; -1 with a one-line reason in err.  one_pass: read even a plain
 * regular file once through in->src (as a core_pattern pipe would be). */
int ce_input_open(const char *path, int one_pass, struct ce_input *in, char *err, size_t errlen);
void ce_input_close(struct ce_input *in);

/* A byte stream over memory (e.g. the fuzz harness's input): the same
 * decompression and reading as ce_input_open; free with ce_src_free. */
struct ce_src *ce_src_mem(const uint8_t *p, size_t n);
void ce_src_free(struct ce_src *s);

/* Up to n bytes of the (decompressed) stream: n unless at its end; 0 at the
 * end; -1 with err on a read error or corrupt compressed data. */
ssize_t ce_src_read(struct ce_src *s, void *buf, size_t n, char *err, size_t errlen);
/* after the end: the compressed stream ended early (the core is truncated) */
int ce_src_truncated(const struct ce_src *s);
/* compressed bytes consumed so far (for messages) */
uint64_t ce_src_consumed(const struct ce_src *s);

#endif
