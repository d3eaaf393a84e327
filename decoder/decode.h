/*
 * decode.h -- the decoder's shared state: generations, threads, slices.
 *
 * Pipeline (decode.c): load the raw (raw.c) -> generations with their clocks
 * -> per-thread generation cuts (gencuts.c) -> discovery pass per thread
 * (replay.c: the stack at the ring's start, reconciled with the final stack)
 * -> emission pass, generation by generation (replay.c) into the JSON
 * (json.c), text (text.c) and summary (summary.c) views.
 */
#ifndef FT_DECODER_DECODE_H
#define FT_DECODER_DECODE_H

#include <stdint.h>
#include "clock.h"
#include "outbuf.h"
#include "raw.h"
#include "symtab.h"
#include "xalloc.h"
#include "sched.h"

/* exit codes (documented in --help and the README) */
#define EXIT_OK 0
#define EXIT_NO_TRACE 1   /* valid raw, but no trace events in it */
#define EXIT_BAD_INPUT 2  /* unusable input or bad arguments */
#define EXIT_PROBLEMS 3   /* decoded, but the input is damaged or incomplete */
#define EXIT_OUTPUT 4     /* cannot write an output file */

struct dec_opts {
    const char *input;
    const char *json_path; /* NULL: no JSON */
    int text, summary;
    int ncalls;            /* --text: calls per thread */
    int generations;       /* 0: all covered */
    int sample;            /* -1: last */
    int wallclock;
    int no_source;
    int max_threads_text;  /* --text: threads shown (0 = all) */
    struct sym_opts sym;
};

struct dgen {
    uint64_t gen;        /* generation number */
    int synthetic;       /* 1: no record (events older than the oldest record,
                            or a trace without generations) */
    uint64_t start_tsc;
    struct ft_clock clk;
    int64_t start_ns, end_ns; /* monotonic-clock ns; end = next start */
    int64_t wall_off;    /* CLOCK_REALTIME - CLOCK_MONOTONIC at this snapshot */
    int space;           /* symtab address space */
    int emit;            /* in the output */
    uint32_t nthreads_with_events, nthreads_incomplete;
};

/* slice flags */
#define SL_FROM_PREV   0x001u /* began in an earlier generation (clipped) */
#define SL_TO_NEXT     0x002u /* goes on in the next generation (clipped) */
#define SL_OPEN        0x004u /* still open at the end of the trace */
#define SL_ABANDONED   0x008u /* its return is missing (longjmp, tail call, ...) */
#define SL_UNWOUND     0x010u /* unwound by a C++ exception (popped by a catch) */
#define SL_START_UNK   0x020u /* open when the ring starts: began earlier */
#define SL_UNMEASURED  0x040u /* sampled mode: an end point was interpolated */
#define SL_PENDING     0x080u /* end not known yet */
#define SL_BOUND       0x100u /* sampled mode: an end point lies in a loose bracket:
                                 the duration is at most ub (ringevents.c) */

struct slice {
    uint32_t func;
    uint16_t flags;
    uint16_t depth;
    int64_t start, end;
    int64_t ub;          /* SL_BOUND: upper bound of the duration, ns */
};

struct trec { /* --text: one call */
    uint32_t func;
    uint16_t flags;
    uint16_t depth;
    int64_t start, end;
    int64_t ub;          /* SL_BOUND: upper bound of the duration, ns */
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
    int64_t first_ns, last_ns, end_ns; /* last_ns: the last event's own ns (see replay.c) */
    int64_t last_mns;    /* the last event's measured time */
    int crashed;
    /* discovery results */
    uint32_t *pre;       /* frames open at the ring start, outermost first */
    size_t npre;
    size_t npre_final;   /* of which the first npre_final come from the final stack */
    uint64_t *abandoned; /* call item indices of frames missing from the final stack */
    size_t nabandoned;
    uint64_t *live;      /* call item indices of frames the final stack proves live at the end
                            (only computed for threads with unmatched catches), sorted */
    size_t nlive;
    uint8_t *modcalls;   /* [nmodcalls]: module files with call events in this thread */
    size_t nmodcalls;
    uint32_t *final_funcs; /* final stack, outermost first (func ids) */
    size_t nfinal;
    /* counters */
    uint64_t nevents, ncalls, nrets, ncatches;
    uint64_t orphans, mismatches, unmatched_catches, out_of_order, unnamed;
    uint64_t slices;
    /* --text */
    struct trec *ring;
    uint64_t ring_seq;
    /* the frames that were open when the oldest call in ring started and
     * enclose it, outermost first (anc[k].depth == k); anc_seq[k]: its ring seq */
    struct trec *anc;
    uint64_t *anc_seq;
    size_t nanc, anccap;
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
    struct dsched *sched; /* scheduling states (sched.h, sched_states.c) */
};

