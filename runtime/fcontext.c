/*
 * fcontext.c -- Boost.Context's stack switches in the trace.  What
 * boost::context::fiber and callcc, Boost.Coroutine2, Boost.Fiber, Boost.Asio's
 * spawn and folly's fibers switch with is libboost_context's jump_fcontext
 * and ontop_fcontext (hand-written assembly, no ucontext_t): they are logged
 * as contexts.c logs swapcontext (FORMAT.md 1.4: FT_CTX_SAVE_ADDR /
 * FT_CTX_RESUME_ADDR, then the key's digits).
 *
 * A context suspends inside the real jump_fcontext or ontop_fcontext, called
 * from the interposer, and is resumed when that call returns.  Its key is the
 * interposer's frame address: unique to the suspended context (one stack, one
 * frame of ours at a time) and known on both sides of the switch.
 *   jump_fcontext(to, vp)       SAVE this frame's key; switch; RESUME it.
 *   ontop_fcontext(to, vp, fn)  the same, but fn runs on the resumed stack
 *                               before that context's jump_fcontext returns
 *                               (Boost ends a fiber so, and unwinds one by
 *                               an fn that throws): fn is called through
 *                               ontop_tramp, which logs the RESUME first.
 *                               The resumed interposer's frame is the frame
 *                               pointer the switch restored (callee-saved),
 *                               and resume_logged tells that interposer its
 *                               RESUME is logged.
 * The real functions are the next definitions (dlsym RTLD_NEXT), else those
 * of any loaded object (real_anywhere: a plugin loaded RTLD_LOCAL with its
 * libboost_context, whose calls an executable linked -rdynamic sends here).
 * A context's first run (make_fcontext's entry function) logs no RESUME: its
 * calls begin on the empty stack the SAVE left.  A context that ends (Boost's
 * entry functions never return: they switch away, and the stack is freed)
 * stays suspended in the trace.
 *
 * Not in libfuntrace_static.a: under ld --wrap, the program's references to
 * jump_fcontext would be ours and nothing would pull libboost_context.a's in
 * (a program linked -static logs no Boost.Context switches).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ft_interposing.h"
#include "ft_internal.h"

/* Boost.Context's transfer_t (boost/context/detail/fcontext.hpp): returned in
 * rax:rdx, passed in rdi:rsi */
typedef struct {
    void *fctx;
    void *data;
} ft_transfer;
typedef ft_transfer (*ontop_fn)(ft_transfer);
typedef ft_transfer (*jump_real)(void *to, void *vp);
typedef ft_transfer (*ontop_real)(void *to, void *vp, ontop_fn fn);

static __thread ontop_fn ontop_user; /* fn of this thread's ontop_fcontext */
static __thread int resume_logged;   /* the resumed interposer's RESUME is logged */

/* ---- the real functions -------------------------------------------------- */

#define MAX_OBJECTS 512

struct objects {
    char *name[MAX_OBJECTS];
    size_t n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct objects *o = arg;
    if (info->dlpi_name && *info->dlpi_name && o->n < MAX_OBJECTS && (o->name[o->n] = strdup(info->dlpi_name)))
        o->n++;
    return 0;
}

/* name's definition in any loaded object but ours: where RTLD_NEXT does not
 * look (a plugin dlopen'ed RTLD_LOCAL with its libboost_context, while the
 * executable, linked -rdynamic, exports our interposer to it) */
static void *real_anywhere(const char *name, void *self)
{
    struct objects o = {.n = 0};
    void *found = NULL;
    dl_iterate_phdr(collect, &o); /* (no dlopen inside its callback: its lock) */
    for (size_t i = 0; i < o.n; i++) {
        void *h = found ? NULL : dlopen(o.name[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            void *p = dlsym(h, name);
            if (p && p != self)
                found = p;
            dlclose(h);
        }
        free(o.name[i]);
    }
    return found;
}

static void *real(void **cache, const char *name, void *self)
{
    void *p = ft_real_next(cache, name);
    if (!p && (p = real_anywhere(name, self)))
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    if (!p)
        abort(); /* (no Boost.Context in the process: nothing made the context) */
    return p;
}

/* ---- the interposers ------------------------------------------------------ */

/* fn of an ontop_fcontext, on the resumed stack: entered by a jump with the
 * resumed jump_fcontext's return address on the stack, and the resumed
 * interposer's frame pointer in rbp (saved by our prologue) */
__attribute__((noinline)) static ft_transfer ontop_tramp(ft_transfer t)
{
    ontop_fn fn = ontop_user;
    void *resumed = *(void **)__builtin_frame_address(0);
    ft_log_ctx(FT_CTX_RESUME_ADDR, resumed, __builtin_return_address(0));
    resume_logged = 1;
    return fn(t);
}

/* before a switch: SAVE this interposer's frame */
static inline void suspending(void *self, void *ret)
{
    ft_log_ctx(FT_CTX_SAVE_ADDR, self, ret);
    resume_logged = 0;
}

/* back in this interposer's context */
static inline void resumed(void *self, void *ret)
{
    if (!resume_logged)
        ft_log_ctx(FT_CTX_RESUME_ADDR, self, ret);
    resume_logged = 0;
}

FT_EXPORT __attribute__((weak)) ft_transfer jump_fcontext(void *to, void *vp)
{
    static void *cache;
    jump_real fn = (jump_real)real(&cache, "jump_fcontext", (void *)jump_fcontext);
    void *self = __builtin_frame_address(0), *ret = __builtin_return_address(0);
    suspending(self, ret);
    ft_transfer t = fn(to, vp);
    resumed(self, ret);
    return t;
}

FT_EXPORT __attribute__((weak)) ft_transfer ontop_fcontext(void *to, void *vp, ontop_fn fn)
{
    static void *cache;
    ontop_real rf = (ontop_real)real(&cache, "ontop_fcontext", (void *)ontop_fcontext);
    void *self = __builtin_frame_address(0), *ret = __builtin_return_address(0);
    suspending(self, ret);
    ontop_user = fn;
    ft_transfer t = rf(to, vp, ontop_tramp);
    resumed(self, ret);
    return t;
}
