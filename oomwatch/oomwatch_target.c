/*
 * oomwatch_target.c -- what funtrace-oomwatch watches: a pid, or a cgroup v2
 * directory and/or a cgroup v1 memory directory (every process in them and
 * their descendants).  Derives the cgroups of a pid, the PSI file, and which
 * v2 group may be frozen.
 */
#define _GNU_SOURCE
#include "oomwatch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int proc_alive(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* the one v2 group all members are in, "" if they differ or none */
static void common_v2(const struct ow_state *s, const struct oc_pids *members, char *out)
{
    out[0] = 0;
    for (size_t i = 0; i < members->n; i++) {
        char v1[OC_PATH], v2[OC_PATH];
        if (oc_of_pid(members->v[i], &s->t.mounts, v1, v2) != 0)
            continue; /* exited meanwhile */
        if (!v2[0]) {
            out[0] = 0;
            return;
        }
        if (!out[0])
            snprintf(out, OC_PATH, "%s", v2);
        else if (strcmp(out, v2)) {
            out[0] = 0;
            return;
        }
    }
}

int ow_target_resolve(struct ow_state *s, char *err, size_t errlen)
{
    struct ow_target *t = &s->t;
    oc_mounts(&t->mounts);
    if (s->o.pid) {
        if (!proc_alive(s->o.pid)) {
            snprintf(err, errlen, "no such process: %d", s->o.pid);
            return -1;
        }
        t->pid = s->o.pid;
        if (oc_of_pid(t->pid, &t->mounts, t->v1, t->v2) != 0) {
            snprintf(err, errlen, "cannot read /proc/%d/cgroup: %s", t->pid, strerror(errno));
            return -1;
        }
    }
    for (int i = 0; i < s->o.ncg; i++) {
        const char *dir = s->o.cg[i];
        char real[PATH_MAX];
        enum oc_kind k = oc_kind(dir);
        if (k == OC_NONE || !realpath(dir, real)) {
            snprintf(err, errlen, "not a cgroup directory: %s", dir);
            return -1;
        }
        if (strlen(real) >= OC_PATH) {
            snprintf(err, errlen, "cgroup path too long: %s", dir);
            return -1;
        }
        if (k == OC_V1_OTHER) {
            snprintf(err, errlen, "%s is a cgroup v1 directory without the memory controller "
                                  "(give the memory hierarchy's directory, e.g. /sys/fs/cgroup/memory/...)", dir);
            return -1;
        }
        char *slot = k == OC_V2 ? t->v2 : t->v1;
        int *given = k == OC_V2 ? &t->v2_given : &t->v1_given;
        if (*given) {
            snprintf(err, errlen, "two cgroup %s directories given: %s and %s", k == OC_V2 ? "v2" : "v1 memory",
                     slot, real);
            return -1;
        }
        snprintf(slot, OC_PATH, "%s", real);
        *given = 1;
    }
    /* the PSI file: the v2 group's, else the system-wide one */
    char v2[OC_PATH];
    snprintf(v2, sizeof v2, "%s", t->v2);
    if (!v2[0] && t->v1_given) {
        struct oc_pids m = {0};
        ow_target_members(s, &m);
        common_v2(s, &m, v2);
        oc_pids_free(&m);
    }
    if (v2[0] && !oc_is_root(&t->mounts, v2) && oc_has(v2, "memory.pressure")) {
        snprintf(t->psi_file, sizeof t->psi_file, "%s/memory.pressure", v2);
    } else {
        snprintf(t->psi_file, sizeof t->psi_file, "/proc/pressure/memory");
        t->psi_system_wide = 1;
    }
    if (t->pid) ow_comm(t->pid, t->comm, sizeof t->comm);
    return 0;
}

int ow_target_members(const struct ow_state *s, struct oc_pids *out)
{
    if (s->t.pid) {
        if (proc_alive(s->t.pid))
            oc_pids_add(out, s->t.pid);
        return 0;
    }
    int r = 0;
    if (s->t.v1_given && oc_procs(s->t.v1, 1, out) != 0)
        r = -1;
    if (s->t.v2_given && oc_procs(s->t.v2, 1, out) != 0)
        r = -1;
    oc_pids_sort(out);
    /* drop zombies, and the watcher itself if it was started inside */
    size_t o = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i] != getpid() && proc_alive(out->v[i]))
            out->v[o++] = out->v[i];
    out->n = o;
    return r;
}

