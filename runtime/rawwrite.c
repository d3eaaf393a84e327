/*
 * rawwrite.c -- the one reader of the in-memory ABI and writer of raw chunks
 * (funtrace_rawwrite.h; prose in FORMAT.md section 2, esp. 2.3).
 *
 * Shared by the runtime's snapshot writer (own memory, possibly in a signal
 * handler), coreextract (core files and live pids) and funtrace-oomwatch.
 * gdb/funtrace.py mirrors it byte for byte.
 *
 * Rules of this file:
 *   - async-signal-safe: no malloc, no stdio, no locks, no errno games;
 *   - bounded stack (about 16 KiB deepest);
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
#include "funtrace_rawwrite.h"

#include <string.h>

/* ---- limits (documented in FORMAT.md 2.3) -------------------------------- */
#define RW_ROOT_MAX 2048u          /* largest root accepted */
#define RW_STRUCT_MAX 2048u        /* largest thread/module/gen record accepted */
#define RW_MAX_THREADS (1u << 20)  /* registry capacity accepted */
#define RW_MAX_MODULES (1u << 16)
#define RW_MAX_RING (1ull << 40)   /* largest ring accepted */
#define RW_CMDLINE_MAX (1u << 20)  /* longer command lines are cut */
#define RW_PAGE 4096u              /* unit of "missing" memory */
#define RW_BLK 8192u               /* ring read block (stack) */
#define RW_OUT 2048u               /* output staging buffer (stack) */

#define RW_UNKNOWN_OFF UINT64_MAX  /* gen_pos outside the ring */
#define RW_TSC_SKEW 10000u         /* live: TSC ticks allowed between CPUs (FORMAT.md 2.3) */

static inline uint64_t rw_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* width in bytes and owning structure of every known field */
static const uint16_t field_width[FT_F_COUNT] = {
    [FT_F_ROOT_PID] = 8, [FT_F_ROOT_TSC_HZ] = 8, [FT_F_ROOT_TSC_HZ_SOURCE] = 4,
    [FT_F_ROOT_TIME_MODE] = 4, [FT_F_ROOT_INIT_TSC] = 8, [FT_F_ROOT_CMDLINE] = 8,
    [FT_F_ROOT_CMDLINE_LEN] = 8, [FT_F_ROOT_THREADS] = 8, [FT_F_ROOT_THREADS_CAP] = 4,
    [FT_F_ROOT_THREADS_USED] = 4, [FT_F_ROOT_MODULES] = 8, [FT_F_ROOT_MODULES_CAP] = 4,
    [FT_F_ROOT_MODULES_USED] = 4, [FT_F_ROOT_MODULE_EPOCH] = 8, [FT_F_ROOT_GENS] = 8,
    [FT_F_ROOT_GENS_CAP] = 4, [FT_F_ROOT_GEN_CURRENT] = 8, [FT_F_ROOT_DEFAULT_BUF_SIZE] = 8,
    [FT_F_ROOT_GEN_MS] = 8, [FT_F_ROOT_BUDGET] = 8, [FT_F_ROOT_SAMPLE_K] = 8,
    [FT_F_ROOT_ENABLED] = 4, [FT_F_ROOT_SNAPSHOT_SIGNAL] = 4, [FT_F_ROOT_FLAGS] = 8,
    [FT_F_THR_POS] = 8, [FT_F_THR_MASK] = 8, [FT_F_THR_RING] = 8, [FT_F_THR_RING_SIZE] = 8,
    [FT_F_THR_TID] = 4, [FT_F_THR_STATE] = 4, [FT_F_THR_FMT] = 4, [FT_F_THR_FLAGS] = 4,
    [FT_F_THR_START_TSC] = 8, [FT_F_THR_EXIT_TSC] = 8, [FT_F_THR_SEQ] = 8,
    [FT_F_THR_NAME] = FT_THREAD_NAME_LEN, [FT_F_THR_GEN_POS] = 16 * FT_GEN_SLOTS,
    [FT_F_MOD_BIAS] = 8, [FT_F_MOD_GEN_LOADED] = 8, [FT_F_MOD_GEN_UNLOADED] = 8,
    [FT_F_MOD_EPOCH_LOADED] = 8, [FT_F_MOD_EPOCH_UNLOADED] = 8, [FT_F_MOD_STATE] = 4,
    [FT_F_MOD_NSEG] = 4, [FT_F_MOD_SEG] = 16 * FT_MOD_SEGS, [FT_F_MOD_BUILD_ID_LEN] = 4,
    [FT_F_MOD_BUILD_ID] = FT_BUILD_ID_MAX, [FT_F_MOD_PATH] = FT_MOD_PATH_MAX,
    [FT_F_GEN_GEN] = 8, [FT_F_GEN_FLAGS] = 8, [FT_F_GEN_START_TSC] = 8, [FT_F_GEN_CLK_TSC] = 8,
    [FT_F_GEN_CLK_MONO_NS] = 8, [FT_F_GEN_CLK_REAL_NS] = 8, [FT_F_GEN_TSC_HZ] = 8,
    [FT_F_GEN_MODULE_EPOCH] = 8,
};

static int field_struct(int id)
{
    if (id <= FT_F_ROOT_FLAGS) return FT_S_ROOT;
    if (id <= FT_F_THR_GEN_POS) return FT_S_THREAD;
    if (id <= FT_F_MOD_PATH) return FT_S_MODULE;
    return FT_S_GEN;
}

