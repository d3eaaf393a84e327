/*
 * tsc.c -- TSC frequency without sleeping at start-up, refined against
 * CLOCK_MONOTONIC at every generation boundary.
 *
 * Sources, in order: the perf_event mmap page (time_mult/time_shift, the
 * kernel's own TSC->ns conversion), /sys/devices/system/cpu/cpu0/tsc_freq_khz,
 * CPUID leaf 0x15, /proc/cpuinfo "cpu MHz" of cpu0 where that is the kernel's
 * cpu_khz (= tsc_khz: constant + nonstop TSC, no aperfmperf, no cpufreq
 * driver), and as a last resort a calibration against CLOCK_MONOTONIC - on
 * the housekeeping thread (root->tsc_hz stays 0 until it is done) if there is
 * one, else a 1 ms busy loop at start-up.  FUNTRACE_TSC_SOURCE=calibrated
 * (a debugging knob) skips the fast sources.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "funtrace.h"
#include "ft_internal.h"

static uint64_t init_tsc, init_mono;

/* TSC, CLOCK_MONOTONIC and CLOCK_REALTIME at one instant: the TSC is read
 * before and after the two clock reads and the midpoint is taken; retried
 * (up to 4 times) if the reads took unusually long (preempted). */
void ft_clock_snapshot(uint64_t *tsc, uint64_t *mono, uint64_t *real)
{
    uint64_t best_span = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t t0 = ft_rdtsc();
        uint64_t m = ft_mono_ns();
        uint64_t r = ft_real_ns();
        uint64_t t1 = ft_rdtsc();
        if (t1 - t0 < best_span) {
            best_span = t1 - t0;
            *tsc = t0 + (t1 - t0) / 2;
            *mono = m;
            *real = r;
        }
        if (best_span < 20000)
            break;
    }
}

static uint64_t from_perf_page(void)
{
    struct perf_event_attr attr;
    long fd;
    void *p;
    uint64_t hz = 0;
    long page = sysconf(_SC_PAGESIZE);

    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.disabled = 1;
    fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return 0;
    p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, (int)fd, 0);
    if (p != MAP_FAILED) {
        volatile struct perf_event_mmap_page *pg = p;
        for (int tries = 0; tries < 100; tries++) {
            uint32_t seq = pg->lock;
            __asm__ volatile("" ::: "memory");
            int cap = pg->cap_user_time;
            uint32_t mult = pg->time_mult;
            uint16_t shift = pg->time_shift;
            __asm__ volatile("" ::: "memory");
            if (pg->lock != seq)
                continue;
            if (cap && mult)
                hz = (uint64_t)(((unsigned __int128)1000000000u << shift) / mult);
            break;
        }
        munmap(p, (size_t)page);
    }
    close((int)fd);
    return hz;
}

static uint64_t from_sysfs(void)
{
    char buf[64];
    int fd = open("/sys/devices/system/cpu/cpu0/tsc_freq_khz", O_RDONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10) * 1000ull;
}

static uint64_t from_cpuid15(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 0x15)
        return 0;
    __cpuid(0x15, a, b, c, d);
    (void)d;
    if (!a || !b || !c)
        return 0; /* crystal frequency not enumerated */
    return (uint64_t)c * b / a;
}

/* "name\t...: " lines of /proc/cpuinfo: the value after ": " of the first
 * line of [p, end) starting with key, or NULL */
static const char *cpuinfo_field(const char *p, const char *end, const char *key)
{
    size_t kl = strlen(key);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return NULL; /* the last line was cut: do not trust it */
        if ((size_t)(nl - p) > kl && !memcmp(p, key, kl) && (p[kl] == '\t' || p[kl] == ' ')) {
            const char *c = memchr(p, ':', (size_t)(nl - p));
            return c && c + 1 < nl ? c + 2 : NULL;
        }
        p = nl + 1;
    }
    return NULL;
}

/* is the space-separated word in the "flags" value at f (up to '\n')? */
static int cpuinfo_flag(const char *f, const char *word)
{
    size_t wl = strlen(word);
    while (*f && *f != '\n') {
        const char *e = f;
        while (*e && *e != ' ' && *e != '\n')
            e++;
        if ((size_t)(e - f) == wl && !memcmp(f, word, wl))
            return 1;
        f = *e == ' ' ? e + 1 : e;
    }
    return 0;
}

