/*
 * hooks_cyg.c -- the -finstrument-functions hooks (gcc, and clang's
 * -finstrument-functions-after-inlining), and the C event writer used by the
 * cold path and the runtime's own events (catch).
 *
 * The mode is tested first (a predicted branch on a read-mostly byte), so
 * sampled mode never goes through a failed exact attempt; sampled mode falls
 * through, a mode other than sampled is dispatched out of line: exact (its
 * rdtsc dwarfs the taken branch), else FT_MODE_OFF (tracing frozen), which
 * returns at once without touching TLS or the record.  Then the validity
 * check (the record pointer lies in the registry and the record names
 * itself: FORMAT.md 1.4 "Hot path"), then:
 *   exact:   rec = ft_self; slot = rec->pos; if slot & rec->mask is 0 -> nothing;
 *            [escape entries when the address's or the TSC's high half
 *            changed]; store the 8-byte entry; rec->pos = (slot + 8) & mask.
 *   sampled: rec = ft_self_s; slot = rec->pos; if slot & rec->mask is 0 -> nothing;
 *            a 4-byte item per event (every sample_k-th event, if a return,
 *            a stamped return); rec->pos = (slot + 4) & mask (FORMAT.md 1.4).
 * The mask is read once per event (a pauser may store 0 at any time); the
 * slot is pos itself (pos & mask == pos while recording: hooks_pg.S says why
 * it is tested, not applied).
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
_Static_assert(offsetof(struct ft_thread, addr_hi) == FT_THR_OFF_ADDR_HI, "hooks_pg.S AHI");
_Static_assert(offsetof(struct ft_thread, tsc_hi) == FT_THR_OFF_TSC_HI, "hooks_pg.S THI");
_Static_assert(offsetof(struct ft_thread, self) == FT_THR_OFF_SELF, "hooks_pg.S SELF");
_Static_assert(offsetof(struct ft_hot_settings, mode) == FT_HOT_OFF_MODE, "hooks_pg.S ft_hot");
_Static_assert(FT_MODE_OFF == FT_HOT_MODE_OFF_BIT && FT_MODE_EXACT == 0 && FT_MODE_SAMPLED == FT_HOT_MODE_SAMPLED &&
                   FT_MODE_EXACT < FT_MODE_SAMPLED && (FT_MODE_OFF | FT_MODE_EXACT) > FT_MODE_SAMPLED,
               "hooks_pg.S mode values");
_Static_assert(offsetof(struct ft_hot_settings, sample_k) == FT_HOT_OFF_SAMPLE_K, "hooks_pg.S ft_hot+8");
_Static_assert(offsetof(struct ft_hot_settings, reg_base) == FT_HOT_OFF_REG_BASE, "hooks_pg.S ft_hot+16");
_Static_assert(offsetof(struct ft_hot_settings, reg_span) == FT_HOT_OFF_REG_SPAN, "hooks_pg.S ft_hot+24");
_Static_assert(offsetof(struct ft_hot_settings, sample_rets) == FT_HOT_OFF_SAMPLE_RETS, "hooks_pg.S ft_hot+32");

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

/* store one 8-byte exact-mode item at slot and commit it; the next slot */
static inline __attribute__((always_inline)) uint64_t put_exact(struct ft_thread *t, uint64_t slot,
                                                                uint64_t mask, uint64_t item)
{
    *(uint64_t *)(uintptr_t)slot = item;
    ft_barrier();
    slot = (slot + 8) & mask;
    t->pos = slot;
    return slot;
}

/* FT_FMT_EXACT8, the address's high half: an ADDR_HI escape first when it
 * changed (the record's value is stored before the escape, as in
 * hooks_pg.S), committed on its own; the next slot */
static inline __attribute__((always_inline)) uint64_t exact_addr_hi(struct ft_thread *t, uint64_t slot,
                                                                    uint64_t mask, uint64_t addr)
{
    uint32_t ahi = (uint32_t)(addr >> 32);
    if (__builtin_expect(ahi != t->addr_hi, 0)) {
        t->addr_hi = ahi;
        ft_barrier();
        slot = put_exact(t, slot, mask, FT_E8_ESCAPE(FT_E8_ADDR_HI, ahi));
    }
    return slot;
}

/* FT_FMT_EXACT8, the entry: rdtsc, a TSC_HI escape first when its high half
 * changed (exact_tsc: *slot advanced past it; the low half returned), then
 * TSC bits 31..0 above lo (address bits 31..2 | tag).  The halves are taken
 * as rdtsc gives them (edx:eax), never joined and split. */
