/*
 * raw.c -- the raw file reader (see raw.h).
 */
#define _GNU_SOURCE
#include "raw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SMALL_CHUNK_MAX (64u << 20) /* non-ring chunks larger than this are rejected */
#define PROCMAPS_MAX (16u << 20)

/* ---- sources ------------------------------------------------------------ */

/* A chunk magic is 8 printable ASCII characters.  n < 8: only the first n
 * are known (a stream's first read may be short: the benefit of the doubt
 * for the bytes it lacks). */
static int magic_ok(const char *m, size_t n)
{
    for (size_t i = 0; i < n && i < FT_CHUNK_MAGIC_LEN; i++)
        if ((unsigned char)m[i] < 0x20 || (unsigned char)m[i] >= 0x7f)
            return 0;
    return 1;
}

void ftr_src_close(struct ftr_src *s)
{
    if (s->win && s->win->p)
        munmap((void *)(uintptr_t)s->win->p, (size_t)s->win->len);
    free(s->win);
    s->win = NULL;
    if (s->fd > 2)
        close(s->fd);
    s->fd = -1;
}

int ftr_src_window_has(const struct ftr_src *s, const void *addr)
{
    const struct ftr_window *w = s->win;
    const uint8_t *a = addr;
    return w && w->p && a >= w->p && (uint64_t)(a - w->p) < w->len;
}

/* the window of s's file holding [off, off + len) (len <= FTR_WINDOW,
 * off + len <= size): its bytes, or NULL if they cannot be mapped */
static const uint8_t *window(const struct ftr_src *s, uint64_t off, uint64_t len)
{
    struct ftr_window *w = s->win;
    if (w->p && off >= w->off && off + len <= w->off + w->len)
        return w->p + (off - w->off);
    if (w->p)
        munmap((void *)(uintptr_t)w->p, (size_t)w->len);
    w->p = NULL;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo = off / page * page;
    uint64_t hi = lo + FTR_WINDOW > s->size ? s->size : lo + FTR_WINDOW;
    if (hi < off + len)
        return NULL; /* (a page size above FTR_WINDOW) */
    void *m = mmap(NULL, (size_t)(hi - lo), PROT_READ, MAP_SHARED, s->fd, (off_t)lo);
    if (m == MAP_FAILED)
        return NULL;
    w->p = m;
    w->off = lo;
    w->len = hi - lo;
    return w->p + (off - lo);
}

int ftr_src_fd(struct ftr_src *s, int fd, char *err, size_t errlen)
{
    struct stat st;
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat input: %s", strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
        s->fd = fd;
        s->size = (uint64_t)st.st_size;
        ssize_t r = pread(fd, s->head, sizeof s->head, 0);
        s->nhead = r > 0 ? (size_t)r : 0;
        s->named = 1;
        s->win = calloc(1, sizeof *s->win);
        return 0;
    }
    /* a pipe: spool it into an unlinked temporary file */
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/funtrace-decode.XXXXXX", dir && *dir ? dir : "/tmp");
    int tfd = mkstemp(path);
    if (tfd < 0) {
        snprintf(err, errlen, "cannot create a temporary file in %s: %s", dir && *dir ? dir : "/tmp",
                 strerror(errno));
        return -1;
    }
    unlink(path);
    static char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "cannot read input: %s", strerror(errno));
            close(tfd);
            return -1;
        }
        if (r == 0)
            break;
        if (total == 0) {
            s->nhead = (size_t)r < sizeof s->head ? (size_t)r : sizeof s->head;
            memcpy(s->head, buf, s->nhead);
        }
        if (total == 0 && !magic_ok(buf, (size_t)r)) {
            /* not a raw file: say so now instead of spooling the rest (an
             * endless input like /dev/zero would never end) */
            snprintf(err, errlen, "not a funtrace raw file (no chunk header at offset 0)");
            close(tfd);
            return -1;
        }
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(tfd, buf + off, (size_t)(r - off));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                snprintf(err, errlen, "cannot write the temporary copy of stdin: %s", strerror(errno));
                close(tfd);
                return -1;
            }
            off += w;
        }
        total += (uint64_t)r;
    }
    s->fd = tfd;
    s->size = total;
    s->win = calloc(1, sizeof *s->win);
    return 0;
}

