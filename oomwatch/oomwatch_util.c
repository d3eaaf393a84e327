/* oomwatch_util.c -- logging, time, sizes and /proc helpers for funtrace-oomwatch. */
#define _GNU_SOURCE
#include "oomwatch.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void vlog(const char *fmt, va_list ap)
{
    char stamp[32], line[16384];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    int n = snprintf(line, sizeof line, "funtrace-oomwatch: %s.%03ld ", stamp, ts.tv_nsec / 1000000);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    /* one write per line: lines of several watchers do not interleave */
    if (write(2, line, len) < 0) {
    }
}

void ow_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void ow_vlog(const struct ow_state *s, const char *fmt, ...)
{
    if (!s->o.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

double ow_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ow_stamp(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, cap, "%Y%m%d-%H%M%S", &tm);
}

void ow_human(char *buf, size_t cap, uint64_t b)
{
    if (b >= (1ull << 30))
        snprintf(buf, cap, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1ull << 20));
    else if (b >= (1ull << 10))
        snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

void ow_comm(int pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    buf[0] = 0;
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(buf, (int)cap, f))
            buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    for (char *p = buf; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.' && *p != '+')
            *p = '_';
    if (!buf[0])
        snprintf(buf, cap, "pid");
}

/* a stat file (/proc/PID/stat, /proc/PID/task/TID/stat) read into buf:
 * its field 3 (state) on, after the command's ")"; NULL if unreadable */
static char *stat_fields(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

unsigned long long ow_starttime(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    char *p = stat_fields(path, buf, sizeof buf);
    if (!p)
        return 0;
    /* field 3 (state) is at p; starttime is field 22 */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" -> "some avg10=0.00 avg60=0.00 total=0us" */
void ow_pressure(const char *psi_file, char *buf, size_t cap)
{
    char text[512];
    buf[0] = 0;
    int fd = open(psi_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(buf, cap, "unreadable");
        return;
    }
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) {
        snprintf(buf, cap, "unreadable");
        return;
    }
    text[n] = 0;
    size_t o = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char kind[8];
        double a10, a60, a300;
        unsigned long long total;
        if (sscanf(line, "%7s avg10=%lf avg60=%lf avg300=%lf total=%llu", kind, &a10, &a60, &a300, &total) != 5)
            continue;
        int w = snprintf(buf + o, cap - o, "%s%s avg10=%.2f avg60=%.2f total=%lluus", o ? " " : "", kind, a10,
                         a60, total);
        if (w < 0 || (size_t)w >= cap - o)
            break;
        o += (size_t)w;
    }
}

int ow_running(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int running = 0;
    struct dirent *e;
    while (!running && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char stat[128], buf[512];
        snprintf(stat, sizeof stat, "/proc/%d/task/%.20s/stat", pid, e->d_name);
        const char *p = stat_fields(stat, buf, sizeof buf);
        running = p && *p == 'R';
    }
    closedir(d);
    return running;
}
