/* rt_dlopen: dlopen lib1, call it, dlclose it, dlopen lib2 (normally mapped
 * at lib1's old address), call it, snapshot.  argv[1], argv[2]: the libs. */
#include <dlfcn.h>
#include <stdio.h>
#include "rt_common.h"

NI int call_lib(const char *path, int close_it)
{
    void *h = dlopen(path, RTLD_NOW);
    int (*fn)(int);
    int r;
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return -1;
    }
    fn = (int (*)(int))dlsym(h, "lib_fn");
    r = fn(10);
    printf("%s %p %d\n", path, (void *)fn, r);
    if (close_it)
        dlclose(h);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    if (call_lib(argv[1], 1) != 1)
        return 1;
    if (call_lib(argv[2], 0) != 2)
        return 1;
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
