/*
 * replay.c -- rebuilding a thread's call stack from its events.
 *
 * The rules (also in the README section "funtrace-decode"):
 *   call f            push f (a bit-61 call is marked: its return is logged
 *                     even when an exception unwinds it)
 *   return f          f on top: pop it.  f deeper in the stack: the frames
 *                     above it lost their returns (longjmp, tail call through
 *                     uninstrumented code, exception through uninstrumented
 *                     code): they end at the previous event ("return
 *                     missing"), then f is popped.  f not on the stack: an
 *                     orphan return (its call was overwritten in the ring).
 *   catch in f        a C++ exception was caught in f.  The runtime logs a
 *                     run of catch entries: the catcher f, then f's callers
 *                     (innermost first, exc_events.c); the run is one catch.
 *                     The first function of the run that is on the stack (the
 *                     topmost frame of it) is where the exception stopped: the
 *                     frames above it are popped, ending at the catch
 *                     ("unwound"), down to the first bit-61 frame whose code
 *                     logs its return on unwinding (gcc's C++ code: such a
 *                     frame would have returned already if it had been
 *                     unwound, so it is live; sym_exit_on_unwind: clang's and
 *                     C code's bit-61 calls do not count).  No function of the
 *                     run on the stack (an uninstrumented catcher far from any
 *                     traced caller): an "unmatched catch".  Frames are popped
 *                     from the top down to the first such bit-61 frame, frame
 *                     open since the ring start, or frame the final stack
 *                     proves live (those are the catcher's callers and are
 *                     still running).  A frame is proven live when a replay in
 *                     which unmatched catches pop nothing leaves it open at
 *                     the end, matched with a final-stack frame.  An
 *                     unmatched catch by the C++ runtime's terminate path
 *                     (__cxa_throw's own catch when no handler was found, the
 *                     terminate handlers: terminate_path) pops nothing: the
 *                     exception escaped, its frames are still running.  No
 *                     catch unwinds an earlier exception's open __cxa_throw
 *                     (unwind_to).
 *   throw             __cxa_throw / __cxa_rethrow (logged as calls) never
 *                     return: when a frame below one returns (gcc logs the
 *                     returns of the frames it unwinds), the frames above that
 *                     frame were unwound and end there ("unwound"), not
 *                     "return missing".
 *   context switch    (swapcontext: a marker and the saved context's key,
 *                     FORMAT.md 1.4) SAVE sets the running stack aside under
 *                     the key and starts an empty one; RESUME takes up the
 *                     key's stack (see "contexts" below).
 *   return-with-caller (bit 62 only, original XRay mode) pops the top frame
 *                     and then returns into the logged caller.
 *   thunks            "virtual/non-virtual thunk to ..." events are ignored
 *                     (-pg logs their returns but not their calls).
 *
 * Two passes per thread.  Discovery replays the whole ring without output
 * and collects the orphan returns: each one is a frame that was open when
 * the ring starts, innermost first.  With a final stack (FINSTACK), the
 * frames still open at the end are aligned with it (longest common
 * subsequence by function): open frames missing from the final stack were
 * abandoned; final-stack frames below the outermost matched frame, up to
 * the innermost instrumented one, were open during the whole ring and are
 * added below the orphan-return frames.  Emission then starts with that
 * complete stack at the ring's start, so every return meets its frame and
 * every generation starts with its real open stack.
 *
 * Sampled time (ringevents.c): a call whose ends were not both stamped is
 * SL_UNMEASURED ("~"); if its start or end event was interpolated in a loose
 * bracket (more than EV_LOOSE_NS per event between the two stamps: a sleep
 * or untraced work somewhere in it) it is also SL_BOUND: its duration is only
 * known to be at most ub = (latest end: the end bracket's last stamp) -
 * (earliest start: the start bracket's first stamp), shown as "<=ub".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gencuts.h"
#include "hmap.h"
#include "replay.h"
#include "ringevents.h"
#include "xalloc.h"
#include "faults.h"
#include "finalstack.h"

#define NONE UINT64_MAX
#define PROGRESS_CHUNK (1u << 20) /* ring items */
#define FR_ROT 1u   /* bit-61 call */
#define FR_PRE 2u   /* open at the ring start */
#define FR_EXACT 4u /* start time measured */
#define FR_LIVE 8u  /* on the final stack and never returns: unmatched catches keep it */
#define FR_LOOSE 16u /* sampled: started in a loose bracket (ringevents.c), at mlo or later */
#define FR_THROW 32u /* __cxa_throw / __cxa_rethrow: never returns */
#define FR_ROTK 64u  /* bit-61 call whose code is known to log its return on unwinding (sym_exit_on_unwind) */
#define FR_ESCAPED 128u /* FR_THROW whose exception found no handler: the C++ runtime's
                           __cxa_throw / __cxa_rethrow caught it itself for std::terminate */
#define FR_SUSP 256u    /* its context was switched away from (swapcontext) at least once */

/* Times: every event of a thread gets its own nanosecond (ns: a later event
 * with the same or an earlier clock reading is moved to the previous event's
 * ns + 1), so the JSON slices nest without ambiguity; the text view shows the
 * measured times (m) instead, so a call of 0 ticks lasts 0 ns there. */
struct frame {
    uint32_t func, match, flags;
    int64_t start;     /* ns */
    int64_t mstart;    /* measured */
    int64_t mlo;       /* measured: the earliest it can have started */
    uint64_t addr;     /* the call's address */
    uint64_t call_idx; /* NONE: open at the ring start */
    int64_t slice;     /* index into the batch's slices, -1 */
    uint32_t cell;     /* VIEW_PIECES: its index among the calls that span a
                          generation boundary (NONE32: none) */
};

#define NONE32 UINT32_MAX

/* what the replay needs of an address's function, cached (a direct-mapped
 * table: the hot addresses of a thread are few) */
#define FC_BITS 10
#define FC_SIZE (1u << FC_BITS)
struct fcache {
    uint64_t addr;    /* FC_EMPTY: empty */
    uint32_t f, match;
    int32_t modfile;
    uint8_t ignored, throws;
    uint8_t seen; /* discovery: this replay marked the function seen */
    uint8_t rot;  /* FR_ROT / FR_ROTK of a bit-61 call (rot_flags), ROT_UNSET */
    uint8_t fl0;  /* an exact call's frame flags but its bit-61 ones: FR_EXACT, FR_THROW */
    uint8_t okt;  /* what the fast loops take of it (fc_ok): bit tag (FT_E8_*: a call, a
                     return, a bit-61 call) set if they take an event of that kind, from
                     FC_OKT_PIECES on, or in discovery from FC_OKT_DISC on */
};
#define ROT_UNSET 0xFFu
#define FC_EMPTY UINT64_MAX /* (no event's address: FT_ADDR_MASK) */
/* fcache.okt: the kinds of event of a function that is not ignored, a
 * bit-61 call's once its flags are known (rot set), in discovery once it is
 * marked seen */
#define FC_OKT_PIECES 0
#define FC_OKT_DISC 4
_Static_assert(FT_F_CALL_RET_ON_THROW >> 60 == FT_E8_CALL_ROT && FT_E8_CALL == 0,
               "an event word's bit 61 >> 60 is the tag of a bit-61 call");

/* pairs of a sampled run's call item and the return item that closes its
 * frame (the same match), both of kinds the replay's run loops take
 * (fcache.okt from FC_OKT_DISC on in discovery, else FC_OKT_PIECES), as
 * those loops last found them: their returns look here instead of at two
 * functions (a direct-mapped table, as fcache; emptied with it).  A pair stays true while its address space
 * does: an okt bit, once set, is set again when the entry is filled again
 * (the function is marked seen in its symbol table: on_event) */
#define PC_BITS 11
#define PC_SIZE (1u << PC_BITS)
struct pcache {
    uint64_t key; /* call item << 32 | return item; 0: empty (an item is never 0) */
    uint32_t ahi; /* their address high half (ev4_run.ahi_sh >> 32) */
    uint32_t f;   /* the call's function (fcache.f) */
};

struct replay {
    struct dec *d;
    struct dthread *th;
    int discovery;
    int lazy; /* the liveness pass: unmatched catches pop nothing */
    struct view *out; /* emission: where the slices go (NULL: discovery) */
    int calls;        /* out is a VIEW_CALLS view: whole calls, measured times */
    /* the ends of the calls that span a generation boundary, in the order
     * they are met: measured by a first replay without output
     * (replay_measure), used by the second to give the pieces their whole
     * call's duration */
    int measuring;
    int64_t *cells;
    size_t ncells, cellcap, ncells_known;
    struct frame *stk;
    size_t n, cap;
    size_t nrot; /* open FR_ROT frames */
    int64_t last_ns, prev_ns;
    int64_t last_m, prev_m; /* measured */
    int pair_nesting; /* returns close the innermost -pg frame (see on_event) */
    int64_t gstart;   /* this thread's start of the current generation */
    uint64_t last_tsc;
    int started, finished;
    size_t gi;
    const struct dgen *g;
    int emitting;
    int cur_exact, prev_q;   /* EV_EXACT / EV_DENSE / EV_LOOSE */
    int64_t cur_lo_m, cur_hi_m; /* the current event's bracket (measured) */
    /* a context marker's bracket (measured; discovery too): where a switch
     * in a loose bracket may have happened (ctx_store, ctx_resume) */
    int64_t mark_lo_m, mark_hi_m;
    struct ev_carry carry;
    struct fcache *fc; /* [FC_SIZE]: address -> function in address space fc_space */
    struct pcache *pc; /* [PC_SIZE]: discovery's pairs in it */
    int fc_space;      /* -1: none yet */
    uint32_t expect; /* bit-62 returns: the last function returned into */
    /* the catch run being read (consecutive catch entries: the catcher,
     * then its callers): at the run's first entry */
    int crun;              /* a run is open */
    int crun_landing;      /* it is a landing pad's (FT_LANDING_PAD_ADDR, then one frame) */
    int crun_done;         /* a function of the run was found on the stack */
    unsigned crun_callers; /* entries after the catcher */
    uint32_t crun_f;       /* the catcher */
    int crun_q;
    int64_t crun_t, crun_tm, crun_hi;
    uint32_t *pre;   /* discovery: orphan-returned frames, innermost first */
    size_t npre, precap;
    struct slice *sl;
    size_t nsl, slcap;
    int64_t *slub;  /* the SL_BOUND slices' upper bounds (th->slice_ub), by slice, slcap of
                       them; only theirs are written (the rest of the array is never touched) */
    int64_t *slcd;  /* ... and the SL_OWN_CDUR slices' call durations (th->slice_cdur) */
    size_t prev_hi; /* VIEW_PIECES: the SL_FROM_PREV slices of this batch are below it */
    /* contexts (swapcontext, Boost.Context: runtime/contexts.c, fcontext.c): the stacks of the contexts
     * suspended on this thread, by key (ctx_index: key -> slot; a slot
     * whose context was resumed is free) */
    struct rctx *ctxs;
    size_t nctx, ctxcap;
    uint32_t *ctx_free;
    size_t nfree, freecap;
    struct hmap ctx_index;
    int ctx_mark;     /* a context marker (CTX_SAVE, CTX_RESUME, ...) came, its key's digits follow;
                         CTX_JMP_PENDING: a longjmp's are complete, the jump not applied yet */
    int ctx_nd;       /* how many of them came */
    uint64_t ctx_key; /* what they spell so far */
    uint32_t ctx_pre; /* discovery: where the running context's orphan returns go: 0 pre
                         (the ring start's context), j > 0 xpre[j - 1], CTX_FRESH none
                         (a context started since: makecontext) */
    struct xpre *xpre; /* discovery: the orphan-returned frames of contexts resumed without
                          their suspension in the ring, innermost first */
    size_t nxpre, xprecap;
    uint64_t nsaves;        /* SAVEs so far */
    uint32_t ctx_id, nids;  /* the running context's number (0: the one the ring starts in), the last given */
    uint32_t *slctx;        /* the context each slice's call was made in (thread->slice_ctx):
                               VIEW_CALLS, and VIEW_PIECES on a thread that switches (ctx_on) */
    int ctx_on;
    uint64_t save_nevents;  /* discovery: th->nevents at the last one */
    /* setjmps (FT_JMP_SET_ADDR: runtime/setjmps.c): where each jmp_buf's
     * stack pointer (key) was saved, the latest by key (jmp_index: key ->
     * jsets slot) */
    struct jset *jsets;
    size_t njsets, jsetcap;
    struct hmap jmp_index;
    uint64_t jp_key, jp_idx; /* the pending longjmp (CTX_JMP_PENDING): its key, key item, */
    int64_t jp_t, jp_tm, jp_hi; /* time (and latest, measured) */
    int jp_q;                   /* and its EV_* quality */
};

#define CTX_SAVE 1
#define CTX_RESUME 2
#define CTX_JMP_SET 3
#define CTX_JMP_LONG 4
#define CTX_JMP_PENDING 5
#define CTX_FRESH UINT32_MAX
/* the key of a context suspended by a longjmp to another stack: its number
 * (a marker's key has 45 bits) */
#define JMP_CTX_KEY (1ULL << 63)

/* a suspended context: its stack as it was switched away from */
struct rctx {
    uint64_t key;
    struct frame *stk;
    size_t n, cap, nrot;
    uint32_t pre; /* its ctx_pre */
    int used;
    int64_t t, tm;     /* when */
    int64_t tlo;       /* the earliest it can have been (a loose bracket's start) */
    uint64_t seq, idx; /* its SAVE: the how-manieth, and its key item */
    uint32_t id;       /* its ctx_id */
};

/* a setjmp: the context it was made in, and its caller's frame (the top
 * one then: depth frames open, the top one's call and function) */
struct jset {
    uint32_t ctx, depth;
    uint64_t top_idx, top_addr;
    uint32_t top_func, top_flags;
};

struct xpre {
    uint64_t idx; /* the resume's key item */
    uint32_t *f;
    size_t n, cap;
};

static struct replay *rnew(struct dec *d, struct dthread *th, int discovery)
{
    struct replay *r = xcalloc(1, sizeof *r);
    r->d = d;
    r->th = th;
    r->discovery = discovery;
    r->fc = xmalloc(FC_SIZE * sizeof *r->fc);
    for (size_t i = 0; i < FC_SIZE; i++)
        r->fc[i].addr = FC_EMPTY;
    r->pc = xcalloc(PC_SIZE, sizeof *r->pc);
    r->fc_space = -1;
    r->expect = HMAP_NONE;
    r->last_ns = INT64_MIN / 4;
    r->pair_nesting = d->o.sym.no_symbols;
    return r;
}

void replay_free(struct replay *r)
{
    if (!r)
        return;
    free(r->cells);
    free(r->fc);
    free(r->pc);
    free(r->stk);
    free(r->pre);
    free(r->sl);
    free(r->slub);
    free(r->slcd);
    free(r->slctx);
    for (size_t i = 0; i < r->nctx; i++)
        free(r->ctxs[i].stk);
    free(r->ctxs);
    free(r->ctx_free);
    hm_free(&r->ctx_index);
    free(r->jsets);
    hm_free(&r->jmp_index);
    for (size_t i = 0; i < r->nxpre; i++)
        free(r->xpre[i].f);
    free(r->xpre);
    free(r);
}

/* ---- frames, slices and text records ------------------------------------ */

static __attribute__((noinline)) void grow_slices(struct replay *r)
{
    struct dec *d = r->d;
    if (d->sl_spare && d->sl_spare_cap > r->slcap) { /* the array another replay gave back */
        if (r->nsl)
            memcpy(d->sl_spare, r->sl, r->nsl * sizeof *r->sl);
        free(r->sl);
        r->sl = d->sl_spare;
        r->slcap = d->sl_spare_cap;
        d->sl_spare = NULL;
        d->sl_spare_cap = 0;
    } else {
        r->slcap = r->slcap ? r->slcap * 2 : 4096;
        r->sl = xrealloc(r->sl, r->slcap * sizeof *r->sl);
    }
    r->slub = xrealloc(r->slub, r->slcap * sizeof *r->slub);
    r->slcd = xrealloc(r->slcd, r->slcap * sizeof *r->slcd);
    if (r->calls || r->ctx_on)
        r->slctx = xrealloc(r->slctx, r->slcap * sizeof *r->slctx);
}

static inline struct slice *new_slice(struct replay *r)
{
    if (__builtin_expect(r->nsl == r->slcap, 0))
        grow_slices(r);
    return &r->sl[r->nsl];
}

/* The per-event functions come in three kinds, so that the compiler drops
 * what a replay does not do: K_DISC a discovery replay, K_PIECES an emitting
 * replay into a VIEW_PIECES view, K_ANY any replay (decided at run time). */
#define K_ANY 0
#define K_DISC 1
#define K_PIECES 2
#define IS_DISC(r, k) ((k) == K_DISC || ((k) == K_ANY && (r)->discovery))
#define IS_EMITTING(r, k) ((k) == K_PIECES || ((k) == K_ANY && (r)->emitting))
#define IS_CALLS(r, k) ((k) == K_ANY && (r)->calls)
#define ALWAYS_INLINE inline __attribute__((always_inline))

/* a frame enters the output: VIEW_PIECES opens a piece in every generation
 * shown (clipped to the generation's start), VIEW_CALLS one slice per call
 * in measured times */
static ALWAYS_INLINE void open_out_k(struct replay *r, struct frame *fr, int k)
{
    if (IS_CALLS(r, k) && fr->slice >= 0)
        return; /* already in this replay's batch */
    fr->slice = -1;
    if (!IS_EMITTING(r, k))
        return;
    uint16_t depth = (uint16_t)(fr - r->stk > 65535 ? 65535 : fr - r->stk);
    struct slice *s = new_slice(r);
    s->func = fr->func;
    s->depth = depth;
    s->flags = SL_PENDING | ((fr->flags & FR_PRE) ? SL_START_UNK : 0) | ((fr->flags & FR_SUSP) ? SL_WAS_SUSP : 0);
    if (IS_CALLS(r, k)) {
        s->start = fr->mstart;
    } else {
        s->start = fr->start;
        if (s->start < r->gstart) {
            s->start = r->gstart;
            s->flags |= SL_FROM_PREV;
            r->prev_hi = r->nsl + 1;
        }
    }
    s->end = s->start;
    if (IS_CALLS(r, k) || __builtin_expect(r->ctx_on, 0))
        r->slctx[r->nsl] = r->ctx_id;
    fr->slice = (int64_t)r->nsl++;
}

static void open_out(struct replay *r, struct frame *fr)
{
    open_out_k(r, fr, K_ANY);
}

/* end_q: the end event's EV_* quality, mhi: the latest it can have been
 * (measured).  A call with an end in a loose bracket gets an upper bound
 * (SL_BOUND): from the earliest its start can have been to the latest its
 * end can have been. */
static ALWAYS_INLINE void close_out_k(struct replay *r, struct frame *fr, int64_t end, int64_t mend,
                                      unsigned flags, int end_q, int64_t mhi, int k)
{
    struct dec *d = r->d;
    if (fr->slice < 0)
        return;
    if (end < fr->start)
        end = fr->start;
    unsigned unm = d->sampled && (!(fr->flags & FR_EXACT) || end_q != EV_EXACT) ? SL_UNMEASURED : 0;
    if (unm && !(fr->flags & FR_PRE) && ((fr->flags & FR_LOOSE) || end_q == EV_LOOSE))
        unm |= SL_BOUND;
    int64_t ub = mhi - fr->mlo;
    struct slice *s = &r->sl[fr->slice];
    if (r->measuring && fr->cell != NONE32)
        r->cells[fr->cell] = end;
    const int64_t cdur = IS_CALLS(r, k) ? (mend > fr->mstart ? mend - fr->mstart : 0) : end - fr->start;
    if (IS_CALLS(r, k))
        end = mend;
    s->end = end < s->start ? s->start : end;
    s->flags = (uint16_t)((s->flags & ~SL_PENDING) | flags | unm);
    if (s->flags & SL_OWN_CDUR) /* (the others': end - start) */
        r->slcd[fr->slice] = cdur;
    if (s->flags & SL_BOUND)
        r->slub[fr->slice] = ub > s->end - s->start ? ub : s->end - s->start;
    fr->slice = -1;
}

