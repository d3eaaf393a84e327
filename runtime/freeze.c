/*
 * freeze.c -- tracing frozen process-wide while a fatal signal is handled
 * (FORMAT.md 1.9).
 *
 * When SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT reaches a handler of the
 * program's own (signals.c wraps every such handler), the runtime first
 * records the signal as a fault episode in the root (the ORIGINAL fault,
 * whatever the handler does next), then freezes tracing:
 *
 *  - ft_hot.mode gets FT_MODE_OFF: every hook returns at once, touching
 *    neither TLS nor the thread's record.  ft_hot is a page of its own,
 *    read-only after start-up and switched here with mprotect (which is
 *    async-signal-safe), so a handler that overwrites all writable memory
 *    and restores it (a memory test) cannot change what the hooks see;
 *  - the runtime's threads (housekeeper, PSI) are parked in a futex wait on
 *    that page (park.S), using no stack and no writable memory until the
 *    episode ends -- with FUNTRACE_CRASH_HANDLERS=trace too, where tracing
 *    is not frozen: a handler that rewrites memory must not meet the
 *    housekeeper calling through an overwritten GOT or returning into an
 *    overwritten stack; any other thread's registry bookkeeping (thread exit, a new
 *    thread's record, dlopen, thread names) is skipped meanwhile, never
 *    waited for -- the handler may be waiting for that thread -- and the
 *    freezer waits (bounded) for threads that were already inside (ft_busy)
 *    to leave, and (in both modes) for awake runtime threads to park.
 *
 * The episode ends when the handler returns (unless a fatal signal is then
 * pending with its default action: the process is about to die), leaves by
 * (sig)longjmp or a C++ exception caught outside it: tracing resumes and the
 * episode stays in the root as an instant of the trace.  A signal that ends
 * the process leaves it ACTIVE and tracing frozen, so the rings in the core
 * end at the fault.
 *
 * Per handler invocation a "level" is kept (the thread, the handler's stack
 * frame); an episode lasts while any level is open (several threads may be
 * in handlers at once; a handler may fault again).  The level table and the
 * lock are in ordinary memory: they are only touched at the transitions,
 * i.e. never while a handler is running on another thread that could be
 * rewriting memory -- except when two threads take fatal signals at once
 * (best effort).  The list of threads with open levels is kept in the
 * read-only page too, for ft_lock().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ft_internal.h"
#include "ft_hook_offsets.h"

/* what park.S uses */
_Static_assert(offsetof(struct ft_hot_settings, freeze_seq) == FT_HOT_OFF_FREEZE_SEQ, "park.S freeze_seq");
_Static_assert(offsetof(struct ft_hot_settings, park) == FT_HOT_OFF_PARK && sizeof ft_hot.park == 4, "park.S park");

int ft_busy;                  /* threads inside the runtime's writers (ft_lock) */
static __thread int busy_mine __attribute__((tls_model("initial-exec")));
int ft_rt_awake;              /* runtime threads awake (park.S) */
static __thread int awake_mine __attribute__((tls_model("initial-exec")));

void ft_rt_thread_begin(void)
{
    awake_mine = 1;
    __atomic_add_fetch(&ft_rt_awake, 1, __ATOMIC_SEQ_CST);
}

void ft_rt_thread_end(void)
{
    __atomic_sub_fetch(&ft_rt_awake, 1, __ATOMIC_SEQ_CST);
    awake_mine = 0;
}

#define WAIT_WORKERS_NS 500000000ull /* how long the freezer waits for writers */

struct level {
    uint32_t tid;             /* 0: free */
    uint32_t pad;
    uint64_t order;           /* nesting order */
    uintptr_t frame;          /* the signal wrapper's frame */
    uintptr_t alt_lo, alt_hi; /* the alternate stack it runs on, or 0 */
};

