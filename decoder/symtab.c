/*
 * symtab.c -- see symtab.h
 */
#define _GNU_SOURCE
#include "symtab.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbginflate.h"
#include "demangle.h"
#include "pltname.h"
#include "symwarm.h"
#include "xalloc.h"

struct modfile {
    char *path;    /* as recorded in the trace */
    char *name;    /* basename, for module+0xoff names */
    uint8_t bid[FT_BUILD_ID_MAX];
    uint32_t bidlen;
    int state;     /* 0 untried, 1 open, 2 failed */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    /* CU address ranges, for CUs that .debug_aranges does not cover (clang) */
    struct curange *cur;
    size_t ncur;
    int cur_built;
    int comment_clang; /* 0 unknown, 1 .comment names clang, 2 not */
    int syms_indexed; /* its function symbols are in symtab.symnames */
    atomic_int warm;  /* claim word for the warming thread (symwarm.h) */
};

struct curange {
    uint64_t lo, hi;
    Dwarf_Off off;
};

struct seg {
    uint64_t start, end;
    uint32_t inst;
};

struct modinst {
    int32_t file;
    uint64_t bias;
    int bias_state; /* 0 unknown (mapping: computed on open), 1 known, 2 unknown for good */
    uint64_t gen_lo, gen_hi;
    int from_map;
    uint64_t map_start, map_off;
};

struct space {
    uint64_t gen;
    int synthetic;
    struct seg *segs;
    size_t nsegs;
};

struct symtab {
    struct symtab_hot hot; /* must stay first */
    const struct ftr_trace *t;
    struct sym_opts opts;
    sym_warn_fn warn;
    void *wctx;
    struct modfile *files;
    size_t nfiles, files_cap;
    struct modinst *insts;
    size_t ninsts, insts_cap;
    struct seg *modsegs; /* every MODULES segment (all generations) */
    size_t nmodsegs;
    struct seg *mapsegs; /* executable mappings */
    size_t nmapsegs;
    struct space *spaces;
    size_t nspaces, spaces_cap;
    struct func *funcs;
    size_t nfuncs, funcs_cap;
    struct hmap vaddr_cache; /* (file, vaddr) -> func */
    struct hmap sym_cache;   /* (file, symbol start) -> func */
    struct smap match_ids;   /* "file\1name" -> match id */
    uint32_t nmatch;
    struct smap names;       /* display name -> first func with it */
    struct smap strings;     /* interned source paths */
    struct smap symnames;    /* "file\1symbol" -> index in symaddrs (inlined callers, sym_frames) */
    uint64_t *symaddrs;
    size_t nsymaddrs, symaddrs_cap;
    struct smap inlined;     /* "file\1name" -> func id of an inlined function without a symbol */
    struct smap specials;    /* marker name -> func id (sym_special) */
    struct hmap frames_cache; /* (space << 1 | exact, pc) -> index in fc (sym_frames) */
    struct sym_frame *fc;     /* cached frames: fc[i] = count, then the frames */
    size_t nfc, fc_cap;
    char **strs;
    size_t nstrs, strs_cap;
    char *debuginfo_path;
    Dwfl_Callbacks cb;
    struct sym_stats stats;
    void *dbgd_lib;
    void *dbgd_client;
    struct symwarm *warm; /* sym_warm's thread (files[] is not reallocated after sym_new) */
};

