/*
 * signals.c -- FUNTRACE_SIGNAL (a snapshot on a signal, default SIGTRAP) and
 * FUNTRACE_ON_CRASH=DIR (a snapshot on SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT,
 * then the signal takes its normal course so the core is still written).
 * Both handlers only use async-signal-safe calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ft_internal.h"

static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
#define NCRASH (sizeof crash_sigs / sizeof crash_sigs[0])
static struct sigaction old_crash[NCRASH];
static __thread void *altstack __attribute__((tls_model("initial-exec")));

static pid_t tid_now(void)
{
    return (pid_t)syscall(SYS_gettid);
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

static void crash_handler(int sig, siginfo_t *si, void *uc)
{
    char path[sizeof ft_rt.crash_dir + 64];
    struct ft_raw_crash c;
    size_t n;
    int fd;
    unsigned i;
    pid_t tid = tid_now();
    (void)uc;
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
    /* let the signal take its normal course: the previous disposition
     * (default: terminate with a core, or the program's own handler).  A
     * synchronous fault (si_code > 0: raised by the kernel for an instruction
     * of this thread) is not re-raised: returning re-executes the faulting
     * instruction, which faults again, so the kernel's core (and the chained
     * handler) get the real siginfo (si_code, fault address).  A re-raise
     * would be delivered at sigreturn as SI_TKILL "sent by ourselves".
     * SIGABRT and sent signals (si_code <= 0) are re-raised for this thread. */
    for (i = 0; i < NCRASH; i++)
        if (crash_sigs[i] == sig) {
            struct sigaction prev = old_crash[i];
            if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN)
                prev.sa_handler = SIG_DFL;
            sigaction(sig, &prev, NULL);
        }
    if (si && si->si_code > 0 && sig != SIGABRT)
        return;
    syscall(SYS_tgkill, getpid(), tid, sig);
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

static void install_crash_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = crash_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < NCRASH; i++)
        sigaction(crash_sigs[i], &sa, &old_crash[i]);
    ft_rt.crash_handlers = 1;
}

void ft_signals_init(void)
{
    struct ft_root *r = &funtrace_root;
    const char *s = getenv("FUNTRACE_SIGNAL");
    const char *f = getenv("FUNTRACE_SIGNAL_FILE");
    const char *d = getenv("FUNTRACE_ON_CRASH");
    int sig = SIGTRAP;
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
        sigaction(sig, &sa, NULL);
    }
    if (d && *d) {
        if (access(d, W_OK | X_OK) != 0)
            ft_warn("FUNTRACE_ON_CRASH is not a writable directory (crash snapshots will fail)", d);
        ft_strlcpy(ft_rt.crash_dir, d, sizeof ft_rt.crash_dir);
        install_crash_handlers();
        ft_thread_altstack(); /* the initializing (normally the main) thread */
    }
}
