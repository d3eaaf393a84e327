"""coreextract reading a core once, in order (a core_pattern pipe, `-`, a
compressed core, --one-pass): no temporary file, memory that grows with the
rings and stacks and not with the core, the same raw as from the core file --
and, where one pass cannot get something, a message that says so.

Every core here is a real one made by the kernel (tests/progs/ce_crash.c,
exc_cases.cc)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rawfile
from conftest import require_tools, run_tool
from dec_util import decode, forest, merge_gens
from test_coreextract import crash, extract, gdb_backtraces, stderr_lines

RAWF_PARTIAL = 1


@pytest.fixture(scope="module")
def crashprog(compiled):
    return compiled("ce_crash.c", "pg")


def ce(tree):
    return str(tree.tool("coreextract"))


def through_pipe(tree, core, *args, env=None, cmd_prefix=""):
    """`cat core | coreextract ARGS -`: a real pipe, as from core_pattern.  The
    pipe handler adds the scheduling events it captures before reading the core
    (a SCHEDEVT chunk, test_sched.py): left out of .stdout here."""
    full = dict(os.environ)
    if env:
        full.update(env)
    r = subprocess.run(f"{cmd_prefix}cat {core} | {ce(tree)} {' '.join(map(str, args))} -", shell=True,
                       capture_output=True, env=full, timeout=300)
    if r.stdout:
        r.stdout = rawfile.without_chunks(r.stdout, {"SCHEDEVT"})
    return r


SCENARIOS = {
    "segv-thread": (["segv-thread"], None),
    "many-threads": (["many", "6"], None),
    "wrapped-rings": (["loop", "40000"], None),          # 80k entries: the 1 MiB ring wraps
    "exited-thread": (["exited"], None),
    "sampled": (["loop", "3000"], {"FUNTRACE_TIME": "sampled"}),
    "small-rings": (["many", "3"], {"FUNTRACE_BUF": "4096"}),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_one_pass_gives_the_raw_of_the_file(tree, crashprog, run_crash, tmp_path, scenario):
    require_tools(tree, "coreextract")
    args, env = SCENARIOS[scenario]
    run = crash(run_crash, crashprog, *args, env=env)
    ref, raw = extract(tree, run.core)
    assert ref.returncode == 0, ref.stderr
    assert raw.threads and any(t.n_entries for t in raw.threads)
    p = through_pipe(tree, run.core, "-v")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ref.stdout
    err = p.stderr.decode()
    assert "input is stdin, read once" in err, err
    one = run_tool([ce(tree), "--one-pass", run.core], text=False)
    assert one.returncode == 0 and one.stdout == ref.stdout, one.stderr


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_landing_pad_markers_are_ring_memory(tree, compiled, run_crash, time):
    """A C++ program whose exceptions ran destructors in landing pads: its
    ring holds their markers (catch entries at FT_LANDING_PAD_ADDR, not
    code), and the pages that hold them are still taken for ring memory
    when the rings go by before the registry: one pass gives the raw of the
    file, and the decoder nests the destructors under their own frames."""
    require_tools(tree, "coreextract")
    exe = compiled("exc_cases.cc", "pg")
    env = {"FUNTRACE_TIME": "sampled"} if time == "sampled" else None
    run = crash(run_crash, exe, "cleanups", "crash", env=env)
    ref, raw = extract(tree, run.core)
    assert ref.returncode == 0, ref.stderr
    one = run_tool([ce(tree), "--one-pass", run.core], text=False)
    assert one.returncode == 0, one.stderr
    assert one.stdout == ref.stdout
    path = run.core.parent / "one.raw"
    path.write_bytes(one.stdout)
    res, tr = decode(tree, path, json_out=run.core.parent / "one.json")
    assert res.returncode == 0, res.stderr
    parents = []

    def walk(nodes, parent):
        for n in nodes:
            if n.n == "Guard::~Guard":
                parents.append(parent)
            walk(n.children, n.n)
    walk(merge_gens(forest(tr.slices[run.pid])), None)
    assert parents == ["guard_inner", "guard_outer"] * 3, parents


def test_plugin_library_one_pass(tree, crashprog, compiled, run_crash):
    """A crash inside a dlopen'ed instrumented library: same raw through a pipe."""
    require_tools(tree, "coreextract")
    lib = compiled("ce_plugin.c", "pg", extra=["-shared", "-fPIC"], tag="so")
    run = crash(run_crash, crashprog, "plugin", lib)
    ref, _ = extract(tree, run.core)
    assert ref.returncode == 0, ref.stderr
    p = through_pipe(tree, run.core, "-v")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ref.stdout, p.stderr