static ALWAYS_INLINE struct frame *push_k(struct replay *r, uint32_t func, uint32_t match, uint64_t addr,
                                           uint32_t flags, int64_t start, int64_t mstart, uint64_t idx, int k)
{
    if (__builtin_expect(r->n == r->cap, 0)) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->stk = xrealloc(r->stk, r->cap * sizeof *r->stk);
    }
    struct frame *fr = &r->stk[r->n++];
    fr->func = func;
    fr->match = match;
    fr->flags = flags;
    fr->addr = addr;
    fr->call_idx = idx;
    r->nrot += (flags & FR_ROT) != 0;
    if (IS_DISC(r, k)) /* a discovery replay has no times nor output */
        return fr;
    fr->start = start;
    fr->mstart = mstart;
    fr->mlo = mstart;
    fr->slice = -1;
    fr->cell = NONE32;
    open_out_k(r, fr, k);
    return fr;
}

static struct frame *push(struct replay *r, uint32_t func, uint32_t match, uint64_t addr, uint32_t flags,
                          int64_t start, int64_t mstart, uint64_t idx)
{
    return push_k(r, func, match, addr, flags, start, mstart, idx, K_ANY);
}

static ALWAYS_INLINE void pop_k(struct replay *r, int64_t end, int64_t mend, unsigned flags, int end_q, int64_t mhi,
                                int k)
{
    struct frame *fr = &r->stk[--r->n];
    r->nrot -= (fr->flags & FR_ROT) != 0;
    if (!IS_DISC(r, k))
        close_out_k(r, fr, end, mend, flags, end_q, mhi, k);
}

static void pop(struct replay *r, int64_t end, int64_t mend, unsigned flags, int end_q, int64_t mhi)
{
    pop_k(r, end, mend, flags, end_q, mhi, K_ANY);
}

/* was frame k's return logged while an exception unwound the frames above
 * it?  Yes if a throw is among them; without names (no symbols), if k logs
 * its return on unwinding (bit 61) and none of them does (they are the
 * runtime's throw, or frames that log no return when unwound). */
static int unwound_above(const struct replay *r, size_t k)
{
    int nameless = (r->stk[k].flags & FR_ROT) != 0;
    for (size_t i = k + 1; i < r->n; i++) {
        if (r->stk[i].flags & FR_THROW)
            return 1;
        if ((r->stk[i].flags & FR_ROT) || !sym_func(r->d->sym, r->stk[i].func)->unknown)
            nameless = 0;
    }
    return nameless;
}

/* pop the frames above frame k: they lost their returns and end at the
 * previous event -- unless an exception unwound them (unwound_above): then
 * they end at this event, a return logged during the unwinding.  Returns 1
 * for an unwinding. */
static int abandon_above(struct replay *r, size_t k)
{
    if (unwound_above(r, k)) {
        while (r->n > k + 1)
            pop(r, r->last_ns, r->last_m, SL_UNWOUND, r->cur_exact, r->cur_hi_m);
        return 1;
    }
    /* they ended between the previous event and this one */
    int q = r->prev_q == EV_LOOSE || r->cur_exact == EV_LOOSE ? EV_LOOSE : EV_DENSE;
    while (r->n > k + 1)
        pop(r, r->prev_ns, r->prev_m, SL_ABANDONED, q, r->cur_hi_m);
    return 0;
}

/* Without symbols: the topmost frame of addr's module whose call address is
 * the highest at or below addr.  A call's address is its function's start
 * (-pg -mfentry, -finstrument-functions with gcc or clang) and functions do
 * not overlap, so that is addr's function when it is open and addr lies in
 * its main part; -1 if none.  (-finstrument-functions frames count too:
 * clang logs no returns for the frames an exception unwinds.) */
static long find_by_addr(const struct replay *r, uint64_t addr, int modfile, size_t lim)
{
    long best = -1;
    for (size_t i = lim; i > 0; i--) {
        const struct frame *fr = &r->stk[i - 1];
        if (fr->flags & FR_PRE || fr->addr > addr || (best >= 0 && fr->addr <= r->stk[best].addr))
            continue;
        if (modfile >= 0 && sym_func(r->d->sym, fr->func)->modfile != modfile)
            continue;
        best = (long)(i - 1);
    }
    return best;
}

/* index of the topmost frame below lim with this match id, -1 if none */
static long find(const struct replay *r, uint32_t match, size_t lim)
{
    for (size_t i = lim; i > 0; i--)
        if (r->stk[i - 1].match == match)
            return (long)(i - 1);
    return -1;
}

#define MAX_PRE 65536 /* frames open at the ring start kept (garbage input can claim millions) */

/* an orphan return: a frame open since before the running context's events
 * in the ring began (its pre list: ctx_pre) */
static void pre_add(struct replay *r, uint32_t func)
{
    uint32_t **l = &r->pre;
    size_t *n = &r->npre, *cap = &r->precap;
    if (r->ctx_pre == CTX_FRESH) { /* a context that started in the ring has none */
        r->th->unnamed++;
        return;
    }
    if (r->ctx_pre) {
        struct xpre *x = &r->xpre[r->ctx_pre - 1];
        l = &x->f;
        n = &x->n;
        cap = &x->cap;
    }
    if (*n >= MAX_PRE) {
        r->th->unnamed++;
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *l = xrealloc(*l, *cap * sizeof **l);
    }
    (*l)[(*n)++] = func;
}

/* the stack open at the ring start, at the first event */
static void start(struct replay *r, int64_t t, int64_t tm)
{
    r->started = 1;
    if (r->discovery)
        return;
    struct dthread *th = r->th;
    for (size_t i = 0; i < th->npre; i++)
        push(r, th->pre[i], sym_func(r->d->sym, th->pre[i])->match, 0, FR_PRE, t, tm, NONE);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int is_live(const struct dthread *th, uint64_t call_idx)
{
    return th->nlive && bsearch(&call_idx, th->live, th->nlive, sizeof *th->live, cmp_u64);
}

/* Is a catcher the C++ runtime's, on the way to std::terminate (an
 * exception nothing caught: the frames it escaped from are still running)?
 * __cxa_throw calls __cxa_begin_catch itself when the search for a handler
 * fails; the terminate handlers catch the exception again to show it. */
static int terminate_path(const struct func *fn)
{
    static const char *const names[] = {"std::terminate", "std::__terminate", "__cxxabiv1::__terminate",
                                        "__cxa_call_terminate", "__gnu_cxx::__verbose_terminate_handler"};
    if (fn->unknown || !fn->name)
        return 0;
    if (fn->throws || strstr(fn->name, "demangling_terminate_handler"))
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strncmp(fn->name, names[i], strlen(names[i])))
            return 1;
    return 0;
}

/* ---- catches ------------------------------------------------------------ */

/* the frames above frame keep-1 were unwound: they end at the catch, down
 * to a frame with a stop flag (a live bit-61 frame, one that would have
 * logged its return, ...), never below a throw whose exception escaped to
 * std::terminate (FR_ESCAPED: still running, the terminate handler above
 * it), and below at most `throws` throws.  A catch whose catcher is on the
 * stack pops any number of them: an earlier throw under the one caught is
 * one whose frame a landing pad below it already left (a destructor run by
 * its unwinding threw, and caught the exception itself). */
static void unwind_to(struct replay *r, size_t keep, unsigned stop, size_t throws)
{
    while (r->n > keep) {
        unsigned fl = r->stk[r->n - 1].flags;
        if ((fl & (stop | FR_ESCAPED)) || ((fl & FR_THROW) && !throws--))
            break;
        pop(r, r->crun_t, r->crun_tm, SL_UNWOUND, r->crun_q, r->crun_hi);
    }
}

/* where a catch's catcher and callers are looked for: below the topmost
 * throw, which threw what is caught (an exception in flight is caught
 * before an older one goes on), unless that throw found no handler
 * (FR_ESCAPED): std::terminate's handler, called above it, may catch it
 * again.  So when the terminate handler's own rethrow of an escaped
 * rethrow is caught, the escaped __cxa_rethrow below it (still running)
 * is the catcher's caller, not the handler's (unwound). */
static size_t topmost_throw(const struct replay *r) /* its index, r->n if none */
{
    for (size_t i = r->n; i > 0; i--)
        if (r->stk[i - 1].flags & FR_THROW)
            return i - 1;
    return r->n;
}

static size_t catch_limit(const struct replay *r)
{
    size_t t = topmost_throw(r);
    return t < r->n && !(r->stk[t].flags & FR_ESCAPED) ? t : r->n;
}

static void catch_end(struct replay *r);

/* one catch entry: the first of a run names the catcher, the others its
 * callers; the first of them found on the stack ends the unwinding.  A
 * catcher that is itself a throw function is the C++ runtime's __cxa_throw
 * or __cxa_rethrow on its way to std::terminate: the topmost throw's
 * exception escaped (FR_ESCAPED).  A landing pad's run (its marker, then one
 * entry: the function whose cleanup code or handler is entered) ends the
 * frames above that function the same way, and nothing when the function
 * is not on the stack (not traced: what it unwinds is not known). */
static void catch_entry(struct replay *r, struct func *fn, uint32_t f, uint64_t addr, int64_t t, int64_t tm,
                        int exact)
{
    size_t th;
    int landing = addr == FT_LANDING_PAD_ADDR;
    if (r->crun && (landing || (r->crun_landing && r->crun_callers)))
        catch_end(r); /* a run ends where a landing pad's begins, and after the landing pad's frame */
    if (!r->crun && !landing && fn->throws && (th = topmost_throw(r)) < r->n)
        r->stk[th].flags |= FR_ESCAPED;
    if (!r->crun) {
        r->crun = 1;
        r->crun_landing = landing;
        r->crun_done = 0;
        r->crun_callers = 0;
        r->crun_f = f;
        r->crun_t = t;
        r->crun_tm = tm;
        r->crun_q = exact;
        r->crun_hi = r->cur_hi_m;
        if (r->discovery && !landing)
            r->th->ncatches++;
    } else {
        r->crun_callers++;
    }
    if (r->crun_done || fn->ignored || landing)
        return;
    size_t lim = catch_limit(r);
    long k = find(r, fn->match, lim);
    if (k < 0 && r->pair_nesting)
        k = find_by_addr(r, addr, fn->modfile, lim);
    if (k < 0)
        return;
    r->crun_done = 1;
    unwind_to(r, (size_t)k + 1, FR_ROTK, SIZE_MAX);
}

/* the run ended (the next event is not a catch, or the thread's events
 * ended): nothing of it on the stack is an unmatched catch */
static void catch_end(struct replay *r)
{
    struct dec *d = r->d;
    struct dthread *th = r->th;
    r->crun = 0;
    if (r->crun_done || r->crun_landing)
        return;
    if (r->discovery)
        th->unmatched_catches++;
    /* the topmost throw, unless it escaped, threw what was caught, below
     * it: it and the frames above it were unwound (in every pass; below
     * it, the catcher is somewhere in untraced code) */
    size_t lim = catch_limit(r);
    size_t throws = 1;
    if (lim < r->n) {
        unwind_to(r, lim, 0, 1);
        throws = 0;
    }
    if (r->lazy)
        return;
    /* an exception nothing caught (no callers were logged to tell, or they
     * are all outside the traced code): its frames are still running */
    if (terminate_path(sym_func(d->sym, r->crun_f)))
        return;
    unwind_to(r, 0, FR_ROT | FR_PRE | FR_LIVE, throws);
}

/* ---- contexts ----------------------------------------------------------- */

/* Context switches (swapcontext, Boost.Context: runtime/contexts.c, fcontext.c): a SAVE of key K
 * suspends the running context -- its stack is kept under K and the events
 * that follow run on an empty one (a context makecontext started), until a
 * RESUME of a key takes that key's stack up again.  What runs when a
 * RESUME comes was left without being saved (setcontext; a finished
 * context's uc_link resumes with nothing left on its stack): its frames
 * lost their returns.  A RESUME of a key whose SAVE the ring does not hold
 * starts with the frames discovery found open in that context (its orphan
 * returns, th->ctx_pre).  VIEW_PIECES: a suspended frame's piece ends at the
 * SAVE (SL_SUSPENDED) and a new one starts at the RESUME (SL_RESUMED), so
 * that a thread's pieces nest; every piece of such a call carries its whole
 * duration, suspensions included (cdur, measured first as for generation
 * boundaries).  VIEW_CALLS: whole calls; frames still suspended at the end
 * are open (SL_OPEN | SL_SUSPENDED). */

/* the suspended context of key, NULL if none */
static struct rctx *ctx_find(const struct replay *r, uint64_t key)
{
    uint32_t v = hm_get(&r->ctx_index, key, 0);
    return v != HMAP_NONE && r->ctxs[v].used && r->ctxs[v].key == key ? &r->ctxs[v] : NULL;
}

static void ctx_release(struct replay *r, struct rctx *c)
{
    c->used = 0;
    r->ctx_free = xgrow(r->ctx_free, &r->freecap, r->nfree + 1, sizeof *r->ctx_free);
    r->ctx_free[r->nfree++] = (uint32_t)(c - r->ctxs);
}

/* VIEW_PIECES: frame fr's piece ends at end, and its call goes on (flag:
 * SL_TO_NEXT at a generation boundary, SL_SUSPENDED at a context switch);
 * the piece gets the whole call's duration, which a measuring replay (the
 * same events without output, replay_measure) found: its cell */
static void piece_goes_on(struct replay *r, struct frame *fr, int64_t end, unsigned flag)
{
    struct slice *s = &r->sl[fr->slice];
    if (fr->cell == NONE32) {
        if (r->measuring) {
            r->cells = xgrow(r->cells, &r->cellcap, r->ncells + 1, sizeof *r->cells);
            r->cells[r->ncells] = INT64_MIN;
        }
        fr->cell = (uint32_t)r->ncells++;
    }
    r->slcd[fr->slice] = !r->measuring && fr->cell < r->ncells_known && r->cells[fr->cell] != INT64_MIN
                             ? r->cells[fr->cell] - fr->start
                             : -1; /* (flag: SL_OWN_CDUR's) */
    s->end = end < s->start ? s->start : end;
    s->flags = (uint16_t)((s->flags & ~SL_PENDING) | flag);
    fr->slice = -1;
}

/* a frame of the running context is suspended at t */
static void suspend_out(struct replay *r, struct frame *fr, int64_t t)
{
    fr->flags |= FR_SUSP;
    if (!r->discovery && !r->calls && fr->slice >= 0) /* (a discovery replay's frames have no slice) */
        piece_goes_on(r, fr, t, SL_SUSPENDED);
}

/* the running context is suspended under key: its stack is kept, and the
 * running one is empty */
static void ctx_store(struct replay *r, uint64_t key, uint64_t idx, int64_t t, int64_t tm, int64_t tlo)
{
    if (r->discovery)
        r->th->has_ctx = 1;
    struct rctx *c = ctx_find(r, key);
    if (c) { /* saved again without a resume: the older one can never resume */
        for (size_t i = c->n; !r->discovery && i > 0; i--)
            close_out_k(r, &c->stk[i - 1], c->t, c->tm, SL_ABANDONED, EV_DENSE, c->tm, K_ANY);
    } else {
        uint32_t v;
        if (r->nfree) {
            v = r->ctx_free[--r->nfree];
        } else {
            r->ctxs = xgrow(r->ctxs, &r->ctxcap, r->nctx + 1, sizeof *r->ctxs);
            v = (uint32_t)r->nctx++;
            r->ctxs[v].stk = NULL;
            r->ctxs[v].cap = 0;
        }
        if (hm_put(&r->ctx_index, key, 0, v) != 0)
            xalloc_die();
        c = &r->ctxs[v];
    }
    for (size_t i = 0; i < r->n; i++)
        suspend_out(r, &r->stk[i], t);
    if (r->n > c->cap) {
        c->cap = r->n;
        c->stk = xrealloc(c->stk, c->cap * sizeof *c->stk);
    }
    if (r->n)
        memcpy(c->stk, r->stk, r->n * sizeof *r->stk);
    c->key = key;
    c->used = 1;
    c->n = r->n;
    c->nrot = r->nrot;
    c->pre = r->ctx_pre;
    c->t = t;
    c->tm = tm;
    c->tlo = tlo < t ? tlo : t;
    c->seq = ++r->nsaves;
    c->idx = idx;
    c->id = r->ctx_id;
    if (hm_put(&r->ctx_index, c->id, 1, (uint32_t)(c - r->ctxs)) != 0) /* (by number: ctx_by_id) */
        xalloc_die();
    r->n = 0;
    r->nrot = 0;
}

static int cmp_save_at(const void *a, const void *b)
{
    const struct ctx_save_at *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

#define CTX_SAVERS_MANY 0xFFFFFFFEu

/* discovery: key was saved on the thread r replays */
static void note_save(struct replay *r, uint64_t key, int64_t t)
{
    struct dec *d = r->d;
    uint32_t th = (uint32_t)r->th->index, v = hm_get(&d->ctx_saver, key, 0);
    if (d->ctx_saves_phase == 0) {
        if (v == HMAP_NONE) {
            if (hm_put(&d->ctx_saver, key, 0, th + 1) != 0)
                xalloc_die();
        } else if (v != th + 1 && v != CTX_SAVERS_MANY) {
            if (hm_put(&d->ctx_saver, key, 0, CTX_SAVERS_MANY) != 0)
                xalloc_die();
            d->ctx_moved = 1;
        }
    } else if (d->ctx_saves_phase == 1 && v == CTX_SAVERS_MANY) {
        d->ctx_saves = xgrow(d->ctx_saves, &d->ctx_savecap, d->nctx_saves + 1, sizeof *d->ctx_saves);
        d->ctx_saves[d->nctx_saves++] = (struct ctx_save_at){key, t, (int)th};
    }
}

static void rediscover_switching(struct dec *d)
{
    for (size_t i = 0; i < d->nth; i++) {
        struct dthread *th = &d->th[i];
        if (!th->has_ctx)
            continue;
        d->total_events -= th->nevents;
        replay_forget(th, 1);
        replay_discover(d, th);
        d->total_events += th->nevents;
    }
}

void replay_follow_moves(struct dec *d)
{
    if (!d->ctx_moved || d->ctx_saves_phase)
        return;
    d->ctx_saves_phase = 1;
    rediscover_switching(d);
    if (d->nctx_saves)
        qsort(d->ctx_saves, d->nctx_saves, sizeof *d->ctx_saves, cmp_save_at);
    d->ctx_saves_phase = 2;
    rediscover_switching(d);
}

/* was key saved on a thread other than th in (t0, t1]? */
static int saved_elsewhere(const struct dec *d, uint64_t key, int th, int64_t t0, int64_t t1)
{
    if (d->ctx_saves_phase != 2)
        return 0;
    size_t lo = 0, hi = d->nctx_saves; /* the first save of key after t0 */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct ctx_save_at *e = &d->ctx_saves[mid];
        if (e->key < key || (e->key == key && e->t <= t0))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < d->nctx_saves && d->ctx_saves[lo].key == key && d->ctx_saves[lo].t <= t1; lo++)
        if (d->ctx_saves[lo].th != th)
            return 1;
    return 0;
}

/* a SAVE: what runs next is a context makecontext started */
static void ctx_save(struct replay *r, uint64_t key, uint64_t idx, int64_t t, int64_t tm)
{
    if (!r->discovery && r->th->has_ctx_unsave && idx == r->th->ctx_unsave_idx)
        return; /* the thread's events end in this switch, which did not happen (ctx_at_end) */
    if (r->discovery)
        note_save(r, key, t);
    ctx_store(r, key, idx, t, tm, r->mark_lo_m); /* (the SAVE marker's bracket) */
    r->ctx_id = ++r->nids;
    r->save_nevents = r->th->nevents;
    r->ctx_pre = CTX_FRESH;
}

