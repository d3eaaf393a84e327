"""What the fuzzers found and kept, replayed on every run (FUZZING.md).

coreextract/fuzz/seeds        the seed cores (coreextract/fuzz_seeds.sh: tiny real kernel cores)
coreextract/fuzz/sample       inputs the fuzzers made and kept because they reach new code:
                              mutated cores of every kind (a sample of the campaigns' corpora)
coreextract/fuzz/regressions  inputs that once crashed, hung or tripped a sanitizer (with a
                              note of what they did), fixed since

Each is run through coreextract (the normal and the ASan+UBSan build, as a file and in one
pass) and through the tree's gdb extension, whatever it is: a documented exit code, one line on
stderr when it fails, a complete raw when it succeeds -- never a crash, a hang, a sanitizer
report or a Python exception.  `make fuzz` itself is built and run briefly.
"""
import shutil
import subprocess
from pathlib import Path

import pytest

import rawfile
from conftest import BUILD, ROOT, require_tools

FUZZ = ROOT / "coreextract" / "fuzz"
GDB_EXT = BUILD / "share" / "funtrace" / "gdb" / "funtrace.py"


def inputs(*kinds):
    out = []
    for k in kinds:
        d = FUZZ / k
        if d.is_dir():
            out += sorted(p for p in d.iterdir() if p.is_file() and not p.name.endswith(".txt"))
    return out


ALL = inputs("seeds", "sample", "regressions")
FUZZED = inputs("sample", "regressions")


def test_the_kept_inputs_are_there():
    assert len(inputs("seeds")) >= 8
    assert len(inputs("sample")) >= 20, "the fuzzed sample is missing"
    assert all(p.stat().st_size <= 1 << 20 for p in ALL), "AFL++ takes inputs of 1 MiB at most"


def check_coreextract(binary, path, *args):
    r = subprocess.run([str(binary), *args, str(path)], capture_output=True, timeout=120)
    err = r.stderr.decode(errors="replace")
    # lines a terminal shows as they are: UTF-8, no control characters (a corrupt core's names)
    assert r.stderr.decode("utf-8", errors="strict") is not None
    assert not any(c < 0x20 and c != 0x0a for c in r.stderr), (path, r.stderr)
    assert "Sanitizer" not in err and "runtime error" not in err, (path, err)
    assert r.returncode in (0, 1, 2, 3), (path, r.returncode, err)
    lines = [l for l in err.splitlines() if l.strip()]
    if r.returncode:
        # one line: the failure; a warning line may precede it only with a trace (3)
        assert len(lines) == 1 or (r.returncode == 3 and all("warning" in l for l in lines[:-1])), (path, lines)
    if r.returncode in (0, 3):
        raw = rawfile.parse(r.stdout)
        assert raw.ended and bool(raw.header["flags"] & 1) == (r.returncode == 3), (path, r.returncode)
    else:
        assert r.stdout == b""
    return r


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name[:20]}")
def test_coreextract_on_kept_inputs(tree, path):
    require_tools(tree, "coreextract")
    a = check_coreextract(tree.tool("coreextract"), path)
    b = check_coreextract(tree.tool("coreextract"), path, "--one-pass")
    # the one-pass read gives the same answer, or a partial one that says why
    if a.returncode == 0 and b.returncode != 0:
        assert b.returncode == 3 and b"read in one pass" in b.stderr, (path, b.stderr)


@pytest.mark.slow
def test_sanitized_coreextract_on_kept_inputs(tree):
    from test_coreextract_robust import SAN_BIN
    r = subprocess.run(["make", "-j2", "SAN=1", "coreextract"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for path in ALL:
        check_coreextract(SAN_BIN, path)
        check_coreextract(SAN_BIN, path, "--one-pass")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_gdb_extension_on_fuzzed_cores(tree, tmp_path):
    """The gdb extension (whatever gdb/ holds) on the fuzzed cores: `funtrace save`
    succeeds with a complete raw, or fails with exit 1 and one `funtrace:` line --
    never a Python exception, a gdb internal error or a hang."""
    assert GDB_EXT.exists(), "make did not build the gdb extension"
    results = {}
    for path in FUZZED:
        out = tmp_path / "x.raw"
        if out.exists():
            out.unlink()
        r = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off",
                            "-ex", f"source {GDB_EXT}", "-ex", f"funtrace save {out}", "-c", str(path)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin", "DEBUGINFOD_URLS": "", "HOME": str(tmp_path)})
        both = r.stdout + r.stderr
        for bad in ("Traceback", "Python Exception", "internal-error", "internal problem"):
            assert bad not in both, (path, both[-3000:])
        assert r.returncode in (0, 1), (path, r.returncode, both[-3000:])
        ours = [l for l in r.stderr.splitlines() if l.startswith("funtrace:")]
        if r.returncode == 1:
            assert len(ours) == 1, (path, ours)
            assert not out.exists() and not list(tmp_path.glob("x.raw*")), path
        else:
            assert rawfile.parse(out.read_bytes()).ended, path
        results[path.name] = r.returncode
    # some of them gdb loads as cores (gdb-*): the extension really reads those
    assert sum(1 for rc in results.values() if rc == 0) >= 4, results


@pytest.mark.slow
@pytest.mark.clang
def test_make_fuzz_runs_both_engines(tree, tmp_path):
    """`make fuzz` builds the libFuzzer and the AFL++ harness and runs each over the
    seeds for FUZZ_TIME seconds, without finding a crash."""
    if shutil.which("afl-fuzz") is None:
        pytest.fail("afl++ is not installed (setup.sh installs it)")
    build = tmp_path / "build"
    r = subprocess.run(["make", "-j2", f"BUILD={build}", "fuzz", "FUZZ_TIME=3"], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)  # -j2: the two harnesses build side by side
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Done" in r.stderr and "execs_done" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    assert not list((build / "fuzz" / "libfuzzer-crashes").iterdir())
    assert not list((build / "fuzz" / "afl" / "default" / "crashes").glob("id*"))


def test_seed_script_makes_small_real_cores(tree, tmp_path):
    """coreextract/fuzz_seeds.sh still makes the seeds: real kernel cores, slimmed
    under AFL++'s 1 MiB limit, every one of them extractable."""
    require_tools(tree, "coreextract")
    r = subprocess.run([str(ROOT / "coreextract" / "fuzz_seeds.sh"), str(tmp_path / "seeds")], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    made = sorted((tmp_path / "seeds").iterdir())
    assert {p.name for p in made} == {p.name for p in inputs("seeds")}
    for p in made:
        assert p.stat().st_size <= 1 << 20, p
        c = check_coreextract(tree.tool("coreextract"), p)
        assert c.returncode == (3 if p.name == "truncated.core" else 0), (p, c.stderr)
