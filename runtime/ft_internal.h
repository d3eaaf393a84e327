/*
 * ft_internal.h -- declarations shared by the runtime's source files.
 * Nothing here is part of the ABI (that is funtrace_abi.h).
 */
#ifndef FT_INTERNAL_H
#define FT_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include "funtrace_abi.h"

#define FT_HIDDEN __attribute__((visibility("hidden")))
#define FT_EXPORT __attribute__((visibility("default")))

/* defaults (documented in FORMAT.md 1.8) */
#define FT_DEFAULT_BUF (1ULL << 20)          /* 1 MiB per thread */
#define FT_MIN_BUF 32ULL                    /* the original's smallest ring (2^5) */
#define FT_MAX_BUF (1ULL << 30)
#define FT_DEFAULT_GEN_MS 100
#define FT_DEFAULT_BUDGET (256ULL << 20)      /* 256 MiB of rings in all */
#define FT_DEFAULT_SAMPLE_K 64              /* 16.25 B per call+return */
#define FT_DEFAULT_MAX_THREADS 4096
#define FT_MAX_MODULES 1024
#define FT_ALTSTACK_SIZE (192 * 1024)
#define FT_MAPS_PREALLOC (256 * 1024)       /* MAPPINGS buffer of the snapshot writers */
#define FT_STR_(x) #x
#define FT_STR(x) FT_STR_(x)

extern struct ft_root funtrace_root;

/* per-thread hot-path pointers (TLS; the hooks read them local-exec). The
 * hooks test ft_hook_mode first: FT_MODE_SAMPLED falls through (no taken
 * branch) and uses ft_self_s; FT_MODE_EXACT is dispatched out of line (one
 * taken branch: nothing next to its rdtsc) and uses ft_self; FT_MODE_OFF
 * set (tracing frozen process-wide) returns at once, touching nothing else
 * (not even TLS).
 * The pointer of the other mode stays at ft_thread_dummy_init.  Before the
 * runtime is initialised the mode is FT_MODE_EXACT: the first event goes
 * through the exact path's cold path, which initialises the runtime. */
extern __thread struct ft_thread *ft_self __attribute__((tls_model("initial-exec")));
extern __thread struct ft_thread *ft_self_s __attribute__((tls_model("initial-exec")));
extern struct ft_thread ft_thread_dummy_init FT_HIDDEN; /* mask 0: "create my record" */
extern struct ft_thread ft_thread_dummy_dead FT_HIDDEN; /* mask 0: "record nothing" */
/* the hooks' read-mostly settings, written once at start-up, alone in their
 * cache line (a line shared with written data - ft_rt.lock, the root -
 * would cost every hook of every thread a miss after each such write) and
 * alone in their page: the page is made read-only at the end of start-up, so
 * a program's crash handler that rewrites all writable memory (a memory
 * test) never changes what the hooks see; runtime/freeze.c switches it with
 * mprotect (async-signal-safe) to freeze and thaw tracing. */
#define FT_FREEZE_LEVELS 16 /* fatal-signal handlers running at once (freeze.c) */
#define FT_MODE_EXACT 0   /* FUNTRACE_TIME=exact (the default) */
#define FT_MODE_SAMPLED 1 /* FUNTRACE_TIME=sampled */
#define FT_MODE_OFF 0x80  /* or'ed in: tracing frozen, hooks return at once */
struct ft_hot_settings {
    uint8_t mode;         /* FT_MODE_* (hooks_pg.S; ft_hook_offsets.h) */
    uint8_t pad0[7];
    uint64_t sample_k;    /* a time word every k events (hooks_pg.S; ft_hook_offsets.h) */
    uint64_t reg_base;    /* the registry mapping: a record pointer p is valid for */
    uint64_t reg_span;    /* the hooks iff p - reg_base < reg_span (0 until it exists) */
    uint64_t sample_rets; /* sampled mode: returns from a stamp to the next, (k + 1) / 2 (hooks_pg.S) */
    uint32_t park;        /* != 0 during a fatal-signal episode, frozen or not: the runtime's
                             threads stay parked (park.S; never read by the hooks) */
    uint8_t pad1[20];
    /* the freeze (freeze.c); never read by the hooks */
    uint32_t freeze_seq;  /* futex word: bumped at every thaw */
    uint32_t freeze_tid;  /* thread whose fatal signal froze tracing (0: not frozen) */
    uint32_t level_tid[FT_FREEZE_LEVELS]; /* threads in a fatal-signal handler meanwhile */
    uint8_t pad2[4096 - 72 - 4 * FT_FREEZE_LEVELS];
};
_Static_assert(sizeof(struct ft_hot_settings) == 4096, "one page");
extern struct ft_hot_settings ft_hot FT_HIDDEN;
#define ft_hook_mode (ft_hot.mode)
/* the time mode, whether or not tracing is frozen */
#define ft_sampled_mode ((ft_hot.mode & ~FT_MODE_OFF) == FT_MODE_SAMPLED)
#define ft_sample_k (ft_hot.sample_k)
extern uint32_t ft_xsave_size FT_HIDDEN; /* 0: use fxsave (512 bytes) */

