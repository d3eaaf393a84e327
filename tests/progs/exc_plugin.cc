// exc_plugin.cc -- a C++ library for exc_plugin_main.c (a C program that
// dlopen()s it with RTLD_LOCAL): plugin_run calls plugin_throw, whose Guard's
// destructor runs in its landing pad while the exception unwinds it to
// plugin_run's catch.
#include <stdexcept>

#define NI __attribute__((noinline))
volatile int sink;

NI void on_cleanup(int v) { sink += v; }
struct Guard {
    int v;
    NI ~Guard() { on_cleanup(v); }
};
NI void plugin_throw(int i)
{
    Guard g{i};
    if (i >= 0)
        throw std::runtime_error("plugin");
    sink++;
}
extern "C" NI int plugin_run(int i)
{
    try {
        plugin_throw(i);
    } catch (const std::exception &) {
        return 1;
    }
    return 0;
}
