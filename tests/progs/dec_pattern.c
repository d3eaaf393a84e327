/* dec_pattern.c -- a known call pattern for the decoder tests.
 *   dec_pattern crash            : main -> run -> (leaf x3, mid -> leaf) x N, then crash_here -> SIGSEGV
 *   dec_pattern snapshot FILE    : same pattern, then a snapshot written to FILE, exit 0
 * argv[2] (optional): N iterations (default 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "funtrace.h"

#define NI __attribute__((noinline))
volatile int sink;

NI void leaf(int i) { sink += i; __asm__ volatile(""); }
NI void mid(int i) { leaf(i); sink++; }
NI void crash_here(int *p) { *p = sink; }
NI void run(int n)
{
    for (int i = 0; i < n; i++) {
        leaf(i);
        leaf(i);
        leaf(i);
        mid(i);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : 3;
    run(n);
    if (argc > 1 && !strcmp(argv[1], "snapshot")) {
        int fd = open(argv[3 - (argc <= 3)], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        funtrace_write_snapshot_fd(fd);
        close(fd);
        return 0;
    }
    crash_here((int *)(argc > 100 ? &sink : 0));
    return 0;
}