/* runtime state not in the root */
struct ft_rt {
    pthread_mutex_t lock;       /* registry, modules, generations */
    int initialized;
    pthread_key_t exit_key;
    uint64_t pause_depth;       /* > 0: all masks forced to 0 */
    uint64_t ring_bytes;        /* rings of ALIVE + EXITED records */
    pthread_t *pthreads;        /* pthread_t of threads[i] (for setname) */
    char exe_path[FT_MOD_PATH_MAX];
    unsigned long long dl_adds, dl_subs;
    uint64_t init_mono_ns;
    int crash_handlers;         /* FUNTRACE_ON_CRASH active */
    char crash_dir[512];
    char signal_file[512];      /* "" = ./funtrace.raw */
    uint32_t name_refresh_next; /* round-robin index for /proc comm refresh */
};
extern struct ft_rt ft_rt FT_HIDDEN;

/* per-thread: set while this thread holds ft_rt.lock or is inside the
 * runtime's slow path (a signal handler arriving then must not re-enter). */
extern __thread int ft_in_runtime __attribute__((tls_model("initial-exec")));

static inline uint64_t ft_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

#define ft_barrier() __asm__ volatile("" ::: "memory")
#define FT_STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)
#define FT_LOAD(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

static inline struct ft_thread *ft_threads(void)
{
    return (struct ft_thread *)(uintptr_t)funtrace_root.threads;
}
static inline struct ft_module *ft_modules(void)
{
    return (struct ft_module *)(uintptr_t)funtrace_root.modules;
}
static inline struct ft_gen *ft_gens(void)
{
    return (struct ft_gen *)(uintptr_t)funtrace_root.gens;
}

/* root.c */
void ft_init(void) FT_HIDDEN;
int ft_libc_ready(void) FT_HIDDEN;
int ft_lock(void) FT_HIDDEN;                  /* 0: frozen, skipped (root.c) */
void ft_lock_wait(void) FT_HIDDEN;
void ft_unlock(void) FT_HIDDEN;
uint64_t ft_mono_ns(void) FT_HIDDEN;
uint64_t ft_real_ns(void) FT_HIDDEN;
void ft_warn(const char *msg, const char *detail) FT_HIDDEN;
int ft_env_u64(const char *name, uint64_t *out) FT_HIDDEN; /* 0 unset, -1 invalid (warned), 1 set */

/* tsc.c */
void ft_tsc_init(void) FT_HIDDEN;
uint64_t ft_tsc_refine(uint64_t tsc, uint64_t mono_ns) FT_HIDDEN;
void ft_tsc_deferred_calibration(void) FT_HIDDEN; /* housekeeper; no-op unless deferred */
void ft_clock_snapshot(uint64_t *tsc, uint64_t *mono, uint64_t *real) FT_HIDDEN;

/* hooks_cyg.c: events from the runtime's C code (the interposers) */
void ft_log_event(uint64_t word) FT_HIDDEN;
void ft_log_keyed(uint64_t marker, uint64_t key) FT_HIDDEN; /* a marker and its key's digits, one TSC read */
void ft_no_leaf_return(uint64_t addr) FT_HIDDEN; /* frames being left without returns: sampled mode's next return has its address */
/* a marker with a key (FT_CTX_SAVE_ADDR / _RESUME_ADDR: a stack switch, the
 * key an address unique to the suspended context; FT_JMP_SET_ADDR /
 * _LONG_ADDR: a setjmp or longjmp, the key the jmp_buf's stack pointer);
 * ret: the interposer's return address (contexts.c) */
void ft_log_ctx(uint64_t marker, const void *at, void *ret) FT_HIDDEN;

/* tid.c */
void ft_tid_init(void) FT_HIDDEN;             /* on the initialising thread */
uint32_t ft_gettid(void) FT_HIDDEN;           /* this thread's tid; under lock */
int ft_tid_of(pthread_t th, uint32_t *tid) FT_HIDDEN; /* another thread's; 0: unknown */

