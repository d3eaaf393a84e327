// dec_exc.cc -- C++ exceptions for the decoder tests: a throw unwinds
// thrower <- wrapper_call <- wrapper_outer, caught in catcher.
//   main -> caller x3 -> catcher -> before_try, wrapper_outer -> wrapper_call -> thrower,
//                                   after_catch
//   then main -> crash_here (SIGSEGV)
#include <cstdlib>

#define NI __attribute__((noinline))
volatile int sink;

NI void thrower(int i) { if (i >= 0) throw i; sink++; }
NI void wrapper_call(int i) { thrower(i); sink++; }
NI void wrapper_outer(int i) { wrapper_call(i); sink++; }
NI void before_try() { sink++; }
NI void after_catch() { sink++; }
NI void catcher(int i)
{
    before_try();
    try {
        wrapper_outer(i);
    } catch (int) {
        after_catch();
    }
}
NI void caller(int i) { catcher(i); sink++; }
NI void crash_here() { *(volatile int *)(long)(sink - sink) = 1; }

int main()
{
    for (int i = 0; i < 3; i++)
        caller(i);
    crash_here();
    return 0;
}
