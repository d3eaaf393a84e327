/*
 * modules.c -- the module table: every loaded object (main executable and
 * DSOs, vdso excluded) with its load bias, executable segments, build-id and
 * the generations in which it was mapped.  Updated at start-up, after
 * dlopen/dlclose (interposed here) and at generation boundaries when
 * dl_iterate_phdr's adds/subs counters moved.
 *
 * Disjoint generation ranges for objects loaded at the same address: a scan
 * that finds an object gone starts a new generation G and stamps the gone
 * object gen_unloaded = G; objects found new in the same scan get
 * gen_loaded = G too.  dlopen stamps new objects with the generation current
 * when dlopen was entered (so events of their constructors are covered);
 * since every unload opened a new generation before, ranges never overlap.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ft_internal.h"

void ft_new_generation_noscan(void) FT_HIDDEN;

static uint8_t seen[FT_MAX_MODULES];
static uint8_t added[FT_MAX_MODULES];
static uint64_t scan_gen_new;
static int table_full_warned;

static void read_build_id(const struct dl_phdr_info *info, struct ft_module *m)
{
    m->build_id_len = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const uint8_t *p, *end;
        if (ph->p_type != PT_NOTE)
            continue;
        p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const void *)p;
            size_t nsz = (n->n_namesz + 3) & ~3u, dsz = (n->n_descsz + 3) & ~3u;
            const uint8_t *name = p + sizeof *n, *desc = name + nsz;
            if (desc + dsz > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                n->n_descsz > 0 && n->n_descsz <= FT_BUILD_ID_MAX) {
                memcpy(m->build_id, desc, n->n_descsz);
                m->build_id_len = n->n_descsz;
                return;
            }
            p = desc + dsz;
        }
    }
}

static void fill_segments(const struct dl_phdr_info *info, struct ft_module *m)
{
    m->nseg = 0;
    memset(m->seg, 0, sizeof m->seg);
    for (int i = 0; i < info->dlpi_phnum && m->nseg < FT_MOD_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        m->seg[m->nseg].start = info->dlpi_addr + ph->p_vaddr;
        m->seg[m->nseg].size = ph->p_memsz;
        m->nseg++;
    }
}

/* a record for a new object: a free slot, or the oldest unloaded one */
static struct ft_module *module_slot(uint32_t *idx)
{
    struct ft_root *r = &funtrace_root;
    struct ft_module *mods = ft_modules();
    uint32_t i, best = UINT32_MAX;
    if (r->modules_used < r->modules_cap) {
        *idx = r->modules_used;
        return &mods[*idx];
    }
    for (i = 0; i < r->modules_used; i++)
        if (mods[i].state == FT_MOD_UNLOADED && !added[i] &&
            (best == UINT32_MAX || mods[i].epoch_unloaded < mods[best].epoch_unloaded))
            best = i;
    if (best == UINT32_MAX) {
        if (!table_full_warned++)
            ft_warn("module table full; further objects are not recorded", NULL);
        return NULL;
    }
    *idx = best;
    return &mods[best];
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct ft_root *r = &funtrace_root;
    struct ft_module *mods = ft_modules(), *m;
    int *index = data;
    const char *path;
    uint32_t i, idx;
    (void)size;
    if ((*index)++ == 0) {
        ft_rt.dl_adds = info->dlpi_adds;
        ft_rt.dl_subs = info->dlpi_subs;
        path = ft_rt.exe_path;
    } else {
        path = info->dlpi_name ? info->dlpi_name : "";
        if (!strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10) ||
            (info->dlpi_addr && info->dlpi_addr == getauxval(AT_SYSINFO_EHDR)))
            return 0;
    }
    for (i = 0; i < r->modules_used; i++) {
        m = &mods[i];
        if (m->state == FT_MOD_LOADED && m->bias == info->dlpi_addr && !strncmp(m->path, path, FT_MOD_PATH_MAX - 1)) {
            seen[i] = 1;
            return 0;
        }
    }
    m = module_slot(&idx);
    if (!m)
        return 0;
    FT_STORE(m->state, (uint32_t)FT_MOD_FREE);
    m->bias = info->dlpi_addr;
    m->gen_loaded = scan_gen_new;
    m->gen_unloaded = FT_GEN_NONE;
    m->epoch_unloaded = 0;
    fill_segments(info, m);
    read_build_id(info, m);
    memset(m->reserved, 0, sizeof m->reserved);
    memset(m->path, 0, sizeof m->path);
    ft_strlcpy(m->path, path, sizeof m->path);
    m->epoch_loaded = ++r->module_epoch;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    FT_STORE(m->state, (uint32_t)FT_MOD_LOADED);
    seen[idx] = 1;
    added[idx] = 1;
    if (idx == r->modules_used)
        FT_STORE(r->modules_used, r->modules_used + 1);
    return 0;
}