void ftr_src_mem(struct ftr_src *s, const void *p, size_t n)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->mem = p;
    s->size = n;
}

size_t ftr_read(const struct ftr_src *s, uint64_t off, void *buf, size_t len)
{
    if (off >= s->size)
        return 0;
    if (len > s->size - off)
        len = (size_t)(s->size - off);
    if (s->fd < 0) {
        memcpy(buf, s->mem + off, len);
        return len;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(s->fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    return done;
}

size_t ftr_read_entries(const struct ftr_src *src, const struct ftr_thread *th, uint64_t i,
                        uint64_t n, void *buf)
{
    size_t isz = ftr_item_size(th->fmt);
    if (i >= th->n)
        return 0;
    if (n > th->n - i)
        n = th->n - i;
    uint64_t p = th->rot ? (i + th->rot) % th->n : i; /* stored position */
    uint64_t first = n < th->n - p ? n : th->n - p;   /* items before the end of the chunk */
    size_t got = ftr_read(src, th->data_off + p * isz, buf, (size_t)(first * isz)) / isz;
    if (got < first || first == n)
        return got;
    return got + ftr_read(src, th->data_off, (char *)buf + first * isz, (size_t)((n - first) * isz)) / isz;
}

const void *ftr_entries_view(const struct ftr_src *src, const struct ftr_thread *th, uint64_t i, uint64_t n,
                             void *buf, size_t *got)
{
    size_t isz = ftr_item_size(th->fmt);
    *got = 0;
    if (i >= th->n)
        return buf;
    if (n > th->n - i)
        n = th->n - i;
    uint64_t p = th->rot ? (i + th->rot) % th->n : i; /* stored position */
    uint64_t first = n < th->n - p ? n : th->n - p;   /* items before the end of the chunk */
    uint64_t off = th->data_off + p * isz;
    uint64_t have = off < src->size ? (src->size - off) / isz : 0; /* (a truncated input) */
    if (first > have)
        first = have;
    if (src->fd < 0 && first) {
        *got = (size_t)first;
        return src->mem + off;
    }
    if (src->win && first) { /* (at most a window's worth) */
        if (first > (FTR_WINDOW - 8192) / isz)
            first = (FTR_WINDOW - 8192) / isz;
        const uint8_t *v = window(src, off, first * isz);
        if (v) {
            *got = (size_t)first;
            return v;
        }
    }
    *got = ftr_read_entries(src, th, i, n, buf);
    return buf;
}

const char *ftr_strerror(int code)
{
    switch (code) {
    case FTR_OK: return "ok";
    case FTR_ENOTRAW: return "not a funtrace raw file (no chunk header at offset 0)";
    case FTR_EEMPTY: return "empty input";
    case FTR_ENOSAMPLE: return "no such sample in the file";
    case FTR_ENOMEM: return "out of memory";
    }
    return "unknown error";
}

/* ---- parsing helpers ---------------------------------------------------- */

struct parser {
    const struct ftr_src *src;
    ftr_warn_fn warn;
    void *ctx;
    int nwarn;
    int oom;
};

static void pwarn(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pwarn(struct parser *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (!p->warn || p->nwarn >= 50)
        return;
    p->nwarn++;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->warn(p->ctx, msg);
}

static void *grow(struct parser *p, void *arr, size_t *cap, size_t need, size_t elsz)
{
    if (need <= *cap)
        return arr;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need)
        nc *= 2;
    void *n = realloc(arr, nc * elsz);
    if (!n) {
        p->oom = 1;
        return NULL;
    }
    memset((char *)n + *cap * elsz, 0, (nc - *cap) * elsz);
    *cap = nc;
    return n;
}

static char *read_payload(struct parser *p, uint64_t off, uint64_t len, size_t *got)
{
    char *b = malloc((size_t)len + 1);
    if (!b) {
        p->oom = 1;
        return NULL;
    }
    *got = ftr_read(p->src, off, b, (size_t)len);
    b[*got] = 0;
    return b;
}

static void mag_str(const char magic[8], char out[9])
{
    for (int i = 0; i < 8; i++)
        out[i] = magic[i] >= 0x20 && magic[i] < 0x7f ? magic[i] : '?';
    out[8] = 0;
}

static int known_magic(const char m[8])
{
    static const char *const known[] = {FT_CHUNK_FUNTRACE, FT_CHUNK_HEADER, FT_CHUNK_CMDLINE, FT_CHUNK_SIGINFO,
                                        FT_CHUNK_MAPPINGS, FT_CHUNK_MODULES, FT_CHUNK_GENS, FT_CHUNK_THREADID,
                                        FT_CHUNK_THREADSTAT, FT_CHUNK_TRACEBUF, FT_CHUNK_TRACEW08, FT_CHUNK_TRACEE08, FT_CHUNK_TRACES04, FT_CHUNK_STACK,
                                        FT_CHUNK_END, FT_CHUNK_PROCMAPS, "FTRACETX", FT_CHUNK_SCHED, FT_CHUNK_FAULTS};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!memcmp(m, known[i], 8))
            return 1;
    return 0;
}

long ftr_parse_procmaps(const char *text, size_t len, struct ftr_mapping **out)
{
    struct ftr_mapping *m = NULL;
    size_t n = 0, cap = 0;
    const char *s = text, *end = text + len;
    *out = NULL;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        char line[4600];
        size_t ll = (size_t)(le - s);
        if (ll >= sizeof line)
            ll = sizeof line - 1;
        memcpy(line, s, ll);
        line[ll] = 0;
        s = nl ? nl + 1 : end;
        unsigned long long a, b, off;
        char perms[8];
        int pathpos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &a, &b, perms, &off, &pathpos) < 4)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct ftr_mapping *nm = realloc(m, nc * sizeof *m);
            if (!nm)
                goto oom;
            m = nm;
            cap = nc;
        }
        struct ftr_mapping *mp = &m[n];
        memset(mp, 0, sizeof *mp);
        mp->start = a;
        mp->end = b;
        mp->offset = off;
        mp->prot = (perms[0] == 'r' ? FT_MAPF_R : 0) | (perms[1] == 'w' ? FT_MAPF_W : 0) |
                   (perms[2] == 'x' ? FT_MAPF_X : 0);
        const char *path = pathpos > 0 && (size_t)pathpos <= strlen(line) ? line + pathpos : "";
        while (*path == ' ')
            path++;
        mp->path = strdup(path);
        if (!mp->path)
            goto oom;
        n++;
    }
    *out = m;
    return (long)n;
