/*
 * sched_capture.c -- find the tracefs instance, read its `trace` file and
 * keep the events of one process's threads (funtrace_sched.h).
 *
 * Async-signal-safe (open/read/close on stack buffers; no malloc, stdio or
 * locks): the runtime calls it from its signal and on-crash handlers.
 *
 * The text read is the kernel's own formatting of the events, one line each:
 *
 *   comm-TID (TGID) [CPU] FLAGS TSC: sched_switch: prev_comm=C prev_pid=N
 *       prev_prio=N prev_state=S ==> next_comm=C next_pid=N next_prio=N
 *   comm-TID (TGID) [CPU] FLAGS TSC: sched_waking: comm=C pid=N prio=N target_cpu=N
 *
 * (the "(TGID)" column is there because the instance has record-tgid set;
 * FLAGS with irq-info).  Commands may hold any byte but are at most 15 bytes
 * long, so every field is found from the right of its neighbours.
 */
#define _GNU_SOURCE /* memmem */
#include "funtrace_sched.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define SC_HIDDEN __attribute__((visibility("hidden")))
#define SC_LINE_MAX 1024u

/* ---- small string helpers (no libc formatting) ---------------------------- */

static size_t sc_cat(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(dst, cap);
    while (*src && n + 1 < cap) dst[n++] = *src++;
    if (n < cap) dst[n] = 0;
    return n;
}

static void sc_set(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
    if (!cap) return;
    dst[0] = 0;
    sc_cat(dst, cap, a);
    if (b) sc_cat(dst, cap, b);
    if (c) sc_cat(dst, cap, c);
}

/* last occurrence of needle in [s, e) */
static const char *rfind(const char *s, const char *e, const char *needle)
{
    size_t n = strlen(needle);
    if ((size_t)(e - s) < n) return NULL;
    for (const char *p = e - n;; p--) {
        if (!memcmp(p, needle, n)) return p;
        if (p == s) return NULL;
    }
}

static const char *ffind(const char *s, const char *e, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = s; p + n <= e; p++)
        if (!memcmp(p, needle, n)) return p;
    return NULL;
}

/* decimal at s (up to e); 0 digits -> -1 */
static int64_t dec_at(const char *s, const char *e)
{
    int64_t v = 0;
    int any = 0;
    while (s < e && *s == ' ') s++;
    while (s < e && *s >= '0' && *s <= '9' && v < (INT64_MAX - 9) / 10) {
        v = v * 10 + (*s++ - '0');
        any = 1;
    }
    return any ? v : -1;
}

static void comm_copy(char out[16], const char *s, const char *e)
{
    size_t n = (size_t)(e - s);
    memset(out, 0, 16);
    if (n > 15) n = 15;
    memcpy(out, s, n);
}

/* read a small file into buf (NUL-terminated); bytes read or -1 (errno) */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    buf[n] = 0;
    close(fd);
    return (ssize_t)n;
}

/* ---- the filter ------------------------------------------------------------- */

static void sort_u32(uint32_t *a, size_t n)
{
    /* heap sort: no recursion, no allocation */
    for (size_t start = n / 2; start-- > 0;) {
        size_t r = start;
        for (;;) {
            size_t c = 2 * r + 1;
            if (c >= n) break;
            if (c + 1 < n && a[c] < a[c + 1]) c++;
            if (a[r] >= a[c]) break;
            uint32_t t = a[r]; a[r] = a[c]; a[c] = t;
            r = c;
        }
    }
    for (size_t end = n; end-- > 1;) {
        uint32_t t = a[0]; a[0] = a[end]; a[end] = t;
        size_t r = 0;
        for (;;) {
            size_t c = 2 * r + 1;
            if (c >= end) break;
            if (c + 1 < end && a[c] < a[c + 1]) c++;
            if (a[r] >= a[c]) break;
            t = a[r]; a[r] = a[c]; a[c] = t;
            r = c;
        }
    }
}

