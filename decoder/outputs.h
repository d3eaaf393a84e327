/*
 * outputs.h -- the views the command line asks for, and how the pipeline
 * drives them (outputs.c): every VIEW_PIECES view (the files, the report)
 * shares one replay of the whole rings, through the filters; the text view
 * replays the ends of the rings for itself (textwindow.c); then the files are
 * completed and the views on stdout printed: summary, text, report.
 */
#ifndef FT_DECODER_OUTPUTS_H
#define FT_DECODER_OUTPUTS_H

#include <stddef.h>
#include "decstate.h"
#include "filter.h"
#include "view.h"

#define OUT_MAX 8

struct outputs {
    struct view *pieces[OUT_MAX]; /* VIEW_PIECES views, files first */
    size_t npieces;
    struct view *term[OUT_MAX];   /* the views printed on stdout, in order */
    size_t nterm;
    struct view *json, *text;
    struct filter *filter;
};

/* 0, or -1 after one line on stderr (a bad regular expression) */
int outputs_open(struct outputs *out, const struct dec_opts *o);
void outputs_close(struct outputs *out);
/* do the views need whole-ring discoveries (else only the text view is
 * asked for: it reads the ends of the rings) */
int outputs_whole_rings(const struct outputs *out);
/* how many replays of the whole rings the views need after the discovery */
int outputs_replays(const struct outputs *out);
/* the filters' threads (th->shown) once d->th are set up, their times
 * once the trace's start and end are known: 0, or -1 after one line on
 * stderr */
int outputs_resolve_threads(struct outputs *out, struct dec *d);
int outputs_resolve_times(struct outputs *out, struct dec *d);
/* replay into every view, complete the files and print the rest:
 * EXIT_OK or EXIT_OUTPUT (after one line on stderr per failure) */
int outputs_write(struct outputs *out, struct dec *d);
/* only the views on stdout, without a replay (a trace without events) */
int outputs_print_empty(struct outputs *out, struct dec *d);

#endif
