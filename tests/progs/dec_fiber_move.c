/* dec_fiber_move.c -- a context that moves to another thread (as a
 * work-stealing scheduler moves fibers): main starts fiber F (makecontext),
 * which calls step, which yields back to main (swapcontext) with its frames
 * suspended.  main then starts thread T and joins it: T resumes F
 * (swapcontext into F's saved context), F's step goes on and returns, F
 * returns to T (uc_link), T exits.  Then main crashes: on main's thread F's
 * frames are still suspended at the end, but another thread resumed them. */
#include <pthread.h>
#include <ucontext.h>

#define STACK (64 * 1024)

static ucontext_t main_ctx, fib_ctx, t_ctx;
static char stack[STACK];
volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void crash_here(void) { *nullp = 1; }
__attribute__((noinline)) void yield(void) { swapcontext(&fib_ctx, &main_ctx); }

__attribute__((noinline)) void step(void)
{
    leaf(1);
    yield();
    leaf(2);
}

__attribute__((noinline)) void fiber(void) { step(); }

__attribute__((noinline)) void take_over(void) { swapcontext(&t_ctx, &fib_ctx); }

static void *thread_main(void *arg)
{
    (void)arg;
    take_over();
    return NULL;
}

int main(void)
{
    getcontext(&fib_ctx);
    fib_ctx.uc_stack.ss_sp = stack;
    fib_ctx.uc_stack.ss_size = STACK;
    fib_ctx.uc_link = &t_ctx;
    makecontext(&fib_ctx, fiber, 0);
    swapcontext(&main_ctx, &fib_ctx);
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    crash_here();
    return 0;
}
