"""coreextract --pid: the trace out of a live process (running, stopped, frozen),
without stopping it; --stacks stops each thread briefly with ptrace."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import rawfile
from conftest import load_bias, require_tools, rmdir_cgroup
from test_coreextract import Syms, event_names, stack_names, stderr_lines

SRC_LIVE = 2


@pytest.fixture(scope="module")
def crashprog(compiled):
    return compiled("ce_crash.c", "pg")


def start(spawn, prog, *args, env=None):
    p = spawn([prog, *args], env=env)
    line = p.stdout.readline()
    assert line.strip() == b"ready", line
    time.sleep(0.05)
    return p


def live(tree, pid, *args, timeout=60):
    r = subprocess.run([str(tree.tool("coreextract")), *args, "--pid", str(pid)], capture_output=True,
                       timeout=timeout)
    return r, (rawfile.parse(r.stdout) if r.stdout else None)


def proc_state(pid):
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


def ticks(raw, syms):
    return sum(n == "call ce_live_tick" for t in raw.threads for n in event_names(t, syms))


def test_live_running_process(tree, crashprog, spawn):
    require_tools(tree, "coreextract")
    p = start(spawn, crashprog, "live", "4")
    r, raw = live(tree, p.pid, "-v")
    assert r.returncode == 0, r.stderr
    assert "root found by symbol" in r.stderr.decode()
    assert raw.ended and raw.header["source"] == SRC_LIVE and raw.header["pid"] == p.pid
    assert raw.header["taken_tsc"] > 0 and raw.siginfo is None and raw.stacks == []
    assert any(m["path"] == str(crashprog) and m["build_id"] for m in raw.mappings)
    syms = Syms(crashprog, load_bias(raw, crashprog))
    workers = [t for t in raw.threads if "call live_worker" in event_names(t, syms)]
    assert len(workers) == 4
    for t in workers:
        names = event_names(t, syms)
        assert set(names[1:]) <= {"call ce_live_tick", "ret ce_live_tick"} and len(names) > 2
        tscs = [e.tsc for e in t.events()]
        assert tscs == sorted(tscs)
    # the process was not stopped: it keeps ticking
    assert proc_state(p.pid) in "RS"
    time.sleep(0.1)
    r2, raw2 = live(tree, p.pid)
    assert r2.returncode == 0 and ticks(raw2, syms) > ticks(raw, syms)


def test_live_stacks(tree, crashprog, spawn):
    require_tools(tree, "coreextract")
    p = start(spawn, crashprog, "live", "2")
    r, raw = live(tree, p.pid, "--stacks")
    assert r.returncode == 0, r.stderr
    syms = Syms(crashprog, load_bias(raw, crashprog))
    tids = {int(x) for x in os.listdir(f"/proc/{p.pid}/task")}
    assert {s.tid for s in raw.stacks} == tids
    assert all(s.unwinder == 3 and s.pcs[0] == s.regs[16] for s in raw.stacks)
    named = [stack_names(s, syms) for s in raw.stacks]
    assert sum("live_worker" in n for n in named) == 2
    assert any("main" in n for n in named)
    # detached again: still running
    time.sleep(0.05)
    assert proc_state(p.pid) in "RS"
    assert all(proc_state(p.pid) != "t" for _ in range(3))


def test_live_stopped_process(tree, crashprog, spawn):
    require_tools(tree, "coreextract")
    p = start(spawn, crashprog, "live", "2")
    os.kill(p.pid, signal.SIGSTOP)
    try:
        deadline = time.time() + 5
        while proc_state(p.pid) != "T" and time.time() < deadline:
            time.sleep(0.01)
        r1, raw1 = live(tree, p.pid)
        r2, raw2 = live(tree, p.pid)
        assert r1.returncode == 0 and r2.returncode == 0
        # nothing moves while it is stopped: two reads give the same rings, no race
        assert [t.entries for t in raw1.threads] == [t.entries for t in raw2.threads]
        assert not any(t.flags & rawfile.TSF["COPY_RACED"] for t in raw1.threads)
        r3, raw3 = live(tree, p.pid, "--stacks")
        assert r3.returncode == 0 and len(raw3.stacks) >= 3
        # still stopped afterwards: a task detached by the unwinder's ptrace goes back into the
        # group stop (passing through R for an instant); a resumed one would run on
        deadline = time.time() + 5
        while proc_state(p.pid) != "T" and time.time() < deadline:
            time.sleep(0.01)
        assert proc_state(p.pid) == "T"
        time.sleep(0.2)
        assert proc_state(p.pid) == "T"
    finally:
        os.kill(p.pid, signal.SIGCONT)


def rss_anon_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError(f"no RssAnon in /proc/{pid}/status")


def test_live_read_leaves_untouched_ring_pages_alone(tree, crashprog, spawn):
    """Reading another process's page faults it in: an untouched ring page read with
    process_vm_readv becomes real memory of the target (and at a cgroup's memory limit it
    cannot be read at all).  coreextract --pid reads only the pages that exist
    (/proc/PID/pagemap) and takes the others as the zeros they are: 3 threads with
    64 MiB rings, stopped so that nothing else moves, keep their resident memory."""
    require_tools(tree, "coreextract")
    p = start(spawn, crashprog, "live", "2", env={**os.environ, "FUNTRACE_BUF": str(64 << 20)})
    os.kill(p.pid, signal.SIGSTOP)
    try:
        deadline = time.time() + 5
        while proc_state(p.pid) != "T" and time.time() < deadline:
            time.sleep(0.01)
        before = rss_anon_kib(p.pid)
        r, raw = live(tree, p.pid, "-v")
        after = rss_anon_kib(p.pid)
        assert r.returncode == 0, r.stderr
        assert "untouched page(s) not read" in r.stderr.decode()
        assert len(raw.threads) >= 3 and all(t.ring_size == 64 << 20 for t in raw.threads if t.entries)
        # without pagemap: +192 MiB (every ring read whole)
        assert after - before < 4096, (before, after)
        # the same rings as the process itself holds: two reads agree
        r2, raw2 = live(tree, p.pid)
        assert [t.entries for t in raw2.threads] == [t.entries for t in raw.threads]
    finally:
        os.kill(p.pid, signal.SIGCONT)


def test_live_copy_race_keeps_order(tree, crashprog, spawn):
    """A thread writing its (small) ring as fast as it can while we copy it: what is
    emitted is always a consistent, time-ordered tail, every slot accounted for
    (emitted, or dropped because it may have been overwritten during the copy).

    Whether a copy races the writer depends on the scheduler (a loaded machine may
    not run the writer during a copy at all), so this asserts what holds either
    way; what a race of k entries must give -- exactly the k oldest dropped, the
    rest intact, a lapped ring dropped whole -- is tested deterministically on the
    same code in test_coreextract_rawwrite.py (test_live_copy_race,
    test_live_writer_lapping_the_ring_during_the_copy)."""
    require_tools(tree, "coreextract")
    p = start(spawn, crashprog, "busy", "1", env={"FUNTRACE_BUF": "65536"})
    syms = None
    for _ in range(15):
        r, raw = live(tree, p.pid)
        assert r.returncode == 0, r.stderr
        syms = syms or Syms(crashprog, load_bias(raw, crashprog))
        # the busy thread: the traced one that never ticks
        busy = [t for t in raw.threads if t.state == 1 and t.ring
                and not any(n.endswith("ce_live_tick") for n in event_names(t, syms))]
        assert len(busy) == 1
        t = busy[0]
        raced = bool(t.flags & rawfile.TSF["COPY_RACED"])
        assert t.n_entries or raced
        tscs = [e.tsc for e in t.events()]
        assert tscs == sorted(tscs), "ring linearized out of order"
        names = event_names(t, syms)
        # calls and returns of ce_step1 alternate
        steps = [n for n in names if n.endswith("ce_step1")]
        assert all(a != b for a, b in zip(steps, steps[1:]))
        assert t.n_entries + t.n_dropped >= 4095 - 1    # every slot accounted for
        # a race drops what may have been overwritten; without one, at most a torn last entry
        assert t.n_dropped > 0 if raced else t.n_dropped <= 1, (t.n_dropped, t.flags)


def test_live_bad_pids(tree, compiled, spawn, tmp_path):
    require_tools(tree, "coreextract")
    # no such process
    r, _ = live(tree, 2 ** 22 + 12345)
    assert r.returncode == 2 and r.stdout == b""
    assert len(stderr_lines(r)) == 1 and "no such process" in r.stderr.decode()
    # a process without the runtime
    p = spawn(["sleep", "30"])
    time.sleep(0.05)
    out = tmp_path / "x.raw"
    r = subprocess.run([str(tree.tool("coreextract")), "-o", str(out), "--pid", str(p.pid)], capture_output=True,
                       timeout=60)
    assert r.returncode == 1 and len(stderr_lines(r)) == 1 and "no funtrace trace" in r.stderr.decode()
    assert not out.exists() and not Path(str(out) + ".tmp").exists()
    # garbage
    r = subprocess.run([str(tree.tool("coreextract")), "--pid", "12x"], capture_output=True, timeout=60)
    assert r.returncode == 2 and len(stderr_lines(r)) == 1


CG2 = Path("/sys/fs/cgroup/unified")


@pytest.mark.root
@pytest.mark.cgroup_v2
def test_live_frozen_process(tree, crashprog, spawn):
    """A process frozen by the cgroup v2 freezer: read without hanging; --stacks gives
    up on the threads that cannot stop, within its 2 s budget."""
    require_tools(tree, "coreextract")
    root = CG2 if (CG2 / "cgroup.procs").exists() else Path("/sys/fs/cgroup")
    p = start(spawn, crashprog, "live", "2")
    cg = root / f"ce_frozen_{os.getpid()}_{p.pid}"
    cg.mkdir()
    try:
        (cg / "cgroup.procs").write_text(str(p.pid))
        (cg / "cgroup.freeze").write_text("1")
        deadline = time.time() + 5
        while "frozen 1" not in (cg / "cgroup.events").read_text() and time.time() < deadline:
            time.sleep(0.01)
        assert "frozen 1" in (cg / "cgroup.events").read_text()
        r, raw = live(tree, p.pid)
        assert r.returncode == 0, r.stderr
        assert len([t for t in raw.threads if t.n_entries]) >= 3
        t0 = time.time()
        r, raw = live(tree, p.pid, "--stacks", timeout=30)
        assert r.returncode == 0 and time.time() - t0 < 10
        assert raw.ended
    finally:
        if (cg / "cgroup.freeze").exists():
            (cg / "cgroup.freeze").write_text("0")
        p.kill()
        p.wait(timeout=10)
        rmdir_cgroup(cg)
