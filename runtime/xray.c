/*
 * xray.c -- FUNTRACE_INSTR=xray: clang's -fxray-instrument sleds, patched at
 * run time into calls of the -pg hooks (__fentry__, __return__).
 *
 * clang leaves, at every instrumented function's entry, before each of its
 * returns and before each tail call, an 11-byte "sled" that does nothing
 * until patched, and lists them in the xray_instr_map section (32-byte
 * entries: sled address, function address, kind, ...; version 2: both
 * relative to the entry's own fields).  compiler-rt's XRay runtime would
 * patch them into calls of its trampolines, which save every register and
 * call a handler with a function id; we link without it
 * (-fnoxray-link-deps) and patch them ourselves into calls of the hooks that
 * -pg uses, which write the event directly:
 *
 *   entry, tail call:  jmp +9; 9 bytes of nops
 *                 ->   2-byte nop; call __fentry__ (tail: __return__); 4-byte nop
 *   exit:              ret; 10 bytes of nops
 *                 ->   2-byte nop; call __return__; ret; 3-byte nop
 *
 * The call's return address lies inside the function (sled + 7), so the
 * events are those of -pg (FORMAT.md 1.4): an address inside the function,
 * nothing else; the raw and the decoder do not know XRay.  There are no
 * function ids anywhere (compiler-rt's id -> address map,
 * __xray_function_address, is not needed).
 *
 * Patching a sled writes bytes 2..10 first (dead code while bytes 0..1 jump
 * over them or return), then bytes 0..1 with one atomic 2-byte store (sleds
 * are 2-byte aligned), as compiler-rt does: a thread running through a sled
 * at that moment executes either the old or the new instruction.  Unpatching
 * stores only bytes 0..1 back (jmp +9 / ret); bytes 2..10 stay, so a thread
 * stopped between the two instructions of a patched sled still finds the
 * call it was about to make.  The code pages are made writable for the time
 * of the patching (mprotect: read, write and execute, so that running
 * threads never fault), then restored; a patched page becomes private memory
 * of the process (and part of its core).
 *
 * Which modules: the executable (its map is found through the linker's
 * __start_/__stop_xray_instr_map) and, if it has sleds, every shared object
 * whose file has an xray_instr_map section (read from the file named by the
 * loader, checked against the loaded program headers): at start-up (before
 * any constructor: .preinit_array), after dlopen (the constructors of the
 * object have run by then, untraced) and after dlclose.  A shared object
 * far from the hooks (a call reaches +-2 GiB) calls them through a stub page
 * mapped near it (an indirect jump, so the return address stays the sled's).
 *
 * funtrace_disable_tracing() unpatches every sled (a disabled call costs a
 * jump and a return: 2 instructions), funtrace_enable_tracing() patches
 * them again (ft_xray_set).  Both may be called from any thread at any time;
 * they serialize on a mutex (not async-signal-safe).  A function running
 * while its sleds change may lose its call or its return event (the decoder
 * shows such a frame as for any missing event).
 *
 * This file is linked into both runtimes (libfuntrace.a and, for
 * -funtrace-count, libfuntrace_count.a): it needs only the two hooks.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ft_internal.h"

/* the hooks the sleds call (hooks_pg.S, or funcount/count_pg.S) */
void __fentry__(void);
void __return__(void);

/* the executable's sled map (hidden: the linker defines them when the
 * section exists, else they are 0) */
extern const uint8_t __start_xray_instr_map[] __attribute__((weak, visibility("hidden")));
extern const uint8_t __stop_xray_instr_map[] __attribute__((weak, visibility("hidden")));

#define SLED_SIZE 11
#define ENTRY_SIZE 32           /* one xray_instr_map entry */
#define KIND_ENTRY 0
#define KIND_EXIT 1
#define KIND_TAIL 2
#define KIND_LOG_ARGS_ENTRY 3
#define NOP2 0x9066u            /* 66 90, little-endian */
#define JMP9 0x09EBu            /* eb 09 */
#define RET_NOP 0x90C3u         /* c3 90 */
#define STUB_SIZE 4096
#define STUB_REACH (1LL << 31)

struct xmod {
    uintptr_t base;             /* load bias (dlpi_addr) */
    char *name;                 /* dlpi_name ("" for the executable) */
    const uint8_t *map;         /* xray_instr_map in memory */
    size_t n;                   /* its entries */
    uintptr_t lo, hi;           /* sleds span [lo, hi) */
    uintptr_t entry_to, exit_to; /* __fentry__ / __return__, or a stub */
    const ElfW(Phdr) *phdr;
    int phnum;
    int seen, bad, warned;
};