static int has_tid(const struct ft_sched_filter *f, uint32_t tid)
{
    if (!tid) return 0;
    size_t lo = 0, hi = f->nsorted;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (f->tids[m] == tid) return 1;
        if (f->tids[m] < tid) lo = m + 1;
        else hi = m;
    }
    for (size_t i = f->nsorted; i < f->ntids; i++)
        if (f->tids[i] == tid) return 1;
    return 0;
}

void ft_sched_filter_init(struct ft_sched_filter *f, uint64_t pid, uint32_t *tids, size_t ntids, size_t cap,
                          uint64_t from_tsc, uint64_t to_tsc)
{
    f->pid = pid;
    f->tids = tids;
    f->cap = cap;
    f->from_tsc = from_tsc;
    f->to_tsc = to_tsc;
    sort_u32(tids, ntids);
    size_t k = 0; /* unique */
    for (size_t i = 0; i < ntids; i++)
        if (tids[i] && (k == 0 || tids[k - 1] != tids[i])) tids[k++] = tids[i];
    f->ntids = f->nsorted = k;
}

void ft_sched_filter_add(struct ft_sched_filter *f, uint32_t tid)
{
    if (!tid || has_tid(f, tid) || f->ntids >= f->cap) return;
    f->tids[f->ntids++] = tid;
}

int ft_sched_filter_keep(struct ft_sched_filter *f, const struct ft_raw_sched_event *e)
{
    int keep;
    if (!f || !f->pid) {
        keep = 1;
    } else {
        int own_cur = e->cur_tgid && e->cur_tgid == f->pid;
        if (e->kind == FT_SCHED_SWITCH) {
            if (own_cur) ft_sched_filter_add(f, e->tid); /* prev is current */
            keep = has_tid(f, e->tid) || has_tid(f, e->other);
        } else {
            if (own_cur) ft_sched_filter_add(f, e->other);
            if (own_cur && e->kind == FT_SCHED_WAKEUP_NEW) ft_sched_filter_add(f, e->tid);
            keep = has_tid(f, e->tid);
        }
    }
    if (keep && f && f->from_tsc && e->tsc < f->from_tsc) keep = 0;
    if (keep && f && f->to_tsc && e->tsc > f->to_tsc) keep = 0;
    return keep;
}

/* ---- the buffer --------------------------------------------------------------- */

void ft_sched_buf_init(struct ft_sched_buf *b, struct ft_raw_sched_event *ev, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->ev = ev;
    b->cap = ev ? cap : 0;
    b->hdr.version = FT_SCHED_VERSION;
}

static void buf_put(struct ft_sched_buf *b, const struct ft_raw_sched_event *e)
{
    if (!b->cap) {
        b->hdr.ndropped++;
        b->hdr.flags |= FT_SCHEDF_DROPPED;
        return;
    }
    if (b->n == b->cap) {
        b->hdr.ndropped++;
        b->hdr.flags |= FT_SCHEDF_DROPPED;
    } else {
        b->n++;
    }
    b->ev[b->next] = *e;
    b->next = b->next + 1 == b->cap ? 0 : b->next + 1;
}

/* ---- locating the instance ---------------------------------------------------- */

/* unescape a /proc/mounts path field (\040 etc.) into out */
static void unescape(const char *s, const char *e, char *out, size_t cap)
{
    size_t n = 0;
    while (s < e && n + 1 < cap) {
        if (*s == '\\' && e - s >= 4 && s[1] >= '0' && s[1] <= '3') {
            out[n++] = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            out[n++] = *s++;
        }
    }
    out[n] = 0;
}

