/* dec_deep.c -- nesting for funtrace-decode --text's enclosing frames:
 *   main -> outer_a -> outer_b -> work x40 -> { leaf }   (work: short calls)
 *        -> outer_b -> crash_here (SIGSEGV)
 * with argv[1] == "overflow": main -> deep_start -> recurse (until the stack
 * overflows: tens of thousands of recurse frames still open at the crash);
 * with argv[1] == "mutual": main -> deep_start -> ping -> pong -> ping -> ...
 * (a mutual recursion until the stack overflows) */
#include <string.h>

#define NI __attribute__((noinline))
volatile int sink;

NI void leaf(void) { sink++; }
NI void work(void) { leaf(); leaf(); sink++; }
NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }
NI void outer_b(void)
{
    for (int i = 0; i < 40; i++)
        work();
    crash_here();
}
NI void outer_a(void) { outer_b(); sink++; }
NI int recurse(int n)
{
    volatile char pad[200];
    memset((char *)pad, n & 0x7f, sizeof pad);
    sink = pad[n % 200];
    return recurse(n + 1) + pad[0]; /* not a tail call: every frame stays open */
}
NI int deep_start(void) { return recurse(0); }
NI int pong(int n);
NI int ping(int n)
{
    volatile char pad[120];
    memset((char *)pad, n & 0x7f, sizeof pad);
    return pong(n + 1) + pad[n % 120];
}
NI int pong(int n)
{
    volatile char pad[80];
    memset((char *)pad, n & 0x3f, sizeof pad);
    return ping(n + 1) + pad[n % 80];
}
NI int mutual_start(void) { return ping(0); }

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "overflow"))
        return deep_start();
    if (argc > 1 && !strcmp(argv[1], "mutual"))
        return mutual_start();
    outer_a();
    return 0;
}