static pthread_mutex_t xr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xmod *mods;
static size_t nmods, capmods;
static int xr_on = 1;           /* sleds patched (tracing enabled) */
static int xr_any;              /* the executable has sleds */
static uintptr_t stubs[16];
static size_t nstubs;

static void xr_warn(const char *what, const char *name)
{
    char buf[640];
    int n = snprintf(buf, sizeof buf, "funtrace: XRay: %s: %s\n", what, *name ? name : "the executable");
    if (n > 0) {
        ssize_t r = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
        (void)r;
    }
}

/* ---- the sled map ---------------------------------------------------------- */

static uintptr_t sled_addr(const uint8_t *e)
{
    uint64_t a;
    memcpy(&a, e, 8); /* entries are not aligned */
    return e[18] >= 2 ? (uintptr_t)e + (uintptr_t)a : (uintptr_t)a;
}

/* a PT_LOAD of m holding [a, a + len) with the flags wanted, or NULL */
static const ElfW(Phdr) *segment_of(const struct xmod *m, uintptr_t a, size_t len, unsigned flags)
{
    for (int i = 0; i < m->phnum; i++) {
        const ElfW(Phdr) *ph = &m->phdr[i];
        uintptr_t s = m->base + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & flags) == flags && a >= s && a + len <= s + ph->p_memsz)
            return ph;
    }
    return NULL;
}

/* the xray_instr_map of a shared object, from its file's section headers
 * (the file must be the one loaded: same PT_LOAD headers); 0 if none */
static int dso_map(struct xmod *m)
{
    int fd = open(m->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(ElfW(Ehdr)))
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    const uint8_t *f = p;
    size_t size = (size_t)st.st_size;
    const ElfW(Ehdr) *eh = p;
    int found = 0;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
        eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) / sizeof(ElfW(Shdr)) ||
        eh->e_shstrndx >= eh->e_shnum || eh->e_phoff > size ||
        eh->e_phnum > (size - eh->e_phoff) / sizeof(ElfW(Phdr)) || eh->e_phnum != m->phnum)
        goto out;
    /* the loaded object's segments */
    const ElfW(Phdr) *fph = (const void *)(f + eh->e_phoff);
    for (int i = 0; i < m->phnum; i++)
        if (fph[i].p_type != m->phdr[i].p_type || fph[i].p_vaddr != m->phdr[i].p_vaddr ||
            fph[i].p_memsz != m->phdr[i].p_memsz)
            goto out;
    const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
    const ElfW(Shdr) *strs = &sh[eh->e_shstrndx];
    if (strs->sh_offset > size || strs->sh_size > size - strs->sh_offset)
        goto out;
    const char *names = (const char *)f + strs->sh_offset;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_name >= strs->sh_size || !(sh[i].sh_flags & SHF_ALLOC) ||
            strncmp(names + sh[i].sh_name, "xray_instr_map", strs->sh_size - sh[i].sh_name) ||
            sh[i].sh_size % ENTRY_SIZE)
            continue;
        uintptr_t a = m->base + sh[i].sh_addr;
        if (segment_of(m, a, sh[i].sh_size, PF_R)) {
            m->map = (const uint8_t *)a;
            m->n = sh[i].sh_size / ENTRY_SIZE;
            found = 1;
        }
        break;
    }
out:
    munmap(p, size);
    return found;
}

/* ---- patching ----------------------------------------------------------- */

/* an executable page within a call's reach of [lo, hi), holding the two
 * jumps: +0 to __fentry__, +16 to __return__ */
static uintptr_t stub_near(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < nstubs; i++)
        if ((intptr_t)(hi - stubs[i]) < STUB_REACH - STUB_SIZE && (intptr_t)(stubs[i] - lo) < STUB_REACH - STUB_SIZE)
            return stubs[i];
    if (nstubs == sizeof stubs / sizeof *stubs)
        return 0;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t up = (hi + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1), down = lo & ~((uintptr_t)pg - 1);
    /* pages right after the code, then before it, further and further */
    for (uintptr_t d = 0; d < (1UL << 30); d = d ? d * 2 : (uintptr_t)pg) {
        for (int k = 0; k < 2; k++) {
            if (k && down < d + STUB_SIZE + (uintptr_t)pg)
                continue;
            uintptr_t c = k ? down - d - STUB_SIZE : up + d;
            void *p = mmap((void *)c, STUB_SIZE, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (p == MAP_FAILED)
                continue;
            if ((uintptr_t)p != c) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
                munmap(p, STUB_SIZE);
                continue;
            }
            static const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
            uint64_t to[2] = {(uint64_t)(uintptr_t)__fentry__, (uint64_t)(uintptr_t)__return__};
            for (int j = 0; j < 2; j++) {
                memcpy((uint8_t *)p + 16 * j, jmp, 6);
                memcpy((uint8_t *)p + 16 * j + 6, &to[j], 8);
            }
            if (mprotect(p, STUB_SIZE, PROT_READ | PROT_EXEC) != 0) {
                munmap(p, STUB_SIZE);
                return 0;
            }
            stubs[nstubs++] = (uintptr_t)p;
            return (uintptr_t)p;
        }
    }
    return 0;
}

