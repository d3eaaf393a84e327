/*
 * outputs.c -- see outputs.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs.h"
#include "replay.h"
#include "textwindow.h"
#include "views.h"
#include "viewtee.h"
#include "xalloc.h"

int outputs_open(struct outputs *out, const struct dec_opts *o)
{
    memset(out, 0, sizeof *out);
    if (filter_new(o, &out->filter))
        return -1;
    if (o->json_path)
        out->pieces[out->npieces++] = out->json = json_view_new(o->json_path);
    if (o->perfetto_path)
        out->pieces[out->npieces++] = perfetto_view_new(o->perfetto_path);
    if (o->flame_path)
        out->pieces[out->npieces++] = flamegraph_view_new(o->flame_path);
    if (o->summary)
        out->term[out->nterm++] = summary_view_new();
    if (o->text)
        out->term[out->nterm++] = out->text = text_view_new();
    if (o->report) /* a VIEW_PIECES view printed on stdout */
        out->term[out->nterm++] = out->pieces[out->npieces++] = report_view_new();
    return 0;
}

void outputs_close(struct outputs *out)
{
    for (size_t i = 0; i < out->npieces; i++)
        if (out->pieces[i]->path) /* the ones on stdout are in term[] too */
            out->pieces[i]->ops->destroy(out->pieces[i]);
    for (size_t i = 0; i < out->nterm; i++)
        out->term[i]->ops->destroy(out->term[i]);
    filter_free(out->filter);
}

int outputs_whole_rings(const struct outputs *out)
{
    for (size_t i = 0; i < out->nterm; i++)
        if (out->term[i] != out->text)
            return 1;
    return out->npieces > 0;
}

int outputs_replays(const struct outputs *out)
{
    return out->npieces ? 1 + filter_needs_call_durations(out->filter) : 0;
}

int outputs_resolve_threads(struct outputs *out, struct dec *d)
{
    return filter_resolve_threads(out->filter, d);
}

int outputs_resolve_times(struct outputs *out, struct dec *d)
{
    return filter_resolve_times(out->filter, d);
}

/* a view with the filters in front of it (or v itself) */
static struct view *filtered(struct outputs *out, struct view *v)
{
    return out->filter ? filter_view_new(out->filter, v) : v;
}

/* every thread, generation by generation, into the VIEW_PIECES views */
static void replay_pieces(struct outputs *out, struct dec *d)
{
    struct view *tee = view_tee_new(VIEW_PIECES, out->pieces, out->npieces);
    struct view *in = filtered(out, tee);
    int measure = filter_needs_call_durations(out->filter);
    struct replay **rp = xcalloc(d->nth, sizeof *rp);
    for (size_t i = 0; i < d->nth; i++) {
        if (!d->th[i].shown)
            continue;
        rp[i] = replay_new(d, &d->th[i], in);
        if (measure)
            replay_measure(rp[i]);
    }
    for (size_t gi = 0; gi < d->ngens; gi++)
        for (size_t i = 0; i < d->nth; i++)
            if (rp[i])
                replay_gen(rp[i], gi);
    for (size_t i = 0; i < d->nth; i++)
        replay_free(rp[i]);
    free(rp);
    if (in != tee)
        in->ops->destroy(in);
    tee->ops->destroy(tee);
}

static const char *where(const struct view *v)
{
    return v->path && strcmp(v->path, "-") ? v->path : "stdout";
}

/* the views on stdout: begin, (the text view's replay), end */
static int print_term(struct outputs *out, struct dec *d, int replay)
{
    int err = 0;
    for (size_t i = 0; i < out->nterm && !err; i++) {
        struct view *v = out->term[i];
        int begun = 0; /* a VIEW_PIECES view on stdout began with the files */
        for (size_t k = 0; replay && k < out->npieces; k++)
            begun |= out->pieces[k] == v;
        if (v->ops->begin && !begun)
            err = v->ops->begin(v, d);
        if (!err && v == out->text && replay) {
            struct view *in = filtered(out, v);
            tw_replay(d, v, in, !outputs_whole_rings(out));
            if (in != v)
                in->ops->destroy(in);
        }
        if (!err && v->ops->end)
            err = v->ops->end(v, d);
    }
    if (err)
        fprintf(stderr, "funtrace-decode: cannot write to stdout: %s\n", strerror(err));
    return err ? EXIT_OUTPUT : EXIT_OK;
}

int outputs_write(struct outputs *out, struct dec *d)
{
    for (size_t i = 0; i < out->npieces; i++) {
        struct view *v = out->pieces[i];
        int err = v->ops->begin ? v->ops->begin(v, d) : 0;
        if (err) {
            fprintf(stderr, "funtrace-decode: cannot write %s: %s\n", where(v), strerror(err));
            return EXIT_OUTPUT;
        }
    }
    if (out->npieces)
        replay_pieces(out, d);
    progress_end(&d->prog);
    int rc = EXIT_OK;
    for (size_t i = 0; i < out->npieces; i++) {
        struct view *v = out->pieces[i];
        if (!v->path)
            continue; /* printed on stdout below, in its turn */
        int err = v->ops->end ? v->ops->end(v, d) : 0;
        if (err) {
            fprintf(stderr, "funtrace-decode: cannot write %s: %s\n", where(v), strerror(err));
            rc = EXIT_OUTPUT;
        } else if (v == out->json && !d->o.sym.quiet && strcmp(v->path, "-")) {
            fprintf(stderr, "funtrace-decode: wrote %s: %zu threads, %llu slices\n", v->path, d->nth,
                    (unsigned long long)json_view_slices(v));
        } else if (!d->o.sym.quiet && strcmp(v->path, "-")) {
            fprintf(stderr, "funtrace-decode: wrote %s\n", v->path);
        }
    }
    if (print_term(out, d, 1))
        rc = EXIT_OUTPUT;
    return rc;
}

int outputs_print_empty(struct outputs *out, struct dec *d)
{
    progress_end(&d->prog);
    return print_term(out, d, 0);
}
