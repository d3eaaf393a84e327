/*
 * ce_rawunit.c -- drives runtime/rawwrite.c (the real one, linked in) over a
 * target built in this process's memory, to check the ring linearization
 * rules of FORMAT.md 2.3 on states a real program only reaches by chance
 * (torn / uncommitted slots, missing pages, corrupt registries, a writer
 * racing a live copy).  Usage: ce_rawunit SCENARIO > raw
 * The reader only serves registered regions (anything else is "missing").
 * With CE_RAWUNIT_MAP=1 the rings are also offered in place (ft_source_info.map).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "funtrace_rawwrite.h"

#define MAXREG 16
struct region { uint64_t start, end; };
static struct region regs[MAXREG];
static int nregs;
static struct region holes[MAXREG];
static int nholes;

static void reg(const void *p, size_t n)
{
    regs[nregs].start = (uint64_t)(uintptr_t)p;
    regs[nregs].end = regs[nregs].start + n;
    nregs++;
}

static void hole(const void *p, size_t n)
{
    holes[nholes].start = (uint64_t)(uintptr_t)p;
    holes[nholes].end = holes[nholes].start + n;
    nholes++;
}

/* live race simulation: on the first read that touches `race_at`, the
 * "writer" thread record advances by race_k entries */
static uint64_t race_at;
static int race_k = -1;
static struct ft_thread *race_thr;
static uint64_t race_tsc;
static int race_skip = 1; /* the header pre-pass reads the ring first */

static void write_event(struct ft_thread *t, uint64_t word, uint64_t tsc);
static void write_e8(struct ft_thread *t, uint64_t word, uint64_t tsc);

static void race_fire(void)
{
    int k = race_k;
    race_k = -1;
    /* the writer's new events carry the real TSC, like the runtime's */
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    race_tsc = ((uint64_t)hi << 32 | lo) + 1000000;
    for (int i = 0; i < k; i++) {
        if (race_thr->fmt == FT_FMT_EXACT8) write_e8(race_thr, 0x7f0000500000ull + 4 * (uint64_t)i, ++race_tsc);
        else write_event(race_thr, 0x500000 + i, ++race_tsc);
    }
}

/* byte by byte, so that the simulated writer runs exactly when the copy
 * reaches race_at (on its second pass over it: the header pre-pass is first) */
static size_t rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    size_t done = 0;
    while (done < len) {
        uint64_t a = addr + done;
        if (race_k >= 0 && a == race_at && race_skip-- == 0) race_fire();
        int ok = 0;
        for (int i = 0; i < nregs; i++)
            if (a >= regs[i].start && a < regs[i].end) ok = 1;
        for (int i = 0; i < nholes; i++)
            if (a >= holes[i].start && a < holes[i].end) ok = 0;
        if (!ok) break;
        ((uint8_t *)buf)[done] = *(const uint8_t *)(uintptr_t)a;
        done++;
    }
    return done;
}

/* ft_source_info.map (with CE_RAWUNIT_MAP=1 in the environment): the range in
 * place if every byte of it is readable, like coreextract's mmapped core */
static const void *map_in_place(void *ctx, uint64_t addr, size_t len)
{
    (void)ctx;
    for (size_t i = 0; i < len; i++) {
        uint64_t a = addr + i;
        int ok = 0;
        for (int k = 0; k < nregs; k++)
            if (a >= regs[k].start && a < regs[k].end) ok = 1;
        for (int k = 0; k < nholes; k++)
            if (a >= holes[k].start && a < holes[k].end) ok = 0;
        if (!ok) return NULL;
    }
    return (const void *)(uintptr_t)addr;
}

static int wr(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    return fwrite(p, 1, n, stdout) == n ? 0 : -1;
}

static uint8_t scratch_mem[1 << 20];
static void *get_scratch(void *ctx, size_t len)
{
    (void)ctx;
    return len <= sizeof scratch_mem ? scratch_mem : NULL;
}

/* ---- the fake target ---- */

static struct ft_root *root;
static struct ft_thread *threads;
static struct ft_module mods[4];
static struct ft_gen gens[FT_GEN_SLOTS];
static char cmdline[] = "prog\0arg one\0x\0\0";

static void *xalign(size_t align, size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, align, n) != 0) abort();
    return p;
}

