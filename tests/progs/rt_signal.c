/* rt_signal: snapshots on a signal.
 *   raise SIG: call sig_one, raise SIG, call sig_two, raise SIG, exit 0
 *   wait: call sig_one, print "ready", block until stdin closes
 *   hold: call sig_one, print "ready", wait for signals until killed */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rt_common.h"

volatile int sink;
NI void sig_one(void) { sink++; }
NI void sig_two(void) { sink++; }

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "raise")) {
        int sig = atoi(argv[2]);
        sig_one();
        raise(sig);
        sig_two();
        raise(sig);
        printf("survived\n");
        return 0;
    }
    char buf[16];
    if (argc > 1 && !strcmp(argv[1], "hold")) {
        sig_one();
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    sig_one();
    printf("ready\n");
    fflush(stdout);
    while (read(0, buf, sizeof buf) > 0)
        ;
    sig_two();
    return 0;
}
