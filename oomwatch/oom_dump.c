/*
 * oom_dump.c -- what funtrace-oomwatch does when a trigger fires: read the
 * trace of every traced process of the target right away (process_vm_readv
 * through coreextract's live reader: works on a task parked at a v1 OOM;
 * after a v1 OOM that parks, once it has: ow_settle),
 * write DIR/<prog>-<pid>-<time>.raw for each (complete files only: written
 * to .tmp, renamed), log one line, then the cores (--core) and --kill.
 */
#define _GNU_SOURCE
#include "oomwatch.h"
#include "live.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct membuf {
    unsigned char *p;
    size_t n, cap;
};

static int mb_write(void *ctx, const void *buf, size_t len)
{
    struct membuf *m = ctx;
    if (m->n + len > m->cap) {
        size_t nc = m->cap ? m->cap : (1u << 16);
        while (nc < m->n + len)
            nc *= 2;
        unsigned char *np = realloc(m->p, nc);
        if (!np) {
            errno = ENOMEM;
            return -1;
        }
        m->p = np;
        m->cap = nc;
    }
    memcpy(m->p + m->n, buf, len);
    m->n += len;
    return 0;
}

/* pid shares its address space with one already saved (CLONE_VM, e.g. a
 * vfork child): the same trace; kcmp(KCMP_VM) */
static int same_mm_as(int pid, const int *saved, int n)
{
    for (int i = 0; i < n; i++)
        if (syscall(SYS_kcmp, pid, saved[i], 0 /* KCMP_VM */, 0, 0) == 0)
            return saved[i];
    return 0;
}

static int known_untraced(const struct ow_state *s, int pid, unsigned long long start)
{
    for (size_t i = 0; i < s->nuntraced; i++)
        if (s->untraced[i].pid == pid && s->untraced[i].start == start)
            return 1;
    return 0;
}

static void remember_untraced(struct ow_state *s, int pid, unsigned long long start)
{
    void *v = s->untraced;
    if (ce_grow(&v, s->nuntraced, &s->capuntraced, sizeof *s->untraced, 32) != 0)
        return;
    s->untraced = v;
    s->untraced[s->nuntraced++] = (struct ow_seen){pid, start};
}