static void make_root(uint32_t nthreads_cap)
{
    root = xalign(64, sizeof *root);
    memset(root, 0, sizeof *root);
    memcpy(root->h.magic, FT_ROOT_MAGIC, FT_ROOT_MAGIC_LEN);
    root->h.abi_version = FT_ABI_VERSION;
    root->h.word_size = 8;
    root->h.endian = 1;
    root->h.header_size = sizeof root->h;
    root->h.self = (uint64_t)(uintptr_t)root;
    root->h.root_size = sizeof *root;
    root->h.n_sizes = FT_S_COUNT;
    root->h.n_offsets = FT_F_COUNT;
    root->h.sizes_off = offsetof(struct ft_root, sizes);
    root->h.offsets_off = offsetof(struct ft_root, offsets);
    /* the layout table as the runtime writes it (funtrace_abi.h's field table) */
    static const uint32_t sizes[FT_S_COUNT] = FT_ROOT_SIZES_INIT;
    static const uint16_t offsets[FT_F_COUNT] = FT_ROOT_OFFSETS_INIT;
    memcpy(root->sizes, sizes, sizeof sizes);
    memcpy(root->offsets, offsets, sizeof offsets);
    root->pid = 4242;
    root->tsc_hz = 1000000000;
    root->gen_ms = 100;
    root->gen_current = 2;
    root->cmdline = (uint64_t)(uintptr_t)cmdline;
    root->cmdline_len = sizeof cmdline - 1; /* "prog\0arg one\0x\0\0" */
    threads = calloc(nthreads_cap, sizeof *threads);
    root->threads = (uint64_t)(uintptr_t)threads;
    root->threads_cap = nthreads_cap;
    root->modules = (uint64_t)(uintptr_t)mods;
    root->modules_cap = 4;
    root->gens = (uint64_t)(uintptr_t)gens;
    root->gens_cap = FT_GEN_SLOTS;
    reg(root, sizeof *root);
    reg(threads, nthreads_cap * sizeof *threads);
    reg(mods, sizeof mods);
    reg(gens, sizeof gens);
    reg(cmdline, sizeof cmdline);
}

static struct ft_thread *new_thread(uint32_t tid, uint32_t state, uint32_t fmt, uint64_t size)
{
    struct ft_thread *t = &threads[root->threads_used++];
    t->tid = tid;
    t->state = state;
    t->fmt = fmt;
    snprintf(t->name, sizeof t->name, "t%u", tid);
    t->start_tsc = 1;
    for (unsigned g = 0; g < FT_GEN_SLOTS; g++) t->gen_pos[g].gen = FT_GEN_NONE;
    if (size) {
        void *ring = xalign(2 * size, size);
        memset(ring, 0, size);
        t->ring = (uint64_t)(uintptr_t)ring;
        t->ring_size = size;
        t->pos = t->ring;
        t->mask = t->ring | (size - 1);
        reg(ring, size);
    }
    return t;
}

/* the hot path: word, tsc, pos */
static void write_event(struct ft_thread *t, uint64_t word, uint64_t tsc)
{
    uint64_t slot = t->pos & t->mask;
    ((uint64_t *)(uintptr_t)slot)[0] = word;
    ((uint64_t *)(uintptr_t)slot)[1] = tsc;
    t->pos = (slot + 16) & t->mask;
}

static void write_word(struct ft_thread *t, uint64_t w)
{
    uint64_t slot = t->pos & t->mask;
    *(uint64_t *)(uintptr_t)slot = w;
    t->pos = (slot + 8) & t->mask;
}

/* FT_FMT_EXACT8, the way the runtime writes it: escapes when a high half
 * changes (each committed on its own), then one 8-byte entry */
static void write_e8(struct ft_thread *t, uint64_t word, uint64_t tsc)
{
    uint32_t ahi = (uint32_t)((word & FT_ADDR_MASK) >> 32), thi = (uint32_t)(tsc >> 32);
    if (ahi != t->addr_hi) { t->addr_hi = ahi; write_word(t, FT_E8_ESCAPE(FT_E8_ADDR_HI, ahi)); }
    if ((word & FT_F_CATCH) == FT_F_CATCH) write_word(t, FT_E8_ESCAPE(FT_E8_CATCH, 0));
    if (thi != t->tsc_hi) { t->tsc_hi = thi; write_word(t, FT_E8_ESCAPE(FT_E8_TSC_HI, thi)); }
    uint64_t tag = (word & FT_F_CATCH) == FT_F_CATCH ? FT_E8_CALL : (word & FT_F_RET) ? FT_E8_RET
                 : (word & FT_F_CALL_RET_ON_THROW) ? FT_E8_CALL_ROT : FT_E8_CALL;
    write_word(t, (tsc << 32) | (word & FT_E8_ADDR_LO_MASK) | tag);
}