/* the suspended context numbered id, NULL if none */
static struct rctx *ctx_by_id(const struct replay *r, uint32_t id)
{
    uint32_t v = hm_get(&r->ctx_index, id, 1);
    return v != HMAP_NONE && r->ctxs[v].used && r->ctxs[v].id == id ? &r->ctxs[v] : NULL;
}

/* c's stack becomes the running one (which is empty) */
static void ctx_take_up(struct replay *r, struct rctx *c)
{
    if (c->n > r->cap) {
        r->cap = c->n;
        r->stk = xrealloc(r->stk, r->cap * sizeof *r->stk);
    }
    if (c->n)
        memcpy(r->stk, c->stk, c->n * sizeof *c->stk);
    r->n = c->n;
    r->nrot = c->nrot;
    r->ctx_pre = c->pre;
    r->ctx_id = c->id;
    ctx_release(r, c);
}

static int cmp_ctx_pre(const void *k, const void *e)
{
    uint64_t a = *(const uint64_t *)k, b = ((const struct ctx_pre *)e)->idx;
    return a < b ? -1 : a > b;
}

/* discovery: the latest resume of key, on any thread (dec.ctx_resumed) */
static void note_resume(struct dec *d, uint64_t key, int64_t t, int th)
{
    uint32_t v = hm_get(&d->ctx_resumed, key, 0);
    if (v == HMAP_NONE) {
        d->ctx_res = xgrow(d->ctx_res, &d->ctx_rescap, d->nctx_res + 1, sizeof *d->ctx_res);
        v = (uint32_t)d->nctx_res++;
        d->ctx_res[v] = (struct ctx_resume_at){t, th};
        if (hm_put(&d->ctx_resumed, key, 0, v) != 0)
            xalloc_die();
    } else if (t >= d->ctx_res[v].t) {
        d->ctx_res[v] = (struct ctx_resume_at){t, th};
    }
}

/* c, still suspended at its thread's end: resumed by another thread after */
static int ctx_moved(const struct replay *r, const struct rctx *c)
{
    uint32_t v = hm_get(&r->d->ctx_resumed, c->key, 0);
    return v != HMAP_NONE && r->d->ctx_res[v].th != r->th->index && r->d->ctx_res[v].t >= c->tlo;
}

/* the suspended context c runs again from t (the running stack is empty) */
static void ctx_resumed(struct replay *r, struct rctx *c, int64_t t)
{
    ctx_take_up(r, c);
    if (r->emitting && !r->calls)
        for (size_t i = 0; i < r->n; i++) {
            struct frame *fr = &r->stk[i];
            open_out(r, fr);
            struct slice *s = &r->sl[fr->slice];
            s->start = s->end = t;
            s->flags = (uint16_t)((s->flags & ~SL_FROM_PREV) | SL_RESUMED);
        }
}

/* emission: the calls of c, suspended, stay open to the thread's end (the
 * pieces ended at the suspension); moved: SL_MOVED, another thread resumed it */
static void ctx_close_open(struct replay *r, struct rctx *c, unsigned moved)
{
    const struct dthread *th = r->th;
    for (size_t i = c->n; !r->discovery && i > 0; i--)
        close_out_k(r, &c->stk[i - 1], th->end_ns, th->end_ns, SL_OPEN | SL_SUSPENDED | moved, EV_EXACT,
                    th->end_ns, K_ANY);
}

/* thi: the latest the resume can be (a marker's bracket: r->mark_hi_m) */
static void ctx_resume(struct replay *r, uint64_t key, uint64_t idx, int64_t t, int64_t tm, int64_t thi)
{
    struct dthread *th = r->th;
    if (r->discovery) {
        th->has_ctx = 1;
        note_resume(r->d, key, t, th->index);
    }
    /* what runs now was left without being saved: its frames lost their returns */
    while (r->n)
        pop(r, r->prev_ns, r->prev_m, SL_ABANDONED, EV_DENSE, r->prev_m);
    struct rctx *c = ctx_find(r, key);
    if (c && saved_elsewhere(r->d, key, th->index, c->tlo, thi > t ? thi : t)) {
        /* saved here, then resumed and saved again on another thread (a fiber
         * a scheduler moved away and back): the stack kept here is stale, its
         * frames went on there.  They stay open here as a context that
         * another thread resumed, and what comes back is taken up as a
         * context whose suspension the ring does not hold.  (Sampled time:
         * from the earliest the save here can have been to the latest the
         * resume can be, the brackets' bounds -- a thread blocked between
         * the two, as one that waits for the fiber's other thread, has them
         * in a loose bracket, whose interpolated times may put the other
         * thread's save before this one's) */
        ctx_close_open(r, c, SL_MOVED);
        ctx_release(r, c);
        c = NULL;
    }
    if (c) {
        ctx_resumed(r, c, t);
        return;
    }
    /* a context suspended before the ring's events (or whose stack went on
     * on another thread) */
    r->ctx_id = ++r->nids;
    if (r->discovery) {
        r->xpre = xgrow(r->xpre, &r->xprecap, r->nxpre + 1, sizeof *r->xpre);
        r->xpre[r->nxpre] = (struct xpre){idx, NULL, 0, 0};
        r->ctx_pre = (uint32_t)++r->nxpre;
        return;
    }
    r->ctx_pre = 0; /* (not a context started in the ring) */
    const struct ctx_pre *p = th->nctx_pre ? bsearch(&idx, th->ctx_pre, th->nctx_pre, sizeof *th->ctx_pre,
                                                     cmp_ctx_pre)
                                           : NULL;
    for (size_t i = 0; p && i < p->n; i++)
        push(r, p->f[i], sym_func(r->d->sym, p->f[i])->match, 0, FR_PRE, t, tm, NONE);
}

/* ---- setjmp and longjmp ------------------------------------------------- */

/* setjmp and longjmp (runtime/setjmps.c, interpose.c): a SET of key K
 * records where the running context's stack is (the setjmp's caller is its
 * top frame); a LONG of K resumes there.  In the same context, the frames
 * above that one were left by the jump: they end at it (their returns are
 * missing), and what follows nests under the setjmp's caller -- without the
 * markers it nested under the frame that jumped, until a return below
 * revealed the jump.  In another, suspended context (coroutines switched by
 * setjmp/longjmp: QEMU's) the jump is a switch to that context: the running
 * one is suspended (under JMP_CTX_KEY | its number, where the next such
 * jump finds it), the other taken up and its frames above the setjmp's
 * left.  A jump to a SET of the running context whose frame has returned
 * starts a new context (a stack entered the sigaltstack way).  A LONG whose
 * SET the ring does not hold (or made in another context whose frame is
 * gone) changes nothing: as before, the next return below shows the jump. */

static void jmp_set(struct replay *r, uint64_t key)
{
    uint32_t v = hm_get(&r->jmp_index, key, 0);
    if (v == HMAP_NONE) {
        r->jsets = xgrow(r->jsets, &r->jsetcap, r->njsets + 1, sizeof *r->jsets);
        v = (uint32_t)r->njsets++;
        if (hm_put(&r->jmp_index, key, 0, v) != 0)
            xalloc_die();
    }
    struct jset *j = &r->jsets[v];
    j->ctx = r->ctx_id;
    j->depth = r->n > UINT32_MAX ? UINT32_MAX : (uint32_t)r->n;
    j->top_idx = r->n ? r->stk[r->n - 1].call_idx : NONE;
    j->top_func = r->n ? r->stk[r->n - 1].func : 0;
    j->top_addr = r->n ? r->stk[r->n - 1].addr : 0;
    j->top_flags = r->n ? r->stk[r->n - 1].flags & (FR_ROT | FR_ROTK) : 0;
}

/* is j's frame still open on the stack stk (n frames)? */
static int jset_open(const struct jset *j, const struct frame *stk, size_t n)
{
    if (j->depth > n)
        return 0;
    return !j->depth || (stk[j->depth - 1].call_idx == j->top_idx && stk[j->depth - 1].func == j->top_func);
}

/* (t, tm, q, hi: the LONG's time, quality and latest time, close_out_k's) */
static void jmp_long(struct replay *r, uint64_t key, uint64_t idx, int64_t t, int64_t tm, int q, int64_t hi)
{
    uint32_t v = hm_get(&r->jmp_index, key, 0);
    if (v == HMAP_NONE)
        return;
    const struct jset j = r->jsets[v];
    if (j.ctx != r->ctx_id) {
        const struct rctx *c = ctx_by_id(r, j.ctx);
        if (!c || !jset_open(&j, c->stk, c->n))
            return;
        ctx_store(r, JMP_CTX_KEY | r->ctx_id, idx, t, tm, t);
        ctx_resumed(r, ctx_by_id(r, j.ctx), t); /* (ctx_store may have moved it) */
    } else if (!jset_open(&j, r->stk, r->n)) {
        /* a jump into a frame that returned: the code after its setjmp goes
         * on where the frame was, as a new context -- how a stack made with
         * sigaltstack is entered (a signal handler run on it saves its place
         * and returns: QEMU's and GNU Pth's coroutines).  That frame's
         * function runs again there: the new stack's first frame, from the
         * jump (SL_RESUMED) */
        ctx_store(r, JMP_CTX_KEY | r->ctx_id, idx, t, tm, t);
        r->ctx_id = ++r->nids;
        r->ctx_pre = CTX_FRESH;
        if (j.depth) {
            unsigned fl = j.top_flags | (q == EV_EXACT ? FR_EXACT : q == EV_LOOSE ? FR_LOOSE : 0);
            struct frame *fr = push(r, j.top_func, sym_func(r->d->sym, j.top_func)->match, j.top_addr, fl, t, tm,
                                    idx);
            if (!r->discovery && fr->slice >= 0)
                r->sl[fr->slice].flags |= SL_RESUMED;
        }
        return;
    }
    while (r->n > j.depth)
        pop(r, t, tm, SL_ABANDONED | SL_JUMPED, q, hi);
}

/* the pending longjmp happened: an event came after it (a thread's events
 * that end with a longjmp's marker end before the jump: the process died in
 * it -- glibc's __longjmp_chk aborts a jump into a frame that is gone -- and
 * its stack is still the one that jumped) */
static void jmp_happened(struct replay *r)
{
    r->ctx_mark = 0;
    jmp_long(r, r->jp_key, r->jp_idx, r->jp_t, r->jp_tm, r->jp_q, r->jp_hi);
}

/* an event in the first page (FT_MARKER_PAGE) other than a landing pad's:
 * a context marker, one of its key's digits, or out of a sequence (the
 * ring's window starts inside one): nothing */
static void event_marker(struct replay *r, uint64_t word, uint64_t addr, uint64_t idx, int64_t t, int64_t tm)
{
    int catch = (word & FT_F_CATCH) == FT_F_CATCH;
    if (r->ctx_mark == CTX_JMP_PENDING)
        jmp_happened(r);
    if (catch && (addr == FT_CTX_SAVE_ADDR || addr == FT_CTX_RESUME_ADDR || addr == FT_JMP_SET_ADDR ||
                  addr == FT_JMP_LONG_ADDR)) {
        if (r->crun)
            catch_end(r); /* (not a catch: the run before it ended) */
        r->ctx_mark = addr == FT_CTX_SAVE_ADDR     ? CTX_SAVE
                      : addr == FT_CTX_RESUME_ADDR ? CTX_RESUME
                      : addr == FT_JMP_SET_ADDR    ? CTX_JMP_SET
                                                   : CTX_JMP_LONG;
        r->ctx_key = 0;
        r->ctx_nd = 0;
        return;
    }
    if (r->ctx_mark && word == addr && addr >= FT_CTX_DIGIT_BASE) { /* a digit: a call item */
        r->ctx_key |= ((addr - FT_CTX_DIGIT_BASE) >> 2) << (FT_CTX_DIGIT_BITS * r->ctx_nd);
        if (++r->ctx_nd < FT_CTX_DIGITS)
            return;
        int m = r->ctx_mark;
        r->ctx_mark = 0;
        if (m == CTX_SAVE)
            ctx_save(r, r->ctx_key, idx, t, tm);
        else if (m == CTX_RESUME)
            ctx_resume(r, r->ctx_key, idx, t, tm, r->mark_hi_m);
        else if (m == CTX_JMP_SET)
            jmp_set(r, r->ctx_key);
        else { /* (applied when the next event comes: jmp_happened) */
            r->ctx_mark = CTX_JMP_PENDING;
            r->jp_key = r->ctx_key;
            r->jp_idx = idx;
            r->jp_t = t;
            r->jp_tm = tm;
            r->jp_q = r->cur_exact; /* (this event's: on_event set them) */
            r->jp_hi = r->cur_hi_m;
        }
        return;
    }
    r->ctx_mark = 0;
}

/* ---- events ------------------------------------------------------------ */

static inline void fc_ok(struct fcache *c)
{
    unsigned t = c->ignored ? 0 : 1u << FT_E8_CALL | 1u << FT_E8_RET | (c->rot != ROT_UNSET ? 1u << FT_E8_CALL_ROT : 0);
    c->okt = (uint8_t)(t << FC_OKT_PIECES | (c->seen ? t << FC_OKT_DISC : 0));
}

/* the cache entry of addr in the current generation's address space */
static __attribute__((noinline)) struct fcache *fc_fill(struct replay *r, struct fcache *c, uint64_t addr)
{
    struct dec *d = r->d;
    /* (a landing pad's marker is not an address to look up: catch_entry) */
    uint32_t f = addr == FT_LANDING_PAD_ADDR ? sym_special(d->sym, "[landing pad]")
                                             : sym_lookup(d->sym, r->g->space, addr);
    struct func *fn = sym_func(d->sym, f);
    c->addr = addr;
    c->f = f;
    c->match = fn->match;
    c->modfile = fn->modfile;
    c->ignored = fn->ignored;
    c->throws = fn->throws;
    c->seen = 0;
    c->rot = ROT_UNSET;
    c->fl0 = (uint8_t)(FR_EXACT | (c->throws ? FR_THROW : 0));
    fc_ok(c);
    return c;
}

/* the cache's slot of addr: Fibonacci hashing (a multiplication; a
 * function's -pg call and return addresses, or functions 4 KiB apart, do
 * not meet in one slot any more often than others) */
static inline size_t fc_hash(uint64_t addr)
{
    return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> (64 - FC_BITS));
}

static inline struct fcache *fc_slot(const struct replay *r, uint64_t addr)
{
    return &r->fc[fc_hash(addr)];
}

static inline struct fcache *func_of(struct replay *r, uint64_t addr)
{
    struct fcache *c = fc_slot(r, addr);
    if (__builtin_expect(c->addr == addr, 1))
        return c;
    return fc_fill(r, c, addr);
}

/* the first event of the replay: the stack open at the ring start */
static __attribute__((noinline)) void first_event(struct replay *r, int64_t t, int64_t tm)
{
    struct dthread *th = r->th;
    r->prev_ns = t;
    r->prev_m = tm;
    if (r->discovery) {
        th->first_ns = t;
    } else if (th->lost_older && r->emitting && !r->calls && r->out->ops->instant) {
        char msg[128];
        snprintf(msg, sizeof msg, "ring starts here (older events %s)", dec_lost_why(th));
        r->out->ops->instant(r->out, r->d, th, t, msg, NULL, 0);
    }
    start(r, t, tm);
}

/* catches, returns that do not close the top frame, bit-62 returns */
static __attribute__((noinline)) void event_rare(struct replay *r, uint64_t word, uint32_t f, int64_t t, int64_t tm,
                                                 int exact)
{
    struct dec *d = r->d;
    struct dthread *th = r->th;
    struct func *fn = sym_func(d->sym, f);
    if (word & FT_F_RET) { /* not the top frame's return (on_event) */
        /* Without symbols a -pg return (its address is the __return__ call's,
         * near the end of the function) cannot be told apart from any other
         * function's: it closes the innermost frame if that is a -pg call (an
         * -finstrument-functions call, bit 61, logs its return with the
         * function's address: those still pair by address). */
        long k = -2;
        if (r->n && r->stk[r->n - 1].match != fn->match && r->pair_nesting &&
            !(r->stk[r->n - 1].flags & (FR_ROT | FR_PRE))) {
            /* ... unless it is the return of an open bit-61 call (same
             * address as its call: an exception unwound the frames above) */
            k = r->nrot ? find(r, fn->match, r->n) : -1;
            if (k < 0 || !(r->stk[k].flags & FR_ROT)) {
                pop(r, t, tm, 0, exact, r->cur_hi_m);
                return;
            }
        }
        if (r->n && r->stk[r->n - 1].match == fn->match) {
            pop(r, t, tm, 0, exact, r->cur_hi_m);
            return;
        }
        if (k == -2)
            k = find(r, fn->match, r->n);
        if (k >= 0) {
            if (!abandon_above(r, (size_t)k) && r->discovery)
                th->mismatches++;
            pop(r, t, tm, 0, exact, r->cur_hi_m);
            return;
        }
        /* orphan return: nothing open survives it, in both passes -- in
         * emission it is inconsistent with discovery (more orphans than
         * MAX_PRE, names from the wrong binary), and calls whose returns
         * never match would pile up, every find() walking them (quadratic) */
        while (r->n)
            pop(r, r->prev_ns, r->prev_m, SL_ABANDONED, EV_DENSE, r->prev_m);
        if (r->discovery) {
            th->orphans++;
            pre_add(r, f);
        } else {
            th->unnamed++;
        }
        return;
    }
    /* FT_F_RET_WITH_CALLER */
    if (r->discovery)
        th->nrets++;
    if (r->n) {
        pop(r, t, tm, 0, exact, r->cur_hi_m);
        if (r->n && r->stk[r->n - 1].match != fn->match) {
            long k = find(r, fn->match, r->n);
            if (k >= 0)
                abandon_above(r, (size_t)k);
        }
    } else if (r->discovery) {
        th->orphans++;
        if (r->expect != HMAP_NONE)
            pre_add(r, r->expect);
        else
            th->unnamed++;
    }
    r->expect = f;
}

/* the frame flags of a call of c's function from its bit 61 (cached) */
static __attribute__((noinline)) unsigned rot_flags(struct replay *r, struct fcache *c)
{
    struct func *fn = sym_func(r->d->sym, c->f);
    /* bit 61: the -finstrument-functions hooks set it for every call; only
     * gcc's C++ code really logs the return when an exception unwinds it */
    unsigned rot = 0;
    if (fn->unknown)
        rot = FR_ROT; /* nothing to tell: trusted */
    else if (fn->unwind_exit ? fn->unwind_exit == 1 : sym_exit_on_unwind(r->d->sym, c->f))
        rot = FR_ROT | FR_ROTK;
    c->rot = (uint8_t)rot;
    fc_ok(c);
    return rot;
}

/* a catch entry (one of a run: catch_entry) */
static __attribute__((noinline)) void event_catch(struct replay *r, uint64_t word, uint32_t f, int64_t t, int64_t tm,
                                                  int exact)
{
    catch_entry(r, sym_func(r->d->sym, f), f, word & FT_ADDR_MASK, t, tm, exact);
}

/* an event's time: *tm its measured time (not before the generation's start
 * for this thread), the result its own ns (after the previous event's:
 * each event of a thread at its own ns, no ambiguous nesting) */
/* an event measured at tm after one at last_ns: its own ns (one after the
 * previous event's if not later) */
static ALWAYS_INLINE int64_t step_ns(int64_t tm, int64_t last_ns)
{
    return tm <= last_ns ? last_ns + 1 : tm;
}

static ALWAYS_INLINE int64_t step_time(const struct ft_clock *clk, int64_t gstart, uint64_t tsc, int64_t last_ns,
                                       int64_t *tm)
{
    int64_t t = ft_clock_ns(clk, tsc);
    if (t < gstart)
        t = gstart;
    *tm = t;
    return step_ns(t, last_ns);
}

