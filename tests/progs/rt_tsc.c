/* rt_tsc: the TSC frequency at start-up.  Prints how long the runtime's
 * start-up took from its first clock read (root.init_tsc) to main, writes a
 * snapshot at once (early.raw) and one 100 ms later (late.raw), then prints
 * funtrace_ticks_per_second(). */
#include <stdio.h>
#include <unistd.h>
#include <funtrace_abi.h>
#include "rt_common.h"

extern struct ft_root funtrace_root;
volatile int sink;
NI void tsc_work(void) { sink++; }

static void snap(const char *path)
{
    struct funtrace_snapshot *s = funtrace_pause_and_get_snapshot();
    if (!s) {
        printf("snapshot %s failed\n", path);
        return;
    }
    funtrace_write_snapshot(path, s);
    funtrace_free_snapshot(s);
}

int main(void)
{
    unsigned long long now = funtrace_time();
    unsigned long long init = __atomic_load_n(&funtrace_root.init_tsc, __ATOMIC_RELAXED);
    tsc_work();
    snap("early.raw");
    usleep(100000);
    tsc_work();
    snap("late.raw");
    printf("startup_ticks=%llu hz=%llu\n", now - init, (unsigned long long)funtrace_ticks_per_second());
    return 0;
}
