/*
 * funtrace_abi.h -- THE shared ABI of funtrace (FORMAT.md is its prose).
 *
 * One header, used by the runtime (which lays these structures out in the
 * traced process), by coreextract and funtrace-oomwatch (which read them out of
 * a core file or another process's memory), by the decoder (which reads the raw
 * chunks), and by the gdb extension through the shared reader library
 * (reader/funtrace_reader.h).
 *
 * Part 1: the in-memory ABI (root, thread record, ring entries, module
 *         record, generation record, layout table).
 * Part 2: the raw file format (chunk framing and chunk payloads).
 *
 * Everything is x86-64, little-endian, naturally aligned, no implicit padding
 * (every struct is static_assert'ed below).  Readers must never use these
 * structs to interpret TARGET memory blindly: they read the root's fixed
 * header, then the layout table, and access fields through the offsets found
 * there (FT_FIELD_*), so that a reader can parse an older or newer layout.
 * The C structs below are the layout the CURRENT runtime writes.
 */
#ifndef FUNTRACE_ABI_H
#define FUNTRACE_ABI_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Part 1: in-memory ABI                                                     */
/* ======================================================================== */

#define FT_ABI_VERSION 1u

/* The 16-byte root magic.  The runtime's binary only contains its bitwise
 * complement (FT_ROOT_MAGIC_COMPLEMENTED); the real bytes are written into
 * funtrace_root at initialisation, so a scan of a core for the magic never
 * matches the executable's own file-backed copy. */
#define FT_ROOT_MAGIC_LEN 16
#define FT_ROOT_MAGIC "\x89" "FUNTRACEROOT" "\r\n\x1a" /* 1+12+2+1 = 16 bytes */

#define FT_ROOT_SYMBOL "funtrace_root"

#define FT_GEN_SLOTS 64u       /* generation records kept (ring of, index gen % 64) */
#define FT_GEN_NONE UINT64_MAX /* "no generation" (e.g. module still loaded) */
#define FT_MOD_SEGS 4u         /* executable segments kept per module */
#define FT_BUILD_ID_MAX 40u
#define FT_MOD_PATH_MAX 320u
#define FT_THREAD_NAME_LEN 16u

/* ---- ring entries ------------------------------------------------------- */

/* Exact mode (FT_FMT_EXACT16): 16-byte entries {word, tsc}, the same entry the
 * original funtrace wrote.  Flag bits of `word` (compatible with the original
 * funtrace's funtrace_flags.h):
 *   bit 63            return (the address is the returning function's)
 *   bit 62            return whose address is the CALLER's (original XRay mode;
 *                     never written by this runtime, understood by the decoder)
 *   bits 63|62 both   catch: a C++ exception was caught in the function at the
 *                     address (its frames above were unwound without returns)
 *   bit 61            call whose return WILL be logged even when unwound by an
 *                     exception (-finstrument-functions calls)
 * The address itself is word & FT_ADDR_MASK.  A slot whose word is 0 was never
 * written.  Write order in the hot path: word, then tsc, then the thread's pos
 * (program order; x86 stores are not reordered with each other). */
#define FT_BIT_RET 63
#define FT_BIT_RET_WITH_CALLER 62
#define FT_BIT_CALL_RET_ON_THROW 61
#define FT_F_RET (1ULL << FT_BIT_RET)
#define FT_F_RET_WITH_CALLER (1ULL << FT_BIT_RET_WITH_CALLER)
#define FT_F_CATCH (FT_F_RET | FT_F_RET_WITH_CALLER)
#define FT_F_CALL_RET_ON_THROW (1ULL << FT_BIT_CALL_RET_ON_THROW)
#define FT_ADDR_MASK ((1ULL << 61) - 1)
/* A catch at this address (in the first page: never code) is a landing pad's
 * marker: the catch entry right after it is an address inside the function
 * whose cleanup code (destructors) or catch handler the unwinder is about to
 * enter; the frames above that function's were unwound (FORMAT.md 1.4). */
#define FT_LANDING_PAD_ADDR 4ULL
/* Context switches (swapcontext, runtime/contexts.c): a catch entry at one
 * of these markers, then FT_CTX_DIGITS call entries in the first page that
 * spell the context's key, 9 bits each, least significant first: the
 * address of the ucontext_t >> 3 (bits 46..3) that the running context is
 * saved in (SAVE: logged before the switch) or was resumed from (RESUME:
 * logged by the resumed context, first thing).  Between a SAVE and the next
 * RESUME a context that makecontext started runs.  An entry in the first
 * page outside such a sequence (a ring window that starts inside one) is
 * nothing (FORMAT.md 1.4). */
#define FT_MARKER_PAGE 0x1000ULL /* event addresses below it are markers, never code */
#define FT_CTX_SAVE_ADDR 8ULL
#define FT_CTX_RESUME_ADDR 12ULL
#define FT_CTX_DIGIT_BASE 0x800ULL /* + digit * 4 */
#define FT_CTX_DIGIT_BITS 9
#define FT_CTX_DIGITS 5
/* setjmp and longjmp (runtime/setjmps.c, interpose.c): a catch entry at one
 * of these markers, then the FT_CTX_DIGITS digits of a key as above: the
 * stack pointer that a jmp_buf resumes at >> 3.  SET: logged by _setjmp,
 * setjmp and __sigsetjmp before they save (the stack pointer of their
 * caller once they return); LONG: logged by longjmp, _longjmp, siglongjmp
 * and __longjmp_chk before they jump (the target jmp_buf's).  A LONG whose
 * key a SET of the same thread gave (in the ring) resumes that SET's frame:
 * the frames above it were left, or, when that frame is on another stack,
 * the thread switched to that stack (FORMAT.md 1.4). */
#define FT_JMP_SET_ADDR 16ULL
#define FT_JMP_LONG_ADDR 20ULL

struct ft_entry {
    uint64_t word; /* address | flags */
    uint64_t tsc;  /* TSC when the event was recorded */
};

/* Sampled-time mode (FT_FMT_SAMPLED8): a ring of 8-byte words, each one
 * self-describing so the ring can be parsed from any 8-byte boundary:
 *   an event word : address | flags exactly as above (bits 63..61 != 111)
 *   a time word   : bits 63..61 == 111, bits 60..0 = low 61 bits of the TSC,
 *                   written immediately BEFORE the event word it timestamps.
 * Only every k-th event (root->sample_k, and the first event after each
 * generation boundary) gets a time word; the decoder interpolates the others
 * and restores the TSC's high bits from the generation's clk_tsc. */
