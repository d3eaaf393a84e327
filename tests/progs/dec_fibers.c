/* dec_fibers.c -- coroutines on one thread (ucontext: makecontext,
 * swapcontext): a scheduler in main runs NFIB fibers round-robin until all
 * have returned (each fiber's uc_link is the scheduler).  A fiber's step
 * yields in its middle, so the scheduler's and the fibers' frames are
 * suspended and resumed over and over.
 *   dec_fibers [ROUNDS [fiber]]   ROUNDS steps per fiber (default 3); then
 *   crash in main, or with "fiber" in fiber 1's last step (fiber 2 then
 *   suspended in its last yield, the scheduler in resume(1)) */
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define NFIB 3
#define STACK (64 * 1024)

static ucontext_t sched_ctx, fib_ctx[NFIB];
static char stacks[NFIB][STACK];
static int rounds, crash_in_fiber, done[NFIB];
volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void crash_here(void) { *nullp = 1; }
__attribute__((noinline)) void yield(int f) { swapcontext(&fib_ctx[f], &sched_ctx); }

__attribute__((noinline)) void step(int f, int i)
{
    leaf(i);
    yield(f);
    leaf(i);
    if (crash_in_fiber && f == 1 && i == rounds - 1)
        crash_here();
}

__attribute__((noinline)) void fiber(int f)
{
    for (int i = 0; i < rounds; i++)
        step(f, i);
    done[f] = 1;
}

__attribute__((noinline)) void resume(int f) { swapcontext(&sched_ctx, &fib_ctx[f]); }

__attribute__((noinline)) void schedule(void)
{
    int live;
    do {
        live = 0;
        for (int f = 0; f < NFIB; f++)
            if (!done[f]) {
                resume(f);
                live = 1;
            }
    } while (live);
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atoi(argv[1]) : 3;
    crash_in_fiber = argc > 2 && !strcmp(argv[2], "fiber");
    for (int f = 0; f < NFIB; f++) {
        getcontext(&fib_ctx[f]);
        fib_ctx[f].uc_stack.ss_sp = stacks[f];
        fib_ctx[f].uc_stack.ss_size = STACK;
        fib_ctx[f].uc_link = &sched_ctx;
        makecontext(&fib_ctx[f], (void (*)(void))fiber, 1, f);
    }
    schedule();
    crash_here();
    return 0;
}
