/*
 * perfetto.c -- --perfetto FILE: a native Perfetto trace (protobuf, encoded
 * with protobuf-c from perfetto_subset.proto), for ui.perfetto.dev and
 * trace_processor: far smaller than the JSON and loadable where the JSON is
 * too big.
 *
 * Layout: one track per process (TrackDescriptor + ProcessDescriptor), one
 * per thread below it (ThreadDescriptor: pid, tid, name with [crashed]), a
 * "generations" track for the generation boundaries; every call is a
 * TYPE_SLICE_BEGIN / TYPE_SLICE_END pair on its thread's track (the
 * default track of the thread's packet sequence: TracePacketDefaults), with the
 * same times, names and flags as the JSON's slices (the flags as debug
 * annotations: open_at_end, return_missing, ...).  Each thread writes its
 * own packet sequence, in time order, with its function names, source
 * locations and annotation names interned (InternedData).  Timestamps are
 * ns relative to the JSON's origin (ts_zero_ns), on the trace's default
 * clock.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decstate.h"
#include "hmap.h"
#include "outbuf.h"
#include "outfile.h"
#include "perfetto_subset.pb-c.h"
#include "pfwire.h"
#include "textfmt.h"
#include "tracefacts.h"
#include "views.h"
#include "xalloc.h"

#define UUID_PROCESS 1
#define UUID_GENS 2
#define UUID_THREAD0 0x100
#define SEQ_GLOBAL 1
#define SEQ_THREAD0 2

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent Event;
typedef Perfetto__Protos__DebugAnnotation Annot;

/* the slice flags shown as annotations (as the JSON's args) */
static const struct {
    unsigned bit;
    const char *name;
} flag_names[] = {
    {SL_FROM_PREV, "from_previous_generation"}, {SL_TO_NEXT, "continues_in_next_generation"},
    {SL_OPEN, "open_at_end"},                   {SL_ABANDONED, "return_missing"},
    {SL_JUMPED, "left_by_longjmp"},
    {SL_UNWOUND, "unwound_by_exception"},       {SL_START_UNK, "started_before_ring"},
    {SL_UNMEASURED, "measured"},                {SL_CUT_START, "clipped_by_since"},
    {SL_CUT_END, "clipped_by_until"},          {SL_SUSPENDED, "suspended"},
    {SL_RESUMED, "resumed"},
};
#define NFLAGS (sizeof flag_names / sizeof flag_names[0])
#define ANNOT_UB NFLAGS /* upper_bound_ns */
#define ANNOT_CTX (NFLAGS + 1) /* context: a thread that switched stacks */
#define NANNOT (NFLAGS + 2)

#define EVDC 256u /* q->dc's entries */
struct pseq {
    uint32_t id;
    int started;
    uint64_t track;       /* a thread's sequence: its track, the packets' default */
    struct hmap iids;     /* (0, func) -> name iid, (1, func) -> source location iid */
    uint64_t next_iid;
    uint64_t annot_iid[NANNOT];
    int64_t *ends;        /* the open slices' ends, outermost first */
    size_t nends, cap;
    /* the packed begin events of this sequence (their names interned): (flags,
     * func) -> offset in arena of a 2-byte length and the event's bytes */
    struct hmap evc;
    uint8_t *arena;
    size_t alen, acap;
    /* in front of evc, by function: the entry last found or made (at1: its
     * offset + 1; 0: none) */
    struct evdc {
        uint64_t key;
        uint32_t func, at1;
    } dc[EVDC];
};

static inline void dc_put(struct pseq *q, uint64_t key, uint32_t func, uint32_t at)
{
    q->dc[func & (EVDC - 1)] = (struct evdc){key, func, at + 1};
}