static inline __attribute__((always_inline)) uint32_t exact_tsc(struct ft_thread *t, uint64_t *slot, uint64_t mask)
{
    uint32_t tlo, thi;
    __asm__ volatile("rdtsc" : "=a"(tlo), "=d"(thi));
    if (__builtin_expect(thi != t->tsc_hi, 0)) {
        t->tsc_hi = thi;
        ft_barrier();
        *slot = put_exact(t, *slot, mask, FT_E8_ESCAPE(FT_E8_TSC_HI, thi));
    }
    return tlo;
}

static inline __attribute__((always_inline)) void exact_entry(struct ft_thread *t, uint64_t slot, uint64_t mask,
                                                              uint32_t lo)
{
    uint32_t tlo = exact_tsc(t, &slot, mask);
    put_exact(t, slot, mask, ((uint64_t)tlo << 32) | lo);
}

/* Here and in write_sampled an event comes as addr (bits 60..2 of its
 * address; bits 1..0 are ignored, 63..61 clear) and flags (FT_F_*), apart:
 * the -finstrument-functions hooks' flags are constants, so every test of
 * them folds away.  The slow paths take them joined into one word: */
static inline uint64_t event_word(uint64_t addr, uint64_t flags)
{
    return (addr & FT_ADDR_MASK & ~3ULL) | flags;
}

/* FT_FMT_EXACT8 (FORMAT.md 1.4).  Escapes first when a high half changed,
 * each committed on its own. */
static inline __attribute__((always_inline)) void write_exact(struct ft_thread *t, uint64_t slot,
                                                              uint64_t mask, uint64_t addr, uint64_t flags)
{
    uint64_t tag;
    slot = exact_addr_hi(t, slot, mask, addr);
    if (__builtin_expect((flags & FT_F_CATCH) == FT_F_CATCH, 0)) {
        slot = put_exact(t, slot, mask, FT_E8_ESCAPE(FT_E8_CATCH, 0));
        tag = FT_E8_CALL;
    } else {
        tag = (flags & FT_F_RET) ? FT_E8_RET : (flags & FT_F_CALL_RET_ON_THROW) ? FT_E8_CALL_ROT : FT_E8_CALL;
    }
    exact_entry(t, slot, mask, ((uint32_t)addr & (uint32_t)FT_E8_ADDR_LO_MASK) | (uint32_t)tag);
}

/* store one 4-byte sampled-mode item at slot and commit it; the next slot */
static inline __attribute__((always_inline)) uint64_t put_s4(struct ft_thread *t, uint64_t slot, uint64_t mask,
                                                             uint32_t item)
{
    *(uint32_t *)(uintptr_t)slot = item;
    ft_barrier();
    slot = (slot + 4) & mask;
    t->pos = slot;
    return slot;
}

/* an ADDR_HI escape: ahi becomes the thread's high half; the next slot */
static inline uint64_t put_s4_addr_hi(struct ft_thread *t, uint64_t slot, uint64_t mask, uint32_t ahi)
{
    t->addr_hi = ahi;
    ft_barrier();
    return put_s4(t, slot, mask, FT_S4_ESCAPE(FT_S4_ADDR_HI, ahi & FT_S4_HI_MASK));
}

/* the item before slot is a call (tag 0 or 2): a return at slot is a leaf's */
static __attribute__((noinline)) int leaf_return(const struct ft_thread *t, uint64_t slot)
{
    uint64_t ring = t->wrap & (t->wrap + 1); /* aligned to 2 * size */
    uint64_t prev = slot - 4 >= ring ? slot - 4 : t->wrap - 3;
    uint32_t pw = *(const uint32_t *)(uintptr_t)prev;
    return pw && !(pw & 1u);
}

/* FT_FMT_SAMPLED4, the rare cases: a stamp due, an address high half that
 * changed, a catch (out of line: the common path keeps its registers) */
static __attribute__((noinline)) void sampled_slow(struct ft_thread *t, uint64_t slot, uint64_t mask, uint64_t word,
                                                   int due)
{
    /* a stamp is due: only a leaf return (the previous item is a call) is
     * stamped (the decoder takes its address from that call) */
    if (due && (word & FT_F_CATCH) == FT_F_RET && leaf_return(t, slot)) {
        uint64_t tsc = ft_rdtsc();
        uint32_t thi = (uint32_t)(tsc >> 32);
        if (thi != t->tsc_hi) {
            t->tsc_hi = thi;
            ft_barrier();
            slot = put_s4(t, slot, mask, FT_S4_ESCAPE(FT_S4_TSC_HI, thi & FT_S4_HI_MASK));
        }
        put_s4(t, slot, mask, FT_S4_STAMP(tsc));
        t->countdown = ft_hot.sample_rets;
        return;
    }
    uint64_t addr = word & FT_ADDR_MASK;
    uint32_t ahi = (uint32_t)(addr >> 32), tag;
    if (ahi != t->addr_hi)
        slot = put_s4_addr_hi(t, slot, mask, ahi);
    if ((word & FT_F_CATCH) == FT_F_CATCH) {
        slot = put_s4(t, slot, mask, FT_S4_ESCAPE(FT_S4_CATCH, 0));
        tag = 0;
    } else {
        tag = (word & FT_F_RET) ? 1 : (word & FT_F_CALL_RET_ON_THROW) ? 2 : 0;
    }
    put_s4(t, slot, mask, ((uint32_t)addr & ~3u) | tag);
}

