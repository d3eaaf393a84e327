/*
 * exc_events.c -- C++ exceptions in the trace.
 *
 * As the original funtrace does, the C++ ABI's exception functions are
 * logged as calls, so a timeline shows where an exception was thrown and
 * where it was caught:
 *   __cxa_throw, __cxa_rethrow   a call (no return: they never return; the
 *                                decoder closes them when the frames they
 *                                unwind end, "unwound by exception");
 *   __cxa_begin_catch            the catch entries below, then a call and
 *                                a return;
 *   __cxa_end_catch              a call and a return;
 *   __gxx_personality_v0         (the C++ personality routine, which the
 *                                unwinder calls for every frame with
 *                                exception tables) a landing pad: when it
 *                                sends the unwinding into a frame's cleanup
 *                                or handler code, the two catch entries below;
 *   __gcc_personality_v0         (C's, libgcc's: C code built with
 *                                -fexceptions, whose cleanups pthread_exit
 *                                and cancellation run) the same.
 * Their events carry the address of the interposer (the executable's
 * function of that name), flags as for the other hooks (FT_F_RET).
 *
 * The catch entries (FT_F_CATCH): first the return address of the call to
 * __cxa_begin_catch, inside the function whose handler caught the exception
 * (the "catcher"); then, innermost first, up to FUNTRACE_CATCH_CALLERS
 * (default 4) of the catcher's callers (return address - 1, inside the calling function), as
 * _Unwind_Backtrace finds them.  The decoder takes the whole run of catch
 * entries as one catch: the frames above the innermost traced function of
 * the run were unwound.  So a catcher that is not traced itself (NOFUNTRACE,
 * filtered out, in an uninstrumented library, libstdc++'s terminate path)
 * still closes exactly the frames the exception unwound, in every
 * instrumentation mode (FORMAT.md 1.4).
 *
 * A landing pad: the entries FT_F_CATCH | FT_LANDING_PAD_ADDR (the marker,
 * an address that is never code), then FT_F_CATCH | an address inside the frame's
 * function (the call being unwound through, or the faulting instruction of
 * a signal frame), logged right before the unwinder enters that function's
 * cleanup code (destructors, gcc -finstrument-functions' exit hook) or
 * catch handler.  The decoder ends there the frames above it: they were
 * unwound, and the destructors that code calls nest under their own frame,
 * not under __cxa_throw (without it -pg, clang and XRay builds, whose
 * unwound frames log no return, showed them there).  Nothing is logged in
 * the search phase, nor for a frame whose exception tables have no action
 * for the call.
 *
 * This file is an archive of its own, libfuntrace_cxx.a, which the wrappers
 * link (whole) unless the program links its C++ runtime statically
 * (-static-libstdc++, -static): an archive member is only linked for a
 * symbol still undefined, so these definitions would keep the C++ runtime's
 * out of the program, with no real function left to call (its first throw
 * aborted).  The interposers are weak; the real functions are found on
 * first use (ft_cxx_real).
 *
 * A C++ program linked with its C++ runtime statically gets this file
 * built with FT_CXX_WRAP instead (libfuntrace_cxxwrap.a), linked with
 * ld --wrap=NAME for each interposed NAME: the program's references to
 * NAME (its own and the static C++ runtime's) are the interposer
 * __wrap_NAME's, and the interposer's to __real_NAME are the C++ runtime's
 * NAME, which those references keep in the program.  There the events
 * carry the address of the real function, which the executable's symbol
 * table names NAME (no interposer is named so), and the unwinder's
 * functions are linked, not looked up (a -static program has no dlsym).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "ft_internal.h"


/* callers of the catcher logged after it: FUNTRACE_CATCH_CALLERS (the
 * decoder does not depend on the number: a run ends at the next event that
 * is not a catch).  Each costs about one frame of unwinding (~2000
 * instructions with libgcc; a throw and catch unwinds each frame twice). */
#define CATCH_CALLERS_DEFAULT 4
#define CATCH_CALLERS_MAX 64
static int catch_callers = CATCH_CALLERS_DEFAULT;

__attribute__((constructor)) static void exc_settings(void)
{
    uint64_t v;
    if (ft_env_u64("FUNTRACE_CATCH_CALLERS", &v) == 1)
        catch_callers = v > CATCH_CALLERS_MAX ? CATCH_CALLERS_MAX : (int)v;
}

#define FN_WORD(f) ((uint64_t)(uintptr_t)(f))

struct _Unwind_Context;
#ifndef FT_CXX_WRAP
/* the interposers: declared here, their addresses are the events' */
void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *));
void __cxa_rethrow(void);
void *__cxa_begin_catch(void *exc);
void __cxa_end_catch(void);
/* ITP(NAME): the interposer of NAME; REAL(CACHE, NAME, HANDLE): the real
 * NAME (ft_cxx_real); EV(NAME): the address NAME's events carry;
 * UNWINDER(CACHE, NAME): a function of the unwinder (not every program links
 * libgcc_s) */
