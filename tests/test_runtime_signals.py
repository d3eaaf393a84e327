"""Runtime: snapshots on FUNTRACE_SIGNAL and on crashes (FUNTRACE_ON_CRASH),
with real signals and real cores."""
import os
import signal
import subprocess

import pytest

import rawfile
from conftest import run_program, wait_for
from test_runtime_helpers import Syms, main_thread, only_snapshot, sequence, snapshots

SEGV_MAPERR, BUS_ADRERR, FPE_INTDIV, SI_USER, SI_TKILL = 1, 2, 1, 0, -6


def test_signal_raise_default_sigtrap(compiled, tmp_path):
    """SIGTRAP (the default) appends a snapshot to ./funtrace.raw and the
    program continues; two signals give two complete traces."""
    prog = compiled("rt_signal.c", "pg")
    r = run_program([prog, "raise", str(int(signal.SIGTRAP))], tmp_path / "run", want_core=False)
    assert r.returncode == 0 and r.stdout == "survived\n", r.stderr
    traces = snapshots(r.dir / "funtrace.raw")
    assert len(traces) == 2
    syms = Syms(prog)
    keep = {"sig_one", "sig_two"}
    s1 = sequence(traces[0], main_thread(traces[0]), syms, keep=keep)
    s2 = sequence(traces[1], main_thread(traces[1]), syms, keep=keep)
    assert s1 == [("sig_one", "call"), ("sig_one", "ret")]
    assert s2 == s1 + [("sig_two", "call"), ("sig_two", "ret")]
    for t in traces:  # raise() = tgkill by the process itself, handled by the main thread
        assert t.header["source"] == 3 and t.siginfo is not None
        assert (t.siginfo["signo"], t.siginfo["code"]) == (signal.SIGTRAP, SI_TKILL)
        assert t.siginfo["sender_pid"] == r.pid and t.siginfo["tid"] == r.pid


def test_signal_snapshot_says_who_sent_it(compiled, spawn, tool):
    """kill -TRAP from outside: the snapshot's SIGINFO records the signal,
    SI_USER and the sender's pid, and the decoder words it as a snapshot on
    SIGTRAP sent by that pid (not as a signal that killed the process)."""
    prog = compiled("rt_signal.c", "pg")
    p = spawn([prog, "hold"])
    assert p.stdout.readline() == b"ready\n"
    out = p.dir / "funtrace.raw"
    os.kill(p.pid, signal.SIGTRAP)
    wait_for(lambda: out.exists() and out.read_bytes().endswith(b"ENDTRACE" + bytes(8)), what="signal snapshot")
    assert p.poll() is None, "the program must survive the snapshot signal"
    raw = only_snapshot(out)
    assert raw.header["source"] == 3 and raw.siginfo is not None
    si = raw.siginfo
    assert (si["signo"], si["code"], si["sender_pid"]) == (signal.SIGTRAP, SI_USER, os.getpid())
    assert si["tid"] == p.pid and si["addr"] == 0
    t = tool("funtrace-decode", "--text", out)
    assert t.returncode == 0, t.stderr
    head = t.stdout.split("\nthread ")[0]
    assert f"snapshot:   on SIGTRAP (Trace/breakpoint trap), si_code 0 (SI_USER), sent by pid {os.getpid()}, " \
        f"thread {p.pid}" \
        in head, head
    assert "signal:" not in head and "none recorded" not in head
    assert t.stdout.split("\nthread ")[1].startswith(f'{p.pid} "') and "[signaled]" in t.stdout and \
        "[crashed]" not in t.stdout
    s = tool("funtrace-decode", "--summary", out)
    assert s.returncode == 0, s.stderr
    assert f"snapshot:    on SIGTRAP (Trace/breakpoint trap), si_code 0, sent by pid {os.getpid()}, thread {p.pid}\n" \
        in s.stdout, s.stdout
    assert "\nsignal:" not in s.stdout