struct pview {
    struct view v;
    struct outfile file;
    struct outbuf o;
    int64_t base;
    const struct slice *sl; /* the slices p_slices is writing, and their bounds (th->slice_ub) */
    const int64_t *sl_ub;
    struct pseq global;
    struct pseq *th;
    size_t nth;
    uint8_t *buf;
    size_t bufcap;
    int fast;          /* pfw_init: the common packets are assembled (pfwire.h) */
    unsigned amask;    /* annot_mask() */
    uint8_t end_ev[PFW_EVENT_SLACK]; /* the packed TrackEvent of every slice end */
    size_t end_len;
    /* the interned data going into the packet being built */
    Perfetto__Protos__EventName names[1], *pnames[1];
    Perfetto__Protos__SourceLocation locs[1], *plocs[1];
    Perfetto__Protos__DebugAnnotationName anames[NANNOT], *panames[NANNOT];
    Perfetto__Protos__InternedData interned;
};

static uint64_t ts(const struct pview *P, int64_t ns);
static unsigned annot_mask(void);

/* one packet: field 1 of Trace, length-delimited */
static void put_packet(struct pview *P, struct pseq *q, Packet *pkt)
{
    pkt->has_trusted_packet_sequence_id = 1;
    pkt->trusted_packet_sequence_id = q->id;
    pkt->has_sequence_flags = 1;
    pkt->sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
    Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
    Perfetto__Protos__TracePacketDefaults tpd = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
    if (!q->started) {
        pkt->sequence_flags |= PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
        q->started = 1;
        if (q->track) { /* a thread's events then leave out their track */
            ted.has_track_uuid = 1;
            ted.track_uuid = q->track;
            tpd.track_event_defaults = &ted;
            pkt->trace_packet_defaults = &tpd;
        }
    }
    if (pkt->track_event && q->track && pkt->track_event->track_uuid == q->track)
        pkt->track_event->has_track_uuid = 0;
    size_t n = protobuf_c_message_get_packed_size(&pkt->base);
    if (n > P->bufcap) {
        P->bufcap = n * 2;
        P->buf = xrealloc(P->buf, P->bufcap);
    }
    protobuf_c_message_pack(&pkt->base, P->buf);
    char *p = ob_reserve(&P->o, 11);
    *p++ = 0x0a; /* field 1, length-delimited */
    P->o.len = (size_t)(p - P->o.buf) + pfw_varint((uint8_t *)p, n);
    ob_write(&P->o, P->buf, n);
}

/* the same for a packet of a started thread sequence whose track event
 * (on the sequence's track) is packed already: the bytes protobuf-c would
 * write (pfwire.h) */
static inline __attribute__((always_inline)) void put_event_packet(struct pview *P, struct pseq *q, int64_t ns,
                                                                  const uint8_t *ev, size_t n)
{
    uint8_t *p = (uint8_t *)ob_reserve(&P->o, PFW_ROOM + n);
    P->o.len += pfw_packet(p, ts(P, ns), q->id,
                           PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE, ev, n);
}

static uint64_t ts(const struct pview *P, int64_t ns)
{
    return ns > P->base ? (uint64_t)(ns - P->base) : 0;
}

/* ---- descriptors and global instants ------------------------------------ */

static void descriptor(struct pview *P, Perfetto__Protos__TrackDescriptor *td)
{
    Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    pkt.track_descriptor = td;
    put_packet(P, &P->global, &pkt);
}

static void instant(struct pview *P, struct pseq *q, uint64_t track, int64_t ns, const char *name, Annot **args,
                    size_t nargs)
{
    Event ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    ev.has_type = 1;
    ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
    ev.has_track_uuid = 1;
    ev.track_uuid = track;
    ev.name = (char *)name;
    ev.n_debug_annotations = nargs;
    ev.debug_annotations = args;
    Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    pkt.has_timestamp = 1;
    pkt.timestamp = ts(P, ns);
    pkt.track_event = &ev;
    put_packet(P, q, &pkt);
}

static void arg_int(Annot *a, const char *name, int64_t v)
{
    perfetto__protos__debug_annotation__init(a);
    a->name = (char *)name;
    a->has_int_value = 1;
    a->int_value = v;
}

static void arg_str(Annot *a, const char *name, const char *v)
{
    perfetto__protos__debug_annotation__init(a);
    a->name = (char *)name;
    a->string_value = (char *)v;
}