/* the mount point of the first tracefs in /proc/self/mounts; 0 or -1 */
static int find_tracefs(char *out, size_t cap)
{
    int fd = open("/proc/self/mounts", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[4096];
    size_t have = 0;
    int found = 0, eof = 0;
    while (!found && !eof) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) eof = 1;
        else have += (size_t)r;
        char *p = buf, *nl;
        while (!found && ((nl = memchr(p, '\n', have - (size_t)(p - buf))) || (eof && p < buf + have))) {
            char *le = nl ? nl : buf + have;
            /* fields: spec mountpoint type options ... */
            char *f1 = memchr(p, ' ', (size_t)(le - p));
            char *f2 = f1 ? memchr(f1 + 1, ' ', (size_t)(le - f1 - 1)) : NULL;
            char *f3 = f2 ? memchr(f2 + 1, ' ', (size_t)(le - f2 - 1)) : NULL;
            if (f2 && f3 && f3 - f2 - 1 == 7 && !memcmp(f2 + 1, "tracefs", 7)) {
                unescape(f1 + 1, f2, out, cap);
                found = 1;
            }
            p = nl ? nl + 1 : buf + have;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
        if (have == sizeof buf) have = 0; /* absurd line */
    }
    close(fd);
    return found ? 0 : -1;
}

int ft_sched_locate(const char *setting, char *dir, size_t dircap, char *why, size_t whycap)
{
    dir[0] = 0;
    if (setting && (!strcmp(setting, "off") || !strcmp(setting, "none") || !strcmp(setting, "0"))) {
        sc_set(why, whycap, "scheduling states are off (" FT_SCHED_ENV "=", setting, ")");
        return FT_SCHED_OFF;
    }
    if (setting && *setting) {
        sc_set(dir, dircap, setting, NULL, NULL);
    } else {
        char mnt[512];
        if (find_tracefs(mnt, sizeof mnt) != 0) {
            sc_set(why, whycap, "tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing; "
                                "funtrace-sched setup)", NULL, NULL);
            return FT_SCHED_NO_TRACEFS;
        }
        sc_set(dir, dircap, mnt, "/instances/" FT_SCHED_INSTANCE, NULL);
    }
    char p[600];
    sc_set(p, sizeof p, dir, "/trace", NULL);
    if (access(p, F_OK) != 0) {
        int e = errno;
        if (e == EACCES || e == EPERM) {
            sc_set(why, whycap, "no permission to read the tracefs instance ", dir,
                   " (run as root, or funtrace-sched setup --group GROUP)");
            return FT_SCHED_NO_ACCESS;
        }
        sc_set(why, whycap, "no tracefs instance ", dir, " (as root: funtrace-sched setup)");
        return FT_SCHED_NO_INSTANCE;
    }
    return FT_SCHED_OK;
}

/* ---- parsing one line of `trace` ----------------------------------------------- */

