/*
 * opts.h -- what the command line asks of the decoder (main.c fills it,
 * decode.c acts on it), and the decoder's exit codes.
 */
#ifndef FT_DECODER_OPTS_H
#define FT_DECODER_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include "symtab.h"
#include "timearg.h"

/* exit codes (documented in --help and the README) */
#define EXIT_OK 0
#define EXIT_NO_TRACE 1   /* valid raw, but no trace events in it */
#define EXIT_BAD_INPUT 2  /* unusable input or bad arguments */
#define EXIT_PROBLEMS 3   /* decoded, but the input is damaged or incomplete */
#define EXIT_OUTPUT 4     /* cannot write an output file */

/* --sort */
#define SORT_SELF 0
#define SORT_TOTAL 1
#define SORT_CALLS 2
#define SORT_MAX 3
#define SORT_AVG 4
#define SORT_NAME 5

struct dec_opts {
    const char *input;
    const char *json_path; /* NULL: no JSON ("-": stdout, as the other paths) */
    const char *perfetto_path;
    const char *flame_path;
    int text, summary, report;
    int sort;              /* --report: SORT_* */
    int by_thread;         /* --report / --flamegraph: per thread */
    int ncalls;            /* --text: calls per thread */
    int generations;       /* 0: all covered */
    int sample;            /* -1: last */
    int wallclock;
    int no_source;
    int max_threads_text;  /* --text: threads shown (0 = all) */
    struct sym_opts sym;
    /* filters (filter.h) */
    const char *tids;      /* --tid TID[,TID...] */
    const char **func_re;  /* -F (any of them), nfunc_re entries */
    size_t nfunc_re;
    const char **not_func_re; /* -N */
    size_t nnot_func_re;
    struct ta_point since, until;
    int depth;             /* 0: any */
    int64_t min_dur;       /* 0: any */
    int reference_replay;  /* --reference-replay: no fast paths in the replay (replay.c) */
};

#endif
