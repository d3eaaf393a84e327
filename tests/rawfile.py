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
       "RING_PARTIAL": 0x10, "COPY_RACED": 0x20, "BAD_POS": 0x40, "TSC_HI": 0x80}


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
    tsc_hi: Optional[int] = None  # THRDSTAT tsc_hi when FT_TSF_TSC_HI is set
    gen_pos: list = field(default_factory=list)
    entries: list = field(default_factory=list)  # [(word, tsc)] or [(word, None)]
    items: list = field(default_factory=list)    # TRACEE08: the raw 8-byte items

    def events(self) -> List[Event]:
        evs = []
        for word, tsc in self.entries:
            if tsc is None and (word >> 61) == 7:
                continue  # time word
            catch = (word & F_CATCH) == F_CATCH
            ret = bool(word & (F_RET | F_RET_WITH_CALLER)) and not catch
            evs.append(Event(word & ADDR_MASK, ret, catch, tsc or 0))
        return evs


E8_ESC = 3
E8_ADDR_HI, E8_TSC_HI, E8_CATCH = 1, 2, 3


def e8_escape(typ, payload):
    return (payload << 32) | (typ << 2) | E8_ESC


def expand_e8(items, code=(), lower=0, ref=0, rec_hi=None):
    """FT_FMT_EXACT8 items (FORMAT.md 1.4) -> [(word, tsc)] of the events, with
    their high halves from the escapes before them.  Events before the first
    escape of a kind (a wrapped ring's oldest) take the TSC high half that puts
    the last of them at or before the first known time (in a ring without a
    TSC_HI escape or a zero item: rec_hi, the record's, if known), and the first ADDR_HI's
    address high half, else the one of the executable mappings `code`
    ([(start, end)]) that holds most of their addresses (a simpler rule than
    the decoder's; enough for tests).
    Zero items and unknown escapes are skipped."""
    ahi = thi = None
    first_ahi = next((w >> 32 for w in items if w & 3 == E8_ESC and (w >> 2) & 63 == E8_ADDR_HI), None)
    if first_ahi is None:
        los = [w & 0xFFFFFFFC for w in items[:256] if w and w & 3 != E8_ESC]
        cands = {h for s, e in code for h in range(s >> 32, ((e - 1) >> 32) + 1)} or {0}
        first_ahi = max(sorted(cands), key=lambda h: sum(any(s <= (h << 32 | lo) < e for s, e in code)
                                                         for lo in los))
    u = None
    for i, w in enumerate(items):
        if w & 3 == E8_ESC and (w >> 2) & 63 == E8_TSC_HI:
            for w2 in items[i + 1:]:
                if w2 and w2 & 3 != E8_ESC:
                    u = ((w >> 32) << 32) | (w2 >> 32)
                    break
            break
    lo_last = None
    for w in items:
        if w & 3 == E8_ESC and (w >> 2) & 63 == E8_TSC_HI:
            break
        if w and w & 3 != E8_ESC:
            lo_last = w >> 32
    lo_first = next((w >> 32 for w in items if w and w & 3 != E8_ESC), 0)
    pre_thi = 0
    if u is not None and lo_last is not None:   # the last of them at or before U
        pre_thi = u >> 32
        if ((pre_thi << 32) | lo_last) > u:
            pre_thi -= 1
    elif rec_hi is not None and all(items):      # the newest events: the record's high half
        pre_thi = rec_hi
    elif lower:                                  # the first at or after the lower bound
        pre_thi = lower >> 32
        if ((pre_thi << 32) | lo_first) < lower:
            pre_thi += 1
    elif ref:                                    # nearest the reference
        pre_thi = min(((ref >> 32) + d for d in (-1, 0, 1)), key=lambda h: abs((h << 32 | lo_first) - ref))
    out = []
    catch = False
    for w in items:
        if not w:
            continue
        tag = w & 3
        if tag == E8_ESC:
            typ = (w >> 2) & 63
            if typ == E8_ADDR_HI:
                ahi = w >> 32
            elif typ == E8_TSC_HI:
                thi = w >> 32
            elif typ == E8_CATCH:
                catch = True
            continue
        a = ((first_ahi if ahi is None else ahi) << 32) | (w & 0xFFFFFFFC)
        flags = F_RET if tag == 1 else F_CALL_RET_ON_THROW if tag == 2 else F_CATCH if catch else 0
        catch = False
        out.append((a | flags, ((pre_thi if thi is None else thi) << 32) | (w >> 32)))
    return out


S4_ADDR_HI, S4_TSC_HI, S4_CATCH = 0, 1, 2


def s4_escape(typ, payload):
    return ((payload << 5) | (typ << 3) | 3) & 0xFFFFFFFF


