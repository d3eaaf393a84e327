/* dec_sleepy.c -- sampled-mode time brackets for funtrace-decode:
 *   main -> sleepy x100 { top -> leaf; usleep(1000) }   (loose brackets: the
 *        sleeps are between two time words, the events cannot explain them)
 *        -> busy x2000 { top -> leaf }                   (dense brackets)
 *        -> crash_here (SIGSEGV) */
#include <unistd.h>

#define NI __attribute__((noinline))
volatile int sink;

NI void leaf(void) { sink++; }
NI void top(void) { leaf(); }
NI void sleepy(void)
{
    for (int i = 0; i < 100; i++) {
        top();
        usleep(1000);
    }
}
NI void busy(void)
{
    for (int i = 0; i < 2000; i++)
        top();
}
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(void)
{
    sleepy();
    busy();
    crash_here();
    return 0;
}
