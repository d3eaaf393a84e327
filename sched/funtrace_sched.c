/*
 * funtrace_sched.c -- `funtrace-sched`: set up (once, as root), show and
 * remove the tracefs instance whose scheduling events funtrace's snapshots,
 * coreextract and funtrace-oomwatch read (reader/funtrace_sched.h,
 * README "Scheduling states").  It never touches the top-level tracing
 * settings: only its own instance under instances/.
 */
#define _GNU_SOURCE
#include "funtrace_sched.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "funtrace-sched";

static const char usage_text[] =
"usage: funtrace-sched setup  [--tracefs DIR] [--instance NAME] [--buffer-kb KB] [--group GROUP]\n"
"       funtrace-sched status [--tracefs DIR] [--instance NAME]\n"
"       funtrace-sched remove [--tracefs DIR] [--instance NAME]\n"
"\n"
"Scheduling states for funtrace: a tracefs instance that records sched_switch,\n"
"sched_waking and sched_wakeup_new of every task with the x86-tsc clock (the\n"
"clock of funtrace's rings).  funtrace's snapshots, `coreextract --pid`,\n"
"`coreextract -` (core_pattern pipe handler) and funtrace-oomwatch read the\n"
"events of the traced process's threads from it, without consuming them.\n"
"Run `setup` once as root (after each boot); the top-level tracing settings\n"
"are not changed.\n"
"\n"
"  setup           create (or reconfigure) the instance and start recording\n"
"  status          say whether the instance is usable and how much it holds\n"
"  remove          stop recording and remove the instance\n"
"  --tracefs DIR   the tracefs mount (default: the first one in /proc/mounts;\n"
"                  setup mounts tracefs on /sys/kernel/tracing if there is none)\n"
"  --instance NAME instance name (default funtrace; readers find another name\n"
"                  through FUNTRACE_SCHED=TRACEFS/instances/NAME)\n"
"  --buffer-kb KB  ring buffer per CPU (default 2048): how much history is kept;\n"
"                  every snapshot reads all of it (about 1 us per event held)\n"
"  --group GROUP   let GROUP's members read the instance (traced programs that\n"
"                  do not run as root); the tracefs mount point must let them in too\n"
"  -h, --help      this text\n"
"\n"
"Exit status: 0 done (status: usable); 1 status: not usable; 2 bad arguments\n"
"or the setup failed (one line on stderr says what and where).\n";

static int wr(const char *dir, const char *file, const char *val)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot open %s: %s\n", prog, p, strerror(errno));
        return -1;
    }
    ssize_t n = write(fd, val, strlen(val));
    int e = errno;
    close(fd);
    if (n != (ssize_t)strlen(val)) {
        fprintf(stderr, "%s: cannot write '%s' to %s: %s\n", prog, val, p, n < 0 ? strerror(e) : "short write");
        return -1;
    }
    return 0;
}

static int rd(const char *dir, const char *file, char *buf, size_t cap)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    FILE *f = fopen(p, "re");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    return 0;
}

static const char *const events[] = { "sched_switch", "sched_waking", "sched_wakeup_new" };

/* the tracefs mount: --tracefs, else /proc/mounts (via the shared locator) */
static int tracefs_dir(const char *given, char *out, size_t cap, int may_mount)
{
    if (given) {
        snprintf(out, cap, "%s", given);
        return 0;
    }
    char dir[600], why[256];
    int st = ft_sched_locate("", dir, sizeof dir, why, sizeof why);
    if (st != FT_SCHED_NO_TRACEFS) {
        char *p = strstr(dir, "/instances/" FT_SCHED_INSTANCE);
        if (p) *p = 0;
        snprintf(out, cap, "%s", dir);
        return 0;
    }
    if (!may_mount) {
        fprintf(stderr, "%s: tracefs is not mounted\n", prog);
        return -1;
    }
    if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0) {
        fprintf(stderr, "%s: tracefs is not mounted and cannot be mounted on /sys/kernel/tracing: %s\n", prog,
                strerror(errno));
        return -1;
    }
    printf("%s: mounted tracefs on /sys/kernel/tracing\n", prog);
    snprintf(out, cap, "/sys/kernel/tracing");
    return 0;
}

static int group_access(const char *tfs, const char *inst, const char *group)
{
    struct group *g = getgrnam(group);
    if (!g) {
        char *end;
        long v = strtol(group, &end, 10);
        if (*group && !*end) {
            static struct group gg;
            gg.gr_gid = (gid_t)v;
            g = &gg;
        }
    }
    if (!g) {
        fprintf(stderr, "%s: --group %s: no such group\n", prog, group);
        return -1;
    }
    static const char *const files[] = { "", "/trace", "/trace_clock", "/tracing_on", "/events", "/events/sched",
                                         "/events/sched/sched_switch", "/events/sched/sched_switch/enable" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[1024];
        struct stat sb;
        snprintf(p, sizeof p, "%s%s", inst, files[i]);
        if (stat(p, &sb) != 0 || chown(p, (uid_t)-1, g->gr_gid) != 0 ||
            chmod(p, (sb.st_mode & 07777) | S_IRGRP | (S_ISDIR(sb.st_mode) ? S_IXGRP : 0)) != 0) {
            fprintf(stderr, "%s: cannot give group %s access to %s: %s\n", prog, group, p, strerror(errno));
            return -1;
        }
    }
    char p[1024];
    snprintf(p, sizeof p, "%s/instances", tfs);
    struct stat a, b;
    if (stat(tfs, &a) == 0 && stat(p, &b) == 0 &&
        (!((a.st_mode & S_IXGRP) && a.st_gid == g->gr_gid) && !(a.st_mode & S_IXOTH)))
        printf("%s: note: %s itself is mode %04o, group %u: members of %s cannot get in; remount it with "
               "-o gid=%u,mode=0750 (mount -o remount,gid=%u,mode=0750 %s)\n",
               prog, tfs, (unsigned)(a.st_mode & 07777), (unsigned)a.st_gid, group, (unsigned)g->gr_gid,
               (unsigned)g->gr_gid, tfs);
    return 0;
}

