"""funtrace gdb extension: get a funtrace trace out of a core or a stopped process.

    (gdb) funtrace                 write ./funtrace.raw (same as `funtrace save`)
    (gdb) funtrace save [FILE]     write the raw trace to FILE
    (gdb) funtrace tail [N] [-t TID]   last N calls of each thread, nested
    (gdb) funtrace threads         one line per traced thread
    (gdb) funtrace generations     the generations held in the trace

This file is the Python mirror of runtime/rawwrite.c (the C reader of the
in-memory ABI and writer of raw chunks, runtime/include/funtrace_rawwrite.h):
for the same core, `funtrace save` and `coreextract` write the same chunks,
except FINSTACK (gdb's unwinder).  Everything is read through gdb's memory
access with the offsets of the root's own layout table, so no debug info is
needed for the runtime.  Loading this file twice is harmless.
"""
import array
import bisect
import itertools
import os
import re
import struct
import sys
import time

try:
    import gdb
    if not hasattr(gdb, "Command"):   # not gdb's module (e.g. this gdb/ directory)
        gdb = None
except ImportError:    # imported outside gdb (the test suite, for its tables)
    gdb = None

# ===========================================================================
# ABI constants (runtime/include/funtrace_abi.h)
# ===========================================================================

ABI_VERSION = 1
ROOT_MAGIC = b"\x89FUNTRACEROOT\r\n\x1a"
ROOT_SYMBOL = "funtrace_root"
ROOT_HEADER_SIZE = 64
GEN_SLOTS = 64
GEN_NONE = (1 << 64) - 1
MOD_SEGS = 4
BUILD_ID_MAX = 40
THREAD_NAME_LEN = 16

F_RET = 1 << 63
F_RET_WITH_CALLER = 1 << 62
F_CATCH = F_RET | F_RET_WITH_CALLER
F_CALL_RET_ON_THROW = 1 << 61
ADDR_MASK = (1 << 61) - 1
TIME_WORD_TSC_MASK = (1 << 61) - 1

FMT_EXACT16 = 1
FMT_SAMPLED8 = 2

THR_FREE, THR_ALIVE, THR_EXITED, THR_EVICTED, THR_IGNORED = 0, 1, 2, 3, 4
THR_STATE_NAMES = {0: "free", 1: "alive", 2: "exited", 3: "evicted", 4: "ignored"}
THRF_MAIN = 0x1

GENF_VALID = 0x1

# structure ids (index into root->sizes[])
S_ROOT, S_THREAD, S_MODULE, S_GEN, S_ENTRY_EXACT16, S_ENTRY_SAMPLED8, S_COUNT = range(7)

# field ids (index into root->offsets[]); enum ft_field_id, in order
FIELD_NAMES = [
    # root
    "ROOT_PID", "ROOT_TSC_HZ", "ROOT_TSC_HZ_SOURCE", "ROOT_TIME_MODE",
    "ROOT_INIT_TSC", "ROOT_CMDLINE", "ROOT_CMDLINE_LEN",
    "ROOT_THREADS", "ROOT_THREADS_CAP", "ROOT_THREADS_USED",
    "ROOT_MODULES", "ROOT_MODULES_CAP", "ROOT_MODULES_USED", "ROOT_MODULE_EPOCH",
    "ROOT_GENS", "ROOT_GENS_CAP", "ROOT_GEN_CURRENT",
    "ROOT_DEFAULT_BUF_SIZE", "ROOT_GEN_MS", "ROOT_BUDGET", "ROOT_SAMPLE_K",
    "ROOT_ENABLED", "ROOT_SNAPSHOT_SIGNAL", "ROOT_FLAGS",
    # thread
    "THR_POS", "THR_MASK", "THR_RING", "THR_RING_SIZE", "THR_TID",
    "THR_STATE", "THR_FMT", "THR_FLAGS", "THR_START_TSC", "THR_EXIT_TSC",
    "THR_SEQ", "THR_NAME", "THR_GEN_POS",
    # module
    "MOD_BIAS", "MOD_GEN_LOADED", "MOD_GEN_UNLOADED", "MOD_EPOCH_LOADED",
    "MOD_EPOCH_UNLOADED", "MOD_STATE", "MOD_NSEG", "MOD_SEG",
    "MOD_BUILD_ID_LEN", "MOD_BUILD_ID", "MOD_PATH",
    # generation
    "GEN_GEN", "GEN_FLAGS", "GEN_START_TSC", "GEN_CLK_TSC", "GEN_CLK_MONO_NS",
    "GEN_CLK_REAL_NS", "GEN_TSC_HZ", "GEN_MODULE_EPOCH",
    # root, appended later (registry counters)
    "ROOT_THREADS_CREATED", "ROOT_RINGS_EVICTED", "ROOT_RECORDS_REUSED",
    # root, appended later (fatal-signal episodes)
    "ROOT_FAULTS_TOTAL", "ROOT_FAULTS",
]
F = {name: i for i, name in enumerate(FIELD_NAMES)}
F_COUNT = len(FIELD_NAMES)
OFF_ABSENT = 0xFFFF

# The CURRENT layout (what struct ft_* look like in funtrace_abi.h): field id ->
# (offset, size).  Used to re-encode module and generation records read with
# the target's offsets into the current layout (MODULES/GENERATN chunks).
CUR_SIZES = {S_ROOT: 1088, S_THREAD: 1216, S_MODULE: 496, S_GEN: 64,
             S_ENTRY_EXACT16: 16, S_ENTRY_SAMPLED8: 8}
CUR_LAYOUT = {
    "ROOT_PID": (224, 8), "ROOT_TSC_HZ": (232, 8), "ROOT_TSC_HZ_SOURCE": (240, 4),
    "ROOT_TIME_MODE": (244, 4), "ROOT_INIT_TSC": (248, 8), "ROOT_CMDLINE": (256, 8),
    "ROOT_CMDLINE_LEN": (264, 8), "ROOT_THREADS": (272, 8), "ROOT_THREADS_CAP": (280, 4),
    "ROOT_THREADS_USED": (284, 4), "ROOT_MODULES": (288, 8), "ROOT_MODULES_CAP": (296, 4),
    "ROOT_MODULES_USED": (300, 4), "ROOT_MODULE_EPOCH": (304, 8), "ROOT_GENS": (312, 8),
    "ROOT_GENS_CAP": (320, 4), "ROOT_GEN_CURRENT": (328, 8), "ROOT_DEFAULT_BUF_SIZE": (336, 8),
    "ROOT_GEN_MS": (344, 8), "ROOT_BUDGET": (352, 8), "ROOT_SAMPLE_K": (360, 8),
    "ROOT_ENABLED": (368, 4), "ROOT_SNAPSHOT_SIGNAL": (372, 4), "ROOT_FLAGS": (376, 8),
    "THR_POS": (0, 8), "THR_MASK": (8, 8), "THR_RING": (64, 8), "THR_RING_SIZE": (72, 8),
    "THR_TID": (80, 4), "THR_STATE": (84, 4), "THR_FMT": (88, 4), "THR_FLAGS": (92, 4),
    "THR_START_TSC": (96, 8), "THR_EXIT_TSC": (104, 8), "THR_SEQ": (112, 8),
    "THR_NAME": (120, 16), "THR_GEN_POS": (192, 16 * GEN_SLOTS),
    "MOD_BIAS": (0, 8), "MOD_GEN_LOADED": (8, 8), "MOD_GEN_UNLOADED": (16, 8),
    "MOD_EPOCH_LOADED": (24, 8), "MOD_EPOCH_UNLOADED": (32, 8), "MOD_STATE": (40, 4),
    "MOD_NSEG": (44, 4), "MOD_SEG": (48, 16 * MOD_SEGS), "MOD_BUILD_ID_LEN": (112, 4),
    "MOD_BUILD_ID": (116, BUILD_ID_MAX), "MOD_PATH": (176, 320),
    "GEN_GEN": (0, 8), "GEN_FLAGS": (8, 8), "GEN_START_TSC": (16, 8), "GEN_CLK_TSC": (24, 8),
    "GEN_CLK_MONO_NS": (32, 8), "GEN_CLK_REAL_NS": (40, 8), "GEN_TSC_HZ": (48, 8),
    "GEN_MODULE_EPOCH": (56, 8),
    "ROOT_THREADS_CREATED": (384, 8), "ROOT_RINGS_EVICTED": (392, 8), "ROOT_RECORDS_REUSED": (400, 8),
    "ROOT_FAULTS_TOTAL": (408, 8), "ROOT_FAULTS": (448, 640),
}
GEN_FIELDS = [n for n in FIELD_NAMES if n.startswith("GEN_")]

# ---- raw format --------------------------------------------------------------
RAW_VERSION = 1
SRC_CORE, SRC_LIVE, SRC_SNAPSHOT = 1, 2, 3
RAWF_PARTIAL = 0x1
RAWF_ROOT_BY_SCAN = 0x2
RAWF_TIME_FILTERED = 0x4

MAPF_R, MAPF_W, MAPF_X = 0x1, 0x2, 0x4

TSF_WRAPPED = 0x1
TSF_UNCOMMITTED = 0x2
TSF_TORN = 0x4
TSF_RING_MISSING = 0x8
TSF_RING_PARTIAL = 0x10
TSF_COPY_RACED = 0x20
TSF_BAD_POS = 0x40

UNW_LIBUNWIND, UNW_GDB, UNW_PTRACE = 1, 2, 3
STKF_CRASHED = 0x1
STKF_TRUNCATED = 0x2
NREGS = 27
REG_NAMES = ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx",
             "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base",
             "gs_base", "ds", "es", "fs", "gs"]
STACK_MAX_FRAMES = 512   # CE_MAX_FRAMES

RAW_HEADER_FMT = "<IIIIQQIIQQQQQQII4Q"      # struct ft_raw_header (128)
RAW_UNKNOWN = (1 << 64) - 1                # FT_RAW_UNKNOWN
RAW_CRASH_FMT = "<iiiIQII"                  # struct ft_raw_crash (32)
RAW_MAPPING_FMT = "<QQQII%dsII" % BUILD_ID_MAX  # struct ft_raw_mapping (80)
RAW_THREADID_FMT = "<QQ%ds" % THREAD_NAME_LEN   # struct ft_raw_threadid (32)
RAW_THREAD_FMT = "<IIIIQQQQQQQQQQ"          # struct ft_raw_thread without gen_pos (96)
RAW_STACK_FMT = "<IIII%dQQ" % NREGS         # struct ft_raw_stack (232)

CH_FUNTRACE = b"FUNTRACE"
CH_HEADER = b"FTHEADER"
CH_CMDLINE = b"CMD LINE"
CH_SIGINFO = b"SIGINFO "
CH_MAPPINGS = b"MAPPINGS"
CH_PROCMAPS = b"PROCMAPS"
CH_MODULES = b"MODULES "
CH_GENS = b"GENERATN"
CH_THREADID = b"THREADID"
CH_THREADSTAT = b"THRDSTAT"
CH_TRACEBUF = b"TRACEBUF"
CH_TRACEW08 = b"TRACEW08"
CH_STACK = b"FINSTACK"
CH_END = b"ENDTRACE"


SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
                7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
                13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD",
                18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
                23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF",
                28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS"}
FAULT_SIGNALS = (4, 7, 8, 11)  # SIGILL SIGBUS SIGFPE SIGSEGV: si_addr is meaningful


def signame(signo):
    if signo in SIGNAL_NAMES:
        return SIGNAL_NAMES[signo]
    if 34 <= signo <= 64:
        return "SIGRTMIN+%d" % (signo - 34)
    return "signal %d" % signo


