/*
 * main.c -- funtrace-decode command line.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

int decode_main(struct dec_opts *o);

static const char usage[] =
    "usage: funtrace-decode [options] RAW        (RAW = - reads stdin)\n"
    "\n"
    "Rebuilds per-thread call timelines from a funtrace raw file (made by\n"
    "coreextract, funtrace-oomwatch, gdb `funtrace save`, the runtime's\n"
    "snapshots, or the original funtrace's funtrace.raw).\n"
    "\n"
    "output (default: --json trace.json):\n"
    "  -j, --json FILE          Chrome Trace Event JSON for Perfetto UI / vizviewer\n"
    "                           (FILE - = stdout, not with --text/--summary); written\n"
    "                           to FILE.tmp.PID, renamed to FILE once complete\n"
    "  -t, --text               terminal view: header (the signal; the original fault\n"
    "                           when a handler of the program's re-raised or faulted\n"
    "                           again), the last N calls of each thread (crashing\n"
    "                           thread first), final stacks as gdb's bt shows them\n"
    "                           (inlined frames, signal frames; deep ones folded)\n"
    "  -s, --summary            threads, events, generations, what is incomplete and why\n"
    "  -n, --calls N            calls per thread in --text (default 30)\n"
    "      --threads N          threads shown by --text (default all)\n"
    "\n"
    "what to decode:\n"
    "  -g, --generations K      only the last K generations (default: all the rings cover)\n"
    "      --sample N           the N-th trace of a file holding several (0 = first;\n"
    "                           default: the last)\n"
    "  -w, --wallclock          absolute wall-clock times (--text; JSON ts = us since\n"
    "                           local midnight) to line events up with logs\n"
    "\n"
    "symbols and sources:\n"
    "      --substitute-path FROM=TO   rewrite path prefixes of binaries and sources\n"
    "                           (repeatable; the first match wins)\n"
    "      --no-source          do not embed source files in the JSON (file_info)\n"
    "      --no-symbols         do not open binaries: names are module+0xOFFSET of the\n"
    "                           call; a -pg return closes the innermost open -pg call\n"
    "  Binaries are looked up by their recorded path, then by build-id in\n"
    "  /usr/lib/debug/.build-id, then through debuginfod when DEBUGINFOD_URLS is set.\n"
    "\n"
    "  -q, --quiet              no warnings\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status:\n"
    "  0  decoded\n"
    "  1  the input is a complete raw file but holds no trace events (no JSON written)\n"
    "  2  unusable input (not a raw file, unreadable, no such sample), bad arguments,\n"
    "     or out of memory\n"
    "  3  the input is damaged or incomplete (truncated file, corrupt chunk, PARTIAL\n"
    "     producer, lost threads, missing rings): the outputs hold what could be\n"
    "     recovered and --summary/--text say what is missing and why; if no event\n"
    "     could be recovered at all, one line says why and no JSON is written\n"
    "  4  an output could not be written (no partial JSON is left behind)\n"
    "\n"
    "The rules for orphan returns, longjmp, exceptions and tail calls are in the\n"
    "README (section funtrace-decode).\n";

/* an integer option's value (min .. 10^8), or one line on stderr and -1 */
static int int_opt(const char *s, int *out, int min, const char *opt)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > 100000000) {
        fprintf(stderr, "funtrace-decode: bad %s value '%s'\n", opt, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

#define ARGS_OK (-1)

/* the command line into o (o->sym.subst_from/to hold argc entries): ARGS_OK,
 * or the exit status (after one line on stderr, or the help text) */
static int parse_args(int argc, char **argv, struct dec_opts *o)
{
    static const struct option lo[] = {
        {"json", required_argument, 0, 'j'},   {"text", no_argument, 0, 't'},
        {"summary", no_argument, 0, 's'},      {"calls", required_argument, 0, 'n'},
        {"generations", required_argument, 0, 'g'}, {"sample", required_argument, 0, 'S'},
        {"wallclock", no_argument, 0, 'w'},    {"substitute-path", required_argument, 0, 'P'},
        {"no-source", no_argument, 0, 'N'},    {"no-symbols", no_argument, 0, 'Y'},
        {"threads", required_argument, 0, 'T'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    int want_json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "j:tsn:g:wqh", lo, NULL)) != -1) {
        switch (c) {
        case 'j':
            o->json_path = optarg;
            want_json = 1;
            break;
        case 't': o->text = 1; break;
        case 's': o->summary = 1; break;
        case 'w': o->wallclock = 1; break;
        case 'q': o->sym.quiet = 1; break;
        case 'N': o->no_source = 1; break;
        case 'Y': o->sym.no_symbols = 1; break;
        case 'n':
            if (int_opt(optarg, &o->ncalls, 1, "--calls"))
                return EXIT_BAD_INPUT;
            break;
        case 'T':
            if (int_opt(optarg, &o->max_threads_text, 1, "--threads"))
                return EXIT_BAD_INPUT;
            break;
        case 'g':
            if (int_opt(optarg, &o->generations, 1, "--generations"))
                return EXIT_BAD_INPUT;
            break;
        case 'S':
            if (int_opt(optarg, &o->sample, 0, "--sample"))
                return EXIT_BAD_INPUT;
            break;
        case 'P': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "funtrace-decode: --substitute-path wants FROM=TO, got '%s'\n", optarg);
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
        default:
            fprintf(stderr, "funtrace-decode: unknown or incomplete option '%s' (see --help)\n", argv[optind - 1]);
            return EXIT_BAD_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "funtrace-decode: %s (see --help)\n",
                optind >= argc ? "no input file given" : "more than one input file given");
        return EXIT_BAD_INPUT;
    }
    o->input = argv[optind];
    if (!want_json && !o->text && !o->summary)
        o->json_path = "trace.json";
    if (o->json_path && !strcmp(o->json_path, "-") && (o->text || o->summary)) {
        fprintf(stderr, "funtrace-decode: --json - and --%s both write to stdout: give --json a file\n",
                o->text ? "text" : "summary");
        return EXIT_BAD_INPUT;
    }
    return ARGS_OK;
}

int main(int argc, char **argv)
{
    struct dec_opts o;
    memset(&o, 0, sizeof o);
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
    return rc;
}
