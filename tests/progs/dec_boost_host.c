/* dec_boost_host.c -- a plugin host linked -rdynamic (its symbols, the
 * runtime's interposers included, are exported to what it loads): loads
 * ARGV[1] RTLD_LOCAL, runs its plugin_run, then crashes */
#include <dlfcn.h>
#include <stdio.h>

int *volatile nullp;

__attribute__((noinline)) void crash_here(void) { *nullp = 1; }

int main(int argc, char **argv)
{
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
    run();
    crash_here();
    return 0;
}