#define ITP(name) name
#define REAL(cache, name, handle) ft_cxx_real(cache, #name, handle)
#define EV(name) FN_WORD(name)
#define UNWINDER(cache, name) ft_cxx_real(cache, #name, RTLD_DEFAULT)
#else
/* ld --wrap: the real functions are __real_NAME; the events carry their address */
void __real___cxa_throw(void *obj, void *tinfo, void (*dest)(void *)) __attribute__((noreturn));
void __real___cxa_rethrow(void) __attribute__((noreturn));
void *__real___cxa_begin_catch(void *exc);
void __real___cxa_end_catch(void);
int __real___gxx_personality_v0(int version, int actions, uint64_t exc_class, void *exc,
                                struct _Unwind_Context *ctx);
int __real___gcc_personality_v0(int version, int actions, uint64_t exc_class, void *exc,
                                struct _Unwind_Context *ctx);
int _Unwind_Backtrace(int (*trace)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *ctx);
uintptr_t _Unwind_GetIPInfo(struct _Unwind_Context *ctx, int *before);
#define ITP(name) __wrap_##name
#define REAL(cache, name, handle) ((void)(cache), (void *)&__real_##name)
#define EV(name) FN_WORD(&__real_##name)
#define UNWINDER(cache, name) ((void)(cache), (void *)&name)
#endif

#ifndef FT_CXX_WRAP
/* A function of the C++ runtime or of the unwinder (found once, then
 * cached): the next definition after ours (handle RTLD_NEXT) or the first
 * (RTLD_DEFAULT) -- or, when they are not in the global scope, from the C++
 * runtime's libraries or libgcc_s already loaded (RTLD_NOLOAD).  That is a C program
 * that dlopen()ed a C++ library with RTLD_LOCAL: the library's references
 * to these functions still bind to the interposers the executable exports,
 * and without the real ones its first throw would abort.  A C++ runtime
 * function (RTLD_NEXT) found nowhere is loaded: a C++ program that uses
 * nothing of its C++ runtime but the personality routine (destructors run
 * by pthread_exit's unwinding) was linked --as-needed without it, since our
 * interposer is the personality its objects name (a C program's libgcc_s
 * likewise: glibc loads it itself, locally, to unwind).  The library found
 * stays loaded (its functions are cached). */
static void *lib_fn(const char *lib, const char *name, int mode)
{
    void *h = dlopen(lib, RTLD_LAZY | mode), *p = h ? dlsym(h, name) : NULL;
    if (h && !p)
        dlclose(h);
    return p;
}

static void *ft_cxx_real(void **cache, const char *name, void *handle)
{
    /* the C++ runtimes, and the unwinder's library (C's personality routine, _Unwind_*) */
    static const char *const libs[] = {"libstdc++.so.6", "libc++abi.so.1", "libgcc_s.so.1"};
    void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    p = dlsym(handle, name);
    for (size_t i = 0; !p && i < 3; i++) /* loaded, not in the global scope */
        p = lib_fn(libs[i], name, RTLD_NOLOAD);
    for (size_t i = 0; !p && handle == RTLD_NEXT && i < 3; i++) /* not loaded */
        p = lib_fn(libs[i], name, RTLD_LOCAL);
    if (p)
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    return p;
}
#endif

static void *real_throw, *real_rethrow, *real_begin_catch, *real_end_catch, *real_backtrace, *real_getip,
    *real_personality, *real_gcc_personality, *real_getipinfo;

typedef void (*throw_fn)(void *, void *, void (*)(void *)) __attribute__((noreturn));
typedef void (*void_fn)(void);
/* the unwinder's interface (Itanium C++ ABI, libgcc_s), found at run time:
 * _Unwind_Backtrace and _Unwind_GetIP (reader/unwind.h, on the runtime's
 * include path, shadows <unwind.h>) */
#define URC_NO_REASON 0
#define URC_END_OF_STACK 5
typedef int (*trace_fn)(struct _Unwind_Context *, void *);
typedef int (*backtrace_fn)(trace_fn, void *);
typedef uintptr_t (*getip_fn)(struct _Unwind_Context *);
typedef uintptr_t (*getipinfo_fn)(struct _Unwind_Context *, int *);
#define UA_CLEANUP_PHASE 2
#define URC_FATAL_PHASE1_ERROR 3
#define URC_INSTALL_CONTEXT 7
typedef int (*personality_fn)(int, int, uint64_t, void *, struct _Unwind_Context *);

FT_EXPORT __attribute__((weak, noreturn)) void ITP(__cxa_throw)(void *obj, void *tinfo, void (*dest)(void *))
{
    throw_fn f = (throw_fn)REAL(&real_throw, __cxa_throw, RTLD_NEXT);
    ft_log_event(EV(__cxa_throw)); /* (after the first lookup, which is not the throw's time) */
    ft_no_leaf_return(EV(__cxa_throw));
    if (f)
        f(obj, tinfo, dest);
    abort();
}