oom:
    for (size_t i = 0; i < n; i++)
        free(m[i].path);
    free(m);
    return -1;
}

static void free_maps(struct ftr_mapping *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(m[i].path);
    free(m);
}

void ftr_free(struct ftr_trace *t)
{
    free(t->cmdline);
    free_maps(t->maps, t->nmaps);
    free(t->mods);
    free(t->gens);
    free(t->threads);
    for (size_t i = 0; i < t->nstacks; i++)
        free(t->stacks[i].pcs);
    free(t->stacks);
    memset(t, 0, sizeof *t);
}

/* per-sample parse state */
struct sstate {
    struct ftr_trace t;
    size_t thr_cap, stk_cap;
    int nchunks;
    int has_mappings;
    char unknown_seen[8][9];
    int nunknown;
};

static struct ftr_thread *new_thread(struct parser *p, struct sstate *s)
{
    struct ftr_thread *n = grow(p, s->t.threads, &s->thr_cap, s->t.nthreads + 1, sizeof *n);
    if (!n)
        return NULL;
    s->t.threads = n;
    struct ftr_thread *th = &n[s->t.nthreads++];
    memset(th, 0, sizeof *th);
    th->stack = -1;
    return th;
}

static struct ftr_thread *cur_thread(struct sstate *s)
{
    return s->t.nthreads ? &s->t.threads[s->t.nthreads - 1] : NULL;
}

