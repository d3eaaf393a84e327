/*
 * views.h -- the views the decoder can write (each implements view.h).
 */
#ifndef FT_DECODER_VIEWS_H
#define FT_DECODER_VIEWS_H

#include <stdint.h>
#include "view.h"

/* Chrome Trace Event JSON (json.c): written to PATH.tmp.PID and renamed to
 * PATH when complete ("-": stdout) */
struct view *json_view_new(const char *path);
uint64_t json_view_slices(const struct view *v); /* slices written */

/* --text, the terminal view (text.c, finalstack.c): stdout */
struct view *text_view_new(void);
struct dec;
struct dthread;
/* does the text view show thread th (--tid) */
int text_view_wants(const struct view *v, const struct dec *d, const struct dthread *th);
/* the calls it got for th (after the filters) */
size_t text_view_calls(const struct view *v, const struct dthread *th);

/* --summary (summary.c): stdout */
struct view *summary_view_new(void);

/* --report (report.c): stdout */
struct view *report_view_new(void);

/* --perfetto (perfetto.c): native Perfetto protobuf written like the JSON */
struct view *perfetto_view_new(const char *path);

/* --flamegraph (flamegraph.c): folded stacks written like the JSON */
struct view *flamegraph_view_new(const char *path);

#endif
