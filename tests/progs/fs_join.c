/* fs_join.c -- main waits in pthread_join (which tail-calls into the C
 * library's __pthread_clockjoin_ex) while its thread crashes; with
 * argument "wrap", through join_wrapped, which tail-calls pthread_join
 * through the PLT (a chain of tail calls across modules). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static pid_t main_tid;
volatile int *fs_null;
/* main's thread is in a futex wait (syscall 202) */
static int main_waits(void)
{
    char path[64], buf[64] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)main_tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    return n && strncmp(buf, "202 ", 4) == 0;
}
__attribute__((noinline)) void fs_fault(void)
{
    *fs_null = 1; /* SIGSEGV */
}
static void *child(void *arg)
{
    (void)arg;
    while (!main_waits())
        usleep(1000);
    fs_fault();
    return NULL;
}
__attribute__((noinline)) int join_wrapped(pthread_t t)
{
    return pthread_join(t, NULL); /* (a tail call: jmp pthread_join@plt) */
}
int main(int argc, char **argv)
{
    main_tid = (pid_t)syscall(SYS_gettid);
    pthread_t t;
    pthread_create(&t, NULL, child, NULL);
    if (argc > 1 && !strcmp(argv[1], "wrap"))
        join_wrapped(t);
    else
        pthread_join(t, NULL);
    return 0;
}