void ow_target_freeze_dir(const struct ow_state *s, const struct oc_pids *members, char *dir)
{
    char cand[OC_PATH];
    dir[0] = 0;
    if (s->t.v2_given)
        snprintf(cand, sizeof cand, "%s", s->t.v2);
    else
        common_v2(s, members, cand);
    if (!cand[0] || oc_is_root(&s->t.mounts, cand) || !oc_has(cand, "cgroup.freeze"))
        return;
    /* never freeze the watcher itself */
    char my1[OC_PATH], my2[OC_PATH];
    size_t cl = strlen(cand);
    if (oc_of_pid(getpid(), &s->t.mounts, my1, my2) == 0 && !strncmp(my2, cand, cl) &&
        (my2[cl] == 0 || my2[cl] == '/'))
        return;
    if (!s->t.v2_given) {
        /* derived from the members: freeze only if nothing else lives there */
        struct oc_pids in = {0};
        oc_procs(cand, 1, &in);
        for (size_t i = 0; i < in.n; i++)
            if (!oc_pids_has(members, in.v[i])) {
                oc_pids_free(&in);
                return;
            }
        oc_pids_free(&in);
    }
    snprintf(dir, OC_PATH, "%s", cand);
}

int ow_target_gone(struct ow_state *s, char *why, size_t cap)
{
    if (s->t.pid) {
        if (proc_alive(s->t.pid))
            return 0;
        snprintf(why, cap, "pid %d (%s) ended", s->t.pid, s->t.comm);
        return 1;
    }
    for (int v = 0; v < 2; v++) {
        const char *dir = v ? s->t.v2 : s->t.v1;
        if ((v ? s->t.v2_given : s->t.v1_given) && access(dir, F_OK) != 0) {
            snprintf(why, cap, "cgroup %s was removed", dir);
            return 1;
        }
    }
    /* a group that had processes and has none left (a group may be empty
     * when the watcher starts: it waits for its first process) */

    struct oc_pids m = {0};
    ow_target_members(s, &m);
    size_t n = m.n;
    oc_pids_free(&m);
    if (n) {
        s->members_seen = 1;
        return 0;
    }
    /* a process can come and be OOM-killed between two looks: a kill counted
     * in the group says it was there (one counted system-wide does not) */
    if (!s->members_seen && !(s->oom_kills_kind != 3 && ow_oom_kills_since(s)))
        return 0;
    snprintf(why, cap, "its last process ended: cgroup %s is empty", s->t.v1_given ? s->t.v1 : s->t.v2);
    return 1;
}

/* OOM kills in the target's scope: v1 memory.oom_control (kind 1), v2
 * memory.events (2) -- both count the group's and its descendants' -- else
 * the system's /proc/vmstat (3).  kind 0: the first one readable. */
static int oom_kills(const struct ow_state *s, int kind, uint64_t *n, char *src, size_t cap)
{
    char text[16384];
    if ((!kind || kind == 1) && s->t.v1[0] && !oc_is_root(&s->t.mounts, s->t.v1) &&
        oc_read(s->t.v1, "memory.oom_control", text, sizeof text) > 0 && oc_keyed(text, "oom_kill", n) == 0) {
        if (src) snprintf(src, cap, "%s/memory.oom_control", s->t.v1);
        return 1;
    }
    if ((!kind || kind == 2) && s->t.v2[0] && !oc_is_root(&s->t.mounts, s->t.v2) &&
        oc_read(s->t.v2, "memory.events", text, sizeof text) > 0 && oc_keyed(text, "oom_kill", n) == 0) {
        if (src) snprintf(src, cap, "%s/memory.events", s->t.v2);
        return 2;
    }
    if ((!kind || kind == 3) && oc_read("/proc", "vmstat", text, sizeof text) > 0 && oc_keyed(text, "oom_kill", n) == 0) {
        if (src) snprintf(src, cap, "/proc/vmstat, system-wide");
        return 3;
    }
    return 0;
}

void ow_oom_kills_start(struct ow_state *s)
{
    s->oom_kills_kind = oom_kills(s, 0, &s->oom_kills0, s->oom_kills_src, sizeof s->oom_kills_src);
}

uint64_t ow_oom_kills_since(struct ow_state *s)
{
    uint64_t n;
    /* a group removed with its processes: the last count read stands */
    if (s->oom_kills_kind && oom_kills(s, s->oom_kills_kind, &n, NULL, 0) && n >= s->oom_kills0)
        s->oom_kills_last = n - s->oom_kills0;
    return s->oom_kills_last;
}
