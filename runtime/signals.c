/*
 * signals.c -- the runtime's signal handling:
 *
 *  - FUNTRACE_SIGNAL (default SIGTRAP): a snapshot appended to a file;
 *  - fatal signals (SIGSEGV SIGBUS SIGFPE SIGILL SIGABRT): every handler the
 *    program installs for them, whenever and however it installs it
 *    (sigaction/signal are interposed: interpose.c), is wrapped: the wrapper
 *    records the signal in the root and freezes tracing (freeze.c) before
 *    the program's handler runs, and ends the episode when the handler
 *    returns (or leaves by longjmp/exception: interpose.c);
 *    FUNTRACE_CRASH_HANDLERS=trace records without freezing (the runtime's
 *    own threads still park meanwhile), =off leaves the program's handlers
 *    alone;
 *  - FUNTRACE_ON_CRASH=DIR: the wrapper is installed even without a handler
 *    of the program's, and writes a snapshot before the signal takes its
 *    course.
 *
 * The program sees its own dispositions (sigaction's old action, signal's
 * return value), never the wrapper.  Everything the wrapper does is
 * async-signal-safe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ft_interposing.h"
#include "ft_internal.h"

static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
#define NCRASH (sizeof crash_sigs / sizeof crash_sigs[0])
#define MAX_CRASH_SNAPSHOTS 16

static __thread void *altstack __attribute__((tls_model("initial-exec")));

/* the program's view of the fatal signals' dispositions */
static struct {
    uint32_t lock;               /* tid of the holder */
    int mode;                    /* FT_CH_*, -1: not read yet */
    uint8_t known[NCRASH];       /* prog[i] initialised from the kernel */
    struct sigaction prog[NCRASH];
    void *real;                  /* libc's sigaction (ft_interposing.h) */
    uint32_t snapshots;          /* on-crash snapshots written */
} sg = { .mode = -1 };

enum { FT_CH_FREEZE, FT_CH_TRACE, FT_CH_OFF };

static pid_t tid_now(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static int crash_index(int sig)
{
    for (unsigned i = 0; i < NCRASH; i++)
        if (crash_sigs[i] == sig)
            return (int)i;
    return -1;
}

static int is_handler_fn(const struct sigaction *a)
{
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction != NULL
                                      : a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* libc's sigaction (the interposed one is ours) */
static int real_sigaction(int sig, const struct sigaction *a, struct sigaction *old)
{
    int (*f)(int, const struct sigaction *, struct sigaction *) =
        (int (*)(int, const struct sigaction *, struct sigaction *))FT_REAL(&sg.real, sigaction);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(sig, a, old);
}

static int crash_mode(void)
{
    if (sg.mode < 0 && !ft_libc_ready())
        return FT_CH_FREEZE; /* from .preinit_array: the environment is not readable yet */
    if (sg.mode < 0) {
        const char *s = getenv("FUNTRACE_CRASH_HANDLERS");
        int m = FT_CH_FREEZE;
        if (s && *s) {
            if (!strcmp(s, "trace"))
                m = FT_CH_TRACE;
            else if (!strcmp(s, "off"))
                m = FT_CH_OFF;
            else if (strcmp(s, "freeze"))
                ft_warn("FUNTRACE_CRASH_HANDLERS must be freeze, trace or off; using freeze", s);
        }
        sg.mode = m;
    }
    return sg.mode;
}

static void sg_lock(uint32_t me, int *held)
{
    *held = 0;
    for (;;) {
        uint32_t exp = 0;
        if (__atomic_compare_exchange_n(&sg.lock, &exp, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            *held = 1;
            return;
        }
        if (exp == me)
            return; /* re-entered from a signal handler of this thread */
        sched_yield();
    }
}

static void sg_unlock(int held)
{
    if (held)
        __atomic_store_n(&sg.lock, 0, __ATOMIC_RELEASE);
}

static void fatal_wrapper(int sig, siginfo_t *si, void *uc);

/* what the kernel gets for crash signal i (under sg.lock) */
static void install(unsigned i)
{
    struct sigaction k = sg.prog[i];
    if (is_handler_fn(&sg.prog[i])) {
        k.sa_sigaction = fatal_wrapper;
        k.sa_flags |= SA_SIGINFO; /* the program's mask and other flags as they are */
    } else if (ft_rt.crash_handlers) { /* FUNTRACE_ON_CRASH: the wrapper, on the alternate stack */
        memset(&k, 0, sizeof k);
        k.sa_sigaction = fatal_wrapper;
        k.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&k.sa_mask);
    }
    real_sigaction(crash_sigs[i], &k, NULL);
}

/* prog[i] from the kernel, once (a handler installed before we could see it) */
static void know(unsigned i)
{
    struct sigaction cur;
    if (sg.known[i])
        return;
    memset(&cur, 0, sizeof cur);
    if (real_sigaction(crash_sigs[i], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO && cur.sa_sigaction == fatal_wrapper))
        sg.prog[i] = cur;
    sg.known[i] = 1;
}

/* interpose.c: sigaction() for a signal of ours; 1 = handled (*rc set) */
int ft_sig_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *rc)
{
    int i = crash_index(sig), held;
    if (i < 0 || crash_mode() == FT_CH_OFF)
        return 0;
    sg_lock((uint32_t)tid_now(), &held);
    know((unsigned)i);
    if (old)
        *old = sg.prog[i];
    if (act) {
        sg.prog[i] = *act;
        install((unsigned)i);
    }
    sg_unlock(held);
    *rc = 0;
    return 1;
}

/* the program's disposition, for signal()-style interposers */
int ft_sig_is_ours(int sig)
{
    return crash_index(sig) >= 0 && crash_mode() != FT_CH_OFF;
}

/* the SIGINFO chunk of a snapshot taken on signal sig (on-crash and
 * FUNTRACE_SIGNAL alike), received by thread tid */
static void fill_siginfo(struct ft_raw_crash *c, int sig, const siginfo_t *si, pid_t tid)
{
    memset(c, 0, sizeof *c);
    c->signo = sig;
    c->si_code = si ? si->si_code : 0;
    c->si_errno = si ? si->si_errno : 0;
    c->tid = (uint32_t)tid;
    if (si && si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL))
        c->addr = (uint64_t)(uintptr_t)si->si_addr;
    if (si && si->si_code <= 0) /* sent: kill, tgkill, sigqueue (FORMAT.md, SIGINFO) */
        c->sender_pid = (uint32_t)si->si_pid;
}