/* the measured ns an event measured at tm can have been at: [*lo, *hi] (a
 * loose bracket's, tm included; else tm) */
static ALWAYS_INLINE void ev_bracket(const struct ft_clock *clk, const struct ev *e, int64_t tm, int64_t *lo,
                                     int64_t *hi)
{
    *lo = *hi = tm;
    if (__builtin_expect(e->q == EV_LOOSE, 0)) {
        const int64_t l = ft_clock_ns(clk, e->lo), h = ft_clock_ns(clk, e->hi);
        *lo = l < tm ? l : tm;
        *hi = h > tm ? h : tm;
    }
}

static ALWAYS_INLINE void on_event(struct replay *r, const struct ev *e, const int k)
{
    const int disc = IS_DISC(r, k);
    struct dthread *th = r->th;
    const struct dgen *g = r->g;
    uint64_t word = e->word, tsc = e->tsc;
    int exact = e->q;
    uint64_t addr = word & FT_ADDR_MASK;
    int64_t tm;
    const int64_t t = step_time(&g->clk, r->gstart, tsc, r->last_ns, &tm);
    if (disc && tm <= r->last_ns && tsc + 1 < r->last_tsc)
        th->out_of_order++;
    r->last_tsc = tsc;
    r->prev_ns = r->last_ns;
    r->last_ns = t;
    if (!disc) { /* (discovery pops write nothing) */
        r->prev_m = r->last_m;
        r->last_m = tm;
        r->prev_q = r->cur_exact;
        r->cur_exact = exact;
        ev_bracket(&g->clk, e, tm, &r->cur_lo_m, &r->cur_hi_m);
    }
    if (__builtin_expect(!r->started, 0))
        first_event(r, t, tm);
    if (disc) {
        th->nevents++;
        th->last_ns = t;
        th->last_mns = tm;
    }
    if (__builtin_expect(addr < FT_MARKER_PAGE, 0) && addr != FT_LANDING_PAD_ADDR) {
        ev_bracket(&g->clk, e, tm, &r->mark_lo_m, &r->mark_hi_m);
        event_marker(r, word, addr, e->idx, t, tm);
        return;
    }
    if (__builtin_expect(r->ctx_mark, 0)) {
        if (r->ctx_mark == CTX_JMP_PENDING)
            jmp_happened(r);
        r->ctx_mark = 0; /* (else a marker without its key) */
    }
    if (__builtin_expect((word & FT_F_CATCH) == FT_F_CATCH, 0)) {
        event_catch(r, word, func_of(r, addr)->f, t, tm, exact);
        return;
    }
    struct fcache *c = func_of(r, addr);
    uint32_t f = c->f;
    if (disc && !c->seen) { /* a catch names any function on the stack, traced or not: not seen */
        sym_func(r->d->sym, f)->seen = 1;
        c->seen = 1;
        fc_ok(c);
    }
    if (__builtin_expect(r->crun, 0))
        catch_end(r);
    if (c->ignored)
        return;
    if (word & (FT_F_RET | FT_F_RET_WITH_CALLER)) {
        /* the top frame's return (the others: event_rare); without symbols
         * a -pg return closes the innermost -pg frame (event_rare) */
        if (word & FT_F_RET) {
            if (disc)
                th->nrets++;
            if (r->n && (r->stk[r->n - 1].match == c->match ||
                         (r->pair_nesting && !r->nrot && !(r->stk[r->n - 1].flags & (FR_ROT | FR_PRE))))) {
                pop_k(r, t, tm, 0, exact, r->cur_hi_m, k);
                return;
            }
        }
        event_rare(r, word, f, t, tm, exact);
        return;
    }
    if (disc)
        th->ncalls++;
    unsigned rot = 0;
    if (word & FT_F_CALL_RET_ON_THROW)
        rot = __builtin_expect(c->rot != ROT_UNSET, 1) ? c->rot : rot_flags(r, c);
    struct frame *nf = push_k(r, f, c->match, addr,
                              rot | (c->throws ? FR_THROW : 0) | (exact == EV_EXACT ? FR_EXACT : 0) |
                                  (exact == EV_LOOSE ? FR_LOOSE : 0) | (is_live(th, e->idx) ? FR_LIVE : 0),
                              t, tm, e->idx, k);
    if (!disc)
        nf->mlo = r->cur_lo_m;
}

/* The fast loops (discovery, VIEW_PIECES emission): the common events -- a
 * call, or the top frame's return, of a function in the cache, not ignored,
 * outside a catch run, in a thread without frames proven live (th->live:
 * every call is looked up there), not a measuring replay, room for the
 * frame (and its slice) -- with the replay's state in locals: the
 * compiler cannot keep it in registers (every store to a frame, a slice or
 * the thread's counters may alias it).  They stop before any other event,
 * which goes through on_event; for the events they take they do exactly
 * what on_event does (--reference-replay: every event through on_event, to
 * check that). */
static int fast_ok(const struct replay *r)
{
    return r->started && !r->crun && !r->ctx_mark && !r->th->nlive && !r->measuring && !r->d->o.reference_replay;
}

/* What a fast loop needs of the generation's clock, in locals: ft_clock_ns's
 * common case (a span up to lim in one multiplication); an event outside
 * it is left to on_event */
struct fclk {
    uint64_t ref_tsc, lim, mult;
    int64_t ref_ns;
};

static ALWAYS_INLINE struct fclk fclk_of(const struct ft_clock *c)
{
    return (struct fclk){c->ref_tsc, c->fast_lim, (uint64_t)c->mult, c->ref_ns};
}

static ALWAYS_INLINE int64_t fclk_ns(const struct fclk *k, uint64_t d)
{
    return k->ref_ns + (int64_t)(uint64_t)(((unsigned __int128)d * k->mult) >> 64);
}

/* a return of function match closes the top frame of stk[sn] as on_event
 * pops it: its function's, or without symbols (pair: r->pair_nesting, a -pg
 * return closes the innermost -pg frame) any frame but a bit-61 or
 * ring-start one while no bit-61 frame is open (nrot 0) */
static ALWAYS_INLINE int fast_closes(const struct frame *stk, size_t sn, uint32_t match, int pair, size_t nrot)
{
    return sn && (stk[sn - 1].match == match || (pair && !nrot && !(stk[sn - 1].flags & (FR_ROT | FR_PRE))));
}

/* the cache entry of a common event's function, or NULL: another kind of
 * event (catches and bit-62 returns have bit 62), not in the cache, not an
 * event of a kind okt allows (FC_OKT_PIECES, FC_OKT_DISC: ignored, a bit-61
 * call whose flags are not known yet, not seen yet), a return that does not
 * close the top frame (fast_closes), a call without room */
static ALWAYS_INLINE const struct fcache *fast_func(const struct fcache *fc, uint64_t word, unsigned okt,
                                                    const struct frame *stk, size_t sn, size_t cap, int pair,
                                                    size_t nrot)
{
    uint64_t addr = word & FT_ADDR_MASK;
    const struct fcache *c = &fc[fc_hash(addr)];
    /* its kind (fcache.okt's bit): a return (whatever its bit 61: none is
     * written with one), else a call, bit 61 telling which */
    const unsigned tag = (word & FT_F_RET) ? FT_E8_RET : (unsigned)(word >> 60) & FT_E8_CALL_ROT;
    if (c->addr != addr || !((c->okt >> (tag + okt)) & 1u) || (word & FT_F_RET_WITH_CALLER))
        return NULL;
    if (word & FT_F_RET)
        return fast_closes(stk, sn, c->match, pair, nrot) ? c : NULL;
    return sn == cap ? NULL : c;
}

/* a call's frame flags (on_event's, without FR_LIVE: no frame is live in the
 * fast loops) */
static ALWAYS_INLINE unsigned fast_flags(const struct fcache *c, uint64_t word, int q)
{
    return ((word & FT_F_CALL_RET_ON_THROW) ? c->rot : 0) | (c->throws ? FR_THROW : 0) |
           (q == EV_EXACT ? FR_EXACT : 0) | (q == EV_LOOSE ? FR_LOOSE : 0);
}

/* a pushed call's frame (its stack depth: sn frames) starts slice i, sp, at
 * t (measured: tm): push_k's and open_out_k's, for a call of this
 * generation (t >= gstart) */
static ALWAYS_INLINE void fast_open(struct frame *fr, struct slice *sp, size_t i, size_t sn, int64_t t, int64_t tm)
{
    fr->start = t;
    fr->mstart = tm;
    fr->mlo = tm;
    fr->cell = NONE32;
    fr->slice = (int64_t)i;
    sp->func = fr->func;
    sp->depth = (uint16_t)(sn - 1 > 65535 ? 65535 : sn - 1);
    sp->flags = SL_PENDING;
    sp->start = sp->end = t;
}

/* a return closes the slice sl[fr->slice] of frame fr at t (measured: tm),
 * with the flags unm (SL_UNMEASURED, SL_BOUND; the bound into slub): pop_k's
 * and close_out_k's */
static ALWAYS_INLINE void fast_close(struct frame *fr, struct slice *sl, int64_t *slub, int64_t *slcd, int64_t t,
                                     int64_t tm, unsigned unm)
{
    struct slice *sp = &sl[fr->slice];
    const int64_t end = t < fr->start ? fr->start : t, ub = tm - fr->mlo;
    sp->end = end < sp->start ? sp->start : end;
    sp->flags = (uint16_t)((sp->flags & ~SL_PENDING) | unm);
    if (__builtin_expect(sp->flags & SL_OWN_CDUR, 0)) /* (opened clipped, or resumed) */
        slcd[fr->slice] = end - fr->start;
    if (unm & SL_BOUND)
        slub[fr->slice] = ub > sp->end - sp->start ? ub : sp->end - sp->start;
    fr->slice = -1;
}

/* a sampled-time return's flags: SL_UNMEASURED unless both ends of its
 * frame fr were stamped (its end's quality q), SL_BOUND if it started in a
 * loose bracket */
static ALWAYS_INLINE unsigned fast_unm(const struct frame *fr, int q)
{
    unsigned unm = !(fr->flags & FR_EXACT) || q != EV_EXACT ? SL_UNMEASURED : 0;
    if (unm && !(fr->flags & FR_PRE) && (fr->flags & FR_LOOSE))
        unm |= SL_BOUND;
    return unm;
}

/* the counts of a fast loop's run of n events, calls and returns only,
 * that moved the stack from sn0 to sn frames */
static ALWAYS_INLINE uint64_t fast_calls(size_t n, size_t sn0, size_t sn)
{
    return (uint64_t)(n + sn - sn0) / 2;
}

/* a fast loop's event at tsc (in the clock's span): its measured ns, not
 * before the generation's start for this thread (step_time's tm) */
static ALWAYS_INLINE int64_t fast_tm(const struct fclk *k, int64_t gstart, uint64_t tsc)
{
    const int64_t tm = fclk_ns(k, tsc - k->ref_tsc);
    return tm < gstart ? gstart : tm;
}

/* disc_times's steps over items [x, j) of a sampled run's bracket b */
static ALWAYS_INLINE void disc_times4(const struct fclk *kk, int64_t gstart, const struct ev4_brk *b, size_t x,
                                      size_t j, int64_t *last_ns, int64_t *prev_ns, uint64_t *last_tsc,
                                      uint64_t *ooo)
{
    uint64_t rm, qt = ev4_qt(b, x, &rm);
    const uint64_t N = b->N, dq = b->dq, dr = b->dr;
    if (j - x >= 3 && fclk_ns(kk, dq) - kk->ref_ns >= 1) {
        /* items at least 1 ns apart (each step of the interpolation dq
         * ticks or more): once the items from x + 1 on are past gstart,
         * their stepped times have a closed form.  Item x as below (the
         * only one that can be out of order: the times after it do not
         * decrease), then s(y) = max(s(x) + y - x, tm(y)) for y > x (by
         * induction: tm(y + 1) >= tm(y) + 1) */
        uint64_t rm1 = rm;
        const uint64_t t1 = b->ta + ev4_step(qt, &rm1, dq, dr, N);
        if (fclk_ns(kk, t1 - kk->ref_tsc) >= gstart) {
            const uint64_t tsc = b->ta + qt;
            const int64_t tm = fast_tm(kk, gstart, tsc);
            *ooo += tm <= *last_ns && tsc + 1 < *last_tsc;
            const int64_t si = step_ns(tm, *last_ns);
            const uint64_t tp = b->ta + ev4_qt(b, j - 2, &rm), tl = b->ta + ev4_qt(b, j - 1, &rm);
            const int64_t mp = fast_tm(kk, gstart, tp), ml = fast_tm(kk, gstart, tl);
            const int64_t sp = si + (int64_t)(j - 2 - x), sl = si + (int64_t)(j - 1 - x);
            *prev_ns = mp > sp ? mp : sp;
            *last_ns = ml > sl ? ml : sl;
            *last_tsc = tl;
            return;
        }
    }
    for (; x < j; x++) {
        const uint64_t tsc = b->ta + qt;
        qt = ev4_step(qt, &rm, dq, dr, N);
        const int64_t tm = fast_tm(kk, gstart, tsc);
        *ooo += tm <= *last_ns && tsc + 1 < *last_tsc;
        *prev_ns = *last_ns;
        *last_ns = step_ns(tm, *last_ns);
        *last_tsc = tsc;
    }
}

/* discovery's second pass over events [i, j) that its first pass took (all
 * in the clock's span): their times stepped as on_event steps them, then
 * the thread's counts.  Their TSCs: a batch's (e), else an exact run's
 * (run), else a sampled run's (run4: interpolated, bracket by bracket). */
static ALWAYS_INLINE void disc_times(struct replay *r, const struct fclk *k, const struct ev *e,
                                     const struct ev8_run *run, const struct ev4_run *run4, size_t i, size_t j,
                                     size_t sn0)
{
    struct dthread *th = r->th;
    const struct fclk kk = *k; /* (in registers) */
    const int64_t gstart = r->gstart;
    int64_t last_ns = r->last_ns, prev_ns = r->prev_ns;
    uint64_t last_tsc = r->last_tsc, ooo = 0;
    if (run4) {
        for (size_t x = i, bi = ev4_brk_at(run4, i); x < j; bi++) {
            const size_t y = run4->b[bi].end < j ? run4->b[bi].end : j;
            disc_times4(&kk, gstart, &run4->b[bi], x, y, &last_ns, &prev_ns, &last_tsc, &ooo);
            x = y;
        }
    }
    for (size_t x = i; !run4 && x < j; x++) {
        const uint64_t tsc = e ? e[x].tsc : run->thi_sh | (ev8_item(run, x) >> 32);
        const int64_t tm = fast_tm(&kk, gstart, tsc);
        ooo += tm <= last_ns && tsc + 1 < last_tsc;
        prev_ns = last_ns;
        last_ns = step_ns(tm, last_ns);
        last_tsc = tsc;
    }
    const uint64_t ne = j - i, calls = fast_calls(ne, sn0, r->n);
    r->last_ns = last_ns;
    r->prev_ns = prev_ns;
    r->last_tsc = last_tsc;
    th->out_of_order += ooo;
    th->ncalls += calls;
    th->nrets += ne - calls;
    th->nevents += ne;
    th->last_ns = last_ns;
    th->last_mns = fast_tm(&kk, gstart, last_tsc);
}

/* where a VIEW_PIECES fast loop that took events stops: the replay's state
 * as on_event leaves it -- the stack, the slices, the last two events' own
 * and measured ns and qualities (tsc1, q1: the last one's; tsc2, q2: the
 * one before, if two == 1) */
static ALWAYS_INLINE void pieces_end(struct replay *r, const struct fclk *k, size_t sn, size_t nrot, size_t nsl,
                                     int64_t last_ns, int64_t prev_ns, uint64_t tsc1, int q1, int two, uint64_t tsc2,
                                     int q2)
{
    const int64_t m1 = fast_tm(k, r->gstart, tsc1);
    if (two) {
        r->prev_m = fast_tm(k, r->gstart, tsc2);
        r->prev_q = q2;
    } else {
        r->prev_m = r->last_m;
        r->prev_q = r->cur_exact;
    }
    r->last_m = m1;
    r->cur_exact = q1;
    r->cur_lo_m = r->cur_hi_m = m1;
    r->n = sn;
    r->nrot = nrot;
    r->last_ns = last_ns;
    r->prev_ns = prev_ns;
    r->last_tsc = tsc1;
    r->nsl = nsl;
}

/* room for n more frames before a fast loop (each event pushes at most one;
 * the loops stop where the room ends, on_event makes more: at most
 * FRAMES_AHEAD are made here, the stack stays as deep as the thread's) */
#define FRAMES_AHEAD 256u
static void reserve_frames(struct replay *r, size_t n)
{
    if (n > FRAMES_AHEAD)
        n = FRAMES_AHEAD;
    if (r->cap - r->n >= n)
        return;
    while (r->cap - r->n < n)
        r->cap = r->cap ? r->cap * 2 : 256;
    r->stk = xrealloc(r->stk, r->cap * sizeof *r->stk);
}

/* ... and for n more slices */
static void reserve_slices(struct replay *r, size_t n)
{
    while (r->slcap - r->nsl < n)
        grow_slices(r);
}

/* A batch's, compiled on its own and in two passes over its events, each
 * with few enough values for the registers (as disc_run8): the stack up to
 * the first event the loop does not take, then their times. */
static __attribute__((noinline)) size_t disc_fast_ev(struct replay *r, const struct ev *e, size_t i, size_t n)
{
    const struct fclk k = fclk_of(&r->g->clk);
    reserve_frames(r, n - i);
    const size_t sn0 = r->n, i0 = i;
    struct frame *const stk = r->stk;
    const struct fcache *const fc = r->fc;
    const int pair = r->pair_nesting;
    const size_t cap = r->cap;
    size_t sn = sn0, nrot = r->nrot;
    for (; i < n; i++) {
        const uint64_t word = e[i].word;
        /* (discovery marks a function seen at its first event: on_event) */
        const struct fcache *c = fast_func(fc, word, FC_OKT_DISC, stk, sn, cap, pair, nrot);
        if (!c || e[i].tsc - k.ref_tsc > k.lim)
            break;
        if (word & FT_F_RET) {
            nrot -= (stk[--sn].flags & FR_ROT) != 0;
        } else {
            const unsigned fl = fast_flags(c, word, e[i].q);
            struct frame *fr = &stk[sn++];
            fr->func = c->f;
            fr->match = c->match;
            fr->flags = fl;
            fr->addr = word & FT_ADDR_MASK;
            fr->call_idx = e[i].idx;
            nrot += (fl & FR_ROT) != 0;
        }
    }
    r->n = sn;
    r->nrot = nrot;
    if (i > i0)
        disc_times(r, &k, e, NULL, NULL, i0, i, sn0);
    return i;
}

static void on_events_disc(void *ctx, const struct ev *e, size_t n)
{
    struct replay *r = ctx;
    size_t i = 0;
    while (i < n) {
        if (fast_ok(r)) {
            i = disc_fast_ev(r, e, i, n);
            if (i == n)
                break;
        }
        on_event(r, &e[i++], K_DISC);
    }
}

/* the VIEW_PIECES fast loop over events [i, n) of a batch; sampled: the
 * trace's time is sampled (d->sampled, a constant in each of its copies);
 * returns where it stopped */
