/*
 * timearg.c -- see timearg.h.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timearg.h"

/* "12.5" (digits, optional fraction) times mult, exactly: -1 on a bad number */
static int scaled(const char *s, size_t n, int64_t mult, int64_t *out)
{
    int64_t whole = 0, frac = 0, fdiv = 1;
    size_t i = 0;
    int digits = 0;
    for (; i < n && isdigit((unsigned char)s[i]); i++, digits++) {
        if (whole > INT64_MAX / 10 / mult)
            return -1;
        whole = whole * 10 + (s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && isdigit((unsigned char)s[i]); i++, digits++)
            if (fdiv < 1000000000) {
                frac = frac * 10 + (s[i] - '0');
                fdiv *= 10;
            }
    }
    if (i != n || !digits)
        return -1;
    *out = whole * mult + frac * mult / fdiv;
    return 0;
}

int ta_duration(const char *s, int64_t *ns)
{
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    size_t len = strlen(s);
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t ul = strlen(units[u].unit);
        if (len > ul && !strcmp(s + len - ul, units[u].unit) && !isalpha((unsigned char)s[len - ul - 1]))
            return scaled(s, len - ul, units[u].mult, ns);
    }
    return -1;
}

/* "HH:MM[:SS[.frac]]" -> ns since midnight */
static int time_of_day(const char *s, int64_t *ns)
{
    int h, m;
    char *e;
    h = (int)strtol(s, &e, 10);
    if (e == s || *e != ':' || h < 0 || h > 23)
        return -1;
    s = e + 1;
    m = (int)strtol(s, &e, 10);
    if (e == s || m < 0 || m > 59)
        return -1;
    int64_t sec = 0;
    if (*e == ':') {
        if (scaled(e + 1, strlen(e + 1), 1000000000, &sec) || sec >= 61 * 1000000000ll)
            return -1;
    } else if (*e) {
        return -1;
    }
    *ns = ((int64_t)h * 3600 + m * 60) * 1000000000 + sec;
    return 0;
}

int ta_point(const char *s, struct ta_point *p, const char **why)
{
    *why = "give -DURATION (before the end of the trace, e.g. -50ms), +DURATION (after the start), "
           "HH:MM:SS[.frac] or 'YYYY-MM-DD HH:MM:SS[.frac]' (local wall-clock time)";
    if (s[0] == '-' || s[0] == '+') {
        int64_t v;
        if (ta_duration(s + 1, &v))
            return -1;
        p->kind = s[0] == '-' ? TA_FROM_END : TA_FROM_START;
        p->ns = s[0] == '-' ? -v : v;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(s, "%Y-%m-%d", &tm);
    if (rest && (*rest == ' ' || *rest == 'T')) {
        int64_t tod;
        if (time_of_day(rest + 1, &tod))
            return -1;
        tm.tm_isdst = -1;
        time_t midnight = mktime(&tm);
        if (midnight == (time_t)-1)
            return -1;
        p->kind = TA_WALL;
        p->ns = (int64_t)midnight * 1000000000 + tod;
        return 0;
    }
    if (time_of_day(s, &p->ns) == 0) {
        p->kind = TA_WALL_TOD;
        return 0;
    }
    return -1;
}
