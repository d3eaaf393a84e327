/*
 * hooks_cyg.c -- the -finstrument-functions hooks (gcc, and clang's
 * -finstrument-functions-after-inlining), and the C event writer used by the
 * cold path.
 *
 * Exact mode hot path: rec = ft_self; slot = rec->pos & rec->mask; if 0 ->
 * cold path; store word; store tsc; rec->pos = (slot + 16) & mask.
 * Sampled mode uses ft_self_s and 8-byte words (see FORMAT.md 1.4); in
 * sampled mode ft_self stays at the dummy record, so the exact hot path
 * costs nothing extra: the mode test is only in the cold path.
 */
#include "ft_internal.h"

/* xsave area size for the asm cold path (hooks_pg.S computes it on first use) */
uint32_t ft_xsave_size;

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
    if ((int64_t)--t->countdown <= 0) {
        *(uint64_t *)(uintptr_t)slot = FT_TIME_WORD_TAG | ft_rdtsc();
        slot = (slot + 8) & mask;
        t->countdown = ft_sample_k;
    }
    ft_barrier();
    *(uint64_t *)(uintptr_t)slot = word;
    ft_barrier();
    t->pos = (slot + 8) & mask;
}

/* write one event for t in its format (cold path and C hooks) */
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

static inline __attribute__((always_inline)) void event(uint64_t word)
{
    struct ft_thread *t = ft_self;
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

/* an event from runtime C code (e.g. the __cxa_begin_catch interposer) */
void ft_log_event(uint64_t word) FT_HIDDEN;
void ft_log_event(uint64_t word)
{
    event(word);
}
