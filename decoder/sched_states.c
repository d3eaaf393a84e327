/*
 * sched_states.c -- read the SCHEDEVT chunk and rebuild each traced thread's
 * running / runnable / blocked intervals (sched.h).
 *
 *   switch out (prev): running -> runnable (prev_state R, R+ = preempted)
 *                      or blocked (S, D, ...: the letter is kept)
 *   switch in (next):  -> running
 *   waking:            blocked -> runnable, woken by the current task
 *   wakeup_new:        a new thread, runnable, created by the current task
 *
 * Before a thread's first event (but after the oldest event the kernel
 * buffer still held) its state did not change, and that first event says
 * what it was: running before a switch out, runnable before a switch in,
 * blocked before a wakeup.
 */
#include "decode.h"
#include "sched.h"

#include <stdlib.h>
#include <string.h>

static int64_t tsc_ns(const struct dec *d, uint64_t tsc)
{
    size_t lo = 0, hi = d->ngens; /* the last generation starting at or before tsc */
    while (hi - lo > 1) {
        size_t m = lo + (hi - lo) / 2;
        if (!d->gens[m].synthetic && d->gens[m].start_tsc <= tsc) lo = m;
        else hi = m;
    }
    return ft_clock_ns(&d->gens[lo].clk, tsc);
}

