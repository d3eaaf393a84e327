/* dec_longjmp.c -- longjmp over instrumented frames:
 *   main -> setter x3 -> before_setjmp, wrapper_outer -> wrapper_call -> jumper --longjmp-->
 *   setter -> after_longjmp; then main -> crash_here (SIGSEGV) */
#include <setjmp.h>

#define NI __attribute__((noinline))
volatile int sink;
static jmp_buf jb;

NI void jumper(void) { longjmp(jb, 1); }
NI void wrapper_call(void) { jumper(); sink++; }
NI void wrapper_outer(void) { wrapper_call(); sink++; }
NI void before_setjmp(void) { sink++; }
NI void after_longjmp(void) { sink++; }
NI void setter(void)
{
    before_setjmp();
    if (!setjmp(jb))
        wrapper_outer();
    else
        after_longjmp();
}
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(void)
{
    for (int i = 0; i < 3; i++)
        setter();
    crash_here();
    return 0;
}