#define FT_TIME_WORD_TAG (7ULL << 61)
#define FT_IS_TIME_WORD(w) (((w) >> 61) == 7)
#define FT_TIME_WORD_TSC_MASK ((1ULL << 61) - 1)

/* Exact mode, ring format 3 (FT_FMT_EXACT8, written by this runtime): one
 * 8-byte entry per event, stored with ONE aligned 8-byte store (it cannot
 * tear), never all-zero once written (FORMAT.md 1.4):
 *   bits 1..0   tag: 0 call, 1 return, 2 call whose return will be logged
 *               even if unwound (-finstrument-functions), 3 escape
 *   event  (tag 0..2): bits 31..2 = address bits 31..2 (an address inside
 *               the function, 4-byte granular), bits 63..32 = TSC bits 31..0.
 *               The address's bits 63..32 and the TSC's bits 63..32 are
 *               those of the thread's last ADDR_HI / TSC_HI escape.
 *   escape (tag 3): bits 7..2 = type, bits 31..8 = 0, bits 63..32 = payload:
 *     FT_E8_ADDR_HI  payload = address bits 63..32 of the following events
 *     FT_E8_TSC_HI   payload = TSC bits 63..32 of the following events
 *     FT_E8_CATCH    the next event entry (tag 0) is a catch (FT_F_CATCH)
 * The runtime writes ADDR_HI / TSC_HI whenever the thread's high half
 * changes, for its first event, and for its first event after every
 * generation boundary; each escape is committed (pos) on its own. */
#define FT_E8_TAG_MASK 3ULL
#define FT_E8_CALL 0ULL
#define FT_E8_RET 1ULL
#define FT_E8_CALL_ROT 2ULL
#define FT_E8_ESC 3ULL
#define FT_E8_ADDR_LO_MASK 0xFFFFFFFCULL
#define FT_E8_ESC_TYPE(e) (((e) >> 2) & 0x3F)
#define FT_E8_ESC_ZERO_MASK 0xFFFFFF00ULL /* an escape's bits 31..8: 0 */
#define FT_E8_ADDR_HI 1u
#define FT_E8_TSC_HI 2u
#define FT_E8_CATCH 3u
#define FT_E8_ESCAPE(type, payload) (((uint64_t)(payload) << 32) | ((uint64_t)(type) << 2) | FT_E8_ESC)
#define FT_E8_HI_NONE 0xFFFFFFFFu /* addr_hi/tsc_hi of a thread record: "unknown, escape next" */

/* Sampled mode, ring format 4 (FT_FMT_SAMPLED4, written by this runtime):
 * one 4-byte item per event, one aligned 4-byte store each, never zero once
 * written (FORMAT.md 1.4):
 *   bits 1..0   tag: 0 call, 1 return, 2 call whose return will be logged
 *               even if unwound, 3 special
 *   call/return (tag 0..2): bits 31..2 = address bits 31..2; bits 63..32
 *               those of the thread's last ADDR_HI escape
 *   special, bit 2 = 1: a STAMPED RETURN: bits 31..3 = TSC bits 31..3 (the
 *               time of this return); TSC bits 63..32 are those of the
 *               thread's last TSC_HI escape.  Only a leaf return is stamped:
 *               the item before it (escapes aside) is its function's call,
 *               which gives its address
 *   special, bit 2 = 0: escape, bits 4..3 = type, bits 31..5 = payload:
 *     FT_S4_ADDR_HI  payload = address bits 58..32 of the following events
 *     FT_S4_TSC_HI   payload = TSC bits 58..32 of the following stamps
 *     FT_S4_CATCH    the next call item (tag 0) is a catch
 * Once (sample_k + 1) / 2 returns (sample_k events, calls included) have
 * passed since the last stamp (and after every generation boundary), the next
 * leaf return is a stamped return. */
#define FT_S4_TAG_MASK 3u
#define FT_S4_SPECIAL 3u
#define FT_S4_STAMP_BIT 4u
#define FT_S4_IS_STAMP(i) (((i) & 7u) == 7u)
#define FT_S4_IS_ESC(i) (((i) & 7u) == 3u)
#define FT_S4_ESC_TYPE(i) (((i) >> 3) & 3u)
#define FT_S4_ADDR_HI 0u
#define FT_S4_TSC_HI 1u
#define FT_S4_CATCH 2u
#define FT_S4_PAYLOAD_BITS 27
#define FT_S4_ESCAPE(type, payload) ((uint32_t)(((uint32_t)(payload) << 5) | ((uint32_t)(type) << 3) | 3u))
#define FT_S4_STAMP(tsc) ((uint32_t)(((uint32_t)(tsc) & ~7u) | 7u))
#define FT_S4_HI_MASK ((1u << FT_S4_PAYLOAD_BITS) - 1)

enum ft_entry_format {
    FT_FMT_EXACT16 = 1,  /* struct ft_entry ring (previous runtimes, the original funtrace) */
    FT_FMT_SAMPLED8 = 2, /* uint64_t word ring with time words */
    FT_FMT_EXACT8 = 3,   /* uint64_t entry ring with escapes (see above) */
    FT_FMT_SAMPLED4 = 4, /* uint32_t item ring with stamped returns (see above) */
};

/* ---- thread record ------------------------------------------------------ */

enum ft_thread_state {
    FT_THR_FREE = 0,    /* slot never used */
    FT_THR_ALIVE = 1,   /* thread running; ring being written */
    FT_THR_EXITED = 2,  /* thread exited; ring kept (pos final) */
    FT_THR_EVICTED = 3, /* thread exited; ring freed for the memory budget */
    FT_THR_IGNORED = 4, /* funtrace_ignore_this_thread(): no ring */
};

/* thread record flags */
#define FT_THRF_MAIN 0x1u    /* the process's main thread (tid == pid) */
#define FT_THRF_FORCE_TS 0x2u /* sampled mode: next event must carry a time word */
#define FT_THRF_RETIRED 0x4u  /* (EVICTED) retired by a ring resize: the thread
                                 goes on in a newer record (appended) */

/* One per thread that ever ran traced code, in the registry array
 * root->threads[0 .. threads_used).  Records are never freed, only reused
 * (seq is bumped) when the registry is full and the slot's ring was evicted.
 * The first cache line is written by the owning thread only. */