static int do_setup(const char *tfs, const char *inst, long kb, const char *group)
{
    if (mkdir(inst, 0750) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: cannot create the instance %s: %s\n", prog, inst, strerror(errno));
        return 2;
    }
    char kbs[32];
    snprintf(kbs, sizeof kbs, "%ld", kb);
    if (wr(inst, "tracing_on", "0") || wr(inst, "trace_clock", "x86-tsc") || wr(inst, "buffer_size_kb", kbs) ||
        wr(inst, "options/record-tgid", "1") || wr(inst, "options/irq-info", "1") ||
        wr(inst, "options/overwrite", "1") || wr(inst, "options/context-info", "1"))
        return 2;
    (void)wr(inst, "options/pause-on-trace", "0"); /* older kernels have no such option */
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        char f[128];
        snprintf(f, sizeof f, "events/sched/%s/enable", events[i]);
        if (wr(inst, f, "1")) return 2;
    }
    if (wr(inst, "tracing_on", "1")) return 2;
    if (group && group_access(tfs, inst, group)) return 2;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    printf("%s: recording sched_switch, sched_waking, sched_wakeup_new with the x86-tsc clock into %s "
           "(%ld KiB per CPU, %ld CPUs: %ld KiB in all)\n",
           prog, inst, kb, ncpu, kb * ncpu);
    if (strcmp(inst + strlen(tfs), "/instances/" FT_SCHED_INSTANCE) != 0)
        printf("%s: readers find this instance with FUNTRACE_SCHED=%s\n", prog, inst);
    return 0;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static double tsc_hz(void)
{
    struct timespec a, b, d = { 0, 20000000 };
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = rdtsc();
    nanosleep(&d, NULL);
    uint64_t t1 = rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    return (double)(t1 - t0) / s;
}

static int do_status(const char *inst)
{
    struct ft_sched_buf b;
    ft_sched_buf_init(&b, NULL, 0);
    struct ft_sched_filter f;
    uint32_t none = 0;
    ft_sched_filter_init(&f, 0, &none, 0, 0, 0, 0);
    int st = ft_sched_capture(inst, &f, &b);
    if (st != FT_SCHED_OK) {
        printf("%s: not usable: %s\n", prog, b.hdr.why);
        return 1;
    }
    char kb[64] = "?";
    rd(inst, "buffer_size_kb", kb, sizeof kb);
    uint64_t now = rdtsc();
    double hz = tsc_hz();
    printf("%s: %s: usable; %s KiB per CPU; %llu events in the buffer", prog, inst, kb,
           (unsigned long long)b.hdr.ndropped);
    if (b.hdr.oldest_tsc && b.hdr.oldest_tsc < now && hz > 0)
        printf(", the oldest %.2f s old (the history kept now)", (double)(now - b.hdr.oldest_tsc) / hz);
    printf("%s\n", (b.hdr.flags & FT_SCHEDF_TRACING_OFF) ? "; but tracing_on is 0: nothing is recorded" : "");
    return (b.hdr.flags & FT_SCHEDF_TRACING_OFF) ? 1 : 0;
}

static int do_remove(const char *inst)
{
    (void)wr(inst, "tracing_on", "0");
    if (rmdir(inst) != 0) {
        fprintf(stderr, "%s: cannot remove %s: %s\n", prog, inst, strerror(errno));
        return 2;
    }
    printf("%s: removed %s\n", prog, inst);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "tracefs", required_argument, 0, 't' }, { "instance", required_argument, 0, 'i' },
        { "buffer-kb", required_argument, 0, 'b' }, { "group", required_argument, 0, 'g' },
        { "help", no_argument, 0, 'h' },          { 0, 0, 0, 0 },
    };
    const char *tfs_arg = NULL, *name = FT_SCHED_INSTANCE, *group = NULL;
    long kb = 2048;
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "t:i:b:g:h", lo, NULL)) != -1) {
        switch (ch) {
        case 't': tfs_arg = optarg; break;
        case 'i': name = optarg; break;
        case 'b': {
            char *end;
            kb = strtol(optarg, &end, 10);
            if (*optarg == 0 || *end || kb < 4 || kb > (1L << 22)) {
                fprintf(stderr, "%s: --buffer-kb wants KiB per CPU between 4 and 4194304, not '%s'\n", prog,
                        optarg);
                return 2;
            }
            break;
        }
        case 'g': group = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default:
            fprintf(stderr, "%s: unknown option or missing argument '%s' (try --help)\n", prog, argv[optind - 1]);
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "%s: %s (try --help)\n", prog, optind == argc ? "no command given" : "too many arguments");
        return 2;
    }
    const char *cmd = argv[optind];
    int setup = !strcmp(cmd, "setup");
    if (!setup && strcmp(cmd, "status") && strcmp(cmd, "remove")) {
        fprintf(stderr, "%s: unknown command '%s' (setup, status or remove; try --help)\n", prog, cmd);
        return 2;
    }
    if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
        fprintf(stderr, "%s: --instance wants a name, not '%s'\n", prog, name);
        return 2;
    }
    char tfs[600], inst[800];
    if (tracefs_dir(tfs_arg, tfs, sizeof tfs, setup) != 0) return setup ? 2 : 1;
    snprintf(inst, sizeof inst, "%s/instances/%s", tfs, name);
    if (setup) return do_setup(tfs, inst, kb, group);
    if (!strcmp(cmd, "status")) return do_status(inst);
    return do_remove(inst);
}