/* the value of the entry write_e8 would write for event k (no escapes) */
static uint64_t e8_entry(uint64_t k) { return (k << 32) | ((0x400000 + 4 * k) & FT_E8_ADDR_LO_MASK); }

/* FT_FMT_EXACT8 event k (1-based): address 0x7f0000400000 + 4k, tsc k +
 * base (base: a TSC high half of 5) */
#define E8_TSC_BASE (5ull << 32)
static void events8(struct ft_thread *t, int from, int to)
{
    for (int k = from; k <= to; k++)
        write_e8(t, 0x7f0000400000ull + 4 * (uint64_t)k, E8_TSC_BASE + (uint64_t)k);
}

static struct ft_thread *new_e8(uint32_t tid, uint64_t size)
{
    struct ft_thread *t = new_thread(tid, FT_THR_ALIVE, FT_FMT_EXACT8, size);
    t->addr_hi = t->tsc_hi = FT_E8_HI_NONE;
    return t;
}

static void write_u32(struct ft_thread *t, uint32_t w)
{
    uint64_t slot = t->pos & t->mask;
    *(uint32_t *)(uintptr_t)slot = w;
    t->pos = (slot + 4) & t->mask;
}

/* FT_FMT_SAMPLED4 pairs k = 1..n: call 0x7f0000400000 + 16k, then its return,
 * stamped (TSC 5 << 32 | 1000k) every 4th pair; the escapes first */
static void pairs4(struct ft_thread *t, int from, int to)
{
    for (int k = from; k <= to; k++) {
        if (t->addr_hi != 0x7f00) { t->addr_hi = 0x7f00; write_u32(t, FT_S4_ESCAPE(FT_S4_ADDR_HI, 0x7f00)); }
        write_u32(t, (uint32_t)(0x400000 + 16 * k));
        if (k % 4 == 0) {
            if (t->tsc_hi != 5) { t->tsc_hi = 5; write_u32(t, FT_S4_ESCAPE(FT_S4_TSC_HI, 5)); }
            write_u32(t, FT_S4_STAMP(1000u * (uint32_t)k));
        } else {
            write_u32(t, (uint32_t)(0x400000 + 16 * k) | 1u);
        }
    }
}

static uint64_t *slot_at(struct ft_thread *t, uint64_t i)
{
    return (uint64_t *)(uintptr_t)(t->ring + i * (t->fmt == FT_FMT_EXACT16 ? 16 : 8));
}

/* event k (1-based) of a thread: word 0x400000+k, tsc k */
static void events(struct ft_thread *t, int n)
{
    for (int k = 1; k <= n; k++) write_event(t, 0x400000 + (uint64_t)k, (uint64_t)k);
}

