/* fs_deep N: a recursion through a cycle of 7 functions, c1 -> c2 -> ... ->
 * c7 -> c1 ..., N cycles deep (default 150: 1050 frames), then a fault in
 * the innermost c7.  Built with -DLONG_CYCLE: a cycle of 9 functions (c8
 * and c9 after c7; the fault in c9). */
#include <stdlib.h>

#define NI __attribute__((noinline, noclone))
volatile int sink;
static int depth;

NI int c1(int n);
#ifdef LONG_CYCLE
NI int c9(int n)
{
    if (n == 0)
        return *(volatile int *)(long)(sink - sink); /* fault */
    return c1(n - 1) + 1;
}
NI int c8(int n) { return c9(n) + 1; }
NI int c7(int n) { return c8(n) + 1; }
#else
NI int c7(int n)
{
    if (n == 0)
        return *(volatile int *)(long)(sink - sink); /* fault */
    return c1(n - 1) + 1;
}
#endif
NI int c6(int n) { return c7(n) + 1; }
NI int c5(int n) { return c6(n) + 1; }
NI int c4(int n) { return c5(n) + 1; }
NI int c3(int n) { return c4(n) + 1; }
NI int c2(int n) { return c3(n) + 1; }
NI int c1(int n) { return c2(n) + 1; }

int main(int argc, char **argv)
{
    depth = argc > 1 ? atoi(argv[1]) : 150;
    sink = c1(depth - 1);
    return 0;
}