static void snapshot_signal_handler(int sig, siginfo_t *si, void *uc)
{
    int fd, saved = errno;
    const char *path = ft_rt.signal_file[0] ? ft_rt.signal_file : "funtrace.raw";
    struct ft_raw_crash c;
    (void)uc;
    fill_siginfo(&c, sig, si, tid_now());
    if (__atomic_exchange_n(&ft_append_busy, 1, __ATOMIC_ACQUIRE))
        goto out; /* a snapshot is being written already */
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        flock(fd, LOCK_EX); /* other processes may append to the same file */
        ft_snapshot_to_fd(fd, &c, 0);
        close(fd);
    } else {
        ft_warn("cannot open the signal snapshot file", path);
    }
    __atomic_store_n(&ft_append_busy, 0, __ATOMIC_RELEASE);
out:
    errno = saved;
}

static void crash_snapshot(int sig, const siginfo_t *si, pid_t tid)
{
    char path[sizeof ft_rt.crash_dir + 64];
    struct ft_raw_crash c;
    size_t n;
    int fd;
    if (__atomic_add_fetch(&sg.snapshots, 1, __ATOMIC_RELAXED) > MAX_CRASH_SNAPSHOTS)
        return;
    fill_siginfo(&c, sig, si, tid);
    n = ft_strlcpy(path, ft_rt.crash_dir, sizeof path);
    n += ft_strlcpy(path + n, "/funtrace-", sizeof path - n);
    n += ft_u64_to_dec(path + n, (uint64_t)getpid());
    path[n++] = '-';
    n += ft_u64_to_dec(path + n, (uint64_t)tid);
    ft_strlcpy(path + n, ".raw", sizeof path - n);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ft_snapshot_to_fd(fd, &c, 0);
        close(fd);
    } else {
        ft_warn("cannot write the crash snapshot", path);
    }
}

