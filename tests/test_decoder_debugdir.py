"""funtrace-decode --debug-dir: separate debug files found by build-id in a
directory of the user's (DIR/.build-id/xx/yyyy.debug), and compressed debug
files (SHF_COMPRESSED, as libc6-dbg ships them) read through the decoder's
own inflated copy (decoder/dbginflate.c, libdeflate) with the same result as
libdw's reading of the uncompressed file; a corrupt compressed section
degrades to names without file:line, never a crash.  The inflated copies are
kept in a cache directory between decodes (decoder/dbgcache.c)."""
import json
import os
import re
import shutil
import subprocess
import time
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


def decode(decoder, st, *args, env=None):
    """funtrace-decode --json (args...) -> (returncode, stderr, json)"""
    st.n += 1
    out = st.base / f"t{st.n}.json"
    r = run_tool([decoder, "--json", out, *args, st.raw], timeout=120, env=env)
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


# ---- the cache of inflated debug files (decoder/dbgcache.c) ----------------

def cache_entries(d: Path):
    return sorted((d / "debug").glob("*.debug")) if (d / "debug").exists() else []


def test_inflated_debug_file_is_cached(tree, split, tmp_path):
    """The first decode keeps its inflated copy in the cache directory (named
    by build-id, uncompressed, complete); the next decodes read it (it is not
    written again) and give the very same JSON as the uncompressed file."""
    dec, cache = tree.tool("funtrace-decode"), tmp_path / "cache"
    env = {"FUNTRACE_CACHE_DIR": str(cache)}
    rc, err, plain = decode(dec, split, "--debug-dir", split.plaindir, env=env)
    assert rc == 0 and not cache_entries(cache), (err, cache_entries(cache))  # nothing to inflate
    rc, err, first = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0 and "warning" not in err, err
    ents = cache_entries(cache)
    assert len(ents) == 1 and ents[0].name.startswith(split.bid + "-"), ents
    assert not compressed_sections(ents[0]) and build_id(ents[0]) == split.bid
    assert not list((cache / "debug").glob("*.tmp.*"))
    ino = ents[0].stat().st_ino, ents[0].stat().st_mtime_ns
    rc, err, again = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0 and "warning" not in err, err
    assert (ents[0].stat().st_ino, ents[0].stat().st_mtime_ns) == ino  # read, not written again
    assert first == again == plain
    # another copy of the same debug file (same build-id): its own entry, never the other's
    other = tmp_path / "zcopy"
    shutil.copytree(split.zdir, other)
    rc, err, copy = decode(dec, split, "--debug-dir", other, env=env)
    assert rc == 0 and copy == plain and len(cache_entries(cache)) == 2, err
    # a compressed file that does not inflate: no entry
    rc, err, bad = decode(dec, split, "--debug-dir", split.baddir, env=env)
    assert rc == 0 and len(cache_entries(cache)) == 2, err


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other-headers", "empty"])
def test_damaged_cache_entry_is_not_used(tree, split, tmp_path, damage):
    """An entry that is not the inflated file (cut short, overwritten, with
    another section layout, empty) is not read: the decode is the same as
    without it, and the entry is replaced by a good one."""
    dec, cache = tree.tool("funtrace-decode"), tmp_path / "cache"
    env = {"FUNTRACE_CACHE_DIR": str(cache)}
    rc, err, good = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0, err
    [ent] = cache_entries(cache)
    orig = ent.read_bytes()
    data = bytearray(orig)
    if damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "garbage":
        data = bytearray(b"\x5a" * len(data))
    elif damage == "other-headers":  # the last section header's size changed
        data[-64 + 32] ^= 0x10
    else:
        data = bytearray()
    ent.write_bytes(bytes(data))
    rc, err, again = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0 and "warning" not in err, err
    assert again == good
    [ent2] = cache_entries(cache)
    assert ent2 == ent and ent2.read_bytes() == orig  # replaced by the inflated file


