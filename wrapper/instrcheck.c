/*
 * funtrace-instrcheck -- how many functions of a linked executable call the
 * tracing hooks.  The compiler wrappers run it after linking an executable so
 * that a build which silently lost its instrumentation (LTO objects compiled
 * without the wrapper, a link-time code generation that did not get the flags,
 * objects from a plain-gcc static library) is reported in one line instead of
 * producing a program with an empty trace.
 *
 *   funtrace-instrcheck [--runtime LIB.a]... [--quiet] [-v] [--xray] [--name WRAPPER] EXE
 *
 * Counts the defined functions of EXE (.symtab, else .dynsym) that contain a
 * direct call (E8 rel32, also the 67 E8 form of a relaxed GOT call) to one of
 * the hooks (__fentry__, __cyg_profile_func_enter), or an XRay entry sled
 * (listed in the xray_instr_map section: FUNTRACE_INSTR=xray, whose sleds the
 * runtime patches into calls of __fentry__ at run time), leaving out the functions
 * defined by the runtime archives named with --runtime, reserved names (__*)
 * and what the C start files and libgcc add.
 * Prints "N of M functions instrumented" (without --quiet; -v also lists the
 * functions that are not) and, when none or
 * under 5% of at least 20 functions are, one warning line on stderr.
 * Exit status: 0 checked (warning or not), 1 EXE has no hooks at all (not
 * linked with the runtime: nothing to say), 2 unreadable input.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "strset.h"

struct fn {
    uint64_t lo, hi;
    const char *name;
    int instrumented;
};

static int fn_cmp(const void *a, const void *b)
{
    const struct fn *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* functions the C start files, libgcc.a and libc_nonshared.a add (besides
 * the reserved "__" names, which are all left out) */
static const char *const crt_names[] = {
    "_start", "_init", "_fini", "deregister_tm_clones", "register_tm_clones",
    "frame_dummy", "_dl_relocate_static_pie", "atexit", "at_quick_exit", "pthread_atfork", NULL,
};