static int reaches(uintptr_t from, uintptr_t to)
{
    intptr_t d = (intptr_t)(to - from);
    return d > -STUB_REACH + SLED_SIZE && d < STUB_REACH - SLED_SIZE;
}

/* first sight of a module: the sleds' span, the hooks' addresses */
static int prepare(struct xmod *m)
{
    m->lo = UINTPTR_MAX;
    m->hi = 0;
    for (size_t i = 0; i < m->n; i++) {
        uintptr_t a = sled_addr(m->map + i * ENTRY_SIZE);
        if (a < m->lo)
            m->lo = a;
        if (a + SLED_SIZE > m->hi)
            m->hi = a + SLED_SIZE;
    }
    if (!m->n || !segment_of(m, m->lo, m->hi - m->lo, PF_X)) {
        xr_warn("the sleds lie outside the code, not patched", m->name);
        return 0;
    }
    uintptr_t f = (uintptr_t)__fentry__, r = (uintptr_t)__return__;
    if (reaches(m->lo, f) && reaches(m->hi, f) && reaches(m->lo, r) && reaches(m->hi, r)) {
        m->entry_to = f;
        m->exit_to = r;
        return 1;
    }
    uintptr_t s = stub_near(m->lo, m->hi);
    if (!s) {
        xr_warn("no room for a stub page near the code, not traced", m->name);
        return 0;
    }
    m->entry_to = s;
    m->exit_to = s + 16;
    return 1;
}

static void put_call(uint8_t *p, uintptr_t sled, uintptr_t to)
{
    uint8_t c[5] = {0xe8};
    int32_t rel = (int32_t)(intptr_t)(to - (sled + 7));
    memcpy(c + 1, &rel, 4);
    if (memcmp(p + 2, c, 5)) /* (identical bytes are never rewritten) */
        memcpy(p + 2, c, 5);
}

/* one sled; 0 if its bytes are not what a sled of its kind holds */
static int patch_sled(uintptr_t a, unsigned kind, int on, const struct xmod *m)
{
    uint8_t *p = (uint8_t *)a;
    uint16_t *head = (uint16_t *)p;
    uint16_t h = __atomic_load_n(head, __ATOMIC_RELAXED);
    if (kind == KIND_ENTRY || kind == KIND_LOG_ARGS_ENTRY || kind == KIND_TAIL) {
        if (h != JMP9 && h != NOP2)
            return 0;
        if (on) {
            static const uint8_t nop4[4] = {0x0f, 0x1f, 0x40, 0x00};
            put_call(p, a, kind == KIND_TAIL ? m->exit_to : m->entry_to);
            if (memcmp(p + 7, nop4, 4))
                memcpy(p + 7, nop4, 4);
        }
        if (h != (on ? NOP2 : JMP9))
            __atomic_store_n(head, (uint16_t)(on ? NOP2 : JMP9), __ATOMIC_RELEASE);
        return 1;
    }
    if (kind == KIND_EXIT) {
        if ((h & 0xff) != 0xc3 && h != NOP2)
            return 0;
        if (on) {
            static const uint8_t tail[4] = {0xc3, 0x0f, 0x1f, 0x00}; /* ret; 3-byte nop */
            put_call(p, a, m->exit_to);
            if (memcmp(p + 7, tail, 4))
                memcpy(p + 7, tail, 4);
        }
        if (on ? h != NOP2 : (h & 0xff) != 0xc3)
            __atomic_store_n(head, (uint16_t)(on ? NOP2 : RET_NOP), __ATOMIC_RELEASE);
        return 1;
    }
    return 1; /* custom and typed event sleds: left as they are */
}

