"""Shared fixtures for the funtrace test suite.

Run with:  /usr/bin/python3 -m pytest tests

* the whole tree is built once per session (`make -j2`), unless FUNTRACE_NO_BUILD=1;
* every program that may crash runs in its own temporary directory with
  RLIMIT_CORE raised, and its `core` (core_pattern is `core`) is collected;
* tools are run with a timeout and their exit code / output are returned.
"""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent

# Every `make install` the tests run (also through ./setup.sh) puts gdb's loader
# into this directory, not into gdb's system-wide gdbinit directory: only
# tests/test_gdb_install.py installs that one, on purpose (gdb/build.mk).
os.environ.setdefault("GDB_INIT_DIR", os.path.join(tempfile.gettempdir(), f"funtrace-tests-gdbinit-{os.getpid()}"))
BUILD = ROOT / "build"
BIN = BUILD / "bin"
LIB = BUILD / "lib"
EXAMPLES = BUILD / "examples"
PROGS_SRC = ROOT / "tests" / "progs"


def pytest_configure(config):
    for name, doc in [
        ("root", "needs root"),
        ("cgroup_v1", "needs the cgroup v1 memory controller at /sys/fs/cgroup/memory (root)"),
        ("cgroup_v2", "needs cgroup v2 at /sys/fs/cgroup/unified or /sys/fs/cgroup (root)"),
        ("psi", "needs PSI (memory.pressure) on cgroup v2"),
        ("clang", "needs clang"),
        ("slow", "the slow tier: robustness sweeps (fuzzing, sanitized builds over many inputs, randomly "
                 "corrupted cores), bench/run --quick, the PN_XNUM core; left out of the default run unless "
                 "FUNTRACE_SLOW=1 or -m names it (.ci/run runs it after the default suite: make test-slow)"),
    ]:
        config.addinivalue_line("markers", f"{name}: {doc}")
    # always list skipped tests with their reason (-rs) in the summary
    rc = getattr(config.option, "reportchars", None)
    if isinstance(rc, str) and "s" not in rc and "a" not in rc.lower():
        config.option.reportchars = rc + "s"


def _cgroup_v1_memory() -> Optional[Path]:
    p = Path("/sys/fs/cgroup/memory")
    return p if (p / "memory.limit_in_bytes").exists() else None


def _cgroup_v2() -> Optional[Path]:
    for p in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (p / "cgroup.controllers").exists():
            return p
    return None


def _slow_tier_wanted(config) -> bool:
    return os.environ.get("FUNTRACE_SLOW") == "1" or "slow" in (getattr(config.option, "markexpr", "") or "")


