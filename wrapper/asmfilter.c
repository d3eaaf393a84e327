/*
 * funtrace-asmfilter -- leave functions out of tracing by editing the assembly
 * the compiler generated (the compiler wrappers run it between `-S` and the
 * assembler when one of the original funtrace's filter flags is given).
 *
 *   funtrace-asmfilter [--thresh N] [--ignore-loops] [--no-trace FILE]...
 *                      [--do-trace FILE]... [-v] [--name WRAPPER] FILE.s
 *
 * The same rules as the original funtrace's flags:
 *  - a function listed in a --do-trace file is kept;
 *  - else a function listed in a --no-trace file is excluded;
 *  - else a function of fewer than N instructions (--thresh N) is excluded
 *    unless it has a loop (a jump back to a label defined earlier in it), or
 *    even then with --ignore-loops.
 * Lists hold whitespace-separated (mangled) symbol names; a name also matches
 * the compiler's clones of the function (NAME.part.0, NAME.isra.0, ...).
 * Excluding a function removes every call to a hook in its code (__fentry__,
 * __return__, __cyg_profile_func_enter/exit), including the hooks of the
 * functions inlined into it; a tail jump to the exit hook becomes a `ret`.
 * A function's cold part (NAME.cold) goes with the function.  The file is
 * rewritten in place only if something changed.  Exit 0, or 2 with one line
 * on stderr (unreadable file or list, bad arguments).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strset.h"

static const char *prog = "funtrace-asmfilter";

static const char *const hooks[] = {"__fentry__", "__return__", "__cyg_profile_func_enter",
                                    "__cyg_profile_func_exit", NULL};

struct region {
    char *name;        /* symbol */
    char *group;       /* symbol without a .cold suffix */
    size_t first, end; /* lines [first, end) */
    long instrs;
    int loop;
};