/* ---- context ------------------------------------------------------------- */

struct rw {
    const struct ft_reader *rd;
    const struct ft_writer *w;
    const struct ft_source_info *si;
    struct ft_emit_stats *st;
    uint64_t root_addr;
    uint32_t root_size;
    uint32_t sizes[FT_S_COUNT];
    uint16_t offs[FT_F_COUNT];
    uint8_t root[RW_ROOT_MAX];
    /* root values */
    uint64_t pid, threads, modules, gens;
    uint32_t threads_used, modules_used, gens_cap;
    int partial;
};

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
static void problem(struct rw *c, const char *a, int has_n, uint64_t n, const char *b2,
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

static size_t rd(const struct ft_reader *r, uint64_t addr, void *buf, size_t len)
{
    if (len == 0) return 0;
    if (addr + len < addr) { /* wraps the address space */
        len = (size_t)(0 - addr);
        if (len == 0) return 0;
    }
    size_t got = r->read(r->ctx, addr, buf, len);
    return got > len ? len : got;
}

static int rd_full(const struct ft_reader *r, uint64_t addr, void *buf, size_t len)
{
    return rd(r, addr, buf, len) == len;
}

/* field `id` of a record held in buf[0..len); absent/out of range -> 0 */
static uint64_t fget(const struct rw *c, const uint8_t *buf, size_t len, int id)
{
    uint16_t off = c->offs[id];
    unsigned wd = field_width[id];
    if (off == FT_OFF_ABSENT || (size_t)off + wd > len) return 0;
    if (wd == 8) { uint64_t v; memcpy(&v, buf + off, 8); return v; }
    if (wd == 4) { uint32_t v; memcpy(&v, buf + off, 4); return v; }
    return 0;
}

/* copy a byte-array field (absent -> zeros) */
static void fbytes(const struct rw *c, const uint8_t *buf, size_t len, int id, void *out)
{
    uint16_t off = c->offs[id];
    unsigned wd = field_width[id];
    if (off == FT_OFF_ABSENT || (size_t)off + wd > len) memset(out, 0, wd);
    else memcpy(out, buf + off, wd);
}

/* ---- writing ------------------------------------------------------------- */

static int wr(struct rw *c, const void *p, size_t n)
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

static int chunk_hdr(struct rw *c, const char *magic, uint64_t len)
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
        if (out && wr(c, pre, pl)) return (uint64_t)-1;
        total += pl;
        size_t run = 0;
        for (size_t i = 0; i <= m.path_len; i++) {
            if (i < m.path_len && path[i] != '\n') continue;
            if (out && wr(c, path + run, i - run)) return (uint64_t)-1;
            total += i - run;
            if (i < m.path_len) {
                if (out && wr(c, "\\012", 4)) return (uint64_t)-1;
                total += 4;
            }
            run = i + 1;
        }
        if (out && wr(c, "\n", 1)) return (uint64_t)-1;
        total += 1;
        off += rs;
    }
    return total;
}

static int emit_procmaps(struct rw *c, const void *mappings, size_t len)
{
    if (!mappings) len = 0;
    uint64_t n = pm_walk(c, mappings, len, 0);
    if (chunk_hdr(c, FT_CHUNK_PROCMAPS, n)) return -1;
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
    if (!rd_full(r, addr, &h, sizeof h)) return FT_ROOT_EREAD;
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
    if (!rd_full(r, addr, c->root, h.root_size)) return FT_ROOT_EREAD;
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
        if (c->offs[i] == FT_OFF_ABSENT) continue;
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
    return fget(c, c->root, c->root_size, id);
}

/* ---- ring access: blocks with per-page "missing" -------------------------- */

struct rview {
    struct rw *c;
    uint64_t ring, size;
    unsigned esz;
    uint64_t nmask;         /* slots - 1 (slots: a power of two) */
    const uint8_t *copy;    /* live copy (scratch), the source's own memory
                               (ft_source_info.map), or NULL: read in blocks */
    const uint8_t *cmiss;   /* copy: 1 byte per ring page, 1 = missing;
                               NULL with a mapping: nothing missing */
    uint64_t boff, blen;    /* block currently in buf (ring offsets) */
    uint64_t pg0;           /* page number of ring+boff */
    uint8_t pmiss[RW_BLK / RW_PAGE + 2];
    uint8_t buf[RW_BLK];
};

/* Read [addr, addr+len) into out; pages with any unreadable byte are
 * zero-filled and flagged in miss[] (index: page - first page). */
static void read_pages(const struct ft_reader *r, uint64_t addr, uint8_t *out, uint64_t len,
                       uint8_t *miss)
{
    uint64_t pg0 = addr / RW_PAGE, done = 0;
    /* one read for the common all-readable case (a live copy must be fast);
     * the pages it fully covered are readable, the rest goes page by page */
    uint64_t got = rd(r, addr, out, (size_t)len);
    if (got < len) got -= (addr + got) % RW_PAGE < got ? (addr + got) % RW_PAGE : got;
    for (; done < got; ) {
        uint64_t a = addr + done;
        uint64_t n = RW_PAGE - a % RW_PAGE;
        if (n > got - done) n = got - done;
        miss[a / RW_PAGE - pg0] = 0;
        done += n;
    }
    while (done < len) {
        uint64_t a = addr + done;
        uint64_t n = RW_PAGE - a % RW_PAGE;
        if (n > len - done) n = len - done;
        uint8_t m = rd(r, a, out + done, (size_t)n) != n;
        if (m) memset(out + done, 0, (size_t)n);
        miss[a / RW_PAGE - pg0] = m;
        done += n;
    }
}