static void parse_mappings(struct parser *p, struct sstate *s, const char *b, size_t len)
{
    size_t off = 0, cap = 0;
    struct ftr_mapping *m = NULL;
    size_t n = 0;
    while (off + sizeof(struct ft_raw_mapping) <= len) {
        struct ft_raw_mapping r;
        memcpy(&r, b + off, sizeof r);
        size_t rec = sizeof r + (((size_t)r.path_len + 7) & ~(size_t)7);
        if (r.path_len > 65536 || off + rec > len) {
            pwarn(p, "MAPPINGS chunk: record %zu has a bad path length (%u); rest ignored", n, r.path_len);
            s->t.problems |= FTR_P_BADCHUNK;
            break;
        }
        struct ftr_mapping *nm = grow(p, m, &cap, n + 1, sizeof *m);
        if (!nm)
            break;
        m = nm;
        struct ftr_mapping *mp = &m[n];
        mp->start = r.start;
        mp->end = r.end;
        mp->offset = r.offset;
        mp->prot = r.prot;
        mp->build_id_len = r.build_id_len > FT_BUILD_ID_MAX ? 0 : r.build_id_len;
        memcpy(mp->build_id, r.build_id, FT_BUILD_ID_MAX);
        mp->path = strndup(b + off + sizeof r, r.path_len);
        if (!mp->path) {
            p->oom = 1;
            break;
        }
        n++;
        off += rec;
    }
    if (off != len && !(s->t.problems & FTR_P_BADCHUNK)) {
        pwarn(p, "MAPPINGS chunk: %zu trailing bytes ignored", len - off);
        s->t.problems |= FTR_P_BADCHUNK;
    }
    free_maps(s->t.maps, s->t.nmaps);
    s->t.maps = m;
    s->t.nmaps = n;
    s->t.maps_from_procmaps = 0;
    s->has_mappings = 1;
}

static void set_procmaps(struct parser *p, struct sstate *s, const char *text, size_t len)
{
    struct ftr_mapping *m;
    long n = ftr_parse_procmaps(text, len, &m);
    if (n < 0) {
        p->oom = 1;
        return;
    }
    if (s->has_mappings) { /* MAPPINGS wins */
        free_maps(m, (size_t)n);
        return;
    }
    free_maps(s->t.maps, s->t.nmaps);
    s->t.maps = m;
    s->t.nmaps = (size_t)n;
    s->t.maps_from_procmaps = 1;
}

