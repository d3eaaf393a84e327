/*
 * oom_ptrace.c -- stop every thread of a process with PTRACE_SEIZE +
 * PTRACE_INTERRUPT and collect its registers (part of the core writer,
 * see oom_corewrite.h).  Never PTRACE_ATTACH: the SIGSTOP it sends is not
 * delivered to a frozen or OOM-parked task and waiting for it hangs.
 */
#define _GNU_SOURCE
#include "oom_corewrite.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct ftc_thread *find(struct ftc_proc *p, int tid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->t[i].tid == tid)
            return &p->t[i];
    return NULL;
}

static struct ftc_thread *add(struct ftc_proc *p, int tid)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 16;
        struct ftc_thread *nt = realloc(p->t, nc * sizeof *nt);
        if (!nt)
            return NULL;
        p->t = nt;
        p->cap = nc;
    }
    struct ftc_thread *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    return t;
}

/* Seize + interrupt threads not seen yet. Returns how many were new, -1 if
 * the process is gone. */
static int seize_new(struct ftc_proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", p->pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int added = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int tid = atoi(de->d_name);
        if (tid <= 0 || find(p, tid))
            continue;
        struct ftc_thread *t = add(p, tid);
        if (!t)
            break;
        added++;
        if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
            continue; /* exited meanwhile, or not permitted: partial */
        t->attached = 1;
        ptrace(PTRACE_INTERRUPT, tid, 0, 0);
    }
    closedir(d);
    return added;
}

/* sp and pc of a thread that did not stop (/proc/PID/task/TID/syscall:
 * "nr args... sp pc", "-1 sp pc" or "running"). */
static void regs_from_syscall_file(int pid, struct ftc_thread *t)
{
    char path[96], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, t->tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    unsigned long long v[9];
    int k = 0;
    char *s = buf, *end;
    while (k < 9) {
        while (*s == ' ')
            s++;
        if (!*s || *s == '\n')
            break;
        v[k++] = strtoull(s, &end, 0);
        if (end == s)
            break;
        s = end;
    }
    if (k >= 3) {
        t->regs.rsp = v[k - 2];
        t->regs.rip = v[k - 1];
        t->regs_partial = 1;
    }
}

static void wait_stops(struct ftc_proc *p, uint64_t deadline)
{
    for (;;) {
        int waiting = 0;
        for (size_t i = 0; i < p->n; i++) {
            struct ftc_thread *t = &p->t[i];
            if (!t->attached || t->stopped)
                continue;
            int st;
            pid_t r = waitpid(t->tid, &st, __WALL | WNOHANG);
            if (r == 0) {
                waiting++;
                continue;
            }
            if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
                t->attached = 0; /* thread gone */
                t->tid = -t->tid;
                continue;
            }
            if (WIFSTOPPED(st)) {
                t->stopped = 1;
                if ((st >> 16) == 0 && WSTOPSIG(st) != SIGTRAP)
                    t->pending_sig = WSTOPSIG(st); /* signal-delivery-stop */
            }
        }
        if (!waiting || now_ms() >= deadline)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

int ftc_seize(int pid, struct ftc_proc *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->pid = pid;
    if (seize_new(p) < 0) {
        snprintf(err, errlen, "pid %d: %s", pid, strerror(errno));
        free(p->t);
        memset(p, 0, sizeof *p);
        return -1;
    }
    return 0;
}

int ftc_stop(struct ftc_proc *p, int timeout_ms, char *err, size_t errlen)
{
    int pid = p->pid;
    uint64_t deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1);
    /* threads created while we were stopping the others */
    for (int round = 0; round < 16; round++) {
        wait_stops(p, deadline);
        if (seize_new(p) <= 0)
            break;
    }
    int attached_any = 0, partial = 0;
    size_t o = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct ftc_thread *t = &p->t[i];
        if (t->tid <= 0)
            continue; /* exited */
        if (t->stopped) {
            attached_any = 1;
            if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) != 0) {
                t->stopped = 0;
                regs_from_syscall_file(pid, t);
                partial = 1;
            } else if (ptrace(PTRACE_GETFPREGS, t->tid, 0, &t->fpregs) == 0) {
                t->have_fp = 1;
            }
        } else {
            regs_from_syscall_file(pid, t);
            partial = 1;
        }
        p->t[o++] = *t;
    }
    p->n = o;
    /* main thread first: gdb selects the first NT_PRSTATUS */
    for (size_t i = 1; i < p->n; i++)
        if (p->t[i].tid == pid) {
            struct ftc_thread tmp = p->t[0];
            p->t[0] = p->t[i];
            p->t[i] = tmp;
        }
    if (!p->n || (!attached_any && !partial)) {
        snprintf(err, errlen, "pid %d: no thread could be stopped (%s)", pid,
                 p->n ? "PTRACE_SEIZE refused" : "process gone");
        ftc_detach(p);
        return -1;
    }
    return partial ? 1 : 0;
}

int ftc_attach(int pid, int timeout_ms, struct ftc_proc *p, char *err, size_t errlen)
{
    if (ftc_seize(pid, p, err, errlen) != 0)
        return -1;
    return ftc_stop(p, timeout_ms, err, errlen);
}

void ftc_detach(struct ftc_proc *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct ftc_thread *t = &p->t[i];
        if (t->attached)
            ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->pending_sig);
    }
    free(p->t);
    memset(p, 0, sizeof *p);
}
