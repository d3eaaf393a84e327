/*
 * funtrace.h -- the API of the funtrace runtime (linked into every traced
 * executable by the funtrace-gcc/g++/clang/clang++ wrappers).
 *
 * Names and semantics follow the original funtrace.  Tracing is always on;
 * these calls only take snapshots, pause/ignore threads or resize rings.
 *
 * Snapshots are raw files (FORMAT.md section 2): FUNTRACE, FTHEADER, ...,
 * ENDTRACE.  Several snapshots appended to one file are read one after
 * another by funtrace-decode.
 */
#ifndef FUNTRACE_H
#define FUNTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Append a snapshot of every thread's ring to ./funtrace.raw (created if
 * needed).  Tracing is paused while the rings are copied. */
void funtrace_pause_and_write_current_snapshot(void);

/* In-memory snapshots: the raw bytes of one trace sample in a malloc'd
 * buffer, written out later with funtrace_write_snapshot(). */
struct funtrace_snapshot;
struct funtrace_snapshot *funtrace_pause_and_get_snapshot(void);
/* only events with a timestamp >= time (funtrace_time() units) */
struct funtrace_snapshot *funtrace_pause_and_get_snapshot_starting_at_time(uint64_t time);
/* only events at most max_event_age ticks old */
struct funtrace_snapshot *funtrace_pause_and_get_snapshot_up_to_age(uint64_t max_event_age);
/* write the snapshot to filename (created or truncated); on failure one line
 * on stderr and no (partial) file.  NULL snapshot: nothing happens. */
void funtrace_write_snapshot(const char *filename, struct funtrace_snapshot *snapshot);
void funtrace_free_snapshot(struct funtrace_snapshot *snapshot); /* NULL: no-op */

/* Write a snapshot (raw format, ENDTRACE-terminated) to an open fd.
 * Async-signal-safe: may be called from a signal handler.  Returns 0 on
 * success, -1 on a write error, -2 if the runtime is not initialized. */
int funtrace_write_snapshot_fd(int fd);

/* the timestamp source used for tracing (the TSC) and its frequency */
uint64_t funtrace_time(void);
uint64_t funtrace_ticks_per_second(void);

/* Stop tracing this thread and free its ring. */
void funtrace_ignore_this_thread(void);

/* Give this thread a ring of 2^log_buf_size bytes (the old ring's events are
 * discarded; the thread continues in a new registry record).  log_buf_size < 5
 * (not even 2 events) means funtrace_ignore_this_thread(); other values are
 * clamped to [12, 30] (4 KiB .. 1 GiB). */
void funtrace_set_thread_log_buf_size(int log_buf_size);

/* Pause / resume recording in all threads (rings are kept). */
void funtrace_disable_tracing(void);
void funtrace_enable_tracing(void);

#ifdef __clang__
#define NOFUNTRACE __attribute__((xray_never_instrument)) __attribute__((no_instrument_function))
#define DOFUNTRACE __attribute__((xray_always_instrument))
#else
#define NOFUNTRACE __attribute__((no_instrument_function))
#define DOFUNTRACE /* gcc has no attribute to force instrumentation */
#endif

#ifdef __cplusplus
}
#endif
#endif /* FUNTRACE_H */