FT_EXPORT __attribute__((weak, noreturn)) void ITP(__cxa_rethrow)(void)
{
    void_fn f = (void_fn)REAL(&real_rethrow, __cxa_rethrow, RTLD_NEXT);
    ft_log_event(EV(__cxa_rethrow));
    ft_no_leaf_return(EV(__cxa_rethrow));
    if (f)
        f();
    abort();
}

FT_EXPORT __attribute__((weak)) void ITP(__cxa_end_catch)(void)
{
    void_fn f = (void_fn)REAL(&real_end_catch, __cxa_end_catch, RTLD_NEXT);
    ft_log_event(EV(__cxa_end_catch));
    if (f)
        f();
    ft_log_event(EV(__cxa_end_catch) | FT_F_RET);
}

/* a personality routine f's call, and the landing-pad entries when it sends
 * the unwinding into the frame's landing pad */
static int landing_pads(personality_fn f, int version, int actions, uint64_t exc_class, void *exc,
                        struct _Unwind_Context *ctx)
{
    if (!f)
        return URC_FATAL_PHASE1_ERROR; /* (no such runtime: no frame of its language to unwind either) */
    uintptr_t at = 0;
    if (actions & UA_CLEANUP_PHASE) {
        getipinfo_fn gi = (getipinfo_fn)UNWINDER(&real_getipinfo, _Unwind_GetIPInfo);
        int before = 0;
        at = gi ? gi(ctx, &before) : 0;
        if (at && !before)
            at--; /* a return address: the call lies before it */
    }
    int rc = f(version, actions, exc_class, exc, ctx);
    if (rc == URC_INSTALL_CONTEXT && at) {
        ft_log_event(FT_LANDING_PAD_ADDR | FT_F_CATCH);
        ft_log_event((uint64_t)at | FT_F_CATCH);
    }
    return rc;
}

/* C++'s personality routine */
FT_EXPORT __attribute__((weak)) int ITP(__gxx_personality_v0)(int version, int actions, uint64_t exc_class,
                                                             void *exc, struct _Unwind_Context *ctx)
{
    return landing_pads((personality_fn)REAL(&real_personality, __gxx_personality_v0, RTLD_NEXT), version,
                        actions, exc_class, exc, ctx);
}

/* C's (libgcc's), for C code built with -fexceptions: its cleanups
 * (__attribute__((cleanup)), glibc's pthread_cleanup_push), which the forced
 * unwinding of pthread_exit and cancellation runs */
FT_EXPORT __attribute__((weak)) int ITP(__gcc_personality_v0)(int version, int actions, uint64_t exc_class,
                                                             void *exc, struct _Unwind_Context *ctx)
{
    return landing_pads((personality_fn)REAL(&real_gcc_personality, __gcc_personality_v0, RTLD_NEXT), version,
                        actions, exc_class, exc, ctx);
}

/* ---- the catch entries ---------------------------------------------------- */

struct walk {
    getip_fn getip;
    int n, max;
    uintptr_t pc[CATCH_CALLERS_MAX + 3]; /* this function, __cxa_begin_catch, the catcher, its callers */
};

static int walk_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct walk *w = arg;
    if (w->n >= w->max)
        return URC_END_OF_STACK; /* stops the walk */
    w->pc[w->n++] = (uintptr_t)w->getip(ctx);
    return URC_NO_REASON;
}

/* __cxa_begin_catch, before the real one: the catch entries (catcher =
 * its return address), then its call */
static __attribute__((noinline)) void ft_exc_catch(void *catcher)
{
    uintptr_t c = (uintptr_t)catcher;
    ft_log_event((uint64_t)c | FT_F_CATCH);
    int callers = catch_callers;
    backtrace_fn bt = callers ? (backtrace_fn)UNWINDER(&real_backtrace, _Unwind_Backtrace) : NULL;
    getip_fn ip = bt ? (getip_fn)UNWINDER(&real_getip, _Unwind_GetIP) : NULL;
    if (ip) {
        struct walk w = {.getip = ip, .max = callers + 3};
        bt(walk_frame, &w);
        int i = 0;
        while (i < w.n && w.pc[i] != c)
            i++;
        /* the catcher's callers: a return address - 1 lies in the call */
        for (int j = i + 1; j < w.n && j <= i + callers && w.pc[j] > 1; j++)
            ft_log_event((uint64_t)(w.pc[j] - 1) | FT_F_CATCH);
    }
    ft_log_event(EV(__cxa_begin_catch));
}

typedef void *(*begin_catch_fn)(void *);

/* the catch entries and the call, then the real one, then the return */
FT_EXPORT __attribute__((weak)) void *ITP(__cxa_begin_catch)(void *exc)
{
    if (ft_freeze_active()) /* caught outside a fatal-signal handler it was thrown in? */
        ft_freeze_unwinding((uintptr_t)__builtin_frame_address(0), FT_FAULT_CAUGHT);
    ft_exc_catch(__builtin_return_address(0));
    begin_catch_fn real = (begin_catch_fn)REAL(&real_begin_catch, __cxa_begin_catch, RTLD_NEXT);
    void *ret = real ? real(exc) : exc;
    ft_log_event(EV(__cxa_begin_catch) | FT_F_RET);
    return ret;
}
