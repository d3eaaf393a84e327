/*
 * funtrace-count -- the report of a call-counting run (funcount.txt, written
 * by a program linked with `funtrace-gcc -funtrace-count`): the functions by
 * number of calls, their share of all calls, size and source location; and a
 * ready exclusion file of the hottest short functions for
 * -funtrace-no-trace=FILE / -funtrace-exclude-list=FILE.
 *
 *   funtrace-count [-n N] [-x FILE] [--max-bytes B] [--min-share P] COUNTS
 *
 * Functions are named from the modules' symbol tables and located with their
 * DWARF line info (libdwfl).  Exit 0, 1 no calls counted, 2 unusable input.
 */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fn {
    char *name;
    const char *file;
    int line;
    uint64_t size, calls;
    int module;
};

struct mod {
    char *path;
    Dwfl *dwfl;
    Dwfl_Module *m;
};

static const char *prog = "funtrace-count";

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(2);
    }
    return p;
}

static const Dwfl_Callbacks offline_cb = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static int by_calls(const void *a, const void *b)
{
    const struct fn *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* the name without the compiler's clone suffix (f.part.0 -> f) */
static char *base_name(const char *n)
{
    const char *dot = strchr(n, '.');
    size_t len = dot && dot != n ? (size_t)(dot - n) : strlen(n);
    char *r = xrealloc(NULL, len + 1);
    memcpy(r, n, len);
    r[len] = 0;
    return r;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: funtrace-count [-n N] [-x FILE] [--max-bytes B] [--min-share P] COUNTS\n"
               "  COUNTS           funcount.txt written by a program linked with -funtrace-count\n"
               "  -n N             show the N most called functions (default 30, 0 = all)\n"
               "  -x, --exclude-out FILE  write the hottest short functions to FILE, one name a\n"
               "                   line, for -funtrace-no-trace=FILE / -funtrace-exclude-list=FILE\n"
               "  --max-bytes B    'short': at most B bytes of code (default 160)\n"
               "  --min-share P    'hot': at least P%% of all calls (default 1)\n"
               "exit status: 0 report written, 1 no calls counted, 2 unusable input\n");
}