/* registry.c */
void ft_registry_init(void) FT_HIDDEN;
void ft_slow_event(uint64_t word) FT_HIDDEN;
uint64_t ft_mask_for(const struct ft_thread *t) FT_HIDDEN;
void ft_apply_masks(void) FT_HIDDEN;          /* under lock */
int ft_pause_all(int may_block) FT_HIDDEN;    /* 1: paused, lock held until ft_resume_all */
void ft_resume_all(void) FT_HIDDEN;
void ft_registry_after_fork_child(void) FT_HIDDEN;
void ft_refresh_names(void) FT_HIDDEN;        /* under lock */
void ft_thread_set_name_by_pthread(pthread_t th, const char *name) FT_HIDDEN;

/* ringpool.c (under lock) */
void *ft_ring_alloc(uint64_t size) FT_HIDDEN;        /* zeroed, aligned to 2 * size */
/* zeroed and kept for reuse; dirty: bytes from the start that may be non-zero */
void ft_ring_free(void *ring, uint64_t size, uint64_t dirty) FT_HIDDEN;
uint64_t ft_ring_dirty(const struct ft_thread *t) FT_HIDDEN; /* registry.c */
void ft_ring_prefault(uint64_t size, unsigned n) FT_HIDDEN;
void ft_registry_prefault(void) FT_HIDDEN;           /* registry.c: the next record's page */

/* hooks_cyg.c */
void ft_write_event(struct ft_thread *t, uint64_t word) FT_HIDDEN;

/* modules.c */
void ft_modules_init(void) FT_HIDDEN;
int ft_modules_scan(uint64_t gen_for_new) FT_HIDDEN; /* under lock */
int ft_modules_changed(void) FT_HIDDEN;       /* dlpi_adds/subs moved */
void ft_modules_after_fork_child(void) FT_HIDDEN;

/* xray.c (FUNTRACE_INSTR=xray; no-ops in other programs) */
void ft_xray_scan(void) FT_HIDDEN;            /* after dlopen/dlclose: patch new objects' sleds */
void ft_xray_set(int on) FT_HIDDEN;           /* patch (1) / unpatch (0) every sled */

/* gens.c */
void ft_gens_init(void) FT_HIDDEN;
void ft_new_generation(void) FT_HIDDEN;       /* under lock */
void ft_housekeeper_start(void) FT_HIDDEN;
void ft_housekeeper_stop(void) FT_HIDDEN;
void ft_gens_after_fork_child(void) FT_HIDDEN;
void ft_hk_lock(void) FT_HIDDEN;              /* atfork */
void ft_hk_unlock(void) FT_HIDDEN;

/* freeze.c: tracing frozen while a fatal signal is handled (FORMAT.md 1.9) */
struct ft_freeze_how {
    int freeze;                /* freeze (FUNTRACE_CRASH_HANDLERS=freeze), else only record */
    int dflt;                  /* no handler of the program's (FT_FAULTF_DEFAULT) */
    uintptr_t frame;           /* the signal wrapper's frame */
    uintptr_t alt_lo, alt_hi;  /* the alternate stack it runs on, or 0 */
};
extern int ft_busy FT_HIDDEN;                 /* threads inside runtime writers */
/* the runtime's own threads (housekeeper, PSI) that are awake: not blocked
 * in ft_park_syscall nor parked (park.S).  A runtime thread calls
 * ft_rt_thread_begin first and ft_rt_thread_end last. */
extern int ft_rt_awake FT_HIDDEN;
void ft_rt_thread_begin(void) FT_HIDDEN;
void ft_rt_thread_end(void) FT_HIDDEN;
void ft_freeze_protect(void) FT_HIDDEN;       /* end of start-up: ft_hot read-only */
/* a fatal signal reached a handler: record it (a new episode, or a nested
 * signal of the current one), freeze unless how->freeze is 0.  Returns the
 * level to close with ft_freeze_leave, -1 if none; *first: a new episode */
int ft_freeze_enter(int sig, const siginfo_t *si, const void *uc, const struct ft_freeze_how *how,
                    int *first) FT_HIDDEN;
void ft_freeze_leave(int level, uint32_t state) FT_HIDDEN;   /* the handler returned */
/* this thread is about to continue at stack pointer target_sp (longjmp,
 * exception caught): close the levels of its handlers that it leaves */