/* /proc/cpuinfo's "cpu MHz" is aperfmperf's measurement if the CPU has it,
 * else the cpufreq driver's current frequency if there is a driver, else the
 * kernel's cpu_khz - which, with an invariant TSC, is tsc_khz (the kernel
 * calibrates both together; under KVM both come from the hypervisor).  Only
 * that last case is used: constant_tsc, nonstop_tsc or tsc_known_freq, no
 * aperfmperf, no cpu0/cpufreq.  The value has kHz resolution; the
 * generation-boundary refinement corrects it. */
static uint64_t from_cpuinfo(void)
{
    static char buf[16384]; /* start-up only, under the init once */
    size_t len = 0;
    ssize_t n;
    const char *end, *mhz, *flags, *blank;
    uint64_t khz = 0;
    int digits = 0, frac = -1;
    int fd;

    if (access("/sys/devices/system/cpu/cpu0/cpufreq", F_OK) == 0)
        return 0;
    fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* cpu0's block: up to the first blank line */
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0) {
        len += (size_t)n;
        buf[len] = 0;
        if (strstr(buf, "\n\n"))
            break;
    }
    close(fd);
    buf[len] = 0;
    blank = strstr(buf, "\n\n");
    end = blank ? blank + 1 : buf + len;
    mhz = cpuinfo_field(buf, end, "cpu MHz");
    flags = cpuinfo_field(buf, end, "flags");
    if (!mhz || !flags)
        return 0;
    if (!cpuinfo_flag(flags, "tsc") || !cpuinfo_flag(flags, "constant_tsc") ||
        !(cpuinfo_flag(flags, "nonstop_tsc") || cpuinfo_flag(flags, "tsc_known_freq")) ||
        cpuinfo_flag(flags, "aperfmperf"))
        return 0;
    /* "2596.130": MHz with up to 3 decimals = kHz */
    for (const char *c = mhz; *c && *c != '\n'; c++) {
        if (*c == '.' && frac < 0) {
            frac = 0;
        } else if (*c >= '0' && *c <= '9' && frac < 3 && digits < 9) {
            khz = khz * 10 + (uint64_t)(*c - '0');
            digits++;
            if (frac >= 0)
                frac++;
        } else if (*c >= '0' && *c <= '9' && frac >= 3) {
            continue; /* finer than kHz */
        } else {
            return 0;
        }
    }
    if (frac < 0)
        frac = 0;
    for (; frac < 3; frac++)
        khz *= 10;
    if (khz < 100000 || khz > 20000000) /* 100 MHz .. 20 GHz */
        return 0;
    return khz * 1000;
}

/* a (TSC, CLOCK_MONOTONIC) pair read back to back: the TSC is read before
 * and after the clock, the narrowest of 8 tries is kept (a preemption
 * between the reads would otherwise skew a short calibration) */
static void tsc_mono_pair(uint64_t *tsc, uint64_t *mono)
{
    uint64_t best = UINT64_MAX;
    *tsc = *mono = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t t0 = ft_rdtsc(), m = ft_mono_ns(), t1 = ft_rdtsc();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *tsc = t0 + (t1 - t0) / 2;
            *mono = m;
        }
    }
}

static uint64_t calibrate(void)
{
    uint64_t t0 = 0, m0 = 0, t1 = 0, m1 = 0;
    tsc_mono_pair(&t0, &m0);
    do
        tsc_mono_pair(&t1, &m1);
    while (m1 - m0 < 1000000);
    return (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000u / (m1 - m0));
}

/* a calibration over ~10 ms of sleep (no CPU burnt): two narrow
 * (TSC, CLOCK_MONOTONIC) pairs around a nanosleep */
static uint64_t calibrate_sleeping(void)
{
    uint64_t t0 = 0, m0 = 0, t1 = 0, m1 = 0;
    struct timespec ts = {0, 10000000};
    tsc_mono_pair(&t0, &m0);
    while (nanosleep(&ts, &ts) != 0)
        ;
    tsc_mono_pair(&t1, &m1);
    if (m1 <= m0 || t1 <= t0)
        return 0;
    return (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000u / (m1 - m0));
}

static int tsc_deferred; /* the housekeeper calibrates (root->tsc_hz == 0 till then) */