/* every defined symbol of every member of the archive LIB goes into set */
static int add_archive_names(const char *lib, struct strset *set)
{
    int fd = open(lib, O_RDONLY);
    if (fd < 0)
        return -1;
    Elf *ar = elf_begin(fd, ELF_C_READ, NULL);
    if (!ar || elf_kind(ar) != ELF_K_AR) {
        if (ar)
            elf_end(ar);
        close(fd);
        return -1;
    }
    Elf *m;
    Elf_Cmd cmd = ELF_C_READ;
    while ((m = elf_begin(fd, cmd, ar)) != NULL) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(m, scn)) != NULL) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
                continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
            for (size_t i = 0; d && i < n; i++) {
                GElf_Sym s;
                if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
                    GELF_ST_TYPE(s.st_info) != STT_FUNC)
                    continue;
                const char *nm = elf_strptr(m, sh.sh_link, s.st_name);
                if (nm && *nm)
                    strset_add(set, nm);
            }
        }
        cmd = elf_next(m);
        elf_end(m);
    }
    elf_end(ar);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = "funtrace-instrcheck", *exe = NULL;
    int quiet = 0, verbose = 0, xray = 0;
    struct strset runtime;
    strset_init(&runtime);
    elf_version(EV_CURRENT);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runtime") && i + 1 < argc) {
            if (add_archive_names(argv[++i], &runtime) != 0) {
                fprintf(stderr, "%s: cannot read the runtime archive %s\n", name, argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
            name = argv[++i];
        } else if (!strcmp(argv[i], "-v")) {
            verbose = 1;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (!strcmp(argv[i], "--xray")) {
            xray = 1;
        } else if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
            cli_init("funtrace-instrcheck");
            return cli_version();
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("Usage: funtrace-instrcheck [--runtime LIB.a]... [--quiet] [-v] [--xray] [--name WRAPPER] EXE\n"
                   "Counts the functions of EXE that call the funtrace hooks (or have an XRay entry sled);\n"
                   "warns (one line on stderr) when none, or under 5%% of at least 20, do.  --xray: EXE\n"
                   "was built with FUNTRACE_INSTR=xray (the warning names clang's threshold).\n"
                   "Exit 0 checked, 1 no hooks in EXE, 2 unreadable input.\n"
                   "  -V, --version   the version of funtrace and of its file formats\n");
            return 0;
        } else if (argv[i][0] == '-' || exe) {
            cli_init(name);
            cli_usage_error(argv[i][0] == '-' ? "unknown option '%s'" : "more than one input given ('%s')", argv[i]);
            return 2;
        } else {
            exe = argv[i];
        }
    }
    if (!exe) {
        fprintf(stderr, "%s: usage: funtrace-instrcheck [--runtime LIB.a]... [--quiet] EXE\n", name);
        return 2;
    }
    for (int i = 0; crt_names[i]; i++)
        strset_add(&runtime, crt_names[i]);

    int fd = open(exe, O_RDONLY);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    if (!e || elf_kind(e) != ELF_K_ELF) {
        fprintf(stderr, "%s: %s: not a readable ELF file\n", name, exe);
        return 2;
    }
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0) {
        fprintf(stderr, "%s: %s: no section headers\n", name, exe);
        return 2;
    }
    /* the symbol table: .symtab, else .dynsym (a stripped executable) */
    Elf_Scn *symscn = NULL, *dynscn = NULL, *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_SYMTAB)
            symscn = scn;
        else if (sh.sh_type == SHT_DYNSYM)
            dynscn = scn;
    }
    if (!symscn)
        symscn = dynscn;
    uint64_t hooks[2] = {0, 0};
    struct fn *fns = NULL;
    size_t nfns = 0, capfns = 0;
    if (symscn) {
        GElf_Shdr sh;
        gelf_getshdr(symscn, &sh);
        Elf_Data *d = elf_getdata(symscn, NULL);
        size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; d && i < n; i++) {
            GElf_Sym s;
            if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
                continue;
            const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
            if (!nm)
                continue;
            if (!strcmp(nm, "__fentry__"))
                hooks[0] = s.st_value;
            else if (!strcmp(nm, "__cyg_profile_func_enter"))
                hooks[1] = s.st_value;
            if (GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size || !strncmp(nm, "__", 2) ||
                strset_has(&runtime, nm))
                continue;
            if (nfns == capfns) {
                capfns = capfns ? capfns * 2 : 1024;
                fns = realloc(fns, capfns * sizeof *fns);
                if (!fns) {
                    fprintf(stderr, "%s: out of memory\n", name);
                    return 2;
                }
            }
            fns[nfns++] = (struct fn){s.st_value, s.st_value + s.st_size, nm, 0};
        }
    }
    if (!hooks[0] && !hooks[1]) {
        if (!quiet)
            printf("%s: no funtrace hooks defined\n", exe);
        return 1;
    }
    qsort(fns, nfns, sizeof *fns, fn_cmp);
    /* drop aliases (same start): keep one entry per address */
    size_t w = 0;
    for (size_t i = 0; i < nfns; i++)
        if (!w || fns[w - 1].lo != fns[i].lo)
            fns[w++] = fns[i];
    nfns = w;

    size_t sites = 0, cur = 0;
    scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || d->d_size < 5)
            continue;
        const uint8_t *p = d->d_buf;
        cur = 0;
        for (size_t off = 0; off + 5 <= d->d_size; off++) {
            if (p[off] != 0xE8)
                continue;
            int32_t rel;
            memcpy(&rel, p + off + 1, 4);
            uint64_t at = sh.sh_addr + off, tgt = at + 5 + (int64_t)rel;
            if (tgt != hooks[0] && tgt != hooks[1])
                continue;
            sites++;
            /* functions are sorted and sites come in address order */
            while (cur < nfns && fns[cur].hi <= at)
                cur++;
            if (cur < nfns && fns[cur].lo <= at)
                fns[cur].instrumented = 1;
            else {
                /* a site before the cursor: search (sections are not ordered) */
                size_t lo = 0, hi = nfns;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (fns[mid].hi <= at)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < nfns && fns[lo].lo <= at)
                    fns[lo].instrumented = 1;
                cur = lo;
            }
        }
    }
    /* XRay: the entry sleds (kind 0, or 3 with argument logging) */
    scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        const char *sn;
        if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(sn, "xray_instr_map"))
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        xray = 1;
        for (size_t off = 0; d && d->d_buf && off + 32 <= d->d_size; off += 32) {
            const uint8_t *en = (const uint8_t *)d->d_buf + off;
            uint64_t a;
            memcpy(&a, en, 8);
            if (en[18] >= 2) /* version 2: relative to the entry */
                a += sh.sh_addr + off;
            if (en[16] != 0 && en[16] != 3)
                continue;
            sites++;
            size_t lo = 0, hi = nfns;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (fns[mid].hi <= a)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < nfns && fns[lo].lo <= a)
                fns[lo].instrumented = 1;
        }
    }
    size_t ninstr = 0;
    for (size_t i = 0; i < nfns; i++)
        ninstr += fns[i].instrumented;
    if (!quiet)
        printf("%s: %zu of %zu functions instrumented (%zu hook call sites)\n", exe, ninstr, nfns, sites);
    for (size_t i = 0; verbose && i < nfns; i++)
        if (!fns[i].instrumented)
            printf("not instrumented: %s\n", fns[i].name);
    const char *why = xray ? "clang's XRay leaves out the functions of fewer than -fxray-instruction-threshold=N "
                             "instructions (default 200; N=1 traces all), and objects compiled without the "
                             "funtrace wrappers"
                           : "were its objects compiled without the funtrace wrappers (e.g. LTO objects or a static "
                             "library built with the plain compiler)?";
    if (sites == 0)
        fprintf(stderr, "%s: warning: %s: no function is instrumented (no calls to the funtrace hooks), so "
                "nothing will be traced: %s\n", name, exe, why);
    else if (nfns >= 20 && ninstr * 20 < nfns)
        fprintf(stderr, "%s: warning: %s: only %zu of %zu functions are instrumented: %s\n",
                name, exe, ninstr, nfns, why);
    free(fns);
    strset_free(&runtime);
    elf_end(e);
    close(fd);
    return 0;
}
