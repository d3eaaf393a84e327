"""coreextract on bad input: every case gets its documented exit code and one line
on stderr naming the file, never a crash, a hang or a partial file passed off as
complete.  Run with the normal build and with the ASan+UBSan build (make SAN=1
coreextract -> build-san/bin/coreextract), including over randomly corrupted real
cores; the libFuzzer harness is built and run briefly over real seed cores."""
import concurrent.futures
import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import rawfile
from conftest import ROOT, require_tools
from test_coreextract import core_segment, extract, stderr_lines

SAN_BIN = ROOT / "build-san" / "bin" / "coreextract"


@pytest.fixture(scope="session")
def san_coreextract(tree):
    r = subprocess.run(["make", "-j2", "SAN=1", "coreextract"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return SAN_BIN


@pytest.fixture(params=["build", "build-san"])
def ce(request, tree):
    """the coreextract binary: normal and sanitized"""
    if request.param == "build":
        require_tools(tree, "coreextract")
        return tree.tool("coreextract")
    return request.getfixturevalue("san_coreextract")


@pytest.fixture(scope="module")
def crashprog(compiled):
    return compiled("ce_crash.c", "pg")


@pytest.fixture(scope="module")
def acore(tmp_path_factory, crashprog, tree):
    """one real core of ce_crash segv-thread (module-wide, read-only)"""
    from conftest import run_program
    d = tmp_path_factory.mktemp("acore")
    r = run_program([crashprog, "segv-thread"], d)
    assert r.core is not None
    return r.core


def run(ce, *args, timeout=60):
    r = subprocess.run([str(ce), *map(str, args)], capture_output=True, timeout=timeout)
    err = r.stderr.decode(errors="replace")
    assert "Sanitizer" not in err and "runtime error" not in err, err
    return r


def mutate_header(core, dst, off, fmt, value):
    data = bytearray(Path(core).read_bytes()[:1 << 20])
    struct.pack_into(fmt, data, off, value)
    Path(dst).write_bytes(data)
    return dst


def put(path, data):
    Path(path).write_bytes(data)
    return path


BAD_INPUTS = {
    # name: (maker(tmp, core, exe) -> path, expected message part)
    "missing": (lambda t, c, e: t / "nope", "No such file"),
    "directory": (lambda t, c, e: t, "is a directory"),
    "empty": (lambda t, c, e: put(t / "empty", b""), "empty file"),
    "text": (lambda t, c, e: put(t / "txt", b"hello world\n" * 10), "not an ELF file"),
    "executable": (lambda t, c, e: e, "not a core file but an ELF"),
    "elf32": (lambda t, c, e: mutate_header(c, t / "c32", 4, "B", 1), "32-bit"),
    "bigendian": (lambda t, c, e: mutate_header(c, t / "cbe", 5, "B", 2), "big-endian"),
    "aarch64": (lambda t, c, e: mutate_header(c, t / "carm", 18, "<H", 183), "not x86-64"),
    "cut-in-headers": (lambda t, c, e: put(t / "c100", Path(c).read_bytes()[:100]),
                       "truncated inside its program headers"),
    "bad-zstd": (lambda t, c, e: put(t / "z", b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4), "corrupt zstd data"),
    "bad-xz": (lambda t, c, e: put(t / "x", b"\xfd7zXZ\x00" + b"\x01" * 300), "xz"),
    # an endless device: refused from its first bytes, never spooled
    "dev-zero": (lambda t, c, e: Path("/dev/zero"), "not an ELF file"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_unusable_input(ce, case, acore, crashprog, tmp_path):
    make, msg = BAD_INPUTS[case]
    path = make(tmp_path, acore, crashprog)
    out = tmp_path / "out.raw"
    r = run(ce, "-o", out, path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and msg in lines[0] and str(path) in lines[0], lines
    assert not out.exists() and not Path(str(out) + ".tmp").exists()


def root_fields(core, raw):
    """{field id: file offset in the core} for the root (via its own layout table)."""
    root = raw.header["root_addr"]
    seg = core_segment(core, root)
    base = seg["offset"] + root - seg["vaddr"]
    data = Path(core).read_bytes()
    n_offsets, sizes_off, offsets_off = struct.unpack_from("<III", data, base + 40)
    offs = struct.unpack_from(f"<{n_offsets}H", data, base + offsets_off)
    return base, offs


F_ROOT_THREADS, F_ROOT_THREADS_CAP, F_ROOT_THREADS_USED = 7, 8, 9
F_ROOT_GENS, F_ROOT_GENS_CAP = 14, 15


@pytest.mark.parametrize("corruption", ["threads_used", "threads_ptr", "gens_cap", "root_size", "self"])
@pytest.mark.parametrize("ce", ["build", pytest.param("build-san", marks=pytest.mark.slow)], indirect=True)
def test_corrupt_root_in_real_core(ce, acore, tmp_path, corruption):
    _, good = extract_with(ce, acore)
    base, offs = root_fields(acore, good)
    data = bytearray(Path(acore).read_bytes())
    if corruption == "threads_used":
        struct.pack_into("<I", data, base + offs[F_ROOT_THREADS_USED], 0xFFFFFFFF)
        struct.pack_into("<I", data, base + offs[F_ROOT_THREADS_CAP], 0xFFFFFFFF)
    elif corruption == "threads_ptr":
        struct.pack_into("<Q", data, base + offs[F_ROOT_THREADS], 0xDEAD000000000000)
    elif corruption == "gens_cap":
        struct.pack_into("<I", data, base + offs[F_ROOT_GENS_CAP], 0x7FFFFFFF)
    elif corruption == "root_size":
        struct.pack_into("<I", data, base + 32, 0xFFFFFF00)
    elif corruption == "self":
        struct.pack_into("<Q", data, base + 24, 0x1234)
    bad = tmp_path / "core.bad"
    bad.write_bytes(data)
    out = tmp_path / "o.raw"
    r = run(ce, "-o", out, bad)
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    if corruption in ("root_size", "self"):
        # the root is rejected where the symbol says it is, and no valid one is found by scanning
        assert r.returncode == 1 and not out.exists()
        assert ("invalid root layout" in lines[0]) if corruption == "root_size" else ("self-pointer" in lines[0])
    else:
        assert r.returncode == 3 and "incomplete" in lines[0]
        raw = rawfile.parse(out.read_bytes())
        assert raw.ended and raw.header["flags"] & 1
        if corruption == "gens_cap":
            assert raw.gens == good.gens and [t.entries for t in raw.threads] == [t.entries for t in good.threads]


def extract_with(ce, core):
    r = run(ce, core)
    assert r.returncode == 0, r.stderr
    return r, rawfile.parse(r.stdout)


@pytest.mark.slow
def test_randomly_corrupted_cores(san_coreextract, acore, tmp_path):
    """Bytes flipped in the program headers, the notes, the root and registry, the
    rings: the sanitized build never crashes, hangs or reports memory errors, and
    always exits with a documented code (and one line when it fails)."""
    _, good = extract_with(san_coreextract, acore)
    data = Path(acore).read_bytes()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phnum, = struct.unpack_from("<H", data, 0x38)
    notes = [(o, sz) for (t, o, sz) in
             (struct.unpack_from("<I4xQ16xQ", data, phoff + 56 * i) for i in range(phnum)) if t == 4]
    base, offs = root_fields(acore, good)
    t = good.thread(good.siginfo["tid"])
    rseg = core_segment(acore, t.ring)
    ring_off = rseg["offset"] + t.ring - rseg["vaddr"]
    areas = [(0, 64), (phoff, 56 * phnum), (base, 440), (ring_off, t.pos_off + 64)] + notes
    rng = random.Random(1234)
    flips = []
    for i in range(24):
        one = []
        for _ in range(rng.choice([1, 4, 32])):
            start, size = rng.choice(areas)
            one.append((start + rng.randrange(max(size, 1)), rng.randrange(256)))
        flips.append(one)

    def extract_corrupted(i):
        buf = bytearray(data)
        for pos, val in flips[i]:
            if pos < len(buf):
                buf[pos] = val
        bad = tmp_path / f"c{i}"
        bad.write_bytes(buf)
        r = run(san_coreextract, bad, timeout=120)
        bad.unlink()
        return r

    codes = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # one sanitized run per CPU
        for i, r in enumerate(pool.map(extract_corrupted, range(len(flips)))):
            assert r.returncode in (0, 1, 2, 3), (i, r.returncode, r.stderr)
            if r.returncode:
                assert len(r.stderr.decode().splitlines()) == 1, r.stderr
            if r.returncode in (0, 3):
                raw = rawfile.parse(r.stdout)
                assert raw.ended, (i, r.returncode, r.stderr, len(r.stdout))
            codes[r.returncode] = codes.get(r.returncode, 0) + 1
    assert len(codes) >= 2, codes   # the corruption did hit something


def test_randomly_corrupted_eh_frame_of_a_static_executable(san_coreextract, compiled, run_crash, tmp_path):
    """An executable without .eh_frame_hdr (linked -static) has its .eh_frame
    indexed by coreextract itself (reader/ehframe.c); bytes of that section
    corrupted -- lengths, CIE pointers, encodings, locations -- never crash
    the sanitized build or make it report a memory error: it exits 0 with a
    complete raw, the stacks as far as the unwind info still leads."""
    exe = compiled(ROOT / "examples" / "crash.c", "pg", extra=["-O1", "-pthread", "-static"], tag="static")
    run_ = run_crash([exe], name="static")
    assert run_.core is not None, run_.stderr
    sections = subprocess.run(["readelf", "-SW", str(exe)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\.eh_frame\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    assert m, sections
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    data = exe.read_bytes()
    rng = random.Random(99)
    cases = []
    for _ in range(24):
        buf = bytearray(data)
        for _ in range(rng.choice([1, 8, 64])):
            buf[off + rng.randrange(size)] = rng.choice([0, 0xff, 0x80, rng.randrange(256)])
        if rng.random() < 0.3:  # a length or CIE pointer far out of the section
            i = off + rng.randrange(size - 4)
            buf[i:i + 4] = rng.choice([b"\xff\xff\xff\xff", b"\xfe\xff\xff\x7f", b"\x00\x00\x00\x80"])
        cases.append(bytes(buf))

    def extract_with_exe(i):
        bad = tmp_path / f"exe{i}"
        bad.write_bytes(cases[i])
        r = run(san_coreextract, run_.core, bad, timeout=120)
        bad.unlink()
        return r

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for i, r in enumerate(pool.map(extract_with_exe, range(len(cases)))):
            assert r.returncode == 0, (i, r.returncode, r.stderr[-2000:])
            assert rawfile.parse(r.stdout).ended, i


@pytest.mark.slow
def test_sanitized_build_over_good_and_truncated_cores(san_coreextract, tree, acore, tmp_path):
    require_tools(tree, "coreextract")
    ref = run(tree.tool("coreextract"), acore)
    r = run(san_coreextract, "-v", acore)
    assert r.returncode == 0 and r.stdout == ref.stdout
    size = Path(acore).stat().st_size
    for frac in (0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        cut = tmp_path / "cut"
        cut.write_bytes(Path(acore).read_bytes()[:int(size * frac)])
        r = run(san_coreextract, cut)
        assert r.returncode in (0, 1, 2, 3), (frac, r.returncode, r.stderr)
        lines = r.stderr.decode().splitlines()
        assert len(lines) == 1 and "truncated" in lines[0], lines   # exit 0: a warning that it is truncated
        if r.returncode in (0, 3):
            raw = rawfile.parse(r.stdout)
            assert raw.ended and bool(raw.header["flags"] & 1) == (r.returncode == 3)
