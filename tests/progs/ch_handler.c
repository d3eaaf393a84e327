/* ch_handler: programs with their own fatal-signal handlers, doing what real
 * servers do in them.  ch_handler MODE:
 *   report         SIGSEGV handler (sigaction, SA_SIGINFO) that prints a
 *                  report, walks the stack (backtrace), calls many traced
 *                  functions, then re-raises (signal(SIG_DFL) + raise)
 *   report-signal  the same handler installed with signal()
 *   report-early   the same handler installed from .preinit_array, before
 *                  the runtime initialises
 *   second         the report, then a second fault inside the handler
 *                  (at address 0x99)
 *   memtest        a redis-like memory test in the handler: every private
 *                  writable mapping of /proc/self/maps (but the stacks in
 *                  use) is saved, overwritten with patterns and checked
 *                  chunk by chunk while traced functions are called, then
 *                  restored; prints "memtest: N mismatches"; re-raises.
 *                  A thread spins in traced functions meanwhile, another
 *                  sleeps in read().  With MEMTEST_HOLD_MS=N the chunk
 *                  holding the runtime's housekeeper's stack pointer (the
 *                  thread named "funtrace", blocked in a system call) keeps
 *                  each pattern N ms before it is checked: the housekeeper
 *                  wakes meanwhile (FUNTRACE_GEN_MS below N) and must not
 *                  run on that stack.
 *   mprotect       a guard page: the handler makes it writable and returns;
 *                  the program goes on, then aborts (no SIGABRT handler)
 *   longjmp        the handler siglongjmps back to main; the program goes
 *                  on, then aborts
 *   thread         the fault happens on thread "crasher" while the main
 *                  thread keeps calling traced functions; report, re-raise
 *   abort          a SIGABRT handler that reports and returns; abort()
 *                  then kills the process
 *   join           like redis: the handler cancels and joins a worker thread
 *                  (traced, blocked in read()) before its report; the
 *                  worker's exit must not wait for the runtime
 *   inner-longjmp  the report handler first setjmps and longjmps within
 *                  itself (the jump does not leave the handler), then
 *                  reports and re-raises
 *   query          the program's view of its dispositions: what sigaction()
 *                  and signal() report back is what it installed; prints
 *                  "dispositions ok" (or what differs) and exits 0
 *   ran-on         thread "runner" blocks in wait_for_go (a read); once it
 *                  is asleep there the main thread faults; the handler
 *                  wakes the runner, which returns (untraced: frozen) and
 *                  parks in after_the_fault, waits for that, then reports
 *                  and re-raises
 *   fork           the handler forks; the child calls traced functions,
 *                  writes a snapshot to ./funtrace.raw and exits; the
 *                  parent waits for it and re-raises
 * The faulting functions are w_crash (address 0x28) and w_probe (the guard
 * page); stdout gets "ready" lines as documented per mode. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "rt_common.h"

volatile int sink;

NI int h_step(int x) { return x * 3 + 1; }
NI int h_format(int x) { return h_step(x) ^ h_step(x + 1); }
NI void after_recovery(void) { sink++; }
NI void w_before(void) { sink++; }
NI void w_crash(void)
{
    volatile int *p = (volatile int *)0x28;
    sink += 5;
    *p = 1; /* fault */
}
NI void w_outer(void) { w_before(); w_crash(); sink++; }
NI void w_probe(volatile char *p) { p[0] = 1; }
NI void h_second(void) { volatile int *p = (volatile int *)0x99; *p = 2; }

/* ---- the report handler -------------------------------------------------- */

static int mode_second;

static void report(int sig, siginfo_t *si, void *uc)
{
    void *bt[64];
    int n, s = 0;
    (void)uc;
    fprintf(stderr, "*** crash report: signal %d at %p ***\n", sig, si ? si->si_addr : NULL);
    n = backtrace(bt, 64);
    backtrace_symbols_fd(bt, n, 2);
    for (int i = 0; i < 1000; i++)
        s += h_format(i);
    fprintf(stderr, "report done (%d)\n", s & 1);
    if (mode_second)
        h_second();
    signal(sig, SIG_DFL);
    raise(sig);
}

