/*
 * main.c -- funtrace-decode command line.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "decode.h"
#include "xalloc.h"

static const char usage[] =
    "Usage: funtrace-decode [OPTION]... RAW        (RAW - reads stdin)\n"
    "\n"
    "Rebuilds per-thread call timelines from a funtrace raw file (made by\n"
    "coreextract, funtrace-oomwatch, gdb `funtrace save`, the runtime's\n"
    "snapshots, or the original funtrace's funtrace.raw).\n"
    "\n"
    "Views (any of them together; with none, --text):\n"
    "  -t, --text               terminal view: header (the signal; the original fault\n"
    "                           when a handler of the program's re-raised or faulted\n"
    "                           again), the last N calls of each thread (crashing\n"
    "                           thread first), final stacks as gdb's bt shows them\n"
    "                           (inlined and tail-call frames, signal frames; deep ones\n"
    "                           folded); reads only the end of each ring\n"
    "  -s, --summary            threads, events, generations, what is incomplete and why\n"
    "  -r, --report             per function: calls, total, self, max and average time,\n"
    "                           source location; sorted by self time (see --sort)\n"
    "  -j, --json FILE          Chrome Trace Event JSON for Perfetto UI / vizviewer\n"
    "  -p, --perfetto FILE      native Perfetto trace (protobuf): smaller and faster to\n"
    "                           load than the JSON\n"
    "  -f, --flamegraph FILE    folded stacks (\"a;b;c NS\", self time in ns) for\n"
    "                           flamegraph.pl, speedscope or Perfetto\n"
    "  -n, --calls N            calls per thread in --text (default 30)\n"
    "      --threads N          threads shown by --text (default all)\n"
    "      --sort KEY           the order of --report: self (default), total, calls,\n"
    "                           max, avg, name\n"
    "      --by-thread          one table per thread in --report; each stack starts\n"
    "                           with its thread in --flamegraph\n"
    "\n"
    "A FILE of - is stdout (then no other view may print); a FILE is written to\n"
    "FILE.tmp.PID and renamed to FILE once complete.\n"
    "\n"
    "Filters (for every view; they combine):\n"
    "      --tid TID[,TID...]   only these threads\n"
    "  -F, --function REGEX     only calls of matching functions, with what they call\n"
    "                           (repeatable); depths count from the match\n"
    "  -N, --not-function REGEX\n"
    "                           not the calls of matching functions, nor what they\n"
    "                           call (repeatable)\n"
    "      --since TIME         only what ran from TIME on (calls cut at TIME)\n"
    "      --until TIME         only what ran until TIME\n"
    "      --depth N            only calls less than N frames deep\n"
    "      --min-duration DUR   only calls that lasted DUR or more (DUR: 10us, 1.5ms,\n"
    "                           2s, 100ns)\n"
    "\n"
    "TIME is -DURATION before the end of the trace (-50ms), +DURATION after the\n"
    "start of what is shown (+2s), or a local wall-clock time HH:MM:SS[.frac] or\n"
    "'YYYY-MM-DD HH:MM:SS[.frac]'.  REGEX is POSIX extended and unanchored; it\n"
    "matches a function's name with or without its C++ parameter list ('^ns::f$'\n"
    "matches ns::f(int)).\n"
    "\n"
    "What to decode:\n"
    "  -g, --generations K      only the last K generations (default: all the rings cover)\n"
    "      --sample N           the N-th trace of a file holding several (0 = first;\n"
    "                           default: the last)\n"
    "  -w, --wallclock          absolute wall-clock times (--text; JSON ts = us since\n"
    "                           local midnight) to line events up with logs\n"
    "\n"
    "Symbols and sources:\n"
    "      --substitute-path FROM=TO\n"
    "                           rewrite path prefixes of binaries and sources\n"
    "                           (repeatable; the first match wins)\n"
    "      --no-source          do not embed source files in the JSON (file_info)\n"
    "      --no-symbols         do not open binaries: names are module+0xOFFSET of the\n"
    "                           call; a -pg return closes the innermost open -pg call\n"
    "\n"
    "      --debug-dir DIR      separate debug files by build-id are in\n"
    "                           DIR/.build-id/xx/yyyy.debug (default /usr/lib/debug)\n"
    "\n"
    "Binaries are looked up by their recorded path, then by build-id in the debug\n"
    "directory, then through debuginfod when DEBUGINFOD_URLS is set.  Compressed\n"
    "debug files are inflated once and kept in $FUNTRACE_CACHE_DIR/debug (default\n"
    "$XDG_CACHE_HOME/funtrace or ~/.cache/funtrace; FUNTRACE_CACHE_DIR= for none);\n"
    "a copy no decode has used for 30 days is removed when a new one is written.\n"
    "\n"
    "Other options:\n"
    "  -q, --quiet              no warnings\n"
    "      --reference-replay   rebuild the stacks without the decoder's fast paths\n"
    "                           (slower; the outputs are the same: a check of the\n"
    "                           decoder itself, for a suspected decoding bug)\n"
    "  -h, --help               this text\n"
    "  -V, --version            the version of funtrace and of its file formats\n"
    "\n"
    "exit status:\n"
    "  0  decoded\n"
    "  1  the input is a complete raw file but holds no trace events (no JSON written)\n"
    "  2  unusable input (not a raw file, unreadable, no such sample, a file that\n"
    "     another program truncated while it was being read: no output file is\n"
    "     left), bad arguments, or out of memory\n"
    "  3  the input is damaged or incomplete (truncated file, corrupt chunk, PARTIAL\n"
    "     producer, lost threads, missing rings): the outputs hold what could be\n"
    "     recovered and --summary/--text say what is missing and why; if no event\n"
    "     could be recovered at all, one line says why and no JSON is written\n"
    "  4  an output could not be written (no partial JSON is left behind)\n"
    "\n"
    "A decode that runs longer than about a second shows its progress on stderr\n"
    "when stderr is a terminal.  The rules for orphan returns, longjmp, exceptions\n"
    "and tail calls are in the README (section funtrace-decode).\n";

/* an integer option's value (min .. 10^8), or a usage error and -1 */
static int int_opt(const char *s, int *out, int min, const char *opt)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > 100000000) {
        cli_usage_error("bad %s value '%s': give a whole number from %d", opt, s, min);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int sort_key(const char *s)
{
    static const char *const keys[] = {"self", "total", "calls", "max", "avg", "name"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(s, keys[i]))
            return i;
    return -1;
}

#define ARGS_OK (-1)

enum {
    O_SAMPLE = 256, O_SUBST, O_DEBUGDIR, O_NOSRC, O_NOSYM, O_THREADS, O_SORT, O_BYTHREAD, O_TID, O_SINCE, O_UNTIL, O_DEPTH,
    O_MINDUR, O_REFREPLAY,
};

/* -F/-N values: collected into a list of argc entries */
static void add_re(const char ***list, size_t *n, int argc, const char *re)
{
    if (!*list)
        *list = xcalloc((size_t)argc, sizeof **list);
    (*list)[(*n)++] = re;
}

/* the views that print on stdout (FILE "-" included): at most one of the
 * files, or any of text/summary/report */
static int check_stdout(const struct dec_opts *o)
{
    const char *files[] = {o->json_path, o->perfetto_path, o->flame_path};
    const char *names[] = {"--json", "--perfetto", "--flamegraph"};
    const char *who = NULL, *other = o->text ? "--text" : o->summary ? "--summary" : o->report ? "--report" : NULL;
    for (int i = 0; i < 3; i++) {
        if (!files[i] || strcmp(files[i], "-"))
            continue;
        if (who)
            other = names[i];
        else
            who = names[i];
    }
    if (who && other) {
        cli_usage_error("%s - and %s both write to stdout: give %s a file", who, other, who);
        return -1;
    }
    return 0;
}

/* the command line into o (o->sym.subst_from/to hold argc entries): ARGS_OK,
 * or the exit status (after one line on stderr, or the help text) */
static int parse_args(int argc, char **argv, struct dec_opts *o)
{
    static const struct option lo[] = {
        {"json", required_argument, 0, 'j'},      {"perfetto", required_argument, 0, 'p'},
        {"flamegraph", required_argument, 0, 'f'}, {"text", no_argument, 0, 't'},
        {"summary", no_argument, 0, 's'},         {"report", no_argument, 0, 'r'},
        {"calls", required_argument, 0, 'n'},     {"generations", required_argument, 0, 'g'},
        {"sample", required_argument, 0, O_SAMPLE}, {"wallclock", no_argument, 0, 'w'},
        {"substitute-path", required_argument, 0, O_SUBST}, {"debug-dir", required_argument, 0, O_DEBUGDIR},
        {"no-source", no_argument, 0, O_NOSRC},
        {"no-symbols", no_argument, 0, O_NOSYM},  {"threads", required_argument, 0, O_THREADS},
        {"sort", required_argument, 0, O_SORT},   {"by-thread", no_argument, 0, O_BYTHREAD},
        {"tid", required_argument, 0, O_TID},     {"function", required_argument, 0, 'F'},
        {"not-function", required_argument, 0, 'N'}, {"since", required_argument, 0, O_SINCE},
        {"until", required_argument, 0, O_UNTIL}, {"depth", required_argument, 0, O_DEPTH},
        {"min-duration", required_argument, 0, O_MINDUR}, {"quiet", no_argument, 0, 'q'},
        {"reference-replay", no_argument, 0, O_REFREPLAY},
        {"help", no_argument, 0, 'h'},            {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0},
    };
    int c;
    const char *why;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":j:p:f:tsrn:g:wF:N:qhV", lo, NULL)) != -1) {
        switch (c) {
        case 'j': o->json_path = optarg; break;
        case 'p': o->perfetto_path = optarg; break;
        case 'f': o->flame_path = optarg; break;
        case 't': o->text = 1; break;
        case 's': o->summary = 1; break;
        case 'r': o->report = 1; break;
        case 'w': o->wallclock = 1; break;
        case 'q': o->sym.quiet = 1; break;
        case O_NOSRC: o->no_source = 1; break;
        case O_DEBUGDIR: o->sym.debug_dir = optarg; break;
        case O_NOSYM: o->sym.no_symbols = 1; break;
        case O_REFREPLAY: o->reference_replay = 1; break;
        case O_BYTHREAD: o->by_thread = 1; break;
        case O_TID: o->tids = optarg; break;
        case 'F': add_re(&o->func_re, &o->nfunc_re, argc, optarg); break;
        case 'N': add_re(&o->not_func_re, &o->nnot_func_re, argc, optarg); break;
        case 'n':
            if (int_opt(optarg, &o->ncalls, 1, "--calls"))
                return EXIT_BAD_INPUT;
            break;
        case O_THREADS:
            if (int_opt(optarg, &o->max_threads_text, 1, "--threads"))
                return EXIT_BAD_INPUT;
            break;
        case 'g':
            if (int_opt(optarg, &o->generations, 1, "--generations"))
                return EXIT_BAD_INPUT;
            break;
        case O_SAMPLE:
            if (int_opt(optarg, &o->sample, 0, "--sample"))
                return EXIT_BAD_INPUT;
            break;
        case O_DEPTH:
            if (int_opt(optarg, &o->depth, 1, "--depth"))
                return EXIT_BAD_INPUT;
            break;
        case O_SORT:
            if ((o->sort = sort_key(optarg)) < 0) {
                cli_usage_error("bad --sort value '%s': give self, total, calls, max, avg or name", optarg);
                return EXIT_BAD_INPUT;
            }
            break;
        case O_MINDUR:
            if (ta_duration(optarg, &o->min_dur) || o->min_dur <= 0) {
                cli_usage_error("bad --min-duration value '%s': give a duration with its unit, e.g. 10us, "
                                "1.5ms, 2s", optarg);
                return EXIT_BAD_INPUT;
            }
            break;
        case O_SINCE:
        case O_UNTIL:
            if (ta_point(optarg, c == O_SINCE ? &o->since : &o->until, &why)) {
                cli_usage_error("bad %s value '%s': %s", c == O_SINCE ? "--since" : "--until", optarg, why);
                return EXIT_BAD_INPUT;
            }
            break;
        case O_SUBST: {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                cli_usage_error("--substitute-path wants FROM=TO, got '%s'", optarg);
                return EXIT_BAD_INPUT;
            }
            *eq = 0;
            o->sym.subst_from[o->sym.nsubst] = optarg;
            o->sym.subst_to[o->sym.nsubst++] = eq + 1;
            break;
        }
        case 'h':
            fputs(usage, stdout);
            return EXIT_OK;
        case 'V':
            return cli_version();
        default:
            cli_bad_option(c, argv);
            return EXIT_BAD_INPUT;
        }
    }
    if (optind != argc - 1) {
        cli_usage_error("%s", optind >= argc ? "no input file given" : "more than one input file given");
        return EXIT_BAD_INPUT;
    }
    o->input = argv[optind];
    if (!o->json_path && !o->perfetto_path && !o->flame_path && !o->text && !o->summary && !o->report)
        o->text = 1; /* the default view: nothing is written into the current directory */
    if (check_stdout(o))
        return EXIT_BAD_INPUT;
    return ARGS_OK;
}

int main(int argc, char **argv)
{
    struct dec_opts o;
    memset(&o, 0, sizeof o);
    cli_init("funtrace-decode");
    o.ncalls = 30;
    o.sample = -1;
    o.sym.subst_from = xcalloc((size_t)argc, sizeof *o.sym.subst_from);
    o.sym.subst_to = xcalloc((size_t)argc, sizeof *o.sym.subst_to);
    int rc = parse_args(argc, argv, &o);
    if (rc == ARGS_OK) {
        signal(SIGXFSZ, SIG_IGN); /* a file size limit: a write error (exit 4), not a kill */
        rc = decode_main(&o);
    }
    free(o.sym.subst_from);
    free(o.sym.subst_to);
    free(o.func_re);
    free(o.not_func_re);
    return rc;
}