/* one chunk; returns 0, or -1 on allocation failure */
static int chunk(struct parser *p, struct sstate *s, const char magic[8], uint64_t off, uint64_t len,
                 int truncated, char **procmaps_keep, size_t *procmaps_len)
{
    char ms[9];
    mag_str(magic, ms);
    s->nchunks++;

    if (!memcmp(magic, FT_CHUNK_TRACEBUF, 8) || !memcmp(magic, FT_CHUNK_TRACEW08, 8) ||
        !memcmp(magic, FT_CHUNK_TRACEE08, 8) || !memcmp(magic, FT_CHUNK_TRACES04, 8)) {
        uint32_t fmt = magic[5] == 'B'   ? FT_FMT_EXACT16
                       : magic[5] == 'W' ? FT_FMT_SAMPLED8
                       : magic[5] == 'E' ? FT_FMT_EXACT8
                                         : FT_FMT_SAMPLED4;
        uint64_t isz = ftr_item_size(fmt);
        struct ftr_thread *th = cur_thread(s);
        if (!th || th->fmt) {
            th = new_thread(p, s);
            if (!th)
                return -1;
        }
        th->fmt = fmt;
        th->data_off = off;
        th->n = len / isz;
        th->truncated = truncated;
        if (len % isz && !truncated) {
            pwarn(p, "%s chunk at offset %llu: length %llu is not a multiple of %llu", ms,
                  (unsigned long long)off - 16, (unsigned long long)len, (unsigned long long)isz);
            s->t.problems |= FTR_P_BADCHUNK;
        }
        return 0;
    }
    if (!memcmp(magic, FT_CHUNK_END, 8) || !memcmp(magic, "FTRACETX", 8))
        return 0;
    if (!memcmp(magic, FT_CHUNK_SCHED, 8)) { /* located; read by sched_states.c */
        s->t.has_sched = 1;
        s->t.sched_off = off;
        s->t.sched_len = len;
        return 0;
    }

    if (len > SMALL_CHUNK_MAX) {
        pwarn(p, "%s chunk at offset %llu: implausible length %llu, skipped", ms,
              (unsigned long long)off - 16, (unsigned long long)len);
        s->t.problems |= FTR_P_BADCHUNK;
        return 0;
    }
    size_t got;
    char *b = read_payload(p, off, len, &got);
    if (!b)
        return -1;
    len = got;

#define NEED(cond, what)                                                                        \
    if (!(cond)) {                                                                              \
        pwarn(p, "%s chunk at offset %llu: %s (length %llu), skipped", ms,                      \
              (unsigned long long)off - 16, what, (unsigned long long)len);                     \
        s->t.problems |= FTR_P_BADCHUNK;                                                        \
        free(b);                                                                                \
        return 0;                                                                               \
    }

    if (!memcmp(magic, FT_CHUNK_FUNTRACE, 8)) {
        NEED(len == 8, "bad length");
        memcpy(&s->t.tsc_hz, b, 8);
    } else if (!memcmp(magic, FT_CHUNK_HEADER, 8)) {
        NEED(len >= sizeof(struct ft_raw_header), "too short");
        memcpy(&s->t.hdr, b, sizeof s->t.hdr);
        s->t.has_header = 1;
        s->t.original = 0;
    } else if (!memcmp(magic, FT_CHUNK_CMDLINE, 8)) {
        for (size_t i = 0; i < len; i++)
            if (b[i] == 0)
                b[i] = ' ';
        while (len && b[len - 1] == ' ')
            b[--len] = 0;
        free(s->t.cmdline);
        s->t.cmdline = b;
        return 0;
    } else if (!memcmp(magic, FT_CHUNK_SIGINFO, 8)) {
        NEED(len >= sizeof(struct ft_raw_crash), "too short");
        memcpy(&s->t.crash, b, sizeof s->t.crash);
        s->t.has_crash = 1;
    } else if (!memcmp(magic, FT_CHUNK_FAULTS, 8)) {
        struct ft_raw_faults fh;
        NEED(len >= sizeof fh, "too short");
        memcpy(&fh, b, sizeof fh);
        NEED(fh.n <= FT_FAULT_SLOTS && len >= sizeof fh + fh.n * sizeof(struct ft_fault), "bad record count");
        s->t.faults_total = fh.total;
        s->t.nfaults = fh.n;
        memcpy(s->t.faults, b + sizeof fh, fh.n * sizeof(struct ft_fault));
    } else if (!memcmp(magic, FT_CHUNK_MAPPINGS, 8)) {
        parse_mappings(p, s, b, len);
    } else if (!memcmp(magic, FT_CHUNK_PROCMAPS, 8)) {
        NEED(len <= PROCMAPS_MAX, "too long");
        free(*procmaps_keep);
        *procmaps_keep = b;
        *procmaps_len = len;
        set_procmaps(p, s, b, len);
        return 0; /* b kept for later samples */
    } else if (!memcmp(magic, FT_CHUNK_MODULES, 8)) {
        size_t n = len / sizeof(struct ft_module);
        if (len % sizeof(struct ft_module)) {
            pwarn(p, "MODULES chunk: length %zu is not a multiple of %zu (different ABI layout?)", len,
                  sizeof(struct ft_module));
            s->t.problems |= FTR_P_BADCHUNK;
        }
        free(s->t.mods);
        s->t.mods = calloc(n ? n : 1, sizeof(struct ft_module));
        if (!s->t.mods) {
            free(b);
            return -1;
        }
        memcpy(s->t.mods, b, n * sizeof(struct ft_module));
        for (size_t i = 0; i < n; i++) {
            struct ft_module *m = &s->t.mods[i];
            m->path[FT_MOD_PATH_MAX - 1] = 0;
            if (m->nseg > FT_MOD_SEGS)
                m->nseg = FT_MOD_SEGS;
            if (m->build_id_len > FT_BUILD_ID_MAX)
                m->build_id_len = 0;
        }
        s->t.nmods = n;
    } else if (!memcmp(magic, FT_CHUNK_GENS, 8)) {
        size_t n = len / sizeof(struct ft_gen);
        if (len % sizeof(struct ft_gen)) {
            pwarn(p, "GENERATN chunk: length %zu is not a multiple of %zu", len, sizeof(struct ft_gen));
            s->t.problems |= FTR_P_BADCHUNK;
        }
        free(s->t.gens);
        s->t.gens = calloc(n ? n : 1, sizeof(struct ft_gen));
        if (!s->t.gens) {
            free(b);
            return -1;
        }
        memcpy(s->t.gens, b, n * sizeof(struct ft_gen));
        s->t.ngens = n;
    } else if (!memcmp(magic, FT_CHUNK_THREADID, 8)) {
        NEED(len >= sizeof(struct ft_raw_threadid), "too short");
        struct ft_raw_threadid id;
        memcpy(&id, b, sizeof id);
        struct ftr_thread *th = new_thread(p, s);
        if (!th) {
            free(b);
            return -1;
        }
        th->pid = id.pid;
        th->tid = id.tid;
        memcpy(th->name, id.name, FT_THREAD_NAME_LEN);
        th->name[FT_THREAD_NAME_LEN] = 0;
        th->has_id = 1;
    } else if (!memcmp(magic, FT_CHUNK_THREADSTAT, 8)) {
        NEED(len >= sizeof(struct ft_raw_thread), "too short");
        struct ft_raw_thread st;
        memcpy(&st, b, sizeof st);
        struct ftr_thread *th = cur_thread(s);
        if (!th || th->has_stat || th->fmt || (th->has_id && th->tid != st.tid)) {
            if (th && th->has_id && th->tid != st.tid && !th->has_stat)
                pwarn(p, "THRDSTAT for tid %u follows THREADID of tid %llu", st.tid,
                      (unsigned long long)th->tid);
            th = new_thread(p, s);
            if (!th) {
                free(b);
                return -1;
            }
            th->tid = st.tid;
        }
        th->st = st;
        th->has_stat = 1;
    } else if (!memcmp(magic, FT_CHUNK_STACK, 8)) {
        NEED(len >= sizeof(struct ft_raw_stack), "too short");
        struct ftr_stack *ns = grow(p, s->t.stacks, &s->stk_cap, s->t.nstacks + 1, sizeof *ns);
        if (!ns) {
            free(b);
            return -1;
        }
        s->t.stacks = ns;
        struct ftr_stack *st = &ns[s->t.nstacks];
        memcpy(&st->h, b, sizeof st->h);
        uint64_t avail = (len - sizeof st->h) / 8;
        uint32_t nf = st->h.nframes;
        if (nf > avail) {
            pwarn(p, "FINSTACK of tid %u: %u frames announced, %llu present", st->h.tid, nf,
                  (unsigned long long)avail);
            s->t.problems |= FTR_P_BADCHUNK;
            nf = (uint32_t)avail;
        }
        st->pcs = malloc((nf ? nf : 1) * sizeof(uint64_t));
        if (!st->pcs) {
            free(b);
            return -1;
        }
        memcpy(st->pcs, b + sizeof st->h, nf * sizeof(uint64_t));
        st->npcs = nf;
        s->t.nstacks++;
    } else {
        int known = 0;
        for (int i = 0; i < s->nunknown; i++)
            if (!strcmp(s->unknown_seen[i], ms))
                known = 1;
        if (!known) {
            if (s->nunknown < 8)
                strcpy(s->unknown_seen[s->nunknown++], ms);
            pwarn(p, "unknown chunk \"%s\" at offset %llu skipped", ms, (unsigned long long)off - 16);
        }
        s->t.problems |= FTR_P_UNKNOWN;
    }
    free(b);
    return 0;
#undef NEED
}