static pthread_t joinee;
static void report_after_join(int sig, siginfo_t *si, void *uc)
{
    pthread_cancel(joinee);
    pthread_join(joinee, NULL);
    fprintf(stderr, "worker joined\n");
    report(sig, si, uc);
}

static jmp_buf inner_jb;
NI void h_jump(void) { longjmp(inner_jb, 1); }

static void report_inner_jump(int sig, siginfo_t *si, void *uc)
{
    if (setjmp(inner_jb) == 0)
        h_jump();
    for (int i = 0; i < 100; i++)
        sink += h_format(i); /* still in the handler: not traced */
    report(sig, si, uc);
}

static void install_report(int use_signal)
{
    if (use_signal) {
        signal(SIGSEGV, (void (*)(int))(void *)report); /* the handler ignores its extra arguments */
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = report;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
}

static int early_mode;
static void early_install(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc > 1 && !strcmp(argv[1], "report-early")) {
        early_mode = 1;
        install_report(0);
    }
}
__attribute__((section(".preinit_array"), used)) static void (*preinit)(int, char **, char **) = early_install;

/* ---- threads ----------------------------------------------------------- */

/* no memory writes (the memory test would see them), but not a const
 * function the compiler could drop */
NI int spin_step(int x) { __asm__ volatile("" : "+r"(x)); return x + 1; }
/* the spinner's frame (the memtest leaves its stack alone: it is written on
 * every call, by the call instruction itself).  volatile: the spinner never
 * returns and spin_step reads no memory, so gcc drops a plain store to it
 * as dead, and the memtest then overwrote the live stack */
static volatile uintptr_t spin_sp;
static volatile int spinning;

static void *spinner(void *arg)
{
    int x = 0;
    (void)arg;
    spin_sp = (uintptr_t)__builtin_frame_address(0);
    spinning = 1;
    for (;;)
        x = spin_step(x);
    return NULL;
}

static int sleep_pipe[2];
static void *sleeper(void *arg)
{
    char c;
    (void)arg;
    if (read(sleep_pipe[0], &c, 1) < 0)
        perror("read");
    return NULL;
}

/* ---- the memory test ----------------------------------------------------- */

#define CHUNK 65536
#define MAXREG 512

static uintptr_t hex(const char **s)
{
    uintptr_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        if (c >= '0' && c <= '9') v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else return v;
    }
}

/* the stack pointer of the runtime's housekeeper, blocked in a system call
 * (/proc/self/task/TID/syscall: "nr args... sp pc"); 0 if not found */
static uintptr_t housekeeper_sp(void)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *de;
    uintptr_t sp = 0;
    while (dir && !sp && (de = readdir(dir))) {
        char path[64], buf[256];
        FILE *f;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        int is_hk = fgets(buf, sizeof buf, f) && !strcmp(buf, "funtrace\n");
        fclose(f);
        snprintf(path, sizeof path, "/proc/self/task/%s/syscall", de->d_name);
        if (!is_hk || !(f = fopen(path, "r")))
            continue;
        if (fgets(buf, sizeof buf, f)) {
            char *last = strrchr(buf, ' '); /* " pc": sp is the word before it */
            if (last) {
                *last = 0;
                char *w = strrchr(buf, ' ');
                if (w)
                    sp = (uintptr_t)strtoull(w + 1, NULL, 16);
            }
        }
        fclose(f);
    }
    if (dir)
        closedir(dir);
    return sp;
}

/* sleep ms milliseconds without libc (its GOT may be overwritten) */
static void raw_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    long rc;
    __asm__ volatile("syscall" : "=a"(rc) : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L) : "rcx", "r11", "memory");
    (void)rc;
}

/* no library calls (their GOT, data and TLS may be overwritten meanwhile):
 * plain loops the compiler must not turn into memcpy/memset */
static __attribute__((optimize("no-tree-loop-distribute-patterns"))) void copy_words(volatile uint64_t *d,
                                                                                   volatile uint64_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
}

