"""funtrace-decode --debug-dir: separate debug files found by build-id in a
directory of the user's (DIR/.build-id/xx/yyyy.debug), and compressed debug
files (SHF_COMPRESSED, as libc6-dbg ships them) read through the decoder's
own inflated copy (decoder/dbginflate.c, libdeflate) with the same result as
libdw's reading of the uncompressed file; a corrupt compressed section
degrades to names without file:line, never a crash."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import compile_prog, run_program, run_tool
from test_decoder_debuginfod import FUNCS, SRC, build_id, check_file_line, names
from test_decoder_input import san_decoder  # noqa: F401 (fixture)


def place(debug_dir: Path, bid: str, src: Path, compress: bool) -> Path:
    """src's debug info split off into debug_dir/.build-id/xx/yyyy.debug"""
    dst = debug_dir / ".build-id" / bid[:2] / f"{bid[2:]}.debug"
    dst.parent.mkdir(parents=True)
    args = ["objcopy", "--only-keep-debug"] + (["--compress-debug-sections=zlib"] if compress else [])
    subprocess.run(args + [str(src), str(dst)], check=True)
    return dst


def compressed_sections(path: Path):
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True).stdout
    return {m.group(1) for m in re.finditer(r"\]\s+(\.debug_\w+)\s+\w+\s+\w+\s+\w+\s+\w+\s+\w+\s+\w*C", out)}


class Setup:
    pass


@pytest.fixture(scope="module")
def split(tree, tmp_path_factory):
    """A stripped dec_dbg crashed into a raw; its debug info in three debug
    directories: zlib-compressed, uncompressed, and compressed with a corrupt
    .debug_info."""
    base = tmp_path_factory.mktemp("debugdir")
    st = Setup()
    st.base = base
    full = compile_prog(tree, SRC, base / "build" / "dec_dbg.full", mode="pg")
    st.exe = base / "bin" / "dec_dbg"
    st.exe.parent.mkdir()
    shutil.copy(full, st.exe)
    subprocess.run(["strip", "--strip-debug", str(st.exe)], check=True)
    st.bid = build_id(st.exe)
    st.zdir, st.plaindir, st.baddir = base / "zdebug", base / "plain", base / "bad"
    z = place(st.zdir, st.bid, full, compress=True)
    assert {".debug_info", ".debug_line"} <= compressed_sections(z), "objcopy did not compress: proves nothing"
    assert not compressed_sections(place(st.plaindir, st.bid, full, compress=False))
    bad = place(st.baddir, st.bid, full, compress=True)
    # the middle of the compressed .debug_info: garbage
    hdr = subprocess.run(["readelf", "-SW", str(bad)], capture_output=True, text=True).stdout
    m = re.search(r"\]\s+\.debug_info\s+\w+\s+\w+\s+(\w+)\s+(\w+)", hdr)
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    data = bytearray(bad.read_bytes())
    for i in range(off + 24 + size // 4, off + 24 + size // 2):
        data[i] ^= 0x5A
    bad.write_bytes(bytes(data))
    run = run_program([st.exe], base / "run")
    assert run.core is not None, f"no core (rc={run.returncode}): {run.stderr[-1000:]}"
    st.raw = base / "run" / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", st.raw, run.core, st.exe])
    assert ce.returncode == 0, ce.stderr
    st.n = 0
    return st


def decode(decoder, st, *args):
    """funtrace-decode --json (args...) -> (returncode, stderr, json)"""
    st.n += 1
    out = st.base / f"t{st.n}.json"
    r = run_tool([decoder, "--json", out, *args, st.raw], timeout=120)
    return r.returncode, r.stderr, json.loads(out.read_text()) if out.exists() and r.returncode == 0 else None


def test_debug_dir_compressed_equals_uncompressed(tree, split):
    """file:line come from the debug directory given; a zlib-compressed debug
    file (inflated by the decoder) gives the very same JSON as the
    uncompressed one (read by libdw as it is)."""
    dec = tree.tool("funtrace-decode")
    rc, err, data = decode(dec, split)
    assert rc == 0, err
    assert sorted(set(names(data))) == sorted(FUNCS), names(data)
    assert data["file_info"]["functions"] == {}, "file:line without the debug directory: the test would prove nothing"
    rc, err, z = decode(dec, split, "--debug-dir", split.zdir)
    assert rc == 0 and "warning" not in err, err
    assert names(z) == ["main", "dbg_outer", "dbg_inner", "dbg_inner", "dbg_crash"], names(z)
    check_file_line(z)
    rc, err, plain = decode(dec, split, "--debug-dir", split.plaindir)
    assert rc == 0 and "warning" not in err, err
    assert z == plain


def test_debug_dir_corrupt_compressed_section(split, san_decoder):  # noqa: F811
    """A compressed .debug_info that does not inflate: the names stay (the
    executable's symbols), nothing crashes (ASan/UBSan decoder), exit 0."""
    rc, err, data = decode(san_decoder, split, "--debug-dir", split.baddir)
    assert rc == 0, err
    assert "AddressSanitizer" not in err and "runtime error" not in err, err
    assert sorted(set(names(data))) == sorted(FUNCS), names(data)
    assert "dbg_inner" not in data["file_info"]["functions"], data["file_info"]
