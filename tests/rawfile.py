"""Test-side reader of funtrace raw files (FORMAT.md part 2).

Only for assertions in the test suite: the product's reader is the decoder (C).
"""
import functools
import json
import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def abi() -> dict:
    """The in-memory ABI as funtrace_abi.h declares it (its field table and
    structs), from tests/progs/abi_json.c: {"structs": {NAME: {id, size}},
    "fields": [{id, name, struct, member, offset, width}], "raw_sizes": {...}}."""
    with tempfile.TemporaryDirectory(prefix="ft-abi-") as d:
        exe = os.path.join(d, "abi_json")
        subprocess.run(["gcc", "-std=gnu11", "-I", str(ROOT / "runtime" / "include"), "-o", exe,
                        str(ROOT / "tests" / "progs" / "abi_json.c")], check=True, timeout=120)
        out = subprocess.run([exe], check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def abi_struct(name) -> tuple:
    """(size, {member: (offset, width)}) of one in-memory structure (ROOT, THREAD, MODULE, GEN)."""
    a = abi()
    return a["structs"][name]["size"], {f["member"]: (f["offset"], f["width"])
                                         for f in a["fields"] if f["struct"] == name}


def unpack_record(b, name, off=0) -> dict:
    """{member: int or bytes} of one record of an in-memory structure (8/4-byte
    fields as integers, wider ones as bytes)."""
    _size, fields = abi_struct(name)
    out = {}
    for m, (o, w) in fields.items():
        raw = b[off + o:off + o + w]
        out[m] = int.from_bytes(raw, "little") if w in (4, 8) else bytes(raw)
    return out

F_RET = 1 << 63
F_RET_WITH_CALLER = 1 << 62
F_CATCH = F_RET | F_RET_WITH_CALLER
F_CALL_RET_ON_THROW = 1 << 61
ADDR_MASK = (1 << 61) - 1
GEN_NONE = (1 << 64) - 1
GEN_SLOTS = 64

TSF = {"WRAPPED": 0x1, "UNCOMMITTED": 0x2, "TORN": 0x4, "RING_MISSING": 0x8,
       "RING_PARTIAL": 0x10, "COPY_RACED": 0x20, "BAD_POS": 0x40}


def chunks(data: bytes):
    """[(magic:str, payload:bytes)]; raises ValueError on a truncated chunk."""
    out = []
    off = 0
    while off < len(data):
        if off + 16 > len(data):
            raise ValueError(f"truncated chunk header at {off}")
        magic = data[off:off + 8].decode("latin1")
        (length,) = struct.unpack_from("<Q", data, off + 8)
        if off + 16 + length > len(data):
            raise ValueError(f"truncated chunk {magic!r} at {off}")
        out.append((magic, data[off + 16:off + 16 + length]))
        off += 16 + length
    return out


@dataclass
class Event:
    addr: int
    ret: bool
    catch: bool
    tsc: int


@dataclass
class Thread:
    pid: int = 0
    tid: int = 0
    name: str = ""
    state: int = 0
    fmt: int = 0
    flags: int = 0
    ring: int = 0
    ring_size: int = 0
    pos_off: int = 0
    first_off: int = 0
    n_entries: int = 0
    n_dropped: int = 0
    start_tsc: int = 0
    exit_tsc: int = 0
    gen_pos: list = field(default_factory=list)
    entries: list = field(default_factory=list)  # [(word, tsc)] or [(word, None)]

    def events(self) -> List[Event]:
        evs = []
        for word, tsc in self.entries:
            if tsc is None and (word >> 61) == 7:
                continue  # time word
            catch = (word & F_CATCH) == F_CATCH
            ret = bool(word & (F_RET | F_RET_WITH_CALLER)) and not catch
            evs.append(Event(word & ADDR_MASK, ret, catch, tsc or 0))
        return evs


@dataclass
class Stack:
    tid: int
    unwinder: int
    flags: int
    regs: list
    pcs: list


@dataclass
class Raw:
    chunks: list
    tsc_hz: int = 0
    header: dict = field(default_factory=dict)
    cmdline: str = ""
    siginfo: Optional[dict] = None
    threads: List[Thread] = field(default_factory=list)
    stacks: List[Stack] = field(default_factory=list)
    gens: list = field(default_factory=list)
    modules: list = field(default_factory=list)
    mappings: list = field(default_factory=list)
    procmaps: list = field(default_factory=list)  # PROCMAPS lines parsed like /proc/PID/maps
    procmaps_text: Optional[bytes] = None
    ended: bool = False
    sched: Optional[dict] = None  # SCHEDEVT: header fields + "events" (FORMAT.md 2.6)

    def thread(self, tid) -> Thread:
        for t in self.threads:
            if t.tid == tid:
                return t
        raise KeyError(tid)


HDR_FMT = "<IIIIQQIIQQQQQQII4Q"


def parse(data) -> Raw:
    if isinstance(data, (str, Path)):
        data = Path(data).read_bytes()
    raw = Raw(chunks=chunks(data))
    cur = None
    for magic, p in raw.chunks:
        if magic == "FUNTRACE":
            (raw.tsc_hz,) = struct.unpack("<Q", p)
        elif magic == "FTHEADER":
            v = struct.unpack_from(HDR_FMT, p)
            keys = ["raw_version", "abi_version", "source", "flags", "pid", "tsc_hz", "tsc_hz_source",
                    "time_mode", "gen_current", "gen_ms", "module_epoch", "root_addr", "taken_tsc",
                    "min_tsc", "nthreads", "nthreads_lost", "threads_created", "rings_evicted",
                    "records_reused"]
            raw.header = dict(zip(keys, v))
        elif magic == "CMD LINE":
            raw.cmdline = p.decode("utf-8", "replace")
        elif magic == "SIGINFO ":
            signo, code, errno_, tid, addr, sender, _ = struct.unpack("<iiiIQII", p)
            raw.siginfo = dict(signo=signo, code=code, errno=errno_, tid=tid, addr=addr, sender_pid=sender)
        elif magic == "MAPPINGS":
            off = 0
            while len(p) - off >= 80:
                start, end, foff, prot, bidlen = struct.unpack_from("<QQQII", p, off)
                bid = p[off + 32:off + 32 + bidlen]
                (plen,) = struct.unpack_from("<I", p, off + 72)
                path = p[off + 80:off + 80 + plen].decode("utf-8", "replace")
                raw.mappings.append(dict(start=start, end=end, offset=foff, prot=prot,
                                         build_id=bid.hex(), path=path))
                off += 80 + ((plen + 7) & ~7)
        elif magic == "PROCMAPS":
            raw.procmaps_text = p
            for line in p.decode("utf-8", "replace").splitlines():
                f = line.split(" ", 5)
                a, b = f[0].split("-")
                raw.procmaps.append(dict(start=int(a, 16), end=int(b, 16), perms=f[1],
                                         offset=int(f[2], 16), dev=f[3], inode=f[4],
                                         path=f[5] if len(f) > 5 else ""))
        elif magic == "GENERATN":
            size = abi_struct("GEN")[0]
            for i in range(0, len(p) - size + 1, size):
                raw.gens.append(unpack_record(p, "GEN", i))
        elif magic == "MODULES ":
            raw.modules.append(p)  # layout: struct ft_module[] (see funtrace_abi.h)
        elif magic == "THREADID":
            pid, tid = struct.unpack_from("<QQ", p)
            name = p[16:32].split(b"\0")[0].decode("utf-8", "replace")
            cur = Thread(pid=pid, tid=tid, name=name)
            raw.threads.append(cur)
        elif magic == "THRDSTAT":
            v = struct.unpack_from("<IIII9Q", p)
            (tid, state, fmt, flags, ring, ring_size, pos_off, first_off, n_entries, n_dropped,
             start_tsc, exit_tsc, seq) = v
            assert cur is not None and cur.tid == tid, "THRDSTAT without matching THREADID"
            cur.state, cur.fmt, cur.flags = state, fmt, flags
            cur.ring, cur.ring_size, cur.pos_off, cur.first_off = ring, ring_size, pos_off, first_off
            cur.n_entries, cur.n_dropped, cur.start_tsc, cur.exit_tsc = n_entries, n_dropped, start_tsc, exit_tsc
            gp = struct.unpack_from(f"<{2 * GEN_SLOTS}Q", p, 96)
            cur.gen_pos = [(gp[2 * i], gp[2 * i + 1]) for i in range(GEN_SLOTS)]
        elif magic == "TRACEBUF":
            if cur is None:
                cur = Thread()
                raw.threads.append(cur)
            n = len(p) // 16
            vals = struct.unpack(f"<{2 * n}Q", p)
            cur.entries = [(vals[2 * i], vals[2 * i + 1]) for i in range(n)]
        elif magic == "TRACEW08":
            n = len(p) // 8
            cur.entries = [(w, None) for w in struct.unpack(f"<{n}Q", p)]
        elif magic == "FINSTACK":
            tid, unw, nframes, flags = struct.unpack_from("<IIII", p)
            regs = list(struct.unpack_from("<27Q", p, 16))
            pcs = list(struct.unpack_from(f"<{nframes}Q", p, 16 + 27 * 8 + 8))
            raw.stacks.append(Stack(tid, unw, flags, regs, pcs))
        elif magic == "ENDTRACE":
            raw.ended = True
        elif magic == "SCHEDEVT":
            raw.sched = parse_sched(p)
    return raw


def without_chunks(data: bytes, magics) -> bytes:
    """data with the chunks named in magics left out (e.g. the pipe handler's SCHEDEVT)."""
    out, off = [], 0
    while off + 16 <= len(data):
        length = struct.unpack_from("<Q", data, off + 8)[0]
        if data[off:off + 8].decode("latin1") not in magics:
            out.append(data[off:off + 16 + length])
        off += 16 + length
    return b"".join(out) + data[off:]


SCHED_KINDS = {1: "switch", 2: "waking", 3: "wakeup_new"}


def parse_sched(p: bytes) -> dict:
    """The SCHEDEVT payload: struct ft_raw_sched + struct ft_raw_sched_event[nevents]."""
    ver, status, flags, n, frm, to, oldest, dropped, pid, _ = struct.unpack_from("<IIIIQQQQQQ", p)
    why = p[64:256].split(b"\0")[0].decode("utf-8", "replace")
    evs = []
    for k in range(n):
        off = 256 + 64 * k
        if off + 64 > len(p):
            break
        tsc, tid, other, tgid, cpu, kind, state, eflags = struct.unpack_from("<QIIIHBBB", p, off)
        evs.append(dict(tsc=tsc, tid=tid, other=other, cur_tgid=tgid, cpu=cpu, kind=SCHED_KINDS.get(kind, kind),
                        state=chr(state) if state else "", flags=eflags,
                        comm=p[off + 32:off + 48].split(b"\0")[0].decode("latin1"),
                        other_comm=p[off + 48:off + 64].split(b"\0")[0].decode("latin1")))
    return dict(version=ver, status=status, flags=flags, nevents=n, from_tsc=frm, to_tsc=to, oldest_tsc=oldest,
                ndropped=dropped, pid=pid, why=why, events=evs)
