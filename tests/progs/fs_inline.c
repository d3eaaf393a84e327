/* fs_inline: a fault in a function inlined twice over (poke inlined into
 * middle, inlined into outer), called from main: gdb's bt shows poke,
 * middle, outer, main; so must the final stack.  Built with -O2. */
#include <stdio.h>

volatile int sink;

static inline __attribute__((always_inline)) void poke(int *p)
{
    sink++;
    *p = 1; /* fault */
}

static inline __attribute__((always_inline)) void middle(int *p)
{
    sink += 2;
    poke(p);
    sink += 3;
}

__attribute__((noinline)) void outer(int *p)
{
    middle(p);
    sink++;
}

int main(int argc, char **argv)
{
    (void)argv;
    outer(argc > 5 ? &argc : NULL);
    return 0;
}