static void rv_load(struct rview *v, uint64_t off)
{
    uint64_t len = v->size - off;
    if (len > RW_BLK) len = RW_BLK;
    v->boff = off;
    v->blen = len;
    v->pg0 = (v->ring + off) / RW_PAGE;
    if (v->copy) return;
    read_pages(v->c->rd, v->ring + off, v->buf, len, v->pmiss);
}

/* pointer to the slot at ring offset off (esz bytes); *missing set */
static const uint8_t *rv_slot(struct rview *v, uint64_t off, int *missing)
{
    if (v->copy) {
        *missing = v->cmiss ? v->cmiss[(v->ring + off) / RW_PAGE - v->ring / RW_PAGE] : 0;
        return v->copy + off;
    }
    if (off < v->boff || off + v->esz > v->boff + v->blen) rv_load(v, off);
    *missing = v->pmiss[(v->ring + off) / RW_PAGE - v->pg0];
    return v->buf + (off - v->boff);
}

static uint64_t u64at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Count missing pages of the ring (reads it all). */
static void ring_readability(struct rview *v, uint64_t *pages, uint64_t *missing)
{
    uint64_t first = v->ring / RW_PAGE, last = (v->ring + v->size - 1) / RW_PAGE;
    *pages = last - first + 1;
    *missing = 0;
    if (v->copy) {
        for (uint64_t i = 0; v->cmiss && i < *pages; i++) *missing += v->cmiss[i];
        return;
    }
    for (uint64_t off = 0; off < v->size; off += RW_BLK) {
        rv_load(v, off);
        uint64_t np = (v->ring + off + v->blen - 1) / RW_PAGE - v->pg0 + 1;
        for (uint64_t i = 0; i < np; i++) {
            /* a page straddling two blocks is counted once, in the block it starts */
            if (i == 0 && off != 0 && (v->ring + off) % RW_PAGE != 0) continue;
            *missing += v->pmiss[i];
        }
    }
}

/* ---- ring planning (FORMAT.md 2.3) ---------------------------------------- */

struct plan {
    uint32_t tsf;            /* FT_TSF_* */
    int emit_ring;           /* geometry valid: ring read */
    uint64_t pos_off;
    uint64_t first_off;      /* first emitted slot (ring offset) */
    uint64_t range_start;    /* ring offset where the planned walk range starts */
    uint64_t n_range;        /* slots in the range (emitted: readable ones, see tsc_limit) */
    uint64_t n_entries;      /* emitted: readable slots in the range (+ uncommitted) */
    uint64_t n_dropped;
    int has_unc;
    uint8_t unc[16];         /* the uncommitted entry */
    uint64_t tsc_limit;      /* live, exact: entries newer than this are left out (0: none) */
    uint64_t pages, missing_pages;
};

/* walk the circular range starting at slot `start`, `n` slots */
#define SLOT_AT(v, start, i) ((((start) + (i)) & (v)->nmask) * (v)->esz)

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Geometry of a thread's ring; returns 1 if the ring can be read. */
static int ring_geometry(const uint64_t ring, uint64_t size, uint32_t fmt, uint64_t pos,
                         struct plan *pl, unsigned *esz)
{
    *esz = fmt == FT_FMT_EXACT16 ? 16 : fmt == FT_FMT_SAMPLED8 ? 8 : 0;
    pl->pos_off = pos - ring;
    if (ring == 0 || size == 0) { pl->tsf |= FT_TSF_RING_MISSING; return 0; }
    if (*esz == 0 || !is_pow2(size) || size < 2ull * *esz || size > RW_MAX_RING ||
        ring % size != 0 || ring + size < ring || pos - ring >= size || (pos - ring) % *esz) {
        pl->tsf |= FT_TSF_BAD_POS;
        return 0;
    }
    return 1;
}

/* Every slot of the planned walk is emitted: no page missing, no live time
 * limit, and the view cannot change between plan and stream (a copy, a
 * mapping, or a source that is not live). */
static int rv_all_emitted(const struct rview *v, const struct plan *pl)
{
    return !pl->missing_pages && !pl->tsc_limit && (v->copy || !v->c->si->live);
}

/* Stream n_range slots from range_start (all readable, see rv_all_emitted),
 * then the uncommitted entry: at most two contiguous spans of the ring,
 * written in place from a copy/mapping, else block by block. */
static int ring_stream_spans(struct rview *v, const struct plan *pl)
{
    uint64_t off = pl->range_start, left = pl->n_range * v->esz;
    while (left) {
        uint64_t n = v->size - off;         /* to the end of the ring */
        if (n > left) n = left;
        if (v->copy) {
            if (wr(v->c, v->copy + off, (size_t)n)) return -1;
        } else {
            for (uint64_t o = 0; o < n; ) {
                rv_load(v, off + o);
                uint64_t k = v->blen < n - o ? v->blen : n - o;
                if (wr(v->c, v->buf, (size_t)k)) return -1;
                o += k;
            }
        }
        left -= n;
        off = 0;
    }
    return pl->has_unc ? wr(v->c, pl->unc, 16) : 0;
}

/* Plan a ring whose view v is set up; pos_off in pl.  live_k: number of slots
 * starting at pos (inclusive of the slot the writer reached) that may have
 * been overwritten during a live copy (0 if none / not live). */
