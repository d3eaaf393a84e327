/* rootfind.c -- find funtrace_root by symbol, else by magic scan (see rootfind.h) */
#include "rootfind.h"
#include "elfinfo.h"
#include "util.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_CHUNK (1u << 20)

static void hexid(char *out, size_t cap, const uint8_t *id, uint32_t n)
{
    size_t o = 0;
    for (uint32_t i = 0; i < n && o + 3 < cap; i++) o += (size_t)snprintf(out + o, cap - o, "%02x", id[i]);
    if (n == 0) snprintf(out, cap, "none");
}

/* memory build-id of the object at path (its offset-0 mapping) */
static uint32_t mem_build_id(const struct root_search *s, const char *path, uint8_t *id, uint64_t *start0)
{
    for (size_t i = 0; i < s->maps->n; i++) {
        const struct ce_map *m = &s->maps->v[i];
        if (m->offset == 0 && strcmp(m->path, path) == 0) {
            *start0 = m->start;
            memcpy(id, m->build_id, FT_BUILD_ID_MAX);
            return m->build_id_len;
        }
    }
    *start0 = 0;
    return 0;
}

/* try the symbol in one object; 1 found, 0 not */
static int try_object(const struct root_search *s, struct root_found *f, const char *path, int is_exe)
{
    struct elf_info ei;
    char err[512];
    const char *file = is_exe && s->exe_file ? s->exe_file : path;
    if (elf_info_load(file, FT_ROOT_SYMBOL, &ei, err, sizeof err) != 0) {
        if (is_exe) snprintf(f->why_not, sizeof f->why_not, "%s", err);
        if (is_exe && s->exe_file) /* an explicit EXE that cannot be used: say so (always) */
            snprintf(f->warning, sizeof f->warning, "%.400s; finding the root by scanning the core", err);
        return 0;
    }
    uint8_t mid[FT_BUILD_ID_MAX];
    uint64_t start0;
    uint32_t mlen = mem_build_id(s, path, mid, &start0);
    if (mlen && ei.build_id_len && (mlen != ei.build_id_len || memcmp(mid, ei.build_id, mlen) != 0)) {
        char a[96], b[96];
        hexid(a, sizeof a, ei.build_id, ei.build_id_len);
        hexid(b, sizeof b, mid, mlen);
        if (is_exe)
            snprintf(f->warning, sizeof f->warning,
                     "%s has build-id %s but the process ran build-id %s; not using its symbols", file, a, b);
        else
            ce_note("%s: build-id %s differs from the mapped %s; skipped", path, a, b);
        if (is_exe) snprintf(f->why_not, sizeof f->why_not, "%s is not the executable that ran (build-id differs)", file);
        return 0;
    }
    if (!ei.has_sym) {
        if (is_exe) {
            snprintf(f->why_not, sizeof f->why_not, "%s has no %s symbol", file, FT_ROOT_SYMBOL);
            f->exe_without_runtime = 1;
        }
        return 0;
    }
    f->runtime_seen = 1;
    uint64_t bias;
    if (is_exe && s->exe_bias_ok) bias = s->exe_bias;
    else if (start0) bias = start0 - ei.base_vaddr;
    else if (ei.type == ET_EXEC) bias = 0;
    else {
        snprintf(f->why_not, sizeof f->why_not, "%s is not mapped in the process", path);
        return 0;
    }
    uint64_t addr = bias + ei.sym_value;
    int rc = ft_root_check(s->rd, addr);
    if (rc == 0) {
        f->addr = addr;
        snprintf(f->how, sizeof f->how, "root found by symbol %s in %s at %#llx (load bias %#llx)",
                 FT_ROOT_SYMBOL, path, (unsigned long long)addr, (unsigned long long)bias);
        return 1;
    }
    snprintf(f->why_not, sizeof f->why_not, "%s in %s at %#llx: %s%s", FT_ROOT_SYMBOL, path,
             (unsigned long long)addr, ft_root_strerror(rc),
             rc == FT_ROOT_EMAGIC ? " (the runtime had not initialised yet?)" : "");
    return 0;
}

static int scan(const struct ft_reader *rd, const struct root_range *writable, size_t nwritable,
                struct root_found *f)
{
    uint8_t *buf = ce_xmalloc(SCAN_CHUNK);
    static const unsigned char magic[FT_ROOT_MAGIC_LEN] = FT_ROOT_MAGIC;
    uint64_t m0;
    memcpy(&m0, magic, 8);
    uint64_t scanned = 0;
    int found = 0, rejected = 0, last_rc = 0;
    for (size_t r = 0; r < nwritable && !found; r++) {
        uint64_t a = (writable[r].start + 7) & ~7ull;
        if (a < writable[r].start) continue; /* a range at the very top of the address space */
        /* (a < end first: a + 8 wraps for a range that ends at 2^64 - 1) */
        while (a < writable[r].end && writable[r].end - a >= 8 && !found) {
            uint64_t n = writable[r].end - a;
            if (n > SCAN_CHUNK) n = SCAN_CHUNK;
            size_t got = rd->read(rd->ctx, a, buf, (size_t)n);
            scanned += got;
            for (size_t i = 0; i + 8 <= got; i += 8) {
                uint64_t w;
                memcpy(&w, buf + i, 8);
                if (w != m0) continue;
                int rc = ft_root_check(rd, a + i);
                if (rc == 0) {
                    f->addr = a + i;
                    found = 1;
                    break;
                }
                rejected++;
                last_rc = rc;
            }
            uint64_t next = got < n ? ((a + got) & ~0xfffull) + 0x1000 /* hole: next page */ : a + n;
            if (next <= a) break; /* the top of the address space */
            a = next;
        }
    }
    free(buf);
    if (found) {
        f->by_scan = 1;
        snprintf(f->how, sizeof f->how, "root found by scanning %llu bytes of writable memory for the root magic, at %#llx",
                 (unsigned long long)scanned, (unsigned long long)f->addr);
        return 1;
    }
    if (rejected)
        snprintf(f->why_not + strlen(f->why_not), sizeof f->why_not - strlen(f->why_not),
                 "%s%d root magic candidate(s) rejected (%s)", f->why_not[0] ? "; " : "", rejected,
                 ft_root_strerror(last_rc));
    return 0;
}

int root_find(const struct root_search *s, struct root_found *f)
{
    memset(f, 0, sizeof *f);
    if (s->exe || s->exe_file) {
        if (try_object(s, f, s->exe ? s->exe : s->exe_file, 1)) return 0;
    } else {
        snprintf(f->why_not, sizeof f->why_not, "executable unknown");
    }
    for (size_t i = 0; i < s->maps->nobjs; i++) {
        const struct ce_obj *o = &s->maps->objs[i];
        if (!o->start0 || o->path[0] == '[' || (s->exe && strcmp(o->path, s->exe) == 0)) continue;
        if (try_object(s, f, o->path, 0)) return 0;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", f->why_not);
    if (scan(s->rd, s->writable, s->nwritable, f)) {
        if (why[0]) ce_note("symbol lookup failed: %s", why);
        return 0;
    }
    return -1;
}

int root_scan(const struct ft_reader *rd, const struct root_range *writable, size_t n, struct root_found *f)
{
    memset(f, 0, sizeof *f);
    return scan(rd, writable, n, f) ? 0 : -1;
}
