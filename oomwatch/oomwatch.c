/*
 * oomwatch.c -- funtrace-oomwatch: watch a process or a cgroup and save the
 * funtrace trace of its traced processes when memory runs out, before the
 * OOM killer's SIGKILL makes it impossible.  Options, setup, main loop.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "oomwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEFAULT_MIN_INTERVAL 10.0
#define DEFAULT_MAX_BYTES (1ull << 30)
#define DEFAULT_RAISE (8ull << 20)
#define DEFAULT_POLL_MS 1000
#define DEFAULT_STOP_MS 3000

static const char usage[] =
    "Usage: funtrace-oomwatch (--pid PID | --cgroup DIR [--cgroup DIR]) -o DIR [options]\n"
    "\n"
    "Watch a process or a cgroup; when memory runs out, save the funtrace trace of\n"
    "every traced process in it (DIR/<prog>-<pid>-<time>.raw) before the OOM killer\n"
    "acts.  One log line per event on stderr.\n"
    "\n"
    "target:\n"
    "  -p, --pid PID          one process (its cgroups are found in /proc/PID/cgroup)\n"
    "  -c, --cgroup DIR       every process in a cgroup v2 directory and/or a cgroup v1\n"
    "                         memory directory (give both for a hybrid system)\n"
    "  -o, --output DIR       where the files go (created if missing)\n"
    "triggers (default: every one scoped to the target; system-wide PSI only when\n"
    "none is available):\n"
    "  --triggers LIST        comma-separated: usage, oom, events, psi\n"
    "                         usage: the group's memory, less its page cache, reaches\n"
    "                              --usage (v1: threshold eventfd on memory.usage_in_bytes,\n"
    "                              and re-read every 250 ms; v2: memory.current polled\n"
    "                              against memory.max)\n"
    "                         oom: cgroup v1 OOM notification (eventfd on memory.oom_control);\n"
    "                              with oom_kill_disable 1 the task is parked, not killed\n"
    "                         events: cgroup v2 memory.events counters high/max/oom changed\n"
    "                         psi: PSI trigger on the target's cgroup v2 memory.pressure\n"
    "                              (/proc/pressure/memory, system-wide, if it has no v2 group\n"
    "                              of its own); it sees no stall when anonymous memory grows\n"
    "                              without swap: the kernel just kills -- use usage\n"
    "  --usage PCT%|BYTES     the usage trigger's threshold: a percentage of the group's\n"
    "                         limit, or a size (default 90%)\n"
    "  --psi \"some|full STALL_US WINDOW_US\"\n"
    "                         the PSI trigger (default \"" FT_PSI_DEFAULT "\"); without\n"
    "                         CAP_SYS_RESOURCE the window must be a multiple of 2 s\n"
    "on a trigger:\n"
    "  --core                 also write DIR/<prog>-<pid>-<time>.core (own core writer: freeze\n"
    "                         the v2 group, raise the limit by --raise, ptrace-stop, copy\n"
    "                         /proc/PID/mem; then restore the limit and unfreeze)\n"
    "  --kill                 then SIGKILL the processes whose trace was saved\n"
    "  --raise BYTES          headroom given to a parked task while the core is written\n"
    "                         (default 8M)\n"
    "limits:\n"
    "  --min-interval SECONDS at most one dump per interval; a trigger inside it is\n"
    "                         deferred to its end (default 10)\n"
    "  --max-bytes BYTES      stop saving once this much was written (default 1G)\n"
    "  --once                 exit after the first dump\n"
    "  --poll-ms MS           re-check period for memory.events and the target (default 1000)\n"
    "  --stop-ms MS           wait this long for threads to stop / the group to freeze\n"
    "                         (default 3000)\n"
    "  -v, --verbose          more log lines\n"
    "  -h, --help\n"
    "  -V, --version          the version of funtrace and of its file formats\n"
    "\n"
    "BYTES take a K, M or G suffix.  The watcher exits when the target is gone: the pid\n"
    "ended, or the cgroup was removed or lost its last process.  Exit: 0 when the\n"
    "target is gone, on SIGINT/SIGTERM or after --once saved a trace; 1 when --once\n"
    "found nothing to save; 2 on bad arguments, target or trigger (one line on stderr);\n"
    "3 when the target was killed by the OOM killer and no trace of it was saved.\n";

static int bad(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "funtrace-oomwatch: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return OW_EXIT_BADARGS;
}

static int have_cap_sys_resource(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned long long eff = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7))
            eff = strtoull(line + 7, NULL, 16);
    fclose(f);
    return (eff >> 24) & 1; /* CAP_SYS_RESOURCE */
}

