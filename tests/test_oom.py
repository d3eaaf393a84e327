"""funtrace-oomwatch and the in-process PSI option, on the real kernel interfaces.

Needs root and cgroups: a cgroup v1 memory hierarchy (oom_kill_disable,
cgroup.event_control) and cgroup v2 (cgroup.freeze, memory.pressure).  Every
test creates its own groups named funtrace-test-<pid>-<n>, starts its
programs inside them, and in teardown kills them (by pid: everything in these
groups was started here), sets oom_kill_disable 0 / removes the limit so they
can die, unfreezes, waits and removes the groups.
"""
import itertools
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import rawfile
from conftest import rmdir_cgroup, run_tool, wait_for

V1 = Path("/sys/fs/cgroup/memory")
V2 = next((p for p in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
           if (p / "cgroup.controllers").exists()), None)
MiB = 1 << 20

_names = itertools.count()


# --------------------------------------------------------------------------
# cgroups and processes created by a test
# --------------------------------------------------------------------------

class Groups:
    def __init__(self):
        self.dirs = []    # (kind, Path), creation order
        self.procs = []   # Popen

    def make(self, v1_limit=None, oom_kill_disable=False, v2=True, v1=True):
        """A fresh v1 memory group and/or v2 group of the same name."""
        name = f"funtrace-test-{os.getpid()}-{next(_names)}"
        g1 = g2 = None
        if v1:
            g1 = V1 / name
            g1.mkdir()
            self.dirs.append(("v1", g1))
            if v1_limit:
                (g1 / "memory.limit_in_bytes").write_text(str(v1_limit))
            if oom_kill_disable:
                (g1 / "memory.oom_control").write_text("1")
        if v2:
            g2 = V2 / name
            g2.mkdir()
            self.dirs.append(("v2", g2))
        return g1, g2

    def start(self, args, groups, env=None, cwd=None, **kw):
        """Start args with its first instruction already inside groups."""
        paths = [str(g / "cgroup.procs") for g in groups if g is not None]

        def enter():
            for p in paths:
                with open(p, "w") as f:
                    f.write(str(os.getpid()))
        full_env = dict(os.environ)
        full_env.update(env or {})
        p = subprocess.Popen([str(a) for a in args], preexec_fn=enter, env=full_env, cwd=cwd,
                             stdin=subprocess.DEVNULL, stdout=kw.pop("stdout", subprocess.PIPE),
                             stderr=kw.pop("stderr", subprocess.PIPE), **kw)
        self.procs.append(p)
        return p

    def cleanup(self):
        for kind, d in reversed(self.dirs):
            if not d.exists():
                continue
            if kind == "v1":
                (d / "memory.oom_control").write_text("0")
                (d / "memory.limit_in_bytes").write_text("-1")
            elif (d / "cgroup.freeze").exists():
                (d / "cgroup.freeze").write_text("0")
        for kind, d in self.dirs:
            if d.exists():
                for pid in (d / "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)  # started by this test
                    except ProcessLookupError:
                        pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=20)
        for kind, d in reversed(self.dirs):
            if d.exists():
                wait_for(lambda: not (d / "cgroup.procs").read_text().strip(), timeout=20,
                         what=f"{d} to empty")
                rmdir_cgroup(d)


@pytest.fixture
def groups():
    g = Groups()
    yield g
    g.cleanup()


