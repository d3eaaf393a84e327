/*
 * funtrace_sched.h -- scheduling events of a traced process's threads, read
 * from a tracefs instance (set up once by `funtrace-sched setup`), kept in a
 * caller-provided buffer and written as the SCHEDEVT chunk (FORMAT.md 2.6).
 *
 * Shared by the runtime's snapshots (signal, on-crash, PSI, API), coreextract
 * (`--pid`, and `-` as a core_pattern pipe handler) and funtrace-oomwatch.
 *
 * How: the instance (`instances/funtrace` under the first tracefs mount of
 * /proc/self/mounts, or the directory in $FUNTRACE_SCHED) records
 * sched_switch, sched_waking and sched_wakeup_new of every task with the
 * x86-tsc trace clock (the TSC, the rings' clock).  Its `trace` file is read:
 * it does not consume the events (several traced processes share the
 * instance) and it is formatted by the kernel, so nothing here depends on the
 * binary layout of the events.  Only the events of the process's threads
 * (struct ft_sched_filter) are kept.
 *
 * sched_capture.c and sched_chunk.c are async-signal-safe: no malloc, no
 * stdio, no locks; at most about 15 KiB of stack.  sched_host.c (host tools only)
 * allocates.
 */
#ifndef FUNTRACE_SCHED_H
#define FUNTRACE_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_abi.h"
#include "funtrace_rawwrite.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FT_SCHED_INSTANCE "funtrace"   /* instances/<this> under the tracefs mount */
#define FT_SCHED_ENV "FUNTRACE_SCHED"  /* unset/"": find it; "off": none; else the instance dir */

/* Which events are the process's.  tids[0, nsorted) are sorted (by
 * ft_sched_filter_init); threads met later (the current task of an event
 * whose process is pid, a thread it creates) are appended up to cap. */
struct ft_sched_filter {
    uint64_t pid;       /* 0: keep every event */
    uint32_t *tids;
    size_t ntids, nsorted, cap;
    uint64_t from_tsc, to_tsc; /* keep events in [from, to] (0: no bound) */
};
void ft_sched_filter_init(struct ft_sched_filter *f, uint64_t pid, uint32_t *tids, size_t ntids, size_t cap,
                          uint64_t from_tsc, uint64_t to_tsc);
/* add one thread (before or after init; duplicates are harmless) */
void ft_sched_filter_add(struct ft_sched_filter *f, uint32_t tid);
/* 1 if e is the process's (learning the threads it reveals), else 0 */
int ft_sched_filter_keep(struct ft_sched_filter *f, const struct ft_raw_sched_event *e);

/* The events kept, a ring over the caller's array: when it is full the
 * oldest are overwritten (hdr.ndropped, FT_SCHEDF_DROPPED). */
struct ft_sched_buf {
    struct ft_raw_sched_event *ev;
    size_t cap;
    size_t n;        /* events held (<= cap) */
    size_t next;     /* where the next one goes */
    struct ft_raw_sched hdr; /* status, flags, oldest_tsc, ndropped, why, window, pid */
};
void ft_sched_buf_init(struct ft_sched_buf *b, struct ft_raw_sched_event *ev, size_t cap);

/* Find the instance for `setting` (the value of FUNTRACE_SCHED; NULL or ""
 * = the first tracefs mount's instances/funtrace).  Returns FT_SCHED_OK with
 * the directory in dir, or a status with one line in why. */
int ft_sched_locate(const char *setting, char *dir, size_t dircap, char *why, size_t whycap);

/* Read the instance's events into b, keeping those f keeps (f->pid 0: all).
 * Fills b->hdr (status, why, flags, oldest_tsc, window, pid).  Returns the
 * status.  The trace is read once, oldest event first. */
int ft_sched_capture(const char *setting, struct ft_sched_filter *f, struct ft_sched_buf *b);

/* Put b's events in time order at b->ev[0, n) and, when f is given, keep only
 * the ones f keeps (a capture of every task, filtered once the process is
 * known).  Sets hdr.nevents. */
void ft_sched_finish(struct ft_sched_buf *b, struct ft_sched_filter *f);

/* Write the SCHEDEVT chunk of b (after ft_sched_finish). 0 / -1. */
int ft_sched_emit(const struct ft_writer *w, struct ft_emit_stats *st, const struct ft_sched_buf *b);

/* A SCHEDEVT chunk that only says why there are no events. 0 / -1. */
int ft_sched_emit_status(const struct ft_writer *w, struct ft_emit_stats *st, uint64_t pid, int status,
                         const char *why);

/* ---- sched_host.c: host tools (allocates; not in the runtime) ------------ */

/* Capture for pid's threads (live: /proc/PID/task plus the tids given, e.g.
 * from ft_source_info.on_thread) and write the chunk.  setting: as above (the
 * tools pass getenv(FT_SCHED_ENV)).  Returns 0 / -1 (write error); the
 * status is also returned in *status when not NULL. */
int ft_sched_write_live(const struct ft_writer *w, struct ft_emit_stats *st, const char *setting, uint64_t pid,
                        const uint32_t *tids, size_t ntids, uint64_t from_tsc, uint64_t to_tsc, int *status);

/* Capture every task's events now (the core_pattern pipe handler, before the
 * core is read, while the dying process's last events are in the buffer);
 * later ft_sched_write_pending() keeps the process's.  Never fails: a
 * capture that could not be made remembers why. */
struct ft_sched_pending;
struct ft_sched_pending *ft_sched_capture_all(const char *setting);
int ft_sched_write_pending(struct ft_sched_pending *p, const struct ft_writer *w, struct ft_emit_stats *st,
                           uint64_t pid, const uint32_t *tids, size_t ntids, int *status);
void ft_sched_pending_free(struct ft_sched_pending *p);

#ifdef __cplusplus
}
#endif
#endif