static struct {
    uint32_t lock;            /* tid of the holder, 0: free */
    uint32_t nlevels;         /* open levels */
    uint64_t order;
    int froze;                /* this episode set FT_MODE_OFF */
    int parked;               /* this episode set ft_hot.park */
    int ro;                   /* ft_hot is read-only (start-up done) */
    uint8_t base_mode;        /* ft_hot.mode without FT_MODE_OFF */
    struct level lv[FT_FREEZE_LEVELS];
} fz;

static pid_t my_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the read-only page ------------------------------------------------- */

void ft_freeze_protect(void)
{
    if (mprotect(&ft_hot, sizeof ft_hot, PROT_READ) == 0)
        fz.ro = 1;
}

/* open the page for writing; 0 if it cannot be (then nothing is written) */
static int hot_open(void)
{
    return !fz.ro || mprotect(&ft_hot, sizeof ft_hot, PROT_READ | PROT_WRITE) == 0;
}

static void hot_close(void)
{
    if (fz.ro && mprotect(&ft_hot, sizeof ft_hot, PROT_READ) != 0)
        fz.ro = 0; /* stays writable: keep writing it directly */
}

/* ---- the lock ------------------------------------------------------------ */

/* 1: taken; 0: this thread holds it already (a signal interrupted its own
 * transition: do nothing) */