class Watcher:
    def __init__(self, tree, args, tmp_path, name="watch"):
        self.err_path = tmp_path / f"{name}.err"
        self.err_file = open(self.err_path, "w")
        self.p = subprocess.Popen([str(tree.tool("funtrace-oomwatch")), *map(str, args)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err_file)

    @property
    def log(self):
        return self.err_path.read_text()

    def wait_armed(self):
        wait_for(lambda: "watching" in self.log or self.p.poll() is not None, timeout=10,
                 what="the watcher to arm its triggers")
        assert self.p.poll() is None, self.log

    def wait(self, timeout):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the watcher did not finish in {timeout}s:\n{self.log}")

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err_file.close()


@pytest.fixture
def watchers(tree, tmp_path):
    made = []

    def _start(args, name="watch"):
        w = Watcher(tree, args, tmp_path, name)
        made.append(w)
        return w
    yield _start
    for w in made:
        w.close()


# --------------------------------------------------------------------------
# reading the trace: symbols of the executable, the calls still open at the end
# --------------------------------------------------------------------------

def func_symbols(exe):
    out = subprocess.run(["nm", "--defined-only", str(exe)], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return sorted(syms)


def exe_bias(raw, exe):
    with open(exe, "rb") as f:
        hdr = f.read(18)
    if int.from_bytes(hdr[16:18], "little") == 2:  # ET_EXEC
        return 0
    real = str(Path(exe).resolve())
    for m in raw.mappings:
        if m["path"] == real and m["offset"] == 0:
            return m["start"]
    raise AssertionError(f"{real} not in MAPPINGS: {[m['path'] for m in raw.mappings]}")


def symbolizer(exe, raw):
    import bisect
    syms = func_symbols(exe)
    bias = exe_bias(raw, exe)
    addrs = [a for a, _ in syms]

    def name(addr):
        i = bisect.bisect_right(addrs, addr - bias) - 1
        return syms[i][1] if i >= 0 else hex(addr)
    return name


def open_calls(thread, exe, raw):
    """Names of the functions entered and not yet returned from at the end of the ring."""
    name = symbolizer(exe, raw)
    stack = []
    for e in thread.events():
        if e.catch:
            continue
        if e.ret:
            if stack:
                stack.pop()
        else:
            stack.append(name(e.addr))
    return stack


def called(thread, exe, raw):
    """Names of every function with a call event in the ring."""
    name = symbolizer(exe, raw)
    return {name(e.addr) for e in thread.events() if not e.ret and not e.catch}


def main_thread(raw, pid):
    return next(t for t in raw.threads if t.tid == pid)


def decoded_open_calls(tree, raw_path, pid):
    """The calls funtrace-decode --text shows as [still open] for thread pid, outermost first."""
    r = run_tool([tree.tool("funtrace-decode"), "--text", "-q", "--calls", "200", raw_path], timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"\nthread {pid} " in r.stdout, r.stdout
    section = r.stdout.split(f"\nthread {pid} ")[1].split("\nthread ")[0]
    return re.findall(r"open\s+(\S+)\s+\S+\s+\[still open\]", section)


def decoded_thread_text(tree, raw_path, pid):
    """funtrace-decode --text's section for thread pid."""
    r = run_tool([tree.tool("funtrace-decode"), "--text", "-q", "--calls", "200", raw_path], timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"\nthread {pid} " in r.stdout, r.stdout
    return r.stdout.split(f"\nthread {pid} ")[1].split("\nthread ")[0]


def saved(outdir, ext):
    return sorted(p for p in Path(outdir).iterdir() if p.suffix == ext)


def read_cg(d, f):
    return (d / f).read_text()


# --------------------------------------------------------------------------
# v1 OOM halt: notified, raw saved, core written by our own writer
# --------------------------------------------------------------------------

@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
def test_v1_oom_halt_saves_raw_and_core(tree, tmp_path, groups, watchers):
    hog = tree.example("oomhog")
    g1, g2 = groups.make(v1_limit=64 * MiB, oom_kill_disable=True)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "--cgroup", g2, "-o", out, "--core", "--once"])
    w.wait_armed()
    p = groups.start([hog], [g1, g2])
    assert w.wait(60) == 0, w.log
    log = w.log
    assert "fired: oom (cgroup v1" in log and "under_oom 1" in log, log

    # the raw: read live while the task was parked at the limit
    raws, cores = saved(out, ".raw"), saved(out, ".core")
    assert len(raws) == 1 and raws[0].name.startswith(f"oomhog-{p.pid}-"), (raws, log)
    assert f"saved {out}/{raws[0].name} (pid {p.pid}" in log
    raw = rawfile.parse(raws[0])
    assert raw.ended and raw.header["source"] == 2 and raw.header["pid"] == p.pid
    stack = open_calls(main_thread(raw, p.pid), hog, raw)
    assert stack[stack.index("load_chunk"):][:3] == ["load_chunk", "grow_cache", "alloc_block"], stack
    assert stack[-1] in ("alloc_block", "touch_block"), stack
    decoded = decoded_open_calls(tree, raws[0], p.pid)
    assert decoded == stack[-len(decoded):] and decoded[-1] in ("alloc_block", "touch_block"), (decoded, stack)
    assert decoded[decoded.index("load_chunk"):][:3] == ["load_chunk", "grow_cache", "alloc_block"], decoded

    # the core: frozen, limit raised, ptrace-stopped, written, all restored
    assert len(cores) == 1 and cores[0].stem == raws[0].stem, (cores, log)
    assert f"froze {g2}" in log and f"raised {g1}/memory.limit_in_bytes 64.0 MiB -> 72.0 MiB" in log, log
    assert "limits and freezer restored" in log, log
    assert read_cg(g1, "memory.limit_in_bytes").strip() == str(64 * MiB)
    assert read_cg(g2, "cgroup.freeze").strip() == "0"
    assert "frozen 0" in read_cg(g2, "cgroup.events")
    # parked at the limit again (not frozen, not stopped, not killed)
    assert p.poll() is None
    assert "under_oom 1" in read_cg(g1, "memory.oom_control")

    gdb = run_tool(["gdb", "-batch", "-nx", "-ex", "bt", hog, cores[0]], timeout=120)
    assert gdb.returncode == 0, gdb.stderr
    bt = gdb.stdout
    for fn in ("alloc_block", "grow_cache", "load_chunk", "main"):
        assert f" {fn} (" in bt, bt
    assert bt.index("alloc_block") < bt.index("grow_cache") < bt.index("load_chunk")

    ce = run_tool([tree.tool("coreextract"), "-o", tmp_path / "core.raw", cores[0], hog], timeout=120)
    assert ce.returncode == 0, ce.stderr
    craw = rawfile.parse(tmp_path / "core.raw")
    assert craw.ended and craw.header["source"] == 1
    # nothing ran between the live read and the core: the same main-thread events
    assert main_thread(craw, p.pid).events() == main_thread(raw, p.pid).events()


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_core_of_pid_without_own_v2_group(tree, tmp_path, groups, watchers):
    """--pid of a parked task whose v2 group is shared (here: the root), so nothing
    can be frozen: the threads are seized before the limit is raised, so the task
    stops before running any user code, and the core matches the live raw."""
    hog = tree.example("oomhog")
    g1, _ = groups.make(v1_limit=48 * MiB, oom_kill_disable=True, v2=False)
    p = groups.start([hog], [g1])
    wait_for(lambda: "under_oom 1" in read_cg(g1, "memory.oom_control"), timeout=30, what="the OOM halt")
    out = tmp_path / "out"
    w = watchers(["--pid", p.pid, "-o", out, "--triggers", "oom", "--core", "--once"])
    assert w.wait(60) == 0, w.log
    log = w.log
    assert "not frozen (threads ptrace-stopped)" in log and "registers partial" not in log, log
    assert f"raised {g1}/memory.limit_in_bytes 48.0 MiB -> 56.0 MiB" in log, log
    (raw_path,), (core,) = saved(out, ".raw"), saved(out, ".core")
    ce = run_tool([tree.tool("coreextract"), "-o", tmp_path / "core.raw", core, hog], timeout=120)
    assert ce.returncode == 0, ce.stderr
    live = main_thread(rawfile.parse(raw_path), p.pid).events()
    assert main_thread(rawfile.parse(tmp_path / "core.raw"), p.pid).events() == live
    assert read_cg(g1, "memory.limit_in_bytes").strip() == str(48 * MiB)
    assert p.poll() is None and "under_oom 1" in read_cg(g1, "memory.oom_control")


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_min_interval_defers_a_trigger(tree, tmp_path, groups, watchers):
    """A second OOM halt inside --min-interval is not dropped: it is dumped when
    the interval ends."""
    hog = tree.example("oomhog")
    g1, _ = groups.make(v1_limit=40 * MiB, oom_kill_disable=True, v2=False)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "-o", out, "--min-interval", "2", "--triggers", "oom"])
    w.wait_armed()
    p = groups.start([hog], [g1])
    first = wait_for(lambda: saved(out, ".raw"), timeout=30, what="the first dump")[0]
    t0 = time.time()
    (g1 / "memory.limit_in_bytes").write_text(str(56 * MiB))  # it grows, and parks again
    wait_for(lambda: len(saved(out, ".raw")) == 2, timeout=15, what="the deferred dump")
    assert time.time() - t0 > 1.0
    assert re.search(r"\[\+\d+ triggers? deferred by --min-interval\]", w.log), w.log
    second = next(r for r in saved(out, ".raw") if r != first)
    raw1, raw2 = rawfile.parse(first), rawfile.parse(second)
    assert len(main_thread(raw2, p.pid).events()) >= len(main_thread(raw1, p.pid).events())
    assert main_thread(raw2, p.pid).events()[-1].tsc > main_thread(raw1, p.pid).events()[-1].tsc


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_max_bytes_stops_saving(tree, tmp_path, groups, watchers):
    """--max-bytes: once the next raw would pass the cap, a trigger writes
    nothing and its log line says why."""
    hog = tree.example("oomhog")
    g1, _ = groups.make(v1_limit=40 * MiB, oom_kill_disable=True, v2=False)
    cal = tmp_path / "cal"
    w0 = watchers(["--cgroup", g1, "-o", cal, "--triggers", "oom", "--once"], name="cal")
    w0.wait_armed()
    p = groups.start([hog], [g1])
    assert w0.wait(30) == 0, w0.log
    size = saved(cal, ".raw")[0].stat().st_size   # one raw of this hog, parked
    out = tmp_path / "out"
    cap = size + size // 2                         # room for one more raw, not two
    w = watchers(["--cgroup", g1, "-o", out, "--min-interval", "0", "--triggers", "oom", "--max-bytes", cap])
    w.wait_armed()
    limit = 40 * MiB
    for n in (1, 2):
        limit += 8 * MiB
        (g1 / "memory.limit_in_bytes").write_text(str(limit))  # it grows, and parks again
        wait_for(lambda: len(re.findall(r"saved |NOT saved", w.log)) >= n, timeout=30, what=f"trigger {n}")
    files = sorted(out.iterdir())
    assert len(files) == 1 and files[0].suffix == ".raw" and files[0].stat().st_size <= cap, files
    refused = [l for l in w.log.splitlines() if "NOT saved" in l]
    assert len(refused) == 1 and f"pid {p.pid}: NOT saved" in refused[0] and "--max-bytes" in refused[0], w.log
    assert not list(out.glob("*.tmp*"))


