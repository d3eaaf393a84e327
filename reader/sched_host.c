/*
 * sched_host.c -- SCHEDEVT for the host tools (coreextract, oomwatch): a
 * live process's threads, and the core_pattern pipe handler's capture of
 * every task made before the core is read (funtrace_sched.h).  Allocates.
 */
#define _GNU_SOURCE
#include "funtrace_sched.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIVE_EVENTS (1u << 18)  /* 16 MiB: the events of one process */
#define ALL_EVENTS (1u << 20)   /* 64 MiB: every task's (the pipe handler) */
#define MAX_TIDS (1u << 16)

/* tids of /proc/PID/task appended to t (n used of cap) */
static size_t add_tasks(uint64_t pid, uint32_t *t, size_t n, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%llu/task", (unsigned long long)pid);
    DIR *d = opendir(path);
    if (!d) return n;
    struct dirent *e;
    while (n < cap && (e = readdir(d)) != NULL) {
        long v = atol(e->d_name);
        if (v > 0) t[n++] = (uint32_t)v;
    }
    closedir(d);
    return n;
}

/* Let every thread that is going to sleep finish doing so before the events
 * are read: a thread whose state is already "sleeping" (blocked in a read, or
 * parked at a v1 OOM limit in its page fault) may not yet have switched out,
 * and its last sched_switch would be missing.  Reading /proc/PID/task/TID/syscall
 * returns only once such a thread is off its CPU and dequeued (the kernel waits
 * for it; a running thread answers at once).  Best effort: no access, no wait. */
static void settle_tasks(uint64_t pid, const uint32_t *t, size_t n)
{
    char path[96], buf[256];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "/proc/%llu/task/%u/syscall", (unsigned long long)pid, t[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (read(fd, buf, sizeof buf) < 0) { /* nothing to do: the wait is the point */ }
        close(fd);
    }
}

int ft_sched_write_live(const struct ft_writer *w, struct ft_emit_stats *st, const char *setting, uint64_t pid,
                        const uint32_t *tids, size_t ntids, uint64_t from_tsc, uint64_t to_tsc, int *status)
{
    uint32_t *t = calloc(MAX_TIDS, sizeof *t);
    struct ft_raw_sched_event *ev = malloc((size_t)LIVE_EVENTS * sizeof *ev);
    if (!t || !ev) {
        free(t);
        free(ev);
        if (status) *status = FT_SCHED_ERROR;
        return ft_sched_emit_status(w, st, pid, FT_SCHED_ERROR, "no memory for the scheduling events");
    }
    size_t n = 0;
    for (size_t i = 0; i < ntids && n < MAX_TIDS / 2; i++) t[n++] = tids[i];
    n = add_tasks(pid, t, n, MAX_TIDS / 2);
    settle_tasks(pid, t, n);
    struct ft_sched_filter f;
    ft_sched_filter_init(&f, pid, t, n, MAX_TIDS, from_tsc, to_tsc);
    struct ft_sched_buf b;
    ft_sched_buf_init(&b, ev, LIVE_EVENTS);
    int s = ft_sched_capture(setting, &f, &b);
    if (status) *status = s;
    ft_sched_finish(&b, NULL);
    int rc = ft_sched_emit(w, st, &b);
    free(ev);
    free(t);
    return rc;
}

struct ft_sched_pending {
    struct ft_sched_buf b;
};

struct ft_sched_pending *ft_sched_capture_all(const char *setting)
{
    struct ft_sched_pending *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    struct ft_raw_sched_event *ev = malloc((size_t)ALL_EVENTS * sizeof *ev);
    ft_sched_buf_init(&p->b, ev, ev ? ALL_EVENTS : 0);
    if (!ev) {
        p->b.hdr.status = FT_SCHED_ERROR;
        strcpy(p->b.hdr.why, "no memory for the scheduling events");
        return p;
    }
    ft_sched_capture(setting, NULL, &p->b);
    ft_sched_finish(&p->b, NULL);
    return p;
}

int ft_sched_write_pending(struct ft_sched_pending *p, const struct ft_writer *w, struct ft_emit_stats *st,
                           uint64_t pid, const uint32_t *tids, size_t ntids, int *status)
{
    if (!p) {
        if (status) *status = FT_SCHED_ERROR;
        return ft_sched_emit_status(w, st, pid, FT_SCHED_ERROR, "no memory for the scheduling events");
    }
    if (status) *status = (int)p->b.hdr.status;
    uint32_t *t = calloc(MAX_TIDS, sizeof *t);
    if (!t) return ft_sched_emit_status(w, st, pid, FT_SCHED_ERROR, "no memory for the scheduling events");
    size_t n = ntids < MAX_TIDS / 2 ? ntids : MAX_TIDS / 2;
    memcpy(t, tids, n * sizeof *t);
    struct ft_sched_filter f;
    ft_sched_filter_init(&f, pid, t, n, MAX_TIDS, 0, 0);
    /* the dropped count was over every task: not the process's */
    p->b.hdr.ndropped = 0;
    p->b.hdr.flags &= ~FT_SCHEDF_DROPPED;
    int was_full = p->b.n == p->b.cap && p->b.cap;
    ft_sched_finish(&p->b, &f);
    if (was_full) p->b.hdr.flags |= FT_SCHEDF_DROPPED; /* older events of every task were left out */
    int rc = ft_sched_emit(w, st, &p->b);
    free(t);
    return rc;
}

void ft_sched_pending_free(struct ft_sched_pending *p)
{
    if (!p) return;
    free(p->b.ev);
    free(p);
}
