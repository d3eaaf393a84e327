"""Test-side generator of ORIGINAL-funtrace raw files (funtrace.raw as the
original funtrace wrote it: FUNTRACE, CMD LINE, PROCMAPS, THREADID + TRACEBUF
per thread, ENDTRACE), made from one of our raws (exact mode) so that the
decoder's original-format path can be checked against the same trace."""
import struct

import rawfile


def chunk(magic: str, payload: bytes) -> bytes:
    assert len(magic) == 8
    return magic.encode("latin1") + struct.pack("<Q", len(payload)) + payload


def procmaps_text(raw: "rawfile.Raw") -> bytes:
    lines = []
    for m in raw.mappings:
        perms = ("r" if m["prot"] & 1 else "-") + ("w" if m["prot"] & 2 else "-") + \
                ("x" if m["prot"] & 4 else "-") + "p"
        lines.append(f"{m['start']:x}-{m['end']:x} {perms} {m['offset']:08x} 00:00 0"
                     + (f"                          {m['path']}" if m["path"] else ""))
    return ("\n".join(lines) + "\n").encode()


def ring_dump(entries, rotate: int = 0, zeros: int = 0):
    """The ring as the original runtime's SIGTRAP dump
    (funtrace_pause_and_write_current_snapshot) writes it: the WHOLE buffer in
    buffer order.  `zeros` never-written slots (word 0) follow the entries, then
    the buffer is rotated left by `rotate` slots, so the oldest entry is no
    longer first (a wrapped ring) and the zero slots can land anywhere."""
    slots = list(entries) + [(0, 0)] * zeros
    if slots:
        k = rotate % len(slots)
        slots = slots[k:] + slots[:k]
    return slots


def to_original(data: bytes, rotate: int = 0, zeros: int = 0) -> bytes:
    """One sample of the original format from our raw bytes (rotate, zeros:
    see ring_dump; by default the entries oldest first, as our raws hold them)."""
    raw = rawfile.parse(data)
    out = chunk("FUNTRACE", struct.pack("<Q", raw.tsc_hz))
    out += chunk("CMD LINE", raw.cmdline.encode())
    out += chunk("PROCMAPS", procmaps_text(raw))
    for t in raw.threads:
        if not t.entries:
            continue
        assert t.fmt in (1, 3), "only exact-mode rings convert to the original format"
        out += chunk("THREADID", struct.pack("<QQ", t.pid or raw.header.get("pid", 0), t.tid) +
                     t.name.encode()[:16].ljust(16, b"\0"))
        out += chunk("TRACEBUF", b"".join(struct.pack("<QQ", w, c)
                                          for w, c in ring_dump(t.entries, rotate, zeros)))
    out += chunk("ENDTRACE", b"")
    return out
