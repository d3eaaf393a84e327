/*
 * runstat.c -- run a command and report its wall time and peak RSS
 * (bench/run uses it for coreextract, gdb and funtrace-decode).
 *
 *   runstat [-o OUT] [-e ERR] -- COMMAND [ARGS...]
 *
 * The command's stdout goes to OUT (default /dev/null), its stderr to ERR
 * (default /dev/null).  Prints one line on stdout:
 *   wall_ms <ms> maxrss_kb <KiB> rc <exit status, or 128+signal> cpu_ms <user+sys ms>
 * and exits 0, or 2 if the command could not be started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

static int open_out(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fprintf(stderr, "runstat: cannot open %s: %s\n", path, strerror(errno));
    return fd;
}

int main(int argc, char **argv)
{
    const char *out = "/dev/null", *err = "/dev/null";
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "-e") && i + 1 < argc)
            err = argv[++i];
        else if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: runstat [-o OUT] [-e ERR] -- COMMAND [ARGS...]\n");
        return 2;
    }
    int ofd = open_out(out), efd = open_out(err);
    if (ofd < 0 || efd < 0)
        return 2;
    int pfd[2]; /* close-on-exec: the child writes errno if exec fails */
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        perror("runstat: pipe");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("runstat: fork");
        return 2;
    }
    if (pid == 0) {
        dup2(ofd, 1);
        dup2(efd, 2);
        execvp(argv[i], &argv[i]);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(pfd[1]);
    int child_errno = 0;
    ssize_t got = read(pfd[0], &child_errno, sizeof child_errno);
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) {
        perror("runstat: wait4");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (got == (ssize_t)sizeof child_errno) {
        fprintf(stderr, "runstat: cannot run %s: %s\n", argv[i], strerror(child_errno));
        return 2;
    }
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    printf("wall_ms %.3f maxrss_kb %ld rc %d cpu_ms %.3f\n", ms, ru.ru_maxrss, rc, cpu);
    return 0;
}
