/*
 * plugin_b -- a second instrumented shared library for examples/plugin_main.c.
 *
 * plugin_run -> b_hash -> b_mix, all traced.  It is loaded next to plugin_a
 * and unloaded with it, so its code addresses are only valid in the part of
 * the trace recorded while it was loaded.
 */
#include "plugin.h"

#define TRACED __attribute__((noinline))

const char *plugin_name(void) { return "b"; }

TRACED static unsigned long b_mix(unsigned long h, long v) { return (h ^ (unsigned long)v) * 1099511628211UL; }

TRACED static long b_hash(long n)
{
    unsigned long h = 1469598103934665603UL;
    for (long i = 0; i < n; i++)
        h = b_mix(h, i);
    return (long)(h % 1000003);
}

TRACED long plugin_run(long n) { return b_hash(n); }
