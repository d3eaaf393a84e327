/*
 * oomwatch.h -- funtrace-oomwatch: catch the trace of a process before the
 * OOM killer does.  Shared by oomwatch*.c and oom_dump.c / oom_trigger.c /
 * oom_coreseq.c.  See README "Reference: funtrace-oomwatch".
 */
#ifndef FUNTRACE_OOMWATCH_H
#define FUNTRACE_OOMWATCH_H

#include <stdint.h>
#include <stddef.h>
#include <poll.h>
#include "oom_cgroup.h"
#include "oom_psispec.h"
#include "util.h"

#define OW_EXIT_OK 0      /* target gone, SIGINT/SIGTERM, or --once done */
#define OW_EXIT_NOTHING 1 /* --once: a trigger fired but no trace could be saved */
#define OW_EXIT_BADARGS 2 /* bad arguments / target / trigger (one line on stderr) */
#define OW_USAGE_DEFAULT_PCT 90u
#define OW_EXIT_LOST 3    /* the target was killed by the OOM killer and no trace of it was saved */

enum ow_trigger { OW_T_PSI = 1, OW_T_OOM = 2, OW_T_EVENTS = 4, OW_T_USAGE = 8 };

struct ow_opts {
    int pid;
    const char *cg[2];
    int ncg;
    const char *outdir;
    struct ft_psi_spec psi;
    unsigned triggers;  /* OW_T_*; 0 = every one the target supports */
    int core, kill, once, verbose;
    uint64_t raise;     /* bytes added to the limits while writing a core */
    uint64_t max_bytes; /* total bytes this watcher may write */
    double min_interval;/* seconds between two dumps */
    int poll_ms;        /* re-check period (memory.events, target gone) */
    int stop_ms;        /* how long to wait for threads to stop / the group to freeze */
    unsigned usage_pct; /* usage trigger: percent of the limit (default 90) ... */
    uint64_t usage_bytes; /* ... or bytes (--usage BYTES), 0: the percentage */
    int usage_given;    /* --usage was given: arm the usage trigger */
};

struct ow_target {
    int pid;                /* --pid, else 0 */
    char v1[OC_PATH];       /* v1 memory cgroup ("" none) */
    char v2[OC_PATH];       /* v2 group ("" none) */
    int v1_given, v2_given; /* from --cgroup (else derived from the pid) */
    char psi_file[OC_PATH + 32];
    int psi_system_wide;    /* psi_file is /proc/pressure/memory: not the target's own */
    char comm[64];          /* --pid: its name at start */
    struct oc_mounts mounts;
};

/* untraced processes already looked at: (pid, start time) */
struct ow_seen {
    int pid;
    unsigned long long start;
};

struct ow_state {
    struct ow_opts o;
    struct ow_target t;
    int outfd;              /* the output directory (O_PATH|O_DIRECTORY) */
    int psi_fd, oom_efd, oom_ctl_fd, events_fd, pidfd, sigfd;
    int usage_efd, usage_ctl_fd; /* usage trigger (oom_usage.c) */
    int usage_v2;           /* polled memory.current (else the v1 threshold eventfd) */
    int usage_watch;        /* v1: over the threshold, re-read memory.stat every 100 ms */
    int usage_over;         /* last check was over the threshold (fires on the way up) */
    uint64_t usage_limit, usage_threshold;
    uint64_t oom_kills0;    /* OOM kills counted in the target's scope at start */
    int oom_kills_kind;     /* where they are counted (0: nowhere readable) */
    uint64_t oom_kills_last;/* OOM kills since start, as last read */
    char oom_kills_src[OC_PATH + 64];
    int members_seen;       /* a cgroup target had processes once */
    unsigned raws_saved;    /* traces saved in all */
    unsigned armed;         /* OW_T_* armed */
    uint64_t ev[4];         /* memory.events high, max, oom, oom_kill last seen */
    uint64_t bytes_written;
    double last_dump;       /* monotonic seconds of the last dump, < 0: none */
    unsigned suppressed;    /* triggers ignored since the last dump (min-interval) */
    unsigned dumps;
    int stop;               /* SIGINT/SIGTERM seen */
    struct ow_seen *untraced;
    size_t nuntraced, capuntraced;
};

