/*
 * oom_trigger.c -- the three triggers of funtrace-oomwatch and their kernel
 * interfaces:
 *
 *  psi     a PSI trigger: "<some|full> STALL_US WINDOW_US" written WITH its
 *          trailing NUL to the target's cgroup v2 memory.pressure (or
 *          /proc/pressure/memory), fd opened O_RDWR; POLLPRI when it fires.
 *  oom     cgroup v1: an eventfd registered for memory.oom_control by
 *          writing "<eventfd> <fd of memory.oom_control>" to
 *          cgroup.event_control; readable when a task of the cgroup (or of a
 *          descendant) hits the limit and no memory can be reclaimed.  With
 *          oom_kill_disable 1 the task is parked instead of killed (PSI does
 *          not see it: a parked task is not stalled in reclaim).
 *  events  cgroup v2: the counters "high", "max", "oom" of memory.events
 *          (kernfs notifies POLLPRI on a change; re-read also every
 *          --poll-ms).  Needs the memory controller on the v2 hierarchy.
 *  usage   the group's usage (less its page cache) reaches a threshold of
 *          its limit: oom_usage.c.
 * By default every trigger scoped to the target is armed -- usage only if a
 * task at the limit would be killed (with oom_kill_disable 1 the oom trigger
 * catches it parked there) -- and PSI on the system-wide
 * /proc/pressure/memory (a target without a v2 group of its own) only when
 * nothing scoped is available, or when asked for.
 */
#define _GNU_SOURCE
#include "oomwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *ev_keys[4] = {"high", "max", "oom", "oom_kill"};

