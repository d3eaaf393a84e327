/*
 * root.c -- the funtrace_root object, settings from the environment, and
 * runtime initialisation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ft_internal.h"

extern char **environ;

/* The root.  The magic is NOT initialised here (the binary only holds its
 * complement, ft_magic_c below); ft_init() writes it. */
FT_EXPORT __attribute__((used, aligned(64))) struct ft_root funtrace_root = {
    .h = {
        .abi_version = FT_ABI_VERSION,
        .word_size = 8,
        .endian = 1,
        .header_size = sizeof(struct ft_root_header),
        .root_size = sizeof(struct ft_root),
        .n_sizes = FT_S_COUNT,
        .n_offsets = FT_F_COUNT,
        .sizes_off = offsetof(struct ft_root, sizes),
        .offsets_off = offsetof(struct ft_root, offsets),
    },
    .sizes = FT_ROOT_SIZES_INIT,
    .offsets = FT_ROOT_OFFSETS_INIT,
    .enabled = 1,
};

_Static_assert(sizeof(struct ft_root) < 0x10000, "offsets fit in uint16_t");
_Static_assert(sizeof(struct ft_thread) == 1216, "ft_thread is 1216 bytes (COMMON.md)");

/* the complement of FT_ROOT_MAGIC */
#define C(x) ((uint8_t)~(uint8_t)(x))
static const volatile uint8_t ft_magic_c[FT_ROOT_MAGIC_LEN] = {
    C(0x89), C('F'), C('U'), C('N'), C('T'), C('R'), C('A'), C('C'),
    C('E'), C('R'), C('O'), C('O'), C('T'), C('\r'), C('\n'), C(0x1a),
};

struct ft_rt ft_rt = { .lock = PTHREAD_MUTEX_INITIALIZER };
__thread int ft_in_runtime __attribute__((tls_model("initial-exec")));
struct ft_hot_settings ft_hot __attribute__((aligned(4096))) = {
    .sample_k = FT_DEFAULT_SAMPLE_K, .sample_rets = (FT_DEFAULT_SAMPLE_K + 1) / 2};

/* The registry lock.  While tracing is frozen by another thread's fatal
 * signal (freeze.c) the caller's bookkeeping is skipped, not delayed: the
 * program's handler may wait for this thread (e.g. join it), so nothing may
 * block here; returns 0 then (the lock is not taken), else 1. */
int ft_lock(void)
{
    if (!ft_writer_try())
        return 0;
    ft_in_runtime++;
    pthread_mutex_lock(&ft_rt.lock);
    return 1;
}

/* the registry lock, waiting for the thaw if tracing is frozen (for
 * requests that must not be lost: funtrace_enable/disable_tracing) */
void ft_lock_wait(void)
{
    ft_writer_enter();
    ft_in_runtime++;
    pthread_mutex_lock(&ft_rt.lock);
}

void ft_unlock(void)
{
    pthread_mutex_unlock(&ft_rt.lock);
    ft_in_runtime--;
    ft_writer_leave();
}

uint64_t ft_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ft_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t ft_strlcpy(char *dst, const char *src, size_t cap)
{
    size_t n = 0;
    if (!cap)
        return 0;
    while (n + 1 < cap && src[n]) {
        dst[n] = src[n];
        n++;
    }
    dst[n] = 0;
    return n;
}

size_t ft_u64_to_dec(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0, i;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = 0;
    return n;
}

/* one line on stderr, async-signal-safe */
void ft_warn(const char *msg, const char *detail)
{
    char buf[512];
    size_t n = ft_strlcpy(buf, "funtrace: ", sizeof buf);
    n += ft_strlcpy(buf + n, msg, sizeof buf - n);
    if (detail) {
        n += ft_strlcpy(buf + n, ": ", sizeof buf - n);
        n += ft_strlcpy(buf + n, detail, sizeof buf - n);
    }
    if (n < sizeof buf - 1)
        buf[n++] = '\n';
    ssize_t r = write(2, buf, n);
    (void)r;
}

/* parse an unsigned decimal (or 0x hex) env var -- a size may end in K, M
 * or G (binary multiples, optionally followed by iB or B: 16K, 64KiB, 1M);
 * returns 0 if unset, -1 if invalid (after a warning), 1 if *out was set */
static int env_num(const char *name, uint64_t *out, int size)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    if (!s || !*s)
        return 0;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (size && end != s && *end) {
        unsigned shift = (*end | 0x20) == 'k' ? 10 : (*end | 0x20) == 'm' ? 20 : (*end | 0x20) == 'g' ? 30 : 0;
        if (shift) {
            end++;
            if (end[0] == 'i' && end[1] == 'B')
                end += 2;
            else if (end[0] == 'B')
                end++;
            if (v > (~0ULL >> shift))
                errno = ERANGE;
            v <<= shift;
        }
    }
    if (errno || *end || end == s || s[0] == '-') {
        ft_warn("ignoring invalid value of", name);
        return -1;
    }
    *out = v;
    return 1;
}