@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
def test_v1_oom_kill_after_raw(tree, tmp_path, groups, watchers):
    """--kill without --core: the raw is saved, then the parked task is killed."""
    hog = tree.example("oomhog")
    g1, g2 = groups.make(v1_limit=48 * MiB, oom_kill_disable=True)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "-o", out, "--kill", "--triggers", "oom"])
    w.wait_armed()
    p = groups.start([hog], [g1, g2])
    assert p.wait(timeout=60) == -signal.SIGKILL
    wait_for(lambda: f"killed pid {p.pid} (--kill)" in w.log, timeout=10, what="the kill log line")
    raws = saved(out, ".raw")
    assert len(raws) == 1 and "alloc_block" in open_calls(main_thread(rawfile.parse(raws[0]), p.pid), hog,
                                                         rawfile.parse(raws[0]))
    # the group is removed: the watcher of a cgroup exits when its group is gone
    wait_for(lambda: not read_cg(g1, "cgroup.procs").strip(), timeout=10, what="the group to empty")
    rmdir_cgroup(g1)
    assert w.wait(10) == 0, w.log
    assert "the target is gone" in w.log


@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
def test_core_with_unstoppable_thread_and_watcher_killed_midway(tree, compiled, tmp_path, groups, watchers):
    """A thread in a vfork wait never reaches its ptrace stop: with a short
    --stop-ms the core is still written (its registers from
    /proc/PID/task/TID/syscall); and a watcher SIGKILLed while it waits leaves
    the group unfrozen and the limit restored (by its guardian)."""
    prog = compiled("oom_stuck.c")
    g1, g2 = groups.make(v1_limit=40 * MiB, oom_kill_disable=True)
    p = groups.start([prog], [g1, g2])
    wait_for(lambda: "under_oom 1" in read_cg(g1, "memory.oom_control"), timeout=30, what="the OOM halt")

    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "--cgroup", g2, "-o", out, "--core", "--once", "--stop-ms", "500"], "w1")
    assert w.wait(60) == 0, w.log
    assert "registers partial" in w.log and "limits and freezer restored" in w.log, w.log
    # the vfork child shares the address space: one trace, one core
    (core,) = saved(out, ".core")
    assert core.name.startswith(f"oom_stuck-pg-{p.pid}-") and len(saved(out, ".raw")) == 1, w.log
    gdb = run_tool(["gdb", "-batch", "-nx", "-ex", "thread apply all bt", prog, core], timeout=120)
    assert gdb.returncode == 0 and "alloc_block" in gdb.stdout, gdb.stdout + gdb.stderr
    assert read_cg(g2, "cgroup.freeze").strip() == "0"
    assert read_cg(g1, "memory.limit_in_bytes").strip() == str(40 * MiB)

    # again, and SIGKILL the watcher while it waits for the stuck thread
    w2 = watchers(["--cgroup", g1, "--cgroup", g2, "-o", tmp_path / "out2", "--core", "--once",
                   "--stop-ms", "30000"], "w2")
    wait_for(lambda: read_cg(g2, "cgroup.freeze").strip() == "1" and
             read_cg(g1, "memory.limit_in_bytes").strip() == str(48 * MiB), timeout=30,
             what="the watcher to freeze the group and raise the limit")
    w2.p.kill()
    w2.p.wait()
    wait_for(lambda: read_cg(g2, "cgroup.freeze").strip() == "0" and
             read_cg(g1, "memory.limit_in_bytes").strip() == str(40 * MiB), timeout=15,
             what="the guardian to restore the group")
    assert "guardian: the watcher died mid-dump: restored" in w2.log, w2.log
    assert p.poll() is None
    assert not list((tmp_path / "out2").glob("*.core")), "no partial core passed off as complete"


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_once_with_nothing_traced_exits_1(tree, compiled, tmp_path, groups, watchers):
    prog = compiled("oom_stuck.c", mode="none")  # not linked with the runtime
    g1, _ = groups.make(v1_limit=32 * MiB, oom_kill_disable=True, v2=False)
    p = groups.start([prog], [g1])
    out = tmp_path / "out"
    w = watchers(["--pid", p.pid, "-o", out, "--triggers", "oom", "--once"])
    assert w.wait(30) == 1, w.log
    assert "fired: oom" in w.log and "no traced process in the target (1 process)" in w.log, w.log
    assert not list(out.iterdir())