/* 1: an event we know, in *e (cur_tgid, cpu, flags, tsc, kind, fields) */
static int parse_line(const char *s, const char *e, struct ft_raw_sched_event *ev, uint64_t *any_tsc)
{
    static const struct { const char *mark; uint8_t kind; } marks[] = {
        { ": sched_switch: ", FT_SCHED_SWITCH },
        { ": sched_waking: ", FT_SCHED_WAKING },
        { ": sched_wakeup_new: ", FT_SCHED_WAKEUP_NEW },
    };
    const char *m = NULL, *f = NULL;
    uint8_t kind = 0;
    /* "TSC: sched_xxx: "; the marks are longer than a command can be, and a
     * command before them cannot hold ": sched_" and one of the names */
    for (const char *c = s; !m && (c = memmem(c, (size_t)(e - c), ": sched_", 8)) != NULL; c++)
        for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
            size_t n = strlen(marks[i].mark);
            if ((size_t)(e - c) >= n && !memcmp(c, marks[i].mark, n)) {
                m = c;
                kind = marks[i].kind;
                f = c + n;
                break;
            }
        }
    if (!m) return 0;
    const char *colon = m;
    /* timestamp: digits before the colon */
    const char *t = colon;
    while (t > s && t[-1] >= '0' && t[-1] <= '9') t--;
    int64_t tsc = dec_at(t, colon);
    if (tsc < 0) return 0;
    *any_tsc = (uint64_t)tsc;
    memset(ev, 0, sizeof *ev);
    ev->tsc = (uint64_t)tsc;
    ev->kind = kind;
    /* back over "[CPU] FLAGS " */
    const char *q = t;
    while (q > s && q[-1] == ' ') q--;
    if (q > s && q[-1] != ']') { /* irq-info flags, e.g. "d.s3." */
        const char *fl = q;
        while (fl > s && fl[-1] != ' ') fl--;
        for (const char *c = fl; c < q; c++) {
            if (*c == 'h' || *c == 'H') ev->flags |= FT_SCHEDEV_HARDIRQ;
            if (*c == 's') ev->flags |= FT_SCHEDEV_SOFTIRQ;
        }
        q = fl;
        while (q > s && q[-1] == ' ') q--;
    }
    if (q <= s || q[-1] != ']') return 0;
    const char *cb = q - 1;
    while (cb > s && cb[-1] != '[') cb--;
    if (cb <= s) return 0;
    int64_t cpu = dec_at(cb, q - 1);
    ev->cpu = cpu < 0 ? 0 : (uint16_t)cpu;
    q = cb - 1;
    while (q > s && q[-1] == ' ') q--;
    uint32_t cur_tid = 0;
    if (q > s && q[-1] == ')') { /* "(  TGID)" or "(-------)" */
        const char *ob = q - 1;
        while (ob > s && ob[-1] != '(') ob--;
        if (ob > s) {
            int64_t tg = dec_at(ob, q - 1);
            ev->cur_tgid = tg > 0 ? (uint32_t)tg : 0;
            q = ob - 1;
            while (q > s && q[-1] == ' ') q--;
        }
    }
    /* "comm-TID" */
    const char *d = q;
    while (d > s && d[-1] >= '0' && d[-1] <= '9') d--;
    int64_t ct = dec_at(d, q);
    if (ct >= 0 && d > s && d[-1] == '-') cur_tid = (uint32_t)ct;
    const char *cs = s;
    while (cs < d && *cs == ' ') cs++;
    char cur_comm[16];
    comm_copy(cur_comm, cs, d > cs ? d - 1 : cs);

    if (kind == FT_SCHED_SWITCH) {
        const char *np = rfind(f, e, " next_prio=");
        const char *nd = np ? rfind(f, np, " next_pid=") : NULL;
        const char *nc = nd ? rfind(f, nd, " ==> next_comm=") : NULL;
        const char *ps = nc ? rfind(f, nc, " prev_state=") : NULL;
        const char *pp = ps ? rfind(f, ps, " prev_prio=") : NULL;
        const char *pd = pp ? rfind(f, pp, " prev_pid=") : NULL;
        if (!pd || (size_t)(pd - f) < 10 || memcmp(f, "prev_comm=", 10)) return 0;
        int64_t prev = dec_at(pd + 10, pp), next = dec_at(nd + 10, np);
        if (prev < 0 || next < 0) return 0;
        ev->tid = (uint32_t)prev;
        ev->other = (uint32_t)next;
        comm_copy(ev->comm, f + 10, pd);
        comm_copy(ev->other_comm, nc + 15, nd);
        const char *st = ps + 12;
        ev->state = st < nc ? (uint8_t)*st : '?';
        if (nc > st && nc[-1] == '+') ev->flags |= FT_SCHEDEV_PREEMPTED;
        (void)cur_tid;
    } else {
        const char *tc = rfind(f, e, " target_cpu=");
        const char *pr = tc ? rfind(f, tc, " prio=") : NULL;
        const char *pd = pr ? rfind(f, pr, " pid=") : NULL;
        if (!pd || (size_t)(pd - f) < 5 || memcmp(f, "comm=", 5)) return 0;
        int64_t pid = dec_at(pd + 5, pr);
        if (pid < 0) return 0;
        ev->tid = (uint32_t)pid;
        ev->other = cur_tid;
        comm_copy(ev->comm, f + 5, pd);
        memcpy(ev->other_comm, cur_comm, 16);
    }
    return 1;
}

/* ---- the capture ----------------------------------------------------------- */

