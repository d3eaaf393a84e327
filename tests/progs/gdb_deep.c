/* gdb_deep.c -- a thread recurses until its stack overflows (SIGSEGV): tens of
 * thousands of `recurse` frames are still open in the ring at the crash.
 * `funtrace tail` must stay small and fast regardless of the depth. */
#include <string.h>
volatile int gdb_deep_sink;
__attribute__((noinline)) int recurse(int n)
{
    volatile char pad[200];
    memset((char *)pad, n & 0x7f, sizeof pad);
    gdb_deep_sink = pad[n % 200];
    return recurse(n + 1) + pad[0]; /* not a tail call: every frame stays open */
}
__attribute__((noinline)) int deep_start(void)
{
    return recurse(0);
}
int main(void)
{
    return deep_start();
}
