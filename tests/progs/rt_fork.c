/* rt_fork: the child of fork() starts clean, the parent is undisturbed.
 * Writes parent.raw and child.raw. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rt_common.h"

volatile int sink;
static int bystander_pipe[2];
NI void fk_pre(void) { sink++; }
NI void fk_child(void) { sink++; }
NI void fk_parent(void) { sink++; }
NI void fk_bystander_fn(void) { sink++; }
NI void *fk_bystander(void *a)
{
    char c;
    (void)a;
    fk_bystander_fn();
    if (read(bystander_pipe[0], &c, 1) < 0)
        return NULL;
    return NULL;
}
NI void *fk_child_thread(void *a) { (void)a; fk_child(); return NULL; }

static void snap(const char *name)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || funtrace_write_snapshot_fd(fd) != 0)
        _exit(3);
    close(fd);
}

int main(void)
{
    pthread_t by, ct;
    int st;
    pid_t pid;
    if (pipe(bystander_pipe))
        return 1;
    pthread_create(&by, NULL, fk_bystander, NULL);
    fk_pre();
    usleep(50 * 1000); /* a few generations with FUNTRACE_GEN_MS=10 */
    pid = fork();
    if (pid == 0) {
        fk_child();
        pthread_create(&ct, NULL, fk_child_thread, NULL);
        pthread_join(ct, NULL);
        usleep(100 * 1000); /* the child's housekeeper runs */
        snap("child.raw");
        _exit(0);
    }
    waitpid(pid, &st, 0);
    fk_parent();
    snap("parent.raw");
    if (write(bystander_pipe[1], "x", 1) != 1)
        return 1;
    pthread_join(by, NULL);
    printf("child %d status %d\n", (int)pid, st);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
