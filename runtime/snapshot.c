/*
 * snapshot.c -- snapshots written by the runtime itself (API, signal,
 * on-crash, PSI): raw chunks produced by ft_raw_emit() (rawwrite.c) reading
 * this process's own memory through process_vm_readv, so that a corrupt
 * pointer in the registry cannot crash the writer.  Async-signal-safe: no
 * malloc, no stdio, no locks.
 *
 * The only buffer a snapshot needs is the MAPPINGS payload (built from
 * /proc/self/maps).  It is allocated and faulted in ahead of time, so that a
 * snapshot taken when memory is exhausted (a SIGSEGV handler after malloc
 * failed, the PSI thread under memory pressure) does not need to allocate:
 *   - ft_snapshot_init() maps one buffer (FT_MAPS_PREALLOC bytes, populated
 *     and, if allowed, locked) at start-up, shared by the signal snapshot,
 *     the on-crash handler and the API; a writer takes it with an atomic
 *     exchange, and one that finds it taken (two snapshots at once) maps its
 *     own;
 *   - a writer with its own buffer (the PSI thread) passes it to
 *     ft_snapshot_to_fd_buf().
 * Only if /proc/self/maps does not fit (thousands of mappings) is a bigger
 * buffer mapped; if that fails, MAPPINGS is truncated (one line on stderr)
 * and the rest of the snapshot is written as usual.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "funtrace.h"
#include "funtrace_rawwrite.h"
#include "ft_internal.h"
#include "procmem.h"

/* ---- reading our own memory ------------------------------------------- */

/* ctx: a struct procmem of this process (procmem_init in emit); ring memory:
 * untouched pages are zeros, not read (reading them would make them real
 * memory of ours: reader/procmem.h) */
static size_t self_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    return procmem_read(ctx, addr, buf, len, 0);
}

static size_t self_read_ring(void *ctx, uint64_t addr, void *buf, size_t len)
{
    return procmem_read(ctx, addr, buf, len, 1);
}

/* ---- writers ---------------------------------------------------------- */

static int fd_write(void *ctx, const void *buf, size_t len)
{
    int fd = *(int *)ctx;
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- MAPPINGS from /proc/self/maps (async-signal-safe) ----------------- */

struct mbuf {
    char *p;
    size_t len, cap;
    int owned;     /* p was mapped here: unmap it at the end */
    int truncated; /* a record did not fit and no memory could be mapped */
};

static char *maps_prealloc;
static size_t maps_prealloc_cap;
static int maps_prealloc_busy;

/* a populated (and, if RLIMIT_MEMLOCK allows, locked) buffer of
 * FT_MAPS_PREALLOC bytes for MAPPINGS; NULL if it cannot be mapped */
void *ft_snapshot_buf_new(size_t *cap)
{
    void *p = mmap(NULL, FT_MAPS_PREALLOC, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)mlock(p, FT_MAPS_PREALLOC);
    *cap = FT_MAPS_PREALLOC;
    return p;
}

void ft_snapshot_init(void)
{
    maps_prealloc = ft_snapshot_buf_new(&maps_prealloc_cap);
    ft_sched_rt_init();
}

static int mbuf_reserve(struct mbuf *b, size_t more)
{
    size_t cap;
    char *np;
    if (b->len + more <= b->cap)
        return 0;
    if (b->truncated)
        return -1;
    cap = b->cap ? b->cap : 65536;
    while (cap < b->len + more)
        cap *= 2;
    np = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (np == MAP_FAILED) {
        b->truncated = 1;
        return -1;
    }
    if (b->len)
        memcpy(np, b->p, b->len);
    if (b->owned)
        munmap(b->p, b->cap);
    b->p = np;
    b->cap = cap;
    b->owned = 1;
    return 0;
}

static void mbuf_free(struct mbuf *b)
{
    if (b->owned)
        munmap(b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
    b->owned = 0;
}

static uint64_t parse_hex(const char **s)
{
    uint64_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uint64_t)(c - 'a' + 10);
        else
            return v;
    }
}

static void skip_field(const char **s, const char *end)
{
    while (*s < end && **s != ' ')
        (*s)++;
    while (*s < end && **s == ' ')
        (*s)++;
}

