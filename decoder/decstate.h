/*
 * decstate.h -- the decoder's state, shared by the pipeline (decode.c), the
 * ring layer (gencuts.c, ringevents.c), the replay and the views: the
 * generations with their clocks (struct dgen), the threads with what the
 * discovery pass found (struct dthread), and the whole decoder (struct dec).
 */
#ifndef FT_DECODER_DECSTATE_H
#define FT_DECODER_DECSTATE_H

#include <stdint.h>
#include "clock.h"
#include "hmap.h"
#include "progress.h"
#include "opts.h"
#include "raw.h"
#include "sched.h"
#include "symtab.h"

struct dgen {
    uint64_t gen;        /* generation number */
    int synthetic;       /* 1: no record (events older than the oldest record,
                            or a trace without generations) */
    int estimated;       /* 1: no record either, but generations gen..gen_last
                            once were: the ring's part older than the oldest
                            record, cut at start times estimated from the
                            recorded period (genestimate.c) */
    uint64_t gen_last;   /* estimated: the newest generation number it covers */
    uint64_t start_tsc;
    struct ft_clock clk;
    int64_t start_ns, end_ns; /* monotonic-clock ns; end = next start */
    int64_t wall_off;    /* CLOCK_REALTIME - CLOCK_MONOTONIC at this snapshot */
    int space;           /* symtab address space */
    int emit;            /* in the output */
    uint32_t nthreads_with_events, nthreads_incomplete;
};

struct dthread {
    const struct ftr_thread *rt;
    int index;           /* in the raw */
    uint64_t *cut;       /* [ngens + 1]: first ring item of each generation */
    uint8_t *incomplete; /* [ngens]: the ring does not reach back to the start */
    uint8_t *by_tsc;     /* [ngens]: gen_pos unusable, cut by timestamps */
    int lost_older;      /* the ring lost older events (wrapped, dropped, filtered) */
    int lost_filtered;   /* older events left out by the snapshot's start time */
    int lost_overwritten; /* the ring wrapped (or lost its memory/raced) */
    int has_first;
    uint64_t first_tsc;  /* oldest timestamp in the ring */
    /* ring8.c: zeroed or invalid items inside the ring's window (lost events) */
    uint64_t ninvalid, invalid_first, invalid_last;
    int has_invalid_tsc;
    uint64_t invalid_tsc; /* the time of the last event before the first of them */
    uint64_t checked_from; /* the items checked for them: [checked_from, n) (0: the whole ring;
                              more only when the text view reads the ring's end) */
    struct ring8 *ring8; /* FT_FMT_EXACT8 / SAMPLED4 decoding state (ringesc.h) */
    int64_t first_ns, last_ns, end_ns; /* last_ns: the last event's own ns (see replay.c) */
    const uint32_t *slice_ctx; /* while a VIEW_CALLS view takes this thread's slices: the
                            context (swapcontext) each call was made in, by slice; NULL: one */
    const int64_t *slice_ub; /* while a view takes this thread's slices: the upper bound
                            of each SL_BOUND slice's duration (ns), by slice; the
                            entries of the other slices are not set */
    const int64_t *slice_cdur; /* ... and each SL_OWN_CDUR slice's whole call's duration
                            (slice.h: slice_cdur; the other slices' is end - start) */
    uint64_t tail_tsc;   /* sampled time: no event of the thread is later than this TSC (the
                            fatal signal it took froze tracing, its exit, the snapshot:
                            decode.c, ringevents.c); 0: not known */
    int64_t last_mns;    /* the last event's measured time */
    int crashed;
    /* tracing froze at another thread's fault and stayed frozen until the
     * process died (the program's handler ran meanwhile): this thread's
     * final stack was taken after its trace ended, and it may have run on */
    int ran_on_possible;
    size_t ran_on;       /* open frames at the trace's end that are not on the final stack */
    int shown;           /* selected by --tid (filter.c), 1 without it */
    uint64_t lo;         /* the first ring item replayed (0: all; the text view
                            reads the end of a ring: textwindow.c) */
    /* discovery results */
    uint32_t *pre;       /* frames open at the ring start, outermost first */
    size_t npre;
    size_t npre_final;   /* of which the first npre_final come from the final stack */
    size_t pre_cut;      /* pre[pre_cut]: the marker of frames the unwinder did not keep (SIZE_MAX: none) */
    uint64_t pre_cut_n;  /* how many frames it stands for (those the ring does not hold either):
                            the frames above it are pre_cut_n - 1 deeper than their index */
    uint64_t *abandoned; /* call item indices of frames missing from the final stack */
    size_t nabandoned;
    uint64_t *live;      /* call item indices of frames the final stack proves live at the end
                            (only computed for threads with unmatched catches), sorted */
    size_t nlive;
    /* frames open when a context was resumed whose suspension the ring does
     * not hold (swapcontext: replay.c), by the index of the resume's key item */
    struct ctx_pre {
        uint64_t idx;
        uint32_t *f;     /* outermost first */
        size_t n;
    } *ctx_pre;
    size_t nctx_pre;
    /* the thread's events end inside a switch (killed in swapcontext: a SAVE
     * logged, nothing since): the final stack is the saving context's (the
     * SAVE whose key item is ctx_unsave_idx did not happen), or another
     * suspended context's (ctx_end_key: resumed at the end) */
    int has_ctx_unsave, has_ctx_end;
    int has_ctx;         /* the discovery replay met a context switch (replay.c) */
    uint64_t ctx_unsave_idx, ctx_end_key;
    uint32_t *final_funcs; /* final stack, outermost first (func ids) */
    size_t nfinal;
    /* counters */
    uint64_t nevents, ncalls, nrets, ncatches;
    uint64_t orphans, mismatches, unmatched_catches, out_of_order, unnamed;
};

