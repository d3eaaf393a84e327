/*
 * oom_psispec.h -- parse and validate a PSI trigger ("some 500000 2000000").
 *
 * Shared (header-only, no allocation, no stdio: usable from the runtime's
 * in-process PSI thread) by funtrace-oomwatch and runtime/psi.c.
 *
 * Kernel interface (Documentation/accounting/psi.rst): a trigger is armed by
 * writing "<some|full> <stall us> <window us>" WITH its trailing NUL to a
 * memory.pressure file (cgroup v2 group or /proc/pressure/memory) opened
 * O_RDWR; the fd then reports POLLPRI when the tasks of the group were
 * stalled on memory for >= stall us within a window us period.  The kernel
 * accepts windows of 500 ms .. 10 s, 0 < stall <= window, and, when the
 * writer lacks CAP_SYS_RESOURCE, only windows that are whole multiples of
 * 2 s (those triggers are serviced by the 2 s averaging worker).
 */
#ifndef FUNTRACE_OOM_PSISPEC_H
#define FUNTRACE_OOM_PSISPEC_H

#include <stdint.h>

#define FT_PSI_WINDOW_MIN_US 500000ull
#define FT_PSI_WINDOW_MAX_US 10000000ull
#define FT_PSI_UNPRIV_STEP_US 2000000ull
#define FT_PSI_DEFAULT "some 500000 2000000"
#define FT_PSI_SPEC_MAX 64

struct ft_psi_spec {
    int full;           /* 0: "some", 1: "full" */
    uint64_t stall_us;
    uint64_t window_us;
    char text[FT_PSI_SPEC_MAX]; /* canonical text, NUL terminated (write strlen+1 bytes) */
};

static inline const char *ft_psi__num(const char *p, uint64_t *v)
{
    uint64_t x = 0;
    int n = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p >= '0' && *p <= '9') {
        if (x > (UINT64_MAX - 9) / 10)
            return 0;
        x = x * 10 + (uint64_t)(*p - '0');
        p++;
        n++;
    }
    if (!n)
        return 0;
    *v = x;
    return p;
}

static inline char *ft_psi__put(char *o, char *end, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n && o < end)
        *o++ = tmp[--n];
    return o;
}

/* Parse s.  privileged: the writer has CAP_SYS_RESOURCE.  Returns 0 and
 * fills *out, or -1 with *why set to a one-line reason (static string). */
static inline int ft_psi_spec_parse(const char *s, int privileged, struct ft_psi_spec *out,
                                    const char **why)
{
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    if (p[0] == 's' && p[1] == 'o' && p[2] == 'm' && p[3] == 'e' && (p[4] == ' ' || p[4] == '\t')) {
        out->full = 0;
        p += 4;
    } else if (p[0] == 'f' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l' && (p[4] == ' ' || p[4] == '\t')) {
        out->full = 1;
        p += 4;
    } else {
        *why = "expected \"some|full STALL_US WINDOW_US\"";
        return -1;
    }
    p = ft_psi__num(p, &out->stall_us);
    if (p)
        p = ft_psi__num(p, &out->window_us);
    if (p)
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
    if (!p || *p) {
        *why = "expected \"some|full STALL_US WINDOW_US\" (two numbers in microseconds)";
        return -1;
    }
    if (out->window_us < FT_PSI_WINDOW_MIN_US || out->window_us > FT_PSI_WINDOW_MAX_US) {
        *why = "the window must be 500000..10000000 us (0.5 s .. 10 s)";
        return -1;
    }
    if (out->stall_us == 0 || out->stall_us > out->window_us) {
        *why = "the stall threshold must be > 0 and <= the window";
        return -1;
    }
    if (!privileged && out->window_us % FT_PSI_UNPRIV_STEP_US) {
        *why = "without CAP_SYS_RESOURCE the kernel accepts only windows that are whole multiples "
               "of 2 s (2000000, 4000000, 6000000, 8000000 or 10000000 us)";
        return -1;
    }
    char *o = out->text, *end = out->text + sizeof out->text - 1;
    const char *kw = out->full ? "full " : "some ";
    while (*kw)
        *o++ = *kw++;
    o = ft_psi__put(o, end, out->stall_us);
    if (o < end)
        *o++ = ' ';
    o = ft_psi__put(o, end, out->window_us);
    *o = 0;
    return 0;
}

#endif