@pytest.mark.root
@pytest.mark.cgroup_v2
def test_v2_memory_events_trigger(tree, tmp_path, groups, watchers):
    """The pure-v2 recipe: memory.high below memory.max; the watcher fires on
    memory.events "high"."""
    _, g2 = groups.make(v1=False)
    if not (g2 / "memory.events").exists():
        pytest.skip("cgroup v2 has no memory controller here (memory is bound to cgroup v1): "
                    "no memory.events / memory.high")
    (g2 / "memory.max").write_text(str(96 * MiB))
    (g2 / "memory.high").write_text(str(32 * MiB))
    out = tmp_path / "out"
    w = watchers(["--cgroup", g2, "-o", out, "--triggers", "events", "--once"])
    w.wait_armed()
    hog = tree.example("oomhog")
    p = groups.start([hog, "--limit-mb", 80, "--hold"], [g2])
    assert w.wait(60) == 0, w.log
    assert re.search(r"fired: events \(.*memory.events: high \+[1-9]", w.log), w.log
    (raw_path,) = saved(out, ".raw")
    raw = rawfile.parse(raw_path)
    assert {"load_chunk", "grow_cache", "alloc_block"} <= called(main_thread(raw, p.pid), hog, raw)


# --------------------------------------------------------------------------
# PSI: page-cache thrashing in a small memory cgroup
# --------------------------------------------------------------------------

