/*
 * rawwrite.c -- the one reader of the in-memory ABI and writer of raw chunks
 * (funtrace_rawwrite.h; prose in FORMAT.md section 2, esp. 2.3).
 *
 * Shared by the runtime's snapshot writer (own memory, possibly in a signal
 * handler), coreextract (core files and live pids) and funtrace-oomwatch.
 * gdb/funtrace.py mirrors it byte for byte.
 *
 * This file: context, reading/writing helpers, chunk framing, MAPPINGS and
 * PROCMAPS, root, modules, generations, command line and ft_raw_emit; the
 * rings and per-thread chunks are in rawwrite_ring.c, the internals both
 * share in rawwrite_int.h.
 *
 * Rules of these files:
 *   - async-signal-safe: no malloc, no stdio, no locks, no errno games;
 *   - bounded stack (about 23 KiB deepest: ft_raw_emit + ft_rw_emit_thread, by -fstack-usage);
 *   - target memory is only ever read through the ft_reader, and only through
 *     the offsets of the root's layout table (never the C structs);
 *   - every pointer, count and size read from the target is range-checked and
 *     every loop is bounded by a checked count, so corrupt input cannot make it
 *     crash, hang or overflow;
 *   - every chunk's length is computed before its header is written (rings
 *     are read once to plan and once to stream; live rings may be copied once
 *     into a caller-provided scratch buffer instead, and a non-live source
 *     that holds a ring in our memory (ft_source_info.map, e.g. an mmapped
 *     core) has it planned and streamed in place).
 */
#include "rawwrite_int.h"

#include <string.h>

/* width in bytes and owning structure of every known field (funtrace_abi.h's
 * field table) */
static const uint16_t field_width[FT_F_COUNT] = FT_FIELD_WIDTHS_INIT;
static const uint8_t field_owner[FT_F_COUNT] = FT_FIELD_STRUCTS_INIT;

static int field_struct(int id) { return field_owner[id]; }

/* ---- small async-signal-safe string helpers -------------------------------- */

struct sbuf { char *p; size_t cap, len; };

static void sb_str(struct sbuf *b, const char *s)
{
    while (*s && b->len + 1 < b->cap) b->p[b->len++] = *s++;
    b->p[b->len] = 0;
}

