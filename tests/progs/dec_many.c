/* dec_many: argv[1] rounds (default 10) of argv[2] calls (default 100000) of
 * one small function in main, argv[3] ms of sleep (default 12) after each
 * round, then a snapshot to ./funtrace.raw: a big one-thread raw whose
 * generations (FUNTRACE_GEN_MS below the sleep) hold at most about one
 * round each, for the decoder's memory test (run with a big FUNTRACE_BUF). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "funtrace.h"

#define NI __attribute__((noinline))
volatile int sink;

NI void many_leaf(int i) { sink += i; }

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 10, calls = argc > 2 ? atol(argv[2]) : 100000;
    int ms = argc > 3 ? atoi(argv[3]) : 12;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < calls; i++)
            many_leaf((int)i);
        usleep((useconds_t)ms * 1000);
    }
    funtrace_pause_and_write_current_snapshot();
    printf("done\n");
    return 0;
}