/* under lock; returns the number of changes */
int ft_modules_scan(uint64_t gen_for_new)
{
    struct ft_root *r = &funtrace_root;
    struct ft_module *mods = ft_modules();
    uint32_t i, n, gone = 0, changes = 0;
    int index = 0;
    if (!mods)
        return 0;
    memset(seen, 0, sizeof seen);
    memset(added, 0, sizeof added);
    scan_gen_new = gen_for_new;
    dl_iterate_phdr(scan_cb, &index);
    n = r->modules_used;
    for (i = 0; i < n; i++) {
        changes += added[i];
        if (mods[i].state == FT_MOD_LOADED && !seen[i])
            gone++;
    }
    if (gone) {
        ft_new_generation_noscan();
        uint64_t g = r->gen_current;
        for (i = 0; i < n; i++) {
            if (mods[i].state == FT_MOD_LOADED && !seen[i]) {
                mods[i].gen_unloaded = g;
                mods[i].epoch_unloaded = ++r->module_epoch;
                FT_STORE(mods[i].state, (uint32_t)FT_MOD_UNLOADED);
            } else if (added[i]) {
                mods[i].gen_loaded = g;
            }
        }
    }
    return (int)(changes + gone);
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    int *changed = data;
    (void)size;
    *changed = info->dlpi_adds != ft_rt.dl_adds || info->dlpi_subs != ft_rt.dl_subs;
    return 1; /* the first object is enough */
}

int ft_modules_changed(void)
{
    int changed = 0;
    dl_iterate_phdr(counters_cb, &changed);
    return changed;
}

void ft_modules_init(void)
{
    struct ft_root *r = &funtrace_root;
    void *p = mmap(NULL, FT_MAX_MODULES * sizeof(struct ft_module), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ssize_t n;
    if (p == MAP_FAILED) {
        ft_warn("cannot allocate the module table", NULL);
        return;
    }
    n = readlink("/proc/self/exe", ft_rt.exe_path, sizeof ft_rt.exe_path - 1);
    ft_rt.exe_path[n > 0 ? n : 0] = 0;
    r->modules = (uint64_t)(uintptr_t)p;
    r->modules_cap = FT_MAX_MODULES;
    r->modules_used = 0;
    ft_lock_wait();
    ft_modules_scan(0);
    ft_unlock();
}

/* fork child: same mappings, but a fresh table stamped with generation 0 */
void ft_modules_after_fork_child(void)
{
    struct ft_root *r = &funtrace_root;
    if (!r->modules)
        return;
    memset((void *)(uintptr_t)r->modules, 0, (size_t)r->modules_used * sizeof(struct ft_module));
    r->modules_used = 0;
    r->module_epoch = 0;
    ft_modules_scan(0);
}

/* ---- dlopen / dlclose interposition ----------------------------------- */
/* (not in libfuntrace_static.a: ft_interposing.h) */
#ifndef FT_STATIC_WRAP

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

FT_EXPORT __attribute__((weak)) void *dlopen(const char *file, int mode)
{
    static dlopen_fn real;
    uint64_t g0;
    void *h;
    if (!real)
        real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    if (!real)
        return NULL;
    g0 = FT_LOAD(funtrace_root.gen_current);
    h = real(file, mode);
    if (ft_rt.initialized && ft_modules_changed() && ft_lock()) { /* frozen: the housekeeper rescans later */
        ft_modules_scan(g0);
        ft_unlock();
    }
    if (h)
        ft_xray_scan();
    return h;
}

FT_EXPORT __attribute__((weak)) int dlclose(void *handle)
{
    static dlclose_fn real;
    int rc;
    if (!real)
        real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    if (!real)
        return -1;
    rc = real(handle);
    if (ft_rt.initialized && ft_modules_changed() && ft_lock()) {
        ft_modules_scan(FT_LOAD(funtrace_root.gen_current));
        ft_unlock();
    }
    ft_xray_scan();
    return rc;
}
#endif
