"""Runtime API compatibility with the original funtrace's funtrace.h: a
program using every call and both macros builds unchanged as C and C++
(-Wall -Wextra -Werror), and the calls behave as documented there
(README "Reference: runtime")."""
import pytest

from conftest import run_program, run_tool
from test_runtime_helpers import Syms, main_thread, only_snapshot, sequence, snapshots

STRICT = ["-Wall", "-Wextra", "-Werror"]
ALIVE, IGNORED = 1, 4


def build(compiled, mode="pg", cxx=False):
    # rt_compat.cc is rt_compat.c as C++: the header must give the calls C
    # linkage there, or the link against the C runtime fails
    return compiled("rt_compat.cc" if cxx else "rt_compat.c", mode, extra=STRICT)


def run(prog, tmp_path, *args, name="run"):
    r = run_program([prog, *args], tmp_path / name, want_core=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.mark.parametrize("mode,cxx", [("pg", False), ("pg", True), ("finstr", True),
                                      pytest.param("clang", False, marks=pytest.mark.clang),
                                      pytest.param("clang", True, marks=pytest.mark.clang)])
def test_original_program_builds_and_runs(compiled, tmp_path, mode, cxx):
    """Every call of the original API, NOFUNTRACE and DOFUNTRACE, as C and C++;
    free(NULL) is a no-op; writing to an unwritable path says so in one line
    and does not crash; the age snapshot (age in ticks) holds recent calls."""
    prog = build(compiled, mode, cxx)
    r = run(prog, tmp_path, "api")
    hz = int(r.stdout.split("hz=")[1].split()[0])
    assert 5e8 < hz < 1e10
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert err == ["funtrace: cannot open snapshot file: /nonexistent-dir/x.raw: No such file or directory"], r.stderr
    syms = Syms(prog)
    names = {"never_traced", "always_traced"}
    for f in ("full.raw", "age.raw"):
        raw = only_snapshot(r.dir / f)
        seq = sequence(raw, main_thread(raw), syms, keep=names)
        assert seq == [("always_traced", "call"), ("always_traced", "ret")], (f, seq)
    assert not (r.dir / "x.raw").exists()
    # funtrace_pause_and_write_current_snapshot() appended one trace
    assert len(snapshots(r.dir / "funtrace.raw")) == 1


def test_samples_appended_decode_one_by_one(tree, compiled, tmp_path):
    """Three funtrace_pause_and_write_current_snapshot() calls append three
    traces to ./funtrace.raw; `funtrace-decode --sample N` reads each one."""
    prog = build(compiled)
    r = run(prog, tmp_path, "samples")
    raw = r.dir / "funtrace.raw"
    assert len(snapshots(raw)) == 3
    for n in range(3):
        d = run_tool([tree.tool("funtrace-decode"), "--sample", str(n), "--text", "-n", "50", str(raw)])
        assert d.returncode == 0, d.stderr
        assert f"mark{n}" in d.stdout, d.stdout
        assert f"mark{n + 1}" not in d.stdout, d.stdout
    d = run_tool([tree.tool("funtrace-decode"), "--sample", "3", "--summary", str(raw)])
    assert d.returncode == 2 and len(d.stderr.strip().splitlines()) == 1, d.stderr


def test_snapshot_leaves_untouched_ring_pages_alone(compiled, tmp_path):
    """A snapshot reads the rings through process_vm_readv, which faults in every page it
    reads: a 64 MiB ring holding 1000 calls would become 64 MiB of the process's memory
    the moment it is saved (at a PSI trigger, just when memory is short).  The pages
    never written (/proc/self/pagemap) are taken as zeros instead: the process's
    resident memory stays put, and the snapshot holds every call."""
    prog = compiled("snap_rss.c", "pg")
    r = run_program([prog, "1000"], tmp_path / "run", env={"FUNTRACE_BUF": str(64 << 20)}, want_core=False)
    assert r.returncode == 0, r.stdout + r.stderr
    _, before, after = r.stdout.split()
    assert int(after) - int(before) < 4096, r.stdout  # without pagemap: +64 MiB
    raw = only_snapshot(r.dir / "funtrace.raw")
    (t,) = [t for t in raw.threads if t.entries]
    assert t.ring_size == 64 << 20
    work = sequence(raw, t, Syms(prog), keep={"rss_leaf"})
    assert work == [("rss_leaf", "call"), ("rss_leaf", "ret")] * 1000


@pytest.mark.parametrize("log,state,size", [(-1, IGNORED, 0), (0, IGNORED, 0), (4, IGNORED, 0),
                                            (5, ALIVE, 32), (6, ALIVE, 64), (11, ALIVE, 2048),
                                            (16, ALIVE, 65536),
                                            (31, ALIVE, 1 << 30), (1000, ALIVE, 1 << 30)])
def test_set_thread_log_buf_size(compiled, tmp_path, log, state, size):
    """log < 5 = funtrace_ignore_this_thread(); otherwise the ring is 2^log
    bytes, clamped to 2^5 .. 2^30 (like the original funtrace, whose test asks
    for 2^5 and 2^9): a 32-byte ring holds 4 entries and still records."""
    prog = build(compiled)
    r = run(prog, tmp_path, "log", str(log))
    raw = only_snapshot(r.dir / "funtrace.raw")
    syms = Syms(prog)
    sized = [t for t in raw.threads if t.name == "sized" and t.state in (ALIVE, IGNORED)]
    assert len(sized) == 1, [(t.name, t.state) for t in raw.threads]
    t = sized[0]
    assert t.state == state
    work = sequence(raw, t, syms, keep={"sized_work"})
    if state == IGNORED:
        assert work == []
    else:
        assert t.ring_size == size
        assert len(t.items) <= size // 8 and t.entries
        if work and work[0][1] == "ret":  # a wrapped ring may begin with a return
            work = work[1:]
        calls = len(work) // 2
        assert work[:2 * calls] == [("sized_work", "call"), ("sized_work", "ret")] * calls
        assert calls == 1000 if size >= 65536 else calls < size // 16
        if size >= 2048:
            assert calls > 0


def test_disable_enable_from_another_thread(tree, compiled, tmp_path):
    """20000 disable/enable pairs from one thread while 4 threads make calls:
    no crash, every ring stays consistent (calls and returns alternate) and
    records again after the last enable."""
    prog = build(compiled)
    r = run(prog, tmp_path, "toggle")
    raw = only_snapshot(r.dir / "funtrace.raw")
    syms = Syms(prog)
    workers = [t for t in raw.threads if t.state == ALIVE and t is not main_thread(raw)
               and sequence(raw, t, syms, keep={"toggle_work", "after_toggle"})]
    assert len(workers) == 4
    for t in workers:
        # disabling drops events (a call may lose its return), but every
        # recorded event is a whole, known one, in time order
        seq = sequence(raw, t, syms)
        assert len(seq) == len(t.events()) > 2
        assert {n for n, _ in seq} <= {"toggle_work", "after_toggle", "worker"}, set(seq)
        assert seq[-2:] == [("after_toggle", "call"), ("after_toggle", "ret")]
        tscs = [e.tsc for e in t.events()]
        assert tscs == sorted(tscs)
    d = run_tool([tree.tool("funtrace-decode"), "--summary", str(r.dir / "funtrace.raw")])
    assert d.returncode == 0, d.stderr
    assert "problems:    none" in d.stdout, d.stdout


def test_x_language_option_does_not_apply_to_runtime(tree, tmp_path):
    """`funtrace-g++ -x c++ prog.c` (one-step build) links: the wrapper ends
    the -x before it adds libfuntrace.a."""
    import subprocess
    from conftest import PROGS_SRC
    out = tmp_path / "p"
    r = subprocess.run([str(tree.tool("funtrace-g++")), "-O1", "-pthread", *STRICT, "-x", "c++",
                        str(PROGS_SRC / "rt_compat.c"), "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "_Z13always_tracedv" in subprocess.run(["nm", str(out)], capture_output=True, text=True).stdout
    assert run(out, tmp_path, "samples").returncode == 0