/* The original funtrace dumps a thread's whole ring in buffer order: the
 * entries (word != 0) form two runs sorted by time, the newer one first once
 * the ring has wrapped.  The oldest entry is the one after the largest step
 * back in time, cyclically (for an unwrapped ring: the first entry).  O(n),
 * no sorting, the file is not rewritten: th->rot makes the reads start there.
 * Entries out of order elsewhere are left where they are (the replay counts
 * them). */
static void find_oldest(struct parser *p, struct ftr_thread *th)
{
    enum { B = 4096 };
    struct ft_entry *e = malloc(B * sizeof *e);
    if (!e) {
        p->oom = 1;
        return;
    }
    int have = 0;
    uint64_t first_tsc = 0, prev_tsc = 0, best_drop = 0, best_i = 0;
    for (uint64_t i = 0; i < th->n;) {
        size_t got = ftr_read_entries(p->src, th, i, B, e);
        if (!got)
            break;
        for (size_t k = 0; k < got; k++) {
            if (!e[k].word)
                continue;
            if (!have) {
                have = 1;
                first_tsc = e[k].tsc;
            } else if (e[k].tsc < prev_tsc && prev_tsc - e[k].tsc > best_drop) {
                best_drop = prev_tsc - e[k].tsc;
                best_i = i + k;
            }
            prev_tsc = e[k].tsc;
        }
        i += got;
    }
    free(e);
    /* versus the step from the last entry back to the first one, the largest
     * for an unwrapped ring (then the reads start at item 0) */
    uint64_t wrap_drop = prev_tsc > first_tsc ? prev_tsc - first_tsc : 0;
    if (have && best_drop > wrap_drop)
        th->rot = best_i;
}

