/* dec_dlmain.c -- dlopen/dlclose of two plugins in turn (they usually land at
 * the same address): main -> cycle x2 -> { use_plugin(A), use_plugin(B) },
 * use_plugin -> plugin_run -> ...; then crash_here (SIGSEGV).
 * usage: dec_dlmain LIBA LIBB */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#define NI __attribute__((noinline))
volatile int dec_sink;

NI void use_plugin(const char *path)
{
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        _exit(3);
    }
    void (*run)(void) = (void (*)(void))dlsym(h, "plugin_run");
    run();
    printf("%s %p\n", path, (void *)run);
    dlclose(h);
}
NI void cycle(const char *a, const char *b)
{
    use_plugin(a);
    use_plugin(b);
}
NI void crash_here(void) { *(volatile int *)(long)(dec_sink - dec_sink) = 1; }

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    for (int i = 0; i < 2; i++)
        cycle(argv[1], argv[2]);
    fflush(stdout);
    crash_here();
    return 0;
}
