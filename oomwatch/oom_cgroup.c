/* oom_cgroup.c -- cgroup v1/v2 file access for funtrace-oomwatch (see oom_cgroup.h). */
#define _GNU_SOURCE
#include "oom_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int oc_has(const char *dir, const char *file)
{
    char p[OC_PATH * 2];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return access(p, F_OK) == 0;
}

enum oc_kind oc_kind(const char *dir)
{
    struct statfs sf;
    struct stat st;
    if (statfs(dir, &sf) != 0 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return OC_NONE;
    if ((unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC)
        return oc_has(dir, "cgroup.procs") ? OC_V2 : OC_NONE;
    if ((unsigned long)sf.f_type == CGROUP_SUPER_MAGIC) {
        if (!oc_has(dir, "cgroup.procs"))
            return OC_NONE;
        return oc_has(dir, "memory.limit_in_bytes") ? OC_V1_MEMORY : OC_V1_OTHER;
    }
    return OC_NONE;
}

/* mountinfo: id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
int oc_mounts(struct oc_mounts *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        char root[OC_PATH], mnt[OC_PATH];
        if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2)
            continue;
        const char *dash = strstr(line, " - ");
        if (!dash)
            continue;
        char fstype[64], source[256], opts[1024] = "";
        if (sscanf(dash + 3, "%63s %255s %1023s", fstype, source, opts) < 2)
            continue;
        if (!strcmp(fstype, "cgroup2") && !m->v2[0]) {
            snprintf(m->v2, sizeof m->v2, "%s", mnt);
            snprintf(m->v2_root, sizeof m->v2_root, "%s", root);
        } else if (!strcmp(fstype, "cgroup") && !m->v1mem[0]) {
            for (char *save = NULL, *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                if (!strcmp(tok, "memory")) {
                    snprintf(m->v1mem, sizeof m->v1mem, "%s", mnt);
                    snprintf(m->v1mem_root, sizeof m->v1mem_root, "%s", root);
                }
        }
    }
    free(line);
    fclose(f);
    return 0;
}

/* mount point + (path relative to the mount's root) */
static void join_mount(char *out, const char *mnt, const char *mroot, const char *path)
{
    out[0] = 0;
    if (!mnt[0])
        return;
    size_t rl = strlen(mroot);
    if (!strcmp(mroot, "/"))
        rl = 0;
    if (rl && (strncmp(path, mroot, rl) || (path[rl] && path[rl] != '/')))
        return; /* not visible through this mount */
    const char *rest = path + rl;
    if (!strcmp(rest, "/"))
        rest = "";
    snprintf(out, OC_PATH, "%s%s", mnt, rest);
}

int oc_of_pid(int pid, const struct oc_mounts *m, char *v1dir, char *v2dir)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/cgroup", pid);
    v1dir[0] = v2dir[0] = 0;
    FILE *f = fopen(p, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = 0;
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!strcmp(line, "0") && !ctrls[0]) {
            join_mount(v2dir, m->v2, m->v2_root, path);
            continue;
        }
        char buf[256];
        snprintf(buf, sizeof buf, "%s", ctrls);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (!strcmp(tok, "memory"))
                join_mount(v1dir, m->v1mem, m->v1mem_root, path);
    }
    free(line);
    fclose(f);
    return 0;
}

static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return a[0] && b[0] && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int oc_is_root(const struct oc_mounts *m, const char *dir)
{
    return same_dir(dir, m->v1mem) || same_dir(dir, m->v2);
}

void oc_pids_add(struct oc_pids *p, int pid)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 64;
        int *nv = realloc(p->v, nc * sizeof *nv);
        if (!nv)
            return;
        p->v = nv;
        p->cap = nc;
    }
    p->v[p->n++] = pid;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void oc_pids_sort(struct oc_pids *p)
{
    if (!p->n)
        return;
    qsort(p->v, p->n, sizeof *p->v, cmp_int);
    size_t o = 1;
    for (size_t i = 1; i < p->n; i++)
        if (p->v[i] != p->v[o - 1])
            p->v[o++] = p->v[i];
    p->n = o;
}

int oc_pids_has(const struct oc_pids *p, int pid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i] == pid)
            return 1;
    return 0;
}

void oc_pids_free(struct oc_pids *p)
{
    free(p->v);
    p->v = NULL;
    p->n = p->cap = 0;
}

static int procs_rec(const char *dir, int recursive, struct oc_pids *pids, int depth)
{
    char p[OC_PATH * 2];
    snprintf(p, sizeof p, "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "re");
    if (!f)
        return -1;
    int pid;
    while (fscanf(f, "%d", &pid) == 1)
        oc_pids_add(pids, pid);
    fclose(f);
    if (!recursive || depth > 32)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (strlen(p) < OC_PATH)
            procs_rec(p, 1, pids, depth + 1);
    }
    closedir(d);
    return 0;
}

int oc_procs(const char *dir, int recursive, struct oc_pids *pids)
{
    int r = procs_rec(dir, recursive, pids, 0);
    oc_pids_sort(pids);
    return r;
}

long oc_read(const char *dir, const char *file, char *buf, size_t cap)
{
    char p[OC_PATH * 2];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = 0;
    close(fd);
    return (long)n;
}

int oc_write(const char *dir, const char *file, const char *s)
{
    char p[OC_PATH * 2];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(s);
    ssize_t r = write(fd, s, len);
    int e = errno;
    close(fd);
    if (r != (ssize_t)len) {
        errno = r < 0 ? e : EIO;
        return -1;
    }
    return 0;
}

int oc_read_u64(const char *dir, const char *file, uint64_t *v)
{
    char buf[64];
    if (oc_read(dir, file, buf, sizeof buf) <= 0)
        return -1;
    if (!strncmp(buf, "max", 3)) {
        *v = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || end == buf)
        return -1;
    *v = x;
    return 0;
}

int oc_keyed(const char *text, const char *key, uint64_t *v)
{
    size_t kl = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (!strncmp(l, key, kl) && l[kl] == ' ') {
            *v = strtoull(l + kl + 1, NULL, 10);
            return 0;
        }
    }
    return -1;
}

int oc_event_register(const char *dir, const char *file, const char *args, const char *what, int *efd,
                      int *ctl, char *err, size_t errlen)
{
    char path[OC_PATH + 64], line[128];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    *efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    *ctl = open(path, O_RDONLY | O_CLOEXEC);
    if (*efd < 0 || *ctl < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    snprintf(line, sizeof line, "%d %d%s%s", *efd, *ctl, args ? " " : "", args ? args : "");
    if (oc_write(dir, "cgroup.event_control", line) != 0) {
        snprintf(err, errlen, "cannot register %s eventfd in %s/cgroup.event_control: %s", what, dir,
                 strerror(errno));
        goto fail;
    }
    return 0;
fail:
    if (*efd >= 0) close(*efd);
    if (*ctl >= 0) close(*ctl);
    *efd = *ctl = -1;
    return -1;
}