/* --t->countdown <= 0 (as a signed count): one read-modify-write whose
 * flags are branched on (the compiler would load, subtract, store and test) */
static inline __attribute__((always_inline)) int countdown_due(struct ft_thread *t)
{
    __asm__ goto("decq %0\n\tjle %l[due]" : "+m"(t->countdown) : : "cc" : due);
    return 0;
due:
    return 1;
}

/* FT_FMT_SAMPLED4 (FORMAT.md 1.4): every return counts down ((k + 1) / 2
 * of them between stamps: k events, calls included; calls touch no count);
 * a leaf return when the count is due is a stamped return (no address),
 * else an item with the address (an ADDR_HI escape first when its high half
 * changed) */
static inline __attribute__((always_inline)) void write_sampled(struct ft_thread *t, uint64_t slot,
                                                                uint64_t mask, uint64_t addr, uint64_t flags)
{
    int due = (flags & FT_F_CATCH) == FT_F_RET && countdown_due(t);
    if (__builtin_expect(due || (uint32_t)(addr >> 32) != t->addr_hi || (flags & FT_F_CATCH) == FT_F_CATCH, 0)) {
        sampled_slow(t, slot, mask, event_word(addr, flags), due);
        return;
    }
    uint32_t tag = (flags & FT_F_RET) ? 1 : (flags & FT_F_CALL_RET_ON_THROW) ? 2 : 0;
    *(uint32_t *)(uintptr_t)slot = ((uint32_t)addr & ~3u) | tag;
    ft_barrier();
    t->pos = (slot + 4) & mask;
}

/* write one event for t in its format (cold path and C hooks) */
void ft_write_event(struct ft_thread *t, uint64_t word)
{
    uint64_t mask = t->mask, slot = t->pos;
    if (!(slot & mask))
        return;
    if (t->fmt == FT_FMT_SAMPLED4)
        write_sampled(t, slot, mask, word & FT_ADDR_MASK, word & ~FT_ADDR_MASK);
    else
        write_exact(t, slot, mask, word & FT_ADDR_MASK, word & ~FT_ADDR_MASK);
}

/* the validity check of FORMAT.md 1.4 "Hot path": 1 if t is a record in
 * the registry that names itself */
static inline __attribute__((always_inline)) int rec_valid(const struct ft_thread *t)
{
    return (uint64_t)(uintptr_t)t - ft_hot.reg_base < ft_hot.reg_span && t->self == (uint64_t)(uintptr_t)t;
}

/* not a valid record: the thread has no record yet (dummy_init: create it),
 * or it is ignored / exited (dummy_dead), or its state is garbage: record
 * nothing */
static __attribute__((noinline)) void cold(struct ft_thread *t, uint64_t addr, uint64_t flags)
{
    if (t == &ft_thread_dummy_init)
        ft_slow_event(event_word(addr, flags));
}

/* the record t may take an event now: valid (else the cold path), not
 * paused (pos & mask); *slot, *mask: as read once */
static inline __attribute__((always_inline)) int writable(struct ft_thread *t, uint64_t addr, uint64_t flags,
                                                          uint64_t *slot, uint64_t *mask)
{
    if (__builtin_expect(!rec_valid(t), 0)) {
        cold(t, addr, flags);
        return 0;
    }
    *mask = t->mask;
    *slot = t->pos;
    return __builtin_expect((*slot & *mask) != 0, 1);
}

/* the exact mode's event (event) */
static inline __attribute__((always_inline)) void exact_event(uint64_t addr, uint64_t flags)
{
    struct ft_thread *t = SELF_LOAD(ft_self);
    uint64_t slot, mask;
    if (writable(t, addr, flags, &slot, &mask))
        write_exact(t, slot, mask, addr, flags);
}

