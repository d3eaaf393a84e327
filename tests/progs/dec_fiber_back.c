/* dec_fiber_back.c -- a context that moves to another thread and back (as a
 * work-stealing scheduler moves fibers): main starts fiber F (makecontext),
 * which yields in step; thread T resumes F, whose step returns, and F
 * yields again in step2 (back to T, which exits); main resumes F again, and
 * F crashes in step2 after its yield.  On main's thread F's stack at that
 * resume is step2's (T's events), not the one main saw F leave with (step).
 * Main sleeps 20 ms before it resumes F: in sampled mode main's events from
 * its switch to F's resume lie in one loose bracket, whose interpolated times
 * put main's first switch away from F milliseconds late, after T's switch
 * away from F (T's events take microseconds): the decoder must go by the
 * bracket's bounds, not by those times. */
#include <pthread.h>
#include <time.h>
#include <ucontext.h>

#define STACK (64 * 1024)

static ucontext_t main_ctx, fib_ctx, t_ctx, *back_to = &main_ctx;
static char stack[STACK];
volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void crash_here(void) { *nullp = 1; }
__attribute__((noinline)) void yield(void) { swapcontext(&fib_ctx, back_to); }

__attribute__((noinline)) void step(void)
{
    leaf(1);
    yield();
    leaf(2);
}

__attribute__((noinline)) void step2(void)
{
    leaf(3);
    yield();
    leaf(4);
    crash_here();
}

__attribute__((noinline)) void fiber(void)
{
    step();
    step2();
}

__attribute__((noinline)) void take_over(void) { swapcontext(&t_ctx, &fib_ctx); }
__attribute__((noinline)) void take_back(void) { swapcontext(&main_ctx, &fib_ctx); }

static void *thread_main(void *arg)
{
    (void)arg;
    back_to = &t_ctx;
    take_over();
    return NULL;
}

int main(void)
{
    getcontext(&fib_ctx);
    fib_ctx.uc_stack.ss_sp = stack;
    fib_ctx.uc_stack.ss_size = STACK;
    fib_ctx.uc_link = &main_ctx;
    makecontext(&fib_ctx, fiber, 0);
    swapcontext(&main_ctx, &fib_ctx);
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    back_to = &main_ctx;
    take_back();
    return 0;
}