static int p_begin(struct view *v, struct dec *d)
{
    struct pview *P = (struct pview *)v;
    int err = outfile_open(&P->file, v->path);
    if (err)
        return err;
    if (ob_open(&P->o, P->file.fd, 4u << 20))
        xalloc_die();
    P->base = d->ts_zero_ns;
    P->global.id = SEQ_GLOBAL;
    P->nth = d->nth;
    P->th = xcalloc(d->nth, sizeof *P->th);
    for (size_t i = 0; i < d->nth; i++) {
        P->th[i].id = SEQ_THREAD0 + (uint32_t)i;
        P->th[i].track = UUID_THREAD0 + i;
    }
    P->fast = pfw_init();
    P->amask = annot_mask();
    if (P->fast) { /* a slice end on its sequence's track: the same bytes every time */
        Event end = PERFETTO__PROTOS__TRACK_EVENT__INIT;
        end.has_type = 1;
        end.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
        P->end_len = protobuf_c_message_get_packed_size(&end.base);
        if (P->end_len <= sizeof P->end_ev)
            protobuf_c_message_pack(&end.base, P->end_ev);
        else
            P->fast = 0;
    }

    const char *cmd = d->t.cmdline[0] ? d->t.cmdline : "traced process";
    Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
    pd.has_pid = 1;
    pd.pid = (int32_t)d->pid;
    pd.process_name = (char *)cmd;
    char *cmdv[1] = {(char *)cmd};
    pd.n_cmdline = 1;
    pd.cmdline = cmdv;
    Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    td.has_uuid = 1;
    td.uuid = UUID_PROCESS;
    td.process = &pd;
    descriptor(P, &td);

    for (size_t i = 0; i < d->nth; i++) {
        const struct dthread *th = &d->th[i];
        if (!th->shown)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s%s", th->rt->name[0] ? th->rt->name : "thread", dec_thread_mark(d, th->rt->tid));
        Perfetto__Protos__ThreadDescriptor tdd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
        tdd.has_pid = 1;
        tdd.pid = (int32_t)d->pid;
        tdd.has_tid = 1;
        tdd.tid = (int64_t)th->rt->tid;
        tdd.thread_name = name;
        Perfetto__Protos__TrackDescriptor t = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
        t.has_uuid = 1;
        t.uuid = UUID_THREAD0 + i;
        t.has_parent_uuid = 1;
        t.parent_uuid = UUID_PROCESS;
        t.thread = &tdd;
        descriptor(P, &t);
    }

    /* generation boundaries */
    Perfetto__Protos__TrackDescriptor gt = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    gt.has_uuid = 1;
    gt.uuid = UUID_GENS;
    gt.has_parent_uuid = 1;
    gt.parent_uuid = UUID_PROCESS;
    gt.name = "generations";
    descriptor(P, &gt);
    for (size_t gi = 0; gi < d->ngens; gi++) {
        const struct dgen *g = &d->gens[gi];
        if (!g->emit || g->synthetic)
            continue;
        char name[64], wall[64] = "";
        dec_gen_name(g, name, sizeof name);
        if (d->have_wall)
            fmt_wall(wall, sizeof wall, g->start_ns + g->wall_off, 1);
        Annot a[3], *pa[3] = {&a[0], &a[1], &a[2]};
        arg_int(&a[0], "gen", (int64_t)g->gen);
        arg_str(&a[1], "wallclock", wall);
        arg_int(&a[2], "threads_incomplete", g->nthreads_incomplete);
        instant(P, &P->global, UUID_GENS, g->start_ns, name, pa, 3);
    }
    /* the crash */
    if (d->t.has_crash && d->t.crash.signo) {
        const struct ft_raw_crash *c = &d->t.crash;
        char name[96], addr[32];
        snprintf(name, sizeof name, "%s at 0x%llx", sig_name(c->signo), (unsigned long long)c->addr);
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)c->addr);
        uint64_t track = UUID_PROCESS;
        for (size_t i = 0; i < d->nth; i++)
            if (d->th[i].shown && c->tid && d->th[i].rt->tid == c->tid)
                track = UUID_THREAD0 + i;
        Annot a[6], *pa[6] = {&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]};
        arg_int(&a[0], "signal", c->signo);
        arg_str(&a[1], "signal_name", sig_name(c->signo));
        arg_int(&a[2], "si_code", c->si_code);
        arg_str(&a[3], "fault_address", addr);
        arg_int(&a[4], "thread", c->tid);
        arg_int(&a[5], "sender_pid", c->sender_pid);
        instant(P, &P->global, track, d->end_ns, name, pa, 6);
    }
    return 0;
}