static ALWAYS_INLINE size_t pieces_fast(struct replay *r, const struct ev *e, size_t i, size_t n, const int sampled)
{
    const struct fclk k = fclk_of(&r->g->clk);
    struct frame *const stk = r->stk;
    const struct fcache *const fc = r->fc;
    const int pair = r->pair_nesting;
    const size_t cap = r->cap, i0 = i;
    size_t sn = r->n, nrot = r->nrot, nsl = r->nsl;
    const int64_t gstart = r->gstart;
    int64_t last_ns = r->last_ns, prev_ns = r->prev_ns;
    struct slice *const sl = r->sl;
    const size_t slcap = r->slcap;
    /* (a switch is never in this loop: the context stays) */
    uint32_t *const slctx = r->ctx_on ? r->slctx : NULL;
    const uint32_t cid = r->ctx_id;
    for (; i < n; i++) {
        const struct ev *v = &e[i];
        const uint64_t word = v->word, dd = v->tsc - k.ref_tsc;
        const int q = sampled ? v->q : EV_EXACT;
        const struct fcache *c = fast_func(fc, word, FC_OKT_PIECES, stk, sn, cap, pair, nrot);
        /* (a loose bracket: on_event's bounds; a call: room for its slice) */
        if (!c || dd > k.lim || (sampled && q == EV_LOOSE) || (!(word & FT_F_RET) && nsl == slcap))
            break;
        const int64_t tm = fast_tm(&k, gstart, v->tsc); /* step_time */
        const int64_t t = step_ns(tm, last_ns);
        prev_ns = last_ns;
        last_ns = t;
        if (word & FT_F_RET) { /* pop_k, close_out_k (the end's bracket is tm's own) */
            struct frame *fr = &stk[--sn];
            nrot -= (fr->flags & FR_ROT) != 0;
            if (fr->slice >= 0)
                fast_close(fr, sl, r->slub, r->slcd, t, tm, sampled ? fast_unm(fr, q) : 0);
        } else { /* push_k, open_out_k (t >= gstart: not from the previous generation) */
            const unsigned fl = fast_flags(c, word, q);
            struct frame *fr = &stk[sn++];
            fr->func = c->f;
            fr->match = c->match;
            fr->flags = fl;
            fr->addr = word & FT_ADDR_MASK;
            fr->call_idx = v->idx;
            nrot += (fl & FR_ROT) != 0;
            fast_open(fr, &sl[nsl], nsl, sn, t, tm);
            if (slctx)
                slctx[nsl] = cid;
            nsl++;
        }
    }
    if (i > i0) {
        const int two = i - i0 >= 2;
        pieces_end(r, &k, sn, nrot, nsl, last_ns, prev_ns, e[i - 1].tsc, sampled ? e[i - 1].q : EV_EXACT, two,
                   two ? e[i - 2].tsc : 0, two && sampled ? e[i - 2].q : EV_EXACT);
    }
    return i;
}

/* (a batch's: compiled on its own, the registers are all its loop's) */
static __attribute__((noinline)) size_t pieces_fast_ev(struct replay *r, const struct ev *e, size_t i, size_t n)
{
    return pieces_fast(r, e, i, n, 0);
}

static __attribute__((noinline)) size_t pieces_fast_ev_sampled(struct replay *r, const struct ev *e, size_t i,
                                                               size_t n)
{
    return pieces_fast(r, e, i, n, 1);
}

static void on_events_pieces(void *ctx, const struct ev *e, size_t n)
{
    struct replay *r = ctx;
    const int sampled = r->d->sampled;
    size_t i = 0;
    while (i < n) {
        if (fast_ok(r)) {
            i = sampled ? pieces_fast_ev_sampled(r, e, i, n) : pieces_fast_ev(r, e, i, n);
            if (i == n)
                break;
        }
        on_event(r, &e[i++], K_PIECES);
    }
}

/* ---- runs of plain exact items, the common case in its own loops --------
 * A run (struct ev8_run) whose words' flags come from their tags alone
 * (address high half below 2^61) is replayed by loops that know it: no
 * bit-62 word, a bit-61 word is a tagged call, the address needs no mask.
 * They do what the batch loops (disc_fast_ev, pieces_fast) do for its
 * events, and stop where those would go to on_event (the caller hands that
 * event to it): with symbols the loops of the sampled runs, by pairs, over
 * the items' low halves (disc_run8_pairs, pieces_run8_pairs, below); without
 * (pair nesting) disc_run8 and pieces_run8. */
_Static_assert(FR_ROT == 1, "the run loops count FR_ROT frames by flags & 1");

/* the item's fcache entry if the run loops take it (okt: FC_OKT_PIECES or
 * FC_OKT_DISC; a call needs room for its frame: cap; a return must close
 * the top frame: fast_closes, pair and nrot), else NULL */
static ALWAYS_INLINE const struct fcache *run8_func(const struct fcache *fc, uint64_t addr, uint64_t tag, unsigned okt,
                                                    const struct frame *stk, size_t sn, size_t cap, int pair,
                                                    size_t nrot)
{
    const struct fcache *c = &fc[fc_hash(addr)];
    if (c->addr != addr || !((c->okt >> (tag + okt)) & 1u))
        return NULL;
    if (tag == FT_E8_RET ? !fast_closes(stk, sn, c->match, pair, nrot) : sn == cap)
        return NULL;
    return c;
}

/* the run loops' cache entry of item w (a sampled run's), if they take its
 * kind (okt: FC_OKT_PIECES, FC_OKT_DISC), else NULL; *tag: its tag */
static ALWAYS_INLINE const struct fcache *run4_func(const struct fcache *fc, uint64_t ahi, uint32_t w, unsigned okt,
                                                    uint64_t *tag)
{
    const uint64_t addr = ahi | (w & FT_E8_ADDR_LO_MASK);
    const struct fcache *c = &fc[fc_hash(addr)];
    *tag = w & FT_E8_TAG_MASK;
    return c->addr == addr && ((c->okt >> (*tag + okt)) & 1u) ? c : NULL;
}

/* a call's frame (what discovery needs of it: pieces_run8 adds the times
 * and the slice), FR_ROT counted in *nrot; fl0: what it takes of the
 * entry's exact-call flags (~0u; a sampled run's call: ~FR_EXACT) */
/* the frame flags of a call (tag) of c's function in a run: what it takes
 * of the exact-call flags (fl0: ~0u; a sampled run's call: ~FR_EXACT) and a
 * bit-61 call's */
static ALWAYS_INLINE unsigned run_call_flags(const struct fcache *c, uint64_t tag, unsigned fl0)
{
    return (c->fl0 & fl0) | (tag == FT_E8_CALL_ROT ? c->rot : 0);
}

static ALWAYS_INLINE void run8_push(struct frame *fr, const struct fcache *c, uint64_t tag, uint64_t addr, uint64_t idx,
                                    size_t *nrot, unsigned fl0)
{
    const unsigned fl = run_call_flags(c, tag, fl0);
    fr->func = c->f;
    fr->match = c->match;
    fr->flags = fl;
    fr->addr = addr;
    fr->call_idx = idx;
    *nrot += fl & 1u;
}

/* pieces_run8's item measured at tm, a call of c's function (tag) at addr
 * or the return of the top frame: its time stepped (step_time: *last_ns,
 * *prev_ns), then pieces_fast's push or pop, with the stack's state (*sn
 * frames, *nrot FR_ROT ones) and the slices' (*nsl) in the loop's locals */
static ALWAYS_INLINE void run_piece(struct frame *stk, size_t *sn, size_t *nrot, struct slice *sl, int64_t *slcd,
                                    size_t *nsl, const struct fcache *c, uint64_t tag, uint64_t addr, uint64_t idx,
                                    int64_t tm, int64_t *last_ns, int64_t *prev_ns)
{
    const int64_t t = step_ns(tm, *last_ns);
    *prev_ns = *last_ns;
    *last_ns = t;
    if (tag == FT_E8_RET) {
        struct frame *fr = &stk[--*sn];
        *nrot -= fr->flags & 1u;
        if (fr->slice >= 0)
            fast_close(fr, sl, NULL, slcd, t, tm, 0);
    } else {
        struct frame *fr = &stk[(*sn)++];
        run8_push(fr, c, tag, addr, idx, nrot, ~0u);
        fast_open(fr, &sl[*nsl], *nsl, *sn, t, tm);
        ++*nsl;
    }
}

/* Discovery's run loop is two passes over the items, each with few values
 * to keep (the compiler keeps them in registers): the stack (run_stack), up
 * to the first item it does not take, then the times of the items taken
 * (disc_times). */

/* discovery's first pass: the pushes and pops of items [i, n) of an exact
 * run (p; address and TSC high halves ahi, thi) -- frames without times --
 * up to the first item the run loops do not take: not plain, its function
 * not in the cache or not as okt asks (FC_OKT_*), a return that does not
 * close the top frame, a call without room, or a time outside the clock's
 * span; returns where it stopped */
static ALWAYS_INLINE size_t run_stack(struct replay *r, const uint8_t *p, uint64_t ahi, uint64_t thi, uint64_t idx0,
                                      size_t i, size_t n, const struct fclk *k, unsigned okt, const int pair)
{
    const uint64_t ref_tsc = k->ref_tsc, lim = k->lim;
    struct frame *const stk = r->stk;
    const struct fcache *const fc = r->fc;
    const size_t cap = r->cap;
    size_t sn = r->n, nrot = r->nrot;
    for (; i < n; i++) {
        const uint64_t w = ev_ld8(p, i);
        __builtin_prefetch(p + 8 * i + 2048);
        const uint64_t tag = w & FT_E8_TAG_MASK, addr = ahi | (w & FT_E8_ADDR_LO_MASK);
        if (!w || tag == FT_E8_ESC || (thi | (w >> 32)) - ref_tsc > lim)
            break;
        const struct fcache *c = run8_func(fc, addr, tag, okt, stk, sn, cap, pair, nrot);
        if (!c)
            break;
        if (tag == FT_E8_RET)
            nrot -= stk[--sn].flags & 1u;
        else
            run8_push(&stk[sn++], c, tag, addr, idx0 + i, &nrot, ~0u);
    }
    r->n = sn;
    r->nrot = nrot;
    return i;
}

/* discovery: items [i, n) of the run, up to the first the run loop does not
 * take; returns how many it took */
static ALWAYS_INLINE size_t disc_run8(struct replay *r, const struct ev8_run *run, size_t i, const struct fclk *k,
                                      const int pair)
{
    reserve_frames(r, run->n - i);
    const size_t sn0 = r->n;
    const size_t j = run_stack(r, run->p, run->ahi_sh, run->thi_sh, run->idx0, i, run->n, k, FC_OKT_DISC, pair);
    if (j > i)
        disc_times(r, k, NULL, run, NULL, i, j, sn0);
    return j - i;
}

/* VIEW_PIECES, exact time, a thread that does not switch contexts: the same */
static ALWAYS_INLINE size_t pieces_run8(struct replay *r, const struct ev8_run *run, size_t i, const struct fclk *k,
                                        const int pair)
{
    reserve_frames(r, run->n - i);
    reserve_slices(r, run->n - i);
    const uint8_t *const p = run->p;
    const uint64_t ahi = run->ahi_sh, thi = run->thi_sh, idx0 = run->idx0;
    const struct fclk kk = *k; /* (in registers) */
    const int64_t gstart = r->gstart;
    struct frame *const stk = r->stk;
    struct slice *const sl = r->sl;
    const struct fcache *const fc = r->fc;
    const size_t n = run->n, i0 = i, cap = r->cap;
    size_t sn = r->n, nrot = r->nrot, nsl = r->nsl;
    int64_t last_ns = r->last_ns, prev_ns = r->prev_ns;
    for (; i < n; i++) {
        const uint64_t w = ev_ld8(p, i);
        __builtin_prefetch(p + 8 * i + 2048);
        const uint64_t tag = w & FT_E8_TAG_MASK, addr = ahi | (w & FT_E8_ADDR_LO_MASK);
        if (!w || tag == FT_E8_ESC)
            break;
        const struct fcache *c = run8_func(fc, addr, tag, FC_OKT_PIECES, stk, sn, cap, pair, nrot);
        if (!c)
            break;
        const uint64_t tsc = thi | (w >> 32);
        if (tsc - kk.ref_tsc > kk.lim)
            break;
        run_piece(stk, &sn, &nrot, sl, r->slcd, &nsl, c, tag, addr, idx0 + i, fast_tm(&kk, gstart, tsc), &last_ns,
                  &prev_ns);
    }
    if (i > i0) {
        const int two = i - i0 >= 2;
        pieces_end(r, k, sn, nrot, nsl, last_ns, prev_ns, thi | (ev_ld8(p, i - 1) >> 32), EV_EXACT, two,
                   two ? thi | (ev_ld8(p, i - 2) >> 32) : 0, EV_EXACT);
    }
    return i - i0;
}

/* each run loop compiled twice, noinline (its registers are all its loop's):
 * with symbols (a return closes its function's frame) and without
 * (r->pair_nesting: the innermost -pg frame), which a constant makes cost
 * the loops with symbols nothing (the exact runs' with symbols: by pairs,
 * disc_run8_sym and pieces_run8_sym below) */
#define RUN_LOOPS(name, run_t)                                                                                \
    static __attribute__((noinline)) size_t name##_sym(struct replay *r, const run_t *run, size_t i,        \
                                                       const struct fclk *k)                                \
    {                                                                                                        \
        return name(r, run, i, k, 0);                                                                        \
    }                                                                                                        \
    static __attribute__((noinline)) size_t name##_pair(struct replay *r, const run_t *run, size_t i,       \
                                                        const struct fclk *k)                               \
    {                                                                                                        \
        return name(r, run, i, k, 1);                                                                        \
    }
static __attribute__((noinline)) size_t disc_run8_pair(struct replay *r, const struct ev8_run *run, size_t i,
                                                       const struct fclk *k)
{
    return disc_run8(r, run, i, k, 1);
}

static __attribute__((noinline)) size_t pieces_run8_pair(struct replay *r, const struct ev8_run *run, size_t i,
                                                         const struct fclk *k)
{
    return pieces_run8(r, run, i, k, 1);
}

/* ---- runs of plain sampled items, the common case in its own loops ------
 * A sampled run (struct ev4_run: FT_FMT_SAMPLED4 calls and returns of dense
 * brackets, each closed by its stamped return, their times interpolated) is
 * replayed by loops that do what the batch loops do for its events: each
 * one's time its bracket's, stepped (ev4_step: a stamp's comes out exact),
 * every slice SL_UNMEASURED (no call is stamped). */

/* the end of a sampled run's items from i on (bracket bi) whose times are
 * in the clock's span: i if item i's is not, else up to the last bracket
 * whose stamp's is (the times increase) */
static ALWAYS_INLINE size_t run4_span_end(const struct fclk *k, const struct ev4_run *run, size_t i, size_t bi)
{
    if (ev4_tsc(run, i, bi) - k->ref_tsc > k->lim)
        return i;
    const struct ev4_brk *const b = run->b;
    if (b[run->nb - 1].ta + b[run->nb - 1].D - k->ref_tsc <= k->lim)
        return run->n;
    size_t lo = bi, hi = run->nb; /* the first bracket whose stamp is out of it */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (b[mid].ta + b[mid].D - k->ref_tsc <= k->lim)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > bi ? b[lo - 1].end : i;
}

/* run_stack for a sampled run: its items' own loop up to end (they need
 * no time check: run4_span_end), up to the room the stack has (the item
 * there goes to on_event, which makes more), with the stack as a pointer */
static ALWAYS_INLINE size_t stack4(struct replay *r, const struct ev4_run *run, size_t i, size_t end, const int pair,
                                   const int exact)
{
    const uint32_t *const p = run->p;
    const uint64_t ahi = run->ahi_sh, idx0 = run->idx0;
    const struct fcache *const fc = r->fc;
    struct frame *const base = r->stk, *top = base + r->n; /* the first free frame */
    const size_t n = i + (end - i < r->cap - r->n ? end - i : r->cap - r->n);
    size_t nrot = r->nrot;
    for (; i < n; i++) {
        uint64_t tag;
        const struct fcache *c = run4_func(fc, ahi, p[i], FC_OKT_DISC, &tag);
        if (!c)
            break;
        if (tag == FT_E8_RET) {
            if (!fast_closes(base, (size_t)(top - base), c->match, pair, nrot))
                break;
            top--;
            nrot -= top->flags & 1u;
        } else {
            run8_push(top++, c, tag, c->addr, idx0 + i, &nrot, exact ? ~0u : ~FR_EXACT);
        }
    }
    r->n = (size_t)(top - base);
    r->nrot = nrot;
    return i;
}

static inline size_t pc_hash(uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - PC_BITS));
}

/* the cache entry of sampled item w (address high half ahi) if the run
 * loops take its kind (okt), else NULL */
static ALWAYS_INLINE const struct fcache *func4(const struct fcache *fc, uint64_t ahi, uint32_t w, unsigned okt)
{
    uint64_t tag;
    return run4_func(fc, ahi, w, okt, &tag);
}

/* pc's entry of the pair of call item x and return item y (address high
 * half ahi), NULL if it is not there */
static ALWAYS_INLINE const struct pcache *pair_hit(const struct pcache *pc, uint64_t ahi, uint32_t x, uint32_t y)
{
    const uint64_t key = (uint64_t)x << 32 | y;
    const struct pcache *e = &pc[pc_hash(key)];
    return e->key == key && e->ahi == (uint32_t)(ahi >> 32) ? e : NULL;
}

/* whether the run loops would close x's frame with y (both taken as okt
 * asks, the same match: fast_closes with symbols); then the pair is cached
 * (the loops that look there call this outside their loop: a call inside
 * would leave them few registers) */
static __attribute__((noinline)) int pair_fill(struct pcache *pc, const struct fcache *fc, uint64_t ahi, uint32_t x,
                                               uint32_t y, unsigned okt)
{
    const struct fcache *cx = func4(fc, ahi, x, okt), *cy = func4(fc, ahi, y, okt);
    if (!cx || !cy || cx->match != cy->match)
        return 0;
    const uint64_t key = (uint64_t)x << 32 | y;
    pc[pc_hash(key)] = (struct pcache){key, (uint32_t)(ahi >> 32), cx->f};
    return 1;
}

/* stack4 with symbols (returns close their function's frame), by pairs:
 * the calls of a segment (from the run's start or a return below its
 * frames) are kept as items, and a return that closes one is looked up as
 * the pair (struct pcache); the calls still open at the segment's end are
 * checked and become frames.  A pair or call the run loop would not take:
 * stack4 replays the segment instead (it stops where the loop stops).  Up
 * to item end. */
static ALWAYS_INLINE size_t stack4_pairs(struct replay *r, const struct ev4_run *run, size_t i, size_t end,
                                         const int exact)
{
    const uint32_t *const p = run->p;
    const uint64_t ahi = run->ahi_sh;
    const struct fcache *const fc = r->fc;
    struct pcache *const pc = r->pc;
    static uint64_t lw[EV4_RUN_MAX]; /* item index << 32 | call item */
    size_t sn = r->n, nrot = r->nrot;
    const size_t n = i + (end - i < r->cap - sn ? end - i : r->cap - sn);
    for (;;) {
        const size_t seg = i;
        size_t ln = 0;
        int ok = 1;
        for (;;) {
            for (; i < n; i++) {
                const uint32_t w = p[i];
                if ((w & FT_E8_TAG_MASK) != FT_E8_RET) {
                    lw[ln++] = (uint64_t)i << 32 | w;
                    continue;
                }
                if (!ln || !pair_hit(pc, ahi, (uint32_t)lw[ln - 1], w))
                    break;
                ln--;
            }
            if (i == n || !ln)
                break;
            if (!pair_fill(pc, fc, ahi, (uint32_t)lw[ln - 1], p[i], FC_OKT_DISC)) {
                ok = 0;
                break;
            }
        }
        for (size_t k = 0; ok && k < ln; k++)
            ok = func4(fc, ahi, (uint32_t)lw[k], FC_OKT_DISC) != NULL;
        if (!ok) {
            r->n = sn;
            r->nrot = nrot;
            return stack4(r, run, seg, end, 0, exact);
        }
        for (size_t k = 0; k < ln; k++) {
            const uint32_t w = (uint32_t)lw[k];
            const uint64_t addr = ahi | (w & FT_E8_ADDR_LO_MASK);
            run8_push(&r->stk[sn++], &fc[fc_hash(addr)], w & FT_E8_TAG_MASK, addr, run->idx0 + (lw[k] >> 32), &nrot,
                      exact ? ~0u : ~FR_EXACT);
        }
        if (i == n)
            break;
        /* a return below the segment's calls: the stack's top */
        const struct fcache *c = func4(fc, ahi, p[i], FC_OKT_DISC);
        if (!c || !fast_closes(r->stk, sn, c->match, 0, nrot))
            break;
        nrot -= r->stk[--sn].flags & 1u;
        i++;
    }
    r->n = sn;
    r->nrot = nrot;
    return i;
}

