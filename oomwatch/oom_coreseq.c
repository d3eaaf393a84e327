/*
 * oom_coreseq.c -- --core: write a core of each traced process of the target
 * with our own core writer (oom_corewrite.h), never gdb/gcore (they hang on
 * frozen or OOM-parked tasks):
 *
 *   1. freeze the target's cgroup v2 group (cgroup.freeze = 1), when it has
 *      one that holds only the target's processes;
 *   2. in a short-lived child (its exit releases every thread): PTRACE_SEIZE
 *      + PTRACE_INTERRUPT every thread of every process;
 *   3. raise the v1 memory.limit_in_bytes (and memsw) when the group is
 *      under_oom, and the v2 memory.max, by --raise bytes: a task parked at a
 *      v1 OOM sleeps in the page fault until the limit moves, and only then
 *      reaches the ptrace stop / freezer (before running user code);
 *   4. per process, in the child: registers, /proc/PID/mem -> ELF core;
 *   5. --kill; restore the limits, unfreeze; then the child lets the threads
 *      go (a task that is not frozen must not run into the raised limit).
 * Every change is recorded with the guardian (oom_guard.h) BEFORE it is
 * made, so it is undone even if the watcher dies midway.
 */
#define _GNU_SOURCE
#include "oomwatch.h"
#include "oom_corewrite.h"
#include "oom_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CORE_TIMEOUT_S 600 /* one core, end to end */
#define UNLIMITED_V1 (1ull << 62)

struct core_result {
    int ok;
    int attach_rc;
    struct ftc_stats st;
    char err[768];
    char file[256];
};

static size_t app(char *b, size_t cap, size_t o, const char *s)
{
    int w = snprintf(b + o, cap - o, "%s%s", o ? "; " : "", s);
    return w < 0 || (size_t)w >= cap - o ? cap - 1 : o + (size_t)w;
}

/* raise dir/file (a byte limit) by s->o.raise; records the undo first */
static void raise_limit(struct ow_state *s, struct og_guard *g, const char *dir, const char *file,
                        char *did, size_t cap, size_t *o)
{
    uint64_t cur;
    char path[OC_PATH + 64], old[32], val[32], msg[OC_PATH + 160], h1[32], h2[32];
    if (oc_read_u64(dir, file, &cur) != 0 || cur >= UNLIMITED_V1)
        return; /* no limit to move */
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(old, sizeof old, "%llu", (unsigned long long)cur);
    snprintf(val, sizeof val, "%llu", (unsigned long long)(cur + s->o.raise));
    if (og_push(g, path, old) != 0) {
        snprintf(msg, sizeof msg, "did not raise %s (guardian: %s)", path, strerror(errno));
        *o = app(did, cap, *o, msg);
        return;
    }
    ow_human(h1, sizeof h1, cur);
    ow_human(h2, sizeof h2, cur + s->o.raise);
    if (oc_write(dir, file, val) != 0)
        snprintf(msg, sizeof msg, "could not raise %s: %s", path, strerror(errno));
    else
        snprintf(msg, sizeof msg, "raised %s %s -> %s", path, h1, h2);
    *o = app(did, cap, *o, msg);
}

