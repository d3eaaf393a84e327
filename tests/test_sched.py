"""Scheduling states (issue 14 part 1): the tracefs instance set up by
`funtrace-sched`, the SCHEDEVT chunk written by the runtime's snapshots,
`coreextract --pid` and `coreextract -` (the core_pattern pipe handler), and
the decoder's views of it (FORMAT.md 2.6, README "Scheduling states").

Tests that need tracefs mount it in a directory of their own and create an
instance with a unique name (the machine is shared): never the top-level
tracing settings.  The program (tests/progs/sched_waits.c) makes a thread
"waiter" block in read() five times until the thread "waker" writes to the
pipe after ~3 ms of work: waits that must show, woken by the waker.
"""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import rawfile
from conftest import require_tools, run_program, run_tool, wait_for
from test_oom import groups, watchers  # noqa: F401 (fixtures: cgroups and watchers cleaned up)

ROUNDS = 5


@pytest.fixture(scope="module")
def instance(tree, tmp_path_factory):
    """(tracefs mount, instance dir) of a private mount and a uniquely named instance."""
    if os.geteuid() != 0:
        pytest.skip("needs root (mounting tracefs)")
    require_tools(tree, "funtrace-sched")
    mnt = tmp_path_factory.mktemp("tracefs")
    r = subprocess.run(["mount", "-t", "tracefs", "nodev", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tracefs: {r.stderr.strip()}")
    name = f"funtrace-test-{os.getpid()}"
    inst = mnt / "instances" / name
    try:
        r = run_tool([tree.tool("funtrace-sched"), "setup", "--tracefs", mnt, "--instance", name,
                      "--buffer-kb", "2048"])
        assert r.returncode == 0, r.stderr
        assert "x86-tsc" in r.stdout and str(inst) in r.stdout
        yield mnt, inst
    finally:
        run_tool([tree.tool("funtrace-sched"), "remove", "--tracefs", mnt, "--instance", name])
        if inst.exists():
            (inst / "tracing_on").write_text("0")
            inst.rmdir()
        subprocess.run(["umount", str(mnt)], check=False)


def tids(stdout):
    if isinstance(stdout, bytes):
        stdout = stdout.decode()
    m = re.search(r"tids (\d+) (\d+)", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def calls_of(raw, elf, tid, name):
    """[(call tsc, return tsc)] of function `name` (a leaf, never recursive) in thread tid."""
    from conftest import functions_in_trace
    out, start = [], None
    for e in functions_in_trace(raw, elf, [name])[name].get(tid, []):
        if not e.ret:
            start = e.tsc
        elif start is not None:
            out.append((start, e.tsc))
            start = None
    return out


def check_waits(raw, elf, waiter, waker):
    """The waiter's five waits: switched out sleeping (S) inside wait_for_token, woken by the
    waker inside hand_over -- on the rings' own clock (the TSC)."""
    s = raw.sched
    assert s is not None and s["status"] == 0, s
    ev = s["events"]
    hand = calls_of(raw, elf, waker, "hand_over")
    waits = calls_of(raw, elf, waiter, "wait_for_token")
    assert len(hand) == ROUNDS and len(waits) == ROUNDS, (hand, waits)
    # from the waiter's first wait to the end of its last (before and after them, the two
    # threads' start-up and exit may contend for a lock -- libc's, the runtime's, the kernel's
    # mmap lock -- and the waker then wakes the waiter too)
    t0, t1 = waits[0][0], waits[-1][1]
    wakings = [e for e in ev if e["kind"] == "waking" and e["tid"] == waiter and e["other"] == waker
               and t0 <= e["tsc"] <= t1]
    sleeps = [e for e in ev if e["kind"] == "switch" and e["tid"] == waiter and e["state"] == "S"
              and t0 <= e["tsc"] <= t1]
    # every wakeup of the waiter by the waker happened inside one of its hand_over calls
    assert len(wakings) == ROUNDS, wakings
    for w in wakings:
        assert any(a <= w["tsc"] <= b for a, b in hand), (w, hand)
    # and every time the waiter went to sleep it was inside wait_for_token
    assert len(sleeps) >= ROUNDS, [(e["tsc"], e["kind"], e["state"]) for e in ev if e["tid"] == waiter]
    for e in sleeps:
        assert any(a <= e["tsc"] <= b for a, b in waits), (e, waits)
    assert all(e["cur_tgid"] in (0, s["pid"]) or e["tid"] != waiter or e["kind"] != "switch" for e in ev)


def check_text(tree, raw_path, waiter, waker):
    r = run_tool([tree.tool("funtrace-decode"), raw_path, "--text", "-n", "40"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"^  sched:      \d+ scheduling events", r.stdout, re.M), r.stdout
    block = r.stdout.split(f'\nthread {waiter} "waiter" -- ')[1].split("\nthread ")[0]
    lines = re.findall(rf'~ blocked [\d.]+ ms \(sleeping, S\), woken by thread {waker} "waker"', block)
    assert len(lines) == ROUNDS, block
    return r.stdout


def check_json(tree, raw_path, tmp_path, waiter):
    out = tmp_path / "t.json"
    r = run_tool([tree.tool("funtrace-decode"), raw_path, "-j", out])
    assert r.returncode == 0, r.stderr
    j = json.loads(out.read_text())
    sys_ev = j["systemTraceEvents"]
    assert sys_ev.startswith("# tracer: nop")
    assert re.search(rf"sched_switch: prev_comm=waiter prev_pid={waiter} prev_prio=\d+ prev_state=S ==>", sys_ev)
    assert re.search(rf"sched_waking: comm=waiter pid={waiter} ", sys_ev)
    # ftrace text times (s) on the JSON's timeline (us): within the slices' span
    ts = [float(m) * 1e6 for m in re.findall(r" (\d+\.\d{9}): sched_", sys_ev)]
    xs = [e["ts"] for e in j["traceEvents"] if e.get("ph") == "X"]
    assert ts and min(ts) >= 0 and min(ts) <= max(xs) + 1e6


def test_setup_status_remove(tree, tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root (mounting tracefs)")
    require_tools(tree, "funtrace-sched")
    mnt = tmp_path_factory.mktemp("tracefs-setup")
    if subprocess.run(["mount", "-t", "tracefs", "nodev", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount tracefs")
    name = f"funtrace-test-setup-{os.getpid()}"
    fs = tree.tool("funtrace-sched")
    try:
        top_clock = (mnt / "trace_clock").read_text()
        r = run_tool([fs, "setup", "--tracefs", mnt, "--instance", name, "--buffer-kb", "512"])
        assert r.returncode == 0, r.stderr
        inst = mnt / "instances" / name
        assert "[x86-tsc]" in (inst / "trace_clock").read_text()
        assert (inst / "events/sched/sched_switch/enable").read_text().strip() == "1"
        assert (inst / "buffer_size_kb").read_text().strip().startswith("5")
        assert (mnt / "trace_clock").read_text() == top_clock  # top level untouched
        time.sleep(0.2)
        r = run_tool([fs, "status", "--tracefs", mnt, "--instance", name])
        assert r.returncode == 0 and "usable" in r.stdout and "events in the buffer" in r.stdout, r.stdout
        r = run_tool([fs, "remove", "--tracefs", mnt, "--instance", name])
        assert r.returncode == 0 and not inst.exists()
        r = run_tool([fs, "status", "--tracefs", mnt, "--instance", name])
        assert r.returncode == 1 and "no tracefs instance" in r.stdout
        r = run_tool([fs, "setup", "--tracefs", mnt, "--instance", "a/b"])
        assert r.returncode == 2 and r.stderr.count("\n") == 1
        r = run_tool([fs, "frobnicate"])
        assert r.returncode == 2 and "unknown command" in r.stderr
    finally:
        inst = mnt / "instances" / name
        if inst.exists():
            inst.rmdir()
        subprocess.run(["umount", str(mnt)], check=False)


def test_api_snapshot_has_the_waits(tree, compiled, instance, tmp_path):
    _, inst = instance
    prog = compiled("sched_waits.c")
    r = run_program([prog, "snapshot"], tmp_path / "snap", env={"FUNTRACE_SCHED": str(inst)}, want_core=False)
    assert r.returncode == 0, r.stderr
    waiter, waker = tids(r.stdout)
    raw_path = r.dir / "funtrace.raw"
    raw = rawfile.parse(raw_path)
    assert raw.sched["why"] == str(inst)
    check_waits(raw, prog, waiter, waker)
    # the window ends with the snapshot: nothing after it
    assert all(e["tsc"] <= raw.sched["to_tsc"] for e in raw.sched["events"])
    check_text(tree, raw_path, waiter, waker)
    check_json(tree, raw_path, tmp_path, waiter)


def test_signal_snapshot(tree, compiled, instance, tmp_path, spawn):
    """FUNTRACE_SIGNAL snapshot (from the signal handler, no allocation): the same events."""
    _, inst = instance
    prog = compiled("sched_waits.c")
    p = spawn([prog, "hold"], env={"FUNTRACE_SCHED": str(inst), "FUNTRACE_SIGNAL": "SIGUSR2"})
    waiter, waker = tids(p.stdout.readline())
    assert p.stdout.readline().strip() == b"ready"
    os.kill(p.pid, signal.SIGUSR2)
    raw_path = p.dir / "funtrace.raw"
    wait_for(lambda: raw_path.exists() and b"ENDTRACE" in raw_path.read_bytes(), what="signal snapshot")
    raw = rawfile.parse(raw_path)
    assert raw.siginfo and raw.siginfo["signo"] == signal.SIGUSR2
    check_waits(raw, prog, waiter, waker)


def test_coreextract_pid(tree, compiled, instance, tmp_path, spawn):
    _, inst = instance
    prog = compiled("sched_waits.c")
    p = spawn([prog, "hold"], env={"FUNTRACE_SCHED": "off"})  # the program's own setting does not matter
    waiter, waker = tids(p.stdout.readline())
    assert p.stdout.readline().strip() == b"ready"
    # main asleep in pause() (34): /proc/PID/syscall answers once the thread is off its CPU and
    # dequeued, so its switch out sleeping is in the events
    wait_for(lambda: (Path(f"/proc/{p.pid}/syscall").read_text().split() or [""])[0] == "34",
             what="the main thread asleep in pause()")
    out = tmp_path / "live.raw"
    r = run_tool([tree.tool("coreextract"), "-v", "-o", out, "--pid", str(p.pid)],
                 env={"FUNTRACE_SCHED": str(inst)})
    assert r.returncode == 0, r.stderr
    assert "scheduling events: captured" in r.stderr
    raw = rawfile.parse(out)
    check_waits(raw, prog, waiter, waker)
    # the main thread, still waiting in pause(): its last switch out is a sleep
    mains = [e for e in raw.sched["events"] if e["kind"] == "switch" and e["tid"] == p.pid]
    assert mains and mains[-1]["state"] == "S"
    check_text(tree, out, waiter, waker)


def test_core_pipe_handler(tree, compiled, instance, run_crash, tmp_path):
    """`coreextract -` as a core_pattern pipe handler would run it: the core on stdin right after
    the crash; the dying process's events are taken from the instance before the core is read."""
    _, inst = instance
    prog = compiled("sched_waits.c")
    run = run_crash([prog, "crash"])
    waiter, waker = tids(run.stdout)
    out = tmp_path / "core.raw"
    r = run_tool([tree.tool("coreextract"), "-v", "-o", out, "-"], input=run.core.read_bytes(), text=False,
                 env={"FUNTRACE_SCHED": str(inst)})
    assert r.returncode == 0, r.stderr
    raw = rawfile.parse(out)
    check_waits(raw, prog, waiter, waker)
    # the crash is in the events too: the waiter and waker exited (X) before it
    dead = {e["tid"] for e in raw.sched["events"] if e["kind"] == "switch" and e["state"] == "X"}
    assert {waiter, waker} <= dead
    txt = check_text(tree, out, waiter, waker)
    assert "[crashed]" in txt
    # a core file read later (not the pipe handler) has no SCHEDEVT
    r = run_tool([tree.tool("coreextract"), "-o", tmp_path / "file.raw", run.core])
    assert r.returncode == 0 and rawfile.parse(tmp_path / "file.raw").sched is None


def test_no_tracefs_one_line_why(tree, compiled, tmp_path):
    """Without tracefs access everything else works and one line says why there are no states."""
    prog = compiled("sched_waits.c")
    cases = {
        "off": "scheduling states are off (FUNTRACE_SCHED=off)",
        str(tmp_path / "no-such-instance"): f"no tracefs instance {tmp_path / 'no-such-instance'}",
    }
    for setting, why in cases.items():
        r = run_program([prog, "snapshot"], tmp_path / f"run{len(why)}", env={"FUNTRACE_SCHED": setting},
                        want_core=False)
        assert r.returncode == 0, r.stderr
        raw_path = r.dir / "funtrace.raw"
        raw = rawfile.parse(raw_path)
        assert raw.sched["status"] != 0 and raw.sched["events"] == [] and why in raw.sched["why"]
        assert len(raw.threads) >= 3
        d = run_tool([tree.tool("funtrace-decode"), raw_path, "--text"])
        assert d.returncode == 0, d.stderr
        lines = [ln for ln in d.stdout.splitlines() if ln.startswith("  sched:")]
        assert len(lines) == 1 and "none: " in lines[0] and why in lines[0], lines
        assert "wait_for_token" in d.stdout
        s = run_tool([tree.tool("funtrace-decode"), raw_path, "--summary"])
        assert s.returncode == 0 and re.search(r"^sched:\s+none: ", s.stdout, re.M)


def test_not_mounted(tree, compiled, tmp_path):
    """tracefs not mounted (a private mount namespace without it): the line says so."""
    if os.geteuid() != 0:
        pytest.skip("needs root (unshare -m)")
    prog = compiled("sched_waits.c")
    d = tmp_path / "nomount"
    d.mkdir()
    script = ("for m in $(awk '$3==\"tracefs\"{print $2}' /proc/self/mounts | sort -r); do "
              "umount -l \"$m\" || exit 9; done; exec \"$0\" snapshot")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(prog)], cwd=d,
                       capture_output=True, text=True, timeout=60)
    if r.returncode == 9:
        pytest.skip("cannot unmount tracefs in a private namespace")
    assert r.returncode == 0, r.stderr
    raw = rawfile.parse(d / "funtrace.raw")
    assert raw.sched["status"] == 2 and "tracefs is not mounted" in raw.sched["why"]


def test_not_root_no_permission(tree, compiled, instance, tmp_path):
    """A program that does not run as root cannot read the instance: one line says so."""
    _, inst = instance
    prog = compiled("sched_waits.c")
    d = tmp_path / "nobody"
    d.mkdir()
    os.chmod(d, 0o777)
    os.chmod(tmp_path, 0o755)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(prog), "snapshot"],
                       cwd=d, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FUNTRACE_SCHED=str(inst)))
    if r.returncode != 0 and "setpriv" in r.stderr:
        pytest.skip(f"setpriv: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    raw = rawfile.parse(d / "funtrace.raw")
    assert raw.sched["status"] in (3, 4), raw.sched  # the mount point itself is root-only: not even visible
    assert raw.sched["events"] == []
    t = run_tool([tree.tool("funtrace-decode"), d / "funtrace.raw", "--text"])
    assert t.returncode == 0
    assert len([ln for ln in t.stdout.splitlines() if ln.startswith("  sched:      none: ")]) == 1


def test_damaged_chunk_is_survived(tree, compiled, instance, tmp_path):
    """A SCHEDEVT chunk that announces more events than it holds: a warning, the rest decodes."""
    _, inst = instance
    prog = compiled("sched_waits.c")
    r = run_program([prog, "snapshot"], tmp_path / "dmg", env={"FUNTRACE_SCHED": str(inst)}, want_core=False)
    data = bytearray((r.dir / "funtrace.raw").read_bytes())
    i = data.index(b"SCHEDEVT")
    n = int.from_bytes(data[i + 16 + 12:i + 16 + 16], "little")
    data[i + 16 + 12:i + 16 + 16] = (n + 1000).to_bytes(4, "little")
    bad = tmp_path / "bad.raw"
    bad.write_bytes(bytes(data))
    t = run_tool([tree.tool("funtrace-decode"), bad, "--text"])
    assert t.returncode == 0, t.stderr
    assert f"holds {n} of its {n + 1000} scheduling events" in t.stderr
    assert "wait_for_token" in t.stdout


@pytest.mark.root
@pytest.mark.cgroup_v1
def test_oomwatch_parked_process(tree, instance, tmp_path, groups, watchers, monkeypatch):
    """funtrace-oomwatch reads a process parked at its v1 OOM limit: its raw has the process's
    scheduling events, the last of them the main thread blocking in the page fault."""
    _, inst = instance
    monkeypatch.setenv("FUNTRACE_SCHED", str(inst))  # the watcher inherits it
    hog = tree.example("oomhog")
    g1, g2 = groups.make(v1_limit=64 * 1024 * 1024, oom_kill_disable=True)
    out = tmp_path / "out"
    w = watchers(["--cgroup", g1, "--cgroup", g2, "-o", out, "--once"])
    w.wait_armed()
    # The instance records every task of the machine: on a busy machine its buffer can wrap
    # between the hog's parking and the watcher's read.  Keep only the hog's switches meanwhile,
    # so that what the test asserts does not depend on the machine's load.
    # (Every event of the instance is filtered: wakeups of other tasks alone -- e.g. a fuzzer's
    # fork server -- can fill a 2 MiB buffer per CPU within a second.)
    ev = inst / "events" / "sched"
    filters = {"sched_switch": 'prev_comm == "oomhog" || next_comm == "oomhog"',
               "sched_waking": 'comm == "oomhog"', "sched_wakeup_new": 'comm == "oomhog"'}
    try:
        for e, f in filters.items():
            if (ev / e / "filter").exists():
                (ev / e / "filter").write_text(f)
        p = groups.start([hog], [g1, g2])
        assert w.wait(60) == 0, w.log
    finally:
        for e in filters:
            if (ev / e / "filter").exists():
                (ev / e / "filter").write_text("0")
    raws = sorted(out.glob("*.raw"))
    assert len(raws) == 1, w.log
    raw = rawfile.parse(raws[0])
    s = raw.sched
    assert s is not None and s["status"] == 0, s
    outs = [e for e in s["events"] if e["kind"] == "switch" and e["tid"] == p.pid]
    assert outs and outs[-1]["state"] in "DS", (outs[-1:], len(s["events"]), s.get("note"), w.log)
    t = run_tool([tree.tool("funtrace-decode"), raws[0], "--text"])
    assert t.returncode == 0 and re.search(r"^  sched:      \d+ scheduling events", t.stdout, re.M)
    p.kill()
