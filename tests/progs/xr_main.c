/* xr_main: calls lib_fn of a shared library it is linked with (rt_dlib.c,
 * built with the same wrapper), then dlopens another library (argv[1]) and
 * calls its lib_fn; snapshot */
#include <dlfcn.h>
#include <funtrace.h>
#include <stdio.h>

#define NI __attribute__((noinline))
int lib_fn(int x);
volatile int sink;

NI int via_link(void) { sink++; return lib_fn(1); }
NI int via_dlopen(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return -1;
    }
    int (*fn)(int) = (int (*)(int))dlsym(h, "lib_fn");
    sink++;
    return fn ? fn(2) : -1;
}

int main(int argc, char **argv)
{
    int a = via_link(), b = argc > 1 ? via_dlopen(argv[1]) : 0;
    printf("%d %d\n", a, b);
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
