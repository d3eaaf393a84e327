/*
 * hooks_cyg.c -- the -finstrument-functions hooks (gcc, and clang's
 * -finstrument-functions-after-inlining), and the C event writer used by the
 * cold path.
 *
 * The mode is tested first (a predicted branch on a read-mostly byte), so
 * sampled mode never goes through a failed exact attempt; a mode other than
 * exact is dispatched out of line: FT_MODE_OFF (tracing frozen) returns at
 * once without touching TLS or the record, else sampled:
 *   exact:   rec = ft_self; slot = rec->pos & rec->mask; if 0 -> cold path;
 *            store word; store tsc; rec->pos = (slot + 16) & mask.
 *   sampled: rec = ft_self_s; slot = rec->pos & rec->mask; if 0 -> cold
 *            path; every sample_k-th event a time word first; store word;
 *            rec->pos = (slot + 8) & mask (FORMAT.md 1.4).
 * The mask is read once per event (a pauser may store 0 at any time).
 * These are ordinary C functions for their callers: they keep what the ABI
 * says a callee keeps, nothing more.
 */
#include "ft_internal.h"
#include "ft_hook_offsets.h"

/* the offsets hooks_pg.S uses (it includes ft_hook_offsets.h) */
_Static_assert(offsetof(struct ft_thread, pos) == FT_THR_OFF_POS, "hooks_pg.S POS");
_Static_assert(offsetof(struct ft_thread, mask) == FT_THR_OFF_MASK, "hooks_pg.S MASK");
_Static_assert(offsetof(struct ft_thread, countdown) == FT_THR_OFF_COUNTDOWN, "hooks_pg.S COUNTDOWN");
_Static_assert(offsetof(struct ft_thread, wrap) == FT_THR_OFF_WRAP, "hooks_pg.S WRAP");
_Static_assert(offsetof(struct ft_hot_settings, mode) == FT_HOT_OFF_MODE, "hooks_pg.S ft_hot");
_Static_assert(FT_MODE_OFF == FT_HOT_MODE_OFF_BIT && FT_MODE_EXACT == 0, "hooks_pg.S mode values");
_Static_assert(offsetof(struct ft_hot_settings, sample_k) == FT_HOT_OFF_SAMPLE_K, "hooks_pg.S ft_hot+8");

/* xsave area size for the asm cold path (hooks_pg.S computes it on first use) */
uint32_t ft_xsave_size;

/* ft_self / ft_self_s with the local-exec TLS model: the runtime is only
 * ever linked into executables (hooks_pg.S relies on it too), and this is
 * one load less than the initial-exec access -fPIC code gets */
#define SELF_LOAD(sym)                                                         \
    ({                                                                         \
        struct ft_thread *p_;                                                  \
        __asm__ volatile("movq %%fs:" #sym "@tpoff, %0" : "=r"(p_));           \
        p_;                                                                    \
    })

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

/* no slot: the thread has no record yet (dummy_init: create it), or it is
 * paused / disabled / ignored / exited (record nothing) */
static __attribute__((noinline)) void cold(struct ft_thread *t, uint64_t word)
{
    if (t == &ft_thread_dummy_init)
        ft_slow_event(word);
}

static inline __attribute__((always_inline)) void event(uint64_t word)
{
    if (__builtin_expect(ft_hook_mode != FT_MODE_EXACT, 0)) {
        if (ft_hook_mode & FT_MODE_OFF)
            return; /* frozen: touch nothing (TLS may be garbage meanwhile) */
        struct ft_thread *s = SELF_LOAD(ft_self_s);
        uint64_t mask = s->mask, slot = s->pos & mask;
        if (__builtin_expect(!slot, 0)) {
            cold(s, word);
            return;
        }
        write_sampled(s, slot, mask, word);
        return;
    }
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

/* an event from runtime C code (e.g. the __cxa_begin_catch interposer) */
void ft_log_event(uint64_t word) FT_HIDDEN;
void ft_log_event(uint64_t word)
{
    event(word);
}