/* The default action of sig, with the signal's own siginfo: the disposition
 * becomes SIG_DFL and the signal is queued again with the siginfo it came
 * with (rt_tgsigqueueinfo may use any si_code for the process itself), so
 * that after the wrapper returns it is delivered once more - and the
 * kernel's core records the real fault (si_code, address) or sender, and
 * the interrupted registers.  Fallbacks: a synchronous fault just returns
 * (the instruction runs again and faults again), others are re-raised. */
static void take_default_action(int sig, const siginfo_t *si)
{
    struct sigaction dfl;
    int i = crash_index(sig), held;
    pid_t tid = tid_now();
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sg_lock((uint32_t)tid, &held);
    if (i >= 0)
        sg.prog[i] = dfl;
    real_sigaction(sig, &dfl, NULL);
    sg_unlock(held);
    if (si) {
        siginfo_t q = *si;
        if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, sig, &q) == 0)
            return;
    }
    if (si && si->si_code > 0 && sig != SIGABRT)
        return;
    syscall(SYS_tgkill, getpid(), tid, sig);
}

/* after the handler returned: will a signal kill the process as soon as
 * the interrupted context is restored?  (the handler re-raised the signal
 * with the default action, or raised another fatal one) */
static int dies_on_return(const ucontext_t *uc)
{
    sigset_t pend;
    if (sigpending(&pend) != 0)
        return 0;
    for (int s = 1; s < 32; s++) {
        struct sigaction cur;
        if (!sigismember(&pend, s) || (uc && sigismember(&uc->uc_sigmask, s)))
            continue;
        if (s == SIGCHLD || s == SIGCONT || s == SIGURG || s == SIGWINCH || s == SIGSTOP || s == SIGTSTP ||
            s == SIGTTIN || s == SIGTTOU)
            continue;
        int i = crash_index(s);
        if (i >= 0 && sg.known[i]) /* the program's disposition (the kernel may have our wrapper) */
            cur = sg.prog[i];
        else if (real_sigaction(s, NULL, &cur) != 0)
            continue;
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL)
            return 1;
    }
    return 0;
}

static void fatal_wrapper(int sig, siginfo_t *si, void *uc)
{
    int saved = errno, i = crash_index(sig), lv = -1, first = 0;
    struct sigaction act;
    pid_t tid = tid_now();
    if (i < 0)
        return;
    act = sg.prog[i];
    if (is_handler_fn(&act) && (act.sa_flags & SA_RESETHAND)) { /* the kernel reset it to SIG_DFL */
        int held;
        sg_lock((uint32_t)tid, &held);
        memset(&sg.prog[i], 0, sizeof sg.prog[i]);
        sg.prog[i].sa_handler = SIG_DFL;
        sg_unlock(held);
    }
    int sync = si && si->si_code > 0 && sig != SIGABRT;
    if (!is_handler_fn(&act) && act.sa_handler == SIG_IGN && !sync) {
        errno = saved; /* a sent signal the program ignores */
        return;
    }
    if (ft_rt.initialized && crash_mode() != FT_CH_OFF) {
        struct ft_freeze_how how;
        stack_t ss;
        memset(&how, 0, sizeof how);
        how.freeze = crash_mode() == FT_CH_FREEZE;
        how.dflt = !is_handler_fn(&act);
        how.frame = (uintptr_t)__builtin_frame_address(0);
        if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
            how.alt_lo = (uintptr_t)ss.ss_sp;
            how.alt_hi = (uintptr_t)ss.ss_sp + ss.ss_size;
        }
        lv = ft_freeze_enter(sig, si, uc, &how, &first);
    }
    if (ft_rt.crash_handlers && (first || lv < 0))
        crash_snapshot(sig, si, tid);
    if (!is_handler_fn(&act)) {
        take_default_action(sig, si); /* the process dies at sigreturn: stays frozen */
        errno = saved;
        return;
    }
    /* as the kernel calls it: on x86-64 every handler gets the signal, the
     * siginfo and the context in rdi, rsi, rdx, SA_SIGINFO or not, and
     * programs that install with signal() a handler reading its second
     * argument exist (tests/progs/ch_handler.c's report-signal); called
     * with the signal alone, it read whatever rsi held */
    act.sa_sigaction(sig, si, uc);
    if (lv >= 0 && !dies_on_return(uc))
        ft_freeze_leave(lv, FT_FAULT_RETURNED);
    errno = saved;
}

/* an alternate signal stack for this thread (so a stack overflow can still
 * be reported), unless it has one already */
