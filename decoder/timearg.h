/*
 * timearg.h -- the time values of the command line (timearg.c):
 * durations ("50ms", "1.5s", "200us", "10ns") and points in time for
 * --since/--until ("-50ms": before the end of the trace; "+2s": after the
 * start of the generations shown; "14:03:07.25" or "2024-05-01 14:03:07":
 * local wall-clock time).
 */
#ifndef FT_DECODER_TIMEARG_H
#define FT_DECODER_TIMEARG_H

#include <stdint.h>

/* a duration in ns; 0, or -1 (not a duration: no unit, bad number) */
int ta_duration(const char *s, int64_t *ns);

#define TA_FROM_END 1   /* ns relative to the end of the trace (<= 0) */
#define TA_FROM_START 2 /* ns relative to the start of what is shown */
#define TA_WALL 3       /* wall-clock ns since the epoch (date given) */
#define TA_WALL_TOD 4   /* ns since local midnight: on the day of the trace's end */
struct ta_point {
    int kind;           /* 0: not given */
    int64_t ns;
};
/* 0, or -1 with a reason in why */
int ta_point(const char *s, struct ta_point *p, const char **why);

#endif