static int parse_triggers(const char *s, unsigned *out)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    *out = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "psi"))
            *out |= OW_T_PSI;
        else if (!strcmp(t, "usage"))
            *out |= OW_T_USAGE;
        else if (!strcmp(t, "oom"))
            *out |= OW_T_OOM;
        else if (!strcmp(t, "events"))
            *out |= OW_T_EVENTS;
        else
            return -1;
    }
    return *out ? 0 : -1;
}

static int parse_args(int argc, char **argv, struct ow_opts *o)
{
    enum { O_PSI = 256, O_TRIG, O_CORE, O_KILL, O_RAISE, O_MININT, O_MAXB, O_ONCE, O_POLL, O_STOP, O_USAGE };
    static const struct option lo[] = {
        {"pid", required_argument, 0, 'p'},     {"cgroup", required_argument, 0, 'c'},
        {"output", required_argument, 0, 'o'},  {"psi", required_argument, 0, O_PSI},
        {"triggers", required_argument, 0, O_TRIG}, {"core", no_argument, 0, O_CORE},
        {"kill", no_argument, 0, O_KILL},       {"raise", required_argument, 0, O_RAISE},
        {"min-interval", required_argument, 0, O_MININT}, {"max-bytes", required_argument, 0, O_MAXB},
        {"once", no_argument, 0, O_ONCE},       {"poll-ms", required_argument, 0, O_POLL},
        {"stop-ms", required_argument, 0, O_STOP}, {"verbose", no_argument, 0, 'v'},
        {"usage", required_argument, 0, O_USAGE},
        {"help", no_argument, 0, 'h'},          {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    const char *psi = FT_PSI_DEFAULT;
    char *end;
    memset(o, 0, sizeof *o);
    o->min_interval = DEFAULT_MIN_INTERVAL;
    o->max_bytes = DEFAULT_MAX_BYTES;
    o->raise = DEFAULT_RAISE;
    o->poll_ms = DEFAULT_POLL_MS;
    o->stop_ms = DEFAULT_STOP_MS;
    o->usage_pct = OW_USAGE_DEFAULT_PCT;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":p:c:o:vhV", lo, NULL)) != -1) {
        switch (c) {
        case 'p': {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v <= 0 || v > 0x3fffffff)
                return bad("--pid needs a process id, not \"%s\"%s", optarg, "");
            o->pid = (int)v;
            break;
        }
        case 'c':
            if (o->ncg == 2)
                return bad("at most two --cgroup (one v2, one v1 memory)%s%s", "", "");
            o->cg[o->ncg++] = optarg;
            break;
        case 'o': o->outdir = optarg; break;
        case O_PSI: psi = optarg; break;
        case O_TRIG:
            if (parse_triggers(optarg, &o->triggers) != 0)
                return bad("--triggers: \"%s\" is not a list of usage, oom, events, psi%s", optarg, "");
            break;
        case O_CORE: o->core = 1; break;
        case O_KILL: o->kill = 1; break;
        case O_RAISE:
            if (ce_parse_bytes(optarg, &o->raise) != 0 || o->raise < 4096)
                return bad("--raise needs a size of at least 4K, not \"%s\"%s", optarg, "");
            break;
        case O_MININT:
            errno = 0;
            o->min_interval = strtod(optarg, &end);
            if (errno || *end || end == optarg || o->min_interval < 0)
                return bad("--min-interval needs a number of seconds, not \"%s\"%s", optarg, "");
            break;
        case O_MAXB:
            if (ce_parse_bytes(optarg, &o->max_bytes) != 0)
                return bad("--max-bytes needs a size, not \"%s\"%s", optarg, "");
            break;
        case O_ONCE: o->once = 1; break;
        case O_USAGE: {
            size_t l = strlen(optarg);
            o->usage_given = 1;
            if (l > 1 && optarg[l - 1] == '%') {
                errno = 0;
                unsigned long v = strtoul(optarg, &end, 10);
                if (errno || end != optarg + l - 1 || v < 1 || v > 100)
                    return bad("--usage needs a percentage (1%%..100%%) or a size, not \"%s\"%s", optarg, "");
                o->usage_pct = (unsigned)v;
            } else if (ce_parse_bytes(optarg, &o->usage_bytes) != 0 || o->usage_bytes < 4096) {
                return bad("--usage needs a percentage (1%%..100%%) or a size, not \"%s\"%s", optarg, "");
            }
            break;
        }
        case O_POLL:
        case O_STOP: {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v < 10 || v > 3600000)
                return bad("%s needs milliseconds (10..3600000), not \"%s\"", c == O_POLL ? "--poll-ms" : "--stop-ms",
                           optarg);
            *(c == O_POLL ? &o->poll_ms : &o->stop_ms) = (int)v;
            break;
        }
        case 'v': o->verbose++; break;
        case 'h': fputs(usage, stdout); exit(0);
        case 'V': exit(cli_version());
        default: cli_bad_option(c, argv); return OW_EXIT_BADARGS;
        }
    }
    if (optind < argc) {
        cli_usage_error("unexpected argument '%s'", argv[optind]);
        return OW_EXIT_BADARGS;
    }
    if (!o->pid && !o->ncg) {
        cli_usage_error("give a target: --pid PID or --cgroup DIR");
        return OW_EXIT_BADARGS;
    }
    if (o->pid && o->ncg)
        return bad("give --pid or --cgroup, not both%s%s", "", "");
    if (!o->outdir)
        return bad("give an output directory: -o DIR%s%s", "", "");
    const char *why;
    if (ft_psi_spec_parse(psi, have_cap_sys_resource(), &o->psi, &why) != 0)
        return bad("--psi \"%s\": %s", psi, why);
    return -1;
}

