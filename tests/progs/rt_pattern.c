/* rt_pattern: a known call pattern, a NOFUNTRACE function, then a snapshot
 * appended to ./funtrace.raw (argv[1] == "crash": SIGSEGV afterwards). */
#include "rt_common.h"
#include <stdio.h>
#include <string.h>

volatile int sink;

NI void pat_c(int i) { sink += i; }
NI void pat_b(int i) { pat_c(i); pat_c(i + 1); }
NI void pat_a(int i) { pat_b(i); }
NOFUNTRACE NI void pat_hidden(int i) { pat_c(i); }
NI void pat_d(void) { pat_hidden(7); }

int main(int argc, char **argv)
{
    pat_a(1);
    pat_a(2);
    pat_d();
    if (argc > 1 && !strcmp(argv[1], "crash")) {
        volatile int *p = 0;
        *p = 1;
    }
    funtrace_pause_and_write_current_snapshot();
    printf("done\n");
    return 0;
}