struct ft_thread {
    /* --- hot line --- */
    uint64_t pos;       /* ADDRESS of the next slot to write (exact after the
                           thread's last committed event; see FORMAT.md "torn") */
    uint64_t mask;      /* hot path: pos & mask == 0 => tracing paused, else
                           the slot is pos (pos & mask == pos while recording) */
    uint64_t countdown; /* sampled mode: returns left until the next time word */
    uint64_t wrap;      /* runtime-private (appended in reserved space): the
                           hot path's immutable copy of ring | (ring_size - 1),
                           used to wrap pos (mask may drop to 0 meanwhile);
                           readers ignore it */
    uint32_t addr_hi;   /* runtime-private (FT_FMT_EXACT8): address bits 63..32
                           of the last ADDR_HI escape; FT_E8_HI_NONE: escape next */
    uint32_t tsc_hi;    /* FT_FMT_EXACT8 and FT_FMT_SAMPLED4: TSC bits 63..32 of
                           the last TSC_HI escape (stored before the escape);
                           FT_E8_HI_NONE: escape next.  Readers copy it to
                           THRDSTAT: the high half of the ring's newest events
                           when no TSC_HI escape is left among them */
    uint64_t self;      /* runtime-private: the record's own address while it is
                           in use (the hooks' validity check), else 0 */
    uint64_t hot_reserved[2];
    /* --- cold --- */
    uint64_t ring;      /* ring base address (aligned to 2*ring_size); 0 if none */
    uint64_t ring_size; /* bytes, power of two */
    uint32_t tid;
    uint32_t state;     /* enum ft_thread_state */
    uint32_t fmt;       /* enum ft_entry_format */
    uint32_t flags;     /* FT_THRF_* */
    uint64_t start_tsc; /* TSC when the record was created for this thread */
    uint64_t exit_tsc;  /* TSC when the thread exited (0 while alive) */
    uint64_t seq;       /* bumped each time the slot is reused */
    char name[FT_THREAD_NAME_LEN]; /* current name, NUL padded */
    uint64_t cold_reserved[7];
    /* Ring write position at the start of generation g, for the last
     * FT_GEN_SLOTS generations: gen_pos[g % FT_GEN_SLOTS] = {g, pos address}.
     * gen == FT_GEN_NONE: not recorded (thread did not exist yet). */
    struct { uint64_t gen; uint64_t pos; } gen_pos[FT_GEN_SLOTS];
};

/* ---- module record ------------------------------------------------------ */

enum ft_module_state {
    FT_MOD_FREE = 0,
    FT_MOD_LOADED = 1,
    FT_MOD_UNLOADED = 2, /* dlclose'd: kept so old events still decode */
};

struct ft_module_seg {
    uint64_t start; /* absolute address of an executable PT_LOAD */
    uint64_t size;
};

/* One per loaded object (executable, vdso excluded, every DSO), in
 * root->modules[0 .. modules_used).  An address A recorded in generation g
 * belongs to module M if M.gen_loaded <= g < M.gen_unloaded (FT_GEN_NONE =
 * still loaded) and A falls in one of M.seg[]. */
struct ft_module {
    uint64_t bias;           /* load bias (dlpi_addr) */
    uint64_t gen_loaded;     /* generation current when it was first seen mapped */
    uint64_t gen_unloaded;   /* generation current when seen unmapped, or FT_GEN_NONE */
    uint64_t epoch_loaded;   /* root->module_epoch value after it was added */
    uint64_t epoch_unloaded; /* ... after it was removed, or 0 */
    uint32_t state;          /* enum ft_module_state */
    uint32_t nseg;
    struct ft_module_seg seg[FT_MOD_SEGS];
    uint32_t build_id_len;   /* 0 if the object has no NT_GNU_BUILD_ID */
    uint8_t build_id[FT_BUILD_ID_MAX];
    uint64_t reserved[2];
    char path[FT_MOD_PATH_MAX]; /* NUL terminated; "" for the main executable
                                   when the runtime could not resolve it */
};

/* ---- generation record -------------------------------------------------- */

#define FT_GENF_VALID 0x1u

/* root->gens[g % FT_GEN_SLOTS].  Generation g spans [start_tsc of g,
 * start_tsc of g+1); the current generation is open-ended. */
struct ft_gen {
    uint64_t gen;          /* generation number */
    uint64_t flags;        /* FT_GENF_* */
    uint64_t start_tsc;    /* TSC at the boundary */
    uint64_t clk_tsc;      /* one instant: TSC ... */
    uint64_t clk_mono_ns;  /* ... CLOCK_MONOTONIC ... */
    uint64_t clk_real_ns;  /* ... CLOCK_REALTIME */
    uint64_t tsc_hz;       /* TSC ticks per second, as refined at this boundary */
    uint64_t module_epoch; /* root->module_epoch at the boundary */
};

/* ---- layout table ------------------------------------------------------- */

/* structure ids: index into root->sizes[] */
enum ft_struct_id {
    FT_S_ROOT = 0,
    FT_S_THREAD,
    FT_S_MODULE,
    FT_S_GEN,
    FT_S_ENTRY_EXACT16,
    FT_S_ENTRY_SAMPLED8,
    FT_S_COUNT
};

/* ---- the field table: every field of the in-memory ABI, declared once ---- */

/* X(ID, STRUCT, member), in field-id order:
 *   ID      the field id is FT_F_<ID>, an index into root->offsets[]
 *   STRUCT  the owning structure: FT_S_<STRUCT> (ROOT, THREAD, MODULE, GEN),
 *           whose C type is FT_CTYPE_<STRUCT>
 *   member  the member of that struct; its offset and width come from the C
 *           struct below (FT_FIELD_OFFSET, FT_FIELD_WIDTH)
 * Ids are only ever appended (so a structure's fields are not one contiguous
 * range of ids).  Generated from this table: enum ft_field_id, the root's
 * offsets[] (runtime/root.c, FT_ROOT_OFFSETS_INIT), the readers' width and
 * owner tables (reader/rawwrite.c), and the description the tests load
 * (tests/progs/abi_json.c).  A new field: append one X line here, and add the
 * member to its struct. */
