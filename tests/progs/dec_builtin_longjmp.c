/* dec_builtin_longjmp.c -- a jump the runtime cannot see (gcc's __builtin_longjmp is
 * not a libc call it interposes: no escape item before the next return), so a return
 * meets another function's frame on top in the middle of a run of plain items:
 *   main -> { outer -> lands -> middle -> jumper --__builtin_longjmp--> lands, which
 *   returns: middle and jumper lost their returns; leaf } x N; then main -> busy -> leaf
 *   x 200 (busy's first call open across runs: a function's first call is one the run
 *   loops do not take, with -finstrument-functions its bit-61 flags not known yet); then
 *   crash_here (SIGSEGV) */
#include <stdlib.h>

#define NI __attribute__((noinline))
volatile int sink;
static void *jb[5];

NI void jumper(void) { sink++; __builtin_longjmp(jb, 1); }
NI void middle(void) { jumper(); sink++; }
NI void lands(void)
{
    if (!__builtin_setjmp(jb))
        middle();
    sink++;
}
NI void leaf(void) { sink++; }
NI void outer(void) { lands(); leaf(); }
NI void busy(void)
{
    for (int i = 0; i < 200; i++)
        leaf();
}
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 50;
    for (int i = 0; i < n; i++)
        outer();
    busy();
    crash_here();
    return 0;
}
