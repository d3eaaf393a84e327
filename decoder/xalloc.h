/*
 * xalloc.h -- allocation that cannot fail: on exhaustion the decoder prints
 * one line and exits with status 2 (an input too large for this machine).
 */
#ifndef FT_DECODER_XALLOC_H
#define FT_DECODER_XALLOC_H

#include <stddef.h>

void xalloc_die(void) __attribute__((noreturn));
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);  /* n == 0 allocates one element */
void *xrealloc(void *p, size_t n);   /* n == 0 keeps one byte */
/* arr grown (doubling, from 16) to hold at least need elements of elsz */
void *xgrow(void *arr, size_t *cap, size_t need, size_t elsz);
char *xstrdup(const char *s);        /* NULL -> "" */

#endif
