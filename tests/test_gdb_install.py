"""gdb's `funtrace` command with no set-up: `make install` (and ./setup.sh) install the
extension, the reader library and the decoder, then a loader in gdb's system-wide
gdbinit directory, so that `gdb -batch -ex funtrace ./prog core` works exactly as
typed -- no -x, no -iex, no safe-path setting, no warning -- and no traced binary
carries a path of the build tree.

The first test installs into a private prefix and gdbinit directory (hermetic);
the last one is the fresh-machine check: it installs THIS tree into the real
places (PREFIX=/usr/local and gdb's own gdbinit directory) first."""
import filecmp
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import rawfile
from conftest import BUILD, ROOT, require_tools, run_program

SIGSEGV = 11
pytestmark = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")

# the installed files gdb uses, and what they are built from
GDB_FILES = {"share/funtrace/gdb/funtrace.py": BUILD / "share/funtrace/gdb/funtrace.py",
             "lib/libfuntrace_reader.so": BUILD / "lib/libfuntrace_reader.so",
             "bin/funtrace-decode": BUILD / "bin/funtrace-decode",
             "bin/funtrace-gcc": BUILD / "bin/funtrace-gcc",
             "lib/libfuntrace.a": BUILD / "lib/libfuntrace.a"}


def system_gdbinit_dir():
    out = subprocess.run(["gdb", "--configuration"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"--with-system-gdbinit-dir=(\S+)", out)
    return m.group(1) if m else None


def make_install(prefix, gdb_init_dir):
    r = subprocess.run(["make", "install", f"PREFIX={prefix}", f"GDB_INIT_DIR={gdb_init_dir}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"gdb: every gdb now has the funtrace command ({gdb_init_dir}/funtrace.py loads " in r.stdout
    for rel, built in GDB_FILES.items():
        assert filecmp.cmp(Path(prefix) / rel, built, shallow=False), f"{prefix}/{rel} is not this tree's {built}"
    return Path(gdb_init_dir) / "funtrace.py"


def plain_env(tmp_path):
    """No user gdbinit (an empty HOME, as on a fresh machine) and no debuginfod."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return dict(os.environ, HOME=str(home), DEBUGINFOD_URLS="")


def crash_outside_the_tree(cc, tmp_path):
    """examples/crash.c built from a copy outside the tree with `cc`, crashed: (exe, core)."""
    d = tmp_path / "prog"
    d.mkdir()
    shutil.copy(ROOT / "examples" / "crash.c", d)
    subprocess.run([str(cc), "-O1", "-g", "-pthread", "-o", "crash", "crash.c"], cwd=d, check=True, timeout=300)
    r = run_program([d / "crash"], d / "run")
    assert r.core is not None and r.signal == SIGSEGV, r.stderr[-2000:]
    return d / "crash", r.core


def test_install_into_a_prefix(tree, tmp_path):
    """make install PREFIX=P GDB_INIT_DIR=D: the loader in D loads P's extension, which
    uses P's library and decoder (not the build tree's)."""
    require_tools(tree, "funtrace-decode")
    prefix, init = tmp_path / "prefix", tmp_path / "gdbinit.d"
    stub = make_install(prefix, init)
    assert str(prefix / "share/funtrace/gdb/funtrace.py") in stub.read_text()
    assert [p.name for p in init.iterdir()] == ["funtrace.py"], "no temporary file left in gdb's directory"
    exe, core = crash_outside_the_tree(prefix / "bin" / "funtrace-gcc", tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    maps = work / "maps.txt"
    g = subprocess.run(["gdb", "-batch", "-nx", "-x", str(stub), "-ex", "funtrace",
                        "-ex", f"python open({str(maps)!r}, 'w').write(open('/proc/self/maps').read())",
                        str(exe), str(core)], cwd=work, capture_output=True, text=True, timeout=120,
                       env=plain_env(tmp_path))
    assert g.returncode == 0, g.stderr[-3000:]
    raw = rawfile.parse(work / "funtrace.raw")
    assert raw.ended and {t.name for t in raw.threads} >= {"loader", "hasher"}
    loaded = [ln.split()[-1] for ln in maps.read_text().splitlines() if "libfuntrace_reader" in ln]
    assert loaded and set(loaded) == {str(prefix / "lib/libfuntrace_reader.so")}, loaded


@pytest.mark.root
def test_fresh_machine_gdb_funtrace_works_as_typed(tree, tmp_path, spawn, compiled):
    """After `make install` (what ./setup.sh runs last), from a directory elsewhere:
    `gdb -batch -ex funtrace ./prog core`, `gdb -batch -ex 'funtrace tail 20' ./prog core`
    and `gdb -p PID -batch -ex funtrace`, with no extra flags, write and show the
    trace; no auto-load warning; the traced binary holds no path of this tree."""
    require_tools(tree, "funtrace-decode")
    init = system_gdbinit_dir()
    if not init:
        pytest.skip("this gdb has no system-wide gdbinit directory")
    make_install("/usr/local", init)
    exe, core = crash_outside_the_tree("/usr/local/bin/funtrace-gcc", tmp_path)
    strings = subprocess.run(["strings", "-a", str(exe)], capture_output=True, text=True, check=True).stdout
    assert str(ROOT) not in strings, "the traced binary carries a path of the build tree"
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = plain_env(tmp_path)

    g = subprocess.run(["gdb", "-batch", "-ex", "funtrace", str(exe), str(core)], cwd=work,
                       capture_output=True, text=True, timeout=120, env=env)
    assert g.returncode == 0, g.stderr[-3000:]
    assert "auto-load" not in g.stderr and "safe-path" not in g.stderr, g.stderr
    assert "funtrace: wrote funtrace.raw: " in g.stdout
    d = subprocess.run(["/usr/local/bin/funtrace-decode", "--text", "-n", "20", "funtrace.raw"], cwd=work,
                       capture_output=True, text=True, timeout=120)
    assert d.returncode == 0 and '"loader" [crashed]' in d.stdout, d.stderr

    g = subprocess.run(["gdb", "-batch", "-ex", "funtrace tail 20", str(exe), str(core)], cwd=work,
                       capture_output=True, text=True, timeout=120, env=env)
    assert g.returncode == 0, g.stderr[-3000:]
    assert d.stdout in g.stdout, "funtrace tail 20 prints the decoder's text view"

    live = compiled("gdb_wait.c")
    p = spawn([live], name="attached")
    assert p.stdout.readline().strip() == b"ready"
    g = subprocess.run(["gdb", "-p", str(p.pid), "-batch", "-ex", "funtrace"], cwd=work,
                       capture_output=True, text=True, timeout=120, env=env)
    assert g.returncode == 0, g.stderr[-3000:]
    raw = rawfile.parse(work / "funtrace.raw")
    assert raw.header["pid"] == p.pid and raw.ended
    assert p.poll() is None, "gdb detached: the process goes on"
