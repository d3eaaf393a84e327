/*
 * opts.h -- what the command line asks of the decoder (main.c fills it,
 * decode.c acts on it), and the decoder's exit codes.
 */
#ifndef FT_DECODER_OPTS_H
#define FT_DECODER_OPTS_H

#include "symtab.h"

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

#endif
