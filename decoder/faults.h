/*
 * faults.h -- the fatal-signal episodes the runtime recorded (FAULTS chunk,
 * FORMAT.md 1.9 and 2.2): the original fault of a crash whose core shows a
 * later signal, and the faults a program's handler recovered from, as they
 * appear in --text, --summary and the JSON.
 */
#ifndef FT_DECODER_FAULTS_H
#define FT_DECODER_FAULTS_H

#include "decstate.h"
#include "outbuf.h"
#include "view.h"

/* the episode the process died in (state ACTIVE, the newest one), or NULL */
const struct ft_fault *dec_original_fault(const struct ftr_trace *t);
/* the ns of a TSC value on the decoder's clock (the generation holding it) */
int64_t dec_tsc_ns(const struct dec *d, uint64_t tsc);
/* "si_code 1 (SEGV_MAPERR)" */
void fmt_si_code(char *buf, size_t n, int sig, int code);

/* --text header / --summary: the fault lines (before the signal line);
 * returns 1 if the SIGINFO chunk's signal is the original fault itself */
int faults_print_header(struct dec *d, struct outbuf *o, const char *indent);
/* --text header / --summary, after the signal line: what the handler did */
void faults_print_after(struct dec *d, struct outbuf *o, const char *indent);
/* --text: the episodes of thread th whose time is in [lo_ns, hi_ns), as
 * timeline lines */
void faults_print_thread(struct dec *d, const struct dthread *th, int64_t lo_ns, int64_t hi_ns, struct outbuf *o);
/* the views with instants (JSON, Perfetto): the episodes of thread th whose
 * time is in [lo_ns, hi_ns) (the replay calls this per generation) */
void faults_instants(struct dec *d, struct dthread *th, struct view *out, int64_t lo_ns, int64_t hi_ns);

#endif