/* ---- slices ------------------------------------------------------------- */

/* the iid of (kind, func) in q, interned into P->interned when new */
static uint64_t intern(struct pview *P, struct pseq *q, struct dec *d, int kind, uint32_t func)
{
    uint32_t v = hm_get(&q->iids, (uint64_t)kind, func);
    if (v != HMAP_NONE)
        return v;
    uint64_t iid = ++q->next_iid;
    if (hm_put(&q->iids, (uint64_t)kind, func, (uint32_t)iid))
        xalloc_die();
    struct func *fn = sym_func(d->sym, func);
    if (kind == 0) {
        Perfetto__Protos__EventName *e = &P->names[0];
        perfetto__protos__event_name__init(e);
        e->has_iid = 1;
        e->iid = iid;
        e->name = fn->uname;
        P->interned.n_event_names = 1;
    } else {
        Perfetto__Protos__SourceLocation *l = &P->locs[0];
        perfetto__protos__source_location__init(l);
        l->has_iid = 1;
        l->iid = iid;
        l->file_name = (char *)fn->file;
        l->function_name = fn->name;
        l->has_line_number = 1;
        l->line_number = fn->line;
        P->interned.n_source_locations = 1;
    }
    return iid;
}

static uint64_t intern_annot(struct pview *P, struct pseq *q, size_t k)
{
    if (q->annot_iid[k])
        return q->annot_iid[k];
    uint64_t iid = q->annot_iid[k] = ++q->next_iid;
    Perfetto__Protos__DebugAnnotationName *a = &P->anames[P->interned.n_debug_annotation_names];
    perfetto__protos__debug_annotation_name__init(a);
    a->has_iid = 1;
    a->iid = iid;
    a->name = k == ANNOT_UB ? "upper_bound_ns" : k == ANNOT_CTX ? "context" : (char *)flag_names[k].name;
    P->panames[P->interned.n_debug_annotation_names] = a;
    P->interned.n_debug_annotation_names++;
    return iid;
}

static __attribute__((noinline)) void slice_end_slow(struct pview *P, struct pseq *q, uint64_t track)
{
    Event ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    ev.has_type = 1;
    ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
    ev.has_track_uuid = 1;
    ev.track_uuid = track;
    Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    pkt.has_timestamp = 1;
    pkt.timestamp = ts(P, q->ends[--q->nends]);
    pkt.track_event = &ev;
    put_packet(P, q, &pkt);
}

static inline void slice_end(struct pview *P, struct pseq *q, uint64_t track)
{
    if (__builtin_expect(P->fast && q->started && q->track == track, 1))
        put_event_packet(P, q, q->ends[--q->nends], P->end_ev, P->end_len);
    else
        slice_end_slow(P, q, track);
}

/* the flags that make a begin event's annotations (SL_BOUND's value varies) */
static unsigned annot_mask(void)
{
    unsigned m = 0;
    for (size_t k = 0; k < NFLAGS; k++)
        m |= flag_names[k].bit;
    return m;
}

/* the key of a begin event in its sequence's caches (q->evc, q->dc) */
static inline uint64_t ev_key(const struct pview *P, const struct slice *s, const uint32_t *ctx)
{
    return (s->flags & P->amask) | (ctx ? (uint64_t)*ctx + 1 : 0) << 32;
}

/* the open slice's end, for its end event */
static inline void push_end(struct pseq *q, int64_t end)
{
    if (__builtin_expect(q->nends == q->cap, 0))
        q->ends = xgrow(q->ends, &q->cap, q->nends + 1, sizeof *q->ends);
    q->ends[q->nends++] = end;
}

