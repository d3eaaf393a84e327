"""The gdb extension through gdbserver (`target remote`, localhost TCP): gdb reads the
target's memory, so the command works where coreextract cannot reach -- a process
attached by gdbserver, and a process that crashed under gdbserver (the state a core
records; gdbserver serves no core files, so the core of it is taken through the
remote connection with gcore and read like any core)."""
import os
import select
import socket
import subprocess
import time
from pathlib import Path

import pytest

import rawfile
from conftest import BIN, require_tools
from test_gdb import (assert_same_chunks, call_name, capture, decode, run_gdb, section_of, text_sections,
                      wait_parked)

SIGSEGV = 11
pytestmark = pytest.mark.skipif(subprocess.run(["sh", "-c", "command -v gdbserver"]).returncode != 0,
                                reason="gdbserver is not installed (Debian package gdbserver)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gdbserver(spawn):
    """gdbserver(args...) -> port it listens on (localhost); the server is reaped at teardown."""
    def _start(*args):
        port = free_port()
        p = spawn(["gdbserver", "--once", f"127.0.0.1:{port}", *map(str, args)], name=f"gdbserver-{port}",
                  stdout=subprocess.DEVNULL)
        said = b""
        deadline = time.time() + 20
        while b"Listening on port" not in said:  # (a probe connection would use up --once)
            assert p.poll() is None and time.time() < deadline, said.decode(errors="replace")
            if select.select([p.stderr], [], [], 0.5)[0]:
                said += os.read(p.stderr.fileno(), 4096)
        return port
    return _start


def test_remote_attached_live_process(tree, compiled, spawn, gdbserver, tmp_path):
    require_tools(tree, "funtrace-decode", "coreextract")
    exe = compiled("gdb_wait.c")
    p = spawn([exe], name="target")
    assert p.stdout.readline().strip() == b"ready"
    wait_parked(p.pid)
    port = gdbserver("--attach", p.pid)
    out, tail = tmp_path / "remote.raw", tmp_path / "tail.txt"
    g = run_gdb(f"target remote 127.0.0.1:{port}", f"funtrace save {out}", capture("funtrace tail 3", tail),
                "detach", target=[exe], cwd=tmp_path)
    assert g.returncode == 0, g.stderr[-3000:]
    raw = rawfile.parse(out)
    assert raw.header["source"] == 2 and raw.header["pid"] == p.pid and raw.ended
    assert raw.siginfo is None, "gdbserver's stop is not the program's signal"
    assert any(m["path"] == str(exe) and m["build_id"] for m in raw.mappings), "maps read through gdbserver"
    assert {t.name for t in raw.threads} >= {"gdb_wait-pg", "gdb-worker"}
    assert raw.stacks and all(s.unwinder == 2 for s in raw.stacks)
    _h, lines = section_of(text_sections(tail.read_text()), "gdb-worker")
    assert call_name(lines[-1]) == "gdb_park"
    assert decode("--summary", out)
    # detached: it goes on, and coreextract --pid reads the same rings
    assert p.poll() is None
    ce = tmp_path / "ce.raw"
    c = subprocess.run([BIN / "coreextract", "--pid", str(p.pid), "-o", ce], capture_output=True, text=True,
                       timeout=120)
    assert c.returncode == 0, c.stderr
    same = ("CMD LINE", "MAPPINGS", "MODULES ", "THREADID", "TRACEBUF")
    assert [c for c in rawfile.chunks(out.read_bytes()) if c[0] in same] == \
           [c for c in rawfile.chunks(ce.read_bytes()) if c[0] in same]


def test_remote_crashed_process_and_its_core(tree, gdbserver, tmp_path):
    require_tools(tree, "funtrace-decode", "coreextract")
    exe = tree.example("crash")
    port = gdbserver(exe)
    out, core = tmp_path / "remote.raw", tmp_path / "core.gcore"
    g = run_gdb(f"target remote 127.0.0.1:{port}", "continue", f"funtrace save {out}", f"gcore {core}", "kill",
                target=[exe], cwd=tmp_path, timeout=180)
    assert g.returncode == 0, g.stderr[-3000:]
    assert "SIGSEGV" in g.stdout
    raw = rawfile.parse(out)
    loader = next(t for t in raw.threads if t.name == "loader")
    assert raw.siginfo is not None and raw.siginfo["signo"] == SIGSEGV and raw.siginfo["tid"] == loader.tid
    assert [s.tid for s in raw.stacks if s.flags & 1] == [loader.tid]
    secs = text_sections(decode("--text", "-n", 3, out))
    assert '"loader"' in list(secs)[0] and call_name(secs[list(secs)[0]][-1]) == "corrupt_record"
    # the core taken through gdbserver: gdb's raw equals coreextract's but for the stacks
    saved = tmp_path / "core.raw"
    g = run_gdb(f"funtrace save {saved}", target=[exe, core])
    assert g.returncode == 0, g.stderr[-3000:]
    ce = tmp_path / "ce.raw"
    c = subprocess.run([BIN / "coreextract", "-o", ce, core, exe], capture_output=True, text=True, timeout=120)
    assert c.returncode == 0, c.stderr
    assert_same_chunks(saved, ce)
    assert [t.entries for t in rawfile.parse(saved).threads] == [t.entries for t in raw.threads]