/* write the whole buffer to DIR/<base>.raw via a .tmp file; 0 / -1 (errno) */
static int save_file(struct ow_state *s, const char *base, const char *ext, const void *data, size_t len,
                     char *final, size_t cap)
{
    char tmp[300];
    for (int k = 1;; k++) {
        if (k == 1)
            snprintf(final, cap, "%s.%s", base, ext);
        else
            snprintf(final, cap, "%s-%d.%s", base, k, ext);
        if (faccessat(s->outfd, final, F_OK, 0) != 0 || k > 99)
            break;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", final);
    int fd = openat(s->outfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t r = write(fd, p, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            close(fd);
            unlinkat(s->outfd, tmp, 0);
            errno = e;
            return -1;
        }
        p += r;
        left -= (size_t)r;
    }
    if (close(fd) != 0 || renameat(s->outfd, tmp, s->outfd, final) != 0) {
        int e = errno;
        unlinkat(s->outfd, tmp, 0);
        errno = e;
        return -1;
    }
    return 0;
}

static size_t append(char *line, size_t cap, size_t o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t append(char *line, size_t cap, size_t o, const char *fmt, ...)
{
    if (o >= cap - 1)
        return o;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line + o, cap - o, fmt, ap);
    va_end(ap);
    return w < 0 || (size_t)w >= cap - o ? cap - 1 : o + (size_t)w;
}

/* A v1 OOM fired: the task at the limit parks in its page fault after the
 * notification (the kernel notifies, then the fault unwinds to its wait),
 * and may be preempted on its way there.  Read the target once none of its
 * threads runs -- at most OW_SETTLE_MS later -- so that the raw's
 * scheduling events end with the parking, not before it. */
#define OW_SETTLE_MS 200
void ow_settle(const struct ow_state *s)
{
    const double t0 = ow_now(), until = t0 + OW_SETTLE_MS / 1000.0;
    for (;;) {
        struct oc_pids m = {0};
        ow_target_members(s, &m);
        int running = 0;
        for (size_t i = 0; i < m.n && !running; i++)
            running = ow_running(m.v[i]);
        oc_pids_free(&m);
        const double now = ow_now();
        if (!running || now >= until) {
            if (now > t0 + 0.0005)
                ow_vlog(s, "v1 OOM: %.1f ms until %s", (now - t0) * 1000,
                        running ? "the wait's end (a thread of the target still runs)" : "no thread of the target ran");
            return;
        }
        usleep(1000);
    }
}

int ow_dump(struct ow_state *s, const char *what)
{
    struct oc_pids members = {0};
    ow_target_members(s, &members);
    char stamp[32], pressure[256], line[8192];
    ow_stamp(stamp, sizeof stamp);
    ow_pressure(s->t.psi_file, pressure, sizeof pressure);
    size_t o = append(line, sizeof line, 0, "fired: %s; pressure (%s): %s; ", what, s->t.psi_file, pressure);

    int *saved_pid = calloc(members.n + 1, sizeof *saved_pid);
    char(*names)[256] = calloc(members.n + 1, sizeof *names);
    int nsaved = 0, nfailed = 0;
    for (size_t i = 0; i < members.n && saved_pid && names; i++) {
        int pid = members.v[i];
        unsigned long long start = ow_starttime(pid);
        if (!start || known_untraced(s, pid, start))
            continue;
        int twin = same_mm_as(pid, saved_pid, nsaved);
        if (twin) {
            ow_vlog(s, "pid %d shares the address space of pid %d: same trace, not saved twice", pid, twin);
            continue;
        }
        struct membuf mb = {0};
        struct ft_writer w = {.ctx = &mb, .write = mb_write};
        struct ft_live_opts lo = {.stacks = 0, .verbose = s->o.verbose > 1, .extra_flags = 0};
        struct ft_emit_stats st;
        memset(&st, 0, sizeof st);
        int rc = ft_live_extract(pid, &lo, &w, &st);
        if (rc == FT_EXIT_NOTRACE) {
            remember_untraced(s, pid, start);
            ow_vlog(s, "pid %d: no funtrace trace in it", pid);
            free(mb.p);
            continue;
        }
        if (rc != FT_EXIT_OK && rc != FT_EXIT_PARTIAL) {
            o = append(line, sizeof line, o, "%spid %d: not read (%s)", nfailed + nsaved ? ", " : "", pid,
                       st.problem[0] ? st.problem : "unreadable");
            nfailed++;
            free(mb.p);
            continue;
        }
        char comm[64], base[200], final[256], hb[32];
        ow_comm(pid, comm, sizeof comm);
        snprintf(base, sizeof base, "%s-%d-%s", comm, pid, stamp);
        ow_human(hb, sizeof hb, mb.n);
        if (s->bytes_written + mb.n > s->o.max_bytes) {
            o = append(line, sizeof line, o, "%spid %d: NOT saved (%s would pass --max-bytes)",
                       nfailed + nsaved ? ", " : "", pid, hb);
            nfailed++;
        } else if (save_file(s, base, "raw", mb.p, mb.n, final, sizeof final) != 0) {
            o = append(line, sizeof line, o, "%spid %d: NOT saved (%s/%s: %s)", nfailed + nsaved ? ", " : "",
                       pid, s->o.outdir, final, strerror(errno));
            nfailed++;
        } else {
            s->bytes_written += mb.n;
            o = append(line, sizeof line, o, "%ssaved %s/%s (pid %d, %u threads, %llu events, %s%s%s)",
                       nfailed + nsaved ? ", " : "", s->o.outdir, final, pid, st.nthreads,
                       (unsigned long long)st.nevents, hb, rc == FT_EXIT_PARTIAL ? ", PARTIAL: " : "",
                       rc == FT_EXIT_PARTIAL ? st.problem : "");
            saved_pid[nsaved] = pid;
            snprintf(names[nsaved], sizeof names[nsaved], "%s", base);
            nsaved++;
        }
        free(mb.p);
    }
    if (!nsaved && !nfailed)
        o = append(line, sizeof line, o, "no traced process in the target (%zu process%s)", members.n,
                   members.n == 1 ? "" : "es");
    if (s->suppressed)
        o = append(line, sizeof line, o, " [+%u trigger%s deferred by --min-interval]",
                   s->suppressed, s->suppressed == 1 ? "" : "s");
    ow_log("%s", line);
    s->suppressed = 0;

    if (nsaved && s->o.core)
        ow_cores(s, saved_pid, names, nsaved, &members);
    else if (nsaved && s->o.kill)
        for (int i = 0; i < nsaved; i++) {
            kill(saved_pid[i], SIGKILL);
            ow_log("killed pid %d (--kill)", saved_pid[i]);
        }
    free(saved_pid);
    free(names);
    oc_pids_free(&members);
    return nsaved;
}