#define FT_ABI_FIELDS(X) \
    X(ROOT_PID, ROOT, pid) \
    X(ROOT_TSC_HZ, ROOT, tsc_hz) \
    X(ROOT_TSC_HZ_SOURCE, ROOT, tsc_hz_source) \
    X(ROOT_TIME_MODE, ROOT, time_mode) \
    X(ROOT_INIT_TSC, ROOT, init_tsc) \
    X(ROOT_CMDLINE, ROOT, cmdline) \
    X(ROOT_CMDLINE_LEN, ROOT, cmdline_len) \
    X(ROOT_THREADS, ROOT, threads) \
    X(ROOT_THREADS_CAP, ROOT, threads_cap) \
    X(ROOT_THREADS_USED, ROOT, threads_used) \
    X(ROOT_MODULES, ROOT, modules) \
    X(ROOT_MODULES_CAP, ROOT, modules_cap) \
    X(ROOT_MODULES_USED, ROOT, modules_used) \
    X(ROOT_MODULE_EPOCH, ROOT, module_epoch) \
    X(ROOT_GENS, ROOT, gens) \
    X(ROOT_GENS_CAP, ROOT, gens_cap) \
    X(ROOT_GEN_CURRENT, ROOT, gen_current) \
    X(ROOT_DEFAULT_BUF_SIZE, ROOT, default_buf_size) \
    X(ROOT_GEN_MS, ROOT, gen_ms) \
    X(ROOT_BUDGET, ROOT, budget) \
    X(ROOT_SAMPLE_K, ROOT, sample_k) \
    X(ROOT_ENABLED, ROOT, enabled) \
    X(ROOT_SNAPSHOT_SIGNAL, ROOT, snapshot_signal) \
    X(ROOT_FLAGS, ROOT, flags) \
    X(THR_POS, THREAD, pos) \
    X(THR_MASK, THREAD, mask) \
    X(THR_RING, THREAD, ring) \
    X(THR_RING_SIZE, THREAD, ring_size) \
    X(THR_TID, THREAD, tid) \
    X(THR_STATE, THREAD, state) \
    X(THR_FMT, THREAD, fmt) \
    X(THR_FLAGS, THREAD, flags) \
    X(THR_START_TSC, THREAD, start_tsc) \
    X(THR_EXIT_TSC, THREAD, exit_tsc) \
    X(THR_SEQ, THREAD, seq) \
    X(THR_NAME, THREAD, name) \
    X(THR_GEN_POS, THREAD, gen_pos) \
    X(MOD_BIAS, MODULE, bias) \
    X(MOD_GEN_LOADED, MODULE, gen_loaded) \
    X(MOD_GEN_UNLOADED, MODULE, gen_unloaded) \
    X(MOD_EPOCH_LOADED, MODULE, epoch_loaded) \
    X(MOD_EPOCH_UNLOADED, MODULE, epoch_unloaded) \
    X(MOD_STATE, MODULE, state) \
    X(MOD_NSEG, MODULE, nseg) \
    X(MOD_SEG, MODULE, seg) \
    X(MOD_BUILD_ID_LEN, MODULE, build_id_len) \
    X(MOD_BUILD_ID, MODULE, build_id) \
    X(MOD_PATH, MODULE, path) \
    X(GEN_GEN, GEN, gen) \
    X(GEN_FLAGS, GEN, flags) \
    X(GEN_START_TSC, GEN, start_tsc) \
    X(GEN_CLK_TSC, GEN, clk_tsc) \
    X(GEN_CLK_MONO_NS, GEN, clk_mono_ns) \
    X(GEN_CLK_REAL_NS, GEN, clk_real_ns) \
    X(GEN_TSC_HZ, GEN, tsc_hz) \
    X(GEN_MODULE_EPOCH, GEN, module_epoch) \
    /* appended: the root's registry counters */ \
    X(ROOT_THREADS_CREATED, ROOT, threads_created) \
    X(ROOT_RINGS_EVICTED, ROOT, rings_evicted) \
    X(ROOT_RECORDS_REUSED, ROOT, records_reused) \
    /* appended: fatal-signal episodes (1.9: u64, struct ft_fault[FT_FAULT_SLOTS]) */ \
    X(ROOT_FAULTS_TOTAL, ROOT, faults_total) \
    X(ROOT_FAULTS, ROOT, faults) \
    /* appended: the TSC high half of a thread's newest events (THRDSTAT tsc_hi) */ \
    X(THR_TSC_HI, THREAD, tsc_hi)

/* field ids: index into root->offsets[] (offset of the field inside its
 * structure; FT_OFF_ABSENT if this writer does not have the field) */
#define FT_OFF_ABSENT 0xFFFFu
#define FT_X_FIELD_ID(ID, S, m) FT_F_##ID,
enum ft_field_id { FT_ABI_FIELDS(FT_X_FIELD_ID) FT_F_COUNT };

/* ---- the root ----------------------------------------------------------- */

enum ft_tsc_source {
    FT_TSC_SRC_NONE = 0,
    FT_TSC_SRC_PERF_PAGE = 1, /* perf_event mmap page time_mult/time_shift */
    FT_TSC_SRC_CPUID15 = 2,   /* CPUID leaf 0x15 */
    FT_TSC_SRC_SYSFS = 3,     /* /sys/.../tsc_freq_khz */
    FT_TSC_SRC_CALIBRATED = 4,/* TSC vs CLOCK_MONOTONIC over the run */
    FT_TSC_SRC_CPUINFO = 5,   /* /proc/cpuinfo "cpu MHz" = cpu_khz (invariant TSC,
                                 no aperfmperf, no cpufreq driver) */
};

enum ft_time_mode { FT_TIME_EXACT = 0, FT_TIME_SAMPLED = 1 };

#define FT_ROOTF_INITIALIZED 0x1u
#define FT_ROOTF_HOUSEKEEPER 0x2u /* the "funtrace" housekeeping thread runs */

/* ---- fatal-signal episodes (root, appended) ------------------------------ */

/* One per delivery of SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT to a handler of
 * the program's own (and, with FUNTRACE_ON_CRASH, to the runtime's), written
 * by the runtime BEFORE the program's handler runs: the original fault, even
 * when the core shows a later re-raise or a second fault.  Kept in
 * root->faults[(seq - 1) % FT_FAULT_SLOTS]; root->faults_total = the last seq.
 * FORMAT.md 1.9. */
