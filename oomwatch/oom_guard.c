/* oom_guard.c -- guardian process that restores cgroup files (see oom_guard.h). */
#define _GNU_SOURCE
#include "oom_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int og_write_retry(const char *file, const char *value)
{
    size_t len = strlen(value);
    for (int attempt = 0;; attempt++) {
        int fd = open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        ssize_t r = write(fd, value, len);
        int e = errno;
        close(fd);
        if (r == (ssize_t)len)
            return 0;
        if (r >= 0)
            e = EIO;
        if ((e != EBUSY && e != EAGAIN && e != EINTR) || attempt >= 40) {
            errno = e;
            return -1;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ---- the guardian ---- */

static void guardian(int rfd)
{
    struct og_guard g = {.fd = -1};
    char buf[2 * OG_PATH], *line;
    size_t have = 0;
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        ssize_t r = read(rfd, buf + have, sizeof buf - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* the watcher is gone */
        have += (size_t)r;
        buf[have] = 0;
        char *nl;
        while ((nl = memchr(buf, '\n', have))) {
            *nl = 0;
            line = buf;
            if (line[0] == 'Q')
                _exit(0); /* everything was restored by the watcher */
            if (line[0] == 'P' && g.n < OG_MAX) {
                char *tab = strchr(line + 1, '\t');
                size_t fl = tab ? (size_t)(tab - line - 1) : 0, vl = tab ? strlen(tab + 1) : 0;
                if (tab && fl < OG_PATH && vl < OG_VAL) {
                    memcpy(g.rec[g.n].file, line + 1, fl);
                    g.rec[g.n].file[fl] = 0;
                    memcpy(g.rec[g.n].value, tab + 1, vl + 1);
                    g.n++;
                }
            } else if (line[0] == 'O' && g.n > 0) {
                g.n--;
            }
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have - used);
            have -= used;
        }
        if (have == sizeof buf - 1)
            have = 0; /* cannot happen: records are short */
    }
    while (g.n > 0) {
        g.n--;
        int r = og_write_retry(g.rec[g.n].file, g.rec[g.n].value);
        fprintf(stderr, "funtrace-oomwatch: guardian: the watcher died mid-dump: %s %s to %s%s%s\n",
                r ? "could NOT restore" : "restored", g.rec[g.n].file, g.rec[g.n].value, r ? ": " : "",
                r ? strerror(errno) : "");
    }
    _exit(0);
}

int og_start(struct og_guard *g)
{
    int p[2];
    memset(g, 0, sizeof *g);
    g->fd = -1;
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(p[1]);
        guardian(p[0]);
    }
    close(p[0]);
    g->fd = p[1];
    g->pid = pid;
    return 0;
}

static int send_line(struct og_guard *g, const char *s)
{
    size_t len = strlen(s);
    if (g->fd < 0)
        return -1;
    /* < PIPE_BUF: atomic */
    return write(g->fd, s, len) == (ssize_t)len ? 0 : -1;
}

int og_push(struct og_guard *g, const char *file, const char *value)
{
    char line[OG_PATH + OG_VAL + 4];
    if (g->n >= OG_MAX || strlen(file) >= OG_PATH || strlen(value) >= OG_VAL) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(line, sizeof line, "P%s\t%s\n", file, value);
    if (send_line(g, line) != 0)
        return -1;
    snprintf(g->rec[g->n].file, OG_PATH, "%s", file);
    snprintf(g->rec[g->n].value, OG_VAL, "%s", value);
    g->n++;
    return 0;
}

int og_unwind(struct og_guard *g)
{
    int failed = 0;
    while (g->n > 0) {
        g->n--;
        if (og_write_retry(g->rec[g->n].file, g->rec[g->n].value) != 0) {
            failed++;
            fprintf(stderr, "funtrace-oomwatch: could NOT restore %s to %s: %s\n", g->rec[g->n].file,
                    g->rec[g->n].value, strerror(errno));
            continue; /* the guardian keeps it and retries when we close */
        }
        if (!failed) /* after a failure the guardian retries from that record down */
            send_line(g, "O\n");
    }
    if (!failed)
        send_line(g, "Q\n");
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->pid > 0)
        while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    g->pid = 0;
    return failed;
}
