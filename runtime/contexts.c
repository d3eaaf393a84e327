/*
 * contexts.c -- stack switches in the trace: a program that runs several
 * contexts on one thread (coroutines, fibers) with swapcontext switches
 * between call stacks, so the events after a switch belong to another
 * stack than those before it.  The switch is logged (FORMAT.md 1.4,
 * FT_CTX_SAVE_ADDR / FT_CTX_RESUME_ADDR, then the key's digits):
 *   swapcontext(oucp, ucp)  SAVE oucp before the switch; when the saved
 *                           context is resumed (by a swapcontext or a
 *                           setcontext of oucp, or when a context whose
 *                           uc_link is oucp returns), RESUME oucp, first
 *                           thing, on whatever thread resumes it;
 *   setcontext(ucp)         nothing of its own (the context it resumes logs
 *                           its RESUME if swapcontext saved it); the frames
 *                           it leaves are left without returns, as with
 *                           longjmp (sampled mode: ft_no_leaf_return).
 * The decoder keeps the stack of each saved context by its key and takes
 * it up again at its RESUME.  Boost.Context's switches: fcontext.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <ucontext.h>

#include "ft_interposing.h"
#include "ft_internal.h"

typedef int (*swap_fn)(ucontext_t *, const ucontext_t *);
typedef int (*set_fn)(const ucontext_t *);

/* the marker, then the key's digits (funtrace_abi.h): the key is at (an
 * address unique to the suspended context: its ucontext_t here, the
 * interposer's frame in fcontext.c) >> 3 */
void ft_log_ctx(uint64_t marker, const void *at, void *ret)
{
    ft_log_keyed(marker, (uint64_t)(uintptr_t)at >> 3);
    /* the next event may be a return of another stack's frame, right after
     * these call items: it must carry its address (sampled mode; ret: the
     * interposer's return address) */
    ft_no_leaf_return((uint64_t)(uintptr_t)ret);
}

FT_EXPORT __attribute__((weak)) int FT_ITP(swapcontext)(ucontext_t *oucp, const ucontext_t *ucp)
{
    static void *cache;
    swap_fn real = (swap_fn)FT_REAL(&cache, swapcontext);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    ft_log_ctx(FT_CTX_SAVE_ADDR, oucp, __builtin_return_address(0));
    int rc = real(oucp, ucp);
    int e = errno;
    /* back in the context saved in oucp (or the switch failed) */
    ft_log_ctx(FT_CTX_RESUME_ADDR, oucp, __builtin_return_address(0));
    errno = e;
    return rc;
}

FT_EXPORT __attribute__((weak)) int FT_ITP(setcontext)(const ucontext_t *ucp)
{
    static void *cache;
    set_fn real = (set_fn)FT_REAL(&cache, setcontext);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    ft_no_leaf_return((uint64_t)(uintptr_t)__builtin_return_address(0));
    return real(ucp);
}
