/* dec_tail.c -- tail calls (build with -foptimize-sibling-calls):
 *   main -> run -> { tail_caller -> callee (a sibling call: jmp), tail_caller_untraced -> callee_untraced } x3
 *   then main -> crash_here (SIGSEGV) */
#include "funtrace.h"

#define NI __attribute__((noinline))
volatile int sink;

NI void callee(void) { sink++; }
NI void tail_caller(void) { sink++; callee(); }
NOFUNTRACE NI void callee_untraced(void) { sink++; }
NI void tail_caller_untraced(void) { sink++; callee_untraced(); }
NI void run(void)
{
    for (int i = 0; i < 3; i++) {
        tail_caller();
        tail_caller_untraced();
    }
    sink++;
}
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(void)
{
    run();
    crash_here();
    return 0;
}
