/* rt_sparse: a thread that calls rarely - one call every 2 ms for ~100 ms -
 * so that in sampled mode with the default k (64) every time word it gets
 * comes from a generation boundary.  Then a snapshot to ./funtrace.raw. */
#include <unistd.h>
#include "rt_common.h"

volatile int sink;
NI void sp_tick(int i) { sink += i; }

int main(void)
{
    for (int i = 0; i < 50; i++) {
        sp_tick(i);
        usleep(2000);
    }
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