static void sb_u64(struct sbuf *b, uint64_t v, int hex)
{
    char t[24];
    int n = 0;
    if (hex) sb_str(b, "0x");
    do {
        unsigned d = (unsigned)(hex ? v % 16 : v % 10);
        t[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v = hex ? v / 16 : v / 10;
    } while (v && n < 23);
    while (n > 0 && b->len + 1 < b->cap) b->p[b->len++] = t[--n];
    b->p[b->len] = 0;
}

/* Record the first problem: "<what> <num> <what2> <hex>" (any part optional). */
void ft_rw_problem(struct rw *c, const char *a, int has_n, uint64_t n, const char *b2,
                   int has_x, uint64_t x)
{
    if (!c->st || c->st->problem[0]) return;
    struct sbuf b = { c->st->problem, sizeof c->st->problem, 0 };
    sb_str(&b, a);
    if (has_n) sb_u64(&b, n, 0);
    if (b2) sb_str(&b, b2);
    if (has_x) sb_u64(&b, x, 1);
}

/* ---- reading ------------------------------------------------------------- */

static size_t rd_with(size_t (*fn)(void *, uint64_t, void *, size_t), void *ctx, uint64_t addr, void *buf,
                      size_t len)
{
    if (len == 0) return 0;
    if (addr + len < addr) { /* wraps the address space */
        len = (size_t)(0 - addr);
        if (len == 0) return 0;
    }
    size_t got = fn(ctx, addr, buf, len);
    return got > len ? len : got;
}

size_t ft_rw_rd(const struct ft_reader *r, uint64_t addr, void *buf, size_t len)
{
    return rd_with(r->read, r->ctx, addr, buf, len);
}

size_t ft_rw_rd_ring(const struct ft_reader *r, uint64_t addr, void *buf, size_t len)
{
    return rd_with(r->read_ring ? r->read_ring : r->read, r->ctx, addr, buf, len);
}

int ft_rw_rd_full(const struct ft_reader *r, uint64_t addr, void *buf, size_t len)
{
    return ft_rw_rd(r, addr, buf, len) == len;
}

/* field `id` of a record held in buf[0..len); absent/out of range -> 0 */
uint64_t ft_rw_fget(const struct rw *c, const uint8_t *buf, size_t len, int id)
{
    uint16_t off = c->offs[id];
    unsigned wd = field_width[id];
    if (off == FT_OFF_ABSENT || (size_t)off + wd > len) return 0;
    if (wd == 8) { uint64_t v; memcpy(&v, buf + off, 8); return v; }
    if (wd == 4) { uint32_t v; memcpy(&v, buf + off, 4); return v; }
    return 0;
}

/* field `id` (4 or 8 bytes) of the structure at addr, read again from the
 * source (live: it may have changed since the structure was read); old if
 * absent or unreadable */
uint64_t ft_rw_fread(const struct rw *c, uint64_t addr, int id, uint64_t old)
{
    uint16_t off = c->offs[id];
    unsigned wd = field_width[id];
    if (off == FT_OFF_ABSENT) return old;
    if (wd == 8) { uint64_t v; return ft_rw_rd_full(c->rd, addr + off, &v, 8) ? v : old; }
    if (wd == 4) { uint32_t v; return ft_rw_rd_full(c->rd, addr + off, &v, 4) ? v : old; }
    return old;
}

/* copy a byte-array field (absent -> zeros) */
void ft_rw_fbytes(const struct rw *c, const uint8_t *buf, size_t len, int id, void *out)
{
    uint16_t off = c->offs[id];
    unsigned wd = field_width[id];
    if (off == FT_OFF_ABSENT || (size_t)off + wd > len) memset(out, 0, wd);
    else memcpy(out, buf + off, wd);
}

/* ---- writing ------------------------------------------------------------- */

int ft_rw_wr(struct rw *c, const void *p, size_t n)
{
    if (n == 0) return 0;
    if (c->w->write(c->w->ctx, p, n) != 0) return -1;
    if (c->st) c->st->bytes += n;
    return 0;
}

int ft_raw_chunk_header(const struct ft_writer *w, const char magic[8], uint64_t len,
                        struct ft_emit_stats *stats)
{
    struct ft_chunk_header h;
    memcpy(h.magic, magic, FT_CHUNK_MAGIC_LEN);
    h.length = len;
    if (w->write(w->ctx, &h, sizeof h) != 0) return -1;
    if (stats) stats->bytes += sizeof h;
    return 0;
}

int ft_raw_chunk(const struct ft_writer *w, const char magic[8], const void *payload,
                 uint64_t len, struct ft_emit_stats *stats)
{
    if (ft_raw_chunk_header(w, magic, len, stats) != 0) return -1;
    if (len) {
        if (w->write(w->ctx, payload, (size_t)len) != 0) return -1;
        if (stats) stats->bytes += len;
    }
    return 0;
}

int ft_raw_end(const struct ft_writer *w, struct ft_emit_stats *stats)
{
    return ft_raw_chunk_header(w, FT_CHUNK_END, 0, stats);
}

int ft_rw_chunk_hdr(struct rw *c, const char *magic, uint64_t len)
{
    return ft_raw_chunk_header(c->w, magic, len, c->st);
}

/* ---- MAPPINGS helpers ----------------------------------------------------- */

size_t ft_mapping_record_size(size_t path_len)
{
    if (path_len > 0xFFFFFFFFu - 8) return 0;
    return sizeof(struct ft_raw_mapping) + ((path_len + 7) & ~(size_t)7);
}

size_t ft_mapping_record_encode(void *buf, size_t cap, const struct ft_raw_mapping *m,
                                const char *path, size_t path_len)
{
    size_t need = ft_mapping_record_size(path_len);
    if (need == 0 || cap < need) return 0;
    struct ft_raw_mapping r = *m;
    r.path_len = (uint32_t)path_len;
    r.reserved = 0;
    if (r.build_id_len > FT_BUILD_ID_MAX) r.build_id_len = FT_BUILD_ID_MAX;
    memset(r.build_id + r.build_id_len, 0, FT_BUILD_ID_MAX - r.build_id_len);
    uint8_t *o = buf;
    memcpy(o, &r, sizeof r);
    if (path_len) memcpy(o + sizeof r, path, path_len);
    memset(o + sizeof r + path_len, 0, need - sizeof r - path_len);
    return need;
}

/* ---- PROCMAPS: the MAPPINGS payload as /proc/PID/maps text ---------------- */

/* One line per MAPPINGS record, in record order (FORMAT.md 2.x):
 *   "%08lx-%08lx %c%c%cp %08lx 00:00 0 <path>\n"
 * perms from prot ('-' when the bit is clear or prot is unknown); a '\n' in
 * a path is written as the kernel writes it, "\012".  Records are walked the
 * way readers walk them; a malformed record ends the text. */
static size_t pm_hex8(char *o, uint64_t v)
{
    char t[16];
    size_t n = 0, k = 0;
    do {
        unsigned d = (unsigned)(v & 15);
        t[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v >>= 4;
    } while (v);
    while (n < 8) t[n++] = '0';
    while (n) o[k++] = t[--n];
    return k;
}

/* The line up to the path; returns its length (<= 64). */
static size_t pm_prefix(char *o, const struct ft_raw_mapping *m)
{
    size_t k = pm_hex8(o, m->start);
    o[k++] = '-';
    k += pm_hex8(o + k, m->end);
    o[k++] = ' ';
    o[k++] = m->prot & FT_MAPF_R ? 'r' : '-';
    o[k++] = m->prot & FT_MAPF_W ? 'w' : '-';
    o[k++] = m->prot & FT_MAPF_X ? 'x' : '-';
    o[k++] = 'p';
    o[k++] = ' ';
    k += pm_hex8(o + k, m->offset);
    memcpy(o + k, " 00:00 0 ", 9);
    return k + 9;
}

/* Walk the records: with out == NULL only count; returns the text length, or
 * (uint64_t)-1 if a write failed. */
static uint64_t pm_walk(struct rw *c, const uint8_t *p, size_t len, int out)
{
    uint64_t total = 0;
    size_t off = 0;
    while (len - off >= sizeof(struct ft_raw_mapping)) {
        struct ft_raw_mapping m;
        memcpy(&m, p + off, sizeof m);
        size_t rs = ft_mapping_record_size(m.path_len);
        if (rs == 0 || rs > len - off) break;
        const char *path = (const char *)p + off + sizeof m;
        char pre[64];
        size_t pl = pm_prefix(pre, &m);
        if (out && ft_rw_wr(c, pre, pl)) return (uint64_t)-1;
        total += pl;
        size_t run = 0;
        for (size_t i = 0; i <= m.path_len; i++) {
            if (i < m.path_len && path[i] != '\n') continue;
            if (out && ft_rw_wr(c, path + run, i - run)) return (uint64_t)-1;
            total += i - run;
            if (i < m.path_len) {
                if (out && ft_rw_wr(c, "\\012", 4)) return (uint64_t)-1;
                total += 4;
            }
            run = i + 1;
        }
        if (out && ft_rw_wr(c, "\n", 1)) return (uint64_t)-1;
        total += 1;
        off += rs;
    }
    return total;
}

static int emit_procmaps(struct rw *c, const void *mappings, size_t len)
{
    if (!mappings) len = 0;
    uint64_t n = pm_walk(c, mappings, len, 0);
    if (ft_rw_chunk_hdr(c, FT_CHUNK_PROCMAPS, n)) return -1;
    return pm_walk(c, mappings, len, 1) == (uint64_t)-1 ? -1 : 0;
}

/* ---- root ---------------------------------------------------------------- */

/* The magic is kept complemented here too: rawwrite.o is linked into every
 * traced program, whose file must not contain the real bytes (FORMAT.md 1.1). */
#define C16(s) { (unsigned char)~(s)[0], (unsigned char)~(s)[1], (unsigned char)~(s)[2], \
    (unsigned char)~(s)[3], (unsigned char)~(s)[4], (unsigned char)~(s)[5], (unsigned char)~(s)[6], \
    (unsigned char)~(s)[7], (unsigned char)~(s)[8], (unsigned char)~(s)[9], (unsigned char)~(s)[10], \
    (unsigned char)~(s)[11], (unsigned char)~(s)[12], (unsigned char)~(s)[13], (unsigned char)~(s)[14], \
    (unsigned char)~(s)[15] }
static const unsigned char root_magic_c[FT_ROOT_MAGIC_LEN] = C16(FT_ROOT_MAGIC);

static int is_root_magic(const uint8_t *m)
{
    unsigned char d = 0;
    for (unsigned i = 0; i < FT_ROOT_MAGIC_LEN; i++) d |= (unsigned char)(m[i] ^ (unsigned char)~root_magic_c[i]);
    return d == 0;
}

const char *ft_root_strerror(int code)
{
    switch (code) {
    case 0: return "valid root";
    case FT_ROOT_EREAD: return "root memory not readable";
    case FT_ROOT_EMAGIC: return "no funtrace root magic";
    case FT_ROOT_ESELF: return "root self-pointer does not match its address";
    case FT_ROOT_EVERSION: return "unknown funtrace ABI version";
    case FT_ROOT_ELAYOUT: return "invalid root layout table";
    default: return "invalid root";
    }
}

/* Validate and load the root into c (used by ft_root_check and ft_raw_emit). */
static int root_load(struct rw *c, const struct ft_reader *r, uint64_t addr)
{
    struct ft_root_header h;
    if (!ft_rw_rd_full(r, addr, &h, sizeof h)) return FT_ROOT_EREAD;
    if (!is_root_magic(h.magic)) return FT_ROOT_EMAGIC;
    if (h.self != addr) return FT_ROOT_ESELF;
    if (h.abi_version != FT_ABI_VERSION) return FT_ROOT_EVERSION;
    if (h.word_size != 8 || h.endian != 1 || h.header_size != sizeof h) return FT_ROOT_ELAYOUT;
    if (h.root_size < sizeof h || h.root_size > RW_ROOT_MAX) return FT_ROOT_ELAYOUT;
    if (h.n_sizes < FT_S_COUNT || h.n_sizes > 1024 || h.n_offsets == 0 || h.n_offsets > 4096)
        return FT_ROOT_ELAYOUT;
    if ((h.sizes_off & 3) || (h.offsets_off & 1)) return FT_ROOT_ELAYOUT;
    if ((uint64_t)h.sizes_off + 4ull * h.n_sizes > h.root_size ||
        (uint64_t)h.offsets_off + 2ull * h.n_offsets > h.root_size ||
        h.sizes_off < sizeof h || h.offsets_off < sizeof h)
        return FT_ROOT_ELAYOUT;
    c->rd = r;
    c->root_addr = addr;
    c->root_size = h.root_size;
    memset(c->root, 0, sizeof c->root);
    if (!ft_rw_rd_full(r, addr, c->root, h.root_size)) return FT_ROOT_EREAD;
    /* the copy must still be the root we checked (live targets) */
    if (memcmp(c->root, &h, sizeof h) != 0) return FT_ROOT_EREAD;
    memcpy(c->sizes, c->root + h.sizes_off, sizeof c->sizes);
    for (unsigned i = 0; i < FT_F_COUNT; i++) {
        uint16_t o = FT_OFF_ABSENT;
        if (i < h.n_offsets) memcpy(&o, c->root + h.offsets_off + 2 * i, 2);
        c->offs[i] = o;
    }
    if (c->sizes[FT_S_ROOT] != h.root_size) return FT_ROOT_ELAYOUT;
    if (c->sizes[FT_S_THREAD] < 64 || c->sizes[FT_S_THREAD] > RW_STRUCT_MAX ||
        c->sizes[FT_S_MODULE] < 8 || c->sizes[FT_S_MODULE] > RW_STRUCT_MAX ||
        c->sizes[FT_S_GEN] < 8 || c->sizes[FT_S_GEN] > RW_STRUCT_MAX ||
        c->sizes[FT_S_ENTRY_EXACT16] != 16 || c->sizes[FT_S_ENTRY_SAMPLED8] != 8)
        return FT_ROOT_ELAYOUT;
    for (int i = 0; i < FT_F_COUNT; i++) {
        if (c->offs[i] == FT_OFF_ABSENT || !field_width[i]) continue; /* absent / not read here */
        if ((uint32_t)c->offs[i] + field_width[i] > c->sizes[field_struct(i)]) return FT_ROOT_ELAYOUT;
        if (field_struct(i) == FT_S_ROOT && c->offs[i] < sizeof h) return FT_ROOT_ELAYOUT;
    }
    static const int required[] = {
        FT_F_ROOT_THREADS, FT_F_ROOT_THREADS_CAP, FT_F_ROOT_THREADS_USED, FT_F_THR_POS,
        FT_F_THR_RING, FT_F_THR_RING_SIZE, FT_F_THR_TID, FT_F_THR_STATE, FT_F_THR_FMT,
    };
    for (unsigned i = 0; i < sizeof required / sizeof required[0]; i++)
        if (c->offs[required[i]] == FT_OFF_ABSENT) return FT_ROOT_ELAYOUT;
    return 0;
}

int ft_root_check(const struct ft_reader *rd_, uint64_t addr)
{
    struct rw c;
    memset(&c, 0, sizeof c);
    return root_load(&c, rd_, addr);
}

static uint64_t rootf(const struct rw *c, int id)
{
    return ft_rw_fget(c, c->root, c->root_size, id);
}

/* a root field that older roots may lack: FT_RAW_UNKNOWN then */
static uint64_t rootf_or_unknown(const struct rw *c, int id)
{
    return c->offs[id] == FT_OFF_ABSENT ? FT_RAW_UNKNOWN : rootf(c, id);
}

/* ---- fatal-signal episodes -------------------------------------------------- */

/* FAULTS: the valid records of root->faults (seq in (total - SLOTS, total],
 * at slot (seq - 1) % SLOTS), oldest first; none when the root has no such
 * fields or recorded no episode.  Returns the number of records (<= SLOTS)
 * into out. */
static uint32_t faults_collect(const struct rw *c, uint64_t *total, struct ft_fault *out)
{
    uint32_t n = 0;
    *total = 0;
    if (c->offs[FT_F_ROOT_FAULTS_TOTAL] == FT_OFF_ABSENT || c->offs[FT_F_ROOT_FAULTS] == FT_OFF_ABSENT)
        return 0;
    uint64_t t = rootf(c, FT_F_ROOT_FAULTS_TOTAL);
    struct ft_fault slots[FT_FAULT_SLOTS];
    ft_rw_fbytes(c, c->root, c->root_size, FT_F_ROOT_FAULTS, slots);
    *total = t;
    uint64_t first = t > FT_FAULT_SLOTS ? t - FT_FAULT_SLOTS + 1 : 1;
    for (uint64_t q = first; t && q <= t; q++) {
        const struct ft_fault *f = &slots[(q - 1) % FT_FAULT_SLOTS];
        if (f->seq != q || f->state == FT_FAULT_FREE || f->state > FT_FAULT_CAUGHT)
            continue; /* being rewritten, or garbage */
        out[n++] = *f;
    }
    return n;
}

static int emit_faults(struct rw *c)
{
    struct ft_fault f[FT_FAULT_SLOTS];
    struct ft_raw_faults h;
    uint64_t total;
    uint32_t n = faults_collect(c, &total, f);
    if (!total)
        return 0;
    memset(&h, 0, sizeof h);
    h.total = total;
    h.n = n;
    if (ft_rw_chunk_hdr(c, FT_CHUNK_FAULTS, sizeof h + (uint64_t)n * sizeof f[0])) return -1;
    if (ft_rw_wr(c, &h, sizeof h)) return -1;
    return ft_rw_wr(c, f, (size_t)n * sizeof f[0]);
}

/* ---- modules, generations, command line ----------------------------------- */

static uint32_t clamp_count(struct rw *c, uint64_t used, uint64_t cap, uint32_t max, const char *what)
{
    if (cap > max) {
        c->partial = 1;
        ft_rw_problem(c, what, 0, 0, " table capacity is implausible: ", 1, cap);
        cap = max;
    }
    if (used > cap) {
        c->partial = 1;
        ft_rw_problem(c, what, 0, 0, " table count exceeds its capacity: ", 1, used);
        used = cap;
    }
    return (uint32_t)used;
}

static int mod_read(struct rw *c, uint32_t i, uint8_t *b)
{
    uint32_t sz = c->sizes[FT_S_MODULE];
    return ft_rw_rd_full(c->rd, c->modules + (uint64_t)i * sz, b, sz);
}

static int mod_valid(struct rw *c, const uint8_t *b)
{
    uint64_t s = ft_rw_fget(c, b, c->sizes[FT_S_MODULE], FT_F_MOD_STATE);
    return s == FT_MOD_LOADED || s == FT_MOD_UNLOADED;
}

static void mod_pack(struct rw *c, const uint8_t *b, struct ft_module *m)
{
    size_t sz = c->sizes[FT_S_MODULE];
    memset(m, 0, sizeof *m);
    m->bias = ft_rw_fget(c, b, sz, FT_F_MOD_BIAS);
    m->gen_loaded = ft_rw_fget(c, b, sz, FT_F_MOD_GEN_LOADED);
    m->gen_unloaded = ft_rw_fget(c, b, sz, FT_F_MOD_GEN_UNLOADED);
    m->epoch_loaded = ft_rw_fget(c, b, sz, FT_F_MOD_EPOCH_LOADED);
    m->epoch_unloaded = ft_rw_fget(c, b, sz, FT_F_MOD_EPOCH_UNLOADED);
    m->state = (uint32_t)ft_rw_fget(c, b, sz, FT_F_MOD_STATE);
    m->nseg = (uint32_t)ft_rw_fget(c, b, sz, FT_F_MOD_NSEG);
    if (m->nseg > FT_MOD_SEGS) m->nseg = FT_MOD_SEGS;
    ft_rw_fbytes(c, b, sz, FT_F_MOD_SEG, m->seg);
    for (unsigned i = m->nseg; i < FT_MOD_SEGS; i++) m->seg[i].start = m->seg[i].size = 0;
    m->build_id_len = (uint32_t)ft_rw_fget(c, b, sz, FT_F_MOD_BUILD_ID_LEN);
    if (m->build_id_len > FT_BUILD_ID_MAX) m->build_id_len = FT_BUILD_ID_MAX;
    ft_rw_fbytes(c, b, sz, FT_F_MOD_BUILD_ID, m->build_id);
    memset(m->build_id + m->build_id_len, 0, FT_BUILD_ID_MAX - m->build_id_len);
    ft_rw_fbytes(c, b, sz, FT_F_MOD_PATH, m->path);
    m->path[FT_MOD_PATH_MAX - 1] = 0;
    size_t pl = strlen(m->path);
    memset(m->path + pl, 0, FT_MOD_PATH_MAX - pl);
}

static int emit_modules(struct rw *c)
{
    uint8_t b[RW_STRUCT_MAX];
    uint32_t n = 0, lost = 0;
    for (uint32_t i = 0; i < c->modules_used; i++) {
        if (!mod_read(c, i, b)) { lost++; continue; }
        if (mod_valid(c, b)) n++;
    }
    if (lost) {
        c->partial = 1;
        ft_rw_problem(c, "module table not readable at ", 0, 0, NULL, 1, c->modules);
    }
    if (ft_rw_chunk_hdr(c, FT_CHUNK_MODULES, (uint64_t)n * sizeof(struct ft_module))) return -1;
    uint32_t done = 0;
    struct ft_module m;
    for (uint32_t i = 0; i < c->modules_used && done < n; i++) {
        if (!mod_read(c, i, b) || !mod_valid(c, b)) continue;
        mod_pack(c, b, &m);
        if (ft_rw_wr(c, &m, sizeof m)) return -1;
        done++;
    }
    memset(&m, 0, sizeof m);
    for (; done < n; done++)   /* live table changed between the passes */
        if (ft_rw_wr(c, &m, sizeof m)) return -1;
    if (c->st) c->st->nmodules = n;
    return 0;
}

/* count of modules (pre-pass, for partial flag) */
static void modules_prepass(struct rw *c)
{
    uint8_t b[RW_STRUCT_MAX];
    for (uint32_t i = 0; i < c->modules_used; i++)
        if (!mod_read(c, i, b)) {
            c->partial = 1;
            ft_rw_problem(c, "module table not readable at ", 0, 0, NULL, 1, c->modules);
            return;
        }
}

static int emit_gens(struct rw *c)
{
    struct ft_gen g[FT_GEN_SLOTS];
    uint32_t n = 0;
    uint8_t b[RW_STRUCT_MAX];
    size_t sz = c->sizes[FT_S_GEN];
    for (uint32_t i = 0; i < c->gens_cap; i++) {
        if (!ft_rw_rd_full(c->rd, c->gens + (uint64_t)i * sz, b, sz)) continue;
        if (!(ft_rw_fget(c, b, sz, FT_F_GEN_FLAGS) & FT_GENF_VALID)) continue;
        struct ft_gen x;
        x.gen = ft_rw_fget(c, b, sz, FT_F_GEN_GEN);
        x.flags = ft_rw_fget(c, b, sz, FT_F_GEN_FLAGS);
        x.start_tsc = ft_rw_fget(c, b, sz, FT_F_GEN_START_TSC);
        x.clk_tsc = ft_rw_fget(c, b, sz, FT_F_GEN_CLK_TSC);
        x.clk_mono_ns = ft_rw_fget(c, b, sz, FT_F_GEN_CLK_MONO_NS);
        x.clk_real_ns = ft_rw_fget(c, b, sz, FT_F_GEN_CLK_REAL_NS);
        x.tsc_hz = ft_rw_fget(c, b, sz, FT_F_GEN_TSC_HZ);
        x.module_epoch = ft_rw_fget(c, b, sz, FT_F_GEN_MODULE_EPOCH);
        /* insertion sort, ascending gen, ties keep table order */
        uint32_t j = n;
        while (j > 0 && g[j - 1].gen > x.gen) { g[j] = g[j - 1]; j--; }
        g[j] = x;
        n++;
    }
    if (c->st) c->st->ngens = n;
    return ft_raw_chunk(c->w, FT_CHUNK_GENS, g, (uint64_t)n * sizeof g[0], c->st);
}

static void gens_prepass(struct rw *c)
{
    uint8_t b[RW_STRUCT_MAX];
    size_t sz = c->sizes[FT_S_GEN];
    for (uint32_t i = 0; i < c->gens_cap; i++)
        if (!ft_rw_rd_full(c->rd, c->gens + (uint64_t)i * sz, b, sz)) {
            c->partial = 1;
            ft_rw_problem(c, "generation table not readable at ", 0, 0, NULL, 1, c->gens);
            return;
        }
}

/* CMD LINE: the cmdline bytes with NULs turned into ' ', trailing NULs cut;
 * readable prefix only. Returns payload length; *complete set. */
static uint64_t cmdline_len(struct rw *c, uint64_t addr, uint64_t len, int *complete)
{
    uint8_t b[RW_OUT];
    uint64_t keep = 0, off = 0;
    *complete = 1;
    while (off < len) {
        size_t n = len - off > sizeof b ? sizeof b : (size_t)(len - off);
        size_t got = ft_rw_rd(c->rd, addr + off, b, n);
        for (size_t i = 0; i < got; i++)
            if (b[i]) keep = off + i + 1;
        if (got < n) { *complete = 0; break; }
        off += n;
    }
    return keep;
}

static int emit_cmdline(struct rw *c, uint64_t addr, uint64_t keep)
{
    uint8_t b[RW_OUT];
    if (ft_rw_chunk_hdr(c, FT_CHUNK_CMDLINE, keep)) return -1;
    uint64_t off = 0;
    while (off < keep) {
        size_t n = keep - off > sizeof b ? sizeof b : (size_t)(keep - off);
        size_t got = ft_rw_rd(c->rd, addr + off, b, n);
        if (got < n) memset(b + got, ' ', n - got); /* vanished since the pre-pass (live) */
        for (size_t i = 0; i < n; i++)
            if (!b[i]) b[i] = ' ';
        if (ft_rw_wr(c, b, n)) return -1;
        off += n;
    }
    return 0;
}

/* ---- the whole trace ----------------------------------------------------- */

int ft_raw_emit(const struct ft_reader *rdr, uint64_t root_addr, const struct ft_source_info *si,
                const struct ft_writer *w, struct ft_emit_stats *stats)
{
    struct rw cc;
    struct rw *c = &cc;
    memset(c, 0, sizeof *c);
    c->w = w;
    c->si = si;
    c->st = stats;
    if (stats) {
        uint64_t bytes = stats->bytes;
        memset(stats, 0, sizeof *stats);
        stats->bytes = bytes;
    }
    int rc = root_load(c, rdr, root_addr);
    if (rc) {
        ft_rw_problem(c, ft_root_strerror(rc), 0, 0, " at ", 1, root_addr);
        return -2;
    }
    if (stats) stats->abi_version = FT_ABI_VERSION;
    c->pid = si->pid ? si->pid : rootf(c, FT_F_ROOT_PID);
    c->threads = rootf(c, FT_F_ROOT_THREADS);
    c->modules = rootf(c, FT_F_ROOT_MODULES);
    c->gens = rootf(c, FT_F_ROOT_GENS);
    c->threads_used = clamp_count(c, rootf(c, FT_F_ROOT_THREADS_USED), rootf(c, FT_F_ROOT_THREADS_CAP),
                                 RW_MAX_THREADS, "thread");
    c->modules_used = clamp_count(c, rootf(c, FT_F_ROOT_MODULES_USED), rootf(c, FT_F_ROOT_MODULES_CAP),
                                 RW_MAX_MODULES, "module");
    uint64_t gcap = rootf(c, FT_F_ROOT_GENS_CAP);
    if (gcap > FT_GEN_SLOTS) {
        c->partial = 1;
        ft_rw_problem(c, "generation table capacity is implausible: ", 0, 0, NULL, 1, gcap);
        gcap = FT_GEN_SLOTS;
    }
    c->gens_cap = c->gens ? (uint32_t)gcap : 0;
    if (!c->modules) c->modules_used = 0;
    /* array ranges must not wrap the address space */
    if (c->threads_used && c->threads + (uint64_t)c->threads_used * c->sizes[FT_S_THREAD] < c->threads) {
        c->partial = 1;
        ft_rw_problem(c, "thread registry address is invalid: ", 0, 0, NULL, 1, c->threads);
        c->threads_used = 0;
    }
    if (c->modules_used && c->modules + (uint64_t)c->modules_used * c->sizes[FT_S_MODULE] < c->modules) {
        c->partial = 1;
        ft_rw_problem(c, "module table address is invalid: ", 0, 0, NULL, 1, c->modules);
        c->modules_used = 0;
    }
    if (c->gens_cap && c->gens + (uint64_t)c->gens_cap * c->sizes[FT_S_GEN] < c->gens) {
        c->partial = 1;
        c->gens_cap = 0;
    }

    /* ---- pre-pass: everything the header must say ---- */
    uint64_t cmd_addr = rootf(c, FT_F_ROOT_CMDLINE), cmd_len = rootf(c, FT_F_ROOT_CMDLINE_LEN);
    if (cmd_len > RW_CMDLINE_MAX) cmd_len = RW_CMDLINE_MAX;
    if (!cmd_addr) cmd_len = 0;
    int cmd_complete;
    uint64_t cmd_keep = cmdline_len(c, cmd_addr, cmd_len, &cmd_complete);
    if (!cmd_complete) {
        c->partial = 1;
        ft_rw_problem(c, "command line not readable at ", 0, 0, NULL, 1, cmd_addr);
    }
    modules_prepass(c);
    gens_prepass(c);

    struct trec t;
    struct rview v;
    uint32_t nthreads = 0, lost = 0;
    for (uint32_t i = 0; i < c->threads_used; i++) {
        if (!ft_rw_trec_read(c, i, &t)) {
            lost++;
            ft_rw_problem(c, "thread record not readable at ", 0, 0, NULL, 1, t.addr);
            continue;
        }
        uint64_t s = TF(&t, FT_F_THR_STATE);
        if (s == FT_THR_FREE) continue;
        if (!ft_rw_state_emitted(s)) {
            lost++;
            ft_rw_problem(c, "thread record with invalid state at ", 0, 0, NULL, 1, t.addr);
            continue;
        }
        nthreads++;
        ft_rw_thread_prepass(c, &t, &v, i);
    }
    if (lost) c->partial = 1;

    /* ---- header ---- */
    uint64_t tsc_hz = rootf(c, FT_F_ROOT_TSC_HZ);
    struct ft_raw_header h;
    memset(&h, 0, sizeof h);
    h.raw_version = FT_RAW_VERSION;
    h.abi_version = FT_ABI_VERSION;
    h.source = si->source;
    h.flags = si->extra_flags | (c->partial ? FT_RAWF_PARTIAL : 0) | (si->min_tsc ? FT_RAWF_TIME_FILTERED : 0);
    h.pid = c->pid;
    h.tsc_hz = tsc_hz;
    h.tsc_hz_source = (uint32_t)rootf(c, FT_F_ROOT_TSC_HZ_SOURCE);
    h.time_mode = (uint32_t)rootf(c, FT_F_ROOT_TIME_MODE);
    h.gen_current = rootf(c, FT_F_ROOT_GEN_CURRENT);
    h.gen_ms = rootf(c, FT_F_ROOT_GEN_MS);
    h.module_epoch = rootf(c, FT_F_ROOT_MODULE_EPOCH);
    h.root_addr = root_addr;
    h.taken_tsc = si->taken_tsc;
    h.min_tsc = si->min_tsc;
    h.nthreads = nthreads;
    h.nthreads_lost = lost;
    h.threads_created = rootf_or_unknown(c, FT_F_ROOT_THREADS_CREATED);
    h.rings_evicted = rootf_or_unknown(c, FT_F_ROOT_RINGS_EVICTED);
    h.records_reused = rootf_or_unknown(c, FT_F_ROOT_RECORDS_REUSED);
    if (stats) {
        stats->header_flags = h.flags;
        stats->nthreads_lost = lost;
        stats->pid = h.pid;
    }

    if (ft_raw_chunk(w, FT_CHUNK_FUNTRACE, &tsc_hz, 8, stats)) return -1;
    if (ft_raw_chunk(w, FT_CHUNK_HEADER, &h, sizeof h, stats)) return -1;
    if (emit_cmdline(c, cmd_addr, cmd_keep)) return -1;
    if (si->crash && ft_raw_chunk(w, FT_CHUNK_SIGINFO, si->crash, sizeof *si->crash, stats)) return -1;
    if (emit_faults(c)) return -1;
    if (ft_raw_chunk(w, FT_CHUNK_MAPPINGS, si->mappings, si->mappings ? si->mappings_len : 0, stats))
        return -1;
    if (emit_procmaps(c, si->mappings, si->mappings_len)) return -1;
    if (emit_modules(c)) return -1;
    if (emit_gens(c)) return -1;

    /* ---- threads ---- */
    uint32_t done = 0;
    for (uint32_t i = 0; i < c->threads_used && done < nthreads; i++) {
        if (!ft_rw_trec_read(c, i, &t)) continue;
        if (!ft_rw_state_emitted(TF(&t, FT_F_THR_STATE))) continue;
        if (si->on_thread) si->on_thread(si->on_thread_ctx, (uint32_t)TF(&t, FT_F_THR_TID));
        if (ft_rw_emit_thread(c, &t, &v)) return -1;
        done++;
    }
    for (; done < nthreads; done++) {    /* live registry changed between passes */
        struct ft_raw_threadid ti;
        struct ft_raw_thread rt;
        memset(&ti, 0, sizeof ti);
        memset(&rt, 0, sizeof rt);
        ti.pid = c->pid;
        rt.flags = FT_TSF_RING_MISSING;
        for (unsigned g = 0; g < FT_GEN_SLOTS; g++) rt.gen_pos[g].gen = FT_GEN_NONE;
        if (ft_raw_chunk(w, FT_CHUNK_THREADID, &ti, sizeof ti, stats) ||
            ft_raw_chunk(w, FT_CHUNK_THREADSTAT, &rt, sizeof rt, stats) ||
            ft_rw_chunk_hdr(c, FT_CHUNK_TRACEBUF, 0))
            return -1;
    }
    return 0;
}

/* ---- what ft_raw_emit reads (funtrace_rawwrite.h) -------------------------- */

int ft_raw_needed(const struct ft_reader *rdr, uint64_t root_addr, uint64_t lo, uint64_t hi,
                  void (*need)(void *ctx, int what, uint64_t addr, uint64_t len), void *ctx)
{
    struct rw cc;
    struct rw *c = &cc;
    memset(c, 0, sizeof *c);
    int rc = root_load(c, rdr, root_addr);
    if (rc) return rc;
    need(ctx, FT_NEED_ROOT, root_addr, c->root_size);
    uint64_t cmd = rootf(c, FT_F_ROOT_CMDLINE), cmd_len = rootf(c, FT_F_ROOT_CMDLINE_LEN);
    if (cmd && cmd_len) need(ctx, FT_NEED_CMDLINE, cmd, cmd_len > RW_CMDLINE_MAX ? RW_CMDLINE_MAX : cmd_len);
    c->threads = rootf(c, FT_F_ROOT_THREADS);
    c->modules = rootf(c, FT_F_ROOT_MODULES);
    c->gens = rootf(c, FT_F_ROOT_GENS);
    uint32_t nthr = clamp_count(c, rootf(c, FT_F_ROOT_THREADS_USED), rootf(c, FT_F_ROOT_THREADS_CAP),
                                RW_MAX_THREADS, "thread");
    uint32_t nmod = clamp_count(c, rootf(c, FT_F_ROOT_MODULES_USED), rootf(c, FT_F_ROOT_MODULES_CAP),
                                RW_MAX_MODULES, "module");
    uint64_t gcap = rootf(c, FT_F_ROOT_GENS_CAP);
    if (gcap > FT_GEN_SLOTS) gcap = FT_GEN_SLOTS;
    if (c->modules && nmod) need(ctx, FT_NEED_MODULES, c->modules, (uint64_t)nmod * c->sizes[FT_S_MODULE]);
    if (c->gens && gcap) need(ctx, FT_NEED_GENS, c->gens, gcap * c->sizes[FT_S_GEN]);
    uint64_t sz = c->sizes[FT_S_THREAD];
    if (!c->threads || !nthr || c->threads + nthr * sz < c->threads) return 0;
    need(ctx, FT_NEED_REGISTRY, c->threads, nthr * sz);
    /* the records starting in [lo, hi) */
    uint64_t first = lo <= c->threads ? 0 : (lo - c->threads + sz - 1) / sz;
    uint64_t end = hi <= c->threads ? 0 : (hi - c->threads + sz - 1) / sz;
    if (end > nthr) end = nthr;
    struct trec t;
    int unknown = 0;
    for (uint64_t i = first; i < end; i++) {
        if (!ft_rw_trec_read(c, (uint32_t)i, &t)) {
            unknown++;
            continue;
        }
        uint64_t ring = TF(&t, FT_F_THR_RING), size = TF(&t, FT_F_THR_RING_SIZE);
        if (ring && size && size <= RW_MAX_RING && ring + size > ring) need(ctx, FT_NEED_RING, ring, size);
    }
    return unknown;
}

/* ---- a stopped process's "now" in TSC ticks -------------------------------- */

uint64_t ft_raw_estimate_tsc(const struct ft_reader *rdr, uint64_t root_addr, uint64_t now_mono_ns)
{
    struct rw cc;
    struct rw *c = &cc;
    memset(c, 0, sizeof *c);
    if (root_load(c, rdr, root_addr) != 0) return 0;
    uint64_t gens = rootf(c, FT_F_ROOT_GENS), cap = rootf(c, FT_F_ROOT_GENS_CAP);
    if (!gens || cap > FT_GEN_SLOTS) return 0;
    uint8_t b[RW_STRUCT_MAX];
    size_t sz = c->sizes[FT_S_GEN];
    int have = 0;
    uint64_t best_gen = 0, clk_tsc = 0, mono = 0, hz = 0;
    for (uint32_t i = 0; i < cap; i++) {
        if (!ft_rw_rd_full(c->rd, gens + (uint64_t)i * sz, b, sz)) continue;
        if (!(ft_rw_fget(c, b, sz, FT_F_GEN_FLAGS) & FT_GENF_VALID)) continue;
        uint64_t g = ft_rw_fget(c, b, sz, FT_F_GEN_GEN);
        if (have && g < best_gen) continue;
        have = 1;
        best_gen = g;
        clk_tsc = ft_rw_fget(c, b, sz, FT_F_GEN_CLK_TSC);
        mono = ft_rw_fget(c, b, sz, FT_F_GEN_CLK_MONO_NS);
        hz = ft_rw_fget(c, b, sz, FT_F_GEN_TSC_HZ);
    }
    if (!hz) hz = rootf(c, FT_F_ROOT_TSC_HZ);
    if (!have || !hz || !clk_tsc) return 0;
    __int128 t = (__int128)clk_tsc + ((__int128)now_mono_ns - (__int128)mono) * (__int128)hz / 1000000000;
    return t < 0 ? 0 : (uint64_t)t;
}