/* live: is the slot s (readable) left out as written after the copy began? */
static int after_limit(const struct plan *pl, const uint8_t *s)
{
    return pl->tsc_limit && u64at(s) != 0 && u64at(s + 8) > pl->tsc_limit;
}

static void ring_plan(struct rview *v, struct plan *pl, uint64_t live_k, uint64_t min_tsc, int live)
{
    const uint64_t n = v->size / v->esz, p = pl->pos_off / v->esz;
    const int exact = v->esz == 16;
    int miss, a_ok = 0, n_ok = 0;
    uint64_t a_w = 0, a_t = 0, n_t = 0;

    ring_readability(v, &pl->pages, &pl->missing_pages);
    if (pl->missing_pages == pl->pages) pl->tsf |= FT_TSF_RING_MISSING;
    else if (pl->missing_pages) pl->tsf |= FT_TSF_RING_PARTIAL;

    if (live_k >= n - 1) {             /* the writer lapped the whole ring while copying */
        pl->tsf |= FT_TSF_COPY_RACED;
        live_k = n;
    }
    /* slot at pos (A) and the slot before it (N, newest committed) */
    if (live_k == 0) {
        const uint8_t *s = rv_slot(v, pl->pos_off, &miss);
        if (!miss) {
            a_ok = 1;
            a_w = u64at(s);
            if (exact) { a_t = u64at(s + 8); memcpy(pl->unc, s, 16); }
        }
    }
    {
        const uint8_t *s = rv_slot(v, ((p + n - 1) % n) * v->esz, &miss);
        if (!miss && u64at(s) != 0) { n_ok = 1; if (exact) n_t = u64at(s + 8); }
    }
    /* F: a written slot after pos (to the end of the ring), past the live
     * drop zone and, in sampled mode, past the word the writer may have in
     * flight after pos */
    int F = 0;
    {
        uint64_t i = p + 1 + (live_k ? live_k : 0) + (exact ? 0 : 1);
        for (; i < n && !F; i++) {
            const uint8_t *s = rv_slot(v, i * v->esz, &miss);
            if (!miss && u64at(s) != 0) F = 1;
        }
    }
    int wrapped;
    if (exact)
        wrapped = F || (a_ok && a_w && a_t && n_ok && a_t <= n_t);
    else
        wrapped = F || (a_ok && a_w && p + 2 >= n);
    if (live_k >= n) wrapped = 1;
    if (wrapped) pl->tsf |= FT_TSF_WRAPPED;

    if (a_ok && a_w) {
        if (exact && a_t && (!n_ok || a_t > n_t)) {
            pl->has_unc = 1;
        } else if (!wrapped) {
            if (exact) pl->tsf |= FT_TSF_TORN;
            pl->n_dropped++;
        }
    }

    /* the walk: wrapped -> p+1 .. p-1, else 0 .. p-1 */
    uint64_t start, len;
    if (wrapped) { start = (p + 1) % n; len = n - 1; }
    else { start = 0; len = p; }
    if (live_k) {
        pl->tsf |= FT_TSF_COPY_RACED;
        if (wrapped) {
            uint64_t k = live_k > len ? len : live_k;
            pl->n_dropped += live_k >= n ? len : live_k;
            start = (start + k) % n;
            len -= k;
        } else {
            /* first lap: the writer's new slots p..p+k lie after the walk,
             * unless they wrapped to its start */
            pl->n_dropped += live_k;
            if (p + live_k >= n) {
                uint64_t k = p + live_k - n + 1;
                if (k > len) k = len;
                start = (start + k) % n;
                len -= k;
                pl->tsf |= FT_TSF_WRAPPED;
            }
        }
    }
    /* skip leading never-written / missing slots */
    uint64_t i = 0;
    for (; i < len; i++) {
        const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
        if (!miss && u64at(s) != 0) break;
    }
    /* time filter: leading entries older than min_tsc */
    if (min_tsc) {
        if (exact) {
            for (; i < len; i++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
                if (miss) continue;
                if (u64at(s + 8) >= min_tsc) break;
                pl->n_dropped++;
            }
        } else {
            uint64_t j = i, skipped = 0;
            for (; j < len; j++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
                if (miss) continue;
                uint64_t w = u64at(s);
                if (FT_IS_TIME_WORD(w) && (w & FT_TIME_WORD_TSC_MASK) >= (min_tsc & FT_TIME_WORD_TSC_MASK))
                    break;
                if (w) skipped++;
            }
            pl->n_dropped += skipped;
            i = j;
        }
        if (pl->has_unc && u64at(pl->unc + 8) < min_tsc) { pl->has_unc = 0; pl->n_dropped++; }
    }
    /* live: the copy must be time-ordered.  Exact mode: entries newer than
     * tsc_limit (taken when pos was read) were written while copying, over an
     * older entry (the writer lapped the ring: pos alone cannot show it): left
     * out.  Then, both modes: a tsc stepping back means the same; only what
     * follows the last step back is kept. */
    if (live) {
        uint64_t cut = i, prev = 0;
        int have = 0;
        for (uint64_t j = i; j < len; j++) {
            const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
            if (miss) continue;
            uint64_t w = u64at(s), t;
            if (exact) {
                if (!w || after_limit(pl, s)) continue;
                t = u64at(s + 8);
            } else {
                if (!FT_IS_TIME_WORD(w)) continue;
                t = w & FT_TIME_WORD_TSC_MASK;
            }
            if (have && t < prev) cut = j;
            prev = t;
            have = 1;
        }
        if (cut != i) {
            for (; i < cut; i++) {
                const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
                if (!miss && u64at(s)) pl->n_dropped++;
            }
            pl->tsf |= FT_TSF_COPY_RACED;
        }
    }
    /* count what is emitted: readable slots of [i, len) (exact live: not
     * newer than tsc_limit) */
    uint64_t cnt = 0, first = len;
    if (rv_all_emitted(v, pl)) {
        cnt = len - i;
        first = i;
    } else for (uint64_t j = i; j < len; j++) {
        const uint8_t *s = rv_slot(v, SLOT_AT(v, start, j), &miss);
        if (miss) continue;
        if (exact && after_limit(pl, s)) {
            pl->n_dropped++;
            pl->tsf |= FT_TSF_COPY_RACED;
            continue;
        }
        if (first == len) first = j;
        cnt++;
    }
    pl->first_off = first < len ? SLOT_AT(v, start, first) : pl->pos_off;
    pl->n_range = len - i;
    pl->range_start = i < len ? SLOT_AT(v, start, i) : pl->pos_off;
    if (pl->has_unc) {
        pl->tsf |= FT_TSF_UNCOMMITTED;
        cnt++;
    }
    pl->n_entries = cnt;
}