/* oomwatch_util.c */
void ow_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ow_vlog(const struct ow_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double ow_now(void);            /* CLOCK_MONOTONIC seconds */
void ow_stamp(char *buf, size_t cap); /* local time YYYYmmdd-HHMMSS */
void ow_human(char *buf, size_t cap, uint64_t bytes);
void ow_comm(int pid, char *buf, size_t cap);   /* /proc/PID/comm, file-name safe */
unsigned long long ow_starttime(int pid);       /* /proc/PID/stat field 22, 0 if gone */
int ow_running(int pid);                        /* a thread of PID in state R (/proc/PID/task/.../stat) */
void ow_pressure(const char *psi_file, char *buf, size_t cap); /* "some avg10=.. total=.. full .." */

/* oomwatch_target.c: resolve --pid/--cgroup (one line in err, exit 2) */
int ow_target_resolve(struct ow_state *s, char *err, size_t errlen);
/* processes of the target now (sorted). 0 / -1 */
int ow_target_members(const struct ow_state *s, struct oc_pids *out);
/* the v2 group to freeze for these members, "" if none may be frozen */
void ow_target_freeze_dir(const struct ow_state *s, const struct oc_pids *members, char *dir);
/* target gone (pid exited / cgroup removed or emptied): 1 with what
 * happened in why, else 0 */
int ow_target_gone(struct ow_state *s, char *why, size_t cap);
/* OOM kills counted in the target's scope (its v1 group, else its v2 group's
 * memory.events, else the system's /proc/vmstat), and where: at start */
void ow_oom_kills_start(struct ow_state *s);
/* how many more since start (0 if unknown); read on every wake-up, so the
 * count survives the group's removal */
uint64_t ow_oom_kills_since(struct ow_state *s);

/* oom_trigger.c */
int ow_triggers_arm(struct ow_state *s, char *err, size_t errlen);
/* fds to poll and what each is: fills up to 4 */
int ow_triggers_fds(const struct ow_state *s, struct pollfd *pfd, unsigned *kind);
/* After poll: which triggers fired (OW_T_* mask) and a description. on
 * timeout (revents all 0) memory.events is re-read too. */
unsigned ow_triggers_check(struct ow_state *s, const struct pollfd *pfd, const unsigned *kind, int n,
                           char *what, size_t cap);
void ow_triggers_close(struct ow_state *s);
/* poll timeout the armed triggers need (ms), -1: none */
int ow_triggers_poll_ms(const struct ow_state *s);

/* oom_usage.c: the usage trigger */
int ow_usage_available(const struct ow_state *s, char *why, size_t cap); /* 0 no, 1 v1, 2 v2 */
int ow_usage_arm(struct ow_state *s, int kind, char *err, size_t errlen);
void ow_usage_describe(const struct ow_state *s, char *buf, size_t cap);
int ow_usage_poll_ms(const struct ow_state *s);
unsigned ow_usage_check(struct ow_state *s, int efd_ready, char *text, size_t cap);
void ow_usage_close(struct ow_state *s);

/* oom_dump.c: save the trace of every traced process of the target, then
 * the cores (--core) and --kill.  Returns the number of raws saved. */
int ow_dump(struct ow_state *s, const char *what);
void ow_settle(const struct ow_state *s);
int ow_parks(const struct ow_state *s); /* oom_trigger.c: v1 oom_kill_disable 1, tasks parked at the limit */

/* oom_coreseq.c: freeze, raise limits, write a core per pid, restore. 
 * names[i] is the base name ("<prog>-<pid>-<time>") for pids[i]. */
void ow_cores(struct ow_state *s, const int *pids, char (*names)[256], int n, const struct oc_pids *members);

#endif