static void swarn(struct symtab *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void swarn(struct symtab *s, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (!s->warn || s->opts.quiet)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->warn(s->wctx, msg);
}

static const char *intern(struct symtab *s, const char *str)
{
    uint32_t i = sm_get(&s->strings, str);
    if (i != HMAP_NONE)
        return s->strs[i];
    s->strs = xgrow(s->strs, &s->strs_cap, s->nstrs + 1, sizeof *s->strs);
    s->strs[s->nstrs] = xstrdup(str);
    sm_put(&s->strings, str, (uint32_t)s->nstrs);
    return s->strs[s->nstrs++];
}

char *sym_subst(const struct symtab *s, const char *path)
{
    for (int i = 0; i < s->opts.nsubst; i++) {
        size_t fl = strlen(s->opts.subst_from[i]);
        if (fl && !strncmp(path, s->opts.subst_from[i], fl)) {
            char *r;
            if (asprintf(&r, "%s%s", s->opts.subst_to[i], path + fl) < 0)
                return xstrdup(path);
            return r;
        }
    }
    return xstrdup(path);
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static int32_t add_file(struct symtab *s, const char *path, const uint8_t *bid, uint32_t bidlen)
{
    for (size_t i = 0; i < s->nfiles; i++) {
        struct modfile *f = &s->files[i];
        if (!strcmp(f->path, path) && (!bidlen || !f->bidlen || (f->bidlen == bidlen && !memcmp(f->bid, bid, bidlen)))) {
            if (!f->bidlen && bidlen) {
                memcpy(f->bid, bid, bidlen);
                f->bidlen = bidlen;
            }
            return (int32_t)i;
        }
    }
    s->files = xgrow(s->files, &s->files_cap, s->nfiles + 1, sizeof *s->files);
    struct modfile *f = &s->files[s->nfiles];
    memset(f, 0, sizeof *f);
    f->path = xstrdup(path);
    char *nm = xstrdup(base_name(path));
    char *del = strstr(nm, " (deleted)");
    if (del)
        *del = 0;
    f->name = nm;
    if (bidlen && bidlen <= FT_BUILD_ID_MAX) {
        memcpy(f->bid, bid, bidlen);
        f->bidlen = bidlen;
    }
    if (!path[0] || path[0] == '[' || s->opts.no_symbols)
        f->state = 2;
    return (int32_t)s->nfiles++;
}

static int seg_cmp(const void *a, const void *b)
{
    const struct seg *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const struct seg *seg_find(const struct seg *v, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* last seg with start <= addr */
        size_t mid = (lo + hi) / 2;
        if (v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* segments may overlap across generations: scan back a little */
    for (size_t i = lo; i > 0 && lo - i < 64; i--)
        if (addr >= v[i - 1].start && addr < v[i - 1].end)
            return &v[i - 1];
    return NULL;
}

/* ---- construction ------------------------------------------------------- */

static const struct ftr_mapping *map_covering(const struct ftr_trace *t, uint64_t addr)
{
    for (size_t i = 0; i < t->nmaps; i++)
        if (addr >= t->maps[i].start && addr < t->maps[i].end)
            return &t->maps[i];
    return NULL;
}

struct symtab *sym_new(const struct ftr_trace *t, const struct sym_opts *o, sym_warn_fn warn, void *ctx)
{
    struct symtab *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->t = t;
    s->opts = *o;
    s->warn = warn;
    s->wctx = ctx;
    s->cb.find_elf = dwfl_build_id_find_elf;
    s->cb.find_debuginfo = dbg_find_debuginfo_inflated;
    s->cb.section_address = dwfl_offline_section_address;
    s->cb.debuginfo_path = &s->debuginfo_path;
    dbg_set_debug_dir(o->debug_dir);
    if (o->debug_dir && *o->debug_dir && asprintf(&s->debuginfo_path, ":.debug:%s", o->debug_dir) < 0)
        s->debuginfo_path = NULL; /* libdwfl's default path (":.debug:/usr/lib/debug") */

    /* MODULES: one instance per record */
    for (size_t i = 0; i < t->nmods; i++) {
        const struct ft_module *m = &t->mods[i];
        if (m->state == FT_MOD_FREE || !m->nseg)
            continue;
        const char *path = m->path;
        if (!path[0]) { /* main executable not resolved by the runtime */
            const struct ftr_mapping *mp = map_covering(t, m->seg[0].start);
            if (mp)
                path = mp->path;
        }
        s->insts = xgrow(s->insts, &s->insts_cap, s->ninsts + 1, sizeof *s->insts);
        struct modinst *in = &s->insts[s->ninsts];
        memset(in, 0, sizeof *in);
        in->file = add_file(s, path, m->build_id, m->build_id_len);
        in->bias = m->bias;
        in->bias_state = 1;
        in->gen_lo = m->gen_loaded;
        in->gen_hi = m->gen_unloaded;
        s->ninsts++;
    }
    /* all module segments */
    size_t cap = 0;
    for (size_t i = 0, ii = 0; i < t->nmods; i++) {
        const struct ft_module *m = &t->mods[i];
        if (m->state == FT_MOD_FREE || !m->nseg)
            continue;
        for (uint32_t k = 0; k < m->nseg; k++) {
            if (!m->seg[k].size || m->seg[k].start + m->seg[k].size < m->seg[k].start)
                continue;
            s->modsegs = xgrow(s->modsegs, &cap, s->nmodsegs + 1, sizeof *s->modsegs);
            s->modsegs[s->nmodsegs++] = (struct seg){m->seg[k].start, m->seg[k].start + m->seg[k].size,
                                                     (uint32_t)ii};
        }
        ii++;
    }
    if (s->nmodsegs)
        qsort(s->modsegs, s->nmodsegs, sizeof *s->modsegs, seg_cmp);

    /* executable file mappings (MAPPINGS / PROCMAPS): fallback instances */
    cap = 0;
    for (size_t i = 0; i < t->nmaps; i++) {
        const struct ftr_mapping *mp = &t->maps[i];
        if (!(mp->prot & FT_MAPF_X) || mp->end <= mp->start)
            continue;
        s->insts = xgrow(s->insts, &s->insts_cap, s->ninsts + 1, sizeof *s->insts);
        struct modinst *in = &s->insts[s->ninsts];
        memset(in, 0, sizeof *in);
        in->file = add_file(s, mp->path, mp->build_id, mp->build_id_len);
        in->from_map = 1;
        in->map_start = mp->start;
        in->map_off = mp->offset;
        in->gen_lo = 0;
        in->gen_hi = FT_GEN_NONE;
        s->mapsegs = xgrow(s->mapsegs, &cap, s->nmapsegs + 1, sizeof *s->mapsegs);
        s->mapsegs[s->nmapsegs++] = (struct seg){mp->start, mp->end, (uint32_t)s->ninsts};
        s->ninsts++;
    }
    if (s->nmapsegs)
        qsort(s->mapsegs, s->nmapsegs, sizeof *s->mapsegs, seg_cmp);
    return s;
}

void sym_free(struct symtab *s)
{
    if (!s)
        return;
    sw_end(s->warm);
    for (size_t i = 0; i < s->nfiles; i++) {
        if (s->files[i].dwfl)
            dwfl_end(s->files[i].dwfl);
        free(s->files[i].path);
        free(s->files[i].name);
        free(s->files[i].cur);
    }
    free(s->files);
    free(s->insts);
    free(s->modsegs);
    free(s->mapsegs);
    for (size_t i = 0; i < s->nspaces; i++)
        free(s->spaces[i].segs);
    free(s->spaces);
    for (size_t i = 0; i < s->nfuncs; i++) {
        free(s->funcs[i].name);
        free(s->funcs[i].jname);
        if (s->funcs[i].uname != s->funcs[i].name)
            free(s->funcs[i].uname);
    }
    free(s->funcs);
    hm_free(&s->hot.addr_cache);
    hm_free(&s->vaddr_cache);
    hm_free(&s->sym_cache);
    sm_free(&s->match_ids);
    sm_free(&s->names);
    sm_free(&s->strings);
    sm_free(&s->symnames);
    sm_free(&s->inlined);
    sm_free(&s->specials);
    hm_free(&s->frames_cache);
    free(s->fc);
    free(s->symaddrs);
    for (size_t i = 0; i < s->nstrs; i++)
        free(s->strs[i]);
    free(s->strs);
    free(s->debuginfo_path);
    if (s->dbgd_lib) {
        void (*end)(void *) = (void (*)(void *))dlsym(s->dbgd_lib, "debuginfod_end");
        if (end && s->dbgd_client)
            end(s->dbgd_client);
        dlclose(s->dbgd_lib);
    }
    free(s);
}

int sym_space(struct symtab *s, uint64_t g, int synthetic)
{
    for (size_t i = 0; i < s->nspaces; i++)
        if (s->spaces[i].gen == g && s->spaces[i].synthetic == synthetic)
            return (int)i;
    s->spaces = xgrow(s->spaces, &s->spaces_cap, s->nspaces + 1, sizeof *s->spaces);
    struct space *sp = &s->spaces[s->nspaces];
    memset(sp, 0, sizeof *sp);
    sp->gen = g;
    sp->synthetic = synthetic;
    size_t cap = 0;
    /* MODULES instances are the first ones, in the order of modsegs' inst ids */
    for (size_t k = 0; k < s->nmodsegs; k++) {
        const struct modinst *in = &s->insts[s->modsegs[k].inst];
        int live = synthetic ? in->gen_hi == FT_GEN_NONE : (in->gen_lo <= g && g < in->gen_hi);
        if (!live)
            continue;
        sp->segs = xgrow(sp->segs, &cap, sp->nsegs + 1, sizeof *sp->segs);
        sp->segs[sp->nsegs++] = s->modsegs[k];
    }
    return (int)s->nspaces++;
}

/* ---- opening ELF files -------------------------------------------------- */

typedef void *(*dbgd_begin_fn)(void);
typedef int (*dbgd_find_fn)(void *, const unsigned char *, int, char **);

static int debuginfod_fetch(struct symtab *s, const struct modfile *f, char **path)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!urls || !*urls || !f->bidlen)
        return -1;
    if (!s->dbgd_lib) {
        s->dbgd_lib = dlopen("libdebuginfod.so.1", RTLD_NOW);
        if (!s->dbgd_lib)
            return -1;
        dbgd_begin_fn begin = (dbgd_begin_fn)dlsym(s->dbgd_lib, "debuginfod_begin");
        s->dbgd_client = begin ? begin() : NULL;
    }
    dbgd_find_fn find = (dbgd_find_fn)dlsym(s->dbgd_lib, "debuginfod_find_executable");
    if (!find || !s->dbgd_client)
        return -1;
    int fd = find(s->dbgd_client, f->bid, (int)f->bidlen, path);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static Dwfl_Module *report(struct symtab *s, struct modfile *f, const char *path)
{
    Dwfl *d = dwfl_begin(&s->cb);
    if (!d)
        return NULL;
    dwfl_report_begin(d);
    Dwfl_Module *m = dwfl_report_elf(d, f->name, path, -1, 0, true);
    dwfl_report_end(d, NULL, NULL);
    if (!m) {
        dwfl_end(d);
        return NULL;
    }
    f->dwfl = d;
    return m;
}

static int bid_matches(const struct modfile *f, Dwfl_Module *m)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    if (!f->bidlen)
        return 1;
    int n = dwfl_module_build_id(m, &bits, &vaddr);
    if (n <= 0)
        return 1; /* no build-id in the file: cannot check */
    return (uint32_t)n == f->bidlen && !memcmp(bits, f->bid, f->bidlen);
}

static void drop(struct modfile *f)
{
    if (f->dwfl)
        dwfl_end(f->dwfl);
    f->dwfl = NULL;
    f->mod = NULL;
}

static int open_file(struct symtab *s, int32_t fi)
{
    struct modfile *f = &s->files[fi];
    sw_claim(s->warm, &f->warm); /* every use of f->mod comes through here */
    if (f->state)
        return f->state == 1;
    f->state = 2;
    s->stats.files++;
    char *path = sym_subst(s, f->path);
    char *del = strstr(path, " (deleted)");
    if (del && access(path, R_OK) != 0)
        *del = 0;
    int mismatch = 0;
    if (access(path, R_OK) == 0) {
        f->mod = report(s, f, path);
        if (f->mod && !bid_matches(f, f->mod)) {
            mismatch = 1;
            drop(f);
        }
    }
    if (!f->mod) { /* by build-id: the local debug directory, then debuginfod */
        char *bp = dbg_build_id_path(f->bid, f->bidlen);
        if (bp && access(bp, R_OK) == 0) {
            f->mod = report(s, f, bp);
            if (f->mod && !bid_matches(f, f->mod))
                drop(f);
        }
        free(bp);
    }
    if (!f->mod) {
        char *dp = NULL;
        if (debuginfod_fetch(s, f, &dp) == 0 && dp) {
            f->mod = report(s, f, dp);
            if (f->mod && !bid_matches(f, f->mod))
                drop(f);
        }
        free(dp);
    }
    if (!f->mod && mismatch) { /* use the rebuilt file anyway, with a warning */
        f->mod = report(s, f, path);
        s->stats.buildid_mismatch++;
        swarn(s, "warning: %s does not have the traced build-id (rebuilt since?): names may be wrong",
              path);
    }
    if (!f->mod) {
        s->stats.files_missing++;
        swarn(s, "warning: cannot open %s%s: its functions are shown as %s+0xOFFSET", path,
              s->opts.nsubst ? "" : " (see --substitute-path)", f->name);
        free(path);
        return 0;
    }
    free(path);
    f->state = 1;
    return 1;
}

/* bias of a mapping instance, from the file's program headers */
static void map_bias(struct symtab *s, struct modinst *in)
{
    in->bias_state = 2;
    struct modfile *f = &s->files[in->file];
    if (!open_file(s, in->file))
        return;
    GElf_Addr b;
    Elf *e = dwfl_module_getelf(f->mod, &b);
    size_t phnum;
    if (!e || elf_getphdrnum(e, &phnum) != 0)
        return;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        uint64_t al = ph.p_align > 1 ? ph.p_align : 4096;
        if (ph.p_offset / al * al != in->map_off && !(in->map_off >= ph.p_offset &&
                                                       in->map_off < ph.p_offset + ph.p_filesz))
            continue;
        /* vaddr of the mapping start */
        uint64_t v = ph.p_vaddr + in->map_off - ph.p_offset;
        in->bias = in->map_start - v;
        in->bias_state = 1;
        return;
    }
}

/* ---- functions ------------------------------------------------------------ */

static uint32_t match_id(struct symtab *s, int32_t file, const char *name)
{
    char *key;
    if (asprintf(&key, "%d\1%s", file, name) < 0)
        return s->nmatch++;
    uint32_t m = sm_get(&s->match_ids, key);
    if (m == HMAP_NONE) {
        m = s->nmatch++;
        sm_put(&s->match_ids, key, m);
    }
    free(key);
    return m;
}

static int cur_cmp(const void *a, const void *b)
{
    const struct curange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void cu_ranges(struct modfile *f)
{
    f->cur_built = 1;
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(f->mod, &bias);
    if (!dw)
        return;
    size_t cap = 0;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(dw, off + hsize, &cu)) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t it = 0;
            while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
                if (f->ncur == cap) {
                    cap = cap ? cap * 2 : 64;
                    struct curange *n = realloc(f->cur, cap * sizeof *n);
                    if (!n)
                        return;
                    f->cur = n;
                }
                f->cur[f->ncur++] = (struct curange){lo + bias, hi + bias, off + hsize};
            }
        }
        off = next;
    }
    if (f->ncur)
        qsort(f->cur, f->ncur, sizeof *f->cur, cur_cmp);
}