THRASH_PSI = "some 100000 2000000"  # 5% of a 2 s window: windows of 2 s need no CAP_SYS_RESOURCE


def thrash_file(tmp_path):
    f = tmp_path / "thrash.dat"
    with open(f, "wb") as fh:
        fh.write(os.urandom(48 * MiB))
    return f


@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
@pytest.mark.psi
def test_psi_trigger_on_thrashing_cgroup(tree, compiled, tmp_path, groups, watchers):
    prog = compiled("oom_thrash.c")
    data = thrash_file(tmp_path)
    g1, g2 = groups.make(v1_limit=32 * MiB)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g2, "-o", out, "--psi", THRASH_PSI, "--once"])
    w.wait_armed()
    assert f'psi "{THRASH_PSI}" on {g2}/memory.pressure' in w.log
    p = groups.start([prog, data, 30], [g1, g2])
    assert w.wait(30) == 0, w.log
    assert f'fired: psi "{THRASH_PSI}" on {g2}/memory.pressure' in w.log, w.log
    (raw_path,) = saved(out, ".raw")
    raw = rawfile.parse(raw_path)
    assert raw.ended and raw.header["pid"] == p.pid
    # the thrashing loop is in the trace (the dump may catch the main thread
    # between two rounds, e.g. in now(): not necessarily inside one)
    assert "thrash_round" in called(main_thread(raw, p.pid), prog, raw)
    assert "thrash_round" in decoded_thread_text(tree, raw_path, p.pid)