int main(int argc, char **argv)
{
    const char *sc = argc > 1 ? argv[1] : "firstlap";
    struct ft_source_info si;
    memset(&si, 0, sizeof si);
    si.source = FT_SRC_SNAPSHOT;
    make_root(8);
    struct ft_thread *t;

    if (!strcmp(sc, "firstlap")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 10);
    } else if (!strcmp(sc, "wrapped")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 300);
    } else if (!strcmp(sc, "uncommitted")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 10);
        slot_at(t, 10)[0] = 0x400000 + 11, slot_at(t, 10)[1] = 11;
    } else if (!strcmp(sc, "torn")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 10);
        slot_at(t, 10)[0] = 0x400000 + 11;
    } else if (!strcmp(sc, "wrapped_uncommitted")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 300);
        slot_at(t, 44)[0] = 0x400000 + 301, slot_at(t, 44)[1] = 301;
    } else if (!strcmp(sc, "wrapped_torn")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 300);
        slot_at(t, 44)[0] = 0x400000 + 301; /* tsc still 45 */
    } else if (!strcmp(sc, "lastslot_wrapped")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 511);
    } else if (!strcmp(sc, "lastslot_torn")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 255);
        slot_at(t, 255)[0] = 0x400000 + 256;
    } else if (!strcmp(sc, "min_tsc")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 10);
        si.min_tsc = 6;
    } else if (!strcmp(sc, "missing_page")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 16384);
        events(t, 1000);
        hole(slot_at(t, 256), 4096);
    } else if (!strcmp(sc, "missing_ring")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 16384);
        events(t, 10);
        hole(slot_at(t, 0), 16384);
        events(new_thread(101, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 3);
    } else if (!strcmp(sc, "bad_pos")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 10);
        t->pos = t->ring + 4096 + 16;
    } else if (!strcmp(sc, "states")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 2);
        t = new_thread(101, FT_THR_EXITED, FT_FMT_EXACT16, 4096);
        events(t, 3);
        t->exit_tsc = 99;
        new_thread(102, FT_THR_EVICTED, FT_FMT_EXACT16, 0);
        new_thread(103, FT_THR_IGNORED, FT_FMT_EXACT16, 0);
        new_thread(104, FT_THR_FREE, FT_FMT_EXACT16, 0);
        new_thread(105, 9, FT_FMT_EXACT16, 0);
        new_thread(106, FT_THR_ALIVE, FT_FMT_EXACT16, 0); /* no ring yet */
    } else if (!strcmp(sc, "sampled")) {
        /* words: T1 e1 e2 e3 T5 e4 ..., first lap, plus an uncommitted time word + event */
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_SAMPLED8, 4096);
        for (int k = 1; k <= 8; k++) {
            if (k % 4 == 1) write_word(t, FT_TIME_WORD_TAG | (uint64_t)(k * 10));
            write_word(t, 0x400000 + (uint64_t)k);
        }
        uint64_t p = (t->pos - t->ring) / 8;
        slot_at(t, p)[0] = FT_TIME_WORD_TAG | 90;
        slot_at(t, p + 1)[0] = 0x400000 + 9;
        if (argc > 2) si.min_tsc = strtoull(argv[2], NULL, 0);
    } else if (!strcmp(sc, "sampled_wrapped")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_SAMPLED8, 4096);
        for (int k = 1; k <= 700; k++) write_word(t, 0x400000 + (uint64_t)k);
    } else if (!strcmp(sc, "e8_firstlap")) {
        events8(new_e8(100, 4096), 1, 10);            /* ADDR_HI TSC_HI e1 .. e10 */
    } else if (!strcmp(sc, "e8_wrapped")) {
        events8(new_e8(100, 4096), 1, 600);           /* 602 items in 512 slots: pos at 90 */
    } else if (!strcmp(sc, "e8_uncommitted")) {
        t = new_e8(100, 4096);
        events8(t, 1, 10);
        *slot_at(t, 12) = e8_entry(11) | 0;           /* written, pos not committed */
    } else if (!strcmp(sc, "e8_uncommitted_escape")) {
        t = new_e8(100, 4096);
        events8(t, 1, 10);
        t->tsc_hi = 6; /* a TSC_HI escape in flight: the record's value is stored first */
        *slot_at(t, 12) = FT_E8_ESCAPE(FT_E8_TSC_HI, 6);
    } else if (!strcmp(sc, "e8_wrapped_uncommitted")) {
        t = new_e8(100, 4096);
        events8(t, 1, 600);
        *slot_at(t, 90) = e8_entry(601);
    } else if (!strcmp(sc, "e8_lastslot_wrapped")) {
        events8(new_e8(100, 4096), 1, 1021);          /* 1023 items: pos = slot 511 */
    } else if (!strcmp(sc, "e8_lastslot_unc")) {
        t = new_e8(100, 4096);
        events8(t, 1, 509);                           /* 511 items: pos = slot 511 */
        *slot_at(t, 511) = e8_entry(510);
    } else if (!strcmp(sc, "e8_min_tsc")) {
        events8(new_e8(100, 4096), 1, 10);
        si.min_tsc = E8_TSC_BASE + 6;
    } else if (!strcmp(sc, "e8_tiny")) {
        /* a 32-byte ring (4 slots), as funtrace_set_thread_log_buf_size(5) gives */
        events8(new_e8(100, 32), 1, 7);
    } else if (!strcmp(sc, "e8_zeroed")) {
        /* a stretch inside the window zeroed (a memory test, a stray memset) */
        t = new_e8(100, 4096);
        events8(t, 1, 100);
        memset(slot_at(t, 40), 0, 10 * 8);
    } else if (!strcmp(sc, "e8_hi_change")) {
        /* the TSC's and the address's high halves change mid-ring */
        t = new_e8(100, 4096);
        write_e8(t, 0x7f0000400010ull, 0x5FFFFFFF0ull);
        write_e8(t, 0x7f0000400020ull, 0x600000010ull);
        write_e8(t, 0x550000001000ull, 0x600000020ull);
        write_e8(t, 0x7f0000400030ull | FT_F_RET, 0x600000030ull);
        write_e8(t, 0x7f0000400040ull | FT_F_CATCH, 0x600000040ull);
        write_e8(t, 0x7f0000400050ull | FT_F_CALL_RET_ON_THROW, 0x600000050ull);
    } else if (!strcmp(sc, "e8_sleep")) {
        /* 200 calls in generation 0, a 6 s sleep (60 boundaries of 100 ms,
         * each recording the same ring position and resetting the thread's
         * high halves, as the housekeeper does), 120 calls after it: the
         * ring wraps, so the calls before the sleep have lost their escapes
         * and their TSC high half (1 GHz: it changes every 4.3 s) */
        const uint64_t T0 = E8_TSC_BASE + 1000, HZ = 1000000000;
        t = new_e8(100, 4096);
        root->gen_current = 60;
        for (uint64_t g = 0; g <= 60; g++) {
            struct ft_gen *e = &gens[g % FT_GEN_SLOTS];
            e->gen = g, e->flags = FT_GENF_VALID, e->start_tsc = T0 - 1000 + g * HZ / 10;
            e->clk_tsc = e->start_tsc, e->clk_mono_ns = g * 100000000, e->tsc_hz = HZ;
        }
        t->gen_pos[0].gen = 0, t->gen_pos[0].pos = t->ring;
        for (int k = 0; k < 200; k++) {
            write_e8(t, 0x7f0000400100ull, T0 + 1000 * (uint64_t)k);
            write_e8(t, 0x7f0000400180ull | FT_F_RET, T0 + 1000 * (uint64_t)k + 500);
        }
        for (uint64_t g = 1; g <= 60; g++) {
            t->gen_pos[g % FT_GEN_SLOTS].gen = g, t->gen_pos[g % FT_GEN_SLOTS].pos = t->pos;
            t->addr_hi = t->tsc_hi = FT_E8_HI_NONE;
        }
        for (int k = 0; k < 120; k++) {
            write_e8(t, 0x7f0000400200ull, T0 + 6 * HZ + 1000 * (uint64_t)k);
            write_e8(t, 0x7f0000400280ull | FT_F_RET, T0 + 6 * HZ + 1000 * (uint64_t)k + 500);
        }
        root->tsc_hz = HZ;
    } else if (!strcmp(sc, "s4_firstlap") || !strcmp(sc, "s4_wrapped") || !strcmp(sc, "s4_min_tsc") ||
               !strcmp(sc, "s4_uncommitted_escape")) {
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_SAMPLED4, 4096); /* 1024 items */
        t->addr_hi = t->tsc_hi = FT_E8_HI_NONE;
        pairs4(t, 1, !strcmp(sc, "s4_wrapped") ? 700 : 10);
        if (!strcmp(sc, "s4_min_tsc")) si.min_tsc = (5ull << 32) + 6000;
        if (!strcmp(sc, "s4_uncommitted_escape")) { /* a TSC_HI escape in flight, as in e8_uncommitted_escape */
            t->tsc_hi = 6;
            *(uint32_t *)(uintptr_t)(t->pos & t->mask) = FT_S4_ESCAPE(FT_S4_TSC_HI, 6);
        }
    } else if (!strcmp(sc, "e8_live_race")) {
        t = new_e8(100, 4096);
        events8(t, 1, 600);
        race_thr = t;
        race_k = argc > 2 ? atoi(argv[2]) : 10;
        race_at = t->ring + 2000;
        si.live = 1;
        si.source = FT_SRC_LIVE;
        si.get_scratch = get_scratch;
    } else if (!strcmp(sc, "tables")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 1);
        uint64_t gn[] = { 5, 3, 4, 70, 2 };
        for (int i = 0; i < 5; i++) {
            gens[gn[i] % FT_GEN_SLOTS].gen = gn[i];
            gens[gn[i] % FT_GEN_SLOTS].flags = gn[i] == 70 ? 0 : FT_GENF_VALID;
            gens[gn[i] % FT_GEN_SLOTS].start_tsc = gn[i] * 100;
        }
        root->modules_used = 3;
        mods[0].state = FT_MOD_LOADED;
        mods[0].bias = 0x1000;
        mods[0].nseg = 9;
        mods[0].build_id_len = 99;
        memset(mods[0].build_id, 0xab, sizeof mods[0].build_id);
        memset(mods[0].path, 'p', sizeof mods[0].path);
        mods[1].state = FT_MOD_FREE;
        mods[2].state = FT_MOD_UNLOADED;
        mods[2].nseg = 1;
        mods[2].seg[0].start = 0x2000;
        mods[2].seg[0].size = 0x100;
        mods[2].seg[1].start = 0x9999; /* beyond nseg: cleared */
        strcpy(mods[2].path, "/lib/x.so");
        memset(mods[2].path + 10, 'z', 20); /* garbage after the NUL: cleared */
        t = &threads[0];
        t->gen_pos[2].gen = 2, t->gen_pos[2].pos = t->ring + 16;
        t->gen_pos[3].gen = 3, t->gen_pos[3].pos = 12345;
        t->gen_pos[4].gen = FT_GEN_NONE, t->gen_pos[4].pos = 777;
    } else if (!strcmp(sc, "corrupt")) {
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 3);
        root->threads_used = 0xFFFFFFFFu; /* > cap */
        root->modules_cap = 0x7FFFFFFF;
        root->modules_used = 0x7FFFFFFF;
        root->cmdline_len = 1ull << 40;
    } else if (!strcmp(sc, "corrupt_ptrs")) {
        root->threads = 0xFFFFFFFFFFFFF000ull;
        root->threads_used = 5;
        root->gens = 8;
    } else if (!strncmp(sc, "live_race", 9)) {
        /* a writer advances k entries while the ring is being copied */
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096);
        events(t, 300);
        race_thr = t;
        race_k = argc > 2 ? atoi(argv[2]) : 10;
        race_at = t->ring + 4000;
        si.live = 1;
        si.source = FT_SRC_LIVE;
        if (!strcmp(sc, "live_race")) si.get_scratch = get_scratch;
    } else if (!strcmp(sc, "live_lap")) {
        /* 16 KiB ring; while page 2 is being copied the writer laps the whole
         * ring and 10 more: pos alone shows only 10 */
        t = new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 16384);
        events(t, 1000);
        race_thr = t;
        race_k = 1024 + 10;
        race_at = t->ring + 8192;
        si.live = 1;
        si.source = FT_SRC_LIVE;
        si.get_scratch = get_scratch;
    } else if (!strcmp(sc, "procmaps")) {
        /* MAPPINGS -> PROCMAPS text: file/anonymous/newline-in-path records
         * and a trailing record cut short (ends the text) */
        static uint8_t mp[1024];
        static const struct { uint64_t s, e, o; uint32_t prot; const char *path; } ms[] = {
            { 0x400000, 0x401000, 0, FT_MAPF_R, "/bin/prog" },
            { 0x401000, 0x402000, 0x1000, FT_MAPF_R | FT_MAPF_X, "/bin/prog" },
            { 0x7f0000001000ull, 0x7f0000003000ull, 0x123456789ull, FT_MAPF_R | FT_MAPF_W, "" },
            { 0x10, 0x20, 0, 0, "/tmp/a\nb c" },
        };
        size_t n = 0;
        events(new_thread(100, FT_THR_ALIVE, FT_FMT_EXACT16, 4096), 1);
        for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            struct ft_raw_mapping m;
            memset(&m, 0, sizeof m);
            m.start = ms[i].s, m.end = ms[i].e, m.offset = ms[i].o, m.prot = ms[i].prot;
            n += ft_mapping_record_encode(mp + n, sizeof mp - n, &m, ms[i].path, strlen(ms[i].path));
        }
        memset(mp + n, 0, 40); /* half a record */
        si.mappings = mp;
        si.mappings_len = n + 40;
    } else {
        fprintf(stderr, "unknown scenario %s\n", sc);
        return 2;
    }
    if (getenv("CE_RAWUNIT_MAP")) si.map = map_in_place; /* ignored for live sources */
    struct ft_reader r = { NULL, rd, NULL };
    struct ft_writer w = { NULL, wr };
    struct ft_emit_stats st;
    memset(&st, 0, sizeof st);
    if (!strcmp(sc, "check")) return 0;
    int rc = ft_raw_emit(&r, (uint64_t)(uintptr_t)root, &si, &w, &st);
    if (rc == 0) rc = ft_raw_end(&w, &st);
    fflush(stdout);
    fprintf(stderr, "rc=%d flags=%u nthreads=%u lost=%u missing=%u events=%llu bytes=%llu problem=%s\n", rc,
            st.header_flags, st.nthreads, st.nthreads_lost, st.nrings_missing, (unsigned long long)st.nevents,
            (unsigned long long)st.bytes, st.problem);
    return rc == 0 ? 0 : 1;
}
