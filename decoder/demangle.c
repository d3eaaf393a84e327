/*
 * demangle.c -- C++ demangling through libstdc++'s __cxa_demangle (its C
 * symbol; the decoder stays C) and clone-suffix stripping.
 */
#include "demangle.h"

#include <stdlib.h>
#include <string.h>

/* declared extern "C" by <cxxabi.h>: the symbol is plain __cxa_demangle */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *display(const char *sym);

char *ft_demangle(const char *name)
{
    if (name[0] != '_' || name[1] != 'Z')
        return NULL;
    int status = -1;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

char *ft_display_name(const char *symbol)
{
    /* drop a symbol version ("memcpy@@GLIBC_2.14") */
    char *sym = strdup(symbol);
    if (!sym)
        return NULL;
    char *at = strchr(sym, '@');
    if (at && at != sym)
        *at = 0;
    char *r = display(sym);
    free(sym);
    return r;
}

static char *display(const char *sym)
{
    char *d = ft_demangle(sym);
    if (d) {
        char *c = strstr(d, " [clone ");
        if (c)
            *c = 0;
        return d;
    }
    /* a mangled name with a clone suffix the demangler rejected, or a C
     * name: cut ".cold", ".part.0", ".isra.0", ".constprop.0", ... (C and
     * C++ identifiers never contain '.') */
    char *s = strdup(sym);
    if (!s)
        return NULL;
    char *dot = strchr(s, '.');
    if (dot && dot != s) {
        *dot = 0;
        d = ft_demangle(s);
        if (d) {
            free(s);
            return d;
        }
    }
    return s;
}

int ft_is_thunk(const char *display)
{
    return !strncmp(display, "virtual thunk to ", 17) || !strncmp(display, "non-virtual thunk to ", 21) ||
           !strncmp(display, "covariant return thunk to ", 26);
}