static int env_u64(const char *name, uint64_t *out)
{
    return env_num(name, out, 0);
}

int ft_env_u64(const char *name, uint64_t *out)
{
    return env_u64(name, out);
}

static void read_settings(void)
{
    struct ft_root *r = &funtrace_root;
    uint64_t v;
    const char *s;

    r->default_buf_size = FT_DEFAULT_BUF;
    if (env_num("FUNTRACE_BUF", &v, 1) == 1) {
        if (v < FT_MIN_BUF || v > FT_MAX_BUF || (v & (v - 1)))
            ft_warn("FUNTRACE_BUF must be a power of two between 32 and 2^30 bytes; using 1 MiB", getenv("FUNTRACE_BUF"));
        else
            r->default_buf_size = v;
    }
    r->gen_ms = FT_DEFAULT_GEN_MS;
    if (env_u64("FUNTRACE_GEN_MS", &v) == 1) {
        if (v > 3600000)
            ft_warn("FUNTRACE_GEN_MS too large; using 100", getenv("FUNTRACE_GEN_MS"));
        else
            r->gen_ms = v; /* 0: no housekeeping thread */
    }
    r->budget = FT_DEFAULT_BUDGET;
    if (env_num("FUNTRACE_BUDGET", &v, 1) == 1)
        r->budget = v;
    r->sample_k = FT_DEFAULT_SAMPLE_K;
    if (env_u64("FUNTRACE_SAMPLE_K", &v) == 1) {
        if (v < 1 || v > 1000000)
            ft_warn("FUNTRACE_SAMPLE_K must be 1..1000000; using " FT_STR(FT_DEFAULT_SAMPLE_K), getenv("FUNTRACE_SAMPLE_K"));
        else
            r->sample_k = v;
    }
    ft_sample_k = r->sample_k;
    ft_hot.sample_rets = (r->sample_k + 1) / 2; /* the countdown runs on returns: k events, calls included */
    r->time_mode = FT_TIME_EXACT;
    s = getenv("FUNTRACE_TIME");
    if (s && *s) {
        if (!strcmp(s, "sampled"))
            r->time_mode = FT_TIME_SAMPLED;
        else if (strcmp(s, "exact"))
            ft_warn("FUNTRACE_TIME must be exact or sampled; using exact", s);
    }
    ft_hook_mode = r->time_mode == FT_TIME_SAMPLED ? FT_MODE_SAMPLED : FT_MODE_EXACT;
    r->enabled = 1;
}

static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    size_t cap = 1 << 16, len = 0;
    char *buf;
    if (fd < 0)
        return;
    buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        close(fd);
        return;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == cap)
            break; /* truncated at 64 KiB */
    }
    close(fd);
    funtrace_root.cmdline = (uint64_t)(uintptr_t)buf;
    funtrace_root.cmdline_len = len;
}

static void ft_atexit(void)
{
    ft_housekeeper_stop();
}

extern void ft_psi_start(void) __attribute__((weak));
extern void ft_fork_init(void) FT_HIDDEN;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void do_init(void)
{
    struct ft_root *r = &funtrace_root;
    int i;

    ft_in_runtime++;
    r->pid = (uint64_t)getpid();
    r->h.self = (uint64_t)(uintptr_t)r;
    read_settings();
    read_cmdline();
    ft_tsc_init();
    ft_tid_init();
    ft_registry_init();
    ft_modules_init();
    ft_gens_init();
    ft_fork_init();
    ft_snapshot_init();
    ft_signals_init();
    /* the root becomes valid for readers only now */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (i = 0; i < FT_ROOT_MAGIC_LEN; i++)
        r->h.magic[i] = (uint8_t)~ft_magic_c[i];
    r->flags |= FT_ROOTF_INITIALIZED;
    ft_rt.initialized = 1;
    atexit(ft_atexit);
    ft_housekeeper_start();
    if (getenv("FUNTRACE_PSI") && ft_psi_start)
        ft_psi_start();
    ft_freeze_protect(); /* ft_hot is read-only from now on */
    ft_in_runtime--;
}

/* libc has initialised itself (environ, program_invocation_name = argv[0]):
 * code called from .preinit_array runs before that, and getenv() sees
 * nothing there; the first traced call after it initialises the runtime.
 * (environ may be NULL later again after clearenv().) */
int ft_libc_ready(void)
{
    return environ != NULL || (program_invocation_name && *program_invocation_name);
}

void ft_init(void)
{
    pthread_once(&init_once, do_init);
}

__attribute__((constructor(101))) static void ft_ctor(void)
{
    ft_init();
}