#define FT_FAULT_SLOTS 8u
enum ft_fault_state {
    FT_FAULT_FREE = 0,     /* slot never used */
    FT_FAULT_ACTIVE = 1,   /* the handler is running, or the process is dying of it */
    FT_FAULT_RETURNED = 2, /* the handler returned: the program recovered */
    FT_FAULT_LONGJMP = 3,  /* the handler left with (sig)longjmp: recovered */
    FT_FAULT_CAUGHT = 4,   /* a C++ exception thrown in the handler was caught outside it */
};
#define FT_FAULTF_FROZEN 0x1u     /* tracing was frozen process-wide meanwhile */
#define FT_FAULTF_DEFAULT 0x2u    /* no handler of the program's: the runtime
                                     (FUNTRACE_ON_CRASH) let the default action run */
#define FT_FAULTF_PARTIAL 0x4u    /* the runtime could not wait for all its own
                                     threads to stop writing before the handler ran */
struct ft_fault {
    int32_t signo;
    int32_t si_code;
    int32_t si_errno;
    uint32_t tid;          /* thread that received the signal */
    uint64_t addr;         /* si_addr for SIGSEGV/SIGBUS/SIGFPE/SIGILL with si_code > 0, else 0 */
    uint64_t pc;           /* the interrupted instruction (ucontext rip) */
    uint64_t tsc;          /* TSC when tracing was frozen (FT_FAULTF_FROZEN; no ring has a
                              later event, but one being written at that instant per
                              thread), else when the runtime took the signal */
    uint64_t end_tsc;      /* TSC when the episode ended (tracing resumed); 0 while ACTIVE */
    uint32_t sender_pid;   /* si_pid for sent signals (si_code <= 0), else 0 */
    uint32_t state;        /* enum ft_fault_state */
    uint32_t flags;        /* FT_FAULTF_* */
    uint32_t nested;       /* further fatal signals taken while this episode was ACTIVE
                              (re-raises, second faults, other threads) */
    int32_t nested_signo;  /* the last of them */
    uint32_t nested_tid;
    uint64_t seq;          /* 1, 2, ...: the episode's number (0: slot FREE) */
};

/* The fixed header: this part never changes between ABI versions. */
struct ft_root_header {
    uint8_t magic[FT_ROOT_MAGIC_LEN]; /*  0 */
    uint32_t abi_version;             /* 16 */
    uint8_t word_size;                /* 20: 8 */
    uint8_t endian;                   /* 21: 1 = little */
    uint16_t header_size;             /* 22: sizeof(struct ft_root_header) */
    uint64_t self;                    /* 24: address of this root */
    uint32_t root_size;               /* 32: sizeof(struct ft_root) */
    uint32_t n_sizes;                 /* 36: entries in sizes[] */
    uint32_t n_offsets;               /* 40: entries in offsets[] */
    uint32_t sizes_off;               /* 44: offset of uint32_t sizes[] in the root */
    uint32_t offsets_off;             /* 48: offset of uint16_t offsets[] in the root */
    uint32_t reserved0;               /* 52 */
    uint64_t reserved1;               /* 56 */
};

struct ft_root {
    struct ft_root_header h;
    uint32_t sizes[FT_S_COUNT];  /* sizes_off */
    uint32_t sizes_pad[(FT_S_COUNT & 1) ? 1 : 2];
    uint16_t offsets[FT_F_COUNT]; /* offsets_off */
    uint16_t offsets_pad[4 - (FT_F_COUNT % 4)];

    uint64_t pid;
    uint64_t tsc_hz;          /* best current estimate, ticks per second */
    uint32_t tsc_hz_source;   /* enum ft_tsc_source */
    uint32_t time_mode;       /* enum ft_time_mode */
    uint64_t init_tsc;
    uint64_t cmdline;         /* address of argv, each NUL terminated */
    uint64_t cmdline_len;     /* bytes at cmdline */
    uint64_t threads;         /* address of struct ft_thread[threads_cap] */
    uint32_t threads_cap;
    uint32_t threads_used;    /* high-water mark: slots [0, used) may be valid */
    uint64_t modules;         /* address of struct ft_module[modules_cap] */
    uint32_t modules_cap;
    uint32_t modules_used;
    uint64_t module_epoch;    /* bumped on every module table change */
    uint64_t gens;            /* address of struct ft_gen[gens_cap] */
    uint32_t gens_cap;        /* FT_GEN_SLOTS */
    uint32_t gens_pad;
    uint64_t gen_current;     /* number of the current generation */
    /* settings */
    uint64_t default_buf_size;/* ring bytes for new threads (FUNTRACE_BUF) */
    uint64_t gen_ms;          /* FUNTRACE_GEN_MS */
    uint64_t budget;          /* bytes of rings kept in all (FUNTRACE_BUDGET) */
    uint64_t sample_k;        /* sampled mode: a time word every k events */
    uint32_t enabled;         /* funtrace_enable/disable_tracing */
    int32_t snapshot_signal;  /* FUNTRACE_SIGNAL, 0 = none */
    uint64_t flags;           /* FT_ROOTF_* */
    /* registry counters (appended; updated under the registry lock) */
    uint64_t threads_created; /* threads that got a record (ring or IGNORED) */
    uint64_t rings_evicted;   /* exited threads' rings freed for FUNTRACE_BUDGET
                                 or a full registry (record -> EVICTED) */
    uint64_t records_reused;  /* EVICTED records given to new threads (the
                                 evicted thread's record is gone for good) */
    uint64_t faults_total;    /* fatal-signal episodes so far (appended, 1.9) */
    uint64_t reserved[4];
    struct ft_fault faults[FT_FAULT_SLOTS]; /* the last ones, [(seq-1) % SLOTS] */
};

/* The C type of each structure id, and a field's offset and width in it. */
#define FT_CTYPE_ROOT struct ft_root
#define FT_CTYPE_THREAD struct ft_thread
#define FT_CTYPE_MODULE struct ft_module
#define FT_CTYPE_GEN struct ft_gen
#define FT_FIELD_OFFSET(S, m) offsetof(FT_CTYPE_##S, m)
#define FT_FIELD_WIDTH(S, m) sizeof(((FT_CTYPE_##S *)0)->m)

/* Initializers generated from FT_ABI_FIELDS (C only: designated array
 * initializers): the root's layout table as this ABI writes it, and the
 * width / owning structure of every field id (for readers). */
