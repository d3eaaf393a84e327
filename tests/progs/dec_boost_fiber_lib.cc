/* dec_boost_fiber_lib.cc -- Boost.Fiber: two fibers that yield to each other
 * three times each, then a crash in main.  Boost.Fiber's scheduler switches
 * inside libboost_fiber.so: its calls of jump_fcontext and ontop_fcontext
 * must reach the runtime's interposers (runtime/fcontext.c) in the
 * executable. */
#include <boost/fiber/all.hpp>

volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void crash_here() { *nullp = 1; }

__attribute__((noinline)) void work(int f)
{
    for (int i = 0; i < 3; i++) {
        leaf(f);
        boost::this_fiber::yield();
    }
}

int main()
{
    boost::fibers::fiber a(work, 0), b(work, 1);
    a.join();
    b.join();
    crash_here();
}
