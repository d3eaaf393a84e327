/*
 * tsc.c -- TSC frequency without sleeping at start-up, refined against
 * CLOCK_MONOTONIC at every generation boundary.
 *
 * Sources, in order: the perf_event mmap page (time_mult/time_shift, the
 * kernel's own TSC->ns conversion), /sys/devices/system/cpu/cpu0/tsc_freq_khz,
 * CPUID leaf 0x15, and as a last resort a 1 ms busy calibration.
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

void ft_tsc_init(void)
{
    struct ft_root *r = &funtrace_root;
    uint64_t real;
    uint64_t hz;

    ft_clock_snapshot(&init_tsc, &init_mono, &real);
    r->init_tsc = init_tsc;
    ft_rt.init_mono_ns = init_mono;
    if ((hz = from_perf_page()))
        r->tsc_hz_source = FT_TSC_SRC_PERF_PAGE;
    else if ((hz = from_sysfs()))
        r->tsc_hz_source = FT_TSC_SRC_SYSFS;
    else if ((hz = from_cpuid15()))
        r->tsc_hz_source = FT_TSC_SRC_CPUID15;
    else {
        hz = calibrate();
        r->tsc_hz_source = FT_TSC_SRC_CALIBRATED;
    }
    r->tsc_hz = hz;
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
    if (!ft_rt.initialized)
        ft_init();
    return FT_LOAD(funtrace_root.tsc_hz);
}
