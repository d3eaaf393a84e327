/* main.c -- coreextract's command line */
#include "cli.h"
#include "extract_core.h"
#include "live.h"
#include "unwind.h"
#include "output.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"Usage: coreextract [options] CORE [EXE]\n"
"  or:  coreextract [options] --pid PID\n"
"\n"
"Extract the funtrace trace (raw format, see FORMAT.md) from a core file of a\n"
"program linked with the funtrace runtime, or from a live process, without gdb.\n"
"Decode the result with funtrace-decode.\n"
"\n"
"  CORE            core file; `-` reads it from stdin; zstd, lz4 (frame) and xz\n"
"                  compressed cores are recognised by their magic.  A pipe or a\n"
"                  compressed core is read once, keeping only the memory the\n"
"                  trace and the stacks need (no temporary file)\n"
"  EXE             the executable that dumped the core (default: the one named in\n"
"                  the core's NT_FILE note); if it is missing, not an ELF file or\n"
"                  its build-id differs, the root is found by scanning the core's\n"
"                  memory (one warning line when EXE was given)\n"
"  -o, --output FILE\n"
"                  write to FILE (via FILE.tmp, renamed when complete; nothing is\n"
"                  left behind on exit 1, 2 or 4) instead of stdout; binary data\n"
"                  is never written to a terminal\n"
"  -p, --pid PID   read a live process (running, stopped, frozen or OOM-halted)\n"
"                  with process_vm_readv, without stopping it; events that may\n"
"                  have been overwritten while a ring was copied are dropped;\n"
"                  pages it never wrote are not read (they would become its\n"
"                  memory): /proc/PID/pagemap says which\n"
"  -s, --stacks    live mode: also record each thread's stack (stops each thread\n"
"                  briefly with ptrace)\n"
"  -S, --no-stacks\n"
"                  core mode: do not unwind the threads (no FINSTACK chunks)\n"
"      --max-frames N\n"
"                  frames kept per stack (8..1048576, default 512): of a deeper\n"
"                  stack the innermost N - N/8 and the outermost N/8 (at most 64)\n"
"                  are kept and the frames between only counted (the decoder\n"
"                  says how many); stacks deeper than 1048576 are truncated\n"
"  -1, --one-pass  read a core file once, in order, as a pipe is read (what a\n"
"                  core_pattern handler does with `-`)\n"
"  -c, --slim-core FILE\n"
"                  also write FILE: a core of only the memory kept by the\n"
"                  one-pass read (the trace and the stacks; gdb can still bt)\n"
"  -k, --keep-max BYTES\n"
"                  reading a core once (pipe, compressed): keep at most BYTES of\n"
"                  ring-like pages met before the thread registry (K/M/G suffix;\n"
"                  default 1G)\n"
"  -v, --verbose   say what was found and how (root by symbol or scan, counts)\n"
"  -h, --help      this text\n"
"  -V, --version   the version of funtrace and of its file formats\n"
"\n"
"Exit status:\n"
"  0  trace extracted\n"
"  1  the input is fine but holds no funtrace trace (program not linked with\n"
"     the funtrace runtime, or the runtime had not initialised)\n"
"  2  unusable input: not a core, not x86-64/little-endian/64-bit, unreadable\n"
"     file, a core truncated before the trace (its root), no such process,\n"
"     permission denied, bad arguments\n"
"  3  partial: a trace was written but parts are missing (e.g. a truncated core\n"
"     or a core without the ring memory); the raw's header has the PARTIAL flag\n"
"     and stderr says what is missing\n"
"  4  the output could not be written (e.g. -o FILE in a missing directory)\n"
"Every failure prints exactly one line on stderr saying what and where.\n"
"\n"
"Saving only the trace from a crashing process (as root; the kernel pipes the\n"
"core to stdin; write the line to /proc/sys/kernel/core_pattern):\n"
"  |/usr/local/bin/coreextract -o /var/crash/%e-%p.raw -\n"
"The pipe is read once, in order: nothing is written to disk, and memory use\n"
"grows with the rings and stacks, not with the core.\n"
"\n"
"Scheduling states: with the tracefs instance of `funtrace-sched setup`, --pid\n"
"and - (read before the core) also record the scheduling events of the\n"
"process's threads (SCHEDEVT); FUNTRACE_SCHED=DIR names another instance, =off\n"
"none.\n";

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "output", required_argument, 0, 'o' }, { "pid", required_argument, 0, 'p' },
        { "stacks", no_argument, 0, 's' },       { "no-stacks", no_argument, 0, 'S' },
        { "verbose", no_argument, 0, 'v' },      { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },      { "max-frames", required_argument, 0, 'F' },
        { "keep-max", required_argument, 0, 'k' }, { "one-pass", no_argument, 0, '1' },
        { "slim-core", required_argument, 0, 'c' },
        { 0, 0, 0, 0 },
    };
    const char *out = NULL, *pid_s = NULL, *slim = NULL;
    int one_pass = 0;
    uint64_t keep_max = 0;
    int stacks = -1;
    long max_frames = 0;
    int ch;
    cli_init(ce_prog);
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":o:p:sSvhVk:1c:", lo, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'p': pid_s = optarg; break;
        case 's': stacks = 1; break;
        case 'S': stacks = 0; break;
        case 'v': ce_verbose = 1; break;
        case '1': one_pass = 1; break;
        case 'c': slim = optarg; break;
        case 'k':
            if (ce_parse_bytes(optarg, &keep_max) != 0 || keep_max == 0) {
                ce_error("--keep-max wants a size like 512M, not '%s'", optarg);
                return FT_EXIT_BADINPUT;
            }
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        case 'F': {
            char *end;
            max_frames = strtol(optarg, &end, 10);
            if (!*optarg || *end || max_frames < 8 || max_frames > (long)CE_MAX_FRAMES_LIMIT) {
                fprintf(stderr, "%s: --max-frames wants a number of frames from 8 to %u, not '%s'\n", ce_prog,
                        CE_MAX_FRAMES_LIMIT, optarg);
                return FT_EXIT_BADINPUT;
            }
            break;
        }
        case 'V': return cli_version();
        default:
            cli_bad_option(ch, argv);
            return FT_EXIT_BADINPUT;
        }
    }
    int nargs = argc - optind;
    if (pid_s) {
        char *end;
        long pid = strtol(pid_s, &end, 10);
        if (*pid_s == 0 || *end || pid <= 0 || pid > 0x3fffffff) {
            ce_error("--pid wants a process id, not '%s'", pid_s);
            return FT_EXIT_BADINPUT;
        }
        if (nargs) {
            cli_usage_error("--pid takes no CORE argument");
            return FT_EXIT_BADINPUT;
        }
        char err[512];
        struct ce_out o;
        int orc = ce_out_open(&o, out, err, sizeof err);
        if (orc != 0) {
            ce_error("%s", err);
            ce_out_abort(&o);
            return orc;
        }
        struct ft_live_opts lopts = { stacks == 1, ce_verbose, 0, (uint32_t)max_frames };
        struct ft_emit_stats st;
        int rc = ft_live_extract((int)pid, &lopts, &o.w, &st);
        if (rc == FT_EXIT_OK || rc == FT_EXIT_PARTIAL) {
            if (ce_out_commit(&o, err, sizeof err) != 0) {
                ce_error("%s", err);
                ce_out_abort(&o);
                return FT_EXIT_WRITE;
            }
            if (rc == FT_EXIT_PARTIAL) {
                char what[512];
                ce_missing_summary(&st, what, sizeof what);
                ce_error("pid %ld: trace incomplete: %s", pid, what);
            }
        } else {
            ce_error("pid %ld: %s", pid, st.problem[0] ? st.problem : "failed");
        }
        ce_out_abort(&o);
        return rc;
    }
    if (nargs < 1 || nargs > 2) {
        cli_usage_error("%s", nargs < 1 ? "no CORE given" : "too many arguments");
        return FT_EXIT_BADINPUT;
    }
    struct ce_core_opts co = { .core = argv[optind], .exe = nargs == 2 ? argv[optind + 1] : NULL, .out = out,
                               .stacks = stacks != 0, .max_frames = (size_t)max_frames, .keep_max = keep_max,
                               .one_pass = one_pass, .slim = slim };
    return ce_core_extract(&co);
}