static void memtest_handler(int sig, siginfo_t *si, void *uc)
{
    static char maps[1 << 16]; /* read before the test starts */
    uintptr_t lo[MAXREG], hi[MAXREG];
    int nreg = 0, fd;
    size_t len = 0;
    ssize_t k;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t skip_lo = spin_sp - 65536, skip_hi = spin_sp + 256;
    (void)si;
    (void)uc;
    if (!spin_sp) {
        fprintf(stderr, "memtest: the spinner's stack is unknown\n");
        abort();
    }
    fd = open("/proc/self/maps", O_RDONLY);
    while (fd >= 0 && (k = read(fd, maps + len, sizeof maps - 1 - len)) > 0)
        len += (size_t)k;
    close(fd);
    maps[len] = 0;
    const char *hold_s = getenv("MEMTEST_HOLD_MS");
    long hold_ms = hold_s ? atol(hold_s) : 0;
    uintptr_t hk_sp = 0;
    for (int i = 0; hold_ms && !hk_sp && i < 500; i++) /* (it may be between two system calls) */
        if (!(hk_sp = housekeeper_sp()))
            usleep(1000);
    if (hold_ms && !hk_sp) {
        fprintf(stderr, "memtest: MEMTEST_HOLD_MS is set, but no housekeeper thread was found blocked (0.5 s)\n");
        abort();
    }
    uint64_t *save = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (const char *p = maps; *p && nreg < MAXREG;) {
        uintptr_t a = hex(&p);
        p++;
        uintptr_t b = hex(&p);
        p++;
        int rw = p[0] == 'r' && p[1] == 'w' && p[3] == 'p';
        const char *eol = strchr(p, '\n');
        const char *br = strchr(p, '[');
        int special = br && br < eol && strncmp(br, "[heap]", 6) != 0; /* [stack] [vvar] [vdso] [vsyscall] */
        if (rw && !special && !(here >= a && here < b) && (uintptr_t)save != a) {
            lo[nreg] = a;
            hi[nreg] = b;
            nreg++;
        }
        p = eol ? eol + 1 : p + strlen(p);
    }
    /* the test (no library calls from here on) */
    uint64_t mismatches = 0, first_bad = 0, bytes = 0;
    struct { uintptr_t at; uint64_t got, want; int pat; } bad[16]; /* the first ones, for the report */
    int nbad = 0;
    int s = 0, held = 0;
    for (int r = 0; r < nreg; r++) {
        for (uintptr_t c = lo[r]; c < hi[r]; c += CHUNK) {
            size_t n = (hi[r] - c < CHUNK ? hi[r] - c : CHUNK) / 8;
            volatile uint64_t *m = (volatile uint64_t *)c;
            if (c < skip_hi && c + n * 8 > skip_lo)
                continue; /* the spinner's stack */
            copy_words(save, m, n);
            for (int pat = 0; pat < 4; pat++) {
                for (size_t i = 0; i < n; i++)
                    m[i] = pat == 0 ? 0 : pat == 1 ? ~0ull : pat == 2 ? 0xaaaa5555aaaa5555ull : (uint64_t)(c + 8 * i);
                for (int j = 0; j < 20; j++) /* traced calls while the memory is overwritten */
                    s += h_format(j);
                if (hk_sp >= c && hk_sp < c + n * 8) { /* the housekeeper's stack: it wakes meanwhile */
                    raw_sleep_ms(hold_ms);
                    held++;
                }
                for (size_t i = 0; i < n; i++) {
                    uint64_t want = pat == 0 ? 0 : pat == 1 ? ~0ull : pat == 2 ? 0xaaaa5555aaaa5555ull : (uint64_t)(c + 8 * i);
                    uint64_t got = m[i];
                    if (got != want) {
                        if (!mismatches)
                            first_bad = c + 8 * i;
                        if (nbad < 16) {
                            bad[nbad].at = c + 8 * i;
                            bad[nbad].got = got;
                            bad[nbad].want = want;
                            bad[nbad].pat = pat;
                            nbad++;
                        }
                        mismatches++;
                    }
                }
            }
            copy_words(m, save, n);
            bytes += n * 8;
        }
    }
    /* everything is back: library calls are fine again */
    fprintf(stderr, "memtest: %llu mismatches (first at %#llx) in %llu bytes of %d regions (%d); held %d ms %d times\n",
            (unsigned long long)mismatches, (unsigned long long)first_bad, (unsigned long long)bytes, nreg, s & 1,
            (int)hold_ms, held);
    if (nbad)
        fprintf(stderr, "memtest: spinner's stack %#llx..%#llx left alone; maps:\n%s", (unsigned long long)skip_lo,
                (unsigned long long)skip_hi, maps);
    for (int i = 0; i < nbad; i++) { /* what changed, and in which mapping */
        const char *line = maps, *p = maps;
        while (*p) {
            const char *q = p;
            uintptr_t a = hex(&q), b = (q++, hex(&q));
            const char *eol = strchr(p, '\n');
            if (bad[i].at >= a && bad[i].at < b) {
                line = p;
                break;
            }
            p = eol ? eol + 1 : p + strlen(p);
        }
        const char *eol = strchr(line, '\n');
        fprintf(stderr, "memtest: bad %#llx (pattern %d) got %#llx want %#llx in %.*s\n", (unsigned long long)bad[i].at,
                bad[i].pat, (unsigned long long)bad[i].got, (unsigned long long)bad[i].want,
                (int)(eol ? eol - line : (long)strlen(line)), line);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- recovery ------------------------------------------------------------ */

static char *guard;
static sigjmp_buf jb;

static void fix_guard(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    sink += h_format(1); /* traced only with FUNTRACE_CRASH_HANDLERS=trace */
    if ((char *)si->si_addr >= guard && (char *)si->si_addr < guard + 4096)
        mprotect(guard, 4096, PROT_READ | PROT_WRITE);
}

static void jump_back(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    sink += h_format(2);
    siglongjmp(jb, 1);
}

static void fork_handler(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    pid_t p = fork();
    if (p == 0) {
        after_recovery();
        funtrace_pause_and_write_current_snapshot();
        _exit(0);
    }
    if (p > 0)
        waitpid(p, NULL, 0);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void h_other(int sig) { (void)sig; }

static int query(void)
{
    struct sigaction sa, old;
    int bad = 0;
    memset(&sa, 0, sizeof sa);
    sigaction(SIGBUS, NULL, &old); /* nothing installed: the default */
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        bad |= 1;
    sa.sa_sigaction = report;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaddset(&sa.sa_mask, SIGUSR1);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGBUS, NULL, &old);
    if (old.sa_sigaction != report || !(old.sa_flags & SA_NODEFER) || !sigismember(&old.sa_mask, SIGUSR1))
        bad |= 2;
    if (signal(SIGBUS, h_other) != (void (*)(int))(void *)report) /* signal() returns the previous one */
        bad |= 4;
    if (signal(SIGBUS, SIG_DFL) != h_other)
        bad |= 8;
    sigaction(SIGBUS, NULL, &old);
    if (old.sa_handler != SIG_DFL)
        bad |= 16;
    if (signal(SIGUSR2, h_other) == SIG_ERR || signal(SIGUSR2, SIG_DFL) != h_other) /* other signals: libc's */
        bad |= 32;
    if (bad)
        printf("dispositions differ: %#x\n", bad);
    else
        printf("dispositions ok\n");
    return bad ? 1 : 0;
}

static void abort_report(int sig)
{
    fprintf(stderr, "*** abort report: signal %d ***\n", sig);
    for (int i = 0; i < 100; i++)
        sink += h_format(i);
}

/* ---- ran-on: a thread that runs on while the handler runs -------------------- */

static int go_pipe[2];
static volatile int runner_tid, runner_reading, runner_parked;
NI void wait_for_go(void)
{
    char c;
    runner_reading = 1;
    if (read(go_pipe[0], &c, 1) < 0)
        perror("read");
}
NI void after_the_fault(void)
{
    runner_parked = 1;
    for (;;)
        pause();
}
static void *runner(void *arg)
{
    (void)arg;
    runner_tid = (int)syscall(SYS_gettid);
    wait_for_go();
    after_the_fault();
    return NULL;
}

/* the thread is asleep (state S in /proc: blocked in its read) */
static int thread_sleeps(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    int fd = open(path, O_RDONLY), n;
    if (fd < 0)
        return 0;
    n = (int)read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

static void report_after_runner(int sig, siginfo_t *si, void *uc)
{
    if (write(go_pipe[1], "g", 1) != 1)
        perror("write");
    while (!runner_parked)
        ;
    report(sig, si, uc);
}

/* ---- the crashing thread --------------------------------------------------- */

static volatile int crasher_go;
static void *crasher(void *arg)
{
    (void)arg;
    while (!crasher_go)
        ;
    w_outer();
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "report";
    struct sigaction sa;
    pthread_t t1, t2;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO;
    w_before();
    if (!strcmp(mode, "report") || !strcmp(mode, "second") || !strcmp(mode, "report-signal")) {
        mode_second = !strcmp(mode, "second");
        install_report(!strcmp(mode, "report-signal"));
    } else if (!strcmp(mode, "report-early")) {
        if (!early_mode)
            return 3;
    } else if (!strcmp(mode, "memtest")) {
        sa.sa_sigaction = memtest_handler;
        sigaction(SIGSEGV, &sa, NULL);
        if (pipe(sleep_pipe) || pthread_create(&t1, NULL, spinner, NULL) || pthread_create(&t2, NULL, sleeper, NULL))
            return 3;
        pthread_setname_np(t1, "spinner");
        pthread_setname_np(t2, "sleeper");
        while (!spinning)
            ;
        usleep(50000); /* the spinner fills its ring a bit */
    } else if (!strcmp(mode, "mprotect")) {
        guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        sa.sa_sigaction = fix_guard;
        sigaction(SIGSEGV, &sa, NULL);
        w_probe(guard);
        after_recovery();
        printf("recovered %d\n", guard[0]);
        fflush(stdout);
        abort();
    } else if (!strcmp(mode, "longjmp")) {
        sa.sa_sigaction = jump_back;
        sigaction(SIGSEGV, &sa, NULL);
        if (sigsetjmp(jb, 1) == 0)
            w_probe((volatile char *)0x30);
        after_recovery();
        printf("jumped back\n");
        fflush(stdout);
        abort();
    } else if (!strcmp(mode, "thread")) {
        install_report(0);
        if (pthread_create(&t1, NULL, crasher, NULL))
            return 3;
        pthread_setname_np(t1, "crasher");
        for (int i = 0;; i++) {
            sink += spin_step(i);
            if (i == 100000)
                crasher_go = 1;
        }
    } else if (!strcmp(mode, "join")) {
        if (pipe(sleep_pipe) || pthread_create(&joinee, NULL, sleeper, NULL))
            return 3;
        pthread_setname_np(joinee, "joinee");
        usleep(20000);
        sa.sa_sigaction = report_after_join;
        sigaction(SIGSEGV, &sa, NULL);
    } else if (!strcmp(mode, "inner-longjmp")) {
        sa.sa_sigaction = report_inner_jump;
        sigaction(SIGSEGV, &sa, NULL);
    } else if (!strcmp(mode, "query")) {
        return query();
    } else if (!strcmp(mode, "fork")) {
        sa.sa_sigaction = fork_handler;
        sigaction(SIGSEGV, &sa, NULL);
    } else if (!strcmp(mode, "ran-on")) {
        sa.sa_sigaction = report_after_runner;
        sigaction(SIGSEGV, &sa, NULL);
        if (pipe(go_pipe) || pthread_create(&t1, NULL, runner, NULL))
            return 3;
        pthread_setname_np(t1, "runner");
        while (!runner_reading || !thread_sleeps(runner_tid))
            usleep(1000);
    } else if (!strcmp(mode, "abort")) {
        signal(SIGABRT, abort_report);
        abort();
    } else {
        return 2;
    }
    w_outer();
    return 0;
}