/* a begin event may come from the sequence's caches (packed without its
 * track, the sequence's default; SL_BOUND's value varies) */
static inline int begin_cacheable(const struct pview *P, const struct pseq *q, uint64_t track, const struct slice *s)
{
    return P->fast && q->started && q->track == track && !(s->flags & SL_BOUND);
}

/* the begin event packed at q->arena + at: its packet */
static inline void begin_packed(struct pview *P, struct pseq *q, const struct slice *s, uint32_t at)
{
    const size_t n = (size_t)q->arena[at] | (size_t)q->arena[at + 1] << 8;
    put_event_packet(P, q, s->start, q->arena + at + 2, n);
    push_end(q, s->end);
}

/* a begin event not in q->dc: from q->evc, else made (and packed when its
 * names are interned); ctx: the context the slice's call was made in (a
 * thread that switched stacks), else NULL */
static __attribute__((noinline)) void slice_begin_slow(struct pview *P, struct pseq *q, struct dec *d, uint64_t track,
                                                       const struct slice *s, const uint32_t *ctx)
{
    int cacheable = begin_cacheable(P, q, track, s);
    uint64_t ckey = ev_key(P, s, ctx);
    if (cacheable) {
        uint32_t at = hm_get(&q->evc, ckey, s->func);
        if (at != HMAP_NONE) {
            dc_put(q, ckey, s->func, at);
            begin_packed(P, q, s, at);
            return;
        }
    }
    perfetto__protos__interned_data__init(&P->interned);
    P->interned.event_names = P->pnames;
    P->interned.source_locations = P->plocs;
    P->interned.debug_annotation_names = P->panames;
    Event ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    ev.has_type = 1;
    ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
    ev.has_track_uuid = 1;
    ev.track_uuid = track;
    ev.has_name_iid = 1;
    ev.name_iid = intern(P, q, d, 0, s->func);
    if (sym_func(d->sym, s->func)->file) {
        ev.has_source_location_iid = 1;
        ev.source_location_iid = intern(P, q, d, 1, s->func);
    }
    Annot a[NANNOT], *pa[NANNOT];
    size_t na = 0;
    for (size_t k = 0; k < NFLAGS; k++) {
        if (!(s->flags & flag_names[k].bit))
            continue;
        perfetto__protos__debug_annotation__init(&a[na]);
        a[na].has_name_iid = 1;
        a[na].name_iid = intern_annot(P, q, k);
        a[na].has_bool_value = 1;
        a[na].bool_value = flag_names[k].bit != SL_UNMEASURED; /* "measured": false */
        pa[na] = &a[na];
        na++;
    }
    if (s->flags & SL_BOUND) {
        perfetto__protos__debug_annotation__init(&a[na]);
        a[na].has_name_iid = 1;
        a[na].name_iid = intern_annot(P, q, ANNOT_UB);
        a[na].has_int_value = 1;
        a[na].int_value = P->sl_ub ? P->sl_ub[s - P->sl] : s->end - s->start;
        pa[na] = &a[na];
        na++;
    }
    if (ctx) {
        perfetto__protos__debug_annotation__init(&a[na]);
        a[na].has_name_iid = 1;
        a[na].name_iid = intern_annot(P, q, ANNOT_CTX);
        a[na].has_int_value = 1;
        a[na].int_value = *ctx;
        pa[na] = &a[na];
        na++;
    }
    ev.n_debug_annotations = na;
    ev.debug_annotations = pa;
    if (cacheable && !P->interned.n_event_names && !P->interned.n_source_locations &&
        !P->interned.n_debug_annotation_names) {
        /* its names are interned: packed once, kept for the next ones */
        ev.has_track_uuid = 0; /* the sequence's default track */
        size_t n = protobuf_c_message_get_packed_size(&ev.base);
        if (n <= 0xFFFF && q->alen + n + 2 <= UINT32_MAX - 1) {
            q->arena = xgrow(q->arena, &q->acap, q->alen + n + 2 + PFW_EVENT_SLACK, 1); /* (readable past its end) */
            uint32_t at = (uint32_t)q->alen;
            q->arena[at] = (uint8_t)n;
            q->arena[at + 1] = (uint8_t)(n >> 8);
            protobuf_c_message_pack(&ev.base, q->arena + at + 2);
            q->alen += n + 2;
            if (hm_put(&q->evc, ckey, s->func, at))
                xalloc_die();
            dc_put(q, ckey, s->func, at);
            begin_packed(P, q, s, at);
            return;
        }
        ev.has_track_uuid = 1;
    }
    Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    pkt.has_timestamp = 1;
    pkt.timestamp = ts(P, s->start);
    pkt.track_event = &ev;
    if (P->interned.n_event_names || P->interned.n_source_locations || P->interned.n_debug_annotation_names) {
        P->pnames[0] = &P->names[0];
        P->plocs[0] = &P->locs[0];
        pkt.interned_data = &P->interned;
    }
    put_packet(P, q, &pkt);
    push_end(q, s->end);
}

