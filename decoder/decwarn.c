/*
 * decwarn.c -- the decoder's warnings: one line each on stderr, at most 40,
 * none with --quiet (declared in decstate.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "decstate.h"

void dec_warn(struct dec *d, const char *fmt, ...)
{
    if (d->o.sym.quiet)
        return;
    if (d->nwarn++ >= 40) {
        if (d->nwarn == 41)
            fprintf(stderr, "funtrace-decode: (more warnings suppressed)\n");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    progress_clear(&d->prog);
    fputs("funtrace-decode: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