static int ev_cmp(const void *a, const void *b)
{
    const struct ft_raw_sched_event *x = a, *y = b;
    if (x->tsc != y->tsc) return x->tsc < y->tsc ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int tid_cmp(const void *a, const void *b)
{
    const struct sched_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static struct sched_thread *find(struct dsched *s, uint64_t tid)
{
    struct sched_thread key = { tid, NULL, 0 };
    return tid ? bsearch(&key, s->th, s->nth, sizeof *s->th, tid_cmp) : NULL;
}

const struct sched_thread *sched_thread(const struct dec *d, uint64_t tid)
{
    return d->sched && d->sched->present ? find(d->sched, tid) : NULL;
}

struct build {
    size_t cap;
    int64_t first_seen; /* ns of the thread's first event, INT64_MIN: none yet */
    uint8_t first_kind; /* what it was (for the leading interval) */
};

static struct sched_iv *open_iv(struct sched_thread *t, struct build *b, int64_t ns, uint8_t state)
{
    if (t->n && t->iv[t->n - 1].end == INT64_MIN) t->iv[t->n - 1].end = ns;
    if (t->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        t->iv = xrealloc(t->iv, b->cap * sizeof *t->iv);
    }
    struct sched_iv *v = &t->iv[t->n++];
    memset(v, 0, sizeof *v);
    v->start = ns;
    v->end = INT64_MIN;
    v->state = state;
    return v;
}

static uint8_t cur_state(const struct sched_thread *t)
{
    return t->n ? t->iv[t->n - 1].state : 0;
}

void sched_load(struct dec *d)
{
    struct dsched *s = xcalloc(1, sizeof *s);
    d->sched = s;
    const struct ftr_trace *t = &d->t;
    if (!t->has_sched) return;
    if (t->sched_len < sizeof s->h || ftr_read(&d->src, t->sched_off, &s->h, sizeof s->h) != sizeof s->h) {
        dec_warn(d, "warning: the SCHEDEVT chunk is too short (%llu bytes): no scheduling states",
                 (unsigned long long)t->sched_len);
        return;
    }
    s->present = 1;
    s->h.why[sizeof s->h.why - 1] = 0;
    if (s->h.version != FT_SCHED_VERSION) {
        dec_warn(d, "warning: SCHEDEVT version %u is not known: no scheduling states", s->h.version);
        s->present = 0;
        return;
    }
    uint64_t have = (t->sched_len - sizeof s->h) / sizeof(struct ft_raw_sched_event);
    uint64_t n = s->h.status == FT_SCHED_OK ? s->h.nevents : 0;
    if (n > have) {
        dec_warn(d, "warning: the SCHEDEVT chunk holds %llu of its %llu scheduling events", (unsigned long long)have,
                 (unsigned long long)n);
        n = have;
    }
    s->ev = xcalloc(n ? n : 1, sizeof *s->ev);
    s->nev = ftr_read(&d->src, t->sched_off + sizeof s->h, s->ev, n * sizeof *s->ev) / sizeof *s->ev;
    for (size_t i = 1; i < s->nev; i++)
        if (s->ev[i].tsc < s->ev[i - 1].tsc) {
            qsort(s->ev, s->nev, sizeof *s->ev, ev_cmp);
            break;
        }
    uint64_t from = s->h.oldest_tsc > s->h.from_tsc ? s->h.oldest_tsc : s->h.from_tsc;
    s->known_from = from ? tsc_ns(d, from) : INT64_MIN;

    /* the traced threads */
    s->th = xcalloc(d->nth ? d->nth : 1, sizeof *s->th);
    for (size_t i = 0; i < d->nth; i++)
        if (d->th[i].rt->tid) s->th[s->nth++].tid = d->th[i].rt->tid;
    qsort(s->th, s->nth, sizeof *s->th, tid_cmp);
    size_t u = 0; /* a tid may have several records (a resized ring) */
    for (size_t i = 0; i < s->nth; i++)
        if (!u || s->th[u - 1].tid != s->th[i].tid) s->th[u++] = s->th[i];
    s->nth = u;
    struct build *b = xcalloc(s->nth ? s->nth : 1, sizeof *b);
    for (size_t i = 0; i < s->nth; i++) b[i].first_seen = INT64_MIN;

    for (size_t i = 0; i < s->nev; i++) {
        const struct ft_raw_sched_event *e = &s->ev[i];
        int64_t ns = tsc_ns(d, e->tsc);
        struct sched_thread *a = find(s, e->tid);
        struct build *ba = a ? &b[a - s->th] : NULL;
        if (a && ba->first_seen == INT64_MIN) {
            ba->first_seen = ns;
            ba->first_kind = e->kind == FT_SCHED_SWITCH ? 'o' : e->kind == FT_SCHED_WAKING ? 'w' : 'n';
        }
        if (e->kind == FT_SCHED_SWITCH) {
            if (a) {
                int run = e->state == 'R', dead = e->state == 'X' || e->state == 'Z';
                struct sched_iv *v = open_iv(a, ba, ns, run ? ST_RUNNABLE : dead ? ST_EXITED : ST_BLOCKED);
                v->letter = run ? 'R' : e->state;
                if (run && (e->flags & FT_SCHEDEV_PREEMPTED)) v->flags |= SIV_PREEMPTED;
            }
            struct sched_thread *nx = find(s, e->other);
            if (nx) {
                struct build *bn = &b[nx - s->th];
                if (bn->first_seen == INT64_MIN) {
                    bn->first_seen = ns;
                    bn->first_kind = 'i';
                }
                open_iv(nx, bn, ns, ST_RUNNING);
            }
        } else if (a) {
            uint8_t st = cur_state(a);
            if (e->kind == FT_SCHED_WAKEUP_NEW || st == ST_BLOCKED || st == 0) {
                struct sched_iv *v = open_iv(a, ba, ns, ST_RUNNABLE);
                v->flags |= e->kind == FT_SCHED_WAKEUP_NEW ? SIV_NEW : SIV_WOKEN;
                if (e->flags & (FT_SCHEDEV_HARDIRQ | FT_SCHEDEV_SOFTIRQ)) v->flags |= SIV_IRQ;
                v->waker = e->other;
                v->waker_tgid = e->cur_tgid;
                memcpy(v->waker_comm, e->other_comm, sizeof v->waker_comm);
                v->waker_comm[15] = 0;
            }
        }
    }
    /* the leading interval (the state the first event ends), and the last one's end */
    int64_t end = d->end_ns;
    if (s->nev) {
        int64_t last = tsc_ns(d, s->ev[s->nev - 1].tsc);
        if (last > end) end = last;
    }
    for (size_t i = 0; i < s->nth; i++) {
        struct sched_thread *th = &s->th[i];
        if (!th->n) continue;
        if (th->iv[th->n - 1].end == INT64_MIN) th->iv[th->n - 1].end = end;
        if (b[i].first_kind != 'n' && s->known_from != INT64_MIN && s->known_from < th->iv[0].start) {
            uint8_t st = b[i].first_kind == 'o' ? ST_RUNNING : b[i].first_kind == 'i' ? ST_RUNNABLE : ST_BLOCKED;
            th->iv = xrealloc(th->iv, (th->n + 1) * sizeof *th->iv);
            memmove(th->iv + 1, th->iv, th->n * sizeof *th->iv);
            memset(th->iv, 0, sizeof *th->iv);
            th->iv[0].start = s->known_from;
            th->iv[0].end = th->iv[1].start;
            th->iv[0].state = st;
            th->iv[0].letter = st == ST_BLOCKED ? '?' : st == ST_RUNNABLE ? 'R' : 0;
            th->n++;
        }
    }
    free(b);
}

void sched_free(struct dec *d)
{
    struct dsched *s = d->sched;
    if (!s) return;
    for (size_t i = 0; i < s->nth; i++) free(s->th[i].iv);
    free(s->th);
    free(s->ev);
    free(s);
    d->sched = NULL;
}