/* the CU DIE holding vaddr: libdw's lookup (.debug_aranges), then our own
 * table of CU ranges (clang emits no aranges; libdw trusts them when any
 * CU has them, e.g. the gcc-built runtime) */
static Dwarf_Die *cu_of(struct modfile *f, uint64_t vaddr, Dwarf_Die *mem, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(f->mod, vaddr, bias);
    if (cu && dwarf_haspc(cu, vaddr - *bias) > 0)
        return cu;
    if (!f->cur_built)
        cu_ranges(f);
    Dwarf *dw = dwfl_module_getdwarf(f->mod, bias);
    if (!dw)
        return NULL;
    for (size_t i = 0; i < f->ncur; i++) /* ranges may nest: linear scan of candidates */
        if (vaddr >= f->cur[i].lo && vaddr < f->cur[i].hi)
            return dwarf_offdie(dw, f->cur[i].off, mem);
    return NULL;
}

static const char *line_at(struct modfile *f, Dwarf_Die *cu, Dwarf_Addr bias, uint64_t vaddr, int *line)
{
    Dwfl_Line *l = dwfl_module_getsrc(f->mod, vaddr);
    if (l)
        return dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
    if (!cu)
        return NULL;
    Dwarf_Line *dl = dwarf_getsrc_die(cu, vaddr - bias);
    if (!dl || dwarf_lineno(dl, line) != 0)
        return NULL;
    return dwarf_linesrc(dl, NULL, NULL);
}

static char *die_name(Dwarf_Die *die);

/* the DIE is in a C++ unit */
static int is_cxx(Dwarf_Die *die)
{
    Dwarf_Die cu;
    int lang = dwarf_diecu(die, &cu, NULL, NULL) ? dwarf_srclang(&cu) : -1;
    return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 || lang == DW_LANG_C_plus_plus_11 ||
           lang == DW_LANG_C_plus_plus_14 || lang == 0x2a || lang == 0x2b; /* (DWARF 5's C++17, C++20) */
}

/* the function's source location; *dname (may be NULL): its name in the
 * debug info (malloc'd), which gdb shows rather than the ELF symbol's (an
 * alias: glibc's __libc_start_main is __libc_start_main_impl) */
static void src_of(struct symtab *s, struct modfile *f, uint64_t vaddr, struct func *fn, char **dname)
{
    Dwarf_Addr bias;
    Dwarf_Die cumem;
    Dwarf_Die *cu = cu_of(f, vaddr, &cumem, &bias);
    if (dname)
        *dname = NULL;
    if (cu) {
        Dwarf_Die *scopes = NULL;
        int n = dwarf_getscopes(cu, vaddr - bias, &scopes);
        for (int i = 0; i < n; i++) {
            if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
                continue;
            const char *file = dwarf_decl_file(&scopes[i]);
            int line = 0;
            Dwarf_Attribute at;
            Dwarf_Word fi;
            /* DWARF 5's file 0 (the compile unit's own file, clang's default)
             * is not resolved by this libdw: the unit's name */
            if (!file && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_decl_file, &at), &fi) == 0 && fi == 0)
                file = dwarf_diename(cu);
            if (file && dwarf_decl_line(&scopes[i], &line) == 0) {
                fn->file = intern(s, file);
                fn->line = (uint32_t)line;
            }
            if (dname && (dwarf_diename(&scopes[i]) || dwarf_hasattr_integrate(&scopes[i], DW_AT_linkage_name)))
                *dname = die_name(&scopes[i]);
            break;
        }
        free(scopes);
    }
    if (!fn->file) {
        int line = 0;
        const char *file = line_at(f, cu, bias, vaddr, &line);
        if (file) {
            fn->file = intern(s, file);
            fn->line = (uint32_t)line;
        }
    }
}

