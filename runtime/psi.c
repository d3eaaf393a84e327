/*
 * psi.c -- the in-process PSI option: FUNTRACE_PSI="some 500000 2000000"
 * (and FUNTRACE_PSI_DIR=DIR) start a thread that arms a PSI memory trigger on
 * the process's own cgroup v2 group (or /proc/pressure/memory) and writes a
 * snapshot DIR/<prog>-<pid>-<YYYYmmdd-HHMMSS>.raw each time it fires.
 *
 * Everything the firing path needs is prepared here at start: the trigger
 * fd, the directory fd, the program name, the UTC offset, and the buffer of
 * the snapshot's MAPPINGS chunk (mapped, populated and if possible locked
 * now: memory is what is short when the trigger fires); the path itself
 * only formats a name in a stack buffer and calls ft_snapshot_to_fd_buf (no
 * malloc, no mmap, no stdio, no locale/timezone lookups).
 *
 * Settings: FUNTRACE_PSI        the trigger ("some|full STALL_US WINDOW_US");
 *           FUNTRACE_PSI_DIR    output directory (default: the current one);
 *           FUNTRACE_PSI_INTERVAL  minimum seconds between snapshots (10);
 *           FUNTRACE_PSI_MAX    at most this many snapshots (16).
 * Kernel rules (see oomwatch/oom_psispec.h): the trigger is written with
 * its trailing NUL; without CAP_SYS_RESOURCE the window must be a whole
 * multiple of 2 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ft_internal.h"
#include "../oomwatch/oom_psispec.h"

static int psi_fd = -1, psi_dir_fd = -1;
static char psi_comm[32];
static char psi_file[600];
static long psi_utc_off;             /* seconds east of UTC, at start */
static uint64_t psi_interval_s = 10, psi_max = 16;
static void *psi_maps_buf;           /* MAPPINGS buffer, allocated at start */
static size_t psi_maps_cap;

/* read a small /proc file into buf (NUL terminated); length or -1 */
static ssize_t slurp(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    if (fd < 0)
        return -1;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

static int have_cap_sys_resource(void)
{
    char buf[4096];
    if (slurp("/proc/self/status", buf, sizeof buf) <= 0)
        return 0;
    const char *p = strstr(buf, "\nCapEff:");
    return p ? (int)((strtoull(p + 8, NULL, 16) >> 24) & 1) : 0; /* CAP_SYS_RESOURCE */
}

/* <cgroup2 mount>/<our v2 path>/memory.pressure, else /proc/pressure/memory */
static void find_pressure_file(void)
{
    static char cg[4096], mounts[16384];
    const char *fallback = "/proc/pressure/memory";
    ft_strlcpy(psi_file, fallback, sizeof psi_file);
    if (slurp("/proc/self/cgroup", cg, sizeof cg) <= 0 || slurp("/proc/self/mounts", mounts, sizeof mounts) <= 0)
        return;
    const char *rel = cg;
    if (strncmp(cg, "0::", 3)) {
        rel = strstr(cg, "\n0::");
        if (!rel)
            return;
        rel++;
    }
    rel += 3;
    size_t rlen = strcspn(rel, "\n");
    if (rlen <= 1)
        return; /* the root group: system-wide pressure */
    /* /proc/self/mounts: "source mountpoint fstype options 0 0" */
    for (char *l = mounts; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] ? 1 : 0)) {
        char *sp1 = strchr(l, ' ');
        char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp2 || strncmp(sp2 + 1, "cgroup2 ", 8))
            continue;
        size_t mlen = (size_t)(sp2 - sp1 - 1);
        if (mlen + rlen + 20 >= sizeof psi_file)
            return;
        memcpy(psi_file, sp1 + 1, mlen);
        memcpy(psi_file + mlen, rel, rlen);
        ft_strlcpy(psi_file + mlen + rlen, "/memory.pressure", sizeof psi_file - mlen - rlen);
        if (access(psi_file, F_OK) != 0)
            ft_strlcpy(psi_file, fallback, sizeof psi_file);
        return;
    }
}

/* v in decimal, zero-padded to width digits (the digits: oom_psispec.h) */
static char *put_num(char *o, uint64_t v, int width)
{
    for (uint64_t p = 10; width > 1; width--, p *= 10)
        if (v < p)
            *o++ = '0';
    return ft_psi__put(o, o + 20, v);
}

/* <comm>-<pid>-YYYYmmdd-HHMMSS (local time, offset taken at start) */
static void snapshot_name(char *o)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t t = (int64_t)ts.tv_sec + psi_utc_off;
    int64_t days = t / 86400, sec = t % 86400;
    if (sec < 0) {
        sec += 86400;
        days--;
    }
    /* civil from days (H. Hinnant) */
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    uint64_t doe = (uint64_t)(z - era * 146097);
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
    uint64_t m = mp < 10 ? mp + 3 : mp - 9;
    uint64_t y = (uint64_t)((int64_t)yoe + era * 400) + (m <= 2);
    o += ft_strlcpy(o, psi_comm, 32);
    *o++ = '-';
    o = put_num(o, (uint64_t)getpid(), 1);
    *o++ = '-';
    o = put_num(o, y, 4);
    o = put_num(o, m, 2);
    o = put_num(o, d, 2);
    *o++ = '-';
    o = put_num(o, (uint64_t)sec / 3600, 2);
    o = put_num(o, (uint64_t)sec / 60 % 60, 2);
    o = put_num(o, (uint64_t)sec % 60, 2);
    *o = 0;
}

