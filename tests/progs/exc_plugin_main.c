// exc_plugin_main.c -- a C program (no C++ runtime of its own) that dlopen()s
// the C++ library argv[1] (exc_plugin.cc) with RTLD_LOCAL and calls its
// plugin_run 3 times (each throws and catches inside the library), then
// writes a snapshot (funtrace.raw).  Exit 0: every exception was caught.
#include <dlfcn.h>
#include <stdio.h>
#include <funtrace.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "exc_plugin_main: %s\n", dlerror());
        return 2;
    }
    int (*run)(int) = (int (*)(int))dlsym(h, "plugin_run");
    if (!run)
        return 2;
    for (int i = 0; i < 3; i++)
        if (run(i) != 1)
            return 1;
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