void ft_freeze_unwinding(uintptr_t target_sp, uint32_t state) FT_HIDDEN;
int ft_freeze_active(void) FT_HIDDEN;         /* a handler level is open */
void ft_freeze_after_fork_child(void) FT_HIDDEN;
/* writers of registry/modules/generations (ft_lock): count as busy
 * meanwhile; while tracing is frozen by another thread's fatal signal,
 * ft_writer_enter waits for the thaw, ft_writer_try returns 0 */
void ft_writer_enter(void) FT_HIDDEN;
int ft_writer_try(void) FT_HIDDEN;            /* the same without waiting: 0 if frozen */
void ft_writer_leave(void) FT_HIDDEN;
static inline int ft_frozen(void)
{
    return (__atomic_load_n(&ft_hot.mode, __ATOMIC_RELAXED) & FT_MODE_OFF) != 0;
}
/* a fatal-signal episode keeps the runtime's threads parked (frozen or not) */
static inline int ft_rt_parked(void)
{
    return __atomic_load_n(&ft_hot.park, __ATOMIC_RELAXED) != 0;
}
/* park.S: a runtime thread's blocking syscall (nr, up to 6 args), not counted
 * awake while blocked; when it returns during a fatal-signal episode
 * (ft_hot.park), the thread waits for its end without touching its stack or
 * any writable memory */
long ft_park_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6) FT_HIDDEN;

/* signals.c */
void ft_signals_init(void) FT_HIDDEN;
/* interposed sigaction() for signo: 1 if the runtime handles it (*rc is the
 * result; the program's own dispositions of the fatal signals), 0: libc's */
int ft_sig_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *rc) FT_HIDDEN;
int ft_sig_is_ours(int sig) FT_HIDDEN;
/* interpose.c */
void ft_interpose_init(void) FT_HIDDEN;       /* resolves the real functions */
void ft_setjmp_init(void) FT_HIDDEN;          /* setjmps.c: the same for the setjmp family */
void ft_thread_altstack(void) FT_HIDDEN;      /* new thread: alt stack if on-crash */
void ft_thread_altstack_free(void) FT_HIDDEN;

/* snapshot.c */
void ft_snapshot_init(void) FT_HIDDEN;        /* pre-allocates the MAPPINGS buffer */
/* async-signal-safe snapshot to fd (pauses the threads only if the registry
 * lock is free), allocating nothing unless /proc/self/maps does not fit the
 * pre-allocated buffer (or another snapshot is using it); -2: runtime not
 * initialized, -1: write error */
int ft_snapshot_to_fd(int fd, const struct ft_raw_crash *crash, uint64_t min_tsc) FT_HIDDEN;
/* the same with the caller's MAPPINGS buffer (e.g. from ft_snapshot_buf_new) */
int ft_snapshot_to_fd_buf(int fd, const struct ft_raw_crash *crash, uint64_t min_tsc, void *maps_buf,
                          size_t maps_cap) FT_HIDDEN;
/* a populated MAPPINGS buffer of FT_MAPS_PREALLOC bytes (*cap), or NULL */
void *ft_snapshot_buf_new(size_t *cap) FT_HIDDEN;
extern int ft_append_busy FT_HIDDEN; /* a snapshot is being appended to a file */

/* snapshot_sched.c: the SCHEDEVT chunk of the runtime's snapshots */
struct ft_source_info;
struct ft_writer;
struct ft_emit_stats;
struct ft_sched_rt {
    void *mem;       /* thread ids, then events */
    size_t len;
    int prealloc;    /* mem is the start-up buffer */
    uint32_t *tids;
    size_t ntids;
};
void ft_sched_rt_init(void) FT_HIDDEN;             /* FUNTRACE_SCHED*, the start-up buffer */
void ft_sched_rt_after_fork_child(void) FT_HIDDEN;
/* take a buffer and collect the emitted threads' tids through si->on_thread */
void ft_sched_rt_begin(struct ft_sched_rt *s, struct ft_source_info *si) FT_HIDDEN;
/* capture and write SCHEDEVT (events in [min_tsc, to_tsc]), then release; 0 / -1 */
int ft_sched_rt_write(struct ft_sched_rt *s, const struct ft_writer *w, struct ft_emit_stats *st,
                      uint64_t min_tsc, uint64_t to_tsc) FT_HIDDEN;
void ft_sched_rt_release(struct ft_sched_rt *s) FT_HIDDEN;

/* util */
size_t ft_u64_to_dec(char *buf, uint64_t v) FT_HIDDEN;
size_t ft_strlcpy(char *dst, const char *src, size_t cap) FT_HIDDEN;

#endif