static ALWAYS_INLINE size_t disc_run4(struct replay *r, const struct ev4_run *run, size_t i, const struct fclk *k,
                                      const int pair)
{
    const size_t end = run4_span_end(k, run, i, ev4_brk_at(run, i));
    if (end == i)
        return 0;
    reserve_frames(r, end - i);
    const size_t sn0 = r->n;
    const size_t j = pair ? stack4(r, run, i, end, 1, 0) : stack4_pairs(r, run, i, end, 0);
    if (j > i)
        disc_times(r, k, NULL, NULL, run, i, j, sn0);
    return j - i;
}

/* VIEW_PIECES, a thread that does not switch contexts: pieces_fast's loop
 * for a sampled run (pieces_run4), and for an exact run's low halves with
 * symbols (pieces_run8_pairs): pieces_light.  The frames its calls push are
 * kept in a light stack of their own (struct lfr: what their returns need)
 * and their slices are written whole when they close; what is still open
 * when the loop stops becomes the frames and the pending slices
 * pieces_fast would have left.  The inner loop (light4, or by pairs
 * light4_pairs) takes calls and the returns that close a light frame (the
 * stack below them stays: one depth base, no other frame to read), the
 * outer one the return of a frame from before the run.  The items' times
 * are in arrays: tms (measured, made first), ts (stepped, as taken); a
 * light frame's times are its item's.  Without pair nesting no rule reads
 * nrot in the loop: the light frames' FR_ROT are counted at the end. */
struct lfr {
    uint64_t head;  /* its slice's first 8 bytes once closed (slice_head) */
    uint32_t match;
    uint32_t sl;    /* its slice */
    uint16_t fl, x; /* its frame flags, its item */
};
_Static_assert(EV4_RUN_MAX <= 65536, "an lfr's item fits in 16 bits");

/* a closed light frame's slice: function, flags (fl: a sampled run's
 * SL_UNMEASURED, no call of it is stamped and none is loose; an exact
 * run's 0), depth (below 65535: the loop stops before) -- its first 8 bytes
 * as one word */
_Static_assert(offsetof(struct slice, func) == 0 && offsetof(struct slice, flags) == 4 &&
                   offsetof(struct slice, depth) == 6 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "a slice's first 8 bytes: func, flags, depth");
static ALWAYS_INLINE uint64_t slice_head(uint32_t func, uint64_t fl, size_t depth)
{
    return func | fl << 32 | (uint64_t)depth << 48;
}


/* a light frame's slice sp, whole: head (slice_head), from t0 to t,
 * closed by its return (fast_close's; t > t0: the times are stepped; never
 * SL_BOUND: no bound to keep) */
static ALWAYS_INLINE void light_close(struct slice *sp, uint64_t head, int64_t t0, int64_t t)
{
    __builtin_memcpy(sp, &head, 8);
    sp->start = t0;
    sp->end = t;
}

/* the return of the top frame of stk[*dep] below the light ones, at t
 * (measured: tm): pop_k's and close_out_k's as pieces_fast does them
 * (sampled: an interpolated end, EV_DENSE) */
static ALWAYS_INLINE void pop_below(struct frame *stk, size_t *dep, size_t *nrot, struct slice *sl, int64_t *slub,
                                    int64_t *slcd, int64_t t, int64_t tm, int sampled)
{
    struct frame *fr = &stk[--*dep];
    *nrot -= fr->flags & 1u;
    if (fr->slice >= 0)
        fast_close(fr, sl, slub, slcd, t, tm, sampled ? fast_unm(fr, EV_DENSE) : 0);
}

/* a sampled run's measured times, item by item (pieces_run4's): item
 * done's TSC is d0 + qt ticks from the clock's reference (qt's remainder
 * rm, mod N; each step dq, dr: ev4_step: its bracket b's, the next
 * brackets after it), in ns fast_tm's of it */
struct tinterp {
    uint64_t qt, rm, dq, dr, N, d0, mult;
    int64_t ref_ns, gstart;
    size_t done; /* tms holds the items before it */
    const struct ev4_brk *b;
    uint64_t ref_tsc;
};

/* ti at item i of bracket b */
static ALWAYS_INLINE void ti_at(struct tinterp *ti, const struct ev4_brk *b, size_t i)
{
    ti->qt = ev4_qt(b, i, &ti->rm);
    ti->dq = b->dq;
    ti->dr = b->dr;
    ti->N = b->N;
    ti->d0 = b->ta - ti->ref_tsc;
    ti->b = b;
    ti->done = i;
}

/* item ti->done's measured time, and ti on to the next item */
static ALWAYS_INLINE int64_t ti_next(struct tinterp *ti)
{
    if (ti->done == ti->b->end) /* the next bracket's first item */
        ti_at(ti, ti->b + 1, ti->done);
    const struct fclk kk = {0, 0, ti->mult, ti->ref_ns};
    const int64_t tm = fast_tm(&kk, ti->gstart, ti->d0 + ti->qt);
    ti->qt = ev4_step(ti->qt, &ti->rm, ti->dq, ti->dr, ti->N);
    ti->done++;
    return tm;
}

/* tms up to item upto (excluded) */
static void ti_fill(struct tinterp *ti, int64_t *tms, size_t upto)
{
    while (ti->done < upto)
        tms[ti->done] = ti_next(ti);
}

/* what pieces_light's inner loop reads and leaves (in a struct: the loop,
 * a function of its own, keeps them in registers) */
struct light4 {
    const uint32_t *p;
    const struct fcache *fc;
    struct slice *sl;
    int64_t *slub, *slcd;
    struct lfr *lst;
    int64_t *tms;
    int64_t *ts;
    struct pcache *pc;
    struct tinterp *ti; /* a sampled run's: its items' measured times as they are
                           reached (tms filled up to ti->done); NULL: tms all given */
    uint64_t ahi;
    size_t i, n, ln, nsl, dep, nrot;
    int64_t last_ns;
    int sampled;      /* the items are a sampled run's, else an exact run's */
    uint64_t slfl;    /* slice_head's flags: SL_UNMEASURED, 0 */
    unsigned flmask;  /* what a call's frame takes of fcache.fl0: ~FR_EXACT, ~0 */
};

/* the inner loop: items from st->i up to the first it does not take (a
 * return with no light frame among them) */
static ALWAYS_INLINE void light4(struct light4 *st, const int pair)
{
    const uint32_t *const p = st->p;
    const struct fcache *const fc = st->fc;
    struct slice *const sl = st->sl;
    struct lfr *const lst = st->lst;
    const int64_t *const tms = st->tms;
    int64_t *const ts = st->ts;
    const uint64_t ahi = st->ahi;
    const size_t n = st->n, dep = st->dep;
    size_t i = st->i, ln = st->ln, nsl = st->nsl, nrot = st->nrot;
    int64_t last_ns = st->last_ns;
    for (; i < n; i++) {
        uint64_t tag;
        const struct fcache *c = run4_func(fc, ahi, p[i], FC_OKT_PIECES, &tag);
        if (!c)
            break;
        const int64_t tm = tms[i], t = step_ns(tm, last_ns);
        if (tag != FT_E8_RET) { /* push_k, open_out_k */
            const unsigned fl = run_call_flags(c, tag, st->flmask);
            lst[ln] = (struct lfr){slice_head(c->f, st->slfl, dep + ln), c->match, (uint32_t)nsl++, (uint16_t)fl,
                                   (uint16_t)i};
            ln++;
            if (pair)
                nrot += fl & 1u;
        } else { /* fast_closes, pop_k, close_out_k */
            if (!ln)
                break;
            const struct lfr *L = &lst[ln - 1];
            if (L->match != c->match && !(pair && !nrot && !(L->fl & FR_ROT)))
                break;
            ln--;
            if (pair)
                nrot -= L->fl & 1u;
            light_close(&sl[L->sl], L->head, ts[L->x], t);
        }
        ts[i] = last_ns = t;
    }
    st->i = i;
    st->ln = ln;
    st->nsl = nsl;
    st->nrot = nrot;
    st->last_ns = last_ns;
}

static __attribute__((noinline)) void light4_sym(struct light4 *st)
{
    light4(st, 0);
}

static __attribute__((noinline)) void light4_pair(struct light4 *st)
{
    light4(st, 1);
}

/* light4 with symbols, by pairs (as stack4_pairs), and the returns of the
 * frames below the light ones too (st->dep: their count; stk: them): the
 * light frames are items (index << 32 | call item) until they close (their
 * pair gives the function) or the loop stops (then they are checked and
 * become struct lfr).  Where the run loop would not take a pair or a call,
 * returns 0 with *st as at the last such return (no light frame):
 * light4_sym replays the items from there.
 *
 * A light frame's slice is not kept with it: every call item takes the next
 * slice, and from the loop's start (item i0, dep0 frames below, no light
 * frame, slice nsl0) to item x with ln light frames and dep below, x - i0
 * items were taken, (x - i0 + ln + dep - dep0) / 2 of them calls -- while a
 * light frame is open dep stays (only a return with none pops below) and
 * the frames above it are the same when it closes as when it was pushed:
 * its slice is light_sl(.., its item, the light frames below it, dep). */
static ALWAYS_INLINE size_t light_sl(size_t base, size_t x, size_t ln, size_t dep)
{
    return base + ((x + ln + dep) >> 1); /* (base: nsl0 - (i0 + dep0) / 2, same parity) */
}

static ALWAYS_INLINE int light4_pairs_k(struct light4 *st, struct frame *stk, const int interp)
{
    const uint32_t *const p = st->p;
    const struct fcache *const fc = st->fc;
    struct pcache *const pc = st->pc;
    struct slice *const sl = st->sl;
    int64_t *const tms = st->tms;
    int64_t *const ts = st->ts;
    const uint64_t ahi = st->ahi;
    const uint32_t ahi32 = (uint32_t)(ahi >> 32); /* (pair_hit's) */
    const size_t n = st->n;
    static uint64_t l4[EV4_RUN_MAX];
    size_t i = st->i, ln = 0, dep = st->dep;
    const size_t base = st->nsl - ((st->i + st->dep) >> 1);
    /* a closed slice's head but its function and the light frames under it
     * (in a local: the slice stores could alias st) */
    uint64_t hd = slice_head(0, st->slfl, dep);
    int64_t last_ns = st->last_ns;
    /* interp: the items' measured times made here (ti_next's), the first
     * time the loop reaches each: one pass over them, not two (ti->done ==
     * st->i), bracket by bracket (lim: the end of item i's, or n).  In
     * locals: q, the TSC in ticks from the clock's reference, and its
     * remainder, stepped after each item; tm: item i's.  The times do not
     * decrease: when item st->i's is not before the generation's start,
     * none is (fast_tm's clamp; else the light4 loop takes the items) */
    struct tinterp *const tip = st->ti;
    const struct ev4_brk *bk = interp ? tip->b : NULL;
    uint64_t dq = interp ? tip->dq : 0, dr = interp ? tip->dr : 0, N = interp ? tip->N : 1,
             d0 = interp ? tip->d0 : 0;
    const uint64_t mult = interp ? tip->mult : 0;
    const int64_t ref_ns = interp ? tip->ref_ns : 0;
    uint64_t q = interp ? d0 + tip->qt : 0, rm = interp ? tip->rm : 0;
    size_t lim = interp && tip->b->end < n ? tip->b->end : n;
    int64_t tm = 0;
    const struct fclk kk = {0, 0, mult, ref_ns}; /* (q is from the reference) */
    if (interp && i < n && (tm = fclk_ns(&kk, q)) < tip->gstart)
        return 0;
    for (;;) {
        for (; i < lim; i++) {
            const uint32_t w = p[i];
            if (interp)
                tms[i] = tm;
            else
                tm = tms[i];
            const int64_t t = step_ns(tm, last_ns);
            if ((w & FT_E8_TAG_MASK) != FT_E8_RET) {
                l4[ln++] = (uint64_t)i << 32 | w;
            } else if (ln) {
                const uint64_t lw = l4[ln - 1], key = lw << 32 | w;
                const struct pcache *e = &pc[pc_hash(key)];
                if (e->key != key || e->ahi != ahi32) /* (pair_hit's) */
                    break;
                const size_t x = (size_t)(lw >> 32);
                ln--;
                light_close(&sl[light_sl(base, x, ln, dep)], hd + ((uint64_t)ln << 48) + e->f, ts[x], t);
            } else { /* the stack's top (on_event's checks: the outer loop's) */
                uint64_t tag;
                const struct fcache *c = run4_func(fc, ahi, w, FC_OKT_PIECES, &tag);
                if (!c || !fast_closes(stk, dep, c->match, 0, st->nrot))
                    break;
                pop_below(stk, &dep, &st->nrot, sl, st->slub, st->slcd, t, tm, st->sampled);
                hd = slice_head(0, st->slfl, dep);
                /* (what a failed pair goes back to) */
                st->i = i + 1;
                st->nsl = light_sl(base, i + 1, 0, dep);
                st->dep = dep;
                st->last_ns = t;
            }
            ts[i] = last_ns = t;
            if (interp) { /* item i + 1's */
                q = ev4_step(q, &rm, dq, dr, N);
                tm = fclk_ns(&kk, q);
            }
        }
        if (interp && i == lim && i < n) { /* the next bracket's first item */
            bk++;
            d0 = bk->ta - tip->ref_tsc;
            q = d0 + ev4_qt(bk, i, &rm);
            dq = bk->dq;
            dr = bk->dr;
            N = bk->N;
            lim = bk->end < n ? bk->end : n;
            tm = fclk_ns(&kk, q);
            continue;
        }
        if (i == n || !ln)
            break;
        if (!pair_fill(pc, fc, ahi, (uint32_t)l4[ln - 1], p[i], FC_OKT_PIECES))
            break;
    }
    const int ok = i == n || !ln;
    if (interp) { /* ti past the items made: up to i, or item i too (stopped there) */
        if (i < n)
            q = ev4_step(q, &rm, dq, dr, N);
        tip->qt = q - d0;
        tip->rm = rm;
        tip->dq = dq;
        tip->dr = dr;
        tip->N = N;
        tip->d0 = d0;
        tip->b = bk;
        tip->done = i < n ? i + 1 : n;
    }
    if (!ok)
        return 0;
    for (size_t k = 0; k < ln; k++) {
        uint64_t tag;
        const struct fcache *c = run4_func(fc, ahi, (uint32_t)l4[k], FC_OKT_PIECES, &tag);
        if (!c)
            return 0;
        const unsigned fl = run_call_flags(c, tag, st->flmask);
        const size_t x = (size_t)(l4[k] >> 32);
        st->lst[k] = (struct lfr){slice_head(c->f, st->slfl, dep + k), c->match,
                                  (uint32_t)light_sl(base, x, k, dep), (uint16_t)fl, (uint16_t)x};
    }
    st->i = i;
    st->ln = ln;
    st->nsl = light_sl(base, i, ln, dep);
    st->dep = dep;
    st->last_ns = last_ns;
    return 1;
}

static __attribute__((noinline)) int light4_pairs(struct light4 *st, struct frame *stk)
{
    return light4_pairs_k(st, stk, 0);
}

static __attribute__((noinline)) int light4_pairs_ti(struct light4 *st, struct frame *stk)
{
    return light4_pairs_k(st, stk, 1);
}

/* the light loops (light4_pairs, light4) over items [i, n) of p (address
 * high half ahi, the first one's ring index idx0; their times: tms,
 * measured, in the clock's span; sampled: a sampled run's, else an exact
 * run's), and the returns below their frames; returns where they stopped,
 * the replay's stack and slices as pieces_fast leaves them (pieces_end:
 * the caller's, its ns the last item's *last_ns, and ts) */
/* the light loops' items (an exact run's low halves: run8_low) and times
 * (measured, stepped), one run's at a time */
static uint32_t light_c32[EV4_RUN_MAX];
static int64_t light_tms[EV4_RUN_MAX], light_ts[EV4_RUN_MAX];

static ALWAYS_INLINE size_t pieces_light(struct replay *r, const uint32_t *p, uint64_t ahi, uint64_t idx0, size_t i,
                                         size_t n, int64_t *tms, struct tinterp *ti, int64_t *ts, const int pair,
                                         const int sampled, size_t *sn_out, size_t *nrot_out, int64_t *last_out)
{
    static struct lfr lst[EV4_RUN_MAX];
    struct light4 st = {p,   r->fc, r->sl, r->slub, r->slcd, lst,    tms,  ts,      r->pc,     ti,
                        ahi, i,     n,     0,       r->nsl,  r->n,   r->nrot, r->last_ns, sampled,
                        sampled ? SL_UNMEASURED : 0, sampled ? ~FR_EXACT : ~0u};
    if (ti && pair)
        ti_fill(ti, tms, n);
    for (;;) {
        if (pair) {
            light4_pair(&st);
        } else {
            /* (light4_pairs_ti makes the times from item st.i on; light4_pairs
             * reads them all) */
            const int here = ti && ti->done == st.i;
            if (ti && !here)
                ti_fill(ti, tms, n);
            if (!(here ? light4_pairs_ti : light4_pairs)(&st, r->stk)) {
                if (ti)
                    ti_fill(ti, tms, n);
                light4_sym(&st);
            }
        }
        /* a return with no light frame above the stack's top (else the end,
         * or an item the loops do not take) */
        uint64_t tag;
        const struct fcache *c = st.i < n && !st.ln ? run4_func(r->fc, ahi, p[st.i], FC_OKT_PIECES, &tag) : NULL;
        if (!c || tag != FT_E8_RET || !fast_closes(r->stk, st.dep, c->match, pair, st.nrot))
            break;
        if (ti)
            ti_fill(ti, tms, st.i + 1);
        const int64_t tm = tms[st.i], t = step_ns(tm, st.last_ns);
        pop_below(r->stk, &st.dep, &st.nrot, r->sl, r->slub, r->slcd, t, tm, sampled);
        ts[st.i++] = st.last_ns = t;
    }
    /* the light frames still open: frames and pending slices (fast_open's) */
    size_t sn = st.dep, nrot = st.nrot;
    for (const struct lfr *L = lst; L < lst + st.ln; L++) {
        struct frame *fr = &r->stk[sn++];
        fr->func = (uint32_t)L->head;
        fr->match = L->match;
        fr->flags = L->fl;
        fr->addr = ahi | (p[L->x] & FT_E8_ADDR_LO_MASK);
        fr->call_idx = idx0 + L->x;
        fast_open(fr, &r->sl[L->sl], L->sl, sn, ts[L->x], tms[L->x]);
        if (!pair)
            nrot += L->fl & 1u;
    }
    r->nsl = st.nsl;
    *sn_out = sn;
    *nrot_out = nrot;
    *last_out = st.last_ns;
    return st.i;
}

/* room for items from a stack of sn frames (of cap): each item pushes at
 * most one frame, depths stay below 65535, where they saturate */
static ALWAYS_INLINE size_t light_room(size_t sn, size_t cap)
{
    const size_t deep = sn < 65535 ? 65535 - sn : 0;
    return cap - sn < deep ? cap - sn : deep;
}

