/*
 * sched_views.c -- the scheduling states in the decoder's outputs (sched.h):
 * the status line, the JSON's "systemTraceEvents" (ftrace text, which
 * Perfetto and chrome://tracing turn into per-thread state tracks and CPU
 * tracks) and the --text lines for long waits.
 */
#include "decode.h"
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- status line ------------------------------------------------------------ */

void sched_status_line(struct dec *d, struct outbuf *o, const char *label)
{
    const struct dsched *s = d->sched;
    if (!d->t.has_header) return; /* the original funtrace's raws: nothing to say */
    ob_str(o, label);
    if (!s || !s->present) {
        ob_str(o, "none (this raw has no SCHEDEVT chunk: its producer does not record scheduling events)\n");
        return;
    }
    if (s->h.status != FT_SCHED_OK) {
        ob_str(o, "none: ");
        ob_text(o, s->h.why);
        ob_char(o, '\n');
        return;
    }
    size_t nthr = 0;
    for (size_t i = 0; i < s->nth; i++) nthr += s->th[i].n != 0;
    ob_printf(o, "%zu scheduling events, states of %zu thread%s (tracefs instance ", s->nev, nthr,
              nthr == 1 ? "" : "s");
    ob_text(o, s->h.why);
    ob_char(o, ')');
    if (s->known_from != INT64_MIN && s->known_from < d->end_ns) {
        char b[64];
        fmt_dur(b, sizeof b, d->end_ns - s->known_from);
        ob_printf(o, "; known for the last %s", b);
    }
    if (s->h.flags & FT_SCHEDF_DROPPED) ob_str(o, "; older events did not fit the capture buffer");
    if (s->h.flags & FT_SCHEDF_LOST) ob_str(o, "; the kernel lost events while they were read");
    if (s->h.flags & FT_SCHEDF_TRACING_OFF) ob_str(o, "; the instance's tracing_on is 0 (nothing new is recorded)");
    ob_char(o, '\n');
}

/* ---- JSON: systemTraceEvents ------------------------------------------------ */