/* stream the planned range: its readable slots (live exact: not newer than
 * tsc_limit), then the uncommitted entry; exactly pl->n_entries entries are
 * written (zero entries pad if a live source lost memory since planning). */
static int ring_stream(struct rview *v, const struct plan *pl)
{
    if (rv_all_emitted(v, pl) && pl->n_entries - (pl->has_unc ? 1 : 0) == pl->n_range)
        return ring_stream_spans(v, pl);
    uint8_t out[RW_OUT];
    size_t o = 0;
    uint64_t written = 0, limit = pl->n_entries - (pl->has_unc ? 1 : 0);
    uint64_t start = pl->range_start / v->esz;
    int miss;
    for (uint64_t i = 0; i < pl->n_range && written < limit; i++) {
        const uint8_t *s = rv_slot(v, SLOT_AT(v, start, i), &miss);
        if (miss || (v->esz == 16 && after_limit(pl, s))) continue;
        memcpy(out + o, s, v->esz);
        o += v->esz;
        written++;
        if (o == sizeof out) {
            if (wr(v->c, out, o)) return -1;
            o = 0;
        }
    }
    while (written < limit) {   /* live source changed since planning */
        memset(out + o, 0, v->esz);
        o += v->esz;
        written++;
        if (o == sizeof out) {
            if (wr(v->c, out, o)) return -1;
            o = 0;
        }
    }
    if (pl->has_unc) {
        if (o + 16 > sizeof out) {
            if (wr(v->c, out, o)) return -1;
            o = 0;
        }
        memcpy(out + o, pl->unc, 16);
        o += 16;
    }
    return wr(v->c, out, o);
}

/* ---- threads ------------------------------------------------------------- */

struct trec {
    uint64_t addr;
    uint8_t b[RW_STRUCT_MAX];
};

/* read registry record i; returns 1 if readable */
static int trec_read(struct rw *c, uint32_t i, struct trec *t)
{
    uint32_t sz = c->sizes[FT_S_THREAD];
    t->addr = c->threads + (uint64_t)i * sz;
    return rd_full(c->rd, t->addr, t->b, sz);
}

#define TF(t, id) fget(c, (t)->b, c->sizes[FT_S_THREAD], id)

static int state_emitted(uint64_t s)
{
    return s == FT_THR_ALIVE || s == FT_THR_EXITED || s == FT_THR_EVICTED || s == FT_THR_IGNORED;
}

static int has_ring(uint64_t s) { return s == FT_THR_ALIVE || s == FT_THR_EXITED; }

static void rv_init(struct rview *v, struct rw *c, uint64_t ring, uint64_t size, unsigned esz)
{
    v->c = c;
    v->ring = ring;
    v->size = size;
    v->esz = esz;
    v->nmask = size / esz - 1;
    v->copy = NULL;
    v->cmiss = NULL;
    v->boff = 0;
    v->blen = 0; /* forces a load */
    /* a non-live source that holds the ring in our address space: use it in
     * place (no copy, nothing missing) */
    if (!c->si->live && c->si->map) {
        const void *p = c->si->map(c->si->map_ctx, ring, (size_t)size);
        if (p) v->copy = p;
    }
}

/* Pre-pass over one record: sets *emit, and flags partial if its ring is
 * (partly) missing or invalid. */
static void thread_prepass(struct rw *c, struct trec *t, struct rview *v, uint32_t idx)
{
    uint64_t state = TF(t, FT_F_THR_STATE);
    if (!has_ring(state)) return;
    struct plan pl;
    memset(&pl, 0, sizeof pl);
    unsigned esz;
    uint64_t ring = TF(t, FT_F_THR_RING), size = TF(t, FT_F_THR_RING_SIZE);
    uint64_t tid = TF(t, FT_F_THR_TID);
    if (!ring_geometry(ring, size, (uint32_t)TF(t, FT_F_THR_FMT), TF(t, FT_F_THR_POS), &pl, &esz)) {
        c->partial = 1;
        if (pl.tsf & FT_TSF_BAD_POS)
            problem(c, "thread ", 1, tid, " has an invalid ring or write position; ring at ", 1, ring);
        else
            problem(c, "thread ", 1, tid, " has no ring", 0, 0);
        (void)idx;
        return;
    }
    rv_init(v, c, ring, size, esz);
    uint64_t pages, missing;
    ring_readability(v, &pages, &missing);
    if (missing) {
        c->partial = 1;
        problem(c, "ring of thread ", 1, tid,
                missing == pages ? " is missing from the source, at " : " is partly missing from the source, at ",
                1, ring);
    }
}

