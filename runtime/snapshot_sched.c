/*
 * snapshot_sched.c -- the SCHEDEVT chunk of the runtime's own snapshots
 * (API, FUNTRACE_SIGNAL, on-crash, PSI): the scheduling events of this
 * process's threads, read from the tracefs instance (reader/sched_*.c,
 * FORMAT.md 2.6) for the snapshot's window (min_tsc .. the end of the copy).
 *
 * Async-signal-safe and allocation-free on the signal/PSI paths: the buffer
 * (thread ids + events) is mapped, populated and, if allowed, locked at
 * start-up when the instance exists then; a writer takes it with an atomic
 * exchange.  A writer that finds it taken or missing (a second snapshot at
 * the same time, an instance set up after the program started) maps one for
 * the snapshot, and if that fails the chunk says so.
 *
 * FUNTRACE_SCHED (read at start-up): unset or "" = instances/funtrace under
 * the tracefs mount, "off" = no capture, else the instance directory.
 * FUNTRACE_SCHED_EVENTS: events kept per snapshot (default 16384 = 1 MiB).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "funtrace_sched.h"
#include "ft_internal.h"

#define SCHED_TIDS 8192u            /* thread ids the filter holds */
#define SCHED_EVENTS_DEFAULT 16384u /* 1 MiB of events */
#define SCHED_EVENTS_MAX (1u << 20)

static char sched_setting[512];
static size_t sched_events = SCHED_EVENTS_DEFAULT;
static void *sched_prealloc;
static size_t sched_prealloc_len;
static int sched_prealloc_busy;

static size_t buf_len(void)
{
    size_t n = SCHED_TIDS * sizeof(uint32_t) + sched_events * sizeof(struct ft_raw_sched_event);
    return (n + 4095) & ~(size_t)4095;
}

static void *map_buf(size_t len, int populate)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0),
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void ft_sched_rt_init(void)
{
    const char *s = getenv(FT_SCHED_ENV), *n = getenv("FUNTRACE_SCHED_EVENTS");
    if (s) ft_strlcpy(sched_setting, s, sizeof sched_setting);
    if (n && *n) {
        char *end;
        unsigned long v = strtoul(n, &end, 10);
        if (*end || v > SCHED_EVENTS_MAX)
            ft_warn("FUNTRACE_SCHED_EVENTS must be 0..1048576; using " FT_STR(SCHED_EVENTS_DEFAULT), n);
        else
            sched_events = v;
    }
    char dir[512], why[192];
    if (ft_sched_locate(sched_setting, dir, sizeof dir, why, sizeof why) != FT_SCHED_OK) return;
    sched_prealloc_len = buf_len();
    sched_prealloc = map_buf(sched_prealloc_len, 1);
    if (sched_prealloc) (void)mlock(sched_prealloc, sched_prealloc_len);
}

void ft_sched_rt_after_fork_child(void)
{
    sched_prealloc_busy = 0;
    if (sched_prealloc) {
        for (size_t off = 0; off < sched_prealloc_len; off += 4096) ((volatile char *)sched_prealloc)[off] = 0;
        (void)mlock(sched_prealloc, sched_prealloc_len);
    }
}

static void on_thread(void *ctx, uint32_t tid)
{
    struct ft_sched_rt *s = ctx;
    if (s->ntids < SCHED_TIDS / 2) s->tids[s->ntids++] = tid;
}

void ft_sched_rt_begin(struct ft_sched_rt *s, struct ft_source_info *si)
{
    memset(s, 0, sizeof *s);
    if (sched_prealloc && !__atomic_exchange_n(&sched_prealloc_busy, 1, __ATOMIC_ACQUIRE)) {
        s->mem = sched_prealloc;
        s->len = sched_prealloc_len;
        s->prealloc = 1;
    } else {
        s->len = buf_len();
        s->mem = map_buf(s->len, 0);
    }
    if (!s->mem) return;
    s->tids = s->mem;
    si->on_thread = on_thread;
    si->on_thread_ctx = s;
}

/* the other threads of the process (untraced ones too): /proc/self/task */
static void add_tasks(struct ft_sched_rt *s)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            const char *c = d->d_name;
            uint32_t v = 0;
            while (*c >= '0' && *c <= '9') v = v * 10 + (uint32_t)(*c++ - '0');
            if (!*c && v && s->ntids < SCHED_TIDS / 2) s->tids[s->ntids++] = v;
            off += d->d_reclen;
        }
    }
    close(fd);
}

int ft_sched_rt_write(struct ft_sched_rt *s, const struct ft_writer *w, struct ft_emit_stats *st, uint64_t min_tsc,
                      uint64_t to_tsc)
{
    uint64_t pid = (uint64_t)getpid();
    int rc;
    if (!s->mem) {
        rc = ft_sched_emit_status(w, st, pid, FT_SCHED_ERROR, "no memory for the scheduling events");
    } else if (sched_events == 0) {
        rc = ft_sched_emit_status(w, st, pid, FT_SCHED_OFF, "scheduling states are off (FUNTRACE_SCHED_EVENTS=0)");
    } else {
        add_tasks(s);
        struct ft_sched_filter f;
        struct ft_sched_buf b;
        ft_sched_filter_init(&f, pid, s->tids, s->ntids, SCHED_TIDS, min_tsc, to_tsc);
        ft_sched_buf_init(&b, (struct ft_raw_sched_event *)((char *)s->mem + SCHED_TIDS * sizeof(uint32_t)),
                          sched_events);
        ft_sched_capture(sched_setting, &f, &b);
        ft_sched_finish(&b, NULL);
        rc = ft_sched_emit(w, st, &b);
    }
    ft_sched_rt_release(s);
    return rc;
}

void ft_sched_rt_release(struct ft_sched_rt *s)
{
    if (s->prealloc)
        __atomic_store_n(&sched_prealloc_busy, 0, __ATOMIC_RELEASE);
    else if (s->mem)
        munmap(s->mem, s->len);
    s->mem = NULL;
    s->prealloc = 0;
}