def test_on_crash_snapshot_keeps_the_signal_wording(compiled, run_crash, tool, tmp_path):
    """the on-crash snapshot's SIGINFO is the fatal signal: the decoder
    still presents it as the signal (not as a snapshot request)"""
    prog = compiled("rt_crash.c", "pg")
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_crash([prog, "segv"], env={"FUNTRACE_ON_CRASH": str(d)})
    assert r.returncode == -signal.SIGSEGV
    f = d / f"funtrace-{r.pid}-{r.pid}.raw"
    t = tool("funtrace-decode", "--text", f)
    assert t.returncode == 0, t.stderr
    assert "  signal:     SIGSEGV (Segmentation fault), si_code 1 (SEGV_MAPERR), fault address 0x10" in t.stdout, \
        t.stdout
    assert "snapshot:   on" not in t.stdout and "[crashed]" in t.stdout
    s = tool("funtrace-decode", "--summary", f)
    assert s.returncode == 0 and f"\nsignal:      SIGSEGV, si_code 1, address 0x10, thread {r.pid}\n" in s.stdout


def test_signal_external_custom(compiled, tmp_path):
    """FUNTRACE_SIGNAL=SIGUSR1 + FUNTRACE_SIGNAL_FILE: kill -USR1 from outside
    writes the snapshot there while the program keeps running."""
    prog = compiled("rt_signal.c", "finstr")
    out = tmp_path / "sig.raw"
    p = subprocess.Popen([str(prog), "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         cwd=tmp_path, env={**os.environ, "FUNTRACE_SIGNAL": "SIGUSR1",
                                            "FUNTRACE_SIGNAL_FILE": str(out)})
    try:
        assert p.stdout.readline() == b"ready\n"
        os.kill(p.pid, signal.SIGUSR1)
        wait_for(lambda: out.exists() and out.read_bytes().endswith(b"ENDTRACE" + bytes(8)),
                 what="signal snapshot")
        assert p.poll() is None, "the program must survive the snapshot signal"
        p.stdin.close()
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    raw = only_snapshot(out)
    assert raw.header["pid"] == p.pid
    assert sequence(raw, main_thread(raw), Syms(prog), keep={"sig_one", "sig_two"}) == [
        ("sig_one", "call"), ("sig_one", "ret")]


def test_signal_none(compiled, tmp_path):
    """FUNTRACE_SIGNAL=none: SIGTRAP keeps its default action (core)."""
    prog = compiled("rt_signal.c", "pg")
    r = run_program([prog, "raise", str(int(signal.SIGTRAP))], tmp_path / "run",
                    env={"FUNTRACE_SIGNAL": "none"})
    assert r.returncode == -signal.SIGTRAP
    assert not (r.dir / "funtrace.raw").exists()


@pytest.mark.parametrize("how,sig", [("segv", signal.SIGSEGV), ("bus", signal.SIGBUS), ("abort", signal.SIGABRT),
                                     ("fpe", signal.SIGFPE), ("overflow", signal.SIGSEGV)])
def test_on_crash(compiled, run_crash, tmp_path, how, sig):
    """FUNTRACE_ON_CRASH=DIR: the crash writes DIR/funtrace-<pid>-<tid>.raw
    with a SIGINFO chunk, then the signal takes its normal course (the
    process dies of it and the kernel still writes the core).  A stack
    overflow is reported too (alternate signal stack)."""
    prog = compiled("rt_crash.c", "pg")
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_crash([prog, how], env={"FUNTRACE_ON_CRASH": str(d)})
    assert r.returncode == -sig
    assert r.core is not None and r.core.stat().st_size > 0
    files = list(d.iterdir())
    assert [f.name for f in files] == [f"funtrace-{r.pid}-{r.pid}.raw"]
    raw = only_snapshot(files[0])
    assert raw.siginfo is not None
    assert raw.siginfo["signo"] == sig and raw.siginfo["tid"] == r.pid
    if how == "segv":
        assert raw.siginfo["addr"] == 16 and raw.siginfo["code"] > 0
    syms = Syms(prog)
    seq = sequence(raw, main_thread(raw), syms)
    assert seq[:3] == [("main", "call"), ("cr_before", "call"), ("cr_before", "ret")]
    if how == "overflow":
        assert seq[3:6] == [("cr_recurse", "call")] * 3 and len(seq) > 1000
    else:
        assert seq[3:] == [("cr_" + how, "call")]




