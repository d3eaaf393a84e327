/*
 * tracefacts.h -- what the views say about the trace as a whole
 * (tracefacts.c): what is missing and why, snapshot or crash, thread marks.
 */
#ifndef FT_DECODER_TRACEFACTS_H
#define FT_DECODER_TRACEFACTS_H

#include <stddef.h>
#include "decstate.h"

/* what is missing from the input and why, one sentence each; damage: the
 * input is incomplete or damaged (exit 3), else a note */
#define DEC_MAX_PROBLEMS 16
struct problem {
    char text[200];
    int damage;
};
size_t dec_problems(const struct dec *d, struct problem *out, size_t max);

/* A snapshot the runtime took on FUNTRACE_SIGNAL: its SIGINFO is the signal
 * that asked for it, not one that ended the process (the on-crash snapshot's
 * signals are the fatal ones SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT). */
int dec_signal_snapshot(const struct ftr_trace *t);

/* a generation's name: "generation N", "generation N (estimated)" or
 * "generations A..B (estimated)" (struct dgen.estimated) */
void dec_gen_name(const struct dgen *g, char *buf, size_t len);

/* " [crashed]" / " [signaled]" for the thread the recorded signal hit, else "" */
const char *dec_thread_mark(const struct dec *d, uint64_t tid);

#endif
