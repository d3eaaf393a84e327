/*
 * sched.h -- scheduling states of the traced threads (SCHEDEVT chunk,
 * FORMAT.md 2.6): per thread, the intervals it was running, runnable or
 * blocked, rebuilt from sched_switch/sched_waking/sched_wakeup_new, and the
 * views of them:
 *   - JSON: the events as ftrace text in "systemTraceEvents" (Perfetto and
 *     chrome://tracing draw each thread's states under it, and the CPUs);
 *   - --text: a line where a thread was blocked or runnable for long between
 *     the calls shown, with the thread that woke it;
 *   - --text / --summary: one line saying what was captured, or why nothing.
 */
#ifndef FT_DECODER_SCHED_H
#define FT_DECODER_SCHED_H

#include <stdint.h>
#include "funtrace_abi.h"
#include "outbuf.h"

struct dec;
struct dthread;
struct trec;

enum { ST_RUNNING = 1, ST_RUNNABLE = 2, ST_BLOCKED = 3, ST_EXITED = 4 /* X, Z: not waiting */ };
#define SIV_PREEMPTED 0x1u /* runnable because it was preempted */
#define SIV_WOKEN 0x2u     /* runnable after a wakeup (waker known) */
#define SIV_NEW 0x4u       /* runnable: a new thread (waker = creator) */
#define SIV_IRQ 0x8u       /* woken from an interrupt (the waker is the interrupted task) */

struct sched_iv {
    int64_t start, end;  /* ns, the decoder's clock */
    uint8_t state;       /* ST_* */
    uint8_t letter;      /* blocked: S D T t X Z P I (prev_state) */
    uint8_t flags;       /* SIV_* */
    uint32_t waker, waker_tgid;
    char waker_comm[16];
};

struct sched_thread {
    uint64_t tid;
    struct sched_iv *iv; /* time order */
    size_t n;
};

struct dsched {
    int present;         /* a SCHEDEVT chunk was read */
    struct ft_raw_sched h;
    struct ft_raw_sched_event *ev;
    size_t nev;
    struct sched_thread *th; /* one per traced thread with events */
    size_t nth;
    int64_t known_from;  /* ns: states are known from here on (oldest event in the buffer) */
};

/* read the chunk and rebuild the intervals (after the generations are built) */
void sched_load(struct dec *d);
void sched_free(struct dec *d);
/* the intervals of one thread (NULL if none) */
const struct sched_thread *sched_thread(const struct dec *d, uint64_t tid);
/* one line for --text/--summary: what was captured, or why nothing (label:
 * the line's start, e.g. "sched:       ") */
void sched_status_line(struct dec *d, struct outbuf *o, const char *label);
/* JSON: ,"systemTraceEvents":"..." (ts relative to base ns) */
void sched_json(struct dec *d, struct outbuf *o, int64_t base);
/* --text: the thread's long waits starting in [from, to) as lines, indented
 * by the call shown (calls[0, ncalls)) they happened in */
void sched_text_waits(struct dec *d, const struct dthread *th, int64_t from, int64_t to,
                      const struct trec *calls, size_t ncalls, struct outbuf *o);
#define SCHED_TEXT_MIN_NS 50000 /* --text shows waits at least this long */

#endif
