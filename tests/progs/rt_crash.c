/* rt_crash: crashes in various ways after a known call pattern.
 *   segv | bus | abort | fpe | overflow
 * bus prints the address it faults on ("bus 0x...") before touching it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string.h>
#include "rt_common.h"

volatile int sink;
volatile int zero;
NI void cr_before(void) { sink++; }
NI void cr_segv(void) { volatile int *p = (volatile int *)16; *p = 1; }
NI void cr_bus(void)
{
    /* a shared mapping past the end of an empty file: SIGBUS, BUS_ADRERR */
    int fd = memfd_create("rt_crash", 0);
    volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd < 0 || p == MAP_FAILED)
        exit(3);
    printf("bus %p\n", (void *)p);
    fflush(stdout);
    p[0] = 1;
}
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
    else if (!strcmp(argv[1], "bus"))
        cr_bus();
    else if (!strcmp(argv[1], "abort"))
        cr_abort();
    else if (!strcmp(argv[1], "fpe"))
        cr_fpe();
    else if (!strcmp(argv[1], "overflow"))
        sink = cr_recurse(0);
    return 0;
}
