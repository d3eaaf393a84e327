/*
 * count.c -- the call-counting runtime (funcount), linked instead of the
 * tracing runtime by `funtrace-gcc -funtrace-count` (the same objects: only
 * the link differs).  Every instrumented call increments a counter; at exit
 * the non-zero counters are written to $FUNTRACE_COUNT_FILE (default
 * ./funcount.txt) for `funtrace-count`, which names the functions.
 *
 * Counters: one array per executable segment of every loaded module (found
 * with dl_iterate_phdr before any constructor runs, and again after each
 * dlopen), one 64-bit counter per 8 bytes of code, mapped lazily
 * (MAP_NORESERVE: only the pages of called functions are touched).  A call is
 * keyed by an address inside the function's first 5 bytes (the -pg call site
 * or the -finstrument-functions function address); instrumented functions
 * are at least 10 bytes long, so two never share a counter.  Increments are
 * atomic (exact counts with many threads; contended cache lines cost time).
 *
 * File format (text): "# funtrace call counts ..." then
 *   M <module> <path>               one per module
 *   C <module> <vaddr hex> <count>  vaddr: the counter's last byte, in the file's addresses
 *   L <count>                       calls from code outside every known module
 * The API of funtrace.h links and does nothing (no trace is kept).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FC_API __attribute__((visibility("default")))
#define FC_MAX_SEGS 512

struct fc_seg {
    uintptr_t lo, len;
    uint64_t *cnt;
    uintptr_t bias; /* load bias of the module */
    int module;
};

struct fc_module {
    uintptr_t bias;
    char path[PATH_MAX];
};

static struct fc_seg segs[FC_MAX_SEGS];
static unsigned nsegs; /* published with release stores */
static struct fc_module modules[FC_MAX_SEGS];
static unsigned nmodules;
static uint64_t lost;
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

/* called from the hooks: general registers only (see count_pg.S) */
__attribute__((visibility("hidden"))) void ft_count_hit(uintptr_t addr)
{
    unsigned n = __atomic_load_n(&nsegs, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        uintptr_t off = addr - segs[i].lo;
        if (off < segs[i].len) {
            __atomic_fetch_add(&segs[i].cnt[off >> 3], 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
}

FC_API void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    ft_count_hit((uintptr_t)fn);
}

FC_API void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
}

static int add_module_segs(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (int p = 0; p < info->dlpi_phnum; p++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[p];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        int known = 0;
        for (unsigned i = 0; i < nsegs; i++)
            known |= segs[i].lo == lo;
        if (known || nsegs == FC_MAX_SEGS)
            continue;
        const char *name = info->dlpi_name;
        if (strstr(name, "linux-vdso") || strstr(name, "ld-linux"))
            continue; /* never instrumented */
        int m;
        for (m = 0; m < (int)nmodules; m++)
            if (modules[m].bias == info->dlpi_addr)
                break;
        if (m == (int)nmodules) {
            modules[m].bias = info->dlpi_addr;
            if (!*name) {
                ssize_t k = readlink("/proc/self/exe", modules[m].path, sizeof modules[m].path - 1);
                modules[m].path[k > 0 ? k : 0] = 0;
            } else {
                snprintf(modules[m].path, sizeof modules[m].path, "%s", name);
            }
            nmodules++;
        }
        size_t bytes = ((ph->p_memsz >> 3) + 1) * sizeof(uint64_t);
        void *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (c == MAP_FAILED)
            continue;
        segs[nsegs] = (struct fc_seg){lo, ph->p_memsz, c, info->dlpi_addr, m};
        __atomic_store_n(&nsegs, nsegs + 1, __ATOMIC_RELEASE);
    }
    return 0;
}

static void scan(void)
{
    pthread_mutex_lock(&scan_lock);
    dl_iterate_phdr(add_module_segs, NULL);
    pthread_mutex_unlock(&scan_lock);
}

static void write_counts(void)
{
    const char *path = getenv("FUNTRACE_COUNT_FILE");
    if (!path || !*path)
        path = "funcount.txt";
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "funtrace: cannot write the call counts to %s\n", tmp);
        return;
    }
    unsigned n = __atomic_load_n(&nsegs, __ATOMIC_ACQUIRE);
    fprintf(f, "# funtrace call counts, pid %d: M module path / C module vaddr count / L lost\n", (int)getpid());
    for (unsigned m = 0; m < nmodules; m++)
        fprintf(f, "M %u %s\n", m, modules[m].path);
    for (unsigned i = 0; i < n; i++) {
        size_t words = (segs[i].len >> 3) + 1;
        for (size_t w = 0; w < words; w++) {
            uint64_t c = __atomic_load_n(&segs[i].cnt[w], __ATOMIC_RELAXED);
            if (c)
                fprintf(f, "C %d %lx %llu\n", segs[i].module,
                        (unsigned long)(segs[i].lo + (w << 3) + 7 - segs[i].bias), (unsigned long long)c);
        }
    }
    fprintf(f, "L %llu\n", (unsigned long long)__atomic_load_n(&lost, __ATOMIC_RELAXED));
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "funtrace: cannot write the call counts to %s\n", path);
        unlink(tmp);
        return;
    }
    fprintf(stderr, "funtrace: call counts written to %s (report: funtrace-count %s)\n", path, path);
}

void ft_xray_scan(void) __attribute__((visibility("hidden")));

/* before every constructor: the executable's .preinit_array */
static void fc_init(void)
{
    static int done;
    if (done++)
        return;
    scan();
    atexit(write_counts);
}
__attribute__((section(".preinit_array"), used)) static void (*const fc_preinit)(void) = fc_init;

FC_API void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    void *h = real ? real(file, mode) : NULL;
    if (h) {
        scan();
        ft_xray_scan(); /* runtime/xray.c: an XRay object's sleds */
    }
    return h;
}

/* gcrt1.o (gcc -pg at link) calls these: no gmon.out */
__attribute__((weak)) void __monstartup(unsigned long lowpc, unsigned long highpc)
{
    (void)lowpc;
    (void)highpc;
}
__attribute__((weak)) void _mcleanup(void)
{
}
