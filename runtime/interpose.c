/*
 * interpose.c -- libc/libstdc++ functions the runtime wraps (the real one is
 * found with dlsym(RTLD_NEXT)):
 *   __cxa_begin_catch   logs the catch entries (FT_F_CATCH: the catching
 *                       function and its callers), so the decoder can close
 *                       the frames an exception unwound without returns, and
 *                       its own call and return (exc_events.c);
 *   pthread_setname_np  keeps the registry's thread names current;
 * and gprof's start-up hooks, made no-ops: a one-step "compile and link"
 * with -pg makes gcc link gcrt1.o, which would otherwise write gmon.out.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "ft_internal.h"

void ft_log_event(uint64_t word) FT_HIDDEN;
void ft_exc_catch(void *catcher) FT_HIDDEN;  /* exc_events.c */
void *ft_exc_caught(void *ret) FT_HIDDEN;

typedef void *(*begin_catch_fn)(void *);

/* weak: with a static libstdc++ its own definition wins (then no catch events) */
FT_EXPORT __attribute__((weak)) void *__cxa_begin_catch(void *exc)
{
    static begin_catch_fn real;
    ft_exc_catch(__builtin_return_address(0));
    if (!real)
        real = (begin_catch_fn)dlsym(RTLD_NEXT, "__cxa_begin_catch");
    return ft_exc_caught(real ? real(exc) : exc);
}

typedef int (*setname_fn)(pthread_t, const char *);

FT_EXPORT __attribute__((weak)) int pthread_setname_np(pthread_t th, const char *name)
{
    static setname_fn real;
    int rc;
    if (!real)
        real = (setname_fn)dlsym(RTLD_NEXT, "pthread_setname_np");
    if (!real)
        return ENOSYS;
    rc = real(th, name);
    if (rc == 0 && ft_rt.initialized)
        ft_thread_set_name_by_pthread(th, name);
    return rc;
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
