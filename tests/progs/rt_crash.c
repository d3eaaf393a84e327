/* rt_crash: crashes in various ways after a known call pattern.
 *   segv | abort | fpe | overflow */
#include <stdlib.h>
#include <string.h>
#include "rt_common.h"

volatile int sink;
volatile int zero;
NI void cr_before(void) { sink++; }
NI void cr_segv(void) { volatile int *p = (volatile int *)16; *p = 1; }
NI void cr_abort(void) { abort(); }
NI void cr_fpe(void) { sink = (sink + 7) / zero; }
NI int cr_recurse(int n) { volatile char pad[256]; pad[0] = (char)n; return cr_recurse(n + 1) + pad[0]; }

int main(int argc, char **argv)
{
    cr_before();
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "segv"))
        cr_segv();
    else if (!strcmp(argv[1], "abort"))
        cr_abort();
    else if (!strcmp(argv[1], "fpe"))
        cr_fpe();
    else if (!strcmp(argv[1], "overflow"))
        sink = cr_recurse(0);
    return 0;
}