def test_cache_directory_unusable_or_off(tree, split, tmp_path):
    """No usable cache directory (a file in the way; FUNTRACE_CACHE_DIR empty:
    off): the decode is the same, with nothing said and nothing written.
    Without FUNTRACE_CACHE_DIR the cache is $XDG_CACHE_HOME/funtrace, else
    $HOME/.cache/funtrace."""
    dec = tree.tool("funtrace-decode")
    rc, err, good = decode(dec, split, "--debug-dir", split.plaindir)
    assert rc == 0, err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    home = tmp_path / "home"
    home.mkdir()
    for env in ({"FUNTRACE_CACHE_DIR": str(blocker / "sub")}, {"FUNTRACE_CACHE_DIR": "", "HOME": str(home)}):
        rc, err, z = decode(dec, split, "--debug-dir", split.zdir, env=env)
        assert rc == 0 and err.startswith("funtrace-decode: wrote ") and err.count("\n") == 1 and z == good, (env, err)
    assert not list(home.rglob("*"))
    env = {k: v for k, v in os.environ.items() if k not in ("FUNTRACE_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    r = subprocess.run([str(dec), "--json", str(tmp_path / "h.json"), "--debug-dir", str(split.zdir), str(split.raw)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(cache_entries(home / ".cache" / "funtrace")) == 1
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    r = subprocess.run([str(dec), "--json", str(tmp_path / "x.json"), "--debug-dir", str(split.zdir), str(split.raw)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(cache_entries(tmp_path / "xdg" / "funtrace")) == 1


def test_cache_on_a_full_file_system(tree, split, tmp_path):
    """A cache directory on a file system without room for the entry (a full
    1 MiB tmpfs): the decode is the same, no entry or temporary file is left, and
    the decoder does not die of a write into the full file system."""
    dec = tree.tool("funtrace-decode")
    rc, err, good = decode(dec, split, "--debug-dir", split.plaindir)
    assert rc == 0, err
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "funtrace-test", str(mnt)], check=True)
    try:
        (mnt / "debug").mkdir()
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)  # the file system full to its last block
        try:
            while os.write(fd, b"x" * 4096):
                pass
        except OSError:
            pass
        os.close(fd)
        rc, err, z = decode(dec, split, "--debug-dir", split.zdir, env={"FUNTRACE_CACHE_DIR": str(mnt)})
        assert rc == 0 and "warning" not in err and z == good, (rc, err)
        assert not list((mnt / "debug").iterdir())
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_entries_unused_for_30_days_are_removed(tree, split, tmp_path):
    """When an entry is written, entries no decode has used for 30 days (a
    debug package upgraded away) are removed, younger ones stay; a decode
    that uses an entry brings its time up to date, so an entry in use is
    never removed."""
    dec, cache = tree.tool("funtrace-decode"), tmp_path / "cache"
    (cache / "debug").mkdir(parents=True)
    env = {"FUNTRACE_CACHE_DIR": str(cache)}
    day = 86400
    gone, kept = (cache / "debug" / f"{'0' * 40}-{x * 16}.debug" for x in ("a", "b"))
    for f, age in ((gone, 31 * day), (kept, 29 * day)):
        f.write_bytes(b"x" * 4096)
        os.utime(f, (time.time() - age, time.time() - age))
    rc, err, _ = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0, err
    new = [e for e in cache_entries(cache) if e not in (gone, kept)]
    assert not gone.exists() and kept.exists() and len(new) == 1, cache_entries(cache)
    # the new entry, unused for 40 days, is used: its time is now's
    os.utime(new[0], (time.time() - 40 * day, time.time() - 40 * day))
    rc, err, _ = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0, err
    assert new[0].exists() and time.time() - new[0].stat().st_mtime < 600
    # and it was read, not written again (the same inode)
    ino = new[0].stat().st_ino
    rc, err, _ = decode(dec, split, "--debug-dir", split.zdir, env=env)
    assert rc == 0, err
    assert new[0].stat().st_ino == ino


def test_killed_decoder_leaves_no_temporary_file(tree, split, tmp_path):
    """A decoder killed while it writes a cache entry (stopped by gdb at
    dbg_cache_publish: inflated, not yet linked into place) leaves nothing in
    the cache: the entry is written unnamed (O_TMPFILE).  A named temporary
    file an hour old (a decoder killed while writing one, before O_TMPFILE) is
    removed when the next entry is written; a younger one may be another
    decoder's, being written, and stays."""
    dec, cache = tree.tool("funtrace-decode"), tmp_path / "cache"
    (cache / "debug").mkdir(parents=True)
    listing = tmp_path / "listing"
    env = dict(os.environ, FUNTRACE_CACHE_DIR=str(cache))
    r = subprocess.run(["gdb", "-batch", "-nx", "-ex", "break dbg_cache_publish", "-ex", "run",
                        "-ex", f"shell ls -A {cache / 'debug'} > {listing}", "-ex", "kill",
                        "--args", str(dec), "--json", str(tmp_path / "k.json"), "--debug-dir", str(split.zdir),
                        str(split.raw)], env=env, capture_output=True, text=True, timeout=300)
    assert "Breakpoint 1, dbg_cache_publish" in r.stdout, r.stdout + r.stderr
    assert listing.read_text() == "" and not list((cache / "debug").iterdir())
    old, young = (cache / "debug" / f"{split.bid}-0.debug.tmp.{x}" for x in ("AAAAAA", "BBBBBB"))
    for f in (old, young):
        f.write_bytes(b"x" * 4096)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    rc, err, _ = decode(dec, split, "--debug-dir", split.zdir, env={"FUNTRACE_CACHE_DIR": str(cache)})
    assert rc == 0, err
    assert not old.exists() and young.exists() and len(cache_entries(cache)) == 1