struct sbuf {
    char *p;
    size_t n, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* a command as one ftrace text token: no spaces or control characters */
static void comm_tok(char out[17], const char *c)
{
    size_t i = 0;
    for (; i < 16 && c[i]; i++) out[i] = (unsigned char)c[i] <= ' ' || c[i] == 0x7f ? '_' : c[i];
    if (!i) out[i++] = '?';
    out[i] = 0;
}

void sched_json(struct dec *d, struct outbuf *o, int64_t base)
{
    const struct dsched *s = d->sched;
    if (!s || !s->present || s->h.status != FT_SCHED_OK || !s->nev) return;
    struct sbuf b = { NULL, 0, 0 };
    const char *hdr = "# tracer: nop\n#\n";
    sb_add(&b, hdr, strlen(hdr));
    for (size_t i = 0; i < s->nev; i++) {
        const struct ft_raw_sched_event *e = &s->ev[i];
        int64_t ns = 0;
        { /* the decoder's clock: the generation of the event */
            size_t lo = 0, hi = d->ngens;
            while (hi - lo > 1) {
                size_t m = lo + (hi - lo) / 2;
                if (!d->gens[m].synthetic && d->gens[m].start_tsc <= e->tsc) lo = m;
                else hi = m;
            }
            ns = ft_clock_ns(&d->gens[lo].clk, e->tsc) - base;
        }
        if (ns < 0) continue; /* before the JSON's time origin */
        char cur[17], a[17], bb[17], tg[16], line[400];
        int is_switch = e->kind == FT_SCHED_SWITCH;
        comm_tok(cur, is_switch ? e->comm : e->other_comm);
        comm_tok(a, e->comm);
        comm_tok(bb, e->other_comm);
        if (e->cur_tgid) snprintf(tg, sizeof tg, "%7u", e->cur_tgid);
        else snprintf(tg, sizeof tg, "-------");
        int n = snprintf(line, sizeof line, "%16s-%-7u (%s) [%03u] d..2 %lld.%09lld: ", cur,
                         is_switch ? e->tid : e->other, tg, e->cpu, (long long)(ns / 1000000000),
                         (long long)(ns % 1000000000));
        if (is_switch)
            n += snprintf(line + n, sizeof line - (size_t)n,
                          "sched_switch: prev_comm=%s prev_pid=%u prev_prio=120 prev_state=%c%s ==> "
                          "next_comm=%s next_pid=%u next_prio=120\n",
                          a, e->tid, e->state > ' ' && e->state < 0x7f ? e->state : '?',
                          (e->flags & FT_SCHEDEV_PREEMPTED) ? "+" : "", bb, e->other);
        else
            n += snprintf(line + n, sizeof line - (size_t)n, "%s: comm=%s pid=%u prio=120 target_cpu=%03u\n",
                          e->kind == FT_SCHED_WAKING ? "sched_waking" : "sched_wakeup_new", a, e->tid, e->cpu);
        sb_add(&b, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
    }
    ob_str(o, "\"systemTraceEvents\":");
    ob_json_str(o, b.p, b.n);
    ob_str(o, ",\n");
    free(b.p);
}

/* ---- --text: long waits ------------------------------------------------------- */

static const char *blocked_why(uint8_t l)
{
    switch (l) {
    case 'S': return "sleeping, S";
    case 'D': return "uninterruptible, D";
    case 'T': return "stopped, T";
    case 't': return "traced, t";
    case 'X': return "exiting, X";
    case 'Z': return "zombie, Z";
    case 'P': return "parked, P";
    case 'I': return "idle, I";
    default: return "since before the first scheduling event";
    }
}

static void waker_text(struct dec *d, const struct sched_iv *w, char *buf, size_t n)
{
    if (w->waker == 0 || (w->flags & SIV_IRQ && w->waker_tgid != d->pid)) {
        snprintf(buf, n, "%s from an interrupt", w->flags & SIV_NEW ? "created" : "woken");
        return;
    }
    char comm[17];
    size_t k = 0;
    for (; k < 16 && w->waker_comm[k]; k++) comm[k] = w->waker_comm[k];
    comm[k] = 0;
    int len = snprintf(buf, n, "%s by thread %u \"%s\"", w->flags & SIV_NEW ? "created" : "woken", w->waker, comm);
    if (len > 0 && (size_t)len < n && w->waker_tgid && w->waker_tgid != d->pid)
        snprintf(buf + len, n - (size_t)len, " of process %u", w->waker_tgid);
}

static void wait_line(struct dec *d, const struct sched_iv *v, int64_t dur, const char *what,
                      const struct trec *calls, size_t ncalls, struct outbuf *o)
{
    char b1[64], b2[64];
    if (d->o.wallclock && d->have_wall) fmt_wall(b1, sizeof b1, v->start + d->wall_off, 0);
    else fmt_dur(b1, sizeof b1, v->start - d->end_ns);
    fmt_dur(b2, sizeof b2, dur);
    int depth = -1;
    for (size_t i = 0; i < ncalls; i++) /* the innermost call shown that was running then */
        if (calls[i].start <= v->start &&
            ((calls[i].flags & (SL_OPEN | SL_PENDING)) || calls[i].end >= v->start) && calls[i].depth > depth)
            depth = calls[i].depth;
    depth++;
    ob_printf(o, "  %18s  %12s  ", b1, b2);
    if (depth > 40) {
        ob_printf(o, "[depth %d] ", depth);
        depth = 0;
    }
    for (int k = 0; k < depth; k++) ob_str(o, "  ");
    ob_str(o, "~ ");
    ob_text(o, what);
    ob_char(o, '\n');
}

void sched_text_waits(struct dec *d, const struct dthread *th, int64_t from, int64_t to,
                      const struct trec *calls, size_t ncalls, struct outbuf *o)
{
    const struct sched_thread *st = sched_thread(d, th->rt->tid);
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) {
        const struct sched_iv *v = &st->iv[i];
        if (v->start < from || v->start >= to || v->start >= d->end_ns) continue;
        int64_t dur = v->end - v->start;
        char what[300], wk[160], b[64];
        if (v->state == ST_BLOCKED) {
            const struct sched_iv *nx = i + 1 < st->n ? &st->iv[i + 1] : NULL;
            if (dur < SCHED_TEXT_MIN_NS) continue;
            fmt_dur(b, sizeof b, dur);
            int len = snprintf(what, sizeof what, "blocked %s (%s)", b, blocked_why(v->letter));
            if (nx && nx->state == ST_RUNNABLE && (nx->flags & SIV_WOKEN)) {
                waker_text(d, nx, wk, sizeof wk);
                char rb[64];
                fmt_dur(rb, sizeof rb, nx->end - nx->start);
                snprintf(what + len, sizeof what - (size_t)len, ", %s, then runnable %s", wk, rb);
            } else if (!nx) {
                snprintf(what + len, sizeof what - (size_t)len, ", still blocked at the end");
            }
            wait_line(d, v, dur, what, calls, ncalls, o);
        } else if (v->state == ST_RUNNABLE) {
            const struct sched_iv *pv = i ? &st->iv[i - 1] : NULL;
            if (dur < SCHED_TEXT_MIN_NS) continue;
            if (pv && pv->state == ST_BLOCKED && pv->end - pv->start >= SCHED_TEXT_MIN_NS && pv->start >= from)
                continue; /* said with the wait before it */
            fmt_dur(b, sizeof b, dur);
            if (v->flags & (SIV_WOKEN | SIV_NEW)) {
                waker_text(d, v, wk, sizeof wk);
                snprintf(what, sizeof what, "runnable %s (%s, waiting for a CPU)", b, wk);
            } else {
                snprintf(what, sizeof what, "runnable %s (%s, waiting for a CPU)", b,
                         v->flags & SIV_PREEMPTED ? "preempted" : "yielded or preempted");
            }
            wait_line(d, v, dur, what, calls, ncalls, o);
        }
    }
}
