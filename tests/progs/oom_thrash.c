/*
 * oom_thrash -- memory pressure by page-cache thrashing: random 4 KiB reads
 * of a file larger than the cgroup's memory limit, so that (nearly) every
 * read evicts a page and refaults another.  Used by tests/test_oom*.py to
 * fire PSI memory triggers without any risk of an OOM kill.
 *
 *   oom_thrash FILE SECONDS [HOLD_MB]
 *     reads FILE at random for SECONDS; with HOLD_MB, first allocates and
 *     touches that much anonymous memory (so less is left for the cache).
 *     Prints "oom_thrash: pid N ready" once started.  The file's cached
 *     pages are dropped first (POSIX_FADV_DONTNEED) so that the reads are
 *     charged to this process's cgroup.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRACED __attribute__((noinline))

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TRACED static unsigned long read_page(int fd, off_t off)
{
    char buf[4096];
    ssize_t r = pread(fd, buf, sizeof buf, off);
    return r > 0 ? (unsigned char)buf[0] : 0;
}

TRACED static unsigned long thrash_round(int fd, off_t pages, unsigned *seed)
{
    unsigned long sum = 0;
    for (int i = 0; i < 64; i++)
        sum += read_page(fd, (off_t)(rand_r(seed) % pages) * 4096);
    return sum;
}

TRACED static char *hold_memory(size_t mb)
{
    char *p = malloc(mb << 20);
    if (p)
        for (size_t o = 0; o < (mb << 20); o += 4096)
            p[o] = 1;
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: oom_thrash FILE SECONDS [HOLD_MB]\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 4096) {
        perror(argv[1]);
        return 2;
    }
    /* pages cached by whoever wrote the file are charged to its cgroup:
     * drop them so that our reads are charged to ours */
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    double secs = atof(argv[2]);
    char *held = argc > 3 ? hold_memory((size_t)atol(argv[3])) : NULL;
    printf("oom_thrash: pid %d ready\n", (int)getpid());
    fflush(stdout);
    unsigned seed = (unsigned)getpid();
    off_t pages = st.st_size / 4096;
    unsigned long sum = 0;
    double end = now() + secs;
    while (now() < end)
        sum += thrash_round(fd, pages, &seed);
    printf("oom_thrash: done (%lu)\n", sum + (held ? (unsigned long)held[0] : 0));
    return 0;
}
