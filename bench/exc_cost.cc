// exc_cost.cc -- ns per C++ throw + catch, for bench/xray_exc: main -> d4 ->
// d3 -> d2 -> d1 loops calling catcher -> w3 -> w2 -> w1 -> thrower, which
// throws an int caught in catcher (4 frames unwound; the catch's callers:
// d1 d2 d3 d4 main ...).  Built plain and with the funtrace wrappers.
//   exc_cost [N]   prints "ns_per_exception X"
#include <chrono>
#include <cstdio>
#include <cstdlib>

#define NI __attribute__((noinline))
static volatile int sink;

NI void thrower(int i) { sink++; if (i >= 0) throw i; }
NI void w1(int i) { thrower(i); sink++; }
NI void w2(int i) { w1(i); sink++; }
NI void w3(int i) { w2(i); sink++; }
NI int catcher(int i)
{
    try {
        w3(i);
    } catch (int v) {
        return v;
    }
    return 0;
}
NI void d1(int n) { for (int i = 0; i < n; i++) catcher(i); }
NI void d2(int n) { d1(n); sink++; }
NI void d3(int n) { d2(n); sink++; }
NI void d4(int n) { d3(n); sink++; }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    d4(n / 10); // warm up
    auto t0 = std::chrono::steady_clock::now();
    d4(n);
    auto t1 = std::chrono::steady_clock::now();
    std::printf("ns_per_exception %.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    return 0;
}