@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
@pytest.mark.psi
def test_in_process_psi_snapshot(tree, compiled, tmp_path, groups):
    prog = compiled("oom_thrash.c")
    data = thrash_file(tmp_path)
    g1, g2 = groups.make(v1_limit=32 * MiB)
    out = tmp_path / "snaps"
    out.mkdir()
    p = groups.start([prog, data, 30], [g1, g2],
                     env={"FUNTRACE_PSI": THRASH_PSI, "FUNTRACE_PSI_DIR": str(out)})
    snap = wait_for(lambda: saved(out, ".raw"), timeout=30, what="a PSI snapshot")[0]
    assert snap.name.startswith("oom_thrash") and f"-{p.pid}-" in snap.name, snap.name
    raw = rawfile.parse(snap)
    assert raw.ended and raw.header["source"] == 3 and raw.header["pid"] == p.pid
    # the thrashing loop is in the trace (the dump may catch the main thread
    # between two rounds, e.g. in now(): not necessarily inside one)
    assert "thrash_round" in called(main_thread(raw, p.pid), prog, raw)
    assert "thrash_round" in decoded_thread_text(tree, snap, p.pid)
    p.kill()
    _, err = p.communicate(timeout=20)
    assert f"PSI trigger fired on {g2}/memory.pressure: snapshot written" in err.decode(), err