struct dec {
    struct dec_opts o;
    struct ftr_src src;
    struct ftr_trace t;
    struct symtab *sym;
    struct dgen *gens;
    size_t ngens;
    struct dthread *th;
    size_t nth;
    int sampled;         /* time mode sampled */
    int tail_only;       /* only the text view: the rings' ends are read (textwindow.c) */
    uint64_t tsc_hz;
    int have_wall;
    int64_t wall_off;    /* of the newest generation */
    int64_t end_ns;      /* end of the trace (newest event / snapshot) */
    int64_t base_ns;     /* start of the generations shown */
    int64_t ts_zero_ns;  /* JSON ts origin: base_ns, or its local midnight (-w) */
    int first_emit;      /* index of the first emitted generation */
    uint64_t crash_tid;
    uint64_t pid;
    int nwarn;
    int problems;        /* decoded with problems -> EXIT_PROBLEMS */
    uint64_t total_events;
    struct progress prog; /* ring items replayed (replay.c), on a terminal */
    struct dsched *sched; /* scheduling states (sched.h, sched_states.c) */
    /* a replay's slice array between its batches (replay.c): the emission
     * replays of the threads take turns with one array instead of each
     * faulting in a fresh one for every generation */
    struct slice *sl_spare;
    size_t sl_spare_cap;
    /* the latest resume of each context key on any thread, found by the
     * discovery replays (replay.c): a context still suspended at a thread's
     * end that another thread resumed after went on there (a fiber moved) */
    struct hmap ctx_resumed; /* key -> index in ctx_res */
    struct ctx_resume_at {
        int64_t t;
        int th; /* thread index */
    } *ctx_res;
    size_t nctx_res, ctx_rescap;
    /* contexts that move between threads (replay.c): the first discovery
     * replays note which thread saved each key (ctx_saver: key -> thread
     * index + 1, or CTX_SAVERS_MANY); when a key was saved on two threads,
     * the threads that switch are replayed again to collect the saves of
     * such keys (ctx_saves_phase 1), sorted by key and time, then once more
     * with them (phase 2): a context resumed on the thread that saved it,
     * but saved on another thread in between, went on there (a fiber moved
     * away and back) */
    struct hmap ctx_saver;
    int ctx_moved; /* some key is CTX_SAVERS_MANY */
    struct ctx_save_at {
        uint64_t key;
        int64_t t;
        int th; /* thread index */
    } *ctx_saves;
    size_t nctx_saves, ctx_savecap;
    int ctx_saves_phase;
};

/* a warning on stderr (at most 40; none with --quiet) */
void dec_warn(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