static int read_events(int fd, uint64_t ev[4])
{
    char buf[1024];
    if (lseek(fd, 0, SEEK_SET) < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    for (int i = 0; i < 4; i++)
        if (oc_keyed(buf, ev_keys[i], &ev[i]) != 0)
            ev[i] = 0;
    return 0;
}

static int have_psi(const struct ow_state *s)
{
    return access(s->t.psi_file, F_OK) == 0;
}

static int have_oom(const struct ow_state *s)
{
    return s->t.v1[0] && !oc_is_root(&s->t.mounts, s->t.v1) && oc_has(s->t.v1, "memory.oom_control") &&
           oc_has(s->t.v1, "cgroup.event_control");
}

/* v1 oom_kill_disable 1: a task at the limit is parked, not killed */
int ow_parks(const struct ow_state *s)
{
    char oc[256];
    uint64_t dis = 0;
    return have_oom(s) && oc_read(s->t.v1, "memory.oom_control", oc, sizeof oc) > 0 &&
           oc_keyed(oc, "oom_kill_disable", &dis) == 0 && dis;
}

static int have_events(const struct ow_state *s)
{
    return s->t.v2[0] && !oc_is_root(&s->t.mounts, s->t.v2) && oc_has(s->t.v2, "memory.events");
}

static int arm_psi(struct ow_state *s, char *err, size_t errlen)
{
    int fd = open(s->t.psi_file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s for a PSI trigger: %s", s->t.psi_file, strerror(errno));
        return -1;
    }
    size_t len = strlen(s->o.psi.text) + 1; /* the kernel wants the trailing NUL */
    if (write(fd, s->o.psi.text, len) != (ssize_t)len) {
        snprintf(err, errlen, "the kernel refused the PSI trigger \"%s\" on %s: %s", s->o.psi.text,
                 s->t.psi_file, strerror(errno));
        close(fd);
        return -1;
    }
    s->psi_fd = fd;
    return 0;
}

static int arm_oom(struct ow_state *s, char *err, size_t errlen)
{
    return oc_event_register(s->t.v1, "memory.oom_control", NULL, "an OOM", &s->oom_efd, &s->oom_ctl_fd, err,
                             errlen);
}

static int arm_events(struct ow_state *s, char *err, size_t errlen)
{
    char path[OC_PATH + 32];
    snprintf(path, sizeof path, "%s/memory.events", s->t.v2);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read_events(fd, s->ev) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    s->events_fd = fd;
    return 0;
}

int ow_triggers_arm(struct ow_state *s, char *err, size_t errlen)
{
    char uwhy[OC_PATH + 160];
    int ukind = ow_usage_available(s, uwhy, sizeof uwhy);
    unsigned avail = (have_psi(s) ? OW_T_PSI : 0) | (have_oom(s) ? OW_T_OOM : 0) |
                     (have_events(s) ? OW_T_EVENTS : 0) | (ukind ? OW_T_USAGE : 0);
    /* by default, the triggers scoped to the target; system-wide PSI only if none is */
    unsigned scoped = avail & ~(s->t.psi_system_wide ? OW_T_PSI : 0u);
    if (ow_parks(s)) scoped &= ~(unsigned)OW_T_USAGE; /* the oom trigger catches it at the limit, parked */
    unsigned want = s->o.triggers ? s->o.triggers : scoped ? scoped : avail & OW_T_PSI;
    if (s->o.usage_given && !s->o.triggers) want |= OW_T_USAGE;
    if ((want & OW_T_PSI) && !(avail & OW_T_PSI)) {
        snprintf(err, errlen, "trigger psi: %s does not exist (kernel without PSI, or booted with psi=0)",
                 s->t.psi_file);
        return -1;
    }
    if ((want & OW_T_OOM) && !(avail & OW_T_OOM)) {
        snprintf(err, errlen, "trigger oom needs a (non-root) cgroup v1 memory cgroup; %s",
                 s->t.v1[0] ? "the target's is the root" : "the target has none");
        return -1;
    }
    if ((want & OW_T_EVENTS) && !(avail & OW_T_EVENTS)) {
        snprintf(err, errlen, "trigger events needs memory.events in a (non-root) cgroup v2 group%s%s%s",
                 s->t.v2[0] ? ": " : "", s->t.v2[0] ? s->t.v2 : "",
                 s->t.v2[0] ? " has none (is the memory controller bound to cgroup v1?)" : "; the target has none");
        return -1;
    }
    if ((want & OW_T_USAGE) && !ukind) {
        snprintf(err, errlen, "%s", uwhy);
        return -1;
    }
    if (!want) {
        snprintf(err, errlen, "no trigger is available for this target");
        return -1;
    }
    if ((want & OW_T_PSI) && arm_psi(s, err, errlen) != 0)
        return -1;
    if ((want & OW_T_OOM) && arm_oom(s, err, errlen) != 0)
        return -1;
    if ((want & OW_T_EVENTS) && arm_events(s, err, errlen) != 0)
        return -1;
    if ((want & OW_T_USAGE) && ow_usage_arm(s, ukind, err, errlen) != 0)
        return -1;
    s->armed = want;
    return 0;
}

int ow_triggers_poll_ms(const struct ow_state *s)
{
    return ow_usage_poll_ms(s);
}

int ow_triggers_fds(const struct ow_state *s, struct pollfd *pfd, unsigned *kind)
{
    int n = 0;
    if (s->psi_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->psi_fd, .events = POLLPRI};
        kind[n++] = OW_T_PSI;
    }
    if (s->oom_efd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->oom_efd, .events = POLLIN};
        kind[n++] = OW_T_OOM;
    }
    if (s->events_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->events_fd, .events = POLLPRI};
        kind[n++] = OW_T_EVENTS;
    }
    if (s->usage_efd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->usage_efd, .events = POLLIN};
        kind[n++] = OW_T_USAGE;
    }
    return n;
}

static size_t cat(char *what, size_t cap, size_t o, const char *fmt_prefix, const char *text)
{
    int w = snprintf(what + o, cap - o, "%s%s%s", o ? ", " : "", fmt_prefix, text);
    return w < 0 || (size_t)w >= cap - o ? cap - 1 : o + (size_t)w;
}

