/*
 * oom_cgroup.h -- the cgroup files funtrace-oomwatch reads and writes.
 *
 * cgroup v1 memory controller (e.g. /sys/fs/cgroup/memory/X):
 *   memory.limit_in_bytes, memory.memsw.limit_in_bytes, memory.usage_in_bytes,
 *   memory.oom_control ("oom_kill_disable 1" parks tasks at the limit instead of
 *   killing them; "under_oom 1" while they are parked), cgroup.event_control.
 * cgroup v2 (e.g. /sys/fs/cgroup/unified/X or /sys/fs/cgroup/X):
 *   cgroup.freeze / cgroup.events ("frozen 1"), memory.pressure (PSI),
 *   memory.max / memory.events (only when the memory controller is enabled
 *   on the v2 hierarchy, i.e. not bound to v1 as on hybrid systems).
 */
#ifndef FUNTRACE_OOM_CGROUP_H
#define FUNTRACE_OOM_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#define OC_PATH 1024

enum oc_kind { OC_NONE = 0, OC_V1_MEMORY = 1, OC_V1_OTHER = 2, OC_V2 = 3 };

/* What kind of cgroup directory dir is (statfs magic + memory files). */
enum oc_kind oc_kind(const char *dir);

/* Mount points of the v1 memory hierarchy and of cgroup v2 ("" if absent),
 * with the root each mount shows (usually "/"). */
struct oc_mounts {
    char v1mem[OC_PATH], v1mem_root[OC_PATH];
    char v2[OC_PATH], v2_root[OC_PATH];
};
int oc_mounts(struct oc_mounts *m);

/* The v1 memory cgroup directory and the v2 directory of a process, from
 * /proc/PID/cgroup ("" when the hierarchy is not mounted or not visible).
 * Returns 0, or -1 if the process does not exist. */
int oc_of_pid(int pid, const struct oc_mounts *m, char *v1dir, char *v2dir);

/* dir is the root of its hierarchy (a mount point in m). */
int oc_is_root(const struct oc_mounts *m, const char *dir);

/* Processes in dir and (recursive) its descendants, appended to *pids
 * (grown with realloc), sorted and without duplicates.  0 / -1. */
struct oc_pids {
    int *v;
    size_t n, cap;
};
int oc_procs(const char *dir, int recursive, struct oc_pids *pids);
void oc_pids_add(struct oc_pids *p, int pid);
void oc_pids_sort(struct oc_pids *p);
int oc_pids_has(const struct oc_pids *p, int pid);
void oc_pids_free(struct oc_pids *p);

/* Read dir/file into buf (NUL terminated). Returns length or -1 (errno). */
long oc_read(const char *dir, const char *file, char *buf, size_t cap);
/* Write s to dir/file (one write). 0 / -1 (errno). */
int oc_write(const char *dir, const char *file, const char *s);
/* Read a number ("max" -> UINT64_MAX). 0 / -1. */
int oc_read_u64(const char *dir, const char *file, uint64_t *v);
/* Value of "key value" line in text (memory.events, cgroup.events,
 * memory.oom_control). 0 / -1 if absent. */
int oc_keyed(const char *text, const char *key, uint64_t *v);
/* cgroup v1 notification: an eventfd registered for dir/file by writing
 * "<eventfd> <fd of file>[ args]" to dir/cgroup.event_control (args: e.g. a
 * memory.usage_in_bytes threshold).  0 with *efd, *ctl open (keep both), or
 * -1 with a one-line reason in err (what names the notification). */
int oc_event_register(const char *dir, const char *file, const char *args, const char *what, int *efd,
                      int *ctl, char *err, size_t errlen);
/* dir/file exists. */
int oc_has(const char *dir, const char *file);

#endif