static uint32_t new_func_src(struct symtab *s, int32_t file, uint64_t vaddr, char *name, int unknown, int src);

static uint32_t new_func(struct symtab *s, int32_t file, uint64_t vaddr, char *name, int unknown)
{
    return new_func_src(s, file, vaddr, name, unknown, 1);
}

static uint32_t new_func_src(struct symtab *s, int32_t file, uint64_t vaddr, char *name, int unknown, int src)
{
    s->funcs = xgrow(s->funcs, &s->funcs_cap, s->nfuncs + 1, sizeof *s->funcs);
    uint32_t id = (uint32_t)s->nfuncs++;
    struct func *fn = &s->funcs[id];
    memset(fn, 0, sizeof *fn);
    fn->name = name;
    fn->modfile = file;
    fn->vaddr = vaddr;
    fn->unknown = (uint8_t)unknown;
    fn->ignored = (uint8_t)ft_is_thunk(name);
    if (src && !unknown && file >= 0 && open_file(s, file)) {
        char *dname;
        src_of(s, &s->files[file], vaddr, fn, &dname);
        /* a C symbol that is an alias of the function (glibc's __libc_start_main
         * is __libc_start_main_impl): the debug info's name, as gdb shows it
         * (C++ names keep the demangled symbol, with its parameters) */
        if (dname && !strchr(name, '(') && !strchr(dname, '(') && strcmp(dname, name) && strcmp(dname, "??")) {
            free(name);
            fn->name = name = dname;
        } else {
            free(dname);
        }
    }
    fn->throws = (uint8_t)(!unknown && (!strcmp(name, "__cxa_throw") || !strcmp(name, "__cxa_rethrow")));
    fn->match = match_id(s, file, name);
    /* JSON name: unique per function (same name elsewhere gets its location) */
    uint32_t other = sm_get(&s->names, name);
    char *jn = NULL;
    if (other == HMAP_NONE) {
        sm_put(&s->names, name, id);
    } else {
        struct func *o = &s->funcs[other];
        if (o->match != fn->match || o->file != fn->file) {
            if (fn->file) {
                if (asprintf(&jn, "%s (%s:%u)", name, base_name(fn->file), fn->line) < 0)
                    jn = NULL;
            } else if (file >= 0) {
                if (asprintf(&jn, "%s [%s]", name, s->files[file].name) < 0)
                    jn = NULL;
            }
        }
    }
    fn->jname = json_quote(jn ? jn : name);
    if (!fn->jname)
        xalloc_die();
    fn->uname = jn ? jn : name;
    if (unknown)
        s->stats.unknown_addrs++;
    return id;
}

static uint32_t func_unknown_addr(struct symtab *s, uint64_t addr)
{
    uint32_t id = hm_get(&s->vaddr_cache, UINT64_MAX, addr);
    if (id != HMAP_NONE)
        return id;
    char *nm;
    if (asprintf(&nm, "0x%llx", (unsigned long long)addr) < 0)
        nm = xstrdup("?");
    id = new_func(s, -1, addr, nm, 1);
    hm_put(&s->vaddr_cache, UINT64_MAX, addr, id);
    return id;
}

/* the symbol of the function the PLT entry holding vaddr of module file
 * fi (opened) jumps to, *entry its address; NULL if vaddr is in none */
static const char *plt_entry(struct symtab *s, int32_t fi, uint64_t vaddr, uint64_t *entry)
{
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(s->files[fi].mod, &bias);
    return elf ? plt_target(elf, bias, vaddr, entry) : NULL;
}

static uint32_t func_at(struct symtab *s, int32_t file, uint64_t vaddr)
{
    uint32_t id = hm_get(&s->vaddr_cache, (uint64_t)file, vaddr);
    if (id != HMAP_NONE)
        return id;
    struct modfile *f = &s->files[file];
    const char *sym = NULL, *plt = NULL;
    GElf_Off off = 0;
    uint64_t start = vaddr;
    if (open_file(s, file)) {
        GElf_Sym es;
        sym = dwfl_module_addrinfo(f->mod, vaddr, &off, &es, NULL, NULL, NULL);
        if (sym && (!*sym || (GELF_ST_TYPE(es.st_info) != STT_FUNC && GELF_ST_TYPE(es.st_info) != STT_GNU_IFUNC &&
                              GELF_ST_TYPE(es.st_info) != STT_NOTYPE)))
            sym = NULL;
        if (sym)
            start = vaddr - off;
        else /* inside a PLT entry (a thread stopped between a call and its
              * callee): the function it jumps to, as gdb names the entry */
            plt = plt_entry(s, file, vaddr, &start);
    }
    if (sym || plt) {
        id = hm_get(&s->sym_cache, (uint64_t)file, start);
        if (id == HMAP_NONE) {
            char *nm = ft_display_name(sym ? sym : plt);
            if (plt) {
                char *pn;
                if (asprintf(&pn, "%s@plt", nm ? nm : plt) < 0)
                    xalloc_die();
                free(nm);
                nm = pn;
            }
            id = new_func(s, file, start, nm ? nm : xstrdup(sym), 0);
            hm_put(&s->sym_cache, (uint64_t)file, start, id);
        }
    } else {
        char *nm;
        if (asprintf(&nm, "%s+0x%llx", f->name, (unsigned long long)vaddr) < 0)
            nm = xstrdup("?");
        id = new_func(s, file, vaddr, nm, 1);
    }
    hm_put(&s->vaddr_cache, (uint64_t)file, vaddr, id);
    return id;
}

/* the module instance holding addr in space: MODULES of the generation, then
 * the mappings, then MODULES of any generation (nearest first) */
static struct modinst *resolve(struct symtab *s, int space, uint64_t addr)
{
    struct space *sp = &s->spaces[space];
    const struct seg *sg = seg_find(sp->segs, sp->nsegs, addr);
    if (sg)
        return &s->insts[sg->inst];
    sg = seg_find(s->mapsegs, s->nmapsegs, addr);
    if (sg)
        return &s->insts[sg->inst];
    struct modinst *best = NULL;
    uint64_t bestd = UINT64_MAX;
    for (size_t k = 0; k < s->nmodsegs; k++) {
        const struct seg *x = &s->modsegs[k];
        if (addr < x->start || addr >= x->end)
            continue;
        struct modinst *in = &s->insts[x->inst];
        uint64_t d = sp->gen < in->gen_lo ? in->gen_lo - sp->gen
                     : (in->gen_hi != FT_GEN_NONE && sp->gen >= in->gen_hi) ? sp->gen - in->gen_hi + 1 : 0;
        if (d < bestd) {
            bestd = d;
            best = in;
        }
    }
    return best;
}

static int inst_vaddr(struct symtab *s, struct modinst *in, uint64_t addr, uint64_t *vaddr)
{
    if (in->from_map && in->bias_state == 0)
        map_bias(s, in);
    if (in->bias_state == 1) {
        *vaddr = addr - in->bias;
        return 1;
    }
    /* mapping without a usable file: file offset */
    *vaddr = addr - in->map_start + in->map_off;
    return 0;
}

uint32_t sym_lookup_slow(struct symtab *s, int space, uint64_t addr)
{
    struct modinst *in = resolve(s, space, addr);
    uint32_t id;
    if (!in) {
        id = func_unknown_addr(s, addr);
    } else {
        uint64_t vaddr;
        inst_vaddr(s, in, addr, &vaddr);
        id = func_at(s, in->file, vaddr);
    }
    hm_put(&s->hot.addr_cache, addr, (uint64_t)space, id);
    return id;
}