struct group {
    const char *name;
    long instrs;
    int loop;
    const char *why; /* exclusion reason or NULL */
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(2);
    }
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *r = xrealloc(NULL, n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* "NAME:" at the start of a line (a label); returns its length or 0 */
static size_t label_len(const char *l)
{
    size_t i = 0;
    if (l[0] == '"')
        return 0;
    while (l[i] && (isalnum((unsigned char)l[i]) || l[i] == '_' || l[i] == '.' || l[i] == '$'))
        i++;
    return i && l[i] == ':' ? i : 0;
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* the instruction of a line (after an optional label), or NULL for a
 * directive, a label only, a comment or an empty line */
static const char *insn_of(const char *l)
{
    size_t ll = label_len(l);
    const char *p = skip_ws(ll ? l + ll + 1 : l);
    if (!ll && p == l)
        return NULL; /* instructions are indented */
    if (!*p || *p == '.' || *p == '#' || *p == '/' || *p == ';')
        return NULL;
    return p;
}

/* a token (symbol-ish) equal to one of the hooks occurs in s */
static int mentions_hook(const char *s)
{
    for (int i = 0; hooks[i]; i++) {
        size_t n = strlen(hooks[i]);
        for (const char *q = strstr(s, hooks[i]); q; q = strstr(q + 1, hooks[i])) {
            char before = q == s ? ' ' : q[-1], after = q[n];
            if (!(isalnum((unsigned char)before) || before == '_') &&
                !(isalnum((unsigned char)after) || after == '_'))
                return 1;
        }
    }
    return 0;
}

static int mnemonic_is(const char *insn, const char *m)
{
    size_t n = strlen(m);
    return !strncmp(insn, m, n) && (insn[n] == ' ' || insn[n] == '\t' || insn[n] == 'q');
}

static char *group_of(const char *name)
{
    const char *c = strstr(name, ".cold");
    return xstrndup(name, c ? (size_t)(c - name) : strlen(name));
}

static int listed(const struct strset *s, const char *name)
{
    if (strset_has(s, name))
        return 1;
    const char *dot = strchr(name, '.');
    if (dot && dot != name) {
        char *base = xstrndup(name, (size_t)(dot - name));
        int r = strset_has(s, base);
        free(base);
        return r;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long thresh = 0;
    int ignore_loops = 0, verbose = 0;
    const char *path = NULL;
    struct strset no, yes;
    strset_init(&no);
    strset_init(&yes);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--thresh") && i + 1 < argc) {
            char *end;
            errno = 0;
            thresh = strtol(argv[++i], &end, 10);
            if (errno || *end || thresh < 0) {
                fprintf(stderr, "%s: --thresh wants a non-negative number (got '%s')\n", prog, argv[i]);
                return 2;
            }
        } else if ((!strcmp(a, "--no-trace") || !strcmp(a, "--do-trace")) && i + 1 < argc) {
            if (strset_add_file(a[2] == 'n' ? &no : &yes, argv[++i]) < 0) {
                fprintf(stderr, "%s: cannot read the function list %s: %s\n", prog, argv[i], strerror(errno));
                return 2;
            }
        } else if (!strcmp(a, "--ignore-loops")) {
            ignore_loops = 1;
        } else if (!strcmp(a, "-v")) {
            verbose = 1;
        } else if (!strcmp(a, "--name") && i + 1 < argc) {
            prog = argv[++i];
        } else if (a[0] == '-' || path) {
            fprintf(stderr, "usage: funtrace-asmfilter [--thresh N] [--ignore-loops] [--no-trace FILE]... "
                    "[--do-trace FILE]... [-v] FILE.s\n");
            return 2;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: funtrace-asmfilter [--thresh N] [--ignore-loops] [--no-trace FILE]... "
                "[--do-trace FILE]... [-v] FILE.s\n");
        return 2;
    }

    /* read the file as lines */
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        return 2;
    }
    char **lines = NULL;
    size_t nl = 0, capl = 0;
    char *buf = NULL;
    size_t bufcap = 0;
    ssize_t got;
    while ((got = getline(&buf, &bufcap, f)) >= 0) {
        if (nl == capl) {
            capl = capl ? capl * 2 : 4096;
            lines = xrealloc(lines, capl * sizeof *lines);
        }
        lines[nl++] = xstrndup(buf, (size_t)got);
    }
    free(buf);
    fclose(f);

    /* pass 1: function regions, their instruction counts and loops */
    struct strset typed;
    strset_init(&typed);
    struct region *rs = NULL;
    size_t nr = 0, capr = 0;
    char **labels = NULL;
    size_t nlab = 0, caplab = 0;
    struct region *cur = NULL;
    for (size_t i = 0; i < nl; i++) {
        const char *l = lines[i];
        const char *t = skip_ws(l);
        if (!strncmp(t, ".type", 5) && (t[5] == ' ' || t[5] == '\t') && strstr(t, "@function")) {
            const char *n = skip_ws(t + 5);
            size_t len = strcspn(n, ", \t");
            char *nm = xstrndup(n, len);
            strset_add(&typed, nm);
            free(nm);
            continue;
        }
        if (!strncmp(t, ".size", 5) && cur) {
            const char *n = skip_ws(t + 5);
            size_t len = strcspn(n, ", \t");
            if (len == strlen(cur->name) && !strncmp(n, cur->name, len)) {
                cur->end = i;
                cur = NULL;
            }
            continue;
        }
        size_t ll = label_len(l);
        if (ll) {
            char *nm = xstrndup(l, ll);
            if (strset_has(&typed, nm)) {
                if (cur)
                    cur->end = i;
                if (nr == capr) {
                    capr = capr ? capr * 2 : 256;
                    rs = xrealloc(rs, capr * sizeof *rs);
                }
                rs[nr] = (struct region){nm, group_of(nm), i, nl, 0, 0};
                cur = &rs[nr++];
                for (size_t k = 0; k < nlab; k++)
                    free(labels[k]);
                nlab = 0;
                continue;
            }
            if (cur) {
                if (nlab == caplab) {
                    caplab = caplab ? caplab * 2 : 64;
                    labels = xrealloc(labels, caplab * sizeof *labels);
                }
                labels[nlab++] = nm;
            } else {
                free(nm);
            }
        }
        const char *insn = insn_of(l);
        if (!cur || !insn)
            continue;
        cur->instrs++;
        if (insn[0] == 'j' && !cur->loop) {
            const char *op = insn;
            while (*op && *op != ' ' && *op != '\t')
                op++;
            op = skip_ws(op);
            size_t len = strcspn(op, " \t\r\n#");
            for (size_t k = 0; k < nlab; k++)
                if (strlen(labels[k]) == len && !strncmp(labels[k], op, len))
                    cur->loop = 1;
        }
    }
    for (size_t k = 0; k < nlab; k++)
        free(labels[k]);
    free(labels);

    /* decide per group (a function with its cold part) */
    struct group *gs = xrealloc(NULL, nr * sizeof *gs);
    size_t ng = 0;
    for (size_t r = 0; r < nr; r++) {
        size_t g;
        for (g = 0; g < ng; g++)
            if (!strcmp(gs[g].name, rs[r].group))
                break;
        if (g == ng)
            gs[ng++] = (struct group){rs[r].group, 0, 0, NULL};
        gs[g].instrs += rs[r].instrs;
        gs[g].loop |= rs[r].loop;
    }
    static char whybuf[256];
    for (size_t g = 0; g < ng; g++) {
        const char *why = NULL;
        if (listed(&yes, gs[g].name))
            why = NULL;
        else if (listed(&no, gs[g].name))
            why = "listed in -funtrace-no-trace";
        else if (thresh && gs[g].instrs < thresh && (!gs[g].loop || ignore_loops)) {
            snprintf(whybuf, sizeof whybuf, "%ld instructions < -funtrace-instr-thresh=%ld%s", gs[g].instrs,
                     thresh, gs[g].loop ? " (has loops, -funtrace-ignore-loops)" : "");
            why = strdup(whybuf);
        }
        gs[g].why = why;
        if (verbose && why)
            fprintf(stderr, "%s: %s: not traced: %s: %s\n", prog, path, gs[g].name, why);
    }

    /* pass 2: remove the hook calls of excluded functions */
    int changed = 0;
    for (size_t r = 0; r < nr; r++) {
        const char *why = NULL;
        for (size_t g = 0; g < ng; g++)
            if (!strcmp(gs[g].name, rs[r].group))
                why = gs[g].why;
        if (!why)
            continue;
        for (size_t i = rs[r].first; i < rs[r].end; i++) {
            const char *insn = insn_of(lines[i]);
            if (!insn || !mentions_hook(insn))
                continue;
            int is_call = mnemonic_is(insn, "call"), is_jmp = mnemonic_is(insn, "jmp");
            if (!is_call && !is_jmp)
                continue;
            size_t keep = (size_t)(insn - lines[i]); /* a label before it stays */
            size_t ilen = strcspn(insn, "\r\n");
            size_t need = keep + ilen + 64;
            char *nl2 = xrealloc(NULL, need);
            snprintf(nl2, need, "%.*s%s# funtrace: %.*s\n", (int)keep, lines[i], is_jmp ? "ret\t" : "",
                     (int)ilen, insn);
            free(lines[i]);
            lines[i] = nl2;
            changed = 1;
        }
    }
    int rc = 0;
    if (changed) {
        size_t plen = strlen(path);
        char *tmp = xrealloc(NULL, plen + 16);
        snprintf(tmp, plen + 16, "%s.ftf.tmp", path);
        FILE *o = fopen(tmp, "w");
        if (!o) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, tmp, strerror(errno));
            return 2;
        }
        for (size_t i = 0; i < nl; i++)
            fputs(lines[i], o);
        if (fclose(o) != 0 || rename(tmp, path) != 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
            remove(tmp);
            rc = 2;
        }
        free(tmp);
    }
    for (size_t i = 0; i < nl; i++)
        free(lines[i]);
    free(lines);
    for (size_t r = 0; r < nr; r++) {
        free(rs[r].name);
        free(rs[r].group);
    }
    free(rs);
    free(gs);
    strset_free(&typed);
    strset_free(&no);
    strset_free(&yes);
    return rc;
}
