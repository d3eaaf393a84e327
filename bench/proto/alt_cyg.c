/*
 * alt_cyg.c -- bench-only PROTOTYPE of runtime/hooks_cyg.c (the
 * -finstrument-functions hooks), linked instead of it with the rest of the
 * runtime.  Identical except for the sampled-mode dispatch:
 *   ALT_DISPATCH=0  the runtime's way: exact path first, sampled mode in a
 *                   noinline cold function;
 *   ALT_DISPATCH=1  test ft_sampled_mode first and write the sampled entry
 *                   inline (one predicted branch on a read-mostly byte in the
 *                   exact path).
 */
#include "ft_internal.h"

#ifndef ALT_DISPATCH
#define ALT_DISPATCH 1
#endif

uint32_t ft_xsave_size;

/* ALT_LE_TLS=1: read ft_self / ft_self_s with the local-exec TLS model (the
 * runtime is only ever linked into executables), one load less than the
 * initial-exec GOT access -fPIC code gets */
#ifndef ALT_LE_TLS
#define ALT_LE_TLS 1
#endif
#if ALT_LE_TLS
#define SELF_LOAD(sym) ({ struct ft_thread *p_; __asm__ volatile("movq %%fs:" #sym "@tpoff, %0" : "=r"(p_)); p_; })
#else
#define SELF_LOAD(sym) (sym)
#endif

static inline __attribute__((always_inline)) void write_exact(struct ft_thread *t, uint64_t slot,
                                                              uint64_t mask, uint64_t word)
{
    struct ft_entry *e = (struct ft_entry *)(uintptr_t)slot;
    e->word = word;
    ft_barrier();
    e->tsc = ft_rdtsc();
    ft_barrier();
    t->pos = (slot + sizeof(struct ft_entry)) & mask;
}

static inline __attribute__((always_inline)) void write_sampled(struct ft_thread *t, uint64_t slot,
                                                                uint64_t mask, uint64_t word)
{
    if (__builtin_expect((int64_t)--t->countdown <= 0, 0)) {
        *(uint64_t *)(uintptr_t)slot = FT_TIME_WORD_TAG | ft_rdtsc();
        slot = (slot + 8) & mask;
        t->countdown = ft_sample_k;
    }
    ft_barrier();
    *(uint64_t *)(uintptr_t)slot = word;
    ft_barrier();
    t->pos = (slot + 8) & mask;
}

void ft_write_event(struct ft_thread *t, uint64_t word)
{
    uint64_t mask = t->mask, slot = t->pos & mask;
    if (!slot)
        return;
    if (t->fmt == FT_FMT_SAMPLED8)
        write_sampled(t, slot, mask, word);
    else
        write_exact(t, slot, mask, word);
}

static __attribute__((noinline)) void cold(struct ft_thread *t, uint64_t word)
{
    if (ft_sampled_mode) {
        struct ft_thread *s = ft_self_s;
        uint64_t mask = s->mask, slot = s->pos & mask;
        if (__builtin_expect(slot != 0, 1)) {
            write_sampled(s, slot, mask, word);
            return;
        }
        t = s;
    }
    if (t == &ft_thread_dummy_init)
        ft_slow_event(word);
}

#if ALT_DISPATCH
static __attribute__((noinline)) void cold_slow(struct ft_thread *t, uint64_t word)
{
    if (t == &ft_thread_dummy_init)
        ft_slow_event(word);
}
#endif

static inline __attribute__((always_inline)) void event(uint64_t word)
{
#if ALT_DISPATCH
    if (__builtin_expect(ft_sampled_mode, 0)) {
        struct ft_thread *s = SELF_LOAD(ft_self_s);
        uint64_t mask = s->mask, slot = s->pos & mask;
        if (__builtin_expect(!slot, 0)) {
            cold_slow(s, word);
            return;
        }
        write_sampled(s, slot, mask, word);
        return;
    }
#endif
    struct ft_thread *t = SELF_LOAD(ft_self);
    uint64_t mask = t->mask, slot = t->pos & mask;
    if (__builtin_expect(!slot, 0)) {
        cold(t, word);
        return;
    }
    write_exact(t, slot, mask, word);
}

FT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    event((uint64_t)(uintptr_t)fn | FT_F_CALL_RET_ON_THROW);
}

FT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    event((uint64_t)(uintptr_t)fn | FT_F_RET);
}

void ft_log_event(uint64_t word) FT_HIDDEN;
void ft_log_event(uint64_t word)
{
    event(word);
}