unsigned ow_triggers_check(struct ow_state *s, const struct pollfd *pfd, const unsigned *kind, int n,
                           char *what, size_t cap)
{
    unsigned fired = 0;
    size_t o = 0;
    char text[OC_PATH * 2 + 256];
    what[0] = 0;
    for (int i = 0; i < n; i++) {
        if (kind[i] == OW_T_PSI && (pfd[i].revents & (POLLERR | POLLNVAL)) && s->psi_fd >= 0) {
            /* the trigger is gone (its group was removed): stop polling it */
            ow_log("the PSI trigger on %s is gone: no longer watching pressure", s->t.psi_file);
            close(s->psi_fd);
            s->psi_fd = -1;
            continue;
        }
        if (kind[i] == OW_T_PSI && (pfd[i].revents & POLLPRI)) {
            fired |= OW_T_PSI;
            snprintf(text, sizeof text, "psi \"%s\" on %s", s->o.psi.text, s->t.psi_file);
            o = cat(what, cap, o, "", text);
        }
        if (kind[i] == OW_T_OOM && (pfd[i].revents & POLLIN)) {
            uint64_t cnt;
            if (read(s->oom_efd, &cnt, sizeof cnt) < 0) {
            }
            char oc[256];
            uint64_t under = 0, kills = 0, usage = 0, limit = 0;
            if (oc_read(s->t.v1, "memory.oom_control", oc, sizeof oc) < 0)
                continue; /* the cgroup was removed: the eventfd fires then too */
            oc_keyed(oc, "under_oom", &under);
            oc_keyed(oc, "oom_kill", &kills);
            oc_read_u64(s->t.v1, "memory.usage_in_bytes", &usage);
            oc_read_u64(s->t.v1, "memory.limit_in_bytes", &limit);
            char hu[32], hl[32];
            ow_human(hu, sizeof hu, usage);
            ow_human(hl, sizeof hl, limit);
            fired |= OW_T_OOM;
            snprintf(text, sizeof text, "oom (cgroup v1 %s: under_oom %llu, oom_kill %llu, usage %s of %s)",
                     s->t.v1, (unsigned long long)under, (unsigned long long)kills, hu, hl);
            o = cat(what, cap, o, "", text);
        }
    }
    int usage_ready = 0;
    for (int i = 0; i < n; i++)
        if (kind[i] == OW_T_USAGE && (pfd[i].revents & POLLIN)) usage_ready = 1;
    if (ow_usage_check(s, usage_ready, text, sizeof text)) {
        fired |= OW_T_USAGE;
        o = cat(what, cap, o, "", text);
    }
    /* memory.events: re-read on every wake-up (a notification or the
     * --poll-ms timeout); reading also re-arms the kernfs notification */
    if (s->events_fd >= 0) {
        uint64_t ev[4];
        if (read_events(s->events_fd, ev) == 0) {
            int changed = 0;
            size_t t = 0;
            for (int k = 0; k < 4; k++) {
                if (ev[k] > s->ev[k] && k < 3)
                    changed = 1;
                int w = snprintf(text + t, sizeof text - t, "%s%s +%llu", t ? " " : "", ev_keys[k],
                                 (unsigned long long)(ev[k] - s->ev[k]));
                if (w > 0 && (size_t)w < sizeof text - t)
                    t += (size_t)w;
            }
            memcpy(s->ev, ev, sizeof ev);
            if (changed) {
                fired |= OW_T_EVENTS;
                char pre[OC_PATH + 48];
                snprintf(pre, sizeof pre, "events (%s/memory.events: ", s->t.v2);
                size_t tl = strlen(text);
                if (tl + 2 < sizeof text) {
                    text[tl] = ')';
                    text[tl + 1] = 0;
                }
                o = cat(what, cap, o, pre, text);
            }
        }
    }
    return fired;
}

void ow_triggers_close(struct ow_state *s)
{
    ow_usage_close(s);
    int *fds[] = {&s->psi_fd, &s->oom_efd, &s->oom_ctl_fd, &s->events_fd};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}