/* ---- loading the final stacks' modules on a second thread ----------------- */

struct warm_key {
    struct sw_item it;
    int last;   /* the program's own file: the decoder needs it first (the rings' names) */
    int32_t file;
};

static int warm_cmp(const void *a, const void *b)
{
    const struct warm_key *x = a, *y = b;
    if (x->last != y->last)
        return x->last - y->last;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return (x->it.vaddr > y->it.vaddr) - (x->it.vaddr < y->it.vaddr);
}

void sym_warm(struct symtab *s, int space, const uint64_t *pcs, size_t n)
{
    if (s->warm || s->opts.no_symbols)
        return;
    int32_t exe = s->ninsts && !s->insts[0].from_map ? s->insts[0].file : -1;
    struct warm_key *v = NULL;
    size_t nv = 0, cap = 0;
    for (size_t i = 0; i < 2 * n; i++) { /* pc (frame 0, signal frames) and pc - 1 (return addresses) */
        uint64_t q = pcs[i / 2] - (i & 1);
        struct modinst *in = resolve(s, space, q);
        uint64_t vaddr;
        if (!in || !open_file(s, in->file) || !inst_vaddr(s, in, q, &vaddr))
            continue;
        v = xgrow(v, &cap, nv + 1, sizeof *v);
        struct modfile *f = &s->files[in->file];
        v[nv++] = (struct warm_key){{&f->warm, f->mod, vaddr}, in->file == exe, in->file};
    }
    if (!nv)
        return;
    qsort(v, nv, sizeof *v, warm_cmp);
    struct sw_item *it = xcalloc(nv, sizeof *it);
    for (size_t i = 0; i < nv; i++)
        it[i] = v[i].it;
    s->warm = sw_start(it, nv);
    free(it);
    free(v);
}

struct func *sym_func(struct symtab *s, uint32_t id)
{
    return &s->funcs[id];
}

uint32_t sym_nfuncs(const struct symtab *s)
{
    return (uint32_t)s->nfuncs;
}

void sym_stats(const struct symtab *s, struct sym_stats *st)
{
    *st = s->stats;
}

/* ---- instrumentation check ---------------------------------------------- */

int sym_instrumented(struct symtab *s, uint32_t id)
{
    struct func *fn = &s->funcs[id];
    if (fn->instr)
        return fn->instr == 1;
    fn->instr = 2;
    if (fn->unknown || fn->modfile < 0 || !open_file(s, fn->modfile))
        return 0;
    Dwfl_Module *mod = s->files[fn->modfile].mod;
    Dwarf_Addr a = fn->vaddr, bias;
    Elf_Scn *scn = dwfl_module_address_section(mod, &a, &bias);
    if (!scn)
        return 0;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !d->d_buf || a >= d->d_size)
        return 0;
    const uint8_t *b = (const uint8_t *)d->d_buf + a;
    size_t n = d->d_size - a;
    if (n > 80)
        n = 80;
    size_t i = 0;
    if (n >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
        i = 4; /* endbr64 */
    if (i < n && b[i] == 0x67) /* addr32 prefix (gcc pads the fentry call to 6 bytes) */
        i++;
    if (i < n && b[i] == 0xe8) { /* -pg -mfentry: call __fentry__ first */
        fn->instr = 1;
        return 1;
    }
    if (i + 1 < n && b[i] == 0xeb && b[i + 1] == 0x09) { /* clang -fxray-instrument: an entry sled */
        fn->instr = 1;
        return 1;
    }
    /* -finstrument-functions: the function loads its own address into rdi */
    for (size_t j = i; j + 7 <= n; j++) {
        if (b[j] == 0x48 && b[j + 1] == 0x8d && b[j + 2] == 0x3d) {
            int32_t disp;
            memcpy(&disp, b + j + 3, 4);
            if (fn->vaddr + j + 7 + (int64_t)disp == fn->vaddr) {
                fn->instr = 1;
                return 1;
            }
        }
        if (b[j] == 0xbf) {
            uint32_t imm;
            memcpy(&imm, b + j + 1, 4);
            if (imm == fn->vaddr) {
                fn->instr = 1;
                return 1;
            }
        }
    }
    return 0;
}

/* ---- exit hooks during unwinding ---------------------------------------- */

/* does the module's .comment (one string per compiler that built a part of
 * it) name clang? */
static int comment_names_clang(struct modfile *f)
{
    if (f->comment_clang)
        return f->comment_clang == 1;
    f->comment_clang = 2;
    Dwarf_Addr b;
    Elf *e = dwfl_module_getelf(f->mod, &b);
    size_t shstrndx;
    if (!e || elf_getshdrstrndx(e, &shstrndx) != 0)
        return 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
            !(nm = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(nm, ".comment"))
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (d && d->d_buf && memmem(d->d_buf, d->d_size, "clang", 5))
            f->comment_clang = 1;
        break;
    }
    return f->comment_clang == 1;
}

int sym_exit_on_unwind(struct symtab *s, uint32_t id)
{
    struct func *fn = &s->funcs[id];
    if (fn->unwind_exit)
        return fn->unwind_exit == 1;
    fn->unwind_exit = 1; /* unknown: trust the event's flag */
    if (fn->unknown || fn->modfile < 0 || !open_file(s, fn->modfile))
        return 1;
    struct modfile *f = &s->files[fn->modfile];
    Dwarf_Addr bias;
    Dwarf_Die cumem, *cu = cu_of(f, fn->vaddr, &cumem, &bias);
    Dwarf_Attribute a;
    const char *prod = cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_producer, &a)) : NULL;
    int yes;
    if (prod) {
        int cxx = is_cxx(cu);
        yes = !strstr(prod, "clang") && !strstr(prod, "-fno-exceptions") && (cxx || strstr(prod, "-fexceptions"));
    } else {
        yes = !comment_names_clang(f);
    }
    fn->unwind_exit = yes ? 1 : 2;
    return yes;
}

/* ---- final stack frames ----------------------------------------------- */

int sym_pc_line(struct symtab *s, int space, uint64_t pc, const char **file, int *line)
{
    struct modinst *in = resolve(s, space, pc);
    uint64_t vaddr;
    *file = NULL;
    *line = 0;
    if (!in || s->opts.no_symbols)
        return 0;
    inst_vaddr(s, in, pc, &vaddr);
    if (!open_file(s, in->file))
        return 0;
    struct modfile *f = &s->files[in->file];
    Dwarf_Addr bias;
    Dwarf_Die cumem;
    Dwarf_Die *cu = cu_of(f, vaddr, &cumem, &bias);
    *file = line_at(f, cu, bias, vaddr, line);
    return *file != NULL;
}

/* A C++ function's name qualified by the namespaces and classes it is
 * declared in, as gdb prints it, for a DIE without a linkage name (a member
 * function only ever inlined: `leveldb::Benchmark::RunBenchmark`, not
 * `RunBenchmark`).  Its declaration is found through abstract_origin and
 * specification; a class local to a function stops the walk, as in gdb
 * (`State::Match`).  NULL: nothing to add. */
