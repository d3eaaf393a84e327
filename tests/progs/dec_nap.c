/* dec_nap.c -- sampled-mode runs of dense brackets with a loose one inside,
 * for funtrace-decode's fast replay loops:
 *   main -> rounds x30 { busy x300 { top -> leaf }     (dense brackets)
 *                        nap { top -> leaf; usleep } } (the bracket around the
 *        sleep is loose: its events cannot explain 2 ms; the brackets before
 *        it in the same stretch of plain items are dense)
 *        -> crash_here (SIGSEGV) */
#include <unistd.h>

#define NI __attribute__((noinline))
volatile int sink;

NI void leaf(void) { sink++; }
NI void top(void) { leaf(); }
NI void busy(void)
{
    for (int i = 0; i < 300; i++)
        top();
}
NI void nap(void)
{
    top();
    usleep(2000);
}
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(void)
{
    for (int r = 0; r < 30; r++) {
        busy();
        nap();
    }
    crash_here();
    return 0;
}
