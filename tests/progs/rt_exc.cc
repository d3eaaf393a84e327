// rt_exc: a C++ exception thrown two traced frames below the catcher
#include "rt_common.h"

volatile int sink;
NI void ex_thrower(int x) { if (x) throw x; sink++; }
NI void ex_mid(int x) { ex_thrower(x); sink++; }
NI int ex_catcher(void)
{
    try {
        ex_mid(1);
    } catch (int v) {
        return v;
    }
    return 0;
}
NI void ex_after(void) { sink++; }

int main()
{
    int r = ex_catcher();
    ex_after();
    funtrace_pause_and_write_current_snapshot();
    return r == 1 ? 0 : 1;
}