void ft_thread_altstack(void)
{
    stack_t ss, old;
    void *p;
    if (!ft_rt.crash_handlers || altstack)
        return;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
        return;
    p = mmap(NULL, FT_ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return;
    ss.ss_sp = p;
    ss.ss_size = FT_ALTSTACK_SIZE;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) == 0)
        altstack = p;
    else
        munmap(p, FT_ALTSTACK_SIZE);
}

void ft_thread_altstack_free(void)
{
    stack_t ss, cur;
    if (!altstack)
        return;
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == altstack && !(cur.ss_flags & SS_ONSTACK)) {
        memset(&ss, 0, sizeof ss);
        ss.ss_flags = SS_DISABLE;
        if (sigaltstack(&ss, NULL) == 0) {
            munmap(altstack, FT_ALTSTACK_SIZE);
            altstack = NULL;
        }
    }
}

static int parse_signal(const char *s)
{
    static const struct { const char *name; int sig; } names[] = {
        { "TRAP", SIGTRAP }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
        { "QUIT", SIGQUIT }, { "INT", SIGINT }, { "TERM", SIGTERM }, { "PROF", SIGPROF },
        { "URG", SIGURG }, { "WINCH", SIGWINCH }, { "PWR", SIGPWR }, { "SYS", SIGSYS },
    };
    char *end;
    long v;
    if (!strncmp(s, "SIG", 3))
        s += 3;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name))
            return names[i].sig;
    if (!strncmp(s, "RTMIN+", 6)) {
        v = strtol(s + 6, &end, 10);
        if (!*end && v >= 0 && SIGRTMIN + v <= SIGRTMAX)
            return SIGRTMIN + (int)v;
        return -1;
    }
    v = strtol(s, &end, 10);
    if (*s && !*end && v > 0 && v < NSIG && v != SIGKILL && v != SIGSTOP)
        return (int)v;
    return -1;
}

/* the fatal signals: the wrapper where the program has a handler (installed
 * before we could see it) or FUNTRACE_ON_CRASH wants one */
static void install_crash_wrappers(void)
{
    int held;
    if (crash_mode() == FT_CH_OFF && !ft_rt.crash_handlers)
        return;
    sg_lock((uint32_t)tid_now(), &held);
    for (unsigned i = 0; i < NCRASH; i++) {
        know(i);
        if (crash_mode() != FT_CH_OFF && (is_handler_fn(&sg.prog[i]) || ft_rt.crash_handlers))
            install(i);
        else if (ft_rt.crash_handlers) /* =off: the on-crash snapshot only, as before */
            install(i);
    }
    sg_unlock(held);
}

void ft_signals_init(void)
{
    struct ft_root *r = &funtrace_root;
    const char *s = getenv("FUNTRACE_SIGNAL");
    const char *f = getenv("FUNTRACE_SIGNAL_FILE");
    const char *d = getenv("FUNTRACE_ON_CRASH");
    int sig = SIGTRAP;
    crash_mode(); /* read FUNTRACE_CRASH_HANDLERS now (not in a handler) */
    real_sigaction(0, NULL, NULL); /* resolve libc's functions now, too */
    ft_interpose_init();
    if (s && *s) {
        if (!strcmp(s, "none") || !strcmp(s, "0"))
            sig = 0;
        else if ((sig = parse_signal(s)) < 0) {
            ft_warn("invalid FUNTRACE_SIGNAL (use a name like SIGUSR1, a number or none); using SIGTRAP", s);
            sig = SIGTRAP;
        }
    }
    if (f && *f)
        ft_strlcpy(ft_rt.signal_file, f, sizeof ft_rt.signal_file);
    r->snapshot_signal = sig;
    if (sig) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = snapshot_signal_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        real_sigaction(sig, &sa, NULL);
    }
    if (d && *d) {
        if (access(d, W_OK | X_OK) != 0)
            ft_warn("FUNTRACE_ON_CRASH is not a writable directory (crash snapshots will fail)", d);
        ft_strlcpy(ft_rt.crash_dir, d, sizeof ft_rt.crash_dir);
        ft_rt.crash_handlers = 1;
    }
    install_crash_wrappers();
    if (ft_rt.crash_handlers)
        ft_thread_altstack(); /* the initializing (normally the main) thread */
}
