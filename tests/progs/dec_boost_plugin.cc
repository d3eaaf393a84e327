/* dec_boost_plugin.cc -- a plugin (dlopen'ed by dec_boost_host.c) that runs a
 * Boost.Context fiber: its libboost_context is loaded in the plugin's local
 * scope, where the runtime's interposers (in the host, exported to the
 * plugin: -rdynamic) must find the real jump_fcontext and ontop_fcontext */
#include <boost/context/fiber.hpp>
#include <utility>

namespace ctx = boost::context;

volatile int psink;

__attribute__((noinline)) void pleaf(int x) { psink += x; }

__attribute__((noinline)) void pfiber_body(ctx::fiber &back)
{
    pleaf(1);
    back = std::move(back).resume();
    pleaf(2);
}

extern "C" int plugin_run(void)
{
    ctx::fiber f([](ctx::fiber &&s) {
        pfiber_body(s);
        return std::move(s);
    });
    f = std::move(f).resume();
    f = std::move(f).resume();
    return 0;
}