static char *qualified_name(Dwarf_Die *die, const char *name)
{
    Dwarf_Die d = *die, next;
    Dwarf_Attribute a;
    for (int hops = 0; hops < 8; hops++) { /* to the declaration in its scope */
        if (dwarf_formref_die(dwarf_attr(&d, DW_AT_abstract_origin, &a), &next) ||
            dwarf_formref_die(dwarf_attr(&d, DW_AT_specification, &a), &next))
            d = next;
        else
            break;
    }
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(&d, &scopes);
    size_t len = strlen(name) + 1;
    int top = 1; /* scopes[0]: the function itself; scopes[n - 1]: the unit */
    while (top < n - 1) {
        int tag = dwarf_tag(&scopes[top]);
        if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
            tag != DW_TAG_union_type)
            break;
        const char *sn = dwarf_diename(&scopes[top]);
        if (!sn && tag != DW_TAG_namespace)
            break;
        len += strlen(sn ? sn : "(anonymous namespace)") + 2;
        top++;
    }
    char *out = NULL;
    if (top > 1) {
        out = xcalloc(1, len);
        for (int i = top - 1; i >= 1; i--) {
            const char *sn = dwarf_diename(&scopes[i]);
            strcat(out, sn ? sn : "(anonymous namespace)");
            strcat(out, "::");
        }
        strcat(out, name);
    }
    free(scopes);
    return out;
}

static char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *ln = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!ln)
        ln = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    if (ln) {
        char *d = ft_display_name(ln);
        if (d)
            return d;
    }
    const char *n = dwarf_diename(die);
    if (n && is_cxx(die)) {
        char *q = qualified_name(die, n);
        if (q)
            return q;
    }
    return xstrdup(n ? n : "??");
}

/* The line gdb shows for an address: the last line-table row at or before
 * it (among rows at that same address the last one, or the last is_stmt
 * one if any), not an end of sequence; libdw's own lookup may pick another
 * row of the same address. */
static const char *gdb_line(struct modfile *f, Dwarf_Die *cu, Dwarf_Addr bias, uint64_t vaddr, int *line)
{
    Dwarf_Lines *lines;
    size_t nl;
    *line = 0;
    if (!cu || dwarf_getsrclines(cu, &lines, &nl) != 0 || !nl)
        return line_at(f, cu, bias, vaddr, line);
    Dwarf_Addr want = vaddr - bias, a;
    size_t lo = 0, hi = nl; /* first row with address > want */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        Dwarf_Line *l = dwarf_onesrcline(lines, mid);
        if (l && dwarf_lineaddr(l, &a) == 0 && a <= want)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return line_at(f, cu, bias, vaddr, line);
    Dwarf_Addr at;
    if (dwarf_lineaddr(dwarf_onesrcline(lines, lo - 1), &at) != 0)
        return line_at(f, cu, bias, vaddr, line);
    Dwarf_Line *best = NULL, *best_stmt = NULL;
    for (size_t i = lo; i > 0; i--) { /* the rows at that address, last first */
        Dwarf_Line *l = dwarf_onesrcline(lines, i - 1);
        bool end = false, stmt = false;
        if (!l || dwarf_lineaddr(l, &a) != 0 || a != at)
            break;
        if (dwarf_lineendsequence(l, &end) == 0 && end)
            continue;
        if (!best)
            best = l;
        if (!best_stmt && dwarf_linebeginstatement(l, &stmt) == 0 && stmt)
            best_stmt = l;
    }
    if (best_stmt)
        best = best_stmt;
    if (!best || dwarf_lineno(best, line) != 0 || *line == 0)
        return line_at(f, cu, bias, vaddr, line);
    return dwarf_linesrc(best, NULL, NULL);
}

/* key (module file and name) -> addr, unless the name has one already */
static void sym_name_put(struct symtab *s, const char *key, uint64_t addr)
{
    if (sm_get(&s->symnames, key) != HMAP_NONE)
        return;
    s->symaddrs = xgrow(s->symaddrs, &s->symaddrs_cap, s->nsymaddrs + 1, sizeof *s->symaddrs);
    s->symaddrs[s->nsymaddrs] = addr;
    sm_put(&s->symnames, key, (uint32_t)s->nsymaddrs++);
}

/* index the module's function symbols by name (for inlined callers that
 * also exist out of line, and the targets of call sites) */
static void index_symbols(struct symtab *s, int32_t fi)
{
    struct modfile *f = &s->files[fi];
    f->syms_indexed = 1;
    int n = dwfl_module_getsymtab(f->mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym es;
        GElf_Addr addr;
        const char *nm = dwfl_module_getsym_info(f->mod, i, &es, &addr, NULL, NULL, NULL);
        if (!nm || !*nm || GELF_ST_TYPE(es.st_info) != STT_FUNC || es.st_shndx == SHN_UNDEF)
            continue;
        char *key;
        if (asprintf(&key, "%d\1%s", fi, nm) < 0)
            continue;
        sym_name_put(s, key, addr);
        char *at = strstr(key, "@@"); /* name@@VERSION: also the name's */
        if (at) {
            *at = 0;
            sym_name_put(s, key, addr);
        }
        free(key);
    }
}

/* the entry (file vaddr) of the function named ln in module file fi; 0 if
 * it defines none (a symbol's default version, name@@VERSION, is its name) */
static uint64_t sym_entry(struct symtab *s, int32_t fi, const char *ln)
{
    if (!s->files[fi].syms_indexed)
        index_symbols(s, fi);
    char *key;
    if (asprintf(&key, "%d\1%s", fi, ln) < 0)
        return 0;
    uint32_t k = sm_get(&s->symnames, key);
    free(key);
    return k == HMAP_NONE ? 0 : s->symaddrs[k];
}

/* the function of an inlined_subroutine DIE: the out-of-line copy's
 * function when the module has a symbol of that (linkage) name, else a
 * function of its own (no code, not instrumented), one per name */
static uint32_t inline_func(struct symtab *s, int32_t fi, Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *ln = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!ln)
        ln = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    if (!ln)
        ln = dwarf_diename(die);
    const uint64_t e = ln ? sym_entry(s, fi, ln) : 0;
    if (e)
        return func_at(s, fi, e);
    char *name = die_name(die), *key;
    if (asprintf(&key, "%d\1%s", fi, name) < 0)
        xalloc_die();
    uint32_t id = sm_get(&s->inlined, key);
    if (id == HMAP_NONE) {
        id = new_func_src(s, fi, 0, name, 0, 0);
        struct func *fn = &s->funcs[id];
        int line = 0;
        const char *file = dwarf_decl_file(die);
        if (file && dwarf_decl_line(die, &line) == 0) {
            fn->file = intern(s, file);
            fn->line = (uint32_t)line;
        }
        fn->instr = 2;
        sm_put(&s->inlined, key, id);
    } else {
        free(name);
    }
    free(key);
    return id;
}

uint32_t sym_special(struct symtab *s, const char *name)
{
    uint32_t id = sm_get(&s->specials, name);
    if (id == HMAP_NONE) {
        id = new_func_src(s, -1, 0, xstrdup(name), 0, 0);
        s->funcs[id].instr = 2;
        s->funcs[id].special = 1;
        sm_put(&s->specials, name, id);
    }
    return id;
}

static size_t frames_uncached(struct symtab *s, int space, uint64_t pc, int exact, struct sym_frame *out,
                              size_t max);

#define MAX_NEST 64

/* the DIEs of code that contain pc, outermost first, below parent: the
 * subprogram, its lexical blocks and inlined subroutines (namespaces and
 * types are searched for nested definitions); 1 if pc was found */
static int concrete_scopes(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out, int *n, int depth)
{
    Dwarf_Die child;
    if (depth > 32 || dwarf_child(parent, &child) != 0)
        return 0;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_entry_point:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dwarf_haspc(&child, pc) <= 0)
                break;
            if (*n < MAX_NEST)
                out[(*n)++] = child;
            concrete_scopes(&child, pc, out, n, depth + 1);
            return 1;
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_module:
            if (concrete_scopes(&child, pc, out, n, depth + 1))
                return 1;
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

