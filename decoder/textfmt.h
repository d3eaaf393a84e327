/*
 * textfmt.h -- human-readable durations, wall-clock times and signal names
 * (textfmt.c).
 */
#ifndef FT_DECODER_TEXTFMT_H
#define FT_DECODER_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>

/* "12.345 ms", "-50 ns" */
void fmt_dur(char *buf, size_t n, int64_t ns);
/* local time with ns ("2024-01-02 03:04:05.123456789 +0100" with the date) */
void fmt_wall(char *buf, size_t n, int64_t wall_ns, int with_date);
/* the local midnight before a wall-clock time (ns since the epoch) */
int64_t local_midnight(int64_t wall_ns);
/* "SIGSEGV" (static buffer) */
const char *sig_name(int sig);

#endif
