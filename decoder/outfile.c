/*
 * outfile.c -- see outfile.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "xalloc.h"

/* the temporary files being written, removed by outfile_drop_all on exit and on a
 * fatal signal (async-signal-safe: fixed slots, unlink only) */
#define SLOTS 8
static volatile sig_atomic_t live[SLOTS];
static const char *volatile paths[SLOTS];

static void drop(int i)
{
    if (live[i]) {
        live[i] = 0;
        unlink(paths[i]);
    }
}

void outfile_drop_all(void)
{
    for (int i = 0; i < SLOTS; i++)
        drop(i);
}

static void on_fatal_signal(int sig)
{
    outfile_drop_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void hook(void)
{
    static int hooked;
    if (hooked)
        return;
    hooked = 1;
    atexit(outfile_drop_all);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (signal(sigs[i], on_fatal_signal) == SIG_IGN)
            signal(sigs[i], SIG_IGN);
}

int outfile_open(struct outfile *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->slot = -1;
    struct stat st;
    if (!strcmp(path, "-"))
        f->fd = dup(1);
    else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        f->fd = open(path, O_WRONLY); /* /dev/null, a FIFO, a terminal */
    else
        f->fd = -2;
    if (f->fd != -2)
        return f->fd < 0 ? (errno ? errno : EIO) : 0;
    for (int i = 0; i < SLOTS; i++)
        if (!live[i] && !paths[i]) {
            f->slot = i;
            break;
        }
    if (f->slot < 0)
        return EMFILE;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        f->final = realpath(path, NULL); /* replace the file, not the link */
    if (!f->final)
        f->final = xstrdup(path);
    if (asprintf(&f->tmp, "%s.tmp.%ld", f->final, (long)getpid()) < 0)
        xalloc_die();
    hook();
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f->fd < 0) {
        int e = errno;
        free(f->tmp);
        free(f->final);
        f->tmp = f->final = NULL;
        return e;
    }
    paths[f->slot] = f->tmp;
    live[f->slot] = 1;
    return 0;
}

int outfile_close(struct outfile *f, int err)
{
    if (close(f->fd) != 0 && !err)
        err = errno;
    if (f->tmp) {
        if (!err && rename(f->tmp, f->final) == 0)
            live[f->slot] = 0;
        else if (!err)
            err = errno;
        drop(f->slot);
        paths[f->slot] = NULL;
        free(f->tmp);
        f->tmp = NULL;
    }
    free(f->final);
    f->final = NULL;
    return err;
}