/* every sled of m, with its code pages writable meanwhile */
static void patch_module(struct xmod *m, int on)
{
    if (m->bad || !m->n)
        return;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t from = m->lo & ~((uintptr_t)pg - 1), to = (m->hi + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    const ElfW(Phdr) *seg = segment_of(m, m->lo, m->hi - m->lo, PF_X);
    int prot = PROT_EXEC | (seg->p_flags & PF_R ? PROT_READ : 0) | (seg->p_flags & PF_W ? PROT_WRITE : 0);
    if (mprotect((void *)from, to - from, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        char why[128];
        snprintf(why, sizeof why, "cannot make the code writable (mprotect: %s), not traced", strerror(errno));
        xr_warn(why, m->name);
        m->bad = 1;
        return;
    }
    size_t odd = 0;
    for (size_t i = 0; i < m->n; i++) {
        const uint8_t *e = m->map + i * ENTRY_SIZE;
        uintptr_t a = sled_addr(e);
        /* (an even address: the 2-byte store never crosses a cache line) */
        if ((a & 1) || !patch_sled(a, e[16], on, m))
            odd++;
    }
    mprotect((void *)from, to - from, prot);
    if (odd && !m->warned) {
        m->warned = 1;
        m->bad = odd == m->n;
        xr_warn("some sleds do not hold the expected code and were left alone", m->name);
    }
}

/* ---- modules -------------------------------------------------------------- */

static struct xmod *find_mod(uintptr_t base, const char *name)
{
    for (size_t i = 0; i < nmods; i++)
        if (mods[i].base == base && !strcmp(mods[i].name, name))
            return &mods[i];
    return NULL;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    int *index = data;
    (void)size;
    int exe = (*index)++ == 0;
    const char *name = exe ? "" : info->dlpi_name ? info->dlpi_name : "";
    if (!exe && (!*name || !xr_any))
        return 0; /* the vdso; or no sleds in the executable: none looked for */
    struct xmod *m = find_mod(info->dlpi_addr, name);
    if (m) {
        m->seen = 1;
        m->phdr = info->dlpi_phdr;
        patch_module(m, xr_on); /* again: an object reloaded at the same place is unpatched */
        return 0;
    }
    if (nmods == capmods) {
        size_t nc = capmods ? capmods * 2 : 16;
        struct xmod *nm = realloc(mods, nc * sizeof *nm);
        if (!nm)
            return 0;
        mods = nm;
        capmods = nc;
    }
    m = &mods[nmods];
    memset(m, 0, sizeof *m);
    m->base = info->dlpi_addr;
    m->phdr = info->dlpi_phdr;
    m->phnum = info->dlpi_phnum;
    m->name = strdup(name);
    if (!m->name)
        return 0;
    m->seen = 1;
    nmods++;
    if (exe) {
        uintptr_t b = (uintptr_t)__start_xray_instr_map, e = (uintptr_t)__stop_xray_instr_map;
        if (b && e > b) {
            m->map = __start_xray_instr_map;
            m->n = (e - b) / ENTRY_SIZE;
            xr_any = 1;
        }
    } else {
        dso_map(m);
    }
    if (m->n && !prepare(m))
        m->bad = 1;
    patch_module(m, xr_on);
    return 0;
}

/* the loaded objects' sleds: the new ones patched (or not, while tracing
 * is disabled), the gone ones forgotten */
void ft_xray_scan(void)
{
    int index = 0;
    if (!__start_xray_instr_map)
        return; /* not an XRay executable */
    pthread_mutex_lock(&xr_lock);
    for (size_t i = 0; i < nmods; i++)
        mods[i].seen = 0;
    dl_iterate_phdr(scan_cb, &index);
    size_t k = 0;
    for (size_t i = 0; i < nmods; i++) {
        if (mods[i].seen)
            mods[k++] = mods[i];
        else
            free(mods[i].name);
    }
    nmods = k;
    pthread_mutex_unlock(&xr_lock);
}

/* funtrace_enable_tracing / funtrace_disable_tracing */
void ft_xray_set(int on)
{
    pthread_mutex_lock(&xr_lock);
    if (xr_on != on) {
        xr_on = on;
        for (size_t i = 0; i < nmods; i++)
            patch_module(&mods[i], on);
    }
    pthread_mutex_unlock(&xr_lock);
}

/* fork: the child's copy of the lock must not be held by a thread that
 * does not exist there */
static void xr_fork_prepare(void)
{
    pthread_mutex_lock(&xr_lock);
}
static void xr_fork_done(void)
{
    pthread_mutex_unlock(&xr_lock);
}

/* before every constructor (the executable's .preinit_array) */
static void xray_preinit(void)
{
    if (!__start_xray_instr_map)
        return;
    pthread_atfork(xr_fork_prepare, xr_fork_done, xr_fork_done);
    ft_xray_scan();
}
__attribute__((section(".preinit_array"), used)) static void (*const ft_xray_preinit)(void) = xray_preinit;
