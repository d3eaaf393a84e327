/*
 * dbgcache.c -- see dbgcache.h
 */
#define _GNU_SOURCE
#include "dbgcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STALE_S 3600 /* a named temporary file older than this is a killed decoder's */
#define UNUSED_S (30 * 86400) /* an entry not used for this long is removed (a debug package upgraded away) */
#define TOUCH_S 86400 /* a used entry's time is brought up to date when older than this */

/* the cache's base directory (malloc'd), NULL: none */
static char *cache_base(void)
{
    const char *v = getenv("FUNTRACE_CACHE_DIR");
    char *p = NULL;
    if (v)
        return *v ? strdup(v) : NULL;
    if ((v = getenv("XDG_CACHE_HOME")) && *v == '/') {
        if (asprintf(&p, "%s/funtrace", v) < 0)
            return NULL;
        return p;
    }
    if ((v = getenv("HOME")) && *v == '/') {
        if (asprintf(&p, "%s/.cache/funtrace", v) < 0)
            return NULL;
        return p;
    }
    return NULL;
}

/* FNV-1a over the bytes of v */
static uint64_t fnv(uint64_t h, const void *v, size_t n)
{
    const unsigned char *b = v;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

char *dbg_cache_path(const struct stat *src, const char *bid_hex)
{
    char *base = cache_base();
    if (!base)
        return NULL;
    uint64_t id[6] = {(uint64_t)src->st_dev, (uint64_t)src->st_ino, (uint64_t)src->st_size,
                      (uint64_t)src->st_mtim.tv_sec, (uint64_t)src->st_mtim.tv_nsec, 1 /* layout version */};
    uint64_t key = fnv(0xcbf29ce484222325ull, id, sizeof id);
    char *p = NULL;
    if (asprintf(&p, "%s/debug/%s-%016llx.debug", base, bid_hex, (unsigned long long)key) < 0)
        p = NULL;
    free(base);
    return p;
}

int dbg_cache_open(const char *path, size_t total, const Elf64_Shdr *sh, size_t shnum, size_t shoff)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    Elf64_Ehdr eh;
    size_t len = shnum * sizeof *sh;
    Elf64_Shdr *got = malloc(len ? len : 1);
    int ok = got && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == total &&
             pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && eh.e_shoff == shoff &&
             eh.e_shnum == shnum && pread(fd, got, len, (off_t)shoff) == (ssize_t)len && !memcmp(got, sh, len);
    free(got);
    if (!ok) {
        close(fd);
        return -1;
    }
    /* used now: its time says so (UNUSED_S; at most once a day, a metadata write) */
    if (time(NULL) - st.st_mtime > TOUCH_S)
        (void)futimens(fd, NULL);
    return fd;
}

/* mkdir -p of the directory d (cut at each '/' in turn, then restored) */
static int make_dirs(char *d)
{
    int rc = 0;
    for (char *s = d + 1; *s && !rc; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(d, 0700) != 0 && errno != EEXIST)
            rc = -1;
        *s = '/';
    }
    if (!rc && mkdir(d, 0700) != 0 && errno != EEXIST)
        rc = -1;
    return rc;
}

/* in the directory dir, when an entry is written: temporary files left by a
 * decoder killed while it wrote one under a name (before O_TMPFILE, or where
 * the file system has none), once an hour old (a younger one may be another
 * decoder's, being written), and entries not used for UNUSED_S (a use
 * brings an entry's time up to date: dbg_cache_open) are removed */
static void remove_stale(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    time_t now = time(NULL);
    while (dp && (e = readdir(dp))) {
        struct stat st;
        size_t n = strlen(e->d_name);
        int tmp = strstr(e->d_name, ".debug.tmp.") != NULL,
            entry = !tmp && n > 6 && !strcmp(e->d_name + n - 6, ".debug");
        if ((tmp || entry) && fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && now - st.st_mtime > (tmp ? STALE_S : UNUSED_S))
            unlinkat(dirfd(dp), e->d_name, 0);
    }
    if (dp)
        closedir(dp);
}

int dbg_cache_create(const char *path, char **tmp)
{
    *tmp = NULL;
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (!slash || slash == dir || (*slash = 0, make_dirs(dir)) != 0) {
        free(dir);
        return -1;
    }
    /* unnamed until published: a decoder killed meanwhile leaves nothing */
    remove_stale(dir);
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    free(dir);
    if (fd >= 0)
        return fd;
    if (asprintf(tmp, "%s.tmp.XXXXXX", path) < 0) {
        *tmp = NULL;
        return -1;
    }
    fd = mkostemp(*tmp, O_CLOEXEC);
    if (fd < 0) {
        free(*tmp);
        *tmp = NULL;
    }
    return fd;
}

/* the unnamed file fd gets the name path (an entry there, which did not
 * validate, is replaced; one that a concurrent decoder published first is
 * kept) */
static int link_unnamed(int fd, const char *path)
{
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
        return 0;
    if (errno != EEXIST || unlink(path) != 0)
        return -1;
    return linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

int dbg_cache_publish(int fd, char *tmp, const char *path)
{
    int rc = fchmod(fd, 0600) == 0 && fsync(fd) == 0 && (tmp ? rename(tmp, path) : link_unnamed(fd, path)) == 0
                 ? 0
                 : -1;
    if (rc && tmp)
        unlink(tmp);
    free(tmp);
    return rc;
}

void dbg_cache_discard(char *tmp)
{
    if (tmp)
        unlink(tmp);
    free(tmp);
}
