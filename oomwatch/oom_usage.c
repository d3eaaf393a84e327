/*
 * oom_usage.c -- the usage trigger of funtrace-oomwatch: fire when the
 * memory the target's group cannot give back reaches a threshold of its
 * limit (--usage, default 90%), before the OOM killer acts.
 *
 * It works where PSI cannot: a task whose anonymous memory grows, with no
 * swap, never stalls in reclaim (nothing can be reclaimed) until the kernel
 * kills it, so a PSI trigger never fires.  Kernel interfaces:
 *   cgroup v1  a memory threshold: an eventfd registered by writing
 *              "<eventfd> <fd of memory.usage_in_bytes> <bytes>" to
 *              cgroup.event_control; readable each time usage crosses it
 *              (either way; the kernel checks every few hundred KiB charged),
 *              and usage re-read every V1_RECHECK_MS besides (a notification
 *              that never came has been seen);
 *   cgroup v2  memory.current against memory.max, read every --poll-ms (v2
 *              has no usage notification; memory.events "high" is the events
 *              trigger).
 * usage_in_bytes and memory.current count the page cache too, which the
 * kernel reclaims before it kills: the trigger fires only when usage minus
 * the file pages (memory.stat active_file + inactive_file) is over the
 * threshold.  While usage is over it but the rest is page cache, memory.stat
 * is re-read every 100 ms (v1) until one of them goes below.
 */
#define _GNU_SOURCE
#include "oomwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NO_LIMIT (1ull << 60) /* v1 writes ~2^63 for "no limit" */
#define WATCH_MS 100          /* usage over the threshold, mostly page cache: re-check period */
/* v1: usage is also re-read this often without a notification.  The
 * kernel checks thresholds only every so many pages charged on a CPU, and a
 * hog held 20 MiB over the threshold has been seen to get no notification
 * at all (a full test-suite run, once in several): without this the trace
 * would never be saved before the kill */
#define V1_RECHECK_MS 250

static int v1_usable(const struct ow_state *s)
{
    return s->t.v1[0] && !oc_is_root(&s->t.mounts, s->t.v1) && oc_has(s->t.v1, "memory.usage_in_bytes") &&
           oc_has(s->t.v1, "cgroup.event_control");
}

static int v2_usable(const struct ow_state *s)
{
    return s->t.v2[0] && !oc_is_root(&s->t.mounts, s->t.v2) && oc_has(s->t.v2, "memory.current") &&
           oc_has(s->t.v2, "memory.max");
}

static const char *dir_of(const struct ow_state *s)
{
    return s->usage_v2 ? s->t.v2 : s->t.v1;
}

/* the group's limit (UINT64_MAX: none) */
static uint64_t limit_of(const struct ow_state *s, int v2)
{
    uint64_t l = UINT64_MAX;
    if (v2) {
        if (oc_read_u64(s->t.v2, "memory.max", &l) != 0) l = UINT64_MAX;
    } else if (oc_read_u64(s->t.v1, "memory.limit_in_bytes", &l) != 0 || l >= NO_LIMIT) {
        l = UINT64_MAX;
    }
    return l;
}

int ow_usage_available(const struct ow_state *s, char *why, size_t cap)
{
    int v1 = v1_usable(s), v2 = !v1 && v2_usable(s);
    if (!v1 && !v2) {
        snprintf(why, cap, "trigger usage needs a (non-root) cgroup v1 memory cgroup or a cgroup v2 group with "
                 "memory.current; the target has none");
        return 0;
    }
    if (!s->o.usage_bytes && limit_of(s, v2) == UINT64_MAX) {
        snprintf(why, cap, "trigger usage: %s has no memory limit to take %u%% of (give --usage BYTES)",
                 v2 ? s->t.v2 : s->t.v1, s->o.usage_pct);
        return 0;
    }
    return v2 ? 2 : 1;
}