@pytest.mark.root
@pytest.mark.psi
def test_in_process_psi_refused_trigger_is_reported(tree, compiled, tmp_path):
    prog = compiled("oom_thrash.c")
    data = tmp_path / "small.dat"
    data.write_bytes(b"x" * 8192)
    r = run_tool([prog, data, "0.1"], env={"FUNTRACE_PSI": "some 500000 1000000"}, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "FUNTRACE_PSI ignored: " in r.stderr and "multiples of 2 s" in r.stderr, r.stderr


# --------------------------------------------------------------------------
# bad arguments: one line, exit code 2
# --------------------------------------------------------------------------

def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("args, expect", [
    (lambda t: ["--pid", _dead_pid(), "-o", t], "no such process"),
    (lambda t: ["--cgroup", t, "-o", t], "not a cgroup directory"),
    (lambda t: ["--pid", "12x", "-o", t], "--pid needs a process id"),
    (lambda t: ["--pid", os.getpid()], "give an output directory"),
    (lambda t: ["-o", t], "give a target"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--psi", "some 500000 1000000"], "whole multiples of 2 s"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--psi", "most 1 2"], "expected \"some|full"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--psi", "some 3000000 2000000"], "threshold"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--triggers", "psi,bogus"], "--triggers"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--max-bytes", "lots"], "--max-bytes"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--frobnicate"], "unknown option"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--usage", "120%"], "--usage needs a percentage"),
    (lambda t: ["--pid", os.getpid(), "-o", t, "--usage", "lots"], "--usage needs a percentage"),
])
def test_bad_arguments(tree, tmp_path, args, expect):
    r = run_tool([tree.tool("funtrace-oomwatch"), *map(str, args(tmp_path))], timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("funtrace-oomwatch: ") and expect in lines[0], r.stderr


@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
def test_unavailable_triggers_are_refused(tree, tmp_path, groups):
    g1, g2 = groups.make(v1_limit=64 * MiB)
    tool = tree.tool("funtrace-oomwatch")
    r = run_tool([tool, "--cgroup", g2, "-o", tmp_path, "--triggers", "oom"], timeout=30)
    assert r.returncode == 2 and "trigger oom needs a (non-root) cgroup v1 memory cgroup" in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1
    r = run_tool([tool, "--cgroup", "/sys/fs/cgroup/cpu" if Path("/sys/fs/cgroup/cpu").is_dir() else tmp_path,
                  "-o", tmp_path], timeout=30)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    if not (g2 / "memory.events").exists():
        # hybrid systems: the memory controller is bound to v1, v2 has no memory.events
        r = run_tool([tool, "--cgroup", g2, "-o", tmp_path, "--triggers", "events"], timeout=30)
        assert r.returncode == 2 and "memory.events" in r.stderr and "bound to cgroup v1" in r.stderr, r.stderr
        assert len(r.stderr.splitlines()) == 1


# --------------------------------------------------------------------------
# lifecycle: target gone, SIGTERM
# --------------------------------------------------------------------------

@pytest.mark.root
@pytest.mark.psi
@pytest.mark.cgroup_v2
def test_exits_when_pid_exits_and_on_sigterm(tree, tmp_path, groups, watchers, spawn):
    """The sleeper has a v2 group of its own, so the PSI trigger is scoped to it and
    cannot fire (a sleeping process never stalls on memory; a system-wide trigger did,
    right after arming, when earlier tests had left memory pressure behind)."""
    _, g2 = groups.make(v1=False)
    sleeper = groups.start(["sleep", "30"], [g2])
    w = watchers(["--pid", sleeper.pid, "-o", tmp_path / "o1", "--triggers", "psi"], "w1")
    w.wait_armed()
    assert f"on {g2}/memory.pressure" in w.log, w.log
    t0 = time.time()
    sleeper.kill()
    sleeper.wait()
    assert w.wait(10) == 0, w.log
    assert f"the target is gone: pid {sleeper.pid} (sleep) ended: exiting (0 dumps, 0 traces saved)" in w.log
    assert time.time() - t0 < 5

    sleeper = spawn(["sleep", "30"], name="live2")
    w = watchers(["--pid", sleeper.pid, "-o", tmp_path / "o2", "--triggers", "psi"], "w2")
    w.wait_armed()
    w.p.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0, w.log
    assert "Terminated: exiting" in w.log
    assert sleeper.poll() is None


# --------------------------------------------------------------------------
# anonymous memory, no swap, no oom_kill_disable: the OOM killer acts
# --------------------------------------------------------------------------

@pytest.mark.root
@pytest.mark.cgroup_v1
def test_usage_trigger_saves_before_the_oom_kill(tree, tmp_path, groups, watchers):
    """The case PSI cannot see: anonymous memory growing in a v1 group with a
    limit, no swap, the OOM killer free to act.  The usage trigger (threshold
    eventfd on memory.usage_in_bytes) fires at half the limit and the trace is
    saved; then the hog grows on, the kernel kills it, and the watcher says so and
    exits 0.  The hog holds at 80 MiB until the save is logged: how fast the
    watcher reacts is bench/'s business, and a race with a growing hog failed
    this test under load (the kill came first)."""
    hog = tree.example("oomhog")
    g1, _ = groups.make(v1_limit=128 * MiB, v2=False)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "-o", out, "--triggers", "usage", "--usage", "50%"])
    w.wait_armed()
    assert "usage >= 64.0 MiB, 50% of the 128.0 MiB limit (cgroup v1 threshold eventfd" in w.log, w.log
    p = groups.start([hog, "--step-ms", 2, "--pause-at-mb", 80], [g1])
    try:
        wait_for(lambda: "saved " in w.log or p.poll() is not None, timeout=30, what="the save")
    except AssertionError as e:  # (what the watcher and the group saw: once in a full suite run)
        usage = (Path(g1) / "memory.usage_in_bytes").read_text().strip()
        raise AssertionError(f"{e}; usage {usage} B; watcher log:\n{w.log}") from None
    assert p.poll() is None, w.log                      # saved while the hog lived, below the limit
    p.send_signal(signal.SIGUSR1)                       # grow on, into the OOM killer
    assert p.wait(timeout=60) == -signal.SIGKILL        # the OOM killer's
    assert w.wait(15) == 0, w.log
    log = w.log
    assert re.search(r"fired: usage \(cgroup v1 .*: [\d.]+ MiB used, [\d.]+ MiB of it not page cache, >= 64.0 MiB",
                     log), log
    assert f"(pid {p.pid}, " in log and "counts 1 OOM kill" in log and "1 trace saved" in log, log
    assert log.index("fired: usage") < log.index("the target is gone")
    (raw_path,) = saved(out, ".raw")
    raw = rawfile.parse(raw_path)
    t = main_thread(raw, p.pid)
    # read at about half the limit: 64 to 80 chunks loaded, not 128
    name = symbolizer(hog, raw)
    grown = sum(1 for e in t.events() if not e.ret and name(e.addr) == "grow_cache")
    assert 56 <= grown <= 80, grown
    assert {"load_chunk", "grow_cache", "alloc_block"} <= called(t, hog, raw)


