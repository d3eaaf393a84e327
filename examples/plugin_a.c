/*
 * plugin_a -- an instrumented shared library loaded by examples/plugin_main.c.
 *
 * plugin_run -> a_transform -> a_step, all traced (built with the funtrace
 * compiler wrapper, -shared -fPIC).  plugin_run(n < 0) ends in a_fault, which
 * writes through a NULL pointer: a crash inside a dlopen'ed library.
 */
#include "plugin.h"

#define TRACED __attribute__((noinline))

static long *volatile nowhere;

const char *plugin_name(void) { return "a"; }

TRACED static long a_step(long x) { return x * 3 + 1; }

TRACED static long a_transform(long n)
{
    long x = n;
    for (long i = 0; i < n; i++)
        x = a_step(x) % 1000003;
    return x;
}

TRACED static long a_fault(long n)
{
    *nowhere = n; /* SIGSEGV */
    return n;
}

TRACED long plugin_run(long n)
{
    if (n < 0)
        return a_fault(n);
    return a_transform(n);
}
