/* dec_manyfuncs.c -- 1000 functions (each calls leaf) called in a scattered order, more
 * than the decoder's direct-mapped caches hold (functions: 1024 addresses, a -pg
 * function has two; pairs of a call and its return: 2048): entries are evicted and
 * filled again all the time, in the fast replay loops' way.
 *   main -> { f_k -> leaf } x N (k = 7919 i mod 1000), then crash_here (SIGSEGV) */
#include <stdlib.h>

#define NI __attribute__((noinline))
volatile int sink;

NI void leaf(void) { sink++; }

#define F(n) NI void f##n(void) { leaf(); sink += 1; }
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
#define F100(n) F10(n##0) F10(n##1) F10(n##2) F10(n##3) F10(n##4) F10(n##5) F10(n##6) F10(n##7) F10(n##8) \
    F10(n##9)
F100(1) F100(2) F100(3) F100(4) F100(5) F100(6) F100(7) F100(8) F100(9) F100(0)

#define P(n) f##n,
#define P10(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) P(n##5) P(n##6) P(n##7) P(n##8) P(n##9)
#define P100(n) P10(n##0) P10(n##1) P10(n##2) P10(n##3) P10(n##4) P10(n##5) P10(n##6) P10(n##7) P10(n##8) \
    P10(n##9)
static void (*const tab[])(void) = {P100(1) P100(2) P100(3) P100(4) P100(5) P100(6) P100(7) P100(8) P100(9)
                                        P100(0)};

NI void crash_here(void) { *(volatile int *)(long)(sink - sink) = 1; }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    for (int i = 0; i < n; i++)
        tab[(unsigned)i * 7919u % 1000u]();
    crash_here();
    return 0;
}
