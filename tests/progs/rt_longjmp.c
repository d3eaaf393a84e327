/* rt_longjmp: longjmp out of two traced frames, then more calls */
#include <setjmp.h>
#include "rt_common.h"

static jmp_buf jb;
volatile int sink;
NI void lj_c(void) { sink++; longjmp(jb, 1); }
NI void lj_b(void) { lj_c(); sink++; }
NI void lj_after(void) { sink++; }
NI void lj_a(void)
{
    if (!setjmp(jb))
        lj_b();
    lj_after();
}

int main(void)
{
    lj_a();
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
