"""Runtime: snapshots on FUNTRACE_SIGNAL and on crashes (FUNTRACE_ON_CRASH),
with real signals and real cores."""
import os
import signal
import subprocess

import pytest

from conftest import run_program, wait_for
from test_runtime_helpers import Syms, main_thread, only_snapshot, sequence, snapshots


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
    assert traces[0].header["source"] == 3 and traces[0].siginfo is None


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


@pytest.mark.parametrize("how,sig", [("segv", signal.SIGSEGV), ("abort", signal.SIGABRT),
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