void ft_tsc_init(void)
{
    struct ft_root *r = &funtrace_root;
    uint64_t real;
    uint64_t hz = 0;
    const char *force = getenv("FUNTRACE_TSC_SOURCE");
    int fast = !(force && !strcmp(force, "calibrated"));

    ft_clock_snapshot(&init_tsc, &init_mono, &real);
    r->init_tsc = init_tsc;
    ft_rt.init_mono_ns = init_mono;
    tsc_deferred = 0;
    if (fast && (hz = from_perf_page()))
        r->tsc_hz_source = FT_TSC_SRC_PERF_PAGE;
    else if (fast && (hz = from_sysfs()))
        r->tsc_hz_source = FT_TSC_SRC_SYSFS;
    else if (fast && (hz = from_cpuid15()))
        r->tsc_hz_source = FT_TSC_SRC_CPUID15;
    else if (fast && (hz = from_cpuinfo()))
        r->tsc_hz_source = FT_TSC_SRC_CPUINFO;
    else if (r->gen_ms) {
        /* the housekeeper (started at the end of ft_init) calibrates */
        hz = 0;
        r->tsc_hz_source = FT_TSC_SRC_NONE;
        tsc_deferred = 1;
    } else {
        hz = calibrate();
        r->tsc_hz_source = FT_TSC_SRC_CALIBRATED;
    }
    r->tsc_hz = hz;
}

/* on the housekeeping thread before its first boundary (or at start-up if
 * it could not be created): the deferred calibration; then, under the lock,
 * root->tsc_hz and every generation record whose tsc_hz is still 0 (written
 * before the frequency was known) are set */
void ft_tsc_deferred_calibration(void)
{
    struct ft_root *r = &funtrace_root;
    struct ft_gen *g = ft_gens();
    uint64_t hz = 0;
    if (!tsc_deferred)
        return;
    if (!FT_LOAD(r->tsc_hz) && !(hz = calibrate_sleeping()))
        hz = calibrate();
    if (!ft_lock())
        return; /* frozen by a fatal signal: funtrace_ticks_per_second() calibrates itself */
    if (!FT_LOAD(r->tsc_hz))
        FT_STORE(r->tsc_hz, hz);
    hz = FT_LOAD(r->tsc_hz); /* funtrace_ticks_per_second() may have set it */
    FT_STORE(r->tsc_hz_source, (uint32_t)FT_TSC_SRC_CALIBRATED);
    for (unsigned i = 0; g && i < FT_GEN_SLOTS; i++)
        if (!FT_LOAD(g[i].tsc_hz))
            FT_STORE(g[i].tsc_hz, hz);
    tsc_deferred = 0;
    ft_unlock();
}

/* TSC frequency measured over the whole run so far; once the run is long
 * enough (>= 2 s) for the measurement to beat the start-up estimate
 * (error < 1e-6 with ~1 us clock-read jitter), it replaces root->tsc_hz. */
uint64_t ft_tsc_refine(uint64_t tsc, uint64_t mono_ns)
{
    struct ft_root *r = &funtrace_root;
    uint64_t dm = mono_ns - init_mono, dt = tsc - init_tsc;
    uint64_t hz;
    if (mono_ns <= init_mono || tsc <= init_tsc || dm < 2000000000ull)
        return r->tsc_hz;
    hz = (uint64_t)((unsigned __int128)dt * 1000000000u / dm);
    /* a wildly different value means the TSC is not usable as a clock
     * (e.g. migrated VM): keep the start-up estimate */
    if (r->tsc_hz && (hz > r->tsc_hz + r->tsc_hz / 20 || hz < r->tsc_hz - r->tsc_hz / 20))
        return r->tsc_hz;
    FT_STORE(r->tsc_hz, hz);
    FT_STORE(r->tsc_hz_source, (uint32_t)FT_TSC_SRC_CALIBRATED);
    return hz;
}

/* after fork: restart the whole-run measurement in the child */
void ft_tsc_after_fork_child(void) FT_HIDDEN;
void ft_tsc_after_fork_child(void)
{
    uint64_t real;
    ft_clock_snapshot(&init_tsc, &init_mono, &real);
    funtrace_root.init_tsc = init_tsc;
    ft_rt.init_mono_ns = init_mono;
}

/* ---- API -------------------------------------------------------------- */

FT_EXPORT uint64_t funtrace_time(void)
{
    return ft_rdtsc();
}

FT_EXPORT uint64_t funtrace_ticks_per_second(void)
{
    uint64_t hz;
    if (!ft_rt.initialized)
        ft_init();
    hz = FT_LOAD(funtrace_root.tsc_hz);
    if (!hz) {
        /* the housekeeper has not calibrated yet: never return 0 */
        uint64_t zero = 0;
        hz = calibrate();
        if (!__atomic_compare_exchange_n(&funtrace_root.tsc_hz, &zero, hz, 0, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED))
            hz = zero;
    }
    return hz;
}