@pytest.mark.root
@pytest.mark.cgroup_v1
@pytest.mark.cgroup_v2
@pytest.mark.psi
def test_oom_kill_psi_cannot_see_ends_the_watch_with_exit_3(tree, tmp_path, groups, watchers):
    """The reported failure: PSI on the target's own v2 group, anonymous growth,
    no swap -- no stall, no trigger; the kernel OOM-kills the target.  The watcher
    notices at once (the group emptied; the kill is counted in it) and exits 3
    saying what happened and what to use instead, instead of waiting forever."""
    hog = tree.example("oomhog")
    g1, g2 = groups.make(v1_limit=64 * MiB)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "--cgroup", g2, "-o", out, "--triggers", "psi"])
    w.wait_armed()
    assert f"psi \"some 500000 2000000\" on {g2}/memory.pressure;" in w.log, w.log
    p = groups.start([hog], [g1, g2])
    assert p.wait(timeout=60) == -signal.SIGKILL
    t0 = time.time()
    assert w.wait(10) == 3, w.log
    assert time.time() - t0 < 5
    line = w.log.strip().splitlines()[-1]
    assert f"the target is gone: its last process ended: cgroup {g1} is empty" in line, line
    assert f"{g1}/memory.oom_control counts 1 OOM kill" in line and "before any trace was saved" in line, line
    assert "use the usage trigger" in line, line
    assert not list(out.iterdir())


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_psi_scope_is_said_and_scoped_triggers_are_preferred(tree, tmp_path, groups, watchers, spawn):
    """A target without a cgroup v2 group of its own: PSI would be the system's
    (/proc/pressure/memory), fired by any process.  By default the watcher arms the
    triggers scoped to the target instead; asked for PSI, its start-up line says
    it is system-wide."""
    g1, _ = groups.make(v1_limit=256 * MiB, v2=False)
    p = groups.start(["sleep", "60"], [g1])
    w = watchers(["--pid", p.pid, "-o", tmp_path / "o1"], "default")
    w.wait_armed()
    line = w.log.splitlines()[0]
    assert "triggers: usage >= 230.4 MiB, 90% of the 256.0 MiB limit" in line and " oom (" in line, line
    assert " psi \"" not in line, line
    w2 = watchers(["--pid", p.pid, "-o", tmp_path / "o2", "--triggers", "psi"], "psi")
    w2.wait_armed()
    line = w2.log.splitlines()[0]
    assert "on /proc/pressure/memory (system-wide: the target has no cgroup v2 group of its own" in line, line
    # a group without a limit: a percentage of nothing is refused
    g3, _ = groups.make(v2=False)
    r = run_tool([tree.tool("funtrace-oomwatch"), "--cgroup", g3, "-o", tmp_path / "o3", "--triggers", "usage"])
    assert r.returncode == 2 and f"{g3} has no memory limit" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_watcher_exits_when_its_group_empties(tree, tmp_path, groups, watchers):
    """A cgroup target: the watcher waits while the group is empty at start, and
    exits (0, one line) once the processes that came have all ended."""
    g1, _ = groups.make(v1_limit=256 * MiB, v2=False)
    w = watchers(["--cgroup", g1, "-o", tmp_path / "o", "--poll-ms", "100"])
    w.wait_armed()
    time.sleep(0.5)
    assert w.p.poll() is None, w.log              # empty from the start: waits
    p = groups.start(["sleep", "60"], [g1])
    time.sleep(0.5)
    p.kill()
    p.wait()
    assert w.wait(10) == 0, w.log
    assert f"the target is gone: its last process ended: cgroup {g1} is empty: exiting (0 dumps" in w.log, w.log
