/* dec_longjmp_land.c -- a crash where a longjmp landed, before any hook ran there:
 *   main -> setter -> wrapper_outer -> wrapper_call -> jumper --longjmp--> setter,
 *   which faults at once (SIGSEGV).  The thread's events end with the longjmp's
 *   marker; the final stack (setter, main) says the jump happened. */
#include <setjmp.h>

#define NI __attribute__((noinline))
volatile int sink;
static jmp_buf jb;

NI void jumper(void) { sink++; longjmp(jb, 1); }
NI void wrapper_call(void) { jumper(); sink++; }
NI void wrapper_outer(void) { wrapper_call(); sink++; }
NI void setter(void)
{
    if (!setjmp(jb))
        wrapper_outer();
    else
        *(volatile int *)(long)(sink - sink) = 1; /* no call, no return: no event after the jump */
}

int main(void)
{
    setter();
    return 0;
}