static void add_mapping(struct mbuf *out, const char *line, const char *end)
{
    struct ft_raw_mapping m;
    const char *s = line, *path;
    size_t plen, rec;
    memset(&m, 0, sizeof m);
    m.start = parse_hex(&s);
    if (*s++ != '-')
        return;
    m.end = parse_hex(&s);
    while (s < end && *s == ' ')
        s++;
    if (end - s < 4)
        return;
    m.prot = (s[0] == 'r' ? FT_MAPF_R : 0) | (s[1] == 'w' ? FT_MAPF_W : 0) | (s[2] == 'x' ? FT_MAPF_X : 0);
    skip_field(&s, end); /* perms */
    m.offset = parse_hex(&s);
    while (s < end && *s == ' ')
        s++;
    skip_field(&s, end); /* dev */
    skip_field(&s, end); /* inode */
    path = s;
    plen = (size_t)(end - path);
    if (plen > 4095)
        plen = 4095;
    /* build-id of an offset-0 mapping of a module we know */
    if (m.offset == 0 && plen && ft_modules()) {
        struct ft_module *mods = ft_modules();
        uint32_t n = FT_LOAD(funtrace_root.modules_used);
        for (uint32_t i = 0; i < n; i++) {
            if (FT_LOAD(mods[i].state) != FT_MOD_LOADED || !mods[i].build_id_len ||
                mods[i].build_id_len > FT_BUILD_ID_MAX)
                continue;
            if (strlen(mods[i].path) == plen && !memcmp(mods[i].path, path, plen)) {
                m.build_id_len = mods[i].build_id_len;
                memcpy(m.build_id, mods[i].build_id, m.build_id_len);
                break;
            }
        }
    }
    m.path_len = (uint32_t)plen;
    rec = ft_mapping_record_size(plen);
    if (mbuf_reserve(out, rec))
        return;
    out->len += ft_mapping_record_encode(out->p + out->len, out->cap - out->len, &m, path, plen);
}

static void build_mappings(struct mbuf *out)
{
    char buf[8192];
    size_t have = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        char *p, *nl;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        p = buf;
        while ((nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
            add_mapping(out, p, nl);
            p = nl + 1;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
        if (have == sizeof buf) /* absurdly long line: drop it */
            have = 0;
    }
    if (have)
        add_mapping(out, buf, buf + have);
    close(fd);
}

/* ---- the snapshot ----------------------------------------------------- */

/* maps_buf/maps_cap: the caller's MAPPINGS buffer; NULL: the pre-allocated
 * one if free, else one mapped on demand */
static int emit(const struct ft_writer *w, const struct ft_raw_crash *crash, uint64_t min_tsc, int may_block,
                void *maps_buf, size_t maps_cap)
{
    int paused, took_prealloc = 0;
    struct procmem pm;
    struct ft_reader rd = { &pm, self_read, self_read_ring };
    struct ft_source_info si;
    struct ft_emit_stats st;
    struct mbuf maps = { NULL, 0, 0, 0, 0 };
    int rc;
    if (!(FT_LOAD(funtrace_root.flags) & FT_ROOTF_INITIALIZED))
        return -2;
    procmem_init(&pm, getpid(), open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), -1);
    if (maps_buf) {
        maps.p = maps_buf;
        maps.cap = maps_cap;
    } else if (maps_prealloc && !__atomic_exchange_n(&maps_prealloc_busy, 1, __ATOMIC_ACQUIRE)) {
        took_prealloc = 1;
        maps.p = maps_prealloc;
        maps.cap = maps_prealloc_cap;
    }
    build_mappings(&maps);
    if (maps.truncated)
        ft_warn("snapshot: the MAPPINGS chunk is truncated (no memory for more records)", NULL);
    memset(&si, 0, sizeof si);
    memset(&st, 0, sizeof st);
    si.source = FT_SRC_SNAPSHOT;
    si.pid = (uint64_t)getpid();
    si.crash = crash;
    si.mappings = maps.p;
    si.mappings_len = maps.len;
    si.min_tsc = min_tsc;
    si.live = 1;
    si.extra_flags = min_tsc ? FT_RAWF_TIME_FILTERED : 0;
    struct ft_sched_rt sched; /* SCHEDEVT (snapshot_sched.c) */
    ft_sched_rt_begin(&sched, &si);
    /* while a fatal signal froze tracing (freeze.c) nothing writes a ring:
     * no pausing (it would write every thread's record) */
    paused = ft_frozen() ? 0 : ft_pause_all(may_block);
    si.taken_tsc = ft_rdtsc();
    rc = ft_raw_emit(&rd, (uint64_t)(uintptr_t)&funtrace_root, &si, w, &st);
    if (paused)
        ft_resume_all();
    if (rc == 0)
        rc = ft_sched_rt_write(&sched, w, &st, min_tsc, si.taken_tsc);
    else
        ft_sched_rt_release(&sched);
    if (rc == 0)
        rc = ft_raw_end(w, &st);
    mbuf_free(&maps);
    procmem_close(&pm);
    if (took_prealloc)
        __atomic_store_n(&maps_prealloc_busy, 0, __ATOMIC_RELEASE);
    return rc;
}

int ft_snapshot_to_fd_buf(int fd, const struct ft_raw_crash *crash, uint64_t min_tsc, void *maps_buf,
                          size_t maps_cap)
{
    int saved = errno;
    struct ft_writer w = { &fd, fd_write };
    int rc = emit(&w, crash, min_tsc, 0, maps_buf, maps_cap);
    errno = saved;
    return rc;
}