def expand_s4(items, code=(), ref=0, rec_hi=None):
    """FT_FMT_SAMPLED4 items (FORMAT.md 1.4) -> [(word, tsc or None)] of the events:
    a stamped return (a leaf return) gets its time and the address of the call item
    before it (one without that call, the window's first item, is left out); high
    halves from the escapes (before the first ADDR_HI: as expand_e8; TSC bits above
    58 and before the first TSC_HI: from ref, or rec_hi, the record's, in a ring
    without a TSC_HI escape or a zero item).  Zero items and escapes skipped."""
    first_ahi = next((w >> 5 for w in items if w & 7 == 3 and (w >> 3) & 3 == S4_ADDR_HI), None)
    if first_ahi is None:
        los = [w & ~3 for w in items[:256] if w and w & 3 != 3]
        cands = {h for s, e in code for h in range(s >> 32, ((e - 1) >> 32) + 1)} or {0}
        first_ahi = max(sorted(cands), key=lambda h: sum(any(s <= (h << 32 | lo) < e for s, e in code)
                                                         for lo in los))
    top = (ref >> 32) & ~((1 << 27) - 1)
    ahi, thi, catch, last_call, out = None, None, False, None, []
    if rec_hi is not None and all(items) and not any(w & 7 == 3 and (w >> 3) & 3 == S4_TSC_HI for w in items):
        thi = rec_hi
    for w in items:
        if not w:
            last_call = None
            continue
        if w & 7 == 7:                          # a stamped (leaf) return
            h = thi if thi is not None else ref >> 32
            if last_call is not None:
                out.append((last_call | F_RET, (h << 32) | (w & ~7)))
            catch, last_call = False, None
            continue
        if w & 3 == 3:
            typ, pl = (w >> 3) & 3, w >> 5
            if typ == S4_ADDR_HI:
                ahi = pl
            elif typ == S4_TSC_HI:
                thi = top | pl
            elif typ == S4_CATCH:
                catch = True
            continue
        a = ((first_ahi if ahi is None else ahi) << 32) | (w & ~3)
        tag = w & 3
        if tag == 1:
            out.append((a | F_RET, None))
            last_call = None
        else:
            out.append((a | (F_CALL_RET_ON_THROW if tag == 2 else F_CATCH if catch else 0), None))
            last_call = a
        catch = False
    return out


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
    faults_total: int = 0
    faults: list = field(default_factory=list)  # FAULTS: [dict], oldest first
    ended: bool = False
    sched: Optional[dict] = None  # SCHEDEVT: header fields + "events" (FORMAT.md 2.6)

    def thread(self, tid) -> Thread:
        for t in self.threads:
            if t.tid == tid:
                return t
        raise KeyError(tid)


HDR_FMT = "<IIIIQQIIQQQQQQII4Q"
# struct ft_fault (FAULTS chunk records, FORMAT.md 1.9)
FAULT_FMT = "<iiiIQQQQIIIIiIQ"
FAULT_KEYS = ["signo", "code", "errno", "tid", "addr", "pc", "tsc", "end_tsc", "sender_pid", "state", "flags",
              "nested", "nested_signo", "nested_tid", "seq"]
FAULT_ACTIVE, FAULT_RETURNED, FAULT_LONGJMP, FAULT_CAUGHT = 1, 2, 3, 4
FAULTF_FROZEN, FAULTF_DEFAULT, FAULTF_PARTIAL = 0x1, 0x2, 0x4


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
        elif magic == "FAULTS  ":
            raw.faults_total, n = struct.unpack_from("<QI", p)
            for i in range(n):
                v = struct.unpack_from(FAULT_FMT, p, 16 + 80 * i)
                raw.faults.append(dict(zip(FAULT_KEYS, v)))
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
            # the record's TSC high half of the ring's newest events (FT_TSF_TSC_HI), else None
            cur.tsc_hi = struct.unpack_from("<I", p, 88)[0] if flags & TSF["TSC_HI"] else None
            gp = struct.unpack_from(f"<{2 * GEN_SLOTS}Q", p, 96)
            cur.gen_pos = [(gp[2 * i], gp[2 * i + 1]) for i in range(GEN_SLOTS)]
        elif magic == "TRACEBUF":
            if cur is None:
                cur = Thread()
                raw.threads.append(cur)
            n = len(p) // 16
            vals = struct.unpack(f"<{2 * n}Q", p)
            cur.entries = [(vals[2 * i], vals[2 * i + 1]) for i in range(n)]
        elif magic == "TRACEE08":
            n = len(p) // 8
            cur.items = list(struct.unpack(f"<{n}Q", p))
        elif magic == "TRACES04":
            n = len(p) // 4
            cur.items = list(struct.unpack(f"<{n}I", p))
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
    code = [(m["start"], m["end"]) for m in raw.mappings if m["prot"] & 4]
    ref = raw.gens[-1]["clk_tsc"] if raw.gens else raw.header.get("taken_tsc", 0)
    for t in raw.threads:
        if t.fmt == 3 and t.items:
            lower = raw.header.get("min_tsc", 0) if raw.header.get("flags", 0) & 4 else 0
            if not t.flags & TSF["WRAPPED"]:
                lower = max(lower, t.start_tsc)
            t.entries = expand_e8(t.items, code, lower, ref, t.tsc_hi)
        if t.fmt == 4 and t.items:
            t.entries = expand_s4(t.items, code, ref, t.tsc_hi)
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
