"""Helpers for the runtime tests (test_runtime*.py): symbolizing events of a
raw file with nm, so tests can compare recorded call sequences with the
known call pattern of a test program."""
import bisect
import struct
import subprocess
from pathlib import Path

import rawfile


class Syms:
    """Function symbols of an executable (static addresses)."""

    def __init__(self, binary):
        out = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True,
                             text=True, check=True).stdout
        self.addr = {}
        funcs = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "TtWw":
                a, s = int(parts[0], 16), int(parts[1], 16)
                funcs.append((a, a + s, parts[3]))
            if len(parts) >= 3:
                self.addr.setdefault(parts[-1], int(parts[0], 16))
        mangled = sorted({f[2] for f in funcs if f[2].startswith("_Z")})
        if mangled:
            dem = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True,
                                 check=True).stdout.splitlines()
            plain = {m: d.split("(")[0] for m, d in zip(mangled, dem)}
            funcs = [(a, e, plain.get(n, n)) for a, e, n in funcs]
        funcs.sort()
        self.funcs = funcs
        self.starts = [f[0] for f in funcs]

    def name(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and self.funcs[i][0] <= addr < self.funcs[i][1]:
            return self.funcs[i][2]
        return None


def bias(raw, syms):
    return raw.header["root_addr"] - syms.addr["funtrace_root"]


FT_LANDING_PAD_ADDR = 4  # funtrace_abi.h: a catch there marks a landing pad; the next catch names its function


def sequence(raw, thread, syms, keep=None):
    """[(name, 'call'|'ret'|'catch'|'landing')] of thread's events in the
    executable, optionally only names in keep ('landing': the catch entry
    after a landing pad's marker)."""
    b = bias(raw, syms)
    out = []
    landing = False
    for e in thread.events():
        marker, landing_fn = e.catch and e.addr == FT_LANDING_PAD_ADDR, landing and e.catch
        landing = marker
        n = syms.name(e.addr - b)
        if marker or n is None or (keep is not None and n not in keep):
            continue
        out.append((n, "landing" if landing_fn else "catch" if e.catch else "ret" if e.ret else "call"))
    return out


def only_snapshot(path):
    raw = rawfile.parse(Path(path))
    assert raw.ended, "snapshot not ENDTRACE-terminated"
    return raw


def snapshots(path):
    """split a file of concatenated traces into parsed Raw objects"""
    data = Path(path).read_bytes()
    out, start, off = [], 0, 0
    for magic, payload in rawfile.chunks(data):
        off += 16 + len(payload)
        if magic == "ENDTRACE":
            out.append(rawfile.parse(data[start:off]))
            start = off
    return out


def main_thread(raw):
    for t in raw.threads:
        if t.flags & (1 << 16):
            return t
    raise AssertionError("no main thread in the snapshot")


MOD_FMT = "<QQQQQII"  # bias gen_loaded gen_unloaded epoch_loaded epoch_unloaded state nseg


def modules(raw, size=496):
    out = []
    for payload in raw.modules:
        for off in range(0, len(payload), size):
            rec = payload[off:off + size]
            bias, gl, gu, el, eu, state, nseg = struct.unpack_from(MOD_FMT, rec)
            segs = [struct.unpack_from("<QQ", rec, 48 + 16 * i) for i in range(nseg)]
            path = rec[176:176 + 320].split(b"\0")[0].decode()
            out.append(dict(bias=bias, gen_loaded=gl, gen_unloaded=gu, epoch_loaded=el,
                            epoch_unloaded=eu, state=state, segs=segs, path=path))
    return out


def core_read(core, addr, size):
    """size bytes at virtual address addr of an ELF core (its PT_LOAD segments)."""
    data = Path(core).read_bytes()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and vaddr <= addr and addr + size <= vaddr + filesz:
            return data[off + addr - vaddr:off + addr - vaddr + size]
    raise AssertionError(f"{addr:#x}+{size} is not in the core {core}")


def core_root_u64(core, root_addr, field_id):
    """A uint64 field of the root in a core, found through the root's own
    offsets table (None if the root does not have the field)."""
    hdr = core_read(core, root_addr, 64)
    n_offsets, _, offsets_off = struct.unpack_from("<III", hdr, 40)
    if field_id >= n_offsets:
        return None
    off, = struct.unpack_from("<H", core_read(core, root_addr + offsets_off + 2 * field_id, 2))
    if off == 0xFFFF:
        return None
    return struct.unpack("<Q", core_read(core, root_addr + off, 8))[0]