/* cached by (space, pc, exact): a deep recursion repeats the same frames */
size_t sym_frames(struct symtab *s, int space, uint64_t pc, int exact, struct sym_frame *out, size_t max)
{
    uint64_t key = (uint64_t)space << 1 | (exact != 0);
    uint32_t at = hm_get(&s->frames_cache, key, pc);
    if (at == HMAP_NONE) {
        struct sym_frame tmp[64];
        size_t n = frames_uncached(s, space, pc, exact, tmp, 64);
        s->fc = xgrow(s->fc, &s->fc_cap, s->nfc + n + 1, sizeof *s->fc);
        at = (uint32_t)s->nfc;
        s->fc[at].line = (int)n; /* the count, in the first entry */
        memcpy(&s->fc[at + 1], tmp, n * sizeof *tmp);
        s->nfc += n + 1;
        hm_put(&s->frames_cache, key, pc, at);
    }
    size_t n = (size_t)s->fc[at].line;
    if (n > max)
        n = max;
    memcpy(out, &s->fc[at + 1], n * sizeof *out);
    return n;
}

static size_t frames_uncached(struct symtab *s, int space, uint64_t pc, int exact, struct sym_frame *out,
                              size_t max)
{
    uint64_t q = !exact && pc ? pc - 1 : pc;
    if (!max)
        return 0;
    out[0].func = sym_lookup(s, space, q);
    out[0].file = NULL;
    out[0].line = 0;
    out[0].inlined = 0;
    struct modinst *in = resolve(s, space, q);
    if (!in || s->opts.no_symbols)
        return 1;
    uint64_t vaddr;
    inst_vaddr(s, in, q, &vaddr);
    struct func *fn = &s->funcs[out[0].func];
    struct modfile *f = &s->files[in->file];
    if (fn->unknown || !open_file(s, in->file))
        return 1;
    Dwarf_Addr bias;
    Dwarf_Die cumem;
    Dwarf_Die *cu = cu_of(f, vaddr, &cumem, &bias);
    int line = 0;
    const char *file = gdb_line(f, cu, bias, vaddr, &line);
    out[0].file = file;
    out[0].line = line;
    if (!cu)
        return 1;
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, vaddr - bias, &scopes);
    if (n > 0) { /* the concrete nesting of the innermost scope: its inlined callers */
        Dwarf_Die inner = scopes[0];
        free(scopes);
        scopes = NULL;
        n = dwarf_getscopes_die(&inner, &scopes);
    } else { /* libdw finds none when the function's abstract origin is in
              * another CU (LTO): walk the concrete DIEs ourselves */
        free(scopes);
        scopes = xrealloc(NULL, MAX_NEST * sizeof *scopes);
        n = 0;
        if (!concrete_scopes(cu, vaddr - bias, scopes, &n, 0))
            n = 0;
        for (int i = 0; i < n / 2; i++) { /* innermost first */
            Dwarf_Die t = scopes[i];
            scopes[i] = scopes[n - 1 - i];
            scopes[n - 1 - i] = t;
        }
    }
    size_t k = 0;
    for (int i = 0; i < n && k < max; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        out[k].file = file;
        out[k].line = line;
        if (tag == DW_TAG_subprogram) { /* the function holding the code */
            out[k].func = sym_lookup(s, space, q);
            out[k].inlined = 0;
            k++;
            break;
        }
        out[k].func = inline_func(s, in->file, &scopes[i]);
        out[k].inlined = 1;
        k++;
        /* the call site of this inlined instance, in the next scope out */
        Dwarf_Attribute a;
        Dwarf_Word fidx = 0, cl = 0;
        file = NULL;
        line = 0;
        if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &fidx) == 0) {
            Dwarf_Files *files;
            size_t nf;
            if (dwarf_getsrcfiles(cu, &files, &nf) == 0 && fidx < nf)
                file = dwarf_filesrc(files, fidx, NULL, NULL);
        }
        if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl) == 0)
            line = (int)cl;
    }
    free(scopes);
    if (!k) { /* no DWARF scope: the symbol's function */
        out[0].func = sym_lookup(s, space, q);
        out[0].inlined = 0;
        k = 1;
    } else if (out[k - 1].inlined && k < max) { /* no subprogram scope found: end with the symbol */
        out[k].func = sym_lookup(s, space, q);
        out[k].file = file;
        out[k].line = line;
        out[k].inlined = 0;
        k++;
    }
    return k;
}

/* x86-64 Linux rt_sigreturn trampoline (glibc's __restore_rt):
 * mov $15, %rax; syscall */
int sym_is_sigtramp(struct symtab *s, int space, uint64_t pc)
{
    static const uint8_t code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    struct modinst *in = resolve(s, space, pc);
    uint64_t vaddr;
    if (!in || s->opts.no_symbols || !open_file(s, in->file))
        return 0;
    inst_vaddr(s, in, pc, &vaddr);
    Dwarf_Addr a = vaddr, bias;
    Elf_Scn *scn = dwfl_module_address_section(s->files[in->file].mod, &a, &bias);
    if (!scn)
        return 0;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !d->d_buf || a + sizeof code > d->d_size)
        return 0;
    return memcmp((const uint8_t *)d->d_buf + a, code, sizeof code) == 0;
}

/* ---- tail calls: the frames gdb shows that are not on the machine stack -- */

#define TC_DEPTH 6  /* tail calls followed from a call site */
#define TC_PATHS 4  /* more distinct chains than this: ambiguous anyway */

/* the subprogram DIE of the code at vaddr (outermost concrete scope) */
static int subprogram_at(struct modfile *f, uint64_t vaddr, Dwarf_Die *out)
{
    Dwarf_Addr bias;
    Dwarf_Die cumem, sc[MAX_NEST];
    Dwarf_Die *cu = cu_of(f, vaddr, &cumem, &bias);
    int n = 0;
    if (!cu || !concrete_scopes(cu, vaddr - bias, sc, &n, 0) || !n)
        return 0;
    for (int i = 0; i < n; i++)
        if (dwarf_tag(&sc[i]) == DW_TAG_subprogram) {
            *out = sc[i];
            return 1;
        }
    return 0;
}

static int is_call_site(Dwarf_Die *d)
{
    int t = dwarf_tag(d);
    return t == DW_TAG_call_site || t == DW_TAG_GNU_call_site;
}

static int call_site_return_pc(Dwarf_Die *d, Dwarf_Addr *pc)
{
    Dwarf_Attribute a;
    if (dwarf_attr(d, DW_AT_call_return_pc, &a))
        return dwarf_formaddr(&a, pc) == 0;
    return dwarf_attr(d, DW_AT_low_pc, &a) && dwarf_formaddr(&a, pc) == 0; /* DW_TAG_GNU_call_site */
}

static int call_site_is_tail(Dwarf_Die *d)
{
    return dwarf_hasattr(d, DW_AT_call_tail_call) || dwarf_hasattr(d, DW_AT_GNU_tail_call);
}

/* the function a call site in module file fi calls: the module file tf
 * that holds it -- fi itself, or (a call to a function fi does not
 * define, through its PLT or GOT) the module file the callee runs in,
 * ext, where the dynamic linker found that name -- and its entry (file
 * vaddr) there; 0 if unknown (an indirect call) */