def pytest_collection_modifyitems(config, items):
    if not _slow_tier_wanted(config):
        slow = [i for i in items if i.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [i for i in items if not i.get_closest_marker("slow")]
    is_root = os.geteuid() == 0
    v1 = _cgroup_v1_memory()
    v2 = _cgroup_v2()
    psi = v2 is not None and (v2 / "memory.pressure").exists() or Path("/proc/pressure/memory").exists()
    reasons = {
        "root": None if is_root else "not running as root",
        "cgroup_v1": None if (is_root and v1) else "no writable cgroup v1 memory controller (needs root and /sys/fs/cgroup/memory)",
        "cgroup_v2": None if (is_root and v2) else "no writable cgroup v2 hierarchy (needs root and /sys/fs/cgroup/unified)",
        "psi": None if (is_root and psi) else "PSI not available (needs root and memory.pressure)",
        "clang": None if shutil.which("clang") else "clang is not installed",
    }
    for item in items:
        for name, why in reasons.items():
            if why and item.get_closest_marker(name):
                item.add_marker(pytest.mark.skip(reason=why))


# --------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------

@dataclass
class Tree:
    root: Path = ROOT
    build: Path = BUILD
    bin: Path = BIN
    lib: Path = LIB
    examples: Path = EXAMPLES

    def tool(self, name: str) -> Path:
        return self.bin / name

    def example(self, name: str) -> Path:
        return self.examples / name


@pytest.fixture(scope="session", autouse=True)
def debug_cache(tmp_path_factory):
    """The decoders of a session share one cache of inflated debug files
    (decoder/dbgcache.c), made for it: never the user's own."""
    d = tmp_path_factory.mktemp("dbgcache")
    os.environ["FUNTRACE_CACHE_DIR"] = str(d)
    return d


@pytest.fixture(scope="session")
def tree() -> Tree:
    """The built tree (built once per session)."""
    if os.environ.get("FUNTRACE_NO_BUILD") != "1":
        r = subprocess.run(["make", "-j2"], cwd=ROOT, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            pytest.fail("make failed:\n" + r.stdout[-4000:] + r.stderr[-4000:])
    return Tree()


# --------------------------------------------------------------------------
# running programs
# --------------------------------------------------------------------------

def _raise_core_limit():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


@dataclass
class Run:
    args: list
    dir: Path
    returncode: int
    stdout: str
    stderr: str
    core: Optional[Path] = None
    pid: Optional[int] = None

    @property
    def signal(self) -> Optional[int]:
        return -self.returncode if self.returncode < 0 else None


def run_program(args, cwd: Path, env=None, timeout=60, want_core=True, input=None) -> Run:
    """Run a program in cwd with RLIMIT_CORE raised; collect ./core if written."""
    cwd = Path(cwd)
    cwd.mkdir(parents=True, exist_ok=True)
    core = cwd / "core"
    if core.exists():
        core.unlink()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.Popen([str(a) for a in args], cwd=cwd, env=full_env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         preexec_fn=_raise_core_limit if want_core else None)
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"{args} timed out after {timeout}s\nstdout:{out[-2000:]}\nstderr:{err[-2000:]}")
    # the kernel finishes writing the core before the parent sees the exit
    return Run(args=list(args), dir=cwd, returncode=p.returncode, stdout=out, stderr=err,
               core=core if core.exists() else None, pid=p.pid)


@pytest.fixture
def run_crash(tmp_path):
    """run_crash(args, env=None, name='run') -> Run, in tmp_path/name; asserts a core was dumped."""
    def _run(args, env=None, name="run", timeout=60, expect_core=True):
        r = run_program(args, tmp_path / name, env=env, timeout=timeout)
        # a setting the runtime refused leaves the test running with its default
        # (a "16K" ring was 1 MiB before sizes took suffixes): never silently
        refused = [ln for ln in r.stderr.splitlines() if ln.startswith("funtrace: ")
                   and any(w in ln for w in ("invalid", "must be", "ignored"))
                   and any(k in ln for k in (env or {}) if k.startswith("FUNTRACE_"))]
        assert not refused, refused
        if expect_core:
            assert r.core is not None, (
                f"no core from {args} (rc={r.returncode})\nstdout:{r.stdout[-2000:]}\nstderr:{r.stderr[-2000:]}")
        return r
    return _run


def run_tool(args, timeout=120, env=None, cwd=None, input=None, text=True) -> subprocess.CompletedProcess:
    """Run one of our tools; returns CompletedProcess (never raises on non-zero exit)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([str(a) for a in args], capture_output=True, timeout=timeout, env=full_env,
                          cwd=cwd, input=input, text=text)


@pytest.fixture
def tool(tree):
    """tool('coreextract', args...) -> CompletedProcess (bytes stdout when text=False)."""
    def _tool(name, *args, **kw):
        return run_tool([tree.tool(name), *args], **kw)
    return _tool


# --------------------------------------------------------------------------
# compiling small test programs with the compiler wrappers
# --------------------------------------------------------------------------

INSTR_MODES = ["pg", "finstr", "clang", "xray"]
CLANG_MODES = ("clang", "xray")


def compile_prog(tree: Tree, src, out: Path, mode: str = "pg", extra=None, cxx=None) -> Path:
    """Compile tests/progs/<src> (or an absolute path) with our wrappers.

    mode: 'pg' (funtrace-gcc, -pg -mfentry -minstrument-return=call),
          'finstr' (funtrace-gcc with FUNTRACE_INSTR=finstr),
          'clang' (funtrace-clang, -finstrument-functions-after-inlining),
          'xray' (funtrace-clang with FUNTRACE_INSTR=xray, every function:
          -fxray-instruction-threshold=1),
          'none' (plain gcc, no runtime at all)."""
    src = Path(src)
    if not src.is_absolute():
        src = PROGS_SRC / src
    if cxx is None:
        cxx = src.suffix in (".cc", ".cpp", ".cxx")
    env = dict(os.environ)
    if mode == "pg":
        cc = tree.tool("funtrace-g++" if cxx else "funtrace-gcc")
    elif mode == "finstr":
        cc = tree.tool("funtrace-g++" if cxx else "funtrace-gcc")
        env["FUNTRACE_INSTR"] = "finstr"
    elif mode == "clang":
        cc = tree.tool("funtrace-clang++" if cxx else "funtrace-clang")
    elif mode == "xray":
        cc = tree.tool("funtrace-clang++" if cxx else "funtrace-clang")
        env["FUNTRACE_INSTR"] = "xray"
        extra = ["-fxray-instruction-threshold=1", *(extra or [])]
    elif mode == "none":
        cc = "g++" if cxx else "gcc"
    else:
        raise ValueError(mode)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(cc), "-O1", "-g", "-pthread", "-o", str(out), str(src), *(extra or [])]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"compile failed: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return out


@pytest.fixture(scope="session")
def progs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("progs")


@pytest.fixture(scope="session")
def compiled(tree, progs_dir):
    """compiled(src, mode='pg', extra=None, tag='') -> path; cached per session."""
    cache = {}

    def _compiled(src, mode="pg", extra=None, tag="", cxx=None):
        key = (str(src), mode, tuple(extra or ()), tag)
        if key not in cache:
            stem = Path(src).stem
            out = progs_dir / f"{stem}-{mode}{('-' + tag) if tag else ''}"
            cache[key] = compile_prog(tree, src, out, mode=mode, extra=extra, cxx=cxx)
        return cache[key]
    return _compiled


# --------------------------------------------------------------------------
# processes started by tests: always reaped
# --------------------------------------------------------------------------

@pytest.fixture
def spawn(tmp_path):
    """spawn(args, env=None, name='live') -> Popen running in its own dir; killed at teardown."""
    procs = []

    def _spawn(args, env=None, name="live", **kw):
        d = tmp_path / name
        d.mkdir(parents=True, exist_ok=True)
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        p = subprocess.Popen([str(a) for a in args], cwd=d, env=full_env,
                             stdout=kw.pop("stdout", subprocess.PIPE),
                             stderr=kw.pop("stderr", subprocess.PIPE),
                             stdin=subprocess.DEVNULL, **kw)
        p.dir = d
        procs.append(p)
        return p

    yield _spawn
    for p in procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            p.kill()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def wait_for(pred, timeout=10.0, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def rmdir_cgroup(d, timeout=20.0):
    """Remove the (empty) cgroup directory d made by a test.  The kernel may
    answer EBUSY for a moment after cgroup.procs reads empty: a task that has
    left the list keeps the group populated until its exit is fully released.
    Retried until the deadline; any other error, or EBUSY past it, is raised."""
    import errno
    deadline = time.time() + timeout
    while True:
        try:
            d.rmdir()
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.time() >= deadline:
                raise
        time.sleep(0.05)


# --------------------------------------------------------------------------
# symbols and addresses (for asserting which functions a trace holds)
# --------------------------------------------------------------------------

def elf_symbols(path) -> dict:
    """{name: (value, size)} of the defined function symbols of an ELF file (nm -S)."""
    r = subprocess.run(["nm", "-S", "--defined-only", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, f"nm {path}: {r.stderr}"
    syms = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            syms.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
    return syms


def elf_is_pie(path) -> bool:
    """True for ET_DYN (PIE executables and shared libraries)."""
    with open(path, "rb") as f:
        hdr = f.read(18)
    return int.from_bytes(hdr[16:18], "little") == 3


FT_MOD_STATE = {0: "free", 1: "loaded", 2: "unloaded"}


def raw_modules(raw) -> list:
    """[{bias, gen_loaded, gen_unloaded, state, path}] from the MODULES chunks of a rawfile.Raw
    (records laid out as struct ft_module: rawfile.abi())."""
    import rawfile
    size = rawfile.abi_struct("MODULE")[0]
    mods = []
    for payload in raw.modules:
        for off in range(0, len(payload) - size + 1, size):
            m = rawfile.unpack_record(payload, "MODULE", off)
            mods.append(dict(bias=m["bias"], gen_loaded=m["gen_loaded"], gen_unloaded=m["gen_unloaded"],
                             state=FT_MOD_STATE.get(m["state"], m["state"]),
                             path=m["path"].split(b"\0")[0].decode("utf-8", "replace")))
    return mods


def load_bias(raw, elf_path) -> int:
    """Where elf_path was loaded in the traced process (0 for a non-PIE executable).

    Taken from the MODULES chunk (the module whose path has the same file name),
    else from MAPPINGS (the offset-0 mapping of that file)."""
    elf_path = Path(elf_path)
    if not elf_is_pie(elf_path):
        return 0
    for m in raw_modules(raw):
        if m["path"] and Path(m["path"]).name == elf_path.name and m["state"] == "loaded":
            return m["bias"]
    for m in raw.mappings:
        if m["path"] and Path(m["path"]).name == elf_path.name and m["offset"] == 0:
            return m["start"]
    raise AssertionError(f"{elf_path.name} is in neither MODULES nor MAPPINGS of the trace")


def functions_in_trace(raw, elf_path, names, bias=None) -> dict:
    """{name: {tid: [Event, ...]}} for the events of every thread whose address falls
    inside one of the named functions of elf_path."""
    syms = elf_symbols(elf_path)
    if bias is None:
        bias = load_bias(raw, elf_path)
    ranges = {}
    for n in names:
        assert n in syms, f"{n} is not a function of {elf_path}"
        v, size = syms[n]
        ranges[n] = (bias + v, bias + v + max(size, 1))
    found = {n: {} for n in names}
    for t in raw.threads:
        for ev in t.events():
            for n, (lo, hi) in ranges.items():
                if lo <= ev.addr < hi:
                    found[n].setdefault(t.tid, []).append(ev)
    return found


def require_tools(tree, *names):
    """Fail the calling test if one of build/bin/<name> was not built: `make` must build every tool."""
    missing = [n for n in names if not tree.tool(n).exists()]
    if missing:
        pytest.fail("make did not build: " + ", ".join(f"build/bin/{n}" for n in missing))
