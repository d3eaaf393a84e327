/* snap_rss: argv[1] calls of a leaf, then funtrace_pause_and_write_current_snapshot()
 * to ./funtrace.raw; prints the process's RssAnon (KiB) before and after the
 * snapshot: "rss BEFORE AFTER" (run with a big FUNTRACE_BUF: the snapshot must
 * not fault in the ring's untouched pages). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "funtrace.h"

#define NI __attribute__((noinline))
volatile int sink;

NI void rss_leaf(int i) { sink += i; }

static NOFUNTRACE long rss_anon_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "RssAnon:", 8))
            v = atol(line + 8);
    if (f)
        fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < calls; i++)
        rss_leaf((int)i);
    long before = rss_anon_kib();
    funtrace_pause_and_write_current_snapshot();
    long after = rss_anon_kib();
    printf("rss %ld %ld\n", before, after);
    return 0;
}
