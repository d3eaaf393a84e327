/* dec_cocall.c -- the Portable Coroutine Library's scheme (co_call,
 * co_resume): main's context and one coroutine switch through the same
 * function, co_call (swapcontext); main's by way of drive, the coroutine's
 * by way of co_resume.
 *   main -> drive -> co_call -> swapcontext
 *   body -> co_resume -> co_call -> swapcontext
 *   dec_cocall [N]   N round trips (default 3); before the last one main
 *   calls last_round; then main crashes */
#include <stdlib.h>
#include <ucontext.h>

#define STACK (64 * 1024)

static ucontext_t main_ctx, co_ctx;
static ucontext_t *current = &main_ctx, *caller;
static char stack[STACK];
volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void last_round(void) { sink++; }
__attribute__((noinline)) void crash_here(void) { *nullp = 1; }

__attribute__((noinline)) void co_call(ucontext_t *to)
{
    ucontext_t *from = current;
    caller = from;
    current = to;
    swapcontext(from, to);
}

__attribute__((noinline)) void co_resume(void) { co_call(caller); }

__attribute__((noinline)) void body(void)
{
    for (int i = 0;; i++) {
        leaf(i);
        co_resume();
    }
}

__attribute__((noinline)) void drive(int n)
{
    for (int i = 0; i < n; i++) {
        if (i == n - 1)
            last_round();
        co_call(&co_ctx);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = STACK;
    co_ctx.uc_link = NULL;
    makecontext(&co_ctx, body, 0);
    drive(n);
    crash_here();
    return 0;
}