@pytest.mark.parametrize("how,sig,code", [("segv", signal.SIGSEGV, SEGV_MAPERR), ("bus", signal.SIGBUS, BUS_ADRERR),
                                          ("fpe", signal.SIGFPE, FPE_INTDIV),
                                          ("overflow", signal.SIGSEGV, SEGV_MAPERR)])
def test_on_crash_core_keeps_the_real_fault(compiled, run_crash, tool, tmp_path, how, sig, code):
    """With FUNTRACE_ON_CRASH, the kernel's core still records the real
    fault (the faulting instruction runs again under the previous
    disposition), not a signal the process sent itself: its SIGINFO has the
    fault's si_code and address, like the crash snapshot's."""
    prog = compiled("rt_crash.c", "pg")
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_crash([prog, how], env={"FUNTRACE_ON_CRASH": str(d)})
    assert r.returncode == -sig
    snap = only_snapshot(d / f"funtrace-{r.pid}-{r.pid}.raw").siginfo
    x = tool("coreextract", r.core, text=False)
    assert x.returncode == 0, x.stderr
    core = rawfile.parse(x.stdout).siginfo
    assert core is not None
    assert core["signo"] == sig and core["code"] == code and core["tid"] == r.pid
    assert core["sender_pid"] == 0 and core["addr"] != 0
    assert (snap["signo"], snap["code"], snap["addr"]) == (sig, code, core["addr"])
    if how == "segv":
        assert core["addr"] == 16
    elif how == "bus":
        assert core["addr"] == int(r.stdout.split()[1], 16)


def test_on_crash_sent_signal_reraised(compiled, run_crash, tool, tmp_path):
    """abort() (a signal the process sends itself) is re-raised: the core's
    SIGINFO says it was sent (SI_TKILL, by the process)."""
    prog = compiled("rt_crash.c", "pg")
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_crash([prog, "abort"], env={"FUNTRACE_ON_CRASH": str(d)})
    assert r.returncode == -signal.SIGABRT
    x = tool("coreextract", r.core, text=False)
    assert x.returncode == 0, x.stderr
    core = rawfile.parse(x.stdout).siginfo
    assert (core["signo"], core["code"], core["sender_pid"]) == (signal.SIGABRT, SI_TKILL, r.pid)


def test_snapshots_without_memory(compiled, tmp_path):
    """The signal snapshot and the on-crash snapshot of a process that can no
    longer map memory (RLIMIT_AS at its current size: every mmap fails) are
    complete: the MAPPINGS buffer was allocated at start-up, nothing is
    allocated while they are written."""
    prog = compiled("rt_nomem.c", "pg")
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_program([prog], tmp_path / "run", env={"FUNTRACE_ON_CRASH": str(d)}, want_core=False)
    assert r.stdout == "start\nlimited\n", (r.returncode, r.stdout, r.stderr)
    assert r.returncode == -signal.SIGSEGV, r.stderr
    assert r.stderr == "", r.stderr  # e.g. no "MAPPINGS chunk is truncated"
    syms = Syms(prog)
    sig = only_snapshot(r.dir / "funtrace.raw")
    crash = only_snapshot(d / f"funtrace-{r.pid}-{r.pid}.raw")
    assert crash.siginfo["signo"] == signal.SIGSEGV and crash.siginfo["addr"] == 16
    keep = {"nm_before", "nm_after", "nm_crash"}
    assert sequence(sig, main_thread(sig), syms, keep=keep) == [
        ("nm_before", "call"), ("nm_before", "ret"), ("nm_after", "call"), ("nm_after", "ret")]
    assert sequence(crash, main_thread(crash), syms, keep=keep)[-1] == ("nm_crash", "call")
    for raw in (sig, crash):
        paths = {m["path"] for m in raw.mappings}
        assert str(prog) in paths and any("/libc.so" in p for p in paths), paths
        assert len(raw.mappings) >= 10
        exe = [m for m in raw.mappings if m["path"] == str(prog) and m["offset"] == 0]
        assert exe and exe[0]["build_id"], exe
