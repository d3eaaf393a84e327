/*
 * interpose.c -- libc functions the runtime wraps (the real one is found
 * with dlsym(RTLD_NEXT), or under -static is ld --wrap's __real_NAME:
 * ft_interposing.h; the C++ runtime's are in exc_events.c):
 *   pthread_setname_np  keeps the registry's thread names current;
 *   sigaction, signal, bsd_signal, sysv_signal
 *                       for SIGSEGV SIGBUS SIGFPE SIGILL SIGABRT: the
 *                       program's handler is wrapped (signals.c) so that a
 *                       fatal signal is recorded and freezes tracing before
 *                       it runs; the program sees its own dispositions;
 *   longjmp, _longjmp, siglongjmp, __longjmp_chk
 *                       logged with their target (the setjmp side:
 *                       setjmps.c); a jump out of such a handler ends the episode and
 *                       tracing resumes (freeze.c); so does a C++ exception
 *                       thrown in the handler and caught outside it
 *                       (__cxa_begin_catch, exc_events.c);
 * and gprof's start-up hooks, made no-ops: a one-step "compile and link"
 * with -pg makes gcc link gcrt1.o, which would otherwise write gmon.out.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "ft_interposing.h"
#include "ft_internal.h"


typedef int (*setname_fn)(pthread_t, const char *);

#ifndef FT_STATIC_WRAP
void *ft_real_next(void **cache, const char *name)
{
    void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    }
    return p;
}
#endif

FT_EXPORT __attribute__((weak)) int FT_ITP(pthread_setname_np)(pthread_t th, const char *name)
{
    static void *cache;
    setname_fn real = (setname_fn)FT_REAL(&cache, pthread_setname_np);
    int rc;
    if (!real)
        return ENOSYS;
    rc = real(th, name);
    if (rc == 0 && ft_rt.initialized)
        ft_thread_set_name_by_pthread(th, name);
    return rc;
}

/* ---- fatal-signal handlers --------------------------------------------- */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*sighandler_fn)(int);
typedef sighandler_fn (*signal_fn)(int, sighandler_fn);
typedef void (*jmp_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));

static void *real_sigaction, *real_longjmp, *real__longjmp, *real_siglongjmp, *real_longjmp_chk;

FT_EXPORT __attribute__((weak)) int FT_ITP(sigaction)(int sig, const struct sigaction *act, struct sigaction *old)
{
    int rc;
    if (ft_sig_sigaction(sig, act, old, &rc))
        return rc;
    sigaction_fn f = (sigaction_fn)FT_REAL(&real_sigaction, sigaction);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(sig, act, old);
}

/* signal() and friends for the fatal signals, as glibc defines them */
static sighandler_fn set_handler(int sig, sighandler_fn h, int flags, int mask_self)
{
    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    sigemptyset(&a.sa_mask);
    if (mask_self)
        sigaddset(&a.sa_mask, sig);
    a.sa_flags = flags;
    if (sigaction(sig, &a, &o) < 0)
        return SIG_ERR;
    return o.sa_handler;
}

static sighandler_fn other_signal(signal_fn f, int sig, sighandler_fn h)
{
    if (!f) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return f(sig, h);
}

FT_EXPORT __attribute__((weak)) sighandler_fn FT_ITP(signal)(int sig, sighandler_fn h)
{
    static void *real;
    if (!ft_sig_is_ours(sig))
        return other_signal((signal_fn)FT_REAL(&real, signal), sig, h);
    return set_handler(sig, h, SA_RESTART, 1); /* BSD semantics, glibc's default */
}

FT_EXPORT __attribute__((weak)) sighandler_fn FT_ITP(bsd_signal)(int sig, sighandler_fn h)
{
    static void *real;
    if (!ft_sig_is_ours(sig))
        return other_signal((signal_fn)FT_REAL(&real, bsd_signal), sig, h);
    return set_handler(sig, h, SA_RESTART, 1);
}

FT_EXPORT __attribute__((weak)) sighandler_fn FT_ITP(sysv_signal)(int sig, sighandler_fn h)
{
    static void *real;
    if (!ft_sig_is_ours(sig))
        return other_signal((signal_fn)FT_REAL(&real, sysv_signal), sig, h);
    return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

FT_EXPORT __attribute__((weak)) sighandler_fn FT_ITP(__sysv_signal)(int sig, sighandler_fn h)
{
    static void *real;
    if (!ft_sig_is_ours(sig))
        return other_signal((signal_fn)FT_REAL(&real, __sysv_signal), sig, h);
    return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

/* the stack pointer a jmp_buf resumes at: glibc keeps it mangled (x86-64
 * PTR_MANGLE: xor with the pointer guard at %fs:0x30, rotate left 17) */
static uintptr_t jmp_target_sp(const struct __jmp_buf_tag *env)
{
    uintptr_t v = (uintptr_t)env->__jmpbuf[6], guard;
    __asm__("movq %%fs:0x30, %0" : "=r"(guard));
    v = (v >> 17) | (v << (64 - 17));
    return v ^ guard;
}

/* the jump is logged (FT_JMP_LONG_ADDR with the target's stack pointer, the
 * key its setjmp logged: setjmps.c), after a fatal-signal episode it ends */
static __attribute__((noreturn)) void do_jump(jmp_fn f, struct __jmp_buf_tag *env, int val)
{
    uintptr_t sp = jmp_target_sp(env);
    if (ft_freeze_active())
        ft_freeze_unwinding(sp, FT_FAULT_LONGJMP);
    ft_log_ctx(FT_JMP_LONG_ADDR, (const void *)sp, __builtin_return_address(0));
    if (!f)
        abort();
    f(env, val);
}

FT_EXPORT __attribute__((weak, noreturn)) void FT_ITP(longjmp)(struct __jmp_buf_tag env[1], int val)
{
    do_jump((jmp_fn)FT_REAL(&real_longjmp, longjmp), env, val);
}

FT_EXPORT __attribute__((weak, noreturn)) void FT_ITP(_longjmp)(struct __jmp_buf_tag env[1], int val)
{
    do_jump((jmp_fn)FT_REAL(&real__longjmp, _longjmp), env, val);
}

FT_EXPORT __attribute__((weak, noreturn)) void FT_ITP(siglongjmp)(struct __jmp_buf_tag env[1], int val)
{
    do_jump((jmp_fn)FT_REAL(&real_siglongjmp, siglongjmp), env, val);
}

void FT_ITP(__longjmp_chk)(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
FT_EXPORT __attribute__((weak, noreturn)) void FT_ITP(__longjmp_chk)(struct __jmp_buf_tag env[1], int val)
{
    do_jump((jmp_fn)FT_REAL(&real_longjmp_chk, __longjmp_chk), env, val);
}

/* resolve the real functions now (a signal handler must not call dlsym) */
void ft_interpose_init(void)
{
    (void)FT_REAL(&real_sigaction, sigaction);
    (void)FT_REAL(&real_longjmp, longjmp);
    (void)FT_REAL(&real__longjmp, _longjmp);
    (void)FT_REAL(&real_siglongjmp, siglongjmp);
    (void)FT_REAL(&real_longjmp_chk, __longjmp_chk);
    ft_setjmp_init();
}

/* gcrt1.o (linked by "gcc -pg" when linking) calls these; no gmon.out */
void __monstartup(unsigned long lowpc, unsigned long highpc);
void _mcleanup(void);
__attribute__((weak)) void __monstartup(unsigned long lowpc, unsigned long highpc)
{
    (void)lowpc;
    (void)highpc;
}
__attribute__((weak)) void _mcleanup(void)
{
}