class FtError(Exception):
    """An error reported as one line: 'funtrace: <message>'."""


# ===========================================================================
# Target memory (mirror of struct ft_reader: page-granular, short reads allowed)
# ===========================================================================

PAGE = 4096   # RW_PAGE: the unit of "missing" memory
U64 = (1 << 64) - 1


class Block:
    """A copy of [addr, addr+len) with unreadable pages zero-filled."""
    __slots__ = ("addr", "data", "miss", "pg0", "nmiss", "npages")

    def __init__(self, addr, data, miss):
        self.addr = addr
        self.data = data          # bytes-like, len == requested length
        self.miss = miss          # set of missing page numbers (absolute addr // PAGE)
        self.pg0 = addr // PAGE
        self.npages = ((addr + len(data) - 1) // PAGE - self.pg0 + 1) if data else 0
        self.nmiss = len(miss)

    def ok(self, off, n):
        """Is [addr+off, addr+off+n) entirely readable?"""
        if not self.miss:
            return off + n <= len(self.data)
        a = self.addr + off
        for pg in range(a // PAGE, (a + n - 1) // PAGE + 1):
            if pg in self.miss:
                return False
        return off + n <= len(self.data)


class Reader:
    """Reads target memory through gdb.

    On a core, only what the core file holds is readable: gdb would also
    answer for memory the kernel did not dump (zeros, or the executable's
    file contents), which must count as missing, as it does for coreextract."""

    def __init__(self, inferior, avail=None):
        self.inf = inferior
        self.avail = avail            # core: sorted disjoint [(start, end)] held by the file
        self.starts = [a for a, _b in avail] if avail else None

    def _held(self, addr, n):
        if self.avail is None:
            return True
        i = bisect.bisect_right(self.starts, addr) - 1
        return i >= 0 and addr + n <= self.avail[i][1]

    def _try(self, addr, n):
        if not self._held(addr, n):
            return None
        try:
            return self.inf.read_memory(addr, n).tobytes()
        except (gdb.MemoryError, gdb.error, ValueError, OverflowError):
            return None

    def read(self, addr, n):
        """The readable prefix of [addr, addr+n) (rd(): short count = rest unreadable)."""
        if n <= 0 or addr < 0 or addr > U64:
            return b""
        n = min(n, (1 << 64) - addr)
        b = self._try(addr, n)
        if b is not None:
            return b
        first = min(n, PAGE - (addr % PAGE))
        if first == n or self._try(addr, first) is None:
            return b""

        def length(k):
            return min(n, first + k * PAGE)
        lo, hi = 0, (n - first + PAGE - 1) // PAGE  # length(lo) readable, length(hi) == n not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._try(addr, length(mid)) is not None:
                lo = mid
            else:
                hi = mid
        return self._try(addr, length(lo)) or b""

    def read_full(self, addr, n):
        """rd_full(): all n bytes or None."""
        if n <= 0:
            return b""
        if addr < 0 or addr + n > (1 << 64):
            return None
        return self._try(addr, n)

    def read_block(self, addr, n):
        """read_pages(): [addr, addr+n) with unreadable pages zero-filled, as a Block."""
        if n <= 0 or addr < 0 or addr + n > (1 << 64):
            return Block(addr, b"", set())
        if self._held(addr, n):
            try:
                return Block(addr, self.inf.read_memory(addr, n), set())   # no copy
            except (gdb.MemoryError, gdb.error, ValueError, OverflowError):
                pass
        out = bytearray(n)
        miss = set()
        self._fill(addr, n, addr, out, miss)
        return Block(addr, bytes(out), miss)

    def _fill(self, a, n, base, out, miss):
        """Fill out[a-base : a-base+n] (unreadable: pages recorded in miss)."""
        pg_first, pg_last = a // PAGE, (a + n - 1) // PAGE
        if pg_first == pg_last:
            b = self._try(a, n)
            if b is None:
                miss.add(pg_first)
            else:
                out[a - base:a - base + n] = b
            return
        mid = ((pg_first + pg_last + 1) // 2) * PAGE   # a page boundary inside the range
        for s, e in ((a, mid), (mid, a + n)):
            b = self._try(s, e - s)
            if b is not None:
                out[s - base:e - base] = b
            else:
                self._fill(s, e - s, base, out, miss)


# ===========================================================================
# Core files (ELF program headers and notes, read directly from the file)
# ===========================================================================

PT_LOAD, PT_NOTE = 1, 4
PF_X, PF_W, PF_R = 1, 2, 4
NT_PRSTATUS = 1
NT_SIGINFO = 0x53494749
NT_FILE = 0x46494C45
NT_GNU_BUILD_ID = 3


def _notes(data):
    """Iterate (name, type, desc) over an ELF note segment's bytes."""
    off = 0
    n = len(data)
    while off + 12 <= n:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        off += 12
        name_end = off + namesz
        desc_off = off + ((namesz + 3) & ~3)
        desc_end = desc_off + descsz
        if desc_end > n:
            return
        yield data[off:name_end].rstrip(b"\0"), ntype, data[desc_off:desc_end]
        off = desc_off + ((descsz + 3) & ~3)


class CoreFile:
    """What the core file says that gdb's Python API does not expose."""

    def __init__(self, path):
        self.path = path
        self.loads = []        # (vaddr, memsz, filesz, flags, offset)
        self.tids = []         # NT_PRSTATUS order (first = the dumping thread)
        self.prstatus_sig = {}  # tid -> pr_cursig
        self.siginfo = None    # bytes of the first NT_SIGINFO
        self.files = []        # NT_FILE: (start, end, offset, path bytes)
        try:
            with open(path, "rb") as f:
                self.size = os.fstat(f.fileno()).st_size
                self._parse(f)
        except OSError as e:
            raise FtError("cannot read core file %s: %s" % (path, e.strerror))

    def _parse(self, f):
        ehdr = f.read(64)
        if len(ehdr) < 64 or ehdr[:4] != b"\x7fELF" or ehdr[4] != 2 or ehdr[5] != 1:
            raise FtError("%s: not a 64-bit little-endian ELF core file" % self.path)
        e_type, = struct.unpack_from("<H", ehdr, 16)
        if e_type != 4:
            raise FtError("%s: not a core file (ELF type %d)" % (self.path, e_type))
        e_phoff, = struct.unpack_from("<Q", ehdr, 32)
        e_phentsize, e_phnum = struct.unpack_from("<HH", ehdr, 54)
        if e_phentsize < 56 or e_phnum == 0:
            raise FtError("%s: core file has no program headers" % self.path)
        f.seek(e_phoff)
        ph = f.read(e_phentsize * e_phnum)
        notes = []
        for i in range(len(ph) // e_phentsize):
            p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz, p_memsz, _al = \
                struct.unpack_from("<IIQQQQQQ", ph, i * e_phentsize)
            if p_type == PT_LOAD:
                self.loads.append((p_vaddr, p_memsz, p_filesz, p_flags, p_offset))
            elif p_type == PT_NOTE and p_filesz < (1 << 30):
                f.seek(p_offset)
                notes.append(f.read(p_filesz))
        for seg in notes:
            for name, ntype, desc in _notes(seg):
                if name != b"CORE":
                    continue
                if ntype == NT_PRSTATUS and len(desc) >= 36:
                    tid, = struct.unpack_from("<I", desc, 32)
                    cursig, = struct.unpack_from("<h", desc, 12)
                    self.tids.append(tid)
                    self.prstatus_sig[tid] = cursig
                elif ntype == NT_SIGINFO and self.siginfo is None:
                    self.siginfo = desc
                elif ntype == NT_FILE and not self.files:
                    self.files = self._parse_nt_file(desc)

    @staticmethod
    def _parse_nt_file(desc):
        if len(desc) < 16:
            return []
        count, page_size = struct.unpack_from("<QQ", desc, 0)
        if count > len(desc) // 24:
            return []
        names = desc[16 + 24 * count:].split(b"\0")
        out = []
        for i in range(count):
            start, end, pgoff = struct.unpack_from("<QQQ", desc, 16 + 24 * i)
            out.append((start, end, pgoff * page_size, names[i] if i < len(names) else b""))
        return out

    def held_ranges(self):
        """Address ranges whose bytes the core file holds (core_read): each
        PT_LOAD's first min(p_filesz, bytes left in the file) bytes, adjacent
        ranges merged."""
        out = []
        for vaddr, _memsz, filesz, _fl, offset in sorted(self.loads):
            avail = 0 if offset >= self.size else min(filesz, self.size - offset)
            if not avail:
                continue
            if out and out[-1][1] == vaddr:
                out[-1] = (out[-1][0], vaddr + avail)
            else:
                out.append((vaddr, vaddr + avail))
        return out

    def prot_at(self, addr):
        for vaddr, memsz, _fs, flags, _off in self.loads:
            if vaddr <= addr < vaddr + memsz:
                return ((MAPF_R if flags & PF_R else 0) | (MAPF_W if flags & PF_W else 0)
                        | (MAPF_X if flags & PF_X else 0))
        return 0

    def writable_ranges(self):
        out = []
        for vaddr, _memsz, filesz, flags, offset in sorted(self.loads):
            avail = 0 if offset >= self.size else min(filesz, self.size - offset)
            if flags & PF_W and avail:
                out.append((vaddr, vaddr + avail))
        return out


# ===========================================================================
# Build ids (ELF notes of an object mapped at file offset 0)
# ===========================================================================

NOTE_MAX = 8192
MAX_PHDRS = 256
PAGE_MASK = ~0xFFF & U64


def build_id_in_notes(p):
    """elf_build_id_in_notes(): the NT_GNU_BUILD_ID of a note buffer, or b""."""
    off, n = 0, len(p)
    while off + 12 <= n:
        namesz, descsz, ntype = struct.unpack_from("<III", p, off)
        name_off = off + 12
        desc_off = name_off + ((namesz + 3) & ~3)
        nxt = desc_off + ((descsz + 3) & ~3)
        if nxt > n:
            return b""
        if ntype == NT_GNU_BUILD_ID and namesz == 4 and p[name_off:name_off + 4] == b"GNU\0" \
                and descsz > 0:
            return bytes(p[desc_off:desc_off + min(descsz, BUILD_ID_MAX)])
        off = nxt
    return b""


def build_id_in_memory(rd, start):
    """elf_build_id_in_memory(): build-id of the ELF object whose offset-0
    mapping starts at start, from its headers and notes in target memory."""
    eh = rd.read(start, 64)
    if len(eh) < 64 or eh[:4] != b"\x7fELF" or eh[4] != 2:
        return b""
    e_phoff, = struct.unpack_from("<Q", eh, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", eh, 54)
    if e_phentsize != 56 or e_phnum == 0 or e_phnum > MAX_PHDRS or e_phoff > 1 << 20:
        return b""
    ph = rd.read(start + e_phoff, 56 * e_phnum)
    if len(ph) < 56 * e_phnum:
        return b""
    phdrs = [struct.unpack_from("<IIQQQQQQ", ph, 56 * i) for i in range(e_phnum)]
    base = None
    for p_type, _f, p_offset, p_vaddr, _pa, _fs, _ms, _al in phdrs:
        if p_type == PT_LOAD and (p_offset & PAGE_MASK) == 0:
            base = p_vaddr & PAGE_MASK
            break
    if base is None:
        return b""
    for p_type, _f, _o, p_vaddr, _pa, p_filesz, _ms, _al in phdrs:
        if p_type != PT_NOTE or p_filesz == 0:
            continue
        addr = (start + (p_vaddr - base)) & U64
        r = build_id_in_notes(rd.read(addr, min(p_filesz, NOTE_MAX)))
        if r:
            return r
    return b""


def build_id_on_disk(path):
    """elf_info_load()'s build-id: the first PT_NOTE of an x86-64 ELF file holding one."""
    try:
        with open(path, "rb") as f:
            eh = f.read(64)
            if len(eh) < 64 or eh[:4] != b"\x7fELF" or eh[4] != 2 or eh[5] != 1:
                return b""
            e_machine, = struct.unpack_from("<H", eh, 18)
            if e_machine != 62:
                return b""
            e_phoff, = struct.unpack_from("<Q", eh, 32)
            e_phentsize, e_phnum = struct.unpack_from("<HH", eh, 54)
            if e_phentsize != 56 or e_phnum == 0xFFFF:
                return b""
            f.seek(e_phoff)
            ph = f.read(56 * e_phnum)
            size = os.fstat(f.fileno()).st_size
            for i in range(len(ph) // 56):
                p_type, _f, p_offset, _va, _pa, p_filesz, _ms, _al = \
                    struct.unpack_from("<IIQQQQQQ", ph, 56 * i)
                if p_type != PT_NOTE or p_filesz == 0:
                    continue
                n = min(p_filesz, NOTE_MAX)
                if p_offset + n > size:
                    continue
                f.seek(p_offset)
                r = build_id_in_notes(f.read(n))
                if r:
                    return r
    except (OSError, ValueError, OverflowError):
        pass
    return b""


def mapping_build_id(rd, start, offset, path):
    """Build-id of a mapping (maps_finish): offset-0 file mappings only, from
    target memory, else from the file on disk."""
    if offset != 0 or not path or path.startswith(b"["):
        return b""
    return build_id_in_memory(rd, start) or build_id_on_disk(path)


def mapping_record(start, end, offset, prot, build_id, path):
    """One MAPPINGS record (ft_mapping_record_encode)."""
    rec = struct.pack(RAW_MAPPING_FMT, start, end, offset, prot, len(build_id),
                      build_id.ljust(BUILD_ID_MAX, b"\0"), len(path), 0)
    pad = (-len(path)) % 8
    return rec + path + b"\0" * pad


def procmaps_text(payload):
    """PROCMAPS payload: the MAPPINGS records as /proc/PID/maps lines
    (mirror of rawwrite.c pm_walk; a malformed record ends the text)."""
    out = []
    off, rs0 = 0, struct.calcsize(RAW_MAPPING_FMT)
    while len(payload) - off >= rs0:
        start, end, offset, prot, _bl, _bid, plen, _r = struct.unpack_from(RAW_MAPPING_FMT, payload, off)
        rs = rs0 + ((plen + 7) & ~7)
        if plen > 0xFFFFFFFF - 8 or rs > len(payload) - off:
            break
        path = payload[off + rs0:off + rs0 + plen].replace(b"\n", b"\\012")
        perms = "%s%s%sp" % ("r" if prot & 1 else "-", "w" if prot & 2 else "-", "x" if prot & 4 else "-")
        out.append(b"%08x-%08x %s %08x 00:00 0 " % (start, end, perms.encode(), offset) + path + b"\n")
        off += rs
    return b"".join(out)


# ===========================================================================
# The root and its layout table (mirror of rawwrite.c root_load)
# ===========================================================================

RW_ROOT_MAX = 2048          # largest root accepted
RW_STRUCT_MAX = 2048        # largest thread/module/gen record accepted
RW_MAX_THREADS = 1 << 20    # registry capacity accepted
RW_MAX_MODULES = 1 << 16
RW_MAX_RING = 1 << 40       # largest ring accepted
RW_CMDLINE_MAX = 1 << 20    # longer command lines are cut
RW_UNKNOWN_OFF = U64        # gen_pos outside the ring

ROOT_EREAD, ROOT_EMAGIC, ROOT_ESELF, ROOT_EVERSION, ROOT_ELAYOUT = -1, -2, -3, -4, -5
ROOT_STRERROR = {
    0: "valid root",
    ROOT_EREAD: "root memory not readable",
    ROOT_EMAGIC: "no funtrace root magic",
    ROOT_ESELF: "root self-pointer does not match its address",
    ROOT_EVERSION: "unknown funtrace ABI version",
    ROOT_ELAYOUT: "invalid root layout table",
}
REQUIRED_FIELDS = ["ROOT_THREADS", "ROOT_THREADS_CAP", "ROOT_THREADS_USED", "THR_POS",
                   "THR_RING", "THR_RING_SIZE", "THR_TID", "THR_STATE", "THR_FMT"]


_FIELD_PREFIX_STRUCT = {"ROOT": S_ROOT, "THR": S_THREAD, "MOD": S_MODULE, "GEN": S_GEN}


def field_struct(i):
    """The structure field i belongs to (by name: fields are appended later)."""
    return _FIELD_PREFIX_STRUCT[FIELD_NAMES[i].split("_", 1)[0]]


FIELD_WIDTH = [CUR_LAYOUT[n][1] for n in FIELD_NAMES]


class Layout:
    """sizes[] and offsets[] of the target's root: readers use offsets only."""

    def __init__(self, sizes, offs):
        self.sizes = sizes   # FT_S_COUNT entries
        self.offs = offs     # FT_F_COUNT entries (OFF_ABSENT when absent)

    def get(self, buf, name):
        """fget(): integer field (4 or 8 bytes) of a record; absent / out of range -> 0."""
        i = F[name]
        off, wd = self.offs[i], FIELD_WIDTH[i]
        if off == OFF_ABSENT or off + wd > len(buf) or wd not in (4, 8):
            return 0
        return int.from_bytes(buf[off:off + wd], "little")

    def get_bytes(self, buf, name):
        """fbytes(): byte-array field; absent / out of range -> zeros."""
        i = F[name]
        off, wd = self.offs[i], FIELD_WIDTH[i]
        if off == OFF_ABSENT or off + wd > len(buf):
            return bytes(wd)
        return bytes(buf[off:off + wd])


def root_load(rd, addr):
    """(0, Layout, root bytes) for a valid root at addr, else (negative code, None, None)."""
    h = rd.read_full(addr, ROOT_HEADER_SIZE)
    if h is None:
        return ROOT_EREAD, None, None
    if h[:16] != ROOT_MAGIC:
        return ROOT_EMAGIC, None, None
    (abi, word_size, endian, header_size, self_ptr, root_size, n_sizes, n_offsets,
     sizes_off, offsets_off) = struct.unpack_from("<IBBHQIIIII", h, 16)
    if self_ptr != addr:
        return ROOT_ESELF, None, None
    if abi != ABI_VERSION:
        return ROOT_EVERSION, None, None
    if word_size != 8 or endian != 1 or header_size != ROOT_HEADER_SIZE:
        return ROOT_ELAYOUT, None, None
    if root_size < ROOT_HEADER_SIZE or root_size > RW_ROOT_MAX:
        return ROOT_ELAYOUT, None, None
    if n_sizes < S_COUNT or n_sizes > 1024 or n_offsets == 0 or n_offsets > 4096:
        return ROOT_ELAYOUT, None, None
    if (sizes_off & 3) or (offsets_off & 1):
        return ROOT_ELAYOUT, None, None
    if (sizes_off + 4 * n_sizes > root_size or offsets_off + 2 * n_offsets > root_size
            or sizes_off < ROOT_HEADER_SIZE or offsets_off < ROOT_HEADER_SIZE):
        return ROOT_ELAYOUT, None, None
    buf = rd.read_full(addr, root_size)
    if buf is None or buf[:ROOT_HEADER_SIZE] != h:
        return ROOT_EREAD, None, None
    sizes = list(struct.unpack_from("<%dI" % S_COUNT, buf, sizes_off))
    n = min(n_offsets, F_COUNT)
    offs = list(struct.unpack_from("<%dH" % n, buf, offsets_off)) + [OFF_ABSENT] * (F_COUNT - n)
    if sizes[S_ROOT] != root_size:
        return ROOT_ELAYOUT, None, None
    if (not 64 <= sizes[S_THREAD] <= RW_STRUCT_MAX or not 8 <= sizes[S_MODULE] <= RW_STRUCT_MAX
            or not 8 <= sizes[S_GEN] <= RW_STRUCT_MAX or sizes[S_ENTRY_EXACT16] != 16
            or sizes[S_ENTRY_SAMPLED8] != 8):
        return ROOT_ELAYOUT, None, None
    for i in range(F_COUNT):
        if offs[i] == OFF_ABSENT:
            continue
        if offs[i] + FIELD_WIDTH[i] > sizes[field_struct(i)]:
            return ROOT_ELAYOUT, None, None
        if field_struct(i) == S_ROOT and offs[i] < ROOT_HEADER_SIZE:
            return ROOT_ELAYOUT, None, None
    for name in REQUIRED_FIELDS:
        if offs[F[name]] == OFF_ABSENT:
            return ROOT_ELAYOUT, None, None
    return 0, Layout(sizes, offs), buf


def root_check(rd, addr):
    """ft_root_check(): 0 if a valid root is at addr, else a negative ROOT_E* code."""
    return root_load(rd, addr)[0]


class Root:
    """A validated root read from the target."""

    def __init__(self, rd, addr):
        rc, L, buf = root_load(rd, addr)
        if rc:
            raise FtError("%s at 0x%x" % (ROOT_STRERROR.get(rc, "invalid root"), addr))
        self.addr = addr
        self.L = L
        self.buf = buf
        g = lambda name: L.get(buf, name)  # noqa: E731
        self.abi_version = ABI_VERSION
        self.pid = g("ROOT_PID")
        self.tsc_hz = g("ROOT_TSC_HZ")
        self.tsc_hz_source = g("ROOT_TSC_HZ_SOURCE")
        self.time_mode = g("ROOT_TIME_MODE")
        self.init_tsc = g("ROOT_INIT_TSC")
        self.cmdline = g("ROOT_CMDLINE")
        self.cmdline_len = g("ROOT_CMDLINE_LEN")
        self.threads = g("ROOT_THREADS")
        self.threads_cap = g("ROOT_THREADS_CAP")
        self.threads_used = g("ROOT_THREADS_USED")
        self.modules = g("ROOT_MODULES")
        self.modules_cap = g("ROOT_MODULES_CAP")
        self.modules_used = g("ROOT_MODULES_USED")
        self.module_epoch = g("ROOT_MODULE_EPOCH")
        self.gens = g("ROOT_GENS")
        self.gens_cap = g("ROOT_GENS_CAP")
        self.gen_current = g("ROOT_GEN_CURRENT")
        self.gen_ms = g("ROOT_GEN_MS")
        self.sample_k = g("ROOT_SAMPLE_K")
        self.flags = g("ROOT_FLAGS")
        # registry counters, appended to the ABI: RAW_UNKNOWN when absent
        def g_opt(name):
            return RAW_UNKNOWN if L.offs[F[name]] == OFF_ABSENT else g(name)
        self.threads_created = g_opt("ROOT_THREADS_CREATED")
        self.rings_evicted = g_opt("ROOT_RINGS_EVICTED")
        self.records_reused = g_opt("ROOT_RECORDS_REUSED")


# ===========================================================================
# Reading the tables (mirror of ft_raw_emit's pre-pass)
# ===========================================================================

class Problems:
    """Partial flag and the first problem met (ft_emit_stats.problem)."""

    def __init__(self):
        self.partial = False
        self.problem = ""

    def note(self, msg, partial=True):
        if partial:
            self.partial = True
        if not self.problem:
            self.problem = msg


def clamp_count(pr, used, cap, mx, what):
    if cap > mx:
        pr.note("%s table capacity is implausible: 0x%x" % (what, cap))
        cap = mx
    if used > cap:
        pr.note("%s table count exceeds its capacity: 0x%x" % (what, used))
        used = cap
    return used


class Tables:
    """Root-derived counts, clamped and checked as rawwrite.c does."""

    def __init__(self, rd, root, pr):
        L = root.L
        self.threads = root.threads
        self.modules = root.modules
        self.gens = root.gens
        self.threads_used = clamp_count(pr, root.threads_used, root.threads_cap, RW_MAX_THREADS,
                                        "thread")
        self.modules_used = clamp_count(pr, root.modules_used, root.modules_cap, RW_MAX_MODULES,
                                        "module")
        gcap = root.gens_cap
        if gcap > GEN_SLOTS:
            pr.note("generation table capacity is implausible: 0x%x" % gcap)
            gcap = GEN_SLOTS
        self.gens_cap = gcap if self.gens else 0
        if not self.modules:
            self.modules_used = 0
        if self.threads_used and self.threads + self.threads_used * L.sizes[S_THREAD] > U64:
            pr.note("thread registry address is invalid: 0x%x" % self.threads)
            self.threads_used = 0
        if self.modules_used and self.modules + self.modules_used * L.sizes[S_MODULE] > U64:
            pr.note("module table address is invalid: 0x%x" % self.modules)
            self.modules_used = 0
        if self.gens_cap and self.gens + self.gens_cap * L.sizes[S_GEN] > U64:
            pr.partial = True
            self.gens_cap = 0


def _records(rd, base, count, size):
    """[(index, bytes or None)] of count records of size bytes at base."""
    if count == 0:
        return []
    blk = rd.read_block(base, count * size)
    out = []
    for i in range(count):
        out.append((i, blk.data[i * size:(i + 1) * size] if blk.ok(i * size, size) else None))
    return out


class ThreadRec:
    __slots__ = ("index", "addr", "buf", "pos", "mask", "ring", "ring_size", "tid", "state",
                 "fmt", "flags", "start_tsc", "exit_tsc", "seq", "name", "gen_pos")


def state_emitted(s):
    return s in (THR_ALIVE, THR_EXITED, THR_EVICTED, THR_IGNORED)


def has_ring(s):
    return s in (THR_ALIVE, THR_EXITED)


def read_threads(rd, root, tb, pr):
    """Emitted registry records (registry order) and the number lost."""
    L = root.L
    size = L.sizes[S_THREAD]
    out = []
    lost = 0
    for i, buf in _records(rd, tb.threads, tb.threads_used, size):
        addr = tb.threads + i * size
        if buf is None:
            lost += 1
            pr.note("thread record not readable at 0x%x" % addr)
            continue
        s = L.get(buf, "THR_STATE")
        if s == THR_FREE:
            continue
        if not state_emitted(s):
            lost += 1
            pr.note("thread record with invalid state at 0x%x" % addr)
            continue
        t = ThreadRec()
        t.index = i
        t.addr = addr
        t.buf = buf
        t.state = s
        t.pos = L.get(buf, "THR_POS")
        t.mask = L.get(buf, "THR_MASK")
        t.ring = L.get(buf, "THR_RING")
        t.ring_size = L.get(buf, "THR_RING_SIZE")
        t.tid = L.get(buf, "THR_TID")
        t.fmt = L.get(buf, "THR_FMT")
        t.flags = L.get(buf, "THR_FLAGS")
        t.start_tsc = L.get(buf, "THR_START_TSC")
        t.exit_tsc = L.get(buf, "THR_EXIT_TSC")
        t.seq = L.get(buf, "THR_SEQ")
        t.name = L.get_bytes(buf, "THR_NAME")
        go = L.offs[F["THR_GEN_POS"]]
        if go != OFF_ABSENT and go + 16 * GEN_SLOTS <= size:
            v = struct.unpack_from("<%dQ" % (2 * GEN_SLOTS), buf, go)
            t.gen_pos = [(v[2 * k], v[2 * k + 1]) for k in range(GEN_SLOTS)]
        else:
            t.gen_pos = [(GEN_NONE, 0)] * GEN_SLOTS
        out.append(t)
    if lost:
        pr.partial = True
    return out, lost


def mod_pack(L, b):
    """The module record b re-encoded in the current struct ft_module layout."""
    nseg = min(L.get(b, "MOD_NSEG"), MOD_SEGS)
    seg = L.get_bytes(b, "MOD_SEG")[:16 * nseg].ljust(16 * MOD_SEGS, b"\0")
    bid_len = min(L.get(b, "MOD_BUILD_ID_LEN"), BUILD_ID_MAX)
    bid = L.get_bytes(b, "MOD_BUILD_ID")[:bid_len].ljust(BUILD_ID_MAX, b"\0")
    path = L.get_bytes(b, "MOD_PATH")[:-1].split(b"\0")[0].ljust(320, b"\0")
    rec = struct.pack("<QQQQQII", L.get(b, "MOD_BIAS"), L.get(b, "MOD_GEN_LOADED"),
                      L.get(b, "MOD_GEN_UNLOADED"), L.get(b, "MOD_EPOCH_LOADED"),
                      L.get(b, "MOD_EPOCH_UNLOADED"), L.get(b, "MOD_STATE"), nseg)
    rec += seg + struct.pack("<I", bid_len) + bid + b"\0" * 4 + b"\0" * 16 + path
    assert len(rec) == CUR_SIZES[S_MODULE]
    return rec


def read_modules(rd, root, tb, pr):
    """MODULES payload records: readable records with state loaded/unloaded."""
    L = root.L
    size = L.sizes[S_MODULE]
    out = []
    lost = False
    for _i, b in _records(rd, tb.modules, tb.modules_used, size):
        if b is None:
            lost = True
            continue
        if L.get(b, "MOD_STATE") in (1, 2):
            out.append(mod_pack(L, b))
    if lost:
        pr.note("module table not readable at 0x%x" % tb.modules)
    return out


def read_gens(rd, root, tb, pr):
    """GENERATN payload records: readable valid records, ascending gen (stable)."""
    L = root.L
    size = L.sizes[S_GEN]
    gens = []
    lost = False
    for _i, b in _records(rd, tb.gens, tb.gens_cap, size):
        if b is None:
            lost = True
            continue
        if not (L.get(b, "GEN_FLAGS") & GENF_VALID):
            continue
        vals = [L.get(b, n) for n in GEN_FIELDS]
        gens.append((vals[0], struct.pack("<8Q", *vals)))
    if lost:
        pr.note("generation table not readable at 0x%x" % tb.gens)
    gens.sort(key=lambda x: x[0])
    return [g for _k, g in gens]


def gen_dict(b):
    v = struct.unpack("<8Q", b)
    return dict(zip(["gen", "flags", "start_tsc", "clk_tsc", "clk_mono_ns", "clk_real_ns",
                     "tsc_hz", "module_epoch"], v))


def read_cmdline(rd, root, pr):
    """CMD LINE payload: readable prefix, NULs -> ' ', trailing NULs cut."""
    addr, n = root.cmdline, min(root.cmdline_len, RW_CMDLINE_MAX)
    if not addr:
        n = 0
    b = rd.read(addr, n) if n else b""
    if len(b) < n:
        pr.note("command line not readable at 0x%x" % addr)
    return b.rstrip(b"\0").replace(b"\0", b" ")


# ===========================================================================
# Ring linearization (mirror of rawwrite_ring.c ring_geometry/ring_plan/ring_stream,
# FORMAT.md 2.3).  gdb only reads stopped processes and cores, so this is the
# non-live path (live_k = 0) and no time filter (min_tsc = 0).
# ===========================================================================

class Ring:
    """A planned ring: THRDSTAT results and the TRACE* payload."""
    __slots__ = ("tsf", "ok", "pos_off", "first_off", "n_entries", "n_dropped", "esz", "parts",
                 "pages", "missing_pages")

    def __init__(self):
        self.tsf = 0
        self.ok = False
        self.pos_off = 0
        self.first_off = 0
        self.n_entries = 0
        self.n_dropped = 0
        self.esz = 0
        self.parts = []         # the TRACE* payload: buffers, oldest first
        self.pages = 0
        self.missing_pages = 0


def ring_geometry(ring, size, fmt, pos, r):
    """Returns True if the ring can be read; sets r.esz, r.pos_off, r.tsf."""
    r.esz = 16 if fmt == FMT_EXACT16 else 8 if fmt == FMT_SAMPLED8 else 0
    r.pos_off = (pos - ring) & U64
    if ring == 0 or size == 0:
        r.tsf |= TSF_RING_MISSING
        return False
    esz = r.esz
    if (esz == 0 or size & (size - 1) or size < 2 * esz or size > RW_MAX_RING or ring % size
            or ring + size > U64 or r.pos_off >= size or r.pos_off % esz):
        r.tsf |= TSF_BAD_POS
        return False
    return True


def _word_bytes(q, stride, i0, i1):
    """The first words of slots [i0, i1) as contiguous bytes (q: the ring as u64s)."""
    if i1 <= i0:
        return b""
    return q[i0 * stride:i1 * stride:stride].tobytes()


def _first_written(q, stride, i0, i1):
    """Index (relative to i0) of the first slot in [i0, i1) with a non-zero word, or None."""
    if i1 <= i0:
        return None
    if q[i0 * stride]:
        return 0    # the common case (full or wrapped ring): no copy
    return _first_nonzero_word(_word_bytes(q, stride, i0, i1))


def _first_nonzero_word(wb):
    """Index of the first non-zero u64 in wb, or None."""
    rest = wb.lstrip(b"\0")
    if not rest:
        return None
    return (len(wb) - len(rest)) // 8


def ring_plan(blk, r):
    """Plan and linearize a ring read into blk (a Block of the whole ring).

    Missing pages read as zeros, so rawwrite_ring.c's "readable and word != 0" is
    "word != 0" here; only the count and the copy skip missing pages."""
    mv = memoryview(blk.data)
    size = len(mv)
    esz = r.esz
    exact = esz == 16
    stride = esz // 8
    n = size // esz
    p = r.pos_off // esz
    q = mv.cast("Q")
    r.pages, r.missing_pages = blk.npages, blk.nmiss
    if r.missing_pages == r.pages:
        r.tsf |= TSF_RING_MISSING
    elif r.missing_pages:
        r.tsf |= TSF_RING_PARTIAL
    # slot at pos (A) and the slot before it (N, newest committed)
    a_w = q[p * stride]
    a_t = q[p * stride + 1] if exact else 0
    nn = (p + n - 1) % n
    n_ok = q[nn * stride] != 0
    n_t = q[nn * stride + 1] if exact and n_ok else 0
    # F: a written slot after pos, to the end of the ring (sampled: past the
    # word the writer may have in flight after pos)
    F_ = _first_written(q, stride, p + 1 + (0 if exact else 1), n) is not None
    if exact:
        wrapped = F_ or bool(a_w and a_t and n_ok and a_t <= n_t)
    else:
        wrapped = F_ or bool(a_w and p + 2 >= n)
    if wrapped:
        r.tsf |= TSF_WRAPPED
    has_unc = False
    if a_w:
        if exact and a_t and (not n_ok or a_t > n_t):
            has_unc = True
        elif not wrapped:
            if exact:
                r.tsf |= TSF_TORN
            r.n_dropped += 1
    # the walk: wrapped -> p+1 .. p-1, else 0 .. p-1, as up to two runs [a, b)
    if wrapped:
        start, ln = (p + 1) % n, n - 1
    else:
        start, ln = 0, p
    runs = [(start, min(n, start + ln))]
    if start + ln > n:
        runs.append((0, start + ln - n))
    # skip leading never-written (or missing) slots
    while runs:
        a, b = runs[0]
        k = _first_written(q, stride, a, b)
        if k is None:
            runs.pop(0)
            continue
        runs[0] = (a + k, b)
        break
    r.first_off = runs[0][0] * esz if runs else r.pos_off
    # the entries: readable slots of the range (slots never straddle pages)
    parts = []
    cnt = 0
    for a, b in runs:
        if not blk.miss:
            parts.append(mv[a * esz:b * esz])
            cnt += b - a
            continue
        s_ = a
        while s_ < b:
            pg = (blk.addr + s_ * esz) // PAGE
            e = min(b, max(s_ + 1, ((pg + 1) * PAGE - blk.addr) // esz))
            if pg not in blk.miss:
                parts.append(mv[s_ * esz:e * esz])
                cnt += e - s_
            s_ = e
    if has_unc:
        r.tsf |= TSF_UNCOMMITTED
        if cnt == 0:
            r.first_off = r.pos_off
        parts.append(mv[p * esz:p * esz + 16])
        cnt += 1
    r.n_entries = cnt
    r.parts = parts


def plan_thread(rd, t):
    """The Ring of a thread record (ring read and planned if it has one)."""
    r = Ring()
    r.pos_off = (t.pos - t.ring) & U64
    if has_ring(t.state):
        r.ok = ring_geometry(t.ring, t.ring_size, t.fmt, t.pos, r)
        if r.ok:
            ring_plan(rd.read_block(t.ring, t.ring_size), r)
    if not r.ok:
        r.first_off = r.pos_off
        r.n_entries = 0
        r.n_dropped = 0
        r.parts = []
    return r


def thread_stat(t, r):
    """THRDSTAT payload."""
    gp = []
    for gen, pos in t.gen_pos:
        if gen == GEN_NONE:
            gp += [gen, pos]
        elif t.ring and t.ring_size and ((pos - t.ring) & U64) < t.ring_size:
            gp += [gen, (pos - t.ring) & U64]
        else:
            gp += [gen, RW_UNKNOWN_OFF]
    flags = ((t.flags & 0xFFFF) << 16) | r.tsf
    return struct.pack(RAW_THREAD_FMT, t.tid, t.state, t.fmt, flags, t.ring, t.ring_size,
                       r.pos_off, r.first_off, r.n_entries, r.n_dropped, t.start_tsc,
                       t.exit_tsc, t.seq, 0) + struct.pack("<%dQ" % (2 * GEN_SLOTS), *gp)


def ring_problem(pr, t, r):
    """Pre-pass problems of a thread's ring (thread_prepass)."""
    if not has_ring(t.state):
        return
    if not r.ok:
        if r.tsf & TSF_BAD_POS:
            pr.note("thread %d has an invalid ring or write position; ring at 0x%x"
                    % (t.tid, t.ring))
        else:
            pr.note("thread %d has no ring" % t.tid)
    elif r.missing_pages:
        pr.note("ring of thread %d is %smissing from the source, at 0x%x" % (
            t.tid, "" if r.missing_pages == r.pages else "partly ", t.ring))


# ===========================================================================
# Raw writer (mirror of ft_raw_emit)
# ===========================================================================

class Stats:
    """struct ft_emit_stats."""

    def __init__(self):
        self.abi_version = 0
        self.header_flags = 0
        self.nthreads = 0
        self.nthreads_lost = 0
        self.nrings_missing = 0
        self.ngens = 0
        self.nmodules = 0
        self.nevents = 0
        self.bytes = 0
        self.problem = ""


class Writer:
    def __init__(self, f, stats):
        self.f = f
        self.stats = stats

    def chunk(self, magic, *parts):
        n = sum(len(p) for p in parts)
        self.f.write(magic + struct.pack("<Q", n))
        for p in parts:
            if p:
                self.f.write(p)
        self.stats.bytes += 16 + n


class SourceInfo:
    """struct ft_source_info (the non-live subset)."""

    def __init__(self):
        self.source = SRC_LIVE
        self.pid = 0
        self.crash = None       # (signo, code, errno, tid, addr, sender_pid) or None
        self.mappings = b""     # MAPPINGS payload
        self.taken_tsc = 0
        self.extra_flags = 0


class TraceData:
    """Everything ft_raw_emit reads, read once (also used by the display commands)."""

    def __init__(self, rd, root):
        self.pr = pr = Problems()
        self.root = root
        self.tb = tb = Tables(rd, root, pr)
        self.cmdline = read_cmdline(rd, root, pr)
        self.modules = read_modules(rd, root, tb, pr)
        self.gens = read_gens(rd, root, tb, pr)
        self.threads, self.lost = read_threads(rd, root, tb, pr)
        self.rings = []
        for t in self.threads:
            r = plan_thread(rd, t)
            ring_problem(pr, t, r)
            if r.tsf & (TSF_RING_MISSING | TSF_RING_PARTIAL | TSF_BAD_POS) and has_ring(t.state):
                pr.partial = True
            self.rings.append(r)


def raw_emit(rd, root, si, w, stats, td=None):
    """FUNTRACE .. per-thread chunks (no FINSTACK, no ENDTRACE); returns the TraceData."""
    if td is None:
        td = TraceData(rd, root)
    pr = td.pr
    stats.abi_version = ABI_VERSION
    pid = si.pid or root.pid
    flags = si.extra_flags | (RAWF_PARTIAL if pr.partial else 0)
    stats.header_flags = flags
    stats.nthreads_lost = td.lost
    w.chunk(CH_FUNTRACE, struct.pack("<Q", root.tsc_hz))
    w.chunk(CH_HEADER, struct.pack(
        RAW_HEADER_FMT, RAW_VERSION, ABI_VERSION, si.source, flags, pid, root.tsc_hz,
        root.tsc_hz_source, root.time_mode, root.gen_current, root.gen_ms, root.module_epoch,
        root.addr, si.taken_tsc, 0, len(td.threads), td.lost,
        root.threads_created, root.rings_evicted, root.records_reused, 0))
    w.chunk(CH_CMDLINE, td.cmdline)
    if si.crash is not None:
        w.chunk(CH_SIGINFO, struct.pack(RAW_CRASH_FMT, *si.crash, 0))
    w.chunk(CH_MAPPINGS, si.mappings)
    w.chunk(CH_PROCMAPS, procmaps_text(si.mappings))
    w.chunk(CH_MODULES, *td.modules)
    stats.nmodules = len(td.modules)
    w.chunk(CH_GENS, *td.gens)
    stats.ngens = len(td.gens)
    for t, r in zip(td.threads, td.rings):
        w.chunk(CH_THREADID, struct.pack("<QQ", pid, t.tid) + t.name)
        w.chunk(CH_THREADSTAT, thread_stat(t, r))
        w.chunk(CH_TRACEW08 if t.fmt == FMT_SAMPLED8 else CH_TRACEBUF, *(r.parts if r.ok else ()))
        stats.nthreads += 1
        stats.nevents += r.n_entries if r.ok else 0
        if r.tsf & TSF_RING_MISSING and has_ring(t.state):
            stats.nrings_missing += 1
    stats.problem = pr.problem
    return td


# ===========================================================================
# The source: core file or live process, as gdb sees it
# ===========================================================================

def _info_target():
    try:
        return gdb.execute("info target", to_string=True)
    except gdb.error:
        return ""


class Source:
    """The inferior being inspected: kind, pid, core file, reader, root."""

    def __init__(self):
        inf = gdb.selected_inferior()
        if inf is None or not inf.is_valid():
            raise FtError("no inferior")
        self.inf = inf
        self.rd = Reader(inf)
        self.core = None
        kind = None
        try:
            conn = inf.connection
            kind = conn.type if conn is not None else None
        except (AttributeError, gdb.error):
            kind = None
        if kind is None and inf.pid == 0:
            raise FtError("no process or core file (start the program, attach with -p, or load a core)")
        if kind == "core":
            m = re.search(r"Local core dump file:\s*`(.*)', file type", _info_target())
            if not m:
                raise FtError("cannot find the core file name in 'info target'")
            self.core = CoreFile(m.group(1))
            self.rd = Reader(inf, self.core.held_ranges())
            self.kind = SRC_CORE
        else:
            if inf.pid == 0 or not inf.threads():
                raise FtError("the program is not running (start it, attach with -p, or load a core)")
            self.kind = SRC_LIVE
        self.pid = inf.pid
        self.by_scan = False
        self.root_addr = None
        self.root_problem = None
        self.root_rc = 0

    # ---- the root ------------------------------------------------------------
    def _symbol_addr(self):
        for expr in ("(unsigned long)&'%s'" % ROOT_SYMBOL,):
            try:
                return int(gdb.parse_and_eval(expr)) & ((1 << 64) - 1)
            except gdb.error:
                pass
        return None

    def writable_ranges(self):
        if self.core is not None:
            return self.core.writable_ranges()
        out = []
        try:
            with open("/proc/%d/maps" % self.pid) as f:
                for line in f:
                    parts = line.split(None, 5)
                    if (len(parts) < 2 or parts[1][:2] != "rw"
                            or (len(parts) > 5 and parts[5].strip() in ("[vvar]", "[vsyscall]"))):
                        continue
                    s, e = parts[0].split("-")
                    out.append((int(s, 16), int(e, 16)))
        except OSError:
            pass
        return out

    def _scan(self):
        block = 16 << 20
        for start, end in self.writable_ranges():
            a = start
            while a < end:
                n = min(block + 64, end - a)
                data = self.rd.read(a, n)
                i = data.find(ROOT_MAGIC)
                while i >= 0:
                    if (a + i) % 8 == 0 and root_check(self.rd, a + i) == 0:
                        return a + i
                    i = data.find(ROOT_MAGIC, i + 1)
                if len(data) < n:
                    # skip the unreadable page
                    a = (a + len(data) + PAGE) & ~(PAGE - 1)
                else:
                    a += block
        return None

    def root(self):
        """The validated Root; raises FtError with one line if there is none."""
        addr = self._symbol_addr()
        if addr is not None:
            rc = root_check(self.rd, addr)
            if rc == 0:
                self.root_addr = addr
                return Root(self.rd, addr)
            self.root_problem = "symbol %s at 0x%x: %s" % (ROOT_SYMBOL, addr,
                                                            ROOT_STRERROR.get(rc, "invalid root"))
            self.root_rc = rc
        addr = self._scan()
        if addr is not None:
            self.by_scan = True
            self.root_addr = addr
            return Root(self.rd, addr)
        if self.root_problem:
            if self.root_rc == ROOT_EMAGIC:
                raise FtError("funtrace runtime not initialized in this process (%s)" % self.root_problem)
            raise FtError("no valid funtrace root (%s)" % self.root_problem)
        raise FtError("no funtrace runtime in this process")

    # ---- what the root does not say ---------------------------------------------
    def crash(self):
        """(signo, code, errno, tid, addr, sender_pid) or None."""
        if self.core is not None:
            # core_crash(): NT_SIGINFO, else the first thread's pr_cursig
            core = self.core
            tid = core.tids[0] if core.tids else 0
            si = core.siginfo
            if si is not None and len(si) >= 24:
                signo, errno_, code = struct.unpack_from("<iii", si, 0)
                if signo <= 0:
                    return None
                return crash_tuple(signo, code, errno_, tid, si)
            if core.tids and core.prstatus_sig.get(tid, 0) > 0:
                return (core.prstatus_sig[tid], 0, 0, tid, 0, 0)
            return None
        return self._live_crash()

    def _live_crash(self):
        sel = gdb.selected_thread()
        threads = sorted(self.inf.threads(), key=lambda t: t.num)
        if sel is not None:
            threads = [sel] + [t for t in threads if t != sel]
        found = None
        try:
            for thr in threads:
                if not thr.is_valid():
                    continue
                thr.switch()
                try:
                    v = gdb.parse_and_eval("$_siginfo")
                    signo = int(v["si_signo"])
                except (gdb.error, RuntimeError):
                    continue
                if signo in (0, 5, 19, 2):  # gdb's own stops: SIGTRAP SIGSTOP SIGINT
                    continue
                code = int(v["si_code"])
                errno_ = int(v["si_errno"])
                addr = sender = 0
                try:
                    if signo in FAULT_SIGNALS and code > 0:
                        addr = int(v["_sifields"]["_sigfault"]["si_addr"]) & ((1 << 64) - 1)
                    if code <= 0:
                        sender = int(v["_sifields"]["_kill"]["si_pid"]) & 0xFFFFFFFF
                except gdb.error:
                    pass
                found = (signo, code, errno_, thr.ptid[1], addr, sender)
                break
        finally:
            if sel is not None and sel.is_valid():
                sel.switch()
        return found

    def crashed_tid(self):
        c = self.crash()
        return c[3] if c else None

    def mappings(self):
        """MAPPINGS payload: the file mappings (cores: NT_FILE order; live:
        /proc/PID/maps order, paths starting with '/')."""
        recs = []
        if self.core is not None:
            for start, end, offset, path in self.core.files:
                if not path:
                    continue
                bid = mapping_build_id(self.rd, start, offset, path)
                recs.append(mapping_record(start, end, offset, self.core.prot_at(start), bid, path))
            return b"".join(recs)
        try:
            with open("/proc/%d/maps" % self.pid, "rb") as f:
                lines = f.read().splitlines()
        except OSError:
            return b""
        for line in lines:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith(b"/"):
                continue
            path = parts[5]
            s_, e_ = parts[0].split(b"-")
            start, end = int(s_, 16), int(e_, 16)
            perms = parts[1]
            prot = ((MAPF_R if perms[0:1] == b"r" else 0) | (MAPF_W if perms[1:2] == b"w" else 0)
                    | (MAPF_X if perms[2:3] == b"x" else 0))
            offset = int(parts[2], 16)
            bid = mapping_build_id(self.rd, start, offset, path)
            recs.append(mapping_record(start, end, offset, prot, bid, path))
        return b"".join(recs)

    def thread_order(self):
        """gdb threads in source order (cores: NT_PRSTATUS order)."""
        threads = [t for t in self.inf.threads() if t.is_valid()]
        if self.core is not None and self.core.tids:
            rank = {tid: i for i, tid in enumerate(self.core.tids)}
            threads.sort(key=lambda t: rank.get(t.ptid[1], len(rank) + t.num))
        else:
            threads.sort(key=lambda t: t.num)
        return threads


def crash_tuple(signo, code, errno_, tid, si):
    addr = sender = 0
    if code > 0 and signo in FAULT_SIGNALS:
        addr, = struct.unpack_from("<Q", si, 16)      # si_addr
    elif code <= 0:
        sender, = struct.unpack_from("<I", si, 16)    # si_pid
    return (signo, code, errno_, tid, addr, sender)


def estimate_now_tsc(root, gens):
    """TSC now, from the newest generation's clock snapshot and CLOCK_MONOTONIC."""
    if not gens:
        return 0
    g = gen_dict(gens[-1]) if isinstance(gens[-1], bytes) else gens[-1]
    hz = g["tsc_hz"] or root.tsc_hz
    if not hz or not g["clk_tsc"]:
        return 0
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return g["clk_tsc"] + (now - g["clk_mono_ns"]) * hz // 1000000000


# ===========================================================================
# Stacks (FINSTACK, unwound by gdb)
# ===========================================================================

def _reg(frame, name):
    try:
        return int(frame.read_register(name)) & ((1 << 64) - 1)
    except (gdb.error, ValueError, RuntimeError):
        return 0


def _unwind(f):
    """pcs (innermost first, physical frames only) and FT_STKF_TRUNCATED or 0."""
    pcs = []
    while True:
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            if len(pcs) >= STACK_MAX_FRAMES:
                return pcs, STKF_TRUNCATED
            try:
                pc = f.pc() & U64
            except gdb.error:
                return pcs, STKF_TRUNCATED
            if pc == 0 and pcs:
                return pcs, 0       # gdb's "0x0 in ??" past the outermost frame
            pcs.append(pc)
        try:
            older = f.older()
        except gdb.error:
            return pcs, STKF_TRUNCATED
        if older is None:
            try:
                why = f.unwind_stop_reason()
            except gdb.error:
                return pcs, 0
            ok = why in (gdb.FRAME_UNWIND_NO_REASON, gdb.FRAME_UNWIND_OUTERMOST)
            return pcs, 0 if ok else STKF_TRUNCATED
        f = older


def stack_chunks(src, crashed_tid):
    """FINSTACK payloads, one per thread of the source, unwound by gdb (past
    main, like libunwind), in source order."""
    out = []
    sel = gdb.selected_thread()
    try:
        sel_frame = gdb.selected_frame()
    except gdb.error:
        sel_frame = None
    try:
        past_main = gdb.parameter("backtrace past-main")
    except (gdb.error, RuntimeError):
        past_main = None
    try:
        if past_main is False:
            gdb.execute("set backtrace past-main on", to_string=True)
        for thr in src.thread_order():
            thr.switch()
            tid = thr.ptid[1]
            try:
                f = gdb.newest_frame()
            except gdb.error:
                continue
            regs = [_reg(f, n) for n in REG_NAMES]
            pcs, flags = _unwind(f)
            if tid == crashed_tid:
                flags |= STKF_CRASHED
            payload = struct.pack(RAW_STACK_FMT, tid, UNW_GDB, len(pcs), flags, *regs, 0)
            out.append(payload + struct.pack("<%dQ" % len(pcs), *pcs))
    finally:
        if past_main is False:
            gdb.execute("set backtrace past-main off", to_string=True)
        if sel is not None and sel.is_valid():
            sel.switch()
            if sel_frame is not None:
                try:
                    sel_frame.select()
                except gdb.error:
                    pass
    return out


# ===========================================================================
# funtrace save
# ===========================================================================

def save(path):
    src = Source()
    root = src.root()
    si = SourceInfo()
    si.source = src.kind
    si.pid = 0
    si.crash = src.crash()
    si.mappings = src.mappings()
    si.extra_flags = RAWF_ROOT_BY_SCAN if src.by_scan else 0
    td = TraceData(src.rd, root)
    if src.kind == SRC_LIVE:
        si.taken_tsc = estimate_now_tsc(root, td.gens)
    stats = Stats()
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            w = Writer(f, stats)
            raw_emit(src.rd, root, si, w, stats, td)
            for payload in stack_chunks(src, si.crash[3] if si.crash else None):
                w.chunk(CH_STACK, payload)
            w.chunk(CH_END)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise FtError("cannot write %s: %s" % (path, e.strerror or e))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return src, root, si, stats


def cmd_save(arg):
    args = gdb.string_to_argv(arg)
    if len(args) > 1:
        raise FtError("usage: funtrace save [FILE]")
    path = os.path.expanduser(args[0]) if args else "funtrace.raw"
    src, root, si, st = save(path)
    what = "core %s" % src.core.path if src.core else "live process"
    print("funtrace: wrote %s: %d thread%s, %d event%s, %d generation%s, %d bytes"
          % (path, st.nthreads, "" if st.nthreads == 1 else "s", st.nevents,
             "" if st.nevents == 1 else "s", st.ngens, "" if st.ngens == 1 else "s", st.bytes))
    print("funtrace: from %s, pid %d, root 0x%x%s" % (what, si.pid or root.pid, root.addr,
                                                      " (found by scanning memory)" if src.by_scan else ""))
    if si.crash:
        signo, code, _e, tid, addr, sender = si.crash
        extra = " at 0x%x" % addr if signo in FAULT_SIGNALS and code > 0 else ""
        if code <= 0 and sender:
            extra = " sent by pid %d" % sender
        print("funtrace: thread %d got %s%s" % (tid, signame(signo), extra))
    if st.header_flags & RAWF_PARTIAL:
        print("funtrace: warning: trace is partial: %s" % (st.problem or "some data unreadable"))


# ===========================================================================
# Reading the trace for display (tail / threads / generations)
# ===========================================================================

_TIME_TAG_TABLE = bytes(1 if (b & 0xE0) == 0xE0 else 0 for b in range(256))


class ThreadView:
    """One thread's linearized ring, for display; vectorized where it matters
    (rings may hold millions of entries)."""

    def __init__(self, t, r, ref_tsc):
        self.t = t
        self.r = r
        self.esz = r.esz or 16
        self.ref = ref_tsc
        self.data = b"".join(r.parts)
        self.n = len(self.data) // self.esz
        self.q = memoryview(self.data).cast("Q") if self.n else None
        self.exact = self.esz == 16
        self._times = None

    def full_tsc(self, low):
        """A time word's low 61 TSC bits, with the high bits of the reference."""
        tsc = (self.ref & ~TIME_WORD_TSC_MASK) | low
        if tsc + (1 << 60) < self.ref:
            tsc += 1 << 61
        return tsc

    def _time_flags(self):
        """bytes: 1 for each time word of a sampled ring, else 0."""
        return self.data[7::8].translate(_TIME_TAG_TABLE)

    def times(self):
        """Sampled rings: [(word index, tsc)] of the time words."""
        if self._times is None:
            out = []
            flags = self._time_flags()
            i = flags.find(1)
            while i >= 0:
                out.append((i, self.full_tsc(self.q[i] & TIME_WORD_TSC_MASK)))
                i = flags.find(1, i + 1)
            self._times = out
        return self._times

    def n_events(self):
        if not self.n:
            return 0
        if self.exact:
            return self.n
        return self.n - self._time_flags().count(1)

    def span(self):
        """(oldest tsc, newest tsc) of the events held, or (None, None)."""
        if not self.n:
            return None, None
        if self.exact:
            return self.q[1], self.q[2 * self.n - 1]
        tm = self.times()
        return (tm[0][1], tm[-1][1]) if tm else (None, None)

    def count_between(self, t0, t1):
        """Events with a time in [t0, t1) (t1 None: open-ended)."""
        if not self.n:
            return 0
        if self.exact:
            col = self.q[1::2]
            i0 = bisect.bisect_left(col, t0)
            i1 = bisect.bisect_left(col, t1) if t1 is not None else self.n
            return max(0, i1 - i0)
        tm = self.times()
        tscs = [x for _i, x in tm]
        k0 = bisect.bisect_left(tscs, t0)
        k1 = bisect.bisect_left(tscs, t1) if t1 is not None else len(tm)
        w0 = tm[k0][0] if k0 < len(tm) else self.n
        w1 = tm[k1][0] if k1 < len(tm) else self.n
        if w1 <= w0:
            return 0
        return (w1 - w0) - self.data[7 + 8 * w0:8 * w1:8].translate(_TIME_TAG_TABLE).count(1)

    def _codes(self):
        """bytes, one per entry/word: 1 call, 255 return, 2 catch, 0 time word."""
        return self.data[7::self.esz].translate(_CODE_EXACT if self.exact else _CODE_SAMPLED)

    def _event(self, i):
        """(word, tsc or None) of entry/word i (sampled: the last time word before it)."""
        if self.exact:
            return (self.q[2 * i], self.q[2 * i + 1])
        flags = self._time_flags()
        tp = flags.rfind(1, 0, i)
        if tp < 0:
            return (self.q[i], None)
        ta = self.full_tsc(self.q[tp] & TIME_WORD_TSC_MASK)
        tn = flags.find(1, i)
        if tp == i - 1 or tn < 0:
            return (self.q[i], ta)
        # interpolated as _events_from does: between the events the two time words stamp
        tb = self.full_tsc(self.q[tn] & TIME_WORD_TSC_MASK)
        return (self.q[i], ta + (tb - ta) * (i - tp - 1) // (tn - tp - 1))

    def _events_from(self, i0):
        if not self.n:
            return []
        if self.exact:
            col = self.q[2 * i0:2 * self.n]
            return list(zip(col[0::2], col[1::2]))
        out = []
        pending = None
        for wd in self.q[i0:self.n]:
            if (wd >> 61) == 7:
                pending = self.full_tsc(wd & TIME_WORD_TSC_MASK)
            elif wd:
                out.append((wd, pending))
                pending = None
        _interpolate(out)
        return out

    def tail_events(self, ncalls):
        """Events to replay to show the last ncalls calls: the calls still
        open where they start (found by depth arithmetic, without replaying
        the whole ring), then every event from the ncalls-th last call on."""
        if not self.n:
            return []
        codes = self._codes()
        w0 = self.n
        for _ in range(ncalls):
            i = codes.rfind(b"\x01", 0, w0)
            if i < 0:
                break
            w0 = i
        if not self.exact and w0 < self.n:
            t = self._time_flags().rfind(1, 0, w0 + 1)   # start at a time word
            w0 = max(t, 0)
        if w0 == 0:
            return self._events_from(0)
        if b"\x02" in codes[:w0]:
            # a catch unwinds an unknown number of frames: replay everything
            return self._events_from(0)
        deltas = array.array("b")
        deltas.frombytes(codes[:w0].translate(_CODE_DELTA))
        d = list(itertools.accumulate(deltas))          # depth after each entry
        suf = list(itertools.accumulate(reversed(d), min))
        suf.reverse()                                    # suf[i] = min(d[i:w0])
        opened = []
        for v in range(suf[0], suf[-1] + 1):
            i = bisect.bisect_left(suf, v)
            if i < w0 and codes[i] == 1 and d[i] == v:
                opened.append(self._event(i))
        return opened + self._events_from(w0)


def _code_table(sampled):
    t = bytearray(256)
    for b in range(256):
        if sampled and b >> 5 == 7:
            t[b] = 0        # time word
        elif b >> 6 == 3:
            t[b] = 2        # catch
        elif b >> 6:
            t[b] = 255      # return (bit 63, or bit 62: return with the caller's address)
        else:
            t[b] = 1        # call
    return bytes(t)


_CODE_EXACT = _code_table(False)
_CODE_SAMPLED = _code_table(True)
_CODE_DELTA = bytes([0, 1, 0] + [0] * 252 + [255])   # as signed bytes: call +1, return -1


class Trace:
    """Everything the display commands need, read once."""

    def __init__(self):
        self.src = Source()
        self.root = root = self.src.root()
        self.td = td = TraceData(self.src.rd, root)
        self.threads = td.threads
        self.lost = td.lost
        self.gens = [gen_dict(b) for b in td.gens]
        ref = self.gens[-1]["clk_tsc"] if self.gens else root.init_tsc
        self.views = {t.index: ThreadView(t, r, ref) for t, r in zip(td.threads, td.rings)}
        # the newest generation's refined frequency, as the decoder converts the
        # last generation (root.tsc_hz is the start-up estimate)
        self.hz = (self.gens[-1]["tsc_hz"] if self.gens else 0) or root.tsc_hz
        self.crashed = self.src.crashed_tid()

    def last_tsc(self):
        """The newest event time of the whole trace."""
        return max([v.span()[1] or 0 for v in self.views.values()] or [0])

    def ordered_threads(self):
        ts = list(self.threads)
        ts.sort(key=lambda t: (t.tid != self.crashed, t.index))
        return ts

    def fmt_dt(self, tsc, ref):
        if not tsc or not self.hz:
            return "?"
        return fmt_seconds((tsc - ref) / self.hz)


def _interpolate(evs):
    """Fill missing times of sampled events linearly between known ones."""
    known = [i for i, (_w, t) in enumerate(evs) if t is not None]
    if not known:
        return
    for a, b in zip(known, known[1:]):
        ta, tb = evs[a][1], evs[b][1]
        for i in range(a + 1, b):
            evs[i] = (evs[i][0], ta + (tb - ta) * (i - a) // (b - a))
    # after the last known time: repeat it (those events are at least that late)
    last = known[-1]
    for i in range(last + 1, len(evs)):
        evs[i] = (evs[i][0], evs[last][1])


def tname(t):
    return t.name.split(b"\0")[0].decode("utf-8", "replace")


def fmt_seconds(s):
    a = abs(s)
    neg = s < 0 and a >= 0.5e-9
    if a >= 1:
        v = "%.3f s" % a
    elif a >= 1e-3:
        v = "%.3f ms" % (a * 1e3)
    elif a >= 1e-6:
        v = "%.3f us" % (a * 1e6)
    else:
        v = "%.0f ns" % (a * 1e9)
    return ("-" if neg else "") + v


# ---- symbolization -----------------------------------------------------------

class Module:
    __slots__ = ("bias", "segs", "path", "state", "gen_loaded", "gen_unloaded")

    def covers(self, addr):
        return any(start <= addr < start + size for start, size in self.segs)

    def name(self, addr):
        return "%s+0x%x" % (os.path.basename(self.path) or "exe", addr - self.bias)


def parse_modules(recs):
    """[Module] from MODULES records (current struct ft_module layout)."""
    out = []
    for b in recs:
        m = Module()
        m.bias, m.gen_loaded, m.gen_unloaded = struct.unpack_from("<QQQ", b, 0)
        m.state, nseg = struct.unpack_from("<II", b, 40)
        m.segs = [struct.unpack_from("<QQ", b, 48 + 16 * i) for i in range(min(nseg, MOD_SEGS))]
        m.path = b[176:496].split(b"\0")[0].decode("utf-8", "replace")
        out.append(m)
    return out


class Symbolizer:
    """Function, source line and object of an address, as gdb resolves them.
    The runtime's module table names what gdb cannot: addresses in objects
    without symbols, and events that ran in an object unloaded since (gdb
    only knows what is mapped now, maybe another object at that address)."""

    def __init__(self, modules=(), gens=()):
        self.cache = {}
        self.ps = gdb.current_progspace()
        self.modules = list(modules)
        self.unloaded = [m for m in self.modules if m.state == 2]
        self.gen_starts = [g["start_tsc"] for g in gens]
        self.gen_nums = [g["gen"] for g in gens]

    def _module_name(self, addr):
        for m in self.modules:
            if m.state == 1 and m.covers(addr):
                return m.name(addr)
        for m in self.modules:
            if m.covers(addr):
                return m.name(addr)
        return None

    def at(self, addr, tsc):
        """func(addr) for an event at time tsc: an object unloaded since names it."""
        if self.unloaded and tsc and self.gen_starts:
            i = bisect.bisect_right(self.gen_starts, tsc) - 1
            if i >= 0:
                g = self.gen_nums[i]
                for m in self.unloaded:
                    if m.gen_loaded <= g < m.gen_unloaded and m.covers(addr):
                        return (addr, m.name(addr), "unloaded since", "")
        return self.func(addr)

    def func(self, addr):
        """(start, name, 'file:line' or '', solib or '')."""
        if addr in self.cache:
            return self.cache[addr]
        start, name, where, lib = addr, None, "", ""
        try:
            b = self.ps.block_for_pc(addr)
        except (RuntimeError, gdb.error):
            b = None
        while b is not None and b.function is None:
            b = b.superblock
        if b is not None and b.function is not None:
            start = b.start
            name = b.function.print_name
        try:
            sal = self.ps.find_pc_line(addr)
            if sal.symtab is not None and sal.line:
                where = "%s:%d" % (os.path.basename(sal.symtab.filename), sal.line)
        except (RuntimeError, gdb.error):
            pass
        if name is None:
            try:
                s = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
                m = re.match(r"(.+?)(?: \+ (\d+))? in section (\S+)(?: of (.*))?$", s)
                if m:
                    name = m.group(1)
                    start = addr - int(m.group(2) or 0)
            except gdb.error:
                pass
        try:
            lib = self.ps.solib_name(addr) or ""
        except (RuntimeError, gdb.error):
            lib = ""
        if name is None:
            name = self._module_name(addr) or "0x%x" % addr
        res = (start, name, where, lib)
        self.cache[addr] = res
        return res


# ---- call tree ------------------------------------------------------------------

class Call:
    __slots__ = ("addr", "key", "depth", "t0", "t1", "closed", "parent")


def build_calls(events, sym):
    """Replay calls/returns: list of Call (in call order) and the stack left open."""
    calls = []
    stack = []
    depth = 0
    for word, tsc in events:
        addr = word & ADDR_MASK
        kind = word & F_CATCH
        if kind == F_CATCH:
            key = sym.at(addr, tsc)[0]
            for i in range(len(stack) - 1, -1, -1):
                if stack[i].key == key:
                    del stack[i + 1:]
                    depth = stack[i].depth + 1 if stack else depth
                    break
            continue
        if kind:  # return: closes the innermost open call, or the open call of
            # the same function further out (the returns in between were lost)
            if not stack:
                depth -= 1  # its call is older than the ring
                continue
            key = sym.at(addr, tsc)[0]
            i = len(stack) - 1
            if stack[i].key != key:
                for j in range(len(stack) - 2, -1, -1):
                    if stack[j].key == key:
                        i = j
                        break
            for c in stack[i:]:
                c.t1 = tsc
                c.closed = True
            depth = stack[i].depth
            del stack[i:]
            continue
        c = Call()
        c.addr = addr
        c.key = sym.at(addr, tsc)[0]
        c.depth = depth
        c.t0 = tsc
        c.t1 = None
        c.closed = False
        c.parent = stack[-1] if stack else None
        calls.append(c)
        stack.append(c)
        depth += 1
    return calls, stack


# ===========================================================================
# funtrace tail / threads / generations
# ===========================================================================

def cmd_tail(arg):
    args = gdb.string_to_argv(arg)
    n = 20
    tid = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-t" and i + 1 < len(args):
            tid = _int_arg(args[i + 1], "TID")
            i += 2
            continue
        if a.startswith("-t") and len(a) > 2:
            tid = _int_arg(a[2:], "TID")
        elif a.isdigit():
            n = int(a)
        else:
            raise FtError("usage: funtrace tail [N] [-t TID]")
        i += 1
    tr = Trace()
    threads = tr.ordered_threads()
    if tid is not None:
        threads = [t for t in threads if t.tid == tid]
        if not threads:
            raise FtError("no traced thread with tid %d (see 'funtrace threads')" % tid)
    if not threads:
        print("funtrace: no traced threads")
        return
    sym = Symbolizer(parse_modules(tr.td.modules), tr.gens)
    ref = tr.last_tsc()
    lines = []
    for t in threads:
        v = tr.views[t.index]
        calls, _open = build_calls(v.tail_events(n), sym)
        shown = calls[-n:] if n else []
        head = 'thread %d "%s" (%s%s%s)' % (
            t.tid, tname(t), THR_STATE_NAMES.get(t.state, t.state),
            ", crashed" if t.tid == tr.crashed else "",
            ", main" if t.flags & THRF_MAIN else "")
        lines.append("%s: %d events in the ring, last %d calls:" % (head, v.n_events(), len(shown)))
        if not shown:
            lines.append("    (no calls recorded)")
            continue
        # the calls enclosing the first one shown give them their context
        context = []
        c = shown[0].parent
        while c is not None:
            context.append(c)
            c = c.parent
        context.reverse()
        base = min(min(c.depth for c in shown), context[0].depth if context else 0)
        for c in _elide_context(context, base, sym) + shown:
            if isinstance(c, str):
                lines.append("  %12s  %s" % ("", c))
                continue
            _s, name, where, lib = sym.at(c.addr, c.t0)
            loc = where or ("in " + os.path.basename(lib) if lib else "")
            if c.closed and c.t1 and c.t0 and tr.hz:
                dur = fmt_seconds((c.t1 - c.t0) / tr.hz)
            elif not c.closed:
                dur = "[open]"
            else:
                dur = ""
            lines.append("  %12s  %s%s%s  %s" % (
                tr.fmt_dt(c.t0, ref), _indent(c.depth - base), name,
                "  (%s)" % loc if loc else "", dur))
    lines.append("(times relative to the last event; [open] = not returned when the trace was taken)")
    gdb.write("\n".join(lines) + "\n")


# `funtrace tail` stays small whatever the depth (a stack overflow leaves tens
# of thousands of frames open): of the frames enclosing the calls shown, only
# the outermost TAIL_OUTER and innermost TAIL_INNER are printed, the rest is one
# summary line; indentation stops growing at TAIL_MAX_INDENT levels, deeper
# lines carry their depth as a number instead.
TAIL_OUTER, TAIL_INNER, TAIL_MAX_INDENT = 3, 8, 40


def _indent(depth):
    if depth <= TAIL_MAX_INDENT:
        return "  " * depth
    return "  " * TAIL_MAX_INDENT + "[depth %d] " % depth


def _elide_context(context, base, sym, maxruns=4):
    """The enclosing frames (outermost first) to print: the Calls kept, with
    the hidden middle replaced by one line (a str) that counts them, says how
    many recurse (same function as their caller) and names the runs of the
    same function they form (the longest maxruns of them, in stack order)."""
    if len(context) <= TAIL_OUTER + TAIL_INNER + 1:
        return list(context)
    hidden = context[TAIL_OUTER:len(context) - TAIL_INNER]
    runs = []          # [first Call, count] of consecutive frames of one function
    rec = 0
    prev = context[TAIL_OUTER - 1].key if TAIL_OUTER else None
    for c in hidden:
        if c.key == prev:
            rec += 1
        if runs and runs[-1][0].key == c.key:
            runs[-1][1] += 1
        else:
            runs.append([c, 1])
        prev = c.key
    keep = set(id(r) for r in sorted(runs, key=lambda r: -r[1])[:maxruns])
    desc = []
    for r in runs:
        if id(r) in keep:
            name = sym.at(r[0].addr, r[0].t0)[1]
            desc.append("%s x%d" % (name, r[1]) if r[1] > 1 else name)
    more = len(runs) - len(desc)
    n = len(hidden)
    line = "%s... %d more open frame%s (%d of them recurse): %s%s ..." % (
        _indent(hidden[0].depth - base), n, "" if n == 1 else "s", rec, ", ".join(desc),
        ", +%d other run%s" % (more, "" if more == 1 else "s") if more else "")
    return list(context[:TAIL_OUTER]) + [line] + list(context[len(context) - TAIL_INNER:])


def _int_arg(s, what):
    try:
        return int(s, 0)
    except ValueError:
        raise FtError("bad %s: %s" % (what, s))


def cmd_threads(arg):
    if arg.strip():
        raise FtError("usage: funtrace threads")
    tr = Trace()
    rows = [("TID", "NAME", "STATE", "RING", "EVENTS", "SPAN", "NOTES")]
    for t in tr.ordered_threads():
        v = tr.views[t.index]
        r = v.r
        t0, t1 = v.span()
        span = fmt_seconds((t1 - t0) / tr.hz) if t0 is not None and tr.hz else "-"
        notes = []
        if t.tid == tr.crashed:
            notes.append("crashed")
        if t.flags & THRF_MAIN:
            notes.append("main")
        for bit, word in ((TSF_WRAPPED, "wrapped"), (TSF_UNCOMMITTED, "uncommitted entry"),
                          (TSF_TORN, "torn entry"), (TSF_RING_MISSING, "ring missing"),
                          (TSF_RING_PARTIAL, "ring partial"), (TSF_BAD_POS, "bad position")):
            if r.tsf & bit:
                notes.append(word)
        if t.fmt == FMT_SAMPLED8:
            notes.append("sampled")
        rows.append((str(t.tid), tname(t) or "-",
                     "alive" if t.state == THR_ALIVE else THR_STATE_NAMES.get(t.state, str(t.state)),
                     fmt_bytes(t.ring_size) if t.ring else "-", str(v.n_events()), span,
                     ", ".join(notes)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        gdb.write("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] + "\n")
    if tr.lost:
        gdb.write("funtrace: %d thread record(s) could not be read\n" % tr.lost)


def fmt_bytes(n):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if n >= unit and n % unit == 0:
            return "%d%s" % (n // unit, s)
    return str(n)


def cmd_generations(arg):
    if arg.strip():
        raise FtError("usage: funtrace generations")
    tr = Trace()
    if not tr.gens:
        gdb.write("funtrace: no generation records\n")
        return
    last = tr.last_tsc()
    # a generation is complete if every thread still holds all of its events:
    # a thread that lost its oldest events (wrapped or missing ring memory)
    # and whose oldest event is younger than the generation's start lost some
    views = []
    for t in tr.threads:
        v = tr.views[t.index]
        lost_front = bool(v.r.tsf & (TSF_WRAPPED | TSF_RING_MISSING | TSF_RING_PARTIAL | TSF_BAD_POS))
        views.append((t, v, v.span()[0], lost_front))
    rows = [("GEN", "START (wall clock)", "DURATION", "EVENTS", "STATUS")]
    for i, g in enumerate(tr.gens):
        hz = g["tsc_hz"] or tr.hz
        start = g["start_tsc"]
        nxt = tr.gens[i + 1]["start_tsc"] if i + 1 < len(tr.gens) else None
        end = nxt if nxt is not None else last
        if hz and g["clk_real_ns"]:
            real_ns = g["clk_real_ns"] - (g["clk_tsc"] - start) * 1000000000 // hz
            wall = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(real_ns // 1000000000)) + \
                ".%06d" % ((real_ns % 1000000000) // 1000)
        else:
            wall = "?"
        dur = (fmt_seconds(max(0, end - start) / hz) + ("+" if nxt is None else "")) if hz else "?"
        nev = 0
        partial = False
        for t, v, first, lost_front in views:
            nev += v.count_between(start, nxt)
            if (lost_front and (first is None or first > start)
                    and (not t.exit_tsc or t.exit_tsc > start)
                    and (nxt is None or not t.start_tsc or t.start_tsc < nxt)):
                partial = True
        status = "partial" if partial else "complete"
        if g["gen"] == tr.root.gen_current:
            status += " (current)"
        rows.append((str(g["gen"]), wall, dur, str(nev), status))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        gdb.write("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] + "\n")


# ===========================================================================
# gdb commands
# ===========================================================================

def _run(fn, arg):
    try:
        fn(arg)
    except FtError as e:
        raise gdb.GdbError("funtrace: %s" % e)
    except gdb.GdbError:
        raise
    except KeyboardInterrupt:
        raise gdb.GdbError("funtrace: interrupted")
    except gdb.MemoryError as e:
        raise gdb.GdbError("funtrace: cannot read target memory: %s" % e)
    except gdb.error as e:
        raise gdb.GdbError("funtrace: %s" % e)
    except Exception as e:  # never a traceback in the user's face
        tb = sys.exc_info()[2]
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        line = tb.tb_lineno if tb is not None else 0
        raise gdb.GdbError("funtrace: internal error: %s: %s (funtrace.py line %d)"
                           % (type(e).__name__, e, line))


if gdb is not None:
    gdb._funtrace_loaded = True   # the .debug_gdb_scripts auto-loader then skips it

    class FuntraceCommand(gdb.Command):
        """Get the funtrace function-call trace out of this core or stopped process.

Usage: funtrace                  same as 'funtrace save'
       funtrace save [FILE]      write the raw trace to FILE (default ./funtrace.raw)
       funtrace tail [N] [-t TID]   last N calls of each thread (default 20)
       funtrace threads          one line per traced thread
       funtrace generations      the generations held in the trace

Works on a core file (gdb PROG CORE), a process stopped under gdb, or one
attached with 'gdb -p PID'.  No debug info is needed for the runtime.
Decode the raw file with 'funtrace-decode FILE'."""

        def __init__(self):
            super().__init__("funtrace", gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)

        def invoke(self, arg, from_tty):
            self.dont_repeat()
            if arg.strip():
                raise gdb.GdbError("funtrace: unknown subcommand '%s' (try 'help funtrace')"
                                   % arg.split()[0])
            _run(cmd_save, "")

    class FuntraceSave(gdb.Command):
        """Write the funtrace raw trace to FILE (default ./funtrace.raw).

Usage: funtrace save [FILE]

Writes the same chunks as 'coreextract' would for this core (FINSTACK stacks
come from gdb's unwinder), or a live snapshot of a stopped process.  The file
is written to FILE.tmp.PID first and renamed when complete.  Then prints the
number of threads, events, generations and bytes written."""

        def __init__(self):
            super().__init__("funtrace save", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

        def invoke(self, arg, from_tty):
            self.dont_repeat()
            _run(cmd_save, arg)

    class FuntraceTail(gdb.Command):
        """Show the last N function calls of each traced thread (default 20).

Usage: funtrace tail [N] [-t TID]

Calls are nested by call depth, with the function name and source line as
gdb resolves them, the time of the call relative to the last event of the
whole trace, and the call's duration, or [open] if the function had not
returned when the trace was taken.  Open calls older than the last N are
shown first to give context.  The crashing thread comes first; -t TID shows
only that thread."""

        def __init__(self):
            super().__init__("funtrace tail", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

        def invoke(self, arg, from_tty):
            self.dont_repeat()
            _run(cmd_tail, arg)

    class FuntraceThreads(gdb.Command):
        """List the traced threads.

Usage: funtrace threads

One line per traced thread: tid, name, state (alive / exited / evicted /
ignored), ring size, events held in the ring, time between its oldest and
newest event, and notes (crashed, main, wrapped, torn or uncommitted entry,
missing ring memory, sampled-time ring)."""

        def __init__(self):
            super().__init__("funtrace threads", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

        def invoke(self, arg, from_tty):
            self.dont_repeat()
            _run(cmd_threads, arg)

    class FuntraceGenerations(gdb.Command):
        """List the trace generations held in the process.

Usage: funtrace generations

One line per generation record: number, wall-clock start, duration
(a '+' marks the open-ended current generation, measured up to the last
event), number of events held from it, and 'complete' if every thread still
holds all of its events or 'partial' if some ring has wrapped past its start."""

        def __init__(self):
            super().__init__("funtrace generations", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

        def invoke(self, arg, from_tty):
            self.dont_repeat()
            _run(cmd_generations, arg)

    FuntraceCommand()
    FuntraceSave()
    FuntraceTail()
    FuntraceThreads()
    FuntraceGenerations()