/* a slice's begin event (ctx: as slice_begin_slow's); the common case, an
 * event in q->dc */
static inline void slice_begin(struct pview *P, struct pseq *q, struct dec *d, uint64_t track, const struct slice *s,
                               const uint32_t *ctx)
{
    if (__builtin_expect(begin_cacheable(P, q, track, s), 1)) {
        const struct evdc *e = &q->dc[s->func & (EVDC - 1)];
        if (__builtin_expect(e->at1 && e->func == s->func && e->key == ev_key(P, s, ctx), 1)) {
            begin_packed(P, q, s, e->at1 - 1);
            return;
        }
    }
    slice_begin_slow(P, q, d, track, s, ctx);
}

static void p_slices(struct view *v, struct dec *d, struct dthread *th, size_t gi, const struct slice *s, size_t n)
{
    struct pview *P = (struct pview *)v;
    struct pseq *q = &P->th[th->index];
    uint64_t track = UUID_THREAD0 + (uint64_t)th->index;
    (void)gi;
    P->sl = s;
    P->sl_ub = th->slice_ub;
    for (size_t i = 0; i < n; i++) {
        while (q->nends > s[i].depth) /* the slices this one is not inside have ended */
            slice_end(P, q, track);
        slice_begin(P, q, d, track, &s[i], th->slice_ctx ? &th->slice_ctx[i] : NULL);
    }
    while (q->nends)
        slice_end(P, q, track);
}

static void p_instant(struct view *v, struct dec *d, struct dthread *th, int64_t ns, const char *name,
                      const struct view_arg *args, size_t nargs)
{
    struct pview *P = (struct pview *)v;
    (void)d;
    Annot a[8], *pa[8];
    size_t na = 0;
    for (size_t i = 0; i < nargs && na < 8; i++, na++) {
        if (args[i].str)
            arg_str(&a[na], args[i].key, args[i].str);
        else
            arg_int(&a[na], args[i].key, args[i].num);
        pa[na] = &a[na];
    }
    instant(P, &P->th[th->index], UUID_THREAD0 + (uint64_t)th->index, ns, name, pa, na);
}

static int p_end(struct view *v, struct dec *d)
{
    struct pview *P = (struct pview *)v;
    (void)d;
    return outfile_close(&P->file, ob_close(&P->o));
}

static void p_destroy(struct view *v)
{
    struct pview *P = (struct pview *)v;
    for (size_t i = 0; i < P->nth; i++) {
        hm_free(&P->th[i].iids);
        hm_free(&P->th[i].evc);
        free(P->th[i].ends);
        free(P->th[i].arena);
    }
    free(P->th);
    free(P->buf);
    free(P);
}

static const struct view_ops perfetto_ops = {
    .begin = p_begin, .slices = p_slices, .instant = p_instant, .end = p_end, .destroy = p_destroy,
};

struct view *perfetto_view_new(const char *path)
{
    struct pview *P = xcalloc(1, sizeof *P);
    P->v.ops = &perfetto_ops;
    P->v.kind = VIEW_PIECES;
    P->v.path = path;
    return &P->v;
}