#define FT_X_OFFSET_INIT(ID, S, m) [FT_F_##ID] = (uint16_t)FT_FIELD_OFFSET(S, m),
#define FT_X_WIDTH_INIT(ID, S, m) [FT_F_##ID] = (uint16_t)FT_FIELD_WIDTH(S, m),
#define FT_X_STRUCT_INIT(ID, S, m) [FT_F_##ID] = FT_S_##S,
#define FT_ROOT_OFFSETS_INIT { FT_ABI_FIELDS(FT_X_OFFSET_INIT) }
#define FT_FIELD_WIDTHS_INIT { FT_ABI_FIELDS(FT_X_WIDTH_INIT) }
#define FT_FIELD_STRUCTS_INIT { FT_ABI_FIELDS(FT_X_STRUCT_INIT) }
#define FT_ROOT_SIZES_INIT { \
    [FT_S_ROOT] = sizeof(struct ft_root), [FT_S_THREAD] = sizeof(struct ft_thread), \
    [FT_S_MODULE] = sizeof(struct ft_module), [FT_S_GEN] = sizeof(struct ft_gen), \
    [FT_S_ENTRY_EXACT16] = sizeof(struct ft_entry), [FT_S_ENTRY_SAMPLED8] = sizeof(uint64_t) }

/* helpers for readers: fetch a field of a structure read into a local buffer
 * `base` (bytes), given the target's offsets table. */
#define FT_HAS_FIELD(offs, id) ((offs)[id] != FT_OFF_ABSENT)

/* ======================================================================== */
/* Part 2: the raw file format                                               */
/* ======================================================================== */

/* A raw file is a sequence of chunks: 8-byte ASCII magic, little-endian
 * uint64 payload length, payload.  Same framing as the original funtrace.raw.
 * Unknown chunks are skipped by readers.  Chunk order written by every
 * producer of this project (coreextract, funtrace-oomwatch, gdb `funtrace
 * save`, the runtime's snapshot writer):
 *
 *   FUNTRACE  u64 tsc_hz                                  (original chunk)
 *   FTHEADER  struct ft_raw_header
 *   CMD LINE  command line, arguments separated by ' '   (original chunk)
 *   SIGINFO   struct ft_raw_crash            (only when the source has a signal)
 *   FAULTS    struct ft_raw_faults + struct ft_fault[n] (only when the root
 *             recorded fatal-signal episodes)
 *   MAPPINGS  ft_raw_mapping records (+ path)            (memory mappings)
 *   PROCMAPS  the same mappings as /proc/PID/maps text    (original chunk;
 *             generated from MAPPINGS; readers that know MAPPINGS ignore it)
 *   MODULES   struct ft_module[n] as in memory (current ABI layout)
 *   GENERATN  struct ft_gen[n], valid ones, ascending gen
 *   per traced thread, in registry order:
 *     THREADID  {u64 pid, u64 tid, char name[16]}         (original chunk)
 *     THRDSTAT  struct ft_raw_thread
 *     TRACEBUF  struct ft_entry[n] oldest first            (FT_FMT_EXACT16)
 *      or TRACEW08 uint64_t words[n] oldest first          (FT_FMT_SAMPLED8)
 *      or TRACEE08 uint64_t entries[n] oldest first        (FT_FMT_EXACT8)
 *      or TRACES04 uint32_t items[n] oldest first          (FT_FMT_SAMPLED4)
 *   SCHEDEVT  struct ft_raw_sched + struct ft_raw_sched_event[n]: scheduling
 *             events of the process's threads (FORMAT.md 2.6; not every producer)
 *   FINSTACK  struct ft_raw_stack + pcs, one per thread of the source
 *             (cores: every thread; live: only with --stacks)
 *   ENDTRACE  empty                                       (original chunk)
 *
 * A file without ENDTRACE is truncated.  Several traces (ENDTRACE-terminated
 * "samples") may be concatenated in one file, like the original funtrace.raw.
 */
#define FT_RAW_VERSION 2u
#define FT_CHUNK_MAGIC_LEN 8

#define FT_CHUNK_FUNTRACE "FUNTRACE"
#define FT_CHUNK_HEADER "FTHEADER"
#define FT_CHUNK_CMDLINE "CMD LINE"
#define FT_CHUNK_SIGINFO "SIGINFO "
#define FT_CHUNK_MAPPINGS "MAPPINGS"
#define FT_CHUNK_MODULES "MODULES "
#define FT_CHUNK_GENS "GENERATN"
#define FT_CHUNK_THREADID "THREADID"
#define FT_CHUNK_THREADSTAT "THRDSTAT"
#define FT_CHUNK_TRACEBUF "TRACEBUF"
#define FT_CHUNK_TRACEW08 "TRACEW08"
#define FT_CHUNK_TRACEE08 "TRACEE08" /* FT_FMT_EXACT8 entries (raw version 2) */
#define FT_CHUNK_TRACES04 "TRACES04" /* FT_FMT_SAMPLED4 items (raw version 2) */
#define FT_CHUNK_STACK "FINSTACK"
#define FT_CHUNK_END "ENDTRACE"
#define FT_CHUNK_PROCMAPS "PROCMAPS" /* /proc/PID/maps text (FORMAT.md 2.2) */
#define FT_CHUNK_FAULTS "FAULTS  "   /* fatal-signal episodes (FORMAT.md 2.2) */

struct ft_chunk_header {
    char magic[FT_CHUNK_MAGIC_LEN];
    uint64_t length;
};

enum ft_raw_source_kind {
    FT_SRC_CORE = 1,     /* a core file (coreextract CORE, gdb on a core) */
    FT_SRC_LIVE = 2,     /* a live process (coreextract --pid, oomwatch, gdb -p) */
    FT_SRC_SNAPSHOT = 3, /* written by the runtime itself (API, signal, on-crash, PSI) */
};

/* FTHEADER flags */
#define FT_RAWF_PARTIAL 0x1u        /* some of the trace could not be read */
#define FT_RAWF_ROOT_BY_SCAN 0x2u   /* root found by magic scan, not by symbol */
#define FT_RAWF_TIME_FILTERED 0x4u  /* snapshot limited to events >= min_tsc */