@pytest.mark.parametrize("comp", ["zstd", "lz4", "xz"])
def test_compressed_cores_are_read_once(tree, crashprog, run_crash, tmp_path, comp):
    """Compressed cores are decompressed on the fly, from a file or a pipe,
    with no temporary file: TMPDIR points to a directory that does not exist."""
    require_tools(tree, "coreextract")
    if shutil.which(comp) is None:
        pytest.skip(f"{comp} not installed")
    run = crash(run_crash, crashprog, "many", "4")
    ref, _ = extract(tree, run.core)
    z = tmp_path / f"core.{comp}"
    cmd = {"zstd": ["zstd", "-q", "-1", "-c"], "lz4": ["lz4", "-q", "-c"], "xz": ["xz", "-T1", "-0", "-c"]}[comp]
    with open(z, "wb") as f:
        subprocess.run(cmd + [str(run.core)], stdout=f, check=True)
    env = {"TMPDIR": str(tmp_path / "no-such-dir")}
    r = run_tool([ce(tree), "-v", z], text=False, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ref.stdout
    assert f"input is {comp}, read once" in r.stderr.decode()
    p = through_pipe(tree, z, env=env)
    assert p.returncode == 0 and p.stdout == ref.stdout, p.stderr


def test_memory_does_not_grow_with_the_core(tree, crashprog, run_crash, tmp_path):
    """512 MiB of heap data through a pipe: coreextract's peak RSS stays far below
    the core's size (what it keeps is the rings, the stacks, a few pages)."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "heap", "512")
    size = run.core.stat().st_size
    assert size > 512 << 20
    ref, _ = extract(tree, run.core)
    out = tmp_path / "out.raw"
    # peak RSS of coreextract alone: forked by a fresh, small interpreter (a child
    # forked from this big pytest process would count its pages in ru_maxrss)
    measure = ("import os, sys\n"
               "pid = os.fork()\n"
               "if pid == 0:\n"
               "    fd = os.open(sys.argv[1], os.O_RDONLY)\n"
               "    os.dup2(fd, 0)\n"
               "    os.execv(sys.argv[2], sys.argv[2:])\n"
               "_, status, usage = os.wait4(pid, 0)\n"
               "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cat = subprocess.Popen(f"cat {run.core} > {fifo}", shell=True)
    m = subprocess.run([sys.executable, "-c", measure, str(fifo), ce(tree), "-o", str(out), "-"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TMPDIR=str(tmp_path / "no-such-dir")))
    cat.wait()
    rc, maxrss = map(int, m.stdout.split())
    assert rc == 0, m.stderr
    assert rawfile.without_chunks(out.read_bytes(), {"SCHEDEVT"}) == ref.stdout
    assert maxrss < 64 * 1024, f"peak RSS {maxrss} KiB for a {size >> 20} MiB core"


def test_truncated_stream_is_partial_and_says_where(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "segv-thread")
    data = run.core.read_bytes()
    cut = tmp_path / "core.cut"
    cut.write_bytes(data[:len(data) * 3 // 5])
    f, _ = extract(tree, cut)
    p = through_pipe(tree, cut)
    assert f.returncode == p.returncode, (f.stderr, p.stderr)
    assert p.returncode in (0, 3)
    assert f"truncated at {len(data) * 3 // 5} of {len(data)} bytes" in p.stderr.decode()
    if p.returncode == 3:
        assert rawfile.parse(p.stdout).header["flags"] & RAWF_PARTIAL


def test_cut_before_the_root_is_unusable_not_empty(tree, crashprog, run_crash, tmp_path):
    """A core cut before the root's memory: exit 2 (not 1, "holds no trace"),
    saying the core is truncated and what is missing -- from a file and a pipe."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "abort")
    cut = tmp_path / "core.cut"
    cut.write_bytes(run.core.read_bytes()[:16384])
    for r in (run_tool([ce(tree), "-o", tmp_path / "x.raw", cut]), through_pipe(tree, cut)):
        err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode()
        assert r.returncode == 2, err
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1, lines
        assert "core truncated at 16384 of" in lines[0] and "before the funtrace trace" in lines[0], lines
        assert "funtrace_root" in lines[0] and "root memory not readable" in lines[0], lines
    assert not (tmp_path / "x.raw").exists()


def test_rings_beyond_keep_max_are_reported(tree, crashprog, run_crash):
    """The rings come before the registry that says where they are: they are kept
    because they look like rings, up to --keep-max.  Past it, what the trace needed
    is reported missing, with the way out -- never made up."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "many", "6")
    ref, full = extract(tree, run.core)
    p = through_pipe(tree, run.core, "--keep-max", "4K")
    assert p.returncode == 3, p.stderr
    lines = stderr_lines(p)
    assert len(lines) == 1, lines
    assert "ring memory of" in lines[0] and "read in one pass" in lines[0] and "--keep-max" in lines[0], lines
    raw = rawfile.parse(p.stdout)
    assert raw.ended and raw.header["flags"] & RAWF_PARTIAL
    kept = [t for t in raw.threads if t.entries]
    assert all(t.entries == full.thread(t.tid).entries for t in kept)


def test_registry_before_the_root_is_reported(tree, crashprog, run_crash):
    """Started through the dynamic linker (`ld.so ./prog`), the executable -- and
    the root in it -- is mapped above the registry, which then streams by before
    the root says what it is: one pass cannot have it.  The file gives the whole
    trace; the pipe says what it could not keep and what to do."""
    require_tools(tree, "coreextract")
    ldso = next((p for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
                 if Path(p).exists()), None)
    if not ldso:
        pytest.skip("no ld-linux-x86-64.so.2")
    run = crash(run_crash, ldso, crashprog, "many", "3")
    ref, full = extract(tree, run.core)
    assert ref.returncode == 0 and len(full.threads) >= 4, ref.stderr
    p = through_pipe(tree, run.core)
    assert p.returncode == 3, p.stderr
    lines = stderr_lines(p)
    assert len(lines) == 1, lines
    assert "thread registry not readable" in lines[0], lines
    assert "read in one pass" in lines[0] and "as a file" in lines[0], lines


def test_slim_core(tree, crashprog, run_crash, tmp_path):
    """--slim-core: a core of what the one-pass read kept -- much smaller, the same
    raw, and gdb shows the same backtraces on it."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "heap", "64")
    ref, _ = extract(tree, run.core)
    slim = tmp_path / "slim.core"
    r = run_tool([ce(tree), "--slim-core", slim, run.core], text=False)
    assert r.returncode == 0 and r.stdout == ref.stdout, r.stderr
    # on disk: zero pages are holes (the ring pool's untouched address space,
    # which follows the rings, is kept as zeros: its apparent size stays)
    assert slim.stat().st_size <= run.core.stat().st_size
    assert slim.stat().st_blocks < run.core.stat().st_blocks // 8
    again, _ = extract(tree, slim)
    assert again.returncode == 0 and again.stdout == ref.stdout
    assert gdb_backtraces(crashprog, slim) == gdb_backtraces(crashprog, run.core)
