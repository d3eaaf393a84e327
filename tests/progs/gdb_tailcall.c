/* gdb_tailcall.c -- a crash under a tail call: gdb shows the tail-calling
 * function as a synthetic TAILCALL frame that is not on the machine stack. */
#include <stdlib.h>
volatile int *gdb_tc_null;
volatile int gdb_tc_sink;
__attribute__((noinline)) void gdb_tc_fault(int x)
{
    gdb_tc_sink = x;
    *gdb_tc_null = x; /* SIGSEGV */
    gdb_tc_sink = x + 1;
}
__attribute__((noinline)) void gdb_tc_middle(int x)
{
    gdb_tc_sink = x;
    gdb_tc_fault(x + 1); /* tail call (-O2) */
}
__attribute__((noinline)) int gdb_tc_outer(int x)
{
    gdb_tc_middle(x * 2);
    return gdb_tc_sink;
}
int main(int argc, char **argv)
{
    (void)argv;
    return gdb_tc_outer(argc);
}