static int wait_frozen(const char *dir, int ms)
{
    for (int waited = 0;; waited += 10) {
        char ev[256];
        uint64_t frozen = 0;
        if (oc_read(dir, "cgroup.events", ev, sizeof ev) > 0 && oc_keyed(ev, "frozen", &frozen) == 0 && frozen)
            return 1;
        if (waited >= ms)
            return 0;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* the child: seize every process, tell the parent ('S'), then stop and
 * write them one by one, sending a core_result per pid; keep every thread
 * stopped until the parent has restored the limits and closes rfd */
static void core_child(struct ow_state *s, const int *pids, char (*names)[256], int n, uint64_t budget, int wfd,
                       int rfd)
{
    struct ftc_proc *procs = calloc((size_t)n, sizeof *procs);
    struct core_result *res = calloc((size_t)n, sizeof *res);
    if (!procs || !res)
        _exit(1);
    for (int i = 0; i < n; i++)
        res[i].attach_rc = ftc_seize(pids[i], &procs[i], res[i].err, sizeof res[i].err);
    if (write(wfd, "S", 1) != 1)
        _exit(1);
    for (int i = 0; i < n; i++) {
        struct core_result *r = &res[i];
        struct ftc_proc *p = &procs[i];
        char tmp[300];
        snprintf(r->file, sizeof r->file, "%s.core", names[i]);
        for (int k = 2; faccessat(s->outfd, r->file, F_OK, 0) == 0 && k < 100; k++)
            snprintf(r->file, sizeof r->file, "%s-%d.core", names[i], k);
        snprintf(tmp, sizeof tmp, "%s.tmp", r->file);
        if (r->attach_rc == 0)
            r->attach_rc = ftc_stop(p, s->o.stop_ms, r->err, sizeof r->err);
        if (r->attach_rc >= 0) {
            int fd = openat(s->outfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            int w = -1;
            if (fd < 0) {
                snprintf(r->err, sizeof r->err, "%s/%s: %s", s->o.outdir, tmp, strerror(errno));
            } else {
                w = ftc_write(p, fd, budget, &r->st, r->err, sizeof r->err);
                if (close(fd) != 0 && !w) {
                    snprintf(r->err, sizeof r->err, "%s/%s: %s", s->o.outdir, tmp, strerror(errno));
                    w = -1;
                }
                if (!w && renameat(s->outfd, tmp, s->outfd, r->file) != 0) {
                    snprintf(r->err, sizeof r->err, "%s/%s: %s", s->o.outdir, r->file, strerror(errno));
                    w = -1;
                }
                if (w)
                    unlinkat(s->outfd, tmp, 0);
            }
            r->ok = !w;
            if (r->ok)
                budget = budget > r->st.bytes_file ? budget - r->st.bytes_file : 0;
        }
        if (write(wfd, r, sizeof *r) != (ssize_t)sizeof *r)
            _exit(1);
    }
    /* an unfrozen task released now would run into the raised limit */
    char c;
    while (read(rfd, &c, 1) < 0 && errno == EINTR) {
    }
    for (int i = 0; i < n; i++)
        if (procs[i].t)
            ftc_detach(&procs[i]);
    _exit(0);
}

/* read len bytes from fd before deadline; NULL on success, else why not */
static const char *read_full(struct ow_state *s, int fd, void *buf, size_t len, double deadline)
{
    size_t got = 0;
    while (got < len) {
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->sigfd, .events = POLLIN}};
        int left = (int)((deadline - ow_now()) * 1000);
        if (left <= 0)
            return "timed out";
        int r = poll(pf, s->sigfd >= 0 ? 2 : 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0 && s->sigfd >= 0 && (pf[1].revents & POLLIN)) {
            s->stop = 1; /* the main loop reads the signal and exits */
            return "interrupted by a signal";
        }
        if (r > 0 && pf[0].revents) {
            ssize_t rr = read(fd, (char *)buf + got, len - got);
            if (rr < 0 && errno == EINTR)
                continue;
            if (rr <= 0)
                return "the core writer died";
            got += (size_t)rr;
        }
    }
    return NULL;
}

static void report(struct ow_state *s, int pid, const struct core_result *r, char *did, size_t cap, size_t *o)
{
    char msg[1200];
    if (r->ok) {
        char hf[32], hd[32];
        ow_human(hf, sizeof hf, r->st.bytes_file);
        ow_human(hd, sizeof hd, r->st.bytes_data);
        s->bytes_written += r->st.bytes_file;
        snprintf(msg, sizeof msg, "core %s/%s (pid %d, %u threads%s, %u segments, %s, %s of memory%s)",
                 s->o.outdir, r->file, pid, r->st.nthreads,
                 r->st.nthreads_partial ? ", some without a ptrace stop: registers partial" : "", r->st.nloads, hf,
                 hd, r->st.pages_unreadable ? ", some pages unreadable" : "");
    } else {
        snprintf(msg, sizeof msg, "pid %d: core NOT written (%s)", pid, r->err[0] ? r->err : "unknown error");
    }
    *o = app(did, cap, *o, msg);
}

void ow_cores(struct ow_state *s, const int *pids, char (*names)[256], int n, const struct oc_pids *members)
{
    char freeze[OC_PATH], did[8192], msg[OC_PATH + 128];
    size_t o = 0;
    struct og_guard g;
    did[0] = 0;
    uint64_t budget = s->o.max_bytes > s->bytes_written ? s->o.max_bytes - s->bytes_written : 0;
    if (!budget) {
        ow_log("cores NOT written: --max-bytes reached");
        return;
    }
    if (og_start(&g) != 0) {
        ow_log("cores NOT written: cannot start the guardian process: %s", strerror(errno));
        return;
    }
    ow_target_freeze_dir(s, members, freeze);
    if (freeze[0]) {
        char path[OC_PATH + 32];
        snprintf(path, sizeof path, "%s/cgroup.freeze", freeze);
        if (og_push(&g, path, "0") != 0 || oc_write(freeze, "cgroup.freeze", "1") != 0) {
            snprintf(msg, sizeof msg, "could not freeze %s: %s", freeze, strerror(errno));
            freeze[0] = 0;
        } else {
            snprintf(msg, sizeof msg, "froze %s", freeze);
        }
        o = app(did, sizeof did, o, msg);
    } else {
        o = app(did, sizeof did, o, "no cgroup v2 group holding only the target: not frozen (threads ptrace-stopped)");
    }

    int pfd[2], rel[2] = {-1, -1};
    pid_t child = -1;
    const char *why = NULL;
    if (pipe2(pfd, O_CLOEXEC) != 0 || pipe2(rel, O_CLOEXEC) != 0) {
        why = "pipe failed";
    } else {
        fflush(NULL);
        pid_t watcher = getpid();
        child = fork();
        if (child == 0) {
            /* dies with the watcher (the kernel then detaches its tracees);
             * the guardian undoes the rest */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != watcher)
                _exit(1);
            close(pfd[0]);
            close(rel[1]);
            close(g.fd); /* only the watcher speaks to the guardian */
            core_child(s, pids, names, n, budget, pfd[1], rel[0]);
        }
        close(pfd[1]);
        close(rel[0]);
        if (child < 0) {
            why = "fork failed";
            close(pfd[0]);
            close(rel[1]);
        }
    }
    char seized;
    if (!why)
        why = read_full(s, pfd[0], &seized, 1, ow_now() + 30);

    /* the threads are seized: wake the parked ones so they reach the stop */
    char oc[256];
    uint64_t under_oom = 0;
    if (s->t.v1[0] && oc_read(s->t.v1, "memory.oom_control", oc, sizeof oc) > 0)
        oc_keyed(oc, "under_oom", &under_oom);
    if (!why && under_oom && !oc_is_root(&s->t.mounts, s->t.v1)) {
        /* memsw (if limited) first: memory.limit_in_bytes may not exceed it */
        if (oc_has(s->t.v1, "memory.memsw.limit_in_bytes"))
            raise_limit(s, &g, s->t.v1, "memory.memsw.limit_in_bytes", did, sizeof did, &o);
        raise_limit(s, &g, s->t.v1, "memory.limit_in_bytes", did, sizeof did, &o);
    }
    if (!why && s->t.v2[0] && !oc_is_root(&s->t.mounts, s->t.v2) && oc_has(s->t.v2, "memory.max"))
        raise_limit(s, &g, s->t.v2, "memory.max", did, sizeof did, &o);
    if (!why && freeze[0] && !wait_frozen(freeze, s->o.stop_ms)) {
        snprintf(msg, sizeof msg, "%s not frozen after %d ms (going on)", freeze, s->o.stop_ms);
        o = app(did, sizeof did, o, msg);
    }
    int i = 0;
    while (i < n && !why) {
        struct core_result r;
        why = read_full(s, pfd[0], &r, sizeof r, ow_now() + CORE_TIMEOUT_S);
        if (!why)
            report(s, pids[i++], &r, did, sizeof did, &o);
    }
    for (; i < n; i++) {
        snprintf(msg, sizeof msg, "pid %d: core NOT written (%s)", pids[i], why);
        o = app(did, sizeof did, o, msg);
        char tmp[300];
        snprintf(tmp, sizeof tmp, "%s.core.tmp", names[i]);
        unlinkat(s->outfd, tmp, 0);
    }
    if (child > 0 && why)
        kill(child, SIGKILL); /* its exit detaches every thread it traced */
    if (s->o.kill)
        for (i = 0; i < n; i++) {
            kill(pids[i], SIGKILL);
            snprintf(msg, sizeof msg, "killed pid %d (--kill)", pids[i]);
            o = app(did, sizeof did, o, msg);
        }
    /* limits back (while the threads are still stopped), unfreeze, then
     * let the child release the threads */
    int failed = og_unwind(&g);
    if (child > 0) {
        close(pfd[0]);
        close(rel[1]);
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    app(did, sizeof did, o, failed ? "restore FAILED (see above; the guardian retried)" : "limits and freezer restored");
    ow_log("%s", did);
}
