/* dec_dbg.c -- a tiny known call pattern for the debuginfod tests:
 *   main -> dbg_outer -> dbg_inner x2, then dbg_crash -> SIGSEGV.
 * The tests strip its debug info and serve it from a local debuginfod. */
#include "funtrace.h"

#define NI __attribute__((noinline))
volatile int dbg_sink;

NI void dbg_inner(int i) { dbg_sink += i; __asm__ volatile(""); }
NI void dbg_outer(int n)
{
    for (int i = 0; i < n; i++)
        dbg_inner(i);
}
NI void dbg_crash(int *p) { *p = dbg_sink; }

int main(int argc, char **argv)
{
    (void)argv;
    dbg_outer(2);
    dbg_crash((int *)(argc > 100 ? &dbg_sink : 0));
    return 0;
}
