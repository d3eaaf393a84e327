/* strset.c -- see strset.h */
#include "strset.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fputs("funtrace: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

void strset_init(struct strset *s)
{
    memset(s, 0, sizeof *s);
}

/* position of str in the sorted array, or where it would go */
static size_t find(const struct strset *s, const char *str, int *found)
{
    size_t lo = 0, hi = s->n;
    *found = 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(s->v[mid], str);
        if (!c) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void strset_add(struct strset *s, const char *str)
{
    int found;
    size_t at = find(s, str, &found);
    if (found)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    size_t len = strlen(str) + 1;
    memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof *s->v);
    s->v[at] = xrealloc(NULL, len);
    memcpy(s->v[at], str, len);
    s->n++;
}

int strset_has(const struct strset *s, const char *str)
{
    int found;
    find(s, str, &found);
    return found;
}

void strset_free(struct strset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    strset_init(s);
}

long strset_add_file(struct strset *s, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    long added = 0;
    while (getline(&line, &cap, f) >= 0) {
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '#')
            continue;
        for (char *tok = strtok(p, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
            strset_add(s, tok);
            added++;
        }
    }
    free(line);
    fclose(f);
    return added;
}
