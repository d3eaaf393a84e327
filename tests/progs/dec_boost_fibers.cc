/* dec_boost_fibers.cc -- coroutines on one thread with Boost.Context
 * (boost::context::fiber: libboost_context's jump_fcontext and
 * ontop_fcontext, runtime/fcontext.c): as dec_fibers.c, a scheduler in main
 * runs NFIB fibers round-robin until all have returned, each yielding in the
 * middle of every step.  Then a generator fiber is resumed twice and
 * destroyed while suspended: Boost unwinds it (an ontop_fcontext whose
 * function throws forced_unwind through its frames).
 *   dec_boost_fibers [ROUNDS [fiber]]   ROUNDS steps per fiber (default 3);
 *   then crash in main, or with "fiber" in fiber 1's last step (fiber 2
 *   then suspended in its last yield, the scheduler in resume(1)) */
#include <boost/context/fiber.hpp>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace ctx = boost::context;

#define NFIB 3

static ctx::fiber fibs[NFIB];       /* the scheduler's side: each fiber */
static ctx::fiber back[NFIB];       /* fiber f's side: the scheduler */
static int rounds, crash_in_fiber;
static bool done[NFIB];
volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void crash_here(void) { *nullp = 1; }
__attribute__((noinline)) void yield(int f) { back[f] = std::move(back[f]).resume(); }

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
    done[f] = true;
}

__attribute__((noinline)) void resume(int f) { fibs[f] = std::move(fibs[f]).resume(); }

__attribute__((noinline)) void schedule(void)
{
    bool live;
    do {
        live = false;
        for (int f = 0; f < NFIB; f++)
            if (!done[f]) {
                resume(f);
                live = true;
            }
    } while (live);
}

/* the generator: yields forever; destroyed (unwound) while suspended */
static ctx::fiber gen_back;
__attribute__((noinline)) void gen_yield(void) { gen_back = std::move(gen_back).resume(); }
__attribute__((noinline)) void gen_loop(void)
{
    for (int i = 0;; i++) {
        leaf(i);
        gen_yield();
    }
}

__attribute__((noinline)) void abandon_generator(void)
{
    ctx::fiber gen([](ctx::fiber &&s) {
        gen_back = std::move(s);
        gen_loop();
        return std::move(gen_back);
    });
    gen = std::move(gen).resume();
    gen = std::move(gen).resume();
}   /* ~fiber: unwinds gen_loop's frames */

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atoi(argv[1]) : 3;
    crash_in_fiber = argc > 2 && !strcmp(argv[2], "fiber");
    for (int f = 0; f < NFIB; f++)
        fibs[f] = ctx::fiber([f](ctx::fiber &&s) {
            back[f] = std::move(s);
            fiber(f);
            return std::move(back[f]);
        });
    schedule();
    abandon_generator();
    crash_here();
    return 0;
}