static void finish(struct parser *p, struct sstate *s)
{
    struct ftr_trace *t = &s->t;
    if (!t->cmdline)
        t->cmdline = strdup("");
    if (!t->cmdline)
        p->oom = 1;
    t->original = !t->has_header;
    if (t->has_header) {
        if (t->hdr.flags & FT_RAWF_PARTIAL)
            t->problems |= FTR_P_PARTIAL;
        if (t->hdr.nthreads_lost)
            t->problems |= FTR_P_LOST;
        size_t nstat = 0;
        for (size_t i = 0; i < t->nthreads; i++)
            nstat += t->threads[i].has_stat;
        if (nstat < t->hdr.nthreads) {
            pwarn(p, "the header announces %u threads, %zu present", t->hdr.nthreads, nstat);
            t->problems |= FTR_P_COUNT;
        }
        if (!t->tsc_hz)
            t->tsc_hz = t->hdr.tsc_hz;
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        struct ftr_thread *th = &t->threads[i];
        if (!th->has_id && th->has_stat)
            th->tid = th->st.tid;
        th->stack = -1;
        for (size_t k = 0; k < t->nstacks; k++)
            if (t->stacks[k].h.tid == th->tid)
                th->stack = (int)k;
    }
    if (t->original)
        for (size_t i = 0; i < t->nthreads && !p->oom; i++)
            if (t->threads[i].fmt == FT_FMT_EXACT16 && t->threads[i].n > 1)
                find_oldest(p, &t->threads[i]);
    if (!t->ended)
        t->problems |= FTR_P_TRUNCATED;
}

static void sstate_reset(struct sstate *s, char *procmaps, size_t plen, struct parser *p)
{
    memset(s, 0, sizeof *s);
    if (procmaps)
        set_procmaps(p, s, procmaps, plen);
}