static ALWAYS_INLINE size_t pieces_run4(struct replay *r, const struct ev4_run *run, size_t i, const struct fclk *k,
                                        const int pair)
{
    const size_t bi = ev4_brk_at(run, i), end = run4_span_end(k, run, i, bi);
    if (end == i)
        return 0;
    reserve_frames(r, end - i);
    reserve_slices(r, end - i);
    const int64_t gstart = r->gstart;
    const size_t room = light_room(r->n, r->cap), i0 = i, n = i + (end - i < room ? end - i : room);
    int64_t *const tms = light_tms, *const ts = light_ts;
    /* (the times from item i on, made as the light loops reach them) */
    struct tinterp ti = {.mult = k->mult, .ref_ns = k->ref_ns, .gstart = gstart, .ref_tsc = k->ref_tsc};
    ti_at(&ti, &run->b[bi], i);
    const int64_t last0 = r->last_ns;
    size_t sn, nrot;
    int64_t last_ns;
    i = pieces_light(r, run->p, run->ahi_sh, run->idx0, i, n, tms, &ti, ts, pair, 1, &sn, &nrot, &last_ns);
    if (i > i0) {
        const int two = i - i0 >= 2;
        const size_t b1 = ev4_brk_at(run, i - 1), b2 = two ? ev4_brk_at(run, i - 2) : 0;
        pieces_end(r, k, sn, nrot, r->nsl, last_ns, two ? ts[i - 2] : last0, ev4_tsc(run, i - 1, b1),
                   ev4_q(run, i - 1, b1), two, two ? ev4_tsc(run, i - 2, b2) : 0, two ? ev4_q(run, i - 2, b2) : 0);
    }
    return i - i0;
}

/* an exact run's items from i on, as a sampled run's for the light loops
 * (with symbols): their low halves in c32, up to the first one the run
 * loops do not take as they are (not plain, outside the clock's span) and
 * at most m; tms: their measured times (NULL: not wanted); returns how
 * many */
static ALWAYS_INLINE size_t run8_low(const struct ev8_run *run, size_t i, size_t m, const struct fclk *k,
                                     int64_t gstart, uint32_t *c32, int64_t *tms)
{
    const uint8_t *const p = run->p;
    const uint64_t thi = run->thi_sh, ref_tsc = k->ref_tsc, lim = k->lim;
    if (m > run->n - i)
        m = run->n - i;
    size_t x = 0;
    for (; x < m; x++) {
        const uint64_t w = ev_ld8(p, i + x), tsc = thi | (w >> 32);
        __builtin_prefetch(p + 8 * (i + x) + 2048);
        if (!w || (w & FT_E8_TAG_MASK) == FT_E8_ESC || tsc - ref_tsc > lim)
            break;
        c32[x] = (uint32_t)w;
        if (tms)
            tms[x] = fast_tm(k, gstart, tsc);
    }
    return x;
}

/* discovery, an exact run with symbols: stack4_pairs over its items' low
 * halves (EV4_RUN_MAX at a time), then disc_times over theirs */
static ALWAYS_INLINE size_t disc_run8_pairs(struct replay *r, const struct ev8_run *run, size_t i,
                                            const struct fclk *k)
{
    uint32_t *const c32 = light_c32;
    reserve_frames(r, run->n - i);
    /* (as many as the stack has room for: stack4_pairs stops there) */
    const size_t room = r->cap - r->n;
    const size_t m = run8_low(run, i, room < EV4_RUN_MAX ? room : EV4_RUN_MAX, k, r->gstart, c32, NULL);
    if (!m)
        return 0;
    const struct ev4_run low = {.p = c32, .n = m, .idx0 = run->idx0 + i, .ahi_sh = run->ahi_sh};
    const size_t sn0 = r->n, j = stack4_pairs(r, &low, 0, m, 1);
    if (j)
        disc_times(r, k, NULL, run, NULL, i, i + j, sn0);
    return j;
}

/* VIEW_PIECES, an exact run with symbols, a thread that does not switch
 * contexts: pieces_light over its items' low halves */
static ALWAYS_INLINE size_t pieces_run8_pairs(struct replay *r, const struct ev8_run *run, size_t i,
                                              const struct fclk *k)
{
    uint32_t *const c32 = light_c32;
    int64_t *const tms = light_tms, *const ts = light_ts;
    reserve_frames(r, run->n - i);
    reserve_slices(r, run->n - i);
    const size_t room = light_room(r->n, r->cap);
    const size_t m = run8_low(run, i, room < EV4_RUN_MAX ? room : EV4_RUN_MAX, k, r->gstart, c32, tms);
    if (!m)
        return 0;
    const int64_t last0 = r->last_ns;
    size_t sn, nrot;
    int64_t last_ns;
    const size_t j = pieces_light(r, c32, run->ahi_sh, run->idx0 + i, 0, m, tms, NULL, ts, 0, 0, &sn, &nrot, &last_ns);
    if (j) {
        const int two = j >= 2;
        const uint64_t thi = run->thi_sh;
        pieces_end(r, k, sn, nrot, r->nsl, last_ns, two ? ts[j - 2] : last0, thi | (ev8_item(run, i + j - 1) >> 32),
                   EV_EXACT, two, two ? thi | (ev8_item(run, i + j - 2) >> 32) : 0, EV_EXACT);
    }
    return j;
}

static __attribute__((noinline)) size_t disc_run8_sym(struct replay *r, const struct ev8_run *run, size_t i,
                                                      const struct fclk *k)
{
    return disc_run8_pairs(r, run, i, k);
}

static __attribute__((noinline)) size_t pieces_run8_sym(struct replay *r, const struct ev8_run *run, size_t i,
                                                        const struct fclk *k)
{
    return pieces_run8_pairs(r, run, i, k);
}

RUN_LOOPS(disc_run4, struct ev4_run)
RUN_LOOPS(pieces_run4, struct ev4_run)

/* a run, exact (r8) or sampled (r4): the run loop where it may, on_event for
 * the event where it stops (the batch loops would hand it there too: the run
 * loop stops where they would), and so on; returns the items taken (a
 * sampled run's: all) */
static ALWAYS_INLINE size_t run_replay(struct replay *r, const struct ev8_run *r8, const struct ev4_run *r4,
                                       const int pieces)
{
    const struct fclk k = fclk_of(&r->g->clk);
    const size_t n = r8 ? r8->n : r4->n;
    /* (the words' flags are their tags' where the address high half is
     * below 2^61) */
    const int plain_flags = !((r8 ? r8->ahi_sh : r4->ahi_sh) >> 61);
    const int pair = r->pair_nesting;
    size_t i = 0, bi = 0; /* (r4: item i's bracket, for on_event) */
    while (i < n) {
        if (fast_ok(r) && plain_flags) {
            if (r8)
                i += pieces ? (pair ? pieces_run8_pair : pieces_run8_sym)(r, r8, i, &k)
                            : (pair ? disc_run8_pair : disc_run8_sym)(r, r8, i, &k);
            else
                i += pieces ? (pair ? pieces_run4_pair : pieces_run4_sym)(r, r4, i, &k)
                            : (pair ? disc_run4_pair : disc_run4_sym)(r, r4, i, &k);
        }
        if (i == n)
            break;
        if (r8 && !ev8_plain(ev8_item(r8, i)))
            break; /* the run ends */
        struct ev e; /* where the run loop stopped: what a batch loop would hand on_event */
        if (r8) {
            ev8_get(r8, i++, &e);
        } else {
            while (r4->b[bi].end <= i)
                bi++;
            ev4_get(r4, i++, bi, &e);
        }
        on_event(r, &e, pieces ? K_PIECES : K_DISC);
    }
    return i;
}

/* the runs' consumers (ev_run's fn8 and fn4; the pieces ones: exact time,
 * resp. sampled time, and a thread that does not switch contexts: replay_gen) */
static size_t on_run8_disc(void *ctx, const struct ev8_run *run)
{
    return run_replay(ctx, run, NULL, 0);
}

static size_t on_run8_pieces(void *ctx, const struct ev8_run *run)
{
    return run_replay(ctx, run, NULL, 1);
}

static void on_run4_disc(void *ctx, const struct ev4_run *run)
{
    run_replay(ctx, NULL, run, 0);
}

static void on_run4_pieces(void *ctx, const struct ev4_run *run)
{
    run_replay(ctx, NULL, run, 1);
}

static void on_events_any(void *ctx, const struct ev *e, size_t n)
{
    struct replay *r = ctx;
    for (size_t i = 0; i < n; i++)
        on_event(r, &e[i], K_ANY);
}

/* ---- generations ------------------------------------------------------- */

static int is_abandoned(const struct dthread *th, uint64_t call_idx)
{
    return call_idx != NONE && th->nabandoned &&
           bsearch(&call_idx, th->abandoned, th->nabandoned, sizeof *th->abandoned, cmp_u64);
}

/* a longjmp whose marker ends the thread's events (no event came after it:
 * jmp_happened) happened if the final stack says so: the setjmp's frame is
 * open in this context and every frame above it is off the final stack
 * (th->abandoned: the process died where the jump landed, before any hook
 * ran there).  Then those frames end at the jump, left by it, as when an
 * event follows; else the process died in the jump (glibc's __longjmp_chk
 * aborting a jump into a frame that is gone) and they are still there. */
static int jmp_landed(const struct replay *r)
{
    const struct dthread *th = r->th;
    if (r->ctx_mark != CTX_JMP_PENDING || r->discovery || !th->nabandoned)
        return 0;
    uint32_t v = hm_get(&r->jmp_index, r->jp_key, 0);
    if (v == HMAP_NONE)
        return 0;
    const struct jset *j = &r->jsets[v];
    if (j->ctx != r->ctx_id || !jset_open(j, r->stk, r->n) || j->depth >= r->n)
        return 0;
    for (size_t i = j->depth; i < r->n; i++)
        if (!is_abandoned(th, r->stk[i].call_idx))
            return 0;
    return 1;
}

/* the end of the thread: close what is still open.  A thread that exited
 * left the frames still open at its end without their returns (pthread_exit,
 * cancellation: the forced unwinding runs no return hook; the landing pads
 * it entered are logged): they end when it exited, their returns missing --
 * not "still open". */
static void finish(struct replay *r)
{
    struct dthread *th = r->th;
    r->finished = 1;
    if (jmp_landed(r))
        jmp_happened(r);
    if (th->has_ctx_end && !r->n && r->ctx_pre == CTX_FRESH) /* (ctx_at_end) */
        ctx_resume(r, th->ctx_end_key, NONE, th->last_ns, th->last_mns, th->last_ns);
    /* the contexts still suspended: their calls are open (VIEW_CALLS; the
     * pieces ended at the suspension) */
    for (size_t k = 0; k < r->nctx; k++) {
        struct rctx *c = &r->ctxs[k];
        if (c->used)
            ctx_close_open(r, c, !r->discovery && ctx_moved(r, c) ? SL_MOVED : 0);
        c->used = 0;
    }
    if (!r->n)
        return;
    const struct ftr_thread *rt = th->rt;
    int exited = rt->has_stat && (rt->st.state == FT_THR_EXITED || rt->st.state == FT_THR_EVICTED);
    int at_exit = exited && rt->st.exit_tsc; /* th->end_ns is its exit (decode.c); else its last event */
    int64_t *ends = xcalloc(r->n, sizeof *ends), *mends = xcalloc(r->n, sizeof *mends);
    unsigned *fl = xcalloc(r->n, sizeof *fl);
    for (size_t i = 0; i < r->n; i++) {
        int ab = exited || is_abandoned(th, r->stk[i].call_idx);
        ends[i] = ab && !at_exit ? th->last_ns : th->end_ns;
        mends[i] = ab && !at_exit ? th->last_mns : th->end_ns;
        fl[i] = ab ? SL_ABANDONED : SL_OPEN;
        if (i && ends[i] > ends[i - 1]) /* children never outlive parents */
            ends[i] = ends[i - 1];
        if (i && mends[i] > mends[i - 1])
            mends[i] = mends[i - 1];
    }
    while (r->n) {
        size_t i = r->n - 1;
        pop(r, ends[i], mends[i], fl[i], EV_EXACT, mends[i]);
    }
    free(ends);
    free(mends);
    free(fl);
}

static inline int clipped_to_nothing(const struct slice *s)
{
    return s->start == s->end && (s->flags & SL_FROM_PREV) && (s->flags & SL_TO_NEXT);
}

void replay_gen(struct replay *r, size_t gi)
{
    struct dec *d = r->d;
    struct dthread *th = r->th;
    const struct dgen *g = &d->gens[gi];
    r->gi = gi;
    r->g = g;
    if (g->space != r->fc_space) { /* another address space (dlopen, dlclose): the cache starts over */
        for (size_t i = 0; i < FC_SIZE; i++)
            r->fc[i].addr = FC_EMPTY;
        memset(r->pc, 0, PC_SIZE * sizeof *r->pc);
        r->fc_space = g->space;
    }
    if (r->finished)
        return;
    r->emitting = !r->discovery && g->emit;
    if (!r->calls)
        r->nsl = r->prev_hi = 0; /* VIEW_PIECES: one batch per generation */
    /* the generation starts at its boundary, or right after this thread's
     * previous event if that one came later (events recorded around the
     * boundary): a thread's pieces of consecutive generations never overlap */
    r->gstart = g->start_ns;
    if (r->started && r->last_ns + 1 > r->gstart)
        r->gstart = r->last_ns + 1;
    if (r->emitting)
        for (size_t i = 0; i < r->n; i++)
            open_out(r, &r->stk[i]);
    if (r->emitting && !r->calls && !r->started && th->incomplete[gi] && th->cut[gi] == th->cut[gi + 1] &&
        r->out->ops->instant && !g->synthetic) {
        struct view_arg arg = {"gen", NULL, (int64_t)g->gen};
        r->out->ops->instant(r->out, d, th, g->start_ns,
                             th->lost_filtered ? "no events: this generation is older than the snapshot's start time"
                                               : "no events: this generation was overwritten in the ring",
                             &arg, 1);
    }
    if (r->emitting && !r->calls && !r->measuring) /* fatal-signal episodes (faults.c) */
        faults_instants(d, th, r->out, g->start_ns, gi + 1 < d->ngens ? g->end_ns : INT64_MAX);
    uint64_t lo = th->cut[gi] > th->lo ? th->cut[gi] : th->lo, hi = th->cut[gi + 1] > lo ? th->cut[gi + 1] : lo;
    ev_fn fn = r->discovery ? on_events_disc : r->emitting && !r->calls ? on_events_pieces : on_events_any;
    ev8_fn fn8 = r->discovery                                           ? on_run8_disc
                 : r->emitting && !r->calls && !d->sampled && !r->ctx_on ? on_run8_pieces
                                                                          : NULL;
    ev4_fn fn4 = r->discovery ? on_run4_disc : r->emitting && !r->calls && !r->ctx_on ? on_run4_pieces : NULL;
    /* in chunks, for the progress line (the sampled-mode carry makes a range
     * in pieces decode as it does whole) */
    for (uint64_t a = lo; a < hi;) {
        uint64_t b = hi - a > PROGRESS_CHUNK ? a + PROGRESS_CHUNK : hi;
        ev_run(d, th, a, b, g->clk.ref_tsc, &r->carry, fn, fn8, fn4, r);
        progress_add(&d->prog, (b - a) * ftr_item_size(th->rt->fmt));
        a = b;
    }
    if (r->discovery) {
        if (r->crun && gi + 1 == d->ngens)
            catch_end(r);
        return;
    }
    int last = gi + 1 == d->ngens || (r->started && th->end_ns <= g->end_ns);
    if (last && r->crun)
        catch_end(r);
    if (last) {
        finish(r);
    } else if (r->emitting && !r->calls) {
        int64_t gend = g->end_ns;
        if (r->started && r->last_ns + 1 > gend)
            gend = r->last_ns + 1; /* = the next generation's start for this thread */
        for (size_t i = 0; i < r->n; i++) /* the calls go on in the next generation */
            if (r->stk[i].slice >= 0)
                piece_goes_on(r, &r->stk[i], gend, SL_TO_NEXT);
    }
    if (r->calls) {
        /* VIEW_CALLS: the whole thread in one batch, once it is finished */
        if (last && r->nsl && r->out->ops->slices) {
            th->slice_ctx = r->nsaves ? r->slctx : NULL;
            th->slice_ub = r->slub;
            th->slice_cdur = r->slcd;
            r->out->ops->slices(r->out, d, th, gi, r->sl, r->nsl);
            th->slice_ctx = NULL;
            th->slice_ub = NULL;
            th->slice_cdur = NULL;
        }
        if (last && r->out->ops->thread_end)
            r->out->ops->thread_end(r->out, d, th);
        return;
    }
    if (r->emitting && r->nsl) {
        /* pieces clipped on both sides to nothing carry no information (a
         * generation without events whose span this thread's clock passed);
         * only slices below prev_hi can be such (the batch can be far
         * bigger than the caches: it is not read once more for nothing) */
        size_t k = 0, i = 0;
        while (i < r->prev_hi && !clipped_to_nothing(&r->sl[i]))
            i++;
        if (i < r->prev_hi) {
            for (k = i; i < r->nsl; i++)
                if (!clipped_to_nothing(&r->sl[i])) {
                    if (r->ctx_on)
                        r->slctx[k] = r->slctx[i];
                    if (r->sl[i].flags & SL_BOUND)
                        r->slub[k] = r->slub[i];
                    if (r->sl[i].flags & SL_OWN_CDUR)
                        r->slcd[k] = r->slcd[i];
                    r->sl[k++] = r->sl[i];
                }
            r->nsl = k;
        }
        if (r->nsl && r->out->ops->slices) {
            th->slice_ctx = r->ctx_on ? r->slctx : NULL;
            th->slice_ub = r->slub;
            th->slice_cdur = r->slcd;
            r->out->ops->slices(r->out, d, th, gi, r->sl, r->nsl);
            th->slice_ctx = NULL;
            th->slice_ub = NULL;
            th->slice_cdur = NULL;
        }
    }
    if (last && r->out->ops->thread_end)
        r->out->ops->thread_end(r->out, d, th);
    if (r->slcap > 65536) { /* one thread's generation at a time in memory: the
                               array goes to the next replay (the larger one is kept) */
        if (r->slcap > d->sl_spare_cap) {
            free(d->sl_spare);
            d->sl_spare = r->sl;
            d->sl_spare_cap = r->slcap;
        } else {
            free(r->sl);
        }
        r->sl = NULL;
        r->slcap = 0;
    }
}

struct replay *replay_new(struct dec *d, struct dthread *th, struct view *out)
{
    struct replay *r = rnew(d, th, 0);
    r->out = out;
    r->calls = out->kind == VIEW_CALLS;
    r->ctx_on = !r->calls && th->has_ctx;
    return r;
}

static const struct view_ops null_ops;

void replay_measure(struct replay *r)
{
    if (r->calls)
        return; /* whole calls: their durations are known */
    static struct view null_view = {.ops = &null_ops, .kind = VIEW_PIECES};
    struct replay *m = replay_new(r->d, r->th, &null_view);
    m->measuring = 1;
    for (size_t gi = 0; gi < r->d->ngens; gi++)
        replay_gen(m, gi);
    r->cells = m->cells;
    r->ncells_known = m->ncells;
    m->cells = NULL;
    replay_free(m);
}

/* ---- discovery --------------------------------------------------------- */

#define LCS_MAX 4096
#define LCS_WIN 1024 /* the outermost frames aligned when the stacks are longer */

/* longest common subsequence of F and S (by match id); mf[i] = index in S
 * matched by F[i] or -1.  Ties favour the innermost frames.  Longer stacks
 * (a deep recursion) first match their common innermost, then (unless S is
 * truncated: its outermost frame is not the thread's) outermost frames, and
 * only what is left in between if that is small enough.  The caller drops
 * S's innermost frames that cannot be in F (runtime hooks) beforehand; an
 * innermost S frame whose call was not logged yet (the fault hit before the
 * hook wrote it) matches F's innermost frame when it is the same function
 * (a recursion), which shifts the alignment by one frame of that function
 * only, and stays unmatched otherwise. */
