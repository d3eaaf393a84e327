/*
 * xalloc.c -- allocation that cannot fail (see xalloc.h).
 */
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xalloc_die(void)
{
    fprintf(stderr, "funtrace-decode: out of memory\n");
    exit(2);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *r = realloc(p, n ? n : 1);
    if (!r)
        xalloc_die();
    return r;
}

void *xgrow(void *arr, size_t *cap, size_t need, size_t elsz)
{
    if (need <= *cap)
        return arr;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    arr = xrealloc(arr, nc * elsz);
    *cap = nc;
    return arr;
}

char *xstrdup(const char *s)
{
    char *r = strdup(s ? s : "");
    if (!r)
        xalloc_die();
    return r;
}