int ft_snapshot_to_fd(int fd, const struct ft_raw_crash *crash, uint64_t min_tsc)
{
    return ft_snapshot_to_fd_buf(fd, crash, min_tsc, NULL, 0);
}

FT_EXPORT int funtrace_write_snapshot_fd(int fd)
{
    return ft_snapshot_to_fd(fd, NULL, 0);
}

/* appending snapshots to a file: one writer at a time (the API waits, the
 * signal handler skips), so the chunks of two traces never interleave */
static pthread_mutex_t append_mutex = PTHREAD_MUTEX_INITIALIZER;
int ft_append_busy;

/* fork child: another thread may have been appending */
void ft_snapshot_after_fork_child(void) FT_HIDDEN;
void ft_snapshot_after_fork_child(void)
{
    pthread_mutex_init(&append_mutex, NULL);
    ft_append_busy = 0;
    maps_prealloc_busy = 0;
    ft_sched_rt_after_fork_child();
    /* the buffer's pages are shared copy-on-write with the parent (and the
     * lock is not inherited): make them the child's own now */
    if (maps_prealloc) {
        for (size_t off = 0; off < maps_prealloc_cap; off += 4096)
            ((volatile char *)maps_prealloc)[off] = 0;
        (void)mlock(maps_prealloc, maps_prealloc_cap);
    }
}

FT_EXPORT void funtrace_pause_and_write_current_snapshot(void)
{
    int fd;
    pthread_mutex_lock(&append_mutex);
    while (__atomic_exchange_n(&ft_append_busy, 1, __ATOMIC_ACQUIRE))
        usleep(1000);
    fd = open("funtrace.raw", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        ft_warn("cannot open funtrace.raw", strerror(errno));
    } else {
        struct ft_writer w = { &fd, fd_write };
        flock(fd, LOCK_EX); /* other processes (fork children) append too */
        if (emit(&w, NULL, 0, 1, NULL, 0) == -1)
            ft_warn("error writing funtrace.raw", strerror(errno));
        close(fd);
    }
    __atomic_store_n(&ft_append_busy, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&append_mutex);
}

/* ---- in-memory snapshots ---------------------------------------------- */

struct funtrace_snapshot {
    size_t len, cap;
    char *data;
};

static int mem_write(void *ctx, const void *buf, size_t len)
{
    struct funtrace_snapshot *s = ctx;
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 1 << 20;
        char *np;
        while (cap < s->len + len)
            cap *= 2;
        np = realloc(s->data, cap);
        if (!np) {
            errno = ENOMEM;
            return -1;
        }
        s->data = np;
        s->cap = cap;
    }
    memcpy(s->data + s->len, buf, len);
    s->len += len;
    return 0;
}

static struct funtrace_snapshot *get_snapshot(uint64_t min_tsc)
{
    struct funtrace_snapshot *s = calloc(1, sizeof *s);
    struct ft_writer w = { s, mem_write };
    if (!s)
        return NULL;
    if (emit(&w, NULL, min_tsc, 1, NULL, 0) != 0) {
        free(s->data);
        free(s);
        return NULL;
    }
    return s;
}

FT_EXPORT struct funtrace_snapshot *funtrace_pause_and_get_snapshot(void)
{
    return get_snapshot(0);
}

FT_EXPORT struct funtrace_snapshot *funtrace_pause_and_get_snapshot_starting_at_time(uint64_t time)
{
    return get_snapshot(time ? time : 1);
}

FT_EXPORT struct funtrace_snapshot *funtrace_pause_and_get_snapshot_up_to_age(uint64_t max_event_age)
{
    uint64_t now = ft_rdtsc();
    return get_snapshot(max_event_age < now ? now - max_event_age : 1);
}

/* one line on stderr: "funtrace: MSG FILENAME: strerror(err)" */
static void warn_file(const char *msg, const char *filename, int err)
{
    char detail[400];
    size_t n = ft_strlcpy(detail, filename, sizeof detail);
    if (n < sizeof detail)
        ft_strlcpy(detail + n, ": ", sizeof detail - n);
    n = strlen(detail);
    ft_strlcpy(detail + n, strerror(err), sizeof detail - n);
    ft_warn(msg, detail);
}

/* void, as in the original: a failure is reported on stderr; a file that
 * could not be written completely is removed (never left half-written) */
FT_EXPORT void funtrace_write_snapshot(const char *filename, struct funtrace_snapshot *snapshot)
{
    int fd, err;
    if (!snapshot || !filename)
        return;
    fd = open(filename, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        warn_file("cannot open snapshot file", filename, errno);
        return;
    }
    err = fd_write(&fd, snapshot->data, snapshot->len) ? errno : 0;
    if (close(fd) && !err)
        err = errno;
    if (!err)
        return;
    unlink(filename);
    warn_file("error writing snapshot file (removed)", filename, err);
}

FT_EXPORT void funtrace_free_snapshot(struct funtrace_snapshot *snapshot)
{
    if (!snapshot)
        return;
    free(snapshot->data);
    free(snapshot);
}
