/*
 * textfmt.c -- human-readable durations, wall-clock times and signal names.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "textfmt.h"

void fmt_dur(char *buf, size_t n, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (a < 1000)
        snprintf(buf, n, "%s%llu ns", sign, (unsigned long long)a);
    else if (a < 1000000)
        snprintf(buf, n, "%s%llu.%03llu us", sign, (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
    else if (a < 1000000000)
        snprintf(buf, n, "%s%llu.%03llu ms", sign, (unsigned long long)(a / 1000000),
                 (unsigned long long)(a / 1000 % 1000));
    else
        snprintf(buf, n, "%s%llu.%03llu s", sign, (unsigned long long)(a / 1000000000),
                 (unsigned long long)(a / 1000000 % 1000));
}

void fmt_wall(char *buf, size_t n, int64_t wall_ns, int with_date)
{
    time_t sec = (time_t)(wall_ns / 1000000000);
    long frac = (long)(wall_ns % 1000000000);
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    struct tm tm;
    char a[64], z[16];
    localtime_r(&sec, &tm);
    strftime(a, sizeof a, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
    strftime(z, sizeof z, "%z", &tm);
    if (with_date)
        snprintf(buf, n, "%s.%09ld %s", a, frac, z);
    else
        snprintf(buf, n, "%s.%09ld", a, frac);
}

int64_t local_midnight(int64_t wall_ns)
{
    time_t sec = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    localtime_r(&sec, &tm);
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    tm.tm_isdst = -1;
    return (int64_t)mktime(&tm) * 1000000000;
}

const char *sig_name(int sig)
{
    static char buf[32];
    const char *ab = sig > 0 && sig < 65 ? sigabbrev_np(sig) : NULL;
    if (ab)
        snprintf(buf, sizeof buf, "SIG%s", ab);
    else
        snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}