static int open_outdir(struct ow_state *s)
{
    if (mkdir(s->o.outdir, 0755) != 0 && errno != EEXIST)
        return bad("cannot create the output directory %s: %s", s->o.outdir, strerror(errno));
    s->outfd = open(s->o.outdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (s->outfd < 0)
        return bad("the output directory %s: %s", s->o.outdir, strerror(errno));
    if (access(s->o.outdir, W_OK) != 0)
        return bad("the output directory %s is not writable: %s", s->o.outdir, strerror(errno));
    return -1;
}

static void describe(const struct ow_state *s, char *buf, size_t cap)
{
    size_t o = 0;
    int w;
    if (s->t.pid)
        w = snprintf(buf, cap, "pid %d", s->t.pid);
    else
        w = snprintf(buf, cap, "cgroup");
    o = (size_t)w;
    if (s->t.v1[0])
        o += (size_t)snprintf(buf + o, cap - o, " v1 %s", s->t.v1);
    if (s->t.v2[0] && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, " v2 %s", s->t.v2);
    if (o < cap) {
        o += (size_t)snprintf(buf + o, cap - o, "; triggers:");
        if ((s->armed & OW_T_USAGE) && o < cap) {
            char u[256];
            ow_usage_describe(s, u, sizeof u);
            o += (size_t)snprintf(buf + o, cap - o, " %s", u);
        }
        if ((s->armed & OW_T_PSI) && o < cap)
            o += (size_t)snprintf(buf + o, cap - o, " psi \"%s\" on %s%s", s->o.psi.text, s->t.psi_file,
                                  s->t.psi_system_wide ? " (system-wide: the target has no cgroup v2 group of its "
                                                         "own, so memory stalls of any process fire it)" : "");
        if ((s->armed & OW_T_OOM) && o < cap) {
            char oc[256];
            uint64_t dis = 0;
            if (oc_read(s->t.v1, "memory.oom_control", oc, sizeof oc) > 0)
                oc_keyed(oc, "oom_kill_disable", &dis);
            o += (size_t)snprintf(buf + o, cap - o, " oom (v1 eventfd%s)",
                                  dis ? ", oom_kill_disable 1: tasks are parked at the limit"
                                      : "; oom_kill_disable is 0: the OOM killer may act first");
        }
        if ((s->armed & OW_T_EVENTS) && o < cap)
            o += (size_t)snprintf(buf + o, cap - o, " events (%s/memory.events)", s->t.v2);
    }
    if (o < cap)
        snprintf(buf + o, cap - o, "; output %s%s%s", s->o.outdir, s->o.core ? " (+core)" : "",
                 s->o.kill ? " (+kill)" : "");
}

static int pidfd_open_(int pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

/* The target is gone: say how, whether the OOM killer was involved, and
 * whether it was caught in time.  Returns the exit code. */
static int gone(const struct ow_state *s, const char *why, uint64_t kills)
{
    char dumps[64];
    snprintf(dumps, sizeof dumps, "%u dump%s, %u trace%s saved", s->dumps, s->dumps == 1 ? "" : "s", s->raws_saved,
             s->raws_saved == 1 ? "" : "s");
    if (!kills) {
        ow_log("the target is gone: %s: exiting (%s)", why, dumps);
        return OW_EXIT_OK;
    }
    int system_wide = s->oom_kills_kind == 3;
    char killed[OC_PATH + 256];
    snprintf(killed, sizeof killed, "%s counts %llu OOM kill%s since the watcher started%s", s->oom_kills_src,
             (unsigned long long)kills, kills == 1 ? "" : "s", system_wide ? " (probably the target)" : "");
    if (s->raws_saved) {
        ow_log("the target is gone: %s; %s: exiting (%s)", why, killed, dumps);
        return OW_EXIT_OK;
    }
    const char *hint;
    if (s->armed & OW_T_USAGE)
        hint = "the usage trigger did not fire before the kill: give it more headroom (a lower --usage)";
    else if (s->armed & OW_T_OOM)
        hint = "without oom_kill_disable 1 the OOM killer acts before the oom notification can be used: set it, "
               "or use the usage trigger (--triggers usage)";
    else if (s->armed & OW_T_PSI)
        hint = "PSI sees no stall when anonymous memory grows without swap (nothing to reclaim: the kernel just "
               "kills): use the usage trigger (--triggers usage), which needs a memory limit";
    else
        hint = "no trigger fired before the kill";
    ow_log("the target is gone: %s; %s before any trace was saved (%s): %s", why, killed, dumps, hint);
    return OW_EXIT_LOST;
}

int main(int argc, char **argv)
{
    static struct ow_state st;
    struct ow_state *s = &st;
    cli_init("funtrace-oomwatch");
    s->psi_fd = s->oom_efd = s->oom_ctl_fd = s->events_fd = s->pidfd = s->sigfd = s->outfd = -1;
    s->usage_efd = s->usage_ctl_fd = -1;
    s->last_dump = -1;
    int r = parse_args(argc, argv, &s->o);
    if (r >= 0)
        return r;
    char err[OC_PATH * 2 + 256];
    if (ow_target_resolve(s, err, sizeof err) != 0)
        return bad("%s%s", err, "");
    if ((r = open_outdir(s)) >= 0)
        return r;
    if (ow_triggers_arm(s, err, sizeof err) != 0)
        return bad("%s%s", err, "");
    if (s->t.pid)
        s->pidfd = pidfd_open_(s->t.pid);
    ow_oom_kills_start(s);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    signal(SIGPIPE, SIG_IGN);

    char desc[OC_PATH * 3 + 512];
    describe(s, desc, sizeof desc);
    ow_log("watching %s", desc);

    int exit_code = OW_EXIT_OK;
    unsigned pending = 0;
    char pending_what[2048] = "";
    for (;;) {
        struct pollfd pfd[8];
        unsigned kind[8];
        int n = ow_triggers_fds(s, pfd, kind);
        int ipid = -1, isig = -1;
        if (s->pidfd >= 0) {
            ipid = n;
            pfd[n] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
            kind[n++] = 0;
        }
        if (s->sigfd >= 0) {
            isig = n;
            pfd[n] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
            kind[n++] = 0;
        }
        int timeout = s->o.poll_ms;
        int tms = ow_triggers_poll_ms(s);
        if (tms >= 0 && tms < timeout)
            timeout = tms;
        if (pending) {
            double due = s->last_dump + s->o.min_interval - ow_now();
            int ms = due <= 0 ? 0 : (int)(due * 1000) + 1;
            if (ms < timeout)
                timeout = ms;
        }
        int pr = poll(pfd, (nfds_t)n, timeout);
        if (pr < 0 && errno != EINTR) {
            ow_log("poll failed: %s", strerror(errno));
            break;
        }
        if (pr < 0)
            continue;
        if (isig >= 0 && (pfd[isig].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                ow_log("%s: exiting", strsignal((int)si.ssi_signo));
            break;
        }
        char what[2048];
        unsigned fired = ow_triggers_check(s, pfd, kind, n, what, sizeof what);
        if (fired) {
            if (s->last_dump >= 0 && ow_now() - s->last_dump < s->o.min_interval) {
                s->suppressed++;
                if (!pending || (fired & OW_T_OOM) || !(pending & OW_T_OOM))
                    snprintf(pending_what, sizeof pending_what, "%s", what);
                pending |= fired;
                ow_vlog(s, "fired within --min-interval: deferred: %s", what);
            } else {
                pending = fired;
                snprintf(pending_what, sizeof pending_what, "%s", what);
            }
        }
        if (pending && (s->last_dump < 0 || ow_now() - s->last_dump >= s->o.min_interval)) {
            if ((pending & OW_T_OOM) && ow_parks(s))
                ow_settle(s);
            int nsaved = ow_dump(s, pending_what);
            s->raws_saved += (unsigned)nsaved;
            s->last_dump = ow_now();
            s->dumps++;
            pending = 0;
            pending_what[0] = 0;
            if (s->o.once) {
                exit_code = nsaved ? OW_EXIT_OK : OW_EXIT_NOTHING;
                break;
            }
        }
        if (s->stop) {
            ow_log("a signal arrived during the dump: exiting");
            break;
        }
        char why[OC_PATH + 128];
        uint64_t kills = ow_oom_kills_since(s);
        if (ow_target_gone(s, why, sizeof why) ||
            (ipid >= 0 && (pfd[ipid].revents & POLLIN) && snprintf(why, sizeof why, "pid %d (%s) ended", s->t.pid,
                                                                    s->t.comm) > 0)) {
            exit_code = gone(s, why, kills);
            break;
        }
    }
    ow_triggers_close(s);
    return exit_code;
}