int main(int argc, char **argv)
{
    long top = 30;
    const char *in = NULL, *xout = NULL;
    double max_bytes = 160, min_share = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-n")) && i + 1 < argc)
            top = strtol(argv[++i], NULL, 10);
        else if ((!strcmp(a, "-x") || !strcmp(a, "--exclude-out")) && i + 1 < argc)
            xout = argv[++i];
        else if (!strcmp(a, "--max-bytes") && i + 1 < argc)
            max_bytes = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--min-share") && i + 1 < argc)
            min_share = strtod(argv[++i], NULL);
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' || in) {
            usage(stderr);
            return 2;
        } else
            in = a;
    }
    if (!in) {
        usage(stderr);
        return 2;
    }
    FILE *f = fopen(in, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, in, strerror(errno));
        return 2;
    }
    struct mod *mods = NULL;
    size_t nmods = 0;
    struct fn *fns = NULL;
    size_t nfns = 0, capfns = 0;
    uint64_t total = 0, lost = 0, unnamed = 0;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int bad = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#' || !line[0])
            continue;
        unsigned idx;
        int pos;
        unsigned long long c;
        unsigned long vaddr;
        if (line[0] == 'M' && sscanf(line, "M %u %n", &idx, &pos) == 1) {
            if (idx != nmods) {
                bad = 1;
                break;
            }
            mods = xrealloc(mods, (nmods + 1) * sizeof *mods);
            mods[nmods].path = strdup(line + pos);
            mods[nmods].dwfl = dwfl_begin(&offline_cb);
            /* at bias 0: the addresses are the file's */
            mods[nmods].m = mods[nmods].dwfl ? dwfl_report_elf(mods[nmods].dwfl, mods[nmods].path,
                                                               mods[nmods].path, -1, 0, false) : NULL;
            if (mods[nmods].dwfl)
                dwfl_report_end(mods[nmods].dwfl, NULL, NULL);
            if (!mods[nmods].m)
                fprintf(stderr, "%s: warning: cannot read %s: its functions are shown as addresses\n", prog,
                        mods[nmods].path);
            nmods++;
        } else if (line[0] == 'C' && sscanf(line, "C %u %lx %llu", &idx, &vaddr, &c) == 3 && idx < nmods) {
            total += c;
            char buf[64];
            const char *name = NULL;
            GElf_Sym sym;
            GElf_Off off = 0;
            uint64_t size = 0;
            const char *file = NULL;
            int ln = 0;
            if (mods[idx].m) {
                name = dwfl_module_addrinfo(mods[idx].m, vaddr, &off, &sym, NULL, NULL, NULL);
                if (name) {
                    size = sym.st_size;
                    Dwfl_Line *dl = dwfl_module_getsrc(mods[idx].m, vaddr - off);
                    if (dl)
                        file = dwfl_lineinfo(dl, NULL, &ln, NULL, NULL, NULL);
                }
            }
            if (!name) {
                const char *slash = strrchr(mods[idx].path, '/');
                snprintf(buf, sizeof buf, "%.30s+0x%lx", slash ? slash + 1 : mods[idx].path, vaddr & ~7UL);
                name = buf;
                unnamed += c;
            }
            size_t k;
            for (k = 0; k < nfns; k++)
                if (fns[k].module == (int)idx && !strcmp(fns[k].name, name))
                    break;
            if (k == nfns) {
                if (nfns == capfns) {
                    capfns = capfns ? capfns * 2 : 1024;
                    fns = xrealloc(fns, capfns * sizeof *fns);
                }
                fns[nfns++] = (struct fn){strdup(name), file, ln, size, 0, (int)idx};
            }
            fns[k].calls += c;
        } else if (line[0] == 'L' && sscanf(line, "L %llu", &c) == 1) {
            lost = c;
        } else {
            bad = 1;
            break;
        }
    }
    free(line);
    fclose(f);
    if (bad || !nmods) {
        fprintf(stderr, "%s: %s:%ld: not a call-count file (written by a program linked with -funtrace-count)\n",
                prog, in, lineno);
        return 2;
    }
    if (!total) {
        fprintf(stderr, "%s: %s: no calls were counted (no instrumented function ran)\n", prog, in);
        return 1;
    }
    qsort(fns, nfns, sizeof *fns, by_calls);
    printf("%" PRIu64 " calls to %zu functions in %zu modules (%s)", total, nfns, nmods, in);
    if (lost)
        printf("; %" PRIu64 " more from code outside every module", lost);
    if (unnamed)
        printf("; %" PRIu64 " in functions without a symbol", unnamed);
    printf("\n%14s %7s %6s  %s\n", "calls", "share", "bytes", "function  location");
    for (size_t k = 0; k < nfns && (top <= 0 || (long)k < top); k++) {
        printf("%14" PRIu64 " %6.2f%% %6" PRIu64 "  %s", fns[k].calls, 100.0 * fns[k].calls / total, fns[k].size,
               fns[k].name);
        if (fns[k].file)
            printf("  %s:%d", fns[k].file, fns[k].line);
        if (fns[k].module)
            printf("  [%s]", mods[fns[k].module].path);
        putchar('\n');
    }
    int rc = 0;
    if (xout) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", xout);
        FILE *o = fopen(tmp, "w");
        size_t nx = 0;
        uint64_t covered = 0;
        char **seen = NULL;
        if (!o) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, tmp, strerror(errno));
            return 2;
        }
        for (size_t k = 0; k < nfns; k++) {
            if (!fns[k].size || fns[k].size > max_bytes || 100.0 * fns[k].calls / total < min_share)
                continue;
            char *b = base_name(fns[k].name);
            int dup = 0;
            for (size_t j = 0; j < nx; j++)
                dup |= !strcmp(seen[j], b);
            if (dup) {
                free(b);
                continue;
            }
            seen = xrealloc(seen, (nx + 1) * sizeof *seen);
            seen[nx++] = b;
            covered += fns[k].calls;
            fprintf(o, "%s\n", b);
        }
        if (fclose(o) != 0 || rename(tmp, xout) != 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, xout, strerror(errno));
            remove(tmp);
            rc = 2;
        } else {
            printf("%s: %zu functions of at most %.0f bytes with at least %.2g%% of the calls each "
                   "(%.1f%% of all calls)\n", xout, nx, max_bytes, min_share, 100.0 * covered / total);
        }
        for (size_t j = 0; j < nx; j++)
            free(seen[j]);
        free(seen);
    }
    for (size_t k = 0; k < nfns; k++)
        free(fns[k].name);
    free(fns);
    for (size_t m = 0; m < nmods; m++) {
        if (mods[m].dwfl)
            dwfl_end(mods[m].dwfl);
        free(mods[m].path);
    }
    free(mods);
    return rc;
}