struct ft_raw_header {
    uint32_t raw_version;   /* FT_RAW_VERSION */
    uint32_t abi_version;   /* of the root it was read from */
    uint32_t source;        /* enum ft_raw_source_kind */
    uint32_t flags;         /* FT_RAWF_* */
    uint64_t pid;
    uint64_t tsc_hz;
    uint32_t tsc_hz_source;
    uint32_t time_mode;
    uint64_t gen_current;
    uint64_t gen_ms;
    uint64_t module_epoch;
    uint64_t root_addr;
    uint64_t taken_tsc;     /* TSC when a snapshot/live read was taken; 0 for cores */
    uint64_t min_tsc;       /* events older than this were left out (0 = none) */
    uint32_t nthreads;      /* THREADID/THRDSTAT/TRACE* triples that follow */
    uint32_t nthreads_lost; /* registry records that could not be read */
    /* appended: the root's registry counters (root->threads_created ...),
     * FT_RAW_UNKNOWN when the root does not have them */
    uint64_t threads_created;
    uint64_t rings_evicted;
    uint64_t records_reused;
    uint64_t reserved[1];
};
#define FT_RAW_UNKNOWN UINT64_MAX

/* SIGINFO: the signal that ended (or stopped) the process -- or, in a runtime
 * snapshot taken on FUNTRACE_SIGNAL, the signal that asked for the snapshot */
struct ft_raw_crash {
    int32_t signo;
    int32_t si_code;
    int32_t si_errno;
    uint32_t tid;        /* thread that received the signal (0 if unknown) */
    uint64_t addr;       /* si_addr (faulting address) for SIGSEGV/SIGBUS/SIGFPE/SIGILL */
    uint32_t sender_pid; /* for kill()-sent signals, else 0 */
    uint32_t reserved;
};

/* FAULTS: the root's fatal-signal episodes (1.9), oldest first */
struct ft_raw_faults {
    uint64_t total;      /* root->faults_total: episodes in all */
    uint32_t n;          /* struct ft_fault records that follow (the last ones) */
    uint32_t reserved;
};

/* MAPPINGS: a sequence of records, each sizeof(struct ft_raw_mapping) +
 * path_len bytes of path (no NUL) padded with zeros to a multiple of 8. */
#define FT_MAPF_R 0x1u
#define FT_MAPF_W 0x2u
#define FT_MAPF_X 0x4u
struct ft_raw_mapping {
    uint64_t start;
    uint64_t end;
    uint64_t offset;         /* file offset in bytes */
    uint32_t prot;           /* FT_MAPF_*, 0 if unknown */
    uint32_t build_id_len;   /* 0 = none/unknown; from the ELF notes at an
                                offset-0 mapping, read from memory or the file */
    uint8_t build_id[FT_BUILD_ID_MAX];
    uint32_t path_len;
    uint32_t reserved;
};

/* THRDSTAT flags */
#define FT_TSF_WRAPPED 0x1u          /* the ring has wrapped: older events were overwritten */
#define FT_TSF_UNCOMMITTED 0x2u      /* the thread died between writing an entry and
                                        committing pos; the entry was complete and is
                                        appended as the LAST entry of TRACEBUF */
#define FT_TSF_TORN 0x4u             /* the slot at pos was half-written: not emitted */
#define FT_TSF_RING_MISSING 0x8u     /* the ring's memory is not in the source */
#define FT_TSF_RING_PARTIAL 0x10u    /* part of the ring's memory is missing */
#define FT_TSF_COPY_RACED 0x20u      /* live read: events overwritten while copying
                                        were dropped (n_dropped) */
#define FT_TSF_BAD_POS 0x40u         /* pos outside the ring: ring not emitted */
#define FT_TSF_TSC_HI 0x80u          /* tsc_hi is the TSC high half (bits 63..32) of the
                                        events after the ring's last TSC_HI escape */

struct ft_raw_thread {
    uint32_t tid;
    uint32_t state;          /* enum ft_thread_state */
    uint32_t fmt;            /* enum ft_entry_format */
    uint32_t flags;          /* FT_TSF_* and FT_THRF_* << 16 */
    uint64_t ring;           /* ring base address in the process */
    uint64_t ring_size;
    uint64_t pos_off;        /* write position, as an offset into the ring */
    uint64_t first_off;      /* ring offset of the first entry emitted in TRACE* */
    uint64_t n_entries;      /* entries (TRACEBUF) or words (TRACEW08) emitted */
    uint64_t n_dropped;      /* entries left out (torn slot, copy race, time filter) */
    uint64_t start_tsc;
    uint64_t exit_tsc;
    uint64_t seq;
    uint32_t tsc_hi;         /* FT_TSF_TSC_HI: the record's tsc_hi (fmt 3 and 4) */
    uint32_t reserved;
    /* positions at generation starts, as ring OFFSETS (gen = FT_GEN_NONE: none) */
    struct { uint64_t gen; uint64_t off; } gen_pos[FT_GEN_SLOTS];
};

/* FINSTACK: struct ft_raw_stack followed by nframes uint64_t pcs, innermost
 * first (pcs[0] = the thread's pc).  regs[] is the innermost frame's
 * registers in the order of the kernel's struct user_regs_struct (27 words:
 * r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs
 * eflags rsp ss fs_base gs_base ds es fs gs). */
enum ft_unwinder { FT_UNW_LIBUNWIND = 1, FT_UNW_GDB = 2, FT_UNW_PTRACE = 3 };
#define FT_STKF_CRASHED 0x1u   /* the thread that received the fatal signal */
#define FT_STKF_TRUNCATED 0x2u /* unwinding stopped before the outermost frame
                                  (an error, a corrupt stack, the walk limit) */
#define FT_STKF_CUT 0x4u       /* frames were left out in the middle: pcs[cut_at..]
                                  are the outermost frames, ncut frames before them
                                  were walked but not kept (the frame limit) */
#define FT_NREGS 27
struct ft_raw_stack {
    uint32_t tid;
    uint32_t unwinder;    /* enum ft_unwinder */
    uint32_t nframes;
    uint32_t flags;       /* FT_STKF_* */
    uint64_t regs[FT_NREGS];
    uint32_t cut_at;      /* FT_STKF_CUT: index in pcs of the first outermost frame */
    uint32_t ncut;        /* FT_STKF_CUT: frames left out before it (0 if not cut) */
};

/* the original funtrace's THREADID chunk */
struct ft_raw_threadid {
    uint64_t pid;
    uint64_t tid;
    char name[FT_THREAD_NAME_LEN];
};