/* Fill the THRDSTAT (without ring results) from a record. */
static void thread_stat(struct rw *c, const struct trec *t, struct ft_raw_thread *rt)
{
    memset(rt, 0, sizeof *rt);
    rt->tid = (uint32_t)TF(t, FT_F_THR_TID);
    rt->state = (uint32_t)TF(t, FT_F_THR_STATE);
    rt->fmt = (uint32_t)TF(t, FT_F_THR_FMT);
    rt->flags = ((uint32_t)TF(t, FT_F_THR_FLAGS) & 0xFFFFu) << 16;
    rt->ring = TF(t, FT_F_THR_RING);
    rt->ring_size = TF(t, FT_F_THR_RING_SIZE);
    rt->pos_off = TF(t, FT_F_THR_POS) - rt->ring;
    rt->start_tsc = TF(t, FT_F_THR_START_TSC);
    rt->exit_tsc = TF(t, FT_F_THR_EXIT_TSC);
    rt->seq = TF(t, FT_F_THR_SEQ);
    uint32_t tsz = c->sizes[FT_S_THREAD];
    uint16_t go = c->offs[FT_F_THR_GEN_POS];
    for (unsigned g = 0; g < FT_GEN_SLOTS; g++) {
        uint64_t gen = FT_GEN_NONE, pos = 0;
        if (go != FT_OFF_ABSENT && (uint32_t)go + 16 * FT_GEN_SLOTS <= tsz) {
            gen = u64at(t->b + go + 16 * g);
            pos = u64at(t->b + go + 16 * g + 8);
        }
        rt->gen_pos[g].gen = gen;
        if (gen == FT_GEN_NONE) rt->gen_pos[g].off = pos;
        else if (rt->ring && rt->ring_size && pos - rt->ring < rt->ring_size)
            rt->gen_pos[g].off = pos - rt->ring;
        else rt->gen_pos[g].off = RW_UNKNOWN_OFF;
    }
}

/* live: re-read a thread's pos (old value if unreadable) */
static uint64_t reread_pos(struct rw *c, const struct trec *t, uint64_t old)
{
    uint64_t p;
    if (!rd_full(c->rd, t->addr + c->offs[FT_F_THR_POS], &p, 8)) return old;
    return p;
}

/* live: slots the writer advanced from pos to pos2 (ring size/esz if pos2 is
 * not a valid position of this ring, i.e. the ring was replaced) */
static uint64_t live_slots(uint64_t pos, uint64_t pos2, uint64_t ring, uint64_t size, unsigned esz)
{
    if (pos2 - ring >= size || (pos2 - ring) % esz) return size / esz;
    return ((pos2 - pos) & (size - 1)) / esz;
}

static int emit_thread(struct rw *c, struct trec *t, struct rview *v)
{
    struct ft_raw_thread rt;
    struct ft_raw_threadid ti;
    struct plan pl;
    memset(&pl, 0, sizeof pl);
    thread_stat(c, t, &rt);
    memset(&ti, 0, sizeof ti);
    ti.pid = c->pid;
    ti.tid = rt.tid;
    fbytes(c, t->b, c->sizes[FT_S_THREAD], FT_F_THR_NAME, ti.name);

    unsigned esz = 0;
    int ring_ok = 0, reread = 0;
    uint64_t pos = TF(t, FT_F_THR_POS), pos2 = pos;
    const struct ft_source_info *si = c->si;
    if (has_ring(rt.state)) {
        ring_ok = ring_geometry(rt.ring, rt.ring_size, rt.fmt, pos, &pl, &esz);
        if (!ring_ok) {
            c->partial = 1;
            if (c->st && (pl.tsf & FT_TSF_RING_MISSING)) c->st->nrings_missing++;
        }
    }
    if (ring_ok) {
        rv_init(v, c, rt.ring, rt.ring_size, esz);
        if (!si->live) {
            ring_plan(v, &pl, 0, si->min_tsc, 0);
        } else {
            /* live: pos (fresh) and the time, copy, pos again */
            uint64_t p1 = reread_pos(c, t, pos);
            uint64_t limit = rw_rdtsc() + RW_TSC_SKEW;
            if (p1 != pos && p1 - rt.ring < rt.ring_size && (p1 - rt.ring) % esz == 0) {
                pos = pos2 = p1;
                pl.pos_off = pos - rt.ring;
            }
            pl.tsc_limit = esz == 16 ? limit : 0;
            uint8_t *copy = NULL;
            uint64_t npages = (rt.ring + rt.ring_size - 1) / RW_PAGE - rt.ring / RW_PAGE + 1;
            if (si->get_scratch)
                copy = si->get_scratch(si->scratch_ctx, (size_t)(rt.ring_size + npages));
            if (copy) {
                read_pages(c->rd, rt.ring, copy, rt.ring_size, copy + rt.ring_size);
                v->copy = copy;
                v->cmiss = copy + rt.ring_size;
            } else {
                /* no copy: the plan itself is the first read */
                ring_plan(v, &pl, 0, si->min_tsc, 1);
                reread = 1;
            }
            pos2 = reread_pos(c, t, pos);
            if (copy || pos2 != pos) {
                uint64_t k = live_slots(pos, pos2, rt.ring, rt.ring_size, esz);
                memset(&pl, 0, sizeof pl);
                ring_geometry(rt.ring, rt.ring_size, rt.fmt, pos, &pl, &esz);
                pl.tsc_limit = esz == 16 ? limit : 0;
                ring_plan(v, &pl, k, si->min_tsc, 1);
            }
        }
        if (pl.tsf & (FT_TSF_RING_MISSING | FT_TSF_RING_PARTIAL)) {
            c->partial = 1;
            if (c->st && (pl.tsf & FT_TSF_RING_MISSING)) c->st->nrings_missing++;
        }
        if (pl.tsf & FT_TSF_COPY_RACED)
            problem(c, "ring of thread ", 1, rt.tid,
                    " was written while it was copied; its oldest events were dropped", 0, 0);
    }
    rt.flags |= pl.tsf;
    if (ring_ok) {
        rt.pos_off = pl.pos_off;
        rt.first_off = pl.first_off;
        rt.n_entries = pl.n_entries;
        rt.n_dropped = pl.n_dropped;
    } else {
        rt.first_off = rt.pos_off;
    }
    const char *tm = rt.fmt == FT_FMT_SAMPLED8 ? FT_CHUNK_TRACEW08 : FT_CHUNK_TRACEBUF;
    if (ft_raw_chunk(c->w, FT_CHUNK_THREADID, &ti, sizeof ti, c->st)) return -1;
    if (ft_raw_chunk(c->w, FT_CHUNK_THREADSTAT, &rt, sizeof rt, c->st)) return -1;
    if (chunk_hdr(c, tm, ring_ok ? pl.n_entries * esz : 0)) return -1;
    if (ring_ok && pl.n_entries) {
        if (ring_stream(v, &pl)) return -1;
        /* without a copy, writes during the stream cannot be undone: say so */
        if (reread && reread_pos(c, t, pos2) != pos2)
            problem(c, "ring of thread ", 1, rt.tid,
                    " was written while it was streamed; its oldest events may be newer ones", 0, 0);
    }
    if (c->st) {
        c->st->nthreads++;
        c->st->nevents += ring_ok ? pl.n_entries : 0;
    }
    return 0;
}