static void write_snapshot(void)
{
    char name[128], tmp[140], final[150], msg[400];
    snapshot_name(name);
    size_t n = ft_strlcpy(final, name, sizeof final);
    /* never overwrite: name-2.raw, name-3.raw ... */
    for (int k = 1; k < 100; k++) {
        n = ft_strlcpy(final, name, sizeof final);
        if (k > 1) {
            final[n++] = '-';
            n = (size_t)(put_num(final + n, (uint64_t)k, 1) - final);
        }
        ft_strlcpy(final + n, ".raw", sizeof final - n);
        if (faccessat(psi_dir_fd, final, F_OK, 0) != 0)
            break;
    }
    n = ft_strlcpy(tmp, final, sizeof tmp);
    ft_strlcpy(tmp + n, ".tmp", sizeof tmp - n);
    int fd = openat(psi_dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        ft_warn("PSI fired but the snapshot file could not be created", strerror(errno));
        return;
    }
    int rc = ft_snapshot_to_fd_buf(fd, NULL, 0, psi_maps_buf, psi_maps_cap);
    if (close(fd) != 0 && rc == 0)
        rc = -1;
    if (rc != 0 || renameat(psi_dir_fd, tmp, psi_dir_fd, final) != 0) {
        unlinkat(psi_dir_fd, tmp, 0);
        ft_warn("PSI fired but the snapshot could not be written", final);
        return;
    }
    n = ft_strlcpy(msg, "PSI trigger fired on ", sizeof msg);
    n += ft_strlcpy(msg + n, psi_file, sizeof msg - n);
    n += ft_strlcpy(msg + n, ": snapshot written", sizeof msg - n);
    ft_warn(msg, final);
}

static void *psi_thread(void *arg)
{
    (void)arg;
    uint64_t written = 0;
    struct timespec last = {0, 0};
    ft_rt_thread_begin(); /* awake (park.S) */
    prctl(PR_SET_NAME, "funtrace-psi", 0, 0, 0);
    for (;;) {
        struct pollfd pfd = {.fd = psi_fd, .events = POLLPRI};
        /* poll; parked (touching nothing) during a fatal-signal episode (freeze.c) */
        long r = ft_park_syscall(SYS_poll, (long)&pfd, 1, -1, 0, 0, 0);
        if (r == -EINTR)
            continue;
        if (r < 0 || (pfd.revents & (POLLERR | POLLNVAL)))
            break; /* the group went away */
        if (!(pfd.revents & POLLPRI))
            continue;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (written && (uint64_t)(now.tv_sec - last.tv_sec) < psi_interval_s)
            continue;
        last = now;
        write_snapshot();
        if (++written >= psi_max) {
            ft_warn("FUNTRACE_PSI: FUNTRACE_PSI_MAX snapshots written; the PSI thread stops", NULL);
            break;
        }
    }
    ft_rt_thread_end();
    return NULL;
}

void ft_psi_start(void)
{
    const char *spec = getenv("FUNTRACE_PSI"), *dir = getenv("FUNTRACE_PSI_DIR"), *why;
    struct ft_psi_spec ps;
    char msg[800];
    if (!spec || psi_fd >= 0)
        return;
    if (!*spec)
        spec = FT_PSI_DEFAULT;
    if (ft_psi_spec_parse(spec, have_cap_sys_resource(), &ps, &why) != 0) {
        size_t n = ft_strlcpy(msg, "FUNTRACE_PSI ignored: ", sizeof msg);
        ft_strlcpy(msg + n, why, sizeof msg - n);
        ft_warn(msg, spec);
        return;
    }
    ft_env_u64("FUNTRACE_PSI_INTERVAL", &psi_interval_s);
    ft_env_u64("FUNTRACE_PSI_MAX", &psi_max);
    if (!dir || !*dir)
        dir = ".";
    psi_dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (psi_dir_fd < 0) {
        ft_warn("FUNTRACE_PSI ignored: cannot open FUNTRACE_PSI_DIR", dir);
        return;
    }
    find_pressure_file();
    int fd = open(psi_file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || write(fd, ps.text, strlen(ps.text) + 1) < 0) {
        size_t n = ft_strlcpy(msg, "FUNTRACE_PSI ignored: the kernel refused the trigger on ", sizeof msg);
        n += ft_strlcpy(msg + n, psi_file, sizeof msg - n);
        ft_warn(msg, strerror(errno));
        if (fd >= 0)
            close(fd);
        close(psi_dir_fd);
        psi_dir_fd = -1;
        return;
    }
    psi_fd = fd;
    if (slurp("/proc/self/comm", psi_comm, sizeof psi_comm) <= 0)
        ft_strlcpy(psi_comm, "prog", sizeof psi_comm);
    psi_comm[strcspn(psi_comm, "\n")] = 0;
    for (char *p = psi_comm; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    time_t now = time(NULL);
    struct tm tm;
    tzset();
    if (localtime_r(&now, &tm))
        psi_utc_off = tm.tm_gmtoff;

    psi_maps_buf = ft_snapshot_buf_new(&psi_maps_cap);

    pthread_attr_t at;
    pthread_t th;
    sigset_t all, old;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigfillset(&all); /* the PSI thread never takes the program's signals */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&th, &at, psi_thread, NULL) != 0) {
        ft_warn("FUNTRACE_PSI ignored: cannot start its thread", strerror(errno));
        close(psi_fd);
        psi_fd = -1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
}