/* ---- layout checks ------------------------------------------------------ */
#ifndef __cplusplus
#define FT_STATIC_ASSERT _Static_assert
#else
#define FT_STATIC_ASSERT static_assert
#endif
FT_STATIC_ASSERT(sizeof(struct ft_entry) == 16, "ft_entry");
FT_STATIC_ASSERT(sizeof(struct ft_root_header) == 64, "ft_root_header");
FT_STATIC_ASSERT(offsetof(struct ft_thread, ring) == 64, "hot line is 64 bytes");
FT_STATIC_ASSERT(sizeof(struct ft_thread) % 64 == 0, "ft_thread");
FT_STATIC_ASSERT(sizeof(struct ft_gen) == 64, "ft_gen");
FT_STATIC_ASSERT(sizeof(struct ft_module) % 8 == 0, "ft_module");
FT_STATIC_ASSERT(sizeof(struct ft_root) % 8 == 0, "ft_root");
FT_STATIC_ASSERT(sizeof(struct ft_fault) == 80, "ft_fault");
FT_STATIC_ASSERT(offsetof(struct ft_root, offsets) % 8 == 0, "offsets aligned");
FT_STATIC_ASSERT(offsetof(struct ft_root, pid) % 8 == 0, "payload aligned");
FT_STATIC_ASSERT(sizeof(struct ft_raw_header) == 128, "ft_raw_header");
FT_STATIC_ASSERT(sizeof(struct ft_raw_crash) == 32, "ft_raw_crash");
FT_STATIC_ASSERT(sizeof(struct ft_raw_faults) == 16, "ft_raw_faults");
FT_STATIC_ASSERT(sizeof(struct ft_raw_mapping) == 80, "ft_raw_mapping");
FT_STATIC_ASSERT(sizeof(struct ft_raw_thread) == 96 + 16 * FT_GEN_SLOTS, "ft_raw_thread");
FT_STATIC_ASSERT(sizeof(struct ft_raw_stack) == 16 + 8 * FT_NREGS + 8, "ft_raw_stack");
FT_STATIC_ASSERT(sizeof(struct ft_raw_threadid) == 32, "ft_raw_threadid");
#define FT_X_OFFSET_ASSERT(ID, S, m) \
    FT_STATIC_ASSERT(FT_FIELD_OFFSET(S, m) < FT_OFF_ABSENT, "offset of FT_F_" #ID " fits in offsets[]");
FT_ABI_FIELDS(FT_X_OFFSET_ASSERT)

/* ---- SCHEDEVT: scheduling events of the process's threads (FORMAT.md 2.6) --
 * Written after the thread chunks (before FINSTACK) by every producer that
 * could look for them: struct ft_raw_sched, then nevents struct
 * ft_raw_sched_event, oldest first.  status != FT_SCHED_OK: no events, `why`
 * says in one line why there are none.  Timestamps are TSC ticks (the
 * tracefs instance's trace_clock is x86-tsc), the clock of the rings. */
#define FT_CHUNK_SCHED "SCHEDEVT"
#define FT_SCHED_VERSION 1u
enum ft_sched_status {
    FT_SCHED_OK = 0,
    FT_SCHED_OFF = 1,         /* disabled (FUNTRACE_SCHED=off) */
    FT_SCHED_NO_TRACEFS = 2,  /* tracefs is not mounted */
    FT_SCHED_NO_INSTANCE = 3, /* the instance does not exist (funtrace-sched setup not run) */
    FT_SCHED_NO_ACCESS = 4,   /* permission denied */
    FT_SCHED_BAD_SETUP = 5,   /* trace_clock is not x86-tsc, or the events are not enabled */
    FT_SCHED_ERROR = 6,       /* read error, no memory for the capture */
};
#define FT_SCHEDF_DROPPED 0x1u     /* the capture buffer was full: the oldest events were left out */
#define FT_SCHEDF_LOST 0x2u        /* the kernel reported lost events (reader overrun) */
#define FT_SCHEDF_TRACING_OFF 0x4u /* the instance's tracing_on was 0 */
struct ft_raw_sched {
    uint32_t version;    /* FT_SCHED_VERSION */
    uint32_t status;     /* enum ft_sched_status */
    uint32_t flags;      /* FT_SCHEDF_* */
    uint32_t nevents;    /* struct ft_raw_sched_event that follow */
    uint64_t from_tsc;   /* window: events before it were not kept (0: none) */
    uint64_t to_tsc;     /* events after it were not kept (0: none) */
    uint64_t oldest_tsc; /* oldest event of ANY task in the kernel buffer: before it,
                            thread states are unknown (0: the buffer was empty) */
    uint64_t ndropped;   /* events of the process left out for lack of room */
    uint64_t pid;        /* the process */
    uint64_t reserved;
    char why[192];       /* status != OK: one line saying why there are no events; else
                            the instance read, NUL-terminated */
};
enum ft_sched_kind {
    FT_SCHED_SWITCH = 1,     /* sched_switch: tid switched out, other switched in */
    FT_SCHED_WAKING = 2,     /* sched_waking: tid woken by other (the current task) */
    FT_SCHED_WAKEUP_NEW = 3, /* sched_wakeup_new: new task tid, created by other */
};
#define FT_SCHEDEV_PREEMPTED 0x1u /* switch: prev_state R+ (preempted) */
#define FT_SCHEDEV_HARDIRQ 0x2u   /* recorded in a hard interrupt (waker = the interrupted task) */
#define FT_SCHEDEV_SOFTIRQ 0x4u   /* recorded in a softirq */
struct ft_raw_sched_event {
    uint64_t tsc;
    uint32_t tid;       /* switch: prev (switched out); waking, wakeup_new: the woken task */
    uint32_t other;     /* switch: next (switched in); waking, wakeup_new: the current task */
    uint32_t cur_tgid;  /* process of the current task (switch: prev; waking: the waker); 0 unknown */
    uint16_t cpu;       /* CPU the event was recorded on */
    uint8_t kind;       /* enum ft_sched_kind */
    uint8_t state;      /* switch: first letter of prev_state (R S D T t X Z P I), else 0 */
    uint8_t flags;      /* FT_SCHEDEV_* */
    uint8_t reserved[7];
    char comm[16];      /* of tid, NUL-padded */
    char other_comm[16];/* of other */
};
FT_STATIC_ASSERT(sizeof(struct ft_raw_sched) == 256, "ft_raw_sched");
FT_STATIC_ASSERT(sizeof(struct ft_raw_sched_event) == 64, "ft_raw_sched_event");

#ifdef __cplusplus
}
#endif
#endif /* FUNTRACE_ABI_H */