/* ---- modules, generations, command line ----------------------------------- */

static uint32_t clamp_count(struct rw *c, uint64_t used, uint64_t cap, uint32_t max, const char *what)
{
    if (cap > max) {
        c->partial = 1;
        problem(c, what, 0, 0, " table capacity is implausible: ", 1, cap);
        cap = max;
    }
    if (used > cap) {
        c->partial = 1;
        problem(c, what, 0, 0, " table count exceeds its capacity: ", 1, used);
        used = cap;
    }
    return (uint32_t)used;
}

static int mod_read(struct rw *c, uint32_t i, uint8_t *b)
{
    uint32_t sz = c->sizes[FT_S_MODULE];
    return rd_full(c->rd, c->modules + (uint64_t)i * sz, b, sz);
}

static int mod_valid(struct rw *c, const uint8_t *b)
{
    uint64_t s = fget(c, b, c->sizes[FT_S_MODULE], FT_F_MOD_STATE);
    return s == FT_MOD_LOADED || s == FT_MOD_UNLOADED;
}

static void mod_pack(struct rw *c, const uint8_t *b, struct ft_module *m)
{
    size_t sz = c->sizes[FT_S_MODULE];
    memset(m, 0, sizeof *m);
    m->bias = fget(c, b, sz, FT_F_MOD_BIAS);
    m->gen_loaded = fget(c, b, sz, FT_F_MOD_GEN_LOADED);
    m->gen_unloaded = fget(c, b, sz, FT_F_MOD_GEN_UNLOADED);
    m->epoch_loaded = fget(c, b, sz, FT_F_MOD_EPOCH_LOADED);
    m->epoch_unloaded = fget(c, b, sz, FT_F_MOD_EPOCH_UNLOADED);
    m->state = (uint32_t)fget(c, b, sz, FT_F_MOD_STATE);
    m->nseg = (uint32_t)fget(c, b, sz, FT_F_MOD_NSEG);
    if (m->nseg > FT_MOD_SEGS) m->nseg = FT_MOD_SEGS;
    fbytes(c, b, sz, FT_F_MOD_SEG, m->seg);
    for (unsigned i = m->nseg; i < FT_MOD_SEGS; i++) m->seg[i].start = m->seg[i].size = 0;
    m->build_id_len = (uint32_t)fget(c, b, sz, FT_F_MOD_BUILD_ID_LEN);
    if (m->build_id_len > FT_BUILD_ID_MAX) m->build_id_len = FT_BUILD_ID_MAX;
    fbytes(c, b, sz, FT_F_MOD_BUILD_ID, m->build_id);
    memset(m->build_id + m->build_id_len, 0, FT_BUILD_ID_MAX - m->build_id_len);
    fbytes(c, b, sz, FT_F_MOD_PATH, m->path);
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
        problem(c, "module table not readable at ", 0, 0, NULL, 1, c->modules);
    }
    if (chunk_hdr(c, FT_CHUNK_MODULES, (uint64_t)n * sizeof(struct ft_module))) return -1;
    uint32_t done = 0;
    struct ft_module m;
    for (uint32_t i = 0; i < c->modules_used && done < n; i++) {
        if (!mod_read(c, i, b) || !mod_valid(c, b)) continue;
        mod_pack(c, b, &m);
        if (wr(c, &m, sizeof m)) return -1;
        done++;
    }
    memset(&m, 0, sizeof m);
    for (; done < n; done++)   /* live table changed between the passes */
        if (wr(c, &m, sizeof m)) return -1;
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
            problem(c, "module table not readable at ", 0, 0, NULL, 1, c->modules);
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
        if (!rd_full(c->rd, c->gens + (uint64_t)i * sz, b, sz)) continue;
        if (!(fget(c, b, sz, FT_F_GEN_FLAGS) & FT_GENF_VALID)) continue;
        struct ft_gen x;
        x.gen = fget(c, b, sz, FT_F_GEN_GEN);
        x.flags = fget(c, b, sz, FT_F_GEN_FLAGS);
        x.start_tsc = fget(c, b, sz, FT_F_GEN_START_TSC);
        x.clk_tsc = fget(c, b, sz, FT_F_GEN_CLK_TSC);
        x.clk_mono_ns = fget(c, b, sz, FT_F_GEN_CLK_MONO_NS);
        x.clk_real_ns = fget(c, b, sz, FT_F_GEN_CLK_REAL_NS);
        x.tsc_hz = fget(c, b, sz, FT_F_GEN_TSC_HZ);
        x.module_epoch = fget(c, b, sz, FT_F_GEN_MODULE_EPOCH);
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
        if (!rd_full(c->rd, c->gens + (uint64_t)i * sz, b, sz)) {
            c->partial = 1;
            problem(c, "generation table not readable at ", 0, 0, NULL, 1, c->gens);
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
        size_t got = rd(c->rd, addr + off, b, n);
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
    if (chunk_hdr(c, FT_CHUNK_CMDLINE, keep)) return -1;
    uint64_t off = 0;
    while (off < keep) {
        size_t n = keep - off > sizeof b ? sizeof b : (size_t)(keep - off);
        size_t got = rd(c->rd, addr + off, b, n);
        if (got < n) memset(b + got, ' ', n - got); /* vanished since the pre-pass (live) */
        for (size_t i = 0; i < n; i++)
            if (!b[i]) b[i] = ' ';
        if (wr(c, b, n)) return -1;
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
        problem(c, ft_root_strerror(rc), 0, 0, " at ", 1, root_addr);
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
        problem(c, "generation table capacity is implausible: ", 0, 0, NULL, 1, gcap);
        gcap = FT_GEN_SLOTS;
    }
    c->gens_cap = c->gens ? (uint32_t)gcap : 0;
    if (!c->modules) c->modules_used = 0;
    /* array ranges must not wrap the address space */
    if (c->threads_used && c->threads + (uint64_t)c->threads_used * c->sizes[FT_S_THREAD] < c->threads) {
        c->partial = 1;
        problem(c, "thread registry address is invalid: ", 0, 0, NULL, 1, c->threads);
        c->threads_used = 0;
    }
    if (c->modules_used && c->modules + (uint64_t)c->modules_used * c->sizes[FT_S_MODULE] < c->modules) {
        c->partial = 1;
        problem(c, "module table address is invalid: ", 0, 0, NULL, 1, c->modules);
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
        problem(c, "command line not readable at ", 0, 0, NULL, 1, cmd_addr);
    }
    modules_prepass(c);
    gens_prepass(c);

    struct trec t;
    struct rview v;
    uint32_t nthreads = 0, lost = 0;
    for (uint32_t i = 0; i < c->threads_used; i++) {
        if (!trec_read(c, i, &t)) {
            lost++;
            problem(c, "thread record not readable at ", 0, 0, NULL, 1, t.addr);
            continue;
        }
        uint64_t s = TF(&t, FT_F_THR_STATE);
        if (s == FT_THR_FREE) continue;
        if (!state_emitted(s)) {
            lost++;
            problem(c, "thread record with invalid state at ", 0, 0, NULL, 1, t.addr);
            continue;
        }
        nthreads++;
        thread_prepass(c, &t, &v, i);
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
    if (stats) {
        stats->header_flags = h.flags;
        stats->nthreads_lost = lost;
    }

    if (ft_raw_chunk(w, FT_CHUNK_FUNTRACE, &tsc_hz, 8, stats)) return -1;
    if (ft_raw_chunk(w, FT_CHUNK_HEADER, &h, sizeof h, stats)) return -1;
    if (emit_cmdline(c, cmd_addr, cmd_keep)) return -1;
    if (si->crash && ft_raw_chunk(w, FT_CHUNK_SIGINFO, si->crash, sizeof *si->crash, stats)) return -1;
    if (ft_raw_chunk(w, FT_CHUNK_MAPPINGS, si->mappings, si->mappings ? si->mappings_len : 0, stats))
        return -1;
    if (emit_procmaps(c, si->mappings, si->mappings_len)) return -1;
    if (emit_modules(c)) return -1;
    if (emit_gens(c)) return -1;

    /* ---- threads ---- */
    uint32_t done = 0;
    for (uint32_t i = 0; i < c->threads_used && done < nthreads; i++) {
        if (!trec_read(c, i, &t)) continue;
        if (!state_emitted(TF(&t, FT_F_THR_STATE))) continue;
        if (emit_thread(c, &t, &v)) return -1;
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
            chunk_hdr(c, FT_CHUNK_TRACEBUF, 0))
            return -1;
    }
    return 0;
}