static int setup_ok(const char *dir, struct ft_sched_buf *b)
{
    char p[600], v[256];
    sc_set(p, sizeof p, dir, "/trace_clock", NULL);
    if (read_small(p, v, sizeof v) < 0) {
        sc_set(b->hdr.why, sizeof b->hdr.why, "cannot read ", p, errno == EACCES ? ": permission denied" : "");
        return errno == EACCES || errno == EPERM ? FT_SCHED_NO_ACCESS : FT_SCHED_ERROR;
    }
    if (!strstr(v, "[x86-tsc]")) {
        sc_set(b->hdr.why, sizeof b->hdr.why, "the tracefs instance ", dir,
               " does not use the x86-tsc trace clock (as root: funtrace-sched setup)");
        return FT_SCHED_BAD_SETUP;
    }
    sc_set(p, sizeof p, dir, "/events/sched/sched_switch/enable", NULL);
    if (read_small(p, v, sizeof v) < 0 || v[0] != '1') {
        sc_set(b->hdr.why, sizeof b->hdr.why, "sched_switch is not enabled in the tracefs instance ", dir,
               " (as root: funtrace-sched setup)");
        return FT_SCHED_BAD_SETUP;
    }
    sc_set(p, sizeof p, dir, "/tracing_on", NULL);
    if (read_small(p, v, sizeof v) > 0 && v[0] == '0') b->hdr.flags |= FT_SCHEDF_TRACING_OFF;
    return FT_SCHED_OK;
}

int ft_sched_capture(const char *setting, struct ft_sched_filter *f, struct ft_sched_buf *b)
{
    char dir[512];
    b->hdr.pid = f ? f->pid : 0;
    b->hdr.from_tsc = f ? f->from_tsc : 0;
    b->hdr.to_tsc = f ? f->to_tsc : 0;
    int st = ft_sched_locate(setting, dir, sizeof dir, b->hdr.why, sizeof b->hdr.why);
    if (st == FT_SCHED_OK) st = setup_ok(dir, b);
    if (st != FT_SCHED_OK) return (int)(b->hdr.status = (uint32_t)st);
    char path[600];
    sc_set(path, sizeof path, dir, "/trace", NULL);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        sc_set(b->hdr.why, sizeof b->hdr.why, "cannot open ", path,
               e == EACCES || e == EPERM ? ": permission denied" : "");
        return (int)(b->hdr.status = (e == EACCES || e == EPERM) ? FT_SCHED_NO_ACCESS : FT_SCHED_ERROR);
    }
    char buf[8192];
    size_t have = 0;
    int err = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { err = 1; break; }
        int eof = r == 0;
        have += (size_t)r;
        char *p = buf, *nl;
        while ((nl = memchr(p, '\n', have - (size_t)(p - buf))) || (eof && p < buf + have)) {
            char *le = nl ? nl : buf + have;
            if (*p != '#' && le - p < (ptrdiff_t)SC_LINE_MAX) {
                struct ft_raw_sched_event ev;
                uint64_t any = 0;
                if (parse_line(p, le, &ev, &any)) {
                    if (ft_sched_filter_keep(f, &ev)) buf_put(b, &ev);
                } else if (ffind(p, le, " EVENTS]") && ffind(p, le, "[LOST ")) {
                    b->hdr.flags |= FT_SCHEDF_LOST;
                }
                if (any && !b->hdr.oldest_tsc) b->hdr.oldest_tsc = any;
            }
            p = nl ? nl + 1 : buf + have;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
        if (have == sizeof buf) have = 0; /* a line longer than the buffer: not ours */
        if (eof) break;
    }
    close(fd);
    if (err) {
        sc_set(b->hdr.why, sizeof b->hdr.why, "read error on ", path, NULL);
        return (int)(b->hdr.status = FT_SCHED_ERROR);
    }
    sc_set(b->hdr.why, sizeof b->hdr.why, dir, NULL, NULL);
    return (int)(b->hdr.status = FT_SCHED_OK);
}