static int fz_lock(uint32_t me)
{
    for (;;) {
        uint32_t exp = 0;
        if (__atomic_compare_exchange_n(&fz.lock, &exp, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return 1;
        if (exp == me)
            return 0;
        sched_yield();
    }
}

static void fz_unlock(void)
{
    __atomic_store_n(&fz.lock, 0, __ATOMIC_RELEASE);
}

/* ---- writers ------------------------------------------------------------- */

static int frozen_for(uint32_t me)
{
    if (!(FT_LOAD(ft_hot.mode) & FT_MODE_OFF))
        return 0;
    for (unsigned i = 0; i < FT_FREEZE_LEVELS; i++)
        if (FT_LOAD(ft_hot.level_tid[i]) == me)
            return 0; /* a thread in a handler may use the runtime */
    return 1;
}

static void wait_thaw(void)
{
    for (;;) {
        uint32_t seq = __atomic_load_n(&ft_hot.freeze_seq, __ATOMIC_ACQUIRE);
        if (!(__atomic_load_n(&ft_hot.mode, __ATOMIC_ACQUIRE) & FT_MODE_OFF))
            return;
        syscall(SYS_futex, &ft_hot.freeze_seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
    }
}

void ft_writer_enter(void)
{
    for (;;) {
        __atomic_add_fetch(&ft_busy, 1, __ATOMIC_SEQ_CST);
        if (!(__atomic_load_n(&ft_hot.mode, __ATOMIC_SEQ_CST) & FT_MODE_OFF) || !frozen_for((uint32_t)my_tid()))
            break;
        __atomic_sub_fetch(&ft_busy, 1, __ATOMIC_SEQ_CST);
        wait_thaw();
    }
    busy_mine++;
}

int ft_writer_try(void)
{
    __atomic_add_fetch(&ft_busy, 1, __ATOMIC_SEQ_CST);
    if ((__atomic_load_n(&ft_hot.mode, __ATOMIC_SEQ_CST) & FT_MODE_OFF) && frozen_for((uint32_t)my_tid())) {
        __atomic_sub_fetch(&ft_busy, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    busy_mine++;
    return 1;
}

void ft_writer_leave(void)
{
    busy_mine--;
    __atomic_sub_fetch(&ft_busy, 1, __ATOMIC_SEQ_CST);
}

/* the episode's start: wait until every other runtime thread is parked and,
 * when tracing is frozen (writers), no other thread is inside a writer; 0
 * on timeout */
static int wait_writers(int writers)
{
    int mine = busy_mine;
    uint64_t t0 = 0;
    while (__atomic_load_n(&ft_rt_awake, __ATOMIC_SEQ_CST) > awake_mine ||
           (writers && __atomic_load_n(&ft_busy, __ATOMIC_SEQ_CST) > mine)) {
        struct timespec ts = {0, 20000};
        uint64_t now = mono_ns();
        if (!t0)
            t0 = now;
        else if (now - t0 > WAIT_WORKERS_NS)
            return 0;
        nanosleep(&ts, NULL);
    }
    return 1;
}

/* ---- episodes ------------------------------------------------------------ */

static struct ft_fault *episode(uint64_t seq)
{
    return &funtrace_root.faults[(seq - 1) % FT_FAULT_SLOTS];
}

static void fill_fault(struct ft_fault *f, int sig, const siginfo_t *si, const void *ucv, uint32_t me)
{
    const ucontext_t *uc = ucv;
    memset(f, 0, sizeof *f);
    f->signo = sig;
    f->tid = me;
    if (si) {
        f->si_code = si->si_code;
        f->si_errno = si->si_errno;
        if (si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL))
            f->addr = (uint64_t)(uintptr_t)si->si_addr;
        if (si->si_code <= 0)
            f->sender_pid = (uint32_t)si->si_pid;
    }
    if (uc)
        f->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    f->tsc = ft_rdtsc();
    f->state = FT_FAULT_ACTIVE;
}

int ft_freeze_enter(int sig, const siginfo_t *si, const void *uc, const struct ft_freeze_how *how, int *first)
{
    struct ft_root *r = &funtrace_root;
    uint32_t me = (uint32_t)my_tid();
    int lv = -1, started = 0, wait = 0;
    *first = 0;
    if (!fz_lock(me))
        return -1;
    for (unsigned i = 0; i < FT_FREEZE_LEVELS; i++)
        if (!fz.lv[i].tid) {
            lv = (int)i;
            break;
        }
    if (lv < 0) {
        fz_unlock();
        return -1;
    }
    if (!fz.nlevels) { /* a new episode */
        uint64_t seq = r->faults_total + 1;
        struct ft_fault *f = episode(seq);
        fill_fault(f, sig, si, uc, me);
        f->seq = seq;
        if (how->dflt)
            f->flags |= FT_FAULTF_DEFAULT;
        FT_STORE(r->faults_total, seq);
        fz.froze = fz.parked = 0;
        started = 1;
        if (hot_open()) {
            __atomic_store_n(&ft_hot.park, 1, __ATOMIC_SEQ_CST); /* the runtime's threads park */
            fz.parked = 1;
            if (how->freeze) {
                fz.base_mode = (uint8_t)(ft_hot.mode & ~FT_MODE_OFF);
                ft_hot.level_tid[lv] = me;
                FT_STORE(ft_hot.freeze_tid, me);
                __atomic_store_n(&ft_hot.mode, (uint8_t)(fz.base_mode | FT_MODE_OFF), __ATOMIC_SEQ_CST);
                fz.froze = 1;
                f->flags |= FT_FAULTF_FROZEN;
            }
            hot_close();
            wait = 1;
        }
    } else {
        struct ft_fault *f = episode(r->faults_total);
        f->nested++;
        f->nested_signo = sig;
        f->nested_tid = me;
        if (fz.froze && hot_open()) {
            ft_hot.level_tid[lv] = me;
            hot_close();
        }
    }
    fz.lv[lv].tid = me;
    fz.lv[lv].order = ++fz.order;
    fz.lv[lv].frame = how->frame;
    fz.lv[lv].alt_lo = how->alt_lo;
    fz.lv[lv].alt_hi = how->alt_hi;
    fz.nlevels++;
    fz_unlock();
    if (wait) {
        struct ft_fault *f = episode(r->faults_total);
        if (!wait_writers(fz.froze))
            f->flags |= FT_FAULTF_PARTIAL;
        if (fz.froze)
            f->tsc = ft_rdtsc(); /* tracing stopped: no ring has a later event (but one in flight per thread) */
    }
    *first = started;
    return lv;
}

/* close level lv and the levels of the same thread nested in it; under lock */
static void close_levels(int lv, uint32_t state)
{
    struct ft_root *r = &funtrace_root;
    uint32_t tid = fz.lv[lv].tid;
    uint64_t order = fz.lv[lv].order;
    int hot = 0;
    for (unsigned i = 0; i < FT_FREEZE_LEVELS; i++) {
        if (fz.lv[i].tid != tid || fz.lv[i].order < order)
            continue;
        memset(&fz.lv[i], 0, sizeof fz.lv[i]);
        fz.nlevels--;
        if (fz.froze && FT_LOAD(ft_hot.level_tid[i])) {
            if (!hot)
                hot = hot_open();
            if (hot)
                ft_hot.level_tid[i] = 0;
        }
    }
    if (!fz.nlevels) {
        struct ft_fault *f = episode(r->faults_total);
        f->end_tsc = ft_rdtsc();
        FT_STORE(f->state, state);
        if (fz.froze || fz.parked) {
            if (!hot)
                hot = hot_open();
            if (hot) {
                ft_hot.freeze_seq++;
                if (fz.froze) {
                    FT_STORE(ft_hot.freeze_tid, 0);
                    __atomic_store_n(&ft_hot.mode, fz.base_mode, __ATOMIC_SEQ_CST);
                }
                __atomic_store_n(&ft_hot.park, 0, __ATOMIC_SEQ_CST);
            }
            fz.froze = fz.parked = 0;
        }
    }
    if (hot) {
        hot_close();
        if (!(ft_hot.mode & FT_MODE_OFF) && !ft_hot.park)
            syscall(SYS_futex, &ft_hot.freeze_seq, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
    }
}

void ft_freeze_leave(int lv, uint32_t state)
{
    uint32_t me = (uint32_t)my_tid();
    if (lv < 0 || lv >= (int)FT_FREEZE_LEVELS || !fz_lock(me))
        return;
    if (fz.lv[lv].tid == me)
        close_levels(lv, state);
    fz_unlock();
}

/* is sp inside level L's handler (on the handler's side of its frame)? */
static int inside(const struct level *L, uintptr_t sp)
{
    if (sp >= L->frame)
        return 0;
    if (L->alt_hi)
        return sp >= L->alt_lo && sp < L->alt_hi;
    return 1;
}

void ft_freeze_unwinding(uintptr_t target_sp, uint32_t state)
{
    uint32_t me;
    if (!FT_LOAD(fz.nlevels))
        return;
    me = (uint32_t)my_tid();
    if (!fz_lock(me))
        return;
    /* the outermost level of this thread that the jump leaves */
    int out = -1;
    for (unsigned i = 0; i < FT_FREEZE_LEVELS; i++)
        if (fz.lv[i].tid == me && !inside(&fz.lv[i], target_sp) &&
            (out < 0 || fz.lv[i].order < fz.lv[out].order))
            out = (int)i;
    if (out >= 0)
        close_levels(out, state);
    fz_unlock();
}

int ft_freeze_active(void)
{
    return FT_LOAD(fz.nlevels) != 0;
}

/* a fork child starts thawed, with no levels (its handlers are the parent's) */
void ft_freeze_after_fork_child(void)
{
    if (fz.froze || (ft_hot.mode & FT_MODE_OFF) || ft_hot.park) {
        if (hot_open()) {
            memset(ft_hot.level_tid, 0, sizeof ft_hot.level_tid);
            ft_hot.freeze_tid = 0;
            if (fz.froze || (ft_hot.mode & FT_MODE_OFF))
                ft_hot.mode = fz.base_mode;
            ft_hot.park = 0;
            hot_close();
        }
    }
    memset(fz.lv, 0, sizeof fz.lv);
    /* the parent's episodes are not the child's */
    memset(funtrace_root.faults, 0, sizeof funtrace_root.faults);
    funtrace_root.faults_total = 0;
    fz.nlevels = 0;
    fz.froze = fz.parked = 0;
    fz.lock = 0;
    ft_busy = busy_mine;
    ft_rt_awake = awake_mine; /* the parent's runtime threads are not the child's */
}
