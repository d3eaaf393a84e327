/* dec_longjmp_ret.c -- a longjmp whose target returns at once, with no call
 * between (as Lua's luaD_rawrunprotected does after an error):
 *   main -> x3 { protect -> wrapper -> jumper --longjmp--> protect returns;
 *   after }; then crash_here (SIGSEGV).  In sampled mode with a stamp due
 *   at every return (FUNTRACE_SAMPLE_K=1), protect's return follows
 *   jumper's call in the ring. */
#include <setjmp.h>

#define NI __attribute__((noinline))
volatile int sink;
static jmp_buf jb;

NI void jumper(void) { longjmp(jb, 1); }
NI void wrapper(void) { jumper(); sink++; }
NI int protect(void)
{
    if (!setjmp(jb)) {
        wrapper();
        return 0;
    }
    return 1;
}
NI void after(void) { sink++; }
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(void)
{
    for (int i = 0; i < 3; i++) {
        protect();
        after();
    }
    crash_here();
    return 0;
}