/* usage, and the part of it that is not page cache */
static int read_usage(const struct ow_state *s, uint64_t *usage, uint64_t *hard)
{
    const char *dir = dir_of(s);
    if (oc_read_u64(dir, s->usage_v2 ? "memory.current" : "memory.usage_in_bytes", usage) != 0) return -1;
    char stat[8192];
    uint64_t af = 0, inf = 0;
    if (oc_read(dir, "memory.stat", stat, sizeof stat) > 0) {
        oc_keyed(stat, s->usage_v2 ? "active_file" : "total_active_file", &af);
        oc_keyed(stat, s->usage_v2 ? "inactive_file" : "total_inactive_file", &inf);
    }
    *hard = *usage > af + inf ? *usage - af - inf : 0;
    return 0;
}

int ow_usage_arm(struct ow_state *s, int kind, char *err, size_t errlen)
{
    s->usage_v2 = kind == 2;
    s->usage_limit = limit_of(s, s->usage_v2);
    s->usage_threshold = s->o.usage_bytes ? s->o.usage_bytes : s->usage_limit / 100 * s->o.usage_pct;
    if (s->usage_v2) return 0; /* polled */
    char th[32];
    snprintf(th, sizeof th, "%llu", (unsigned long long)s->usage_threshold);
    if (oc_event_register(s->t.v1, "memory.usage_in_bytes", th, "a usage threshold", &s->usage_efd,
                          &s->usage_ctl_fd, err, errlen) != 0)
        return -1;
    s->usage_watch = 1; /* check once at start: it may be over the threshold already */
    return 0;
}

void ow_usage_describe(const struct ow_state *s, char *buf, size_t cap)
{
    char th[32], li[32];
    ow_human(th, sizeof th, s->usage_threshold);
    ow_human(li, sizeof li, s->usage_limit);
    if (s->o.usage_bytes)
        snprintf(buf, cap, "usage >= %s (%s; page cache not counted)", th,
                 s->usage_v2 ? "cgroup v2 memory.current, polled" : "cgroup v1 threshold eventfd");
    else
        snprintf(buf, cap, "usage >= %s, %u%% of the %s limit (%s; page cache not counted)", th, s->o.usage_pct, li,
                 s->usage_v2 ? "cgroup v2 memory.current against memory.max, polled"
                             : "cgroup v1 threshold eventfd on memory.usage_in_bytes");
}

int ow_usage_poll_ms(const struct ow_state *s)
{
    if (!(s->armed & OW_T_USAGE)) return -1;
    if (s->usage_v2) return s->o.poll_ms;
    return s->usage_watch ? WATCH_MS : V1_RECHECK_MS;
}

unsigned ow_usage_check(struct ow_state *s, int efd_ready, char *text, size_t cap)
{
    text[0] = 0;
    if (!(s->armed & OW_T_USAGE)) return 0;
    if (efd_ready) {
        uint64_t cnt;
        if (read(s->usage_efd, &cnt, sizeof cnt) < 0) {
        }
        s->usage_watch = 1;
    }
    uint64_t usage, hard; /* (read at every wake-up: V1_RECHECK_MS) */
    if (read_usage(s, &usage, &hard) != 0) return 0; /* the group was removed */
    int over = hard >= s->usage_threshold;
    if (!s->usage_v2) s->usage_watch = usage >= s->usage_threshold && !over; /* page cache: keep looking */
    int fire = over && !s->usage_over;
    s->usage_over = over; /* fires again only after going below */
    if (!fire) return 0;
    char hu[32], hh[32], ht[32], hl[32];
    ow_human(hu, sizeof hu, usage);
    ow_human(hh, sizeof hh, hard);
    ow_human(ht, sizeof ht, s->usage_threshold);
    ow_human(hl, sizeof hl, s->usage_limit);
    snprintf(text, cap, "usage (cgroup %s %s: %s used, %s of it not page cache, >= %s%s%s)",
             s->usage_v2 ? "v2" : "v1", dir_of(s), hu, hh, ht, s->usage_limit != UINT64_MAX ? "; limit " : "",
             s->usage_limit != UINT64_MAX ? hl : "");
    return OW_T_USAGE;
}

void ow_usage_close(struct ow_state *s)
{
    if (s->usage_efd >= 0) close(s->usage_efd);
    if (s->usage_ctl_fd >= 0) close(s->usage_ctl_fd);
    s->usage_efd = s->usage_ctl_fd = -1;
}