static inline __attribute__((always_inline)) void event(uint64_t addr, uint64_t flags)
{
    /* sampled mode falls through (no taken branch), exact mode is out of
     * line (its rdtsc dwarfs a branch), anything else is FT_MODE_OFF set */
    const uint8_t mode = ft_hook_mode;
    if (__builtin_expect(mode != FT_MODE_SAMPLED, 0)) {
        if (mode != FT_MODE_EXACT)
            return; /* frozen: touch nothing (TLS may be garbage meanwhile) */
        exact_event(addr, flags);
        return;
    }
    struct ft_thread *s = SELF_LOAD(ft_self_s);
    uint64_t slot, mask;
    if (writable(s, addr, flags, &slot, &mask))
        write_sampled(s, slot, mask, addr, flags);
}

/* Under -finstrument-functions the address is the function's start; the
 * entries keep it 4-byte granular, so it is rounded UP to stay inside the
 * function (an instrumented function is longer than 3 bytes): + 3 here, the
 * low two bits dropped where the entry is built.  A user-space address has
 * bits 63..61 clear. */
#define CYG_ADDR(fn) ((uint64_t)(uintptr_t)(fn) + 3)

FT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    event(CYG_ADDR(fn), FT_F_CALL_RET_ON_THROW);
}

FT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    event(CYG_ADDR(fn), FT_F_RET);
}

/* the frames above some point are being left without returns (a longjmp,
 * interpose.c; a throw, exc_events.c): in sampled mode the next return may
 * be a lower frame's, right after the call of the function that jumped or
 * threw; a stamp due then would make it a stamped return, which the
 * decoder takes for that call's return (a leaf's: FT_FMT_SAMPLED4 stamps
 * only those).  An ADDR_HI escape (of addr, any code address: its high
 * half becomes the thread's) between them makes the next return an item
 * with its address.  Exact mode: nothing (every return has its address). */
void ft_no_leaf_return(uint64_t addr)
{
    if (ft_hook_mode != FT_MODE_SAMPLED)
        return; /* exact, or frozen */
    struct ft_thread *s = SELF_LOAD(ft_self_s);
    if (!rec_valid(s) || s->fmt != FT_FMT_SAMPLED4)
        return;
    uint64_t mask = s->mask, slot = s->pos;
    if (!(slot & mask))
        return;
    put_s4_addr_hi(s, slot, mask, (uint32_t)(addr >> 32));
}

/* an event from runtime C code (e.g. the __cxa_begin_catch interposer) */
void ft_log_event(uint64_t word)
{
    event(word & FT_ADDR_MASK, word & ~FT_ADDR_MASK);
}

/* a marker (a catch entry) and its key's FT_CTX_DIGITS digits (call
 * entries), all in the first page (contexts.c: ft_log_ctx).  Exact mode
 * reads the TSC once for all six: they are one instant, and each rdtsc
 * costs ~9 ns.  (Sampled mode: six events, no TSC read) */
void ft_log_keyed(uint64_t marker, uint64_t key)
{
    uint32_t lo[1 + FT_CTX_DIGITS];
    lo[0] = (uint32_t)marker;
    for (int i = 1; i <= FT_CTX_DIGITS; i++, key >>= FT_CTX_DIGIT_BITS)
        lo[i] = (uint32_t)(FT_CTX_DIGIT_BASE + ((key & ((1u << FT_CTX_DIGIT_BITS) - 1)) << 2));
    struct ft_thread *t = ft_hook_mode == FT_MODE_EXACT ? SELF_LOAD(ft_self) : NULL;
    if (!t || !rec_valid(t)) { /* sampled mode (no TSC reads), frozen, or no record yet */
        ft_log_event(marker | FT_F_CATCH);
        for (int i = 1; i <= FT_CTX_DIGITS; i++)
            ft_log_event(lo[i]);
        return;
    }
    uint64_t mask = t->mask, slot = t->pos;
    if (!(slot & mask))
        return;
    /* each entry is written as one event is: at the position read then (a
     * signal handler's events in between are kept, after the entries before
     * them), with the address high half 0 (an escape if a handler's events
     * changed it).  A sequence so cut is one a reader drops, as any marker
     * without its digits */
    uint32_t tlo = 0;
    for (int i = 0; i <= FT_CTX_DIGITS; i++) {
        /* (read again each time: put_exact's compiler barrier) */
        if (ft_hook_mode != FT_MODE_EXACT)
            return; /* frozen meanwhile (a fatal signal: freeze.c): touch nothing more */
        slot = exact_addr_hi(t, *(volatile uint64_t *)&t->pos, mask, 0);
        if (!i) {
            slot = put_exact(t, slot, mask, FT_E8_ESCAPE(FT_E8_CATCH, 0));
            tlo = exact_tsc(t, &slot, mask);
        }
        put_exact(t, slot, mask, ((uint64_t)tlo << 32) | (lo[i] & (uint32_t)FT_E8_ADDR_LO_MASK) | FT_E8_CALL);
    }
}
