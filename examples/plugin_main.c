/*
 * plugin -- dlopen/dlclose of instrumented shared libraries.
 *
 * Loads libplugin_a.so and libplugin_b.so (built with the funtrace compiler
 * wrapper, found next to this executable), calls each one's plugin_run,
 * unloads both, loads plugin_a again (possibly at another address) and calls
 * it once more.  Then, by default, it writes a snapshot of the whole trace to
 * plugin.raw (--out FILE) and exits 0; with --crash it makes plugin_a crash
 * (SIGSEGV inside the library).  Either way the trace holds calls into code
 * that was since unloaded: the decoder must name them with the library that
 * was mapped when they ran.
 *
 *   plugin [--crash] [--out FILE]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "funtrace.h"

#define TRACED __attribute__((noinline))

struct plugin {
    void *handle;
    const char *(*name)(void);
    long (*run)(long);
};

static char libdir[PATH_MAX];

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "plugin: %s: %s\n", what, detail);
    exit(1);
}

TRACED static struct plugin load_plugin(const char *file)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", libdir, file);
    struct plugin p = {0};
    p.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p.handle)
        die("dlopen", dlerror());
    p.name = (const char *(*)(void))dlsym(p.handle, "plugin_name");
    p.run = (long (*)(long))dlsym(p.handle, "plugin_run");
    if (!p.name || !p.run)
        die("dlsym", path);
    return p;
}

TRACED static void unload_plugin(struct plugin *p)
{
    if (dlclose(p->handle))
        die("dlclose", dlerror());
    p->handle = NULL;
}

TRACED static long call_plugin(struct plugin *p, long n)
{
    long r = p->run(n);
    printf("plugin: %s(%ld) = %ld\n", p->name(), n, r);
    fflush(stdout);
    return r;
}

int main(int argc, char **argv)
{
    int crash = 0;
    const char *out = "plugin.raw";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--crash"))
            crash = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: plugin [--crash] [--out FILE]\n");
            return 2;
        }
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        die("readlink /proc/self/exe", "failed");
    exe[n] = 0;
    snprintf(libdir, sizeof libdir, "%s", dirname(exe));

    uint64_t start = funtrace_time();
    struct plugin a = load_plugin("libplugin_a.so");
    call_plugin(&a, 5);
    struct plugin b = load_plugin("libplugin_b.so");
    call_plugin(&b, 6);
    unload_plugin(&a);
    unload_plugin(&b);
    printf("plugin: unloaded a and b\n");

    a = load_plugin("libplugin_a.so");
    call_plugin(&a, 7);
    if (crash) {
        printf("plugin: making a crash\n");
        fflush(stdout);
        call_plugin(&a, -1); /* SIGSEGV in plugin a */
        return 1;
    }
    struct funtrace_snapshot *snap = funtrace_pause_and_get_snapshot_starting_at_time(start);
    funtrace_write_snapshot(out, snap);
    funtrace_free_snapshot(snap);
    struct stat st;
    if (stat(out, &st) || st.st_size == 0)
        die("writing the snapshot failed", out);
    printf("plugin: snapshot written to %s\n", out);
    unload_plugin(&a);
    return 0;
}