void dec_warn(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* gencuts.c */
void cuts_compute(struct dec *d, struct dthread *th);

/* ringevents.c: ring items of th in [lo, hi) as events, with timestamps
 * (sampled mode: interpolated).  *carry keeps the sampled-mode interpolation
 * state between consecutive ranges of one thread. */
struct ev_carry {
    int have;            /* a stamp was seen */
    uint64_t tsc;        /* last stamp */
    uint64_t ord;        /* its event ordinal */
    uint64_t next_ord;   /* ordinal of the next event */
};
/* exact: EV_EXACT (its own timestamp), EV_DENSE (interpolated in a dense
 * bracket, or one-sided) or EV_LOOSE (interpolated in a bracket [lo, hi]
 * wider than EV_LOOSE_NS per event: the time is anywhere in it); lo = hi =
 * tsc unless EV_LOOSE */
#define EV_DENSE 0
#define EV_EXACT 1
#define EV_LOOSE 2
#define EV_LOOSE_NS 1000
typedef void (*ev_fn)(void *ctx, uint64_t word, uint64_t tsc, int exact, uint64_t idx, uint64_t lo, uint64_t hi);
void ev_run(struct dec *d, struct dthread *th, uint64_t lo, uint64_t hi, uint64_t ref_tsc,
            struct ev_carry *carry, ev_fn fn, void *ctx);
/* timestamp at ring item i (exact mode) / of the time word at i (sampled);
 * returns 0 if there is none */
int ev_tsc_at(struct dec *d, struct dthread *th, uint64_t i, uint64_t ref_tsc, uint64_t *tsc);
uint64_t ev_restore_tsc(uint64_t low61, uint64_t ref);

/* replay.c */
void replay_discover(struct dec *d, struct dthread *th);
struct replay;
struct replay *replay_new(struct dec *d, struct dthread *th);
void replay_gen(struct replay *r, size_t gi);
void replay_free(struct replay *r);

/* json.c: the JSON goes to PATH.tmp.PID, renamed to PATH by json_end when
 * all of it was written (removed otherwise); begin/end return 0 or an errno */
int json_begin(struct dec *d, const char *path);
void json_slices(struct dec *d, struct dthread *th, const struct slice *s, size_t n);
void json_instant_thread(struct dec *d, struct dthread *th, int64_t ns, const char *name, const char *args);
int json_end(struct dec *d);

/* text.c / summary.c */
void text_print(struct dec *d, struct outbuf *o);
void summary_print(struct dec *d, struct outbuf *o);
/* what is missing from the input and why, one sentence each; damage: the
 * input is incomplete or damaged (exit 3), else a note */
#define DEC_MAX_PROBLEMS 16
struct problem {
    char text[200];
    int damage;
};
size_t dec_problems(const struct dec *d, struct problem *out, size_t max);
/* shared formatting */
void fmt_dur(char *buf, size_t n, int64_t ns);
void fmt_wall(char *buf, size_t n, int64_t wall_ns, int with_date);
const char *sig_name(int sig);
/* why a thread's older events are missing ("overwritten", "left out by the
 * snapshot's start time", ...), for "older events ..." */
const char *dec_lost_why(const struct dthread *th);
/* A snapshot the runtime took on FUNTRACE_SIGNAL: its SIGINFO is the signal
 * that asked for it, not one that ended the process (the on-crash snapshot's
 * signals are the fatal ones SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT). */
int dec_signal_snapshot(const struct ftr_trace *t);

#endif