static uint64_t call_site_target(struct symtab *s, int32_t fi, Dwarf_Die *site, int32_t ext, int32_t *tf)
{
    Dwarf_Attribute a;
    Dwarf_Die t;
    *tf = fi;
    if (!dwarf_attr(site, DW_AT_call_origin, &a) && !dwarf_attr(site, DW_AT_abstract_origin, &a))
        return 0;
    if (!dwarf_formref_die(&a, &t))
        return 0;
    Dwarf_Addr lo;
    if (dwarf_lowpc(&t, &lo) == 0)
        return lo;
    const char *ln = dwarf_formstring(dwarf_attr_integrate(&t, DW_AT_linkage_name, &a));
    if (!ln)
        ln = dwarf_diename(&t);
    if (!ln)
        return 0;
    uint64_t e = sym_entry(s, fi, ln);
    if (e || ext < 0 || ext == fi)
        return e;
    *tf = ext;
    return sym_entry(s, ext, ln);
}

/* depth-first over the call sites below d (not into nested subprograms) */
typedef int (*site_fn)(struct symtab *s, int32_t fi, Dwarf_Die *site, void *ctx);
static int each_call_site(struct symtab *s, int32_t fi, Dwarf_Die *d, site_fn fn, void *ctx, int depth)
{
    Dwarf_Die c;
    if (depth > 32 || dwarf_child(d, &c) != 0)
        return 0;
    do {
        if (is_call_site(&c)) {
            if (fn(s, fi, &c, ctx))
                return 1;
        } else if (dwarf_tag(&c) != DW_TAG_subprogram && dwarf_haschildren(&c)) {
            if (each_call_site(s, fi, &c, fn, ctx, depth + 1))
                return 1;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return 0;
}

struct tc_find {
    uint64_t ret;  /* the call site returning here */
    Dwarf_Die site;
    int found;
};

static int find_site(struct symtab *s, int32_t fi, Dwarf_Die *site, void *ctx)
{
    struct tc_find *t = ctx;
    Dwarf_Addr pc;
    (void)s;
    (void)fi;
    if (call_site_return_pc(site, &pc) && pc == t->ret) {
        t->site = *site;
        t->found = 1;
        return 1;
    }
    return 0;
}

struct tc_search {
    uint64_t callee;             /* entry of the function to reach ... */
    int32_t callee_file;         /* ... in this module file (where a name the chain's
                                    module does not define is looked up: call_site_target) */
    uint64_t fn[TC_DEPTH];       /* the chain being explored: entries ... */
    int32_t mod[TC_DEPTH];       /* ... in these module files ... */
    uint64_t ret[TC_DEPTH];      /* ... and the return pc of their tail call */
    int depth;
    int npaths;
    uint64_t pfn[TC_DEPTH], pret[TC_DEPTH];
    int32_t pmod[TC_DEPTH];
    int plen;
    int ambiguous;
};

static void tc_from(struct symtab *s, int32_t fi, uint64_t entry, struct tc_search *t);

static int tail_site(struct symtab *s, int32_t fi, Dwarf_Die *site, void *ctx)
{
    struct tc_search *t = ctx;
    Dwarf_Addr pc;
    if (!call_site_is_tail(site) || !call_site_return_pc(site, &pc))
        return 0;
    int32_t tf;
    uint64_t target = call_site_target(s, fi, site, t->callee_file, &tf);
    if (!target)
        return 0;
    t->ret[t->depth - 1] = pc;
    if (target == t->callee && tf == t->callee_file) {
        if (t->npaths++ == 0) {
            t->plen = t->depth;
            memcpy(t->pfn, t->fn, sizeof t->fn);
            memcpy(t->pmod, t->mod, sizeof t->mod);
            memcpy(t->pret, t->ret, sizeof t->ret);
        } else if (t->plen != t->depth || memcmp(t->pfn, t->fn, (size_t)t->depth * sizeof *t->fn) ||
                   memcmp(t->pmod, t->mod, (size_t)t->depth * sizeof *t->mod)) {
            t->ambiguous = 1;
        }
        return t->npaths > TC_PATHS;
    }
    for (int i = 0; i < t->depth; i++)
        if (t->fn[i] == target && t->mod[i] == tf)
            return 0; /* a cycle */
    tc_from(s, tf, target, t);
    return t->npaths > TC_PATHS;
}

/* the chains of tail calls from the function at entry to t->callee */
static void tc_from(struct symtab *s, int32_t fi, uint64_t entry, struct tc_search *t)
{
    Dwarf_Die sp;
    if (t->depth == TC_DEPTH || !subprogram_at(&s->files[fi], entry, &sp))
        return;
    t->mod[t->depth] = fi;
    t->fn[t->depth++] = entry;
    each_call_site(s, fi, &sp, tail_site, t, 0);
    t->depth--;
}

size_t sym_tailcalls(struct symtab *s, int space, uint64_t ret, uint64_t callee_pc, int callee_exact,
                     struct sym_tailcall *out, size_t max)
{
    if (s->opts.no_symbols || !ret || !callee_pc)
        return 0;
    uint64_t q = callee_exact ? callee_pc : callee_pc - 1;
    struct modinst *in = resolve(s, space, ret - 1), *cin = resolve(s, space, q);
    if (!in || !cin || !open_file(s, in->file) || !open_file(s, cin->file))
        return 0;
    uint64_t rv, cv;
    if (!inst_vaddr(s, in, ret, &rv) || !inst_vaddr(s, cin, q, &cv))
        return 0;
    uint32_t cf = func_at(s, cin->file, cv);
    if (s->funcs[cf].unknown)
        return 0;
    uint64_t callee = s->funcs[cf].vaddr;
    /* the caller's call site returning at ret, and what it calls: in the
     * caller's module, or (a call into another module: pthread_join, which
     * tail-calls __pthread_clockjoin_ex) in the callee's, as gdb finds it */
    Dwarf_Die sp;
    if (!subprogram_at(&s->files[in->file], rv - 1, &sp))
        return 0;
    struct tc_find fd = {rv, {0}, 0};
    each_call_site(s, in->file, &sp, find_site, &fd, 0);
    if (!fd.found || call_site_is_tail(&fd.site))
        return 0;
    int32_t tf;
    uint64_t target = call_site_target(s, in->file, &fd.site, cin->file, &tf);
    if (!target || (tf != cin->file && tf != in->file) || (target == callee && tf == cin->file))
        return 0;
    /* the chain from there: in that module, and (a tail call through its
     * PLT: memcached's lru_maintainer_pause jumps to pthread_mutex_lock) on
     * in the callee's, as gdb follows it */
    struct tc_search t;
    memset(&t, 0, sizeof t);
    t.callee = callee;
    t.callee_file = cin->file;
    tc_from(s, tf, target, &t);
    if (t.npaths != 1 || t.ambiguous) /* gdb shows no tail-call frames it cannot be sure of either */
        return 0;
    size_t n = 0;
    for (int i = t.plen; i > 0 && n < max; i--, n++) { /* innermost first */
        const int32_t m = t.pmod[i - 1];
        struct modfile *f = &s->files[m];
        uint64_t r = t.pret[i - 1];
        out[n].func = func_at(s, m, t.pfn[i - 1]);
        /* (file vaddr + its module's bias: call_site_target steps from a
         * module only into the callee's) */
        out[n].pc = r + (m == cin->file ? q - cv : ret - rv);
        /* named as gdb names it: by the innermost function at the jump,
         * an inlined one's when the tail call is in inlined code (gdb makes
         * no inline frames on a tail-call frame; glibc's static pthread_kill
         * tail-calls from its inlined __pthread_kill_internal) */
        struct sym_frame sf[1];
        if (sym_frames(s, space, out[n].pc, 0, sf, 1) == 1 && sf[0].inlined)
            out[n].func = sf[0].func;
        Dwarf_Addr cb;
        Dwarf_Die cumem;
        Dwarf_Die *cu = cu_of(f, r - 1, &cumem, &cb);
        out[n].file = gdb_line(f, cu, cb, r - 1, &out[n].line);
    }
    return n;
}
