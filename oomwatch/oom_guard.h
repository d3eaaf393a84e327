/*
 * oom_guard.h -- undo cgroup changes even if funtrace-oomwatch dies midway.
 *
 * Before it freezes a cgroup or raises a memory limit, the watcher pushes
 * the file and the value that undoes the change.  The records are kept in
 * this process AND sent over a pipe to a small guardian child forked by
 * og_start.  og_unwind writes the values back (last pushed first) and tells
 * the guardian, which then exits.  If the watcher dies for any reason
 * (SIGKILL included) the guardian sees the pipe close first and writes the
 * outstanding values itself, so a target is never left frozen or with a
 * raised limit.  The guardian ignores SIGINT/SIGTERM/SIGHUP/SIGQUIT (a ^C
 * reaches the whole process group) and outlives the watcher only for the
 * time the restore takes.
 */
#ifndef FUNTRACE_OOM_GUARD_H
#define FUNTRACE_OOM_GUARD_H

#include <sys/types.h>

#define OG_MAX 8
#define OG_PATH 1100
#define OG_VAL 64

struct og_guard {
    int fd;      /* write end of the pipe, -1 when not started */
    pid_t pid;   /* guardian */
    int n;
    struct {
        char file[OG_PATH];
        char value[OG_VAL];
    } rec[OG_MAX];
};

/* Fork the guardian. 0 / -1 (errno). */
int og_start(struct og_guard *g);
/* Record "write value to file to undo what comes next". 0 / -1. */
int og_push(struct og_guard *g, const char *file, const char *value);
/* Undo everything pushed (last first), stop the guardian and reap it.
 * Returns the number of restores that failed (each is logged). */
int og_unwind(struct og_guard *g);

/* Write value to file, retrying EBUSY/EAGAIN/EINTR for up to ~2 s (a v1
 * limit can only be lowered once the memory above it is reclaimed).
 * 0 / -1 (errno). */
int og_write_retry(const char *file, const char *value);

#endif