static void lcs_outer(const uint32_t *F, size_t nf, const uint32_t *S, size_t ns, long *mf);

static void lcs(const uint32_t *F, size_t nf, const uint32_t *S, size_t ns, int truncated, long *mf)
{
    for (size_t i = 0; i < nf; i++)
        mf[i] = -1;
    if (!nf || !ns)
        return;
    if (nf > LCS_MAX || ns > LCS_MAX) {
        size_t q = 0, pf = 0, ps = 0;
        while (q < nf && q < ns && F[nf - 1 - q] == S[ns - 1 - q]) {
            mf[nf - 1 - q] = (long)(ns - 1 - q);
            q++;
        }
        if (!truncated) { /* the outermost frames: an LCS of bounded windows (S may
                             have frames below F's outermost, e.g. _start) */
            size_t wf = nf - q < LCS_WIN ? nf - q : LCS_WIN, ws = ns - q < LCS_WIN ? ns - q : LCS_WIN;
            long *mm = xrealloc(NULL, (wf ? wf : 1) * sizeof *mm);
            lcs_outer(F, wf, S, ws, mm);
            for (size_t i = 0; i < wf; i++)
                if (mm[i] >= 0) {
                    mf[i] = mm[i];
                    pf = i + 1;
                    ps = (size_t)mm[i] + 1;
                }
            free(mm);
        }
        nf -= pf + q;
        ns -= ps + q;
        if (nf > LCS_MAX || ns > LCS_MAX || !nf || !ns)
            return;
        long *mm = xrealloc(NULL, nf * sizeof *mm);
        lcs(F + pf, nf, S + ps, ns, truncated, mm);
        for (size_t i = 0; i < nf; i++)
            mf[pf + i] = mm[i] < 0 ? -1 : mm[i] + (long)ps;
        free(mm);
        return;
    }
    uint16_t *L = calloc((nf + 1) * (ns + 1), sizeof *L);
    if (!L)
        return;
#define AT(i, j) L[(i) * (ns + 1) + (j)]
    for (size_t i = 1; i <= nf; i++)
        for (size_t j = 1; j <= ns; j++)
            AT(i, j) = F[i - 1] == S[j - 1]                      ? (uint16_t)(AT(i - 1, j - 1) + 1)
                       : AT(i - 1, j) >= AT(i, j - 1) ? AT(i - 1, j)
                                                      : AT(i, j - 1);
    size_t i = nf, j = ns;
    while (i && j) {
        if (F[i - 1] == S[j - 1]) {
            mf[i - 1] = (long)(j - 1);
            i--;
            j--;
        } else if (AT(i - 1, j) >= AT(i, j - 1)) {
            i--;
        } else {
            j--;
        }
    }
#undef AT
    free(L);
}

/* lcs() with ties favouring the outermost frames (both stacks anchored at
 * their outermost frame: the part of a final stack outside the frames the
 * unwinder left out) */
static void lcs_outer(const uint32_t *F, size_t nf, const uint32_t *S, size_t ns, long *mf)
{
    if (!nf)
        return;
    uint32_t *rf = xrealloc(NULL, nf * sizeof *rf), *rs = xrealloc(NULL, (ns ? ns : 1) * sizeof *rs);
    long *rm = xrealloc(NULL, nf * sizeof *rm);
    for (size_t i = 0; i < nf; i++)
        rf[i] = F[nf - 1 - i];
    for (size_t i = 0; i < ns; i++)
        rs[i] = S[ns - 1 - i];
    lcs(rf, nf, rs, ns, 0, rm);
    for (size_t i = 0; i < nf; i++)
        mf[nf - 1 - i] = rm[i] < 0 ? -1 : (long)(ns - 1) - rm[i];
    free(rf);
    free(rs);
    free(rm);
}

/* the runtime's entry hooks: a fault inside one (a stack overflow faults
 * at its first pushes) comes before it logged the call of its caller */
static int is_entry_hook(const char *name)
{
    static const char *const hooks[] = {"__fentry__", "mcount", "__cyg_profile_func_enter",
                                        "__cyg_profile_func_enter_bare", "__xray_FunctionEntry"};
    for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++)
        if (!strcmp(name, hooks[i]))
            return 1;
    return 0;
}

/* how many of the final stack's frames (outermost first) to align with the
 * open frames: not its innermost run of frames that cannot be open traced
 * frames (runtime hooks: __fentry__, __return__, ft_asm_slow, ...), nor,
 * when that run holds an entry hook, the frame that called the hook (its
 * call is not logged yet).  *unlogged = that frame's index, or -1. */
static size_t final_usable(struct dec *d, const struct dthread *th, long *unlogged)
{
    size_t n = th->nfinal;
    int entry = 0;
    *unlogged = -1;
    while (n) {
        uint32_t f = th->final_funcs[n - 1];
        struct func *fn = sym_func(d->sym, f);
        if (!fn->unknown && !fn->ignored && (fn->seen || sym_instrumented(d->sym, f)))
            break;
        entry |= !fn->unknown && fn->name && is_entry_hook(fn->name);
        n--;
    }
    if (entry && n < th->nfinal && n) {
        *unlogged = (long)(n - 1);
        n--;
    }
    return n;
}

/* where the unwinder left frames out of a final stack: S index of the
 * marker (outermost first), and how many machine frames */
struct gap {
    size_t at;   /* nS if none */
    uint32_t n;
};

/* lcs of the open frames with the usable final-stack frames; an open
 * innermost frame left unmatched is the unlogged frame when it is the same
 * function (the fault came after its hook logged the call after all).
 * Across a gap (frames not kept by the unwinder) the open frames are first
 * aligned with the part inside it; only open frames that lie further out
 * than the gap's frames can reach are aligned with the part outside it. */
static void align_final(struct dec *d, const struct dthread *th, const uint32_t *F, size_t nf,
                        const uint32_t *S, int truncated, struct gap g, long *mf)
{
    long unlogged;
    size_t ns = final_usable(d, th, &unlogged);
    if (g.at >= ns) {
        lcs(F, nf, S, ns, truncated, mf);
    } else {
        size_t in0 = g.at + 1, o = nf;
        lcs(F, nf, S + in0, ns - in0, truncated, mf);
        for (size_t i = 0; i < nf; i++)
            if (mf[i] >= 0) {
                mf[i] += (long)in0;
                if (o == nf)
                    o = i;
            }
        if (o > g.n) { /* open frames beyond the gap */
            size_t no = o - g.n;
            long *mo = xrealloc(NULL, no * sizeof *mo);
            /* a ring that holds the thread's start: its outermost open frame
             * is the stack's outermost traced one (anchor there); else the
             * gap's frames are open frames too (no < o), so the innermost of
             * the frames beyond it is the frame just outside the gap (anchor
             * there: a recursion beyond the gap would otherwise match its
             * outermost turns, and every depth would be short by some turns) */
            if (th->lo == 0 && !th->lost_older)
                lcs_outer(F, no, S, g.at, mo);
            else
                lcs(F, no, S, g.at, truncated, mo);
            for (size_t i = 0; i < no; i++)
                mf[i] = mo[i];
            free(mo);
        }
    }
    if (unlogged >= 0 && nf && mf[nf - 1] < 0 && F[nf - 1] == S[unlogged])
        mf[nf - 1] = unlogged;
}

/* The thread's events end inside a context switch -- a SAVE, nothing since:
 * killed in swapcontext, before the context it switches to logged its
 * RESUME (or began).  The final stack tells where it was: the saving
 * context's stack (the switch did not happen), or another suspended one's
 * (resumed, its RESUME not logged yet).  The suspended context whose frames
 * align best with it (of the 64 saved last) is taken up again: the fewest
 * open frames missing from the final stack (a context's frames are all on
 * it when it is the one running: a coroutine's co_resume -> co_call matches
 * the main context's final stack in co_call alone), then the most matched,
 * then the later.  The emission replay does the same (th->ctx_unsave_idx:
 * skips that SAVE; th->ctx_end_key: resumes the context at the end). */
static void ctx_at_end(struct dec *d, struct dthread *th, struct replay *r, const uint32_t *Sm, int truncated,
                       struct gap gp)
{
    if (r->ctx_pre != CTX_FRESH || r->n || !r->nsaves || th->nevents != r->save_nevents)
        return;
    struct rctx *best = NULL;
    size_t best_m = 0, best_u = 0;
    for (size_t k = 0; k < r->nctx; k++) {
        struct rctx *c = &r->ctxs[k];
        if (!c->used || !c->n || c->seq + 64 <= r->nsaves)
            continue;
        uint32_t *Lm = xrealloc(NULL, c->n * sizeof *Lm);
        long *ml = xrealloc(NULL, c->n * sizeof *ml);
        for (size_t i = 0; i < c->n; i++)
            Lm[i] = c->stk[i].match;
        align_final(d, th, Lm, c->n, Sm, truncated, gp, ml);
        size_t m = 0;
        for (size_t i = 0; i < c->n; i++)
            m += ml[i] >= 0;
        free(Lm);
        free(ml);
        size_t u = c->n - m;
        if (m && (!best || u < best_u || (u == best_u && (m > best_m || (m == best_m && c->seq > best->seq))))) {
            best = c;
            best_m = m;
            best_u = u;
        }
    }
    if (!best)
        return;
    if (best->seq == r->nsaves) {
        th->has_ctx_unsave = 1;
        th->ctx_unsave_idx = best->idx;
    } else {
        th->has_ctx_end = 1;
        th->ctx_end_key = best->key;
    }
    ctx_take_up(r, best);
}

static struct replay *discovery_pass(struct dec *d, struct dthread *th, int lazy)
{
    struct replay *r = rnew(d, th, 1);
    r->lazy = lazy;
    th->first_ns = th->last_ns = 0;
    for (size_t gi = 0; gi < d->ngens; gi++)
        replay_gen(r, gi);
    return r;
}

void replay_discover(struct dec *d, struct dthread *th)
{
    /* the final stack, outermost first.  Without symbols its return
     * addresses cannot be matched with the traced functions: not used. */
    const struct ftr_stack *fs =
        th->rt->stack >= 0 && !d->o.sym.no_symbols ? &d->t.stacks[th->rt->stack] : NULL;
    /* its frames as gdb shows them (inlined callers, signal frames, markers
     * where frames were not unwound: finalstack.c), outermost first */
    struct fs_frame *ff = NULL;
    size_t nS = fs && fs->npcs ? fs_frames(d, fs, &ff) : 0;
    uint32_t *Sm = NULL;
    size_t gap = nS; /* S index of the marker of frames the unwinder left out */
    struct gap gp = {nS, 0};
    if (nS) {
        size_t m = 0; /* tail-call frames are not open frames: they returned (-pg) or never
                         logged a return; they are only printed (finalstack.c) */
        for (size_t k = 0; k < nS; k++)
            if (!(ff[k].flags & FSF_TAILCALL))
                ff[m++] = ff[k];
        nS = m;
        th->final_funcs = xrealloc(NULL, (nS ? nS : 1) * sizeof *th->final_funcs);
        Sm = xrealloc(NULL, (nS ? nS : 1) * sizeof *Sm);
        for (size_t k = 0; k < nS; k++) {
            const struct fs_frame *f = &ff[nS - 1 - k]; /* innermost first there */
            th->final_funcs[k] = f->func;
            Sm[k] = sym_func(d->sym, f->func)->match;
            if (f->flags & FSF_CUT) {
                gap = k;
                gp.at = k;
                gp.n = f->ncut;
            }
        }
        th->nfinal = nS;
    }
    free(ff);

    struct dthread before = *th;
    struct replay *r = discovery_pass(d, th, 0);
    if (th->unmatched_catches && nS) {
        /* catches from outside the stack: the frames that are open at the
         * end when such catches pop nothing and that match the final stack
         * never returned; they must survive those catches */
        replay_free(r);
        *th = before;
        r = discovery_pass(d, th, 1);
        if (r->n) {
            uint32_t *Lm = xrealloc(NULL, r->n * sizeof *Lm);
            long *ml = xrealloc(NULL, r->n * sizeof *ml);
            for (size_t i = 0; i < r->n; i++)
                Lm[i] = r->stk[i].match;
            align_final(d, th, Lm, r->n, Sm, (fs->h.flags & FT_STKF_TRUNCATED) != 0, gp, ml);
            uint64_t *live = xrealloc(NULL, r->n * sizeof *live);
            size_t nlive = 0;
            for (size_t i = 0; i < r->n; i++)
                if (ml[i] >= 0 && r->stk[i].call_idx != NONE)
                    live[nlive++] = r->stk[i].call_idx;
            qsort(live, nlive, sizeof *live, cmp_u64);
            free(Lm);
            free(ml);
            replay_free(r);
            *th = before;
            th->live = live;
            th->nlive = nlive;
        } else {
            replay_free(r);
            *th = before;
        }
        r = discovery_pass(d, th, 0);
    }
    /* a thread that may have run on after its trace ended (th->ran_on_possible):
     * whatever context its final stack shows, its trace ends where it ends */
    if (nS && !th->ran_on_possible)
        ctx_at_end(d, th, r, Sm, (fs->h.flags & FT_STKF_TRUNCATED) != 0, gp);
    /* F: frames open at the end */
    uint32_t *Fm = xrealloc(NULL, (r->n ? r->n : 1) * sizeof *Fm);
    long *mf = xrealloc(NULL, (r->n ? r->n : 1) * sizeof *mf);
    for (size_t i = 0; i < r->n; i++)
        Fm[i] = r->stk[i].match;
    size_t first_match = nS;
    if (nS) {
        align_final(d, th, Fm, r->n, Sm, (fs->h.flags & FT_STKF_TRUNCATED) != 0, gp, mf);
        /* a truncated final stack lacks the outer frames: open frames outside
         * its outermost matched one may well be running */
        size_t outer = 0;
        if (fs->h.flags & FT_STKF_TRUNCATED)
            while (outer < r->n && mf[outer] < 0)
                outer++;
        th->abandoned = xrealloc(NULL, (r->n ? r->n : 1) * sizeof *th->abandoned);
        long below = -1; /* S index matched by the nearest open frame further out */
        for (size_t i = 0; i < r->n; i++) {
            if (mf[i] >= 0) {
                below = mf[i];
                if ((size_t)mf[i] < first_match)
                    first_match = (size_t)mf[i];
                continue;
            }
            if (i < outer)
                continue;
            /* frames the unwinder did not keep (the gap) may be this one */
            long above = -1;
            for (size_t j = i + 1; j < r->n && above < 0; j++)
                above = mf[j];
            if (gap < nS && below < (long)gap && (above < 0 || above > (long)gap))
                continue;
            if (th->ran_on_possible) { /* it returned after the trace ended: open at its end */
                th->ran_on++;
                continue;
            }
            th->abandoned[th->nabandoned++] = r->stk[i].call_idx;
        }
        qsort(th->abandoned, th->nabandoned, sizeof *th->abandoned, cmp_u64);
    }
    /* final-stack frames open during the whole ring: not the runtime's hook
     * frames at the top, nor a frame whose call the hook had not logged yet */
    long w = -1, unlogged;
    size_t usable = nS ? final_usable(d, th, &unlogged) : 0;
    for (size_t j = 0; j < first_match && j < usable; j++) {
        uint32_t f = th->final_funcs[j];
        struct func *fn = sym_func(d->sym, f);
        if (fn->unknown || fn->ignored)
            continue;
        if (fn->seen || sym_instrumented(d->sym, f))
            w = (long)j;
    }
    if (gap < nS && w >= 0 && (size_t)w < gap && first_match > gap)
        w = (long)gap; /* the frames between those and the open ones were not unwound: say so */
    if (nS && (fs->h.flags & FT_STKF_TRUNCATED) && w < 0 && th->lost_older)
        w = 0; /* neither the ring nor the final stack reaches the outermost frames: its
                  outermost entry is the marker "outer frames unknown" (finalstack.c) */
    if (r->ctx_pre != 0) {
        /* the final stack is another context's than the one the ring starts
         * in: a context resumed without its suspension in the ring gets
         * them below its orphan-returned frames (in the order of its list:
         * innermost first); a context started in the ring (makecontext)
         * has none of them traced */
        if (r->ctx_pre != CTX_FRESH)
            for (long j = w; j >= 0; j--) {
                uint32_t f = th->final_funcs[j];
                const struct func *fn = sym_func(d->sym, f);
                if (j == (long)gap || (fn->unknown && fn->modfile < 0))
                    continue;
                pre_add(r, f);
            }
        w = -1;
    }
    /* the marker of the frames the unwinder left out, when it is among
     * them: it stands for those the ring does not hold either.  When it is
     * the last of them, the open frames outside the outermost one matched
     * inside the gap's inner side lie in the gap (its innermost ones). */
    uint64_t cut_n = gp.n;
    if (gap < nS && w == (long)gap) {
        size_t o = 0;
        while (o < r->n && mf[o] <= (long)gap)
            o++;
        cut_n = o < gp.n ? gp.n - o : 0;
    }
    size_t np = (size_t)(w + 1) + r->npre;
    th->pre = xrealloc(NULL, (np ? np : 1) * sizeof *th->pre);
    th->npre = 0;
    th->pre_cut = SIZE_MAX;
    th->pre_cut_n = 0;
    for (long j = 0; j <= w; j++) { /* code without a symbol is a frame too (lib.so+0x...), not outside any module */
        uint32_t f = th->final_funcs[j];
        const struct func *fn = sym_func(d->sym, f);
        if (fn->unknown && fn->modfile < 0)
            continue;
        if (j == (long)gap) {
            if (!cut_n)
                continue; /* the ring holds every frame the unwinder left out */
            if (cut_n < gp.n) {
                char nm[96];
                snprintf(nm, sizeof nm, "[%llu of the %u frames not kept by the unwinder]", (unsigned long long)cut_n,
                         gp.n);
                f = sym_special(d->sym, nm);
            }
            th->pre_cut = th->npre;
            th->pre_cut_n = cut_n;
        }
        th->pre[th->npre++] = f;
    }
    th->npre_final = th->npre;
    for (size_t i = r->npre; i > 0; i--)
        th->pre[th->npre++] = r->pre[i - 1];
    /* the contexts resumed without their suspension in the ring: their
     * frames open at the resume, outermost first */
    th->ctx_pre = r->nxpre ? xcalloc(r->nxpre, sizeof *th->ctx_pre) : NULL;
    th->nctx_pre = 0;
    for (size_t i = 0; i < r->nxpre; i++) {
        const struct xpre *x = &r->xpre[i];
        if (!x->n)
            continue;
        struct ctx_pre *p = &th->ctx_pre[th->nctx_pre++];
        p->idx = x->idx;
        p->n = x->n;
        p->f = xmalloc(x->n * sizeof *p->f);
        for (size_t j = 0; j < x->n; j++)
            p->f[j] = x->f[x->n - 1 - j];
    }
    free(Fm);
    free(mf);
    free(Sm);
    replay_free(r);
}

void replay_forget(struct dthread *th, int owned)
{
    if (owned) {
        for (size_t i = 0; i < th->nctx_pre; i++)
            free(th->ctx_pre[i].f);
        free(th->ctx_pre);
        free(th->pre);
        free(th->abandoned);
        free(th->live);
        free(th->final_funcs);
    }
    th->pre = NULL;
    th->ctx_pre = NULL;
    th->nctx_pre = 0;
    th->has_ctx_unsave = th->has_ctx_end = th->has_ctx = 0;
    th->abandoned = th->live = NULL;
    th->final_funcs = NULL;
    th->npre = th->npre_final = th->nabandoned = th->nlive = th->nfinal = th->ran_on = 0;
    th->pre_cut = SIZE_MAX;
    th->pre_cut_n = 0;
    th->nevents = th->ncalls = th->nrets = th->ncatches = 0;
    th->orphans = th->mismatches = th->unmatched_catches = th->out_of_order = th->unnamed = 0;
    th->first_ns = th->last_ns = th->last_mns = 0;
}
