/*
 * gens.c -- generations and the "funtrace" housekeeping thread.
 *
 * A generation boundary writes root->gens[g % 64] (number, start TSC, a clock
 * snapshot, the refined TSC frequency, the module epoch), then records the
 * ring position of every alive thread in its gen_pos[g % 64].  Nothing of
 * this touches the hot path.  The housekeeper starts a boundary every
 * root->gen_ms ms; dlclose (and any scan that finds an object gone) starts
 * one too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "funtrace.h"
#include "ft_internal.h"

static struct ft_gen gens[FT_GEN_SLOTS] __attribute__((aligned(64)));

static pthread_mutex_t hk_mutex = PTHREAD_MUTEX_INITIALIZER; /* start/stop (and fork) */
static pthread_t hk_thread;
static int hk_running;
static uint32_t hk_stop; /* futex word: the housekeeper waits on it */

static void write_gen(uint64_t g)
{
    struct ft_root *r = &funtrace_root;
    struct ft_gen *e = &gens[g % FT_GEN_SLOTS];
    uint64_t tsc, mono, real;
    ft_clock_snapshot(&tsc, &mono, &real);
    FT_STORE(e->flags, 0); /* invalid while being rewritten */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    e->gen = g;
    e->start_tsc = tsc;
    e->clk_tsc = tsc;
    e->clk_mono_ns = mono;
    e->clk_real_ns = real;
    e->tsc_hz = g ? ft_tsc_refine(tsc, mono) : r->tsc_hz;
    e->module_epoch = r->module_epoch;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    FT_STORE(e->flags, (uint64_t)FT_GENF_VALID);
}

static void record_positions(uint64_t g)
{
    struct ft_thread *th = ft_threads();
    uint32_t n = funtrace_root.threads_used;
    unsigned slot = (unsigned)(g % FT_GEN_SLOTS);
    for (uint32_t i = 0; i < n; i++) {
        struct ft_thread *t = &th[i];
        if (FT_LOAD(t->state) != FT_THR_ALIVE)
            continue;
        FT_STORE(t->gen_pos[slot].gen, FT_GEN_NONE);
        FT_STORE(t->gen_pos[slot].pos, FT_LOAD(t->pos));
        FT_STORE(t->gen_pos[slot].gen, g);
        if (t->fmt == FT_FMT_SAMPLED8 || t->fmt == FT_FMT_SAMPLED4)
            FT_STORE(t->countdown, 1); /* the next return is stamped */
        if (t->fmt == FT_FMT_EXACT8 || t->fmt == FT_FMT_SAMPLED4) { /* the next event carries the escapes */
            FT_STORE(t->tsc_hi, FT_E8_HI_NONE);
            FT_STORE(t->addr_hi, FT_E8_HI_NONE);
        }
    }
}

/* a new generation without looking at the module table; under lock */
void ft_new_generation_noscan(void) FT_HIDDEN;
void ft_new_generation_noscan(void)
{
    struct ft_root *r = &funtrace_root;
    uint64_t g = r->gen_current + 1;
    write_gen(g);
    FT_STORE(r->gen_current, g);
    record_positions(g);
    ft_registry_prefault();
}

/* a generation boundary; under lock */
void ft_new_generation(void)
{
    /* objects loaded behind our back (e.g. libc-internal dlopen) are
     * stamped with the generation in which they appeared */
    if (ft_modules_changed())
        ft_modules_scan(funtrace_root.gen_current);
    ft_new_generation_noscan();
    ft_refresh_names();
}

void ft_gens_init(void)
{
    struct ft_root *r = &funtrace_root;
    memset(gens, 0, sizeof gens);
    r->gens = (uint64_t)(uintptr_t)gens;
    r->gens_cap = FT_GEN_SLOTS;
    r->gen_current = 0;
    write_gen(0);
}

/* The housekeeper sleeps in a futex wait on hk_stop with an absolute
 * deadline (park.S: during a fatal-signal episode it stays parked after
 * waking, touching nothing); ft_housekeeper_stop() wakes it. */
static void *housekeeper(void *arg)
{
    struct timespec deadline;
    (void)arg;
    ft_rt_thread_begin(); /* awake (park.S) */
    prctl(PR_SET_NAME, "funtrace", 0, 0, 0);
    funtrace_ignore_this_thread();
    ft_tsc_deferred_calibration(); /* no TSC frequency source at start-up */
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    while (!__atomic_load_n(&hk_stop, __ATOMIC_ACQUIRE)) {
        uint64_t ns = (uint64_t)deadline.tv_nsec + funtrace_root.gen_ms * 1000000ull;
        deadline.tv_sec += (time_t)(ns / 1000000000ull);
        deadline.tv_nsec = (long)(ns % 1000000000ull);
        for (;;) {
            long rc = ft_park_syscall(SYS_futex, (long)&hk_stop, FUTEX_WAIT_BITSET_PRIVATE, 0, (long)&deadline, 0,
                                      (long)FUTEX_BITSET_MATCH_ANY);
            if (rc != -EINTR || __atomic_load_n(&hk_stop, __ATOMIC_ACQUIRE))
                break;
        }
        if (__atomic_load_n(&hk_stop, __ATOMIC_ACQUIRE))
            break;
        if (ft_lock()) { /* not while a fatal signal froze tracing */
            ft_new_generation();
            ft_unlock();
        }
        /* after a long stall (stopped process), do not catch up */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > deadline.tv_sec + 1)
            deadline = now;
    }
    ft_rt_thread_end();
    return NULL;
}

void ft_housekeeper_start(void)
{
    pthread_attr_t at;
    sigset_t all, old;
    if (!funtrace_root.gen_ms || hk_running)
        return;
    hk_stop = 0;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    /* the housekeeper never takes signals meant for the program */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&hk_thread, &at, housekeeper, NULL) == 0) {
        hk_running = 1;
        funtrace_root.flags |= FT_ROOTF_HOUSEKEEPER;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (!hk_running)
        ft_tsc_deferred_calibration(); /* nobody else will */
}

void ft_housekeeper_stop(void)
{
    struct timespec ts;
    if (!hk_running)
        return;
    pthread_mutex_lock(&hk_mutex);
    __atomic_store_n(&hk_stop, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &hk_stop, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    pthread_mutex_unlock(&hk_mutex);
    if (ft_frozen() || ft_rt_parked())
        return; /* exit() from a fatal-signal handler: the housekeeper is parked */
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    if (pthread_timedjoin_np(hk_thread, NULL, &ts) == 0) {
        hk_running = 0;
        funtrace_root.flags &= ~(uint64_t)FT_ROOTF_HOUSEKEEPER;
    }
}

void ft_hk_lock(void)
{
    pthread_mutex_lock(&hk_mutex);
}

void ft_hk_unlock(void)
{
    pthread_mutex_unlock(&hk_mutex);
}

/* fork child: generation 0, no housekeeper yet (restarted by the caller) */
void ft_gens_after_fork_child(void)
{
    struct ft_root *r = &funtrace_root;
    pthread_mutex_init(&hk_mutex, NULL);
    hk_running = 0;
    hk_stop = 0;
    r->flags &= ~(uint64_t)FT_ROOTF_HOUSEKEEPER;
    memset(gens, 0, sizeof gens);
    r->gen_current = 0;
    write_gen(0);
}
