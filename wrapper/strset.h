/*
 * strset.h -- a set of strings (copied), for the wrapper tools: names of
 * runtime functions, names listed in exclusion files.  Kept sorted (binary
 * search; insertion moves the tail), duplicates dropped.
 */
#ifndef FT_WRAPPER_STRSET_H
#define FT_WRAPPER_STRSET_H

#include <stddef.h>

struct strset {
    char **v;
    size_t n, cap;
};

void strset_init(struct strset *s);
void strset_add(struct strset *s, const char *str);
int strset_has(const struct strset *s, const char *str);
void strset_free(struct strset *s);
/* adds every whitespace-separated word of FILE (a line starting with '#' is a
 * comment); returns the number of names read, -1 if FILE cannot be read */
long strset_add_file(struct strset *s, const char *path);

#endif