/* the end of sample idx (bytes long): keep it if it is the one wanted */
static void end_sample(struct sstate *cur, struct sstate *keep, int *have_keep, int want, int idx, uint64_t bytes)
{
    cur->t.sample = idx;
    cur->t.bytes = bytes;
    if (want >= 0 && want != idx) {
        ftr_free(&cur->t);
        return;
    }
    if (*have_keep)
        ftr_free(&keep->t);
    *keep = *cur;
    *have_keep = 1;
}

int ftr_load(const struct ftr_src *src, int sample, struct ftr_trace *out, ftr_warn_fn warn, void *ctx)
{
    struct parser p = {.src = src, .warn = warn, .ctx = ctx};
    struct sstate cur, keep;
    int have_keep = 0, idx = 0, rc = FTR_OK;
    char *procmaps = NULL;
    size_t procmaps_len = 0;
    uint64_t off = 0, sample_start = 0;

    memset(out, 0, sizeof *out);
    if (src->size == 0)
        return FTR_EEMPTY;
    sstate_reset(&cur, NULL, 0, &p);
    memset(&keep, 0, sizeof keep);

    while (off < src->size && !p.oom) {
        struct ft_chunk_header h;
        if (src->size - off < sizeof h) {
            if (off == 0) {
                rc = FTR_ENOTRAW;
                goto out;
            }
            pwarn(&p, "%llu trailing bytes at offset %llu are not a chunk",
                  (unsigned long long)(src->size - off), (unsigned long long)off);
            cur.t.problems |= FTR_P_TRUNCATED;
            break;
        }
        ftr_read(src, off, &h, sizeof h);
        if (off == 0 && !known_magic(h.magic)) {
            rc = FTR_ENOTRAW;
            goto out;
        }
        if (!magic_ok(h.magic, FT_CHUNK_MAGIC_LEN)) {
            if (off == 0) {
                rc = FTR_ENOTRAW;
                goto out;
            }
            pwarn(&p, "corrupt chunk header at offset %llu; the rest of the file is ignored",
                  (unsigned long long)off);
            cur.t.problems |= FTR_P_CORRUPT;
            break;
        }
        uint64_t len = h.length, avail = src->size - off - sizeof h;
        int truncated = 0;
        if (len > avail) {
            char ms[9];
            mag_str(h.magic, ms);
            pwarn(&p, "chunk \"%s\" at offset %llu is truncated (%llu of %llu bytes present)", ms,
                  (unsigned long long)off, (unsigned long long)avail, (unsigned long long)len);
            cur.t.problems |= FTR_P_TRUNCATED;
            len = avail;
            truncated = 1;
        }
        if (chunk(&p, &cur, h.magic, off + sizeof h, len, truncated, &procmaps, &procmaps_len) != 0)
            break;
        off += sizeof h + len;
        if (!memcmp(h.magic, FT_CHUNK_END, 8)) {
            cur.t.ended = 1;
            end_sample(&cur, &keep, &have_keep, sample, idx++, off - sample_start);
            sample_start = off;
            sstate_reset(&cur, procmaps, procmaps_len, &p);
        }
        if (truncated)
            break;
    }
    if (p.oom) {
        rc = FTR_ENOMEM;
        ftr_free(&cur.t);
        goto out;
    }
    if (cur.nchunks > 0) { /* a trailing sample without ENDTRACE */
        end_sample(&cur, &keep, &have_keep, sample, idx++, off - sample_start);
    } else {
        ftr_free(&cur.t);
    }
    if (!have_keep) {
        rc = idx == 0 ? FTR_ENOTRAW : FTR_ENOSAMPLE;
        goto out;
    }
    finish(&p, &keep);
    if (p.oom) {
        ftr_free(&keep.t);
        rc = FTR_ENOMEM;
        goto out;
    }
    *out = keep.t;
    out->nsamples = idx;
    free(procmaps);
    return FTR_OK;
out:
    if (have_keep)
        ftr_free(&keep.t);
    free(procmaps);
    return rc;
}
