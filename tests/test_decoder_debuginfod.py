"""funtrace-decode with debuginfod (DEBUGINFOD_URLS), against a real elfutils
debuginfod server on loopback: a program's debug info is split off into a
.debug file that only the server has; the stripped executable runs, crashes,
its core is extracted, and the decoder must get file:line from the server
(libdwfl's debuginfod support) -- and the executable itself when it is gone
from disk (the decoder's own libdebuginfod client)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import PROGS_SRC, compile_prog, run_program, run_tool

SRC = "dec_dbg.c"
FUNCS = ("main", "dbg_outer", "dbg_inner", "dbg_crash")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_id(path) -> str:
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"{path} has no build-id note:\n{out}"
    return m.group(1)


def http_status(url) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return 0


def src_line(prefix) -> int:
    for i, line in enumerate((PROGS_SRC / SRC).read_text().splitlines(), 1):
        if line.startswith(prefix):
            return i
    raise AssertionError(f"{prefix!r} not in {SRC}")


class Server:
    def __init__(self, base: Path, scan_dir: Path, bid: str):
        self.log = base / "debuginfod.log"
        self.proc = None
        self.url = None
        for _ in range(3):  # a port picked free may be taken before debuginfod binds it
            port = free_port()
            db = base / f"db-{port}.sqlite"
            logf = open(self.log, "w")
            # -t0: scan once, no rescans; -g0: no grooming; -c1: one scanner thread
            self.proc = subprocess.Popen(["debuginfod", "-F", "-p", str(port), "-d", str(db), "-t0", "-g0",
                                          "-c1", str(scan_dir)], stdout=logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
            logf.close()
            self.url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.proc.poll() is None:
                if all(http_status(f"{self.url}/buildid/{bid}/{kind}") == 200
                       for kind in ("debuginfo", "executable")):
                    return
                time.sleep(0.1)
            self.stop()
        pytest.skip(f"debuginfod did not serve build-id {bid} from {scan_dir}: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return self.log.read_text()[-1500:]
        except OSError:
            return "(no log)"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Setup:
    pass


@pytest.fixture(scope="module")
def served(tree, tmp_path_factory):
    """A stripped dec_dbg crashed into a raw; its debug info (and a stripped copy
    of the executable) served only by a local debuginfod."""
    if not shutil.which("debuginfod"):
        pytest.skip("debuginfod not installed (Debian package `debuginfod`)")
    if not any(Path(d, "libdebuginfod.so.1").exists()
               for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")):
        pytest.skip("libdebuginfod.so.1 not installed (Debian package `libdebuginfod1`)")
    base = tmp_path_factory.mktemp("dbgd")
    st = Setup()
    st.base = base
    full = compile_prog(tree, SRC, base / "build" / "dec_dbg.full", mode="pg")
    srv = base / "srv"
    srv.mkdir()
    st.debug = srv / "dec_dbg.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(st.debug)], check=True)
    st.exe = base / "bin" / "dec_dbg"
    st.exe.parent.mkdir()
    shutil.copy(full, st.exe)
    subprocess.run(["strip", "--strip-debug", str(st.exe)], check=True)
    secs = subprocess.run(["readelf", "-SW", str(st.exe)], capture_output=True, text=True).stdout
    assert ".debug_line" not in secs and ".dynsym" in secs and ".note.gnu.build-id" in secs, secs
    st.bid = build_id(st.exe)
    assert build_id(st.debug) == st.bid
    shutil.copy(st.exe, srv / "dec_dbg.exe")  # what /buildid/<id>/executable serves
    run = run_program([st.exe], base / "run")
    assert run.core is not None, f"no core (rc={run.returncode}): {run.stderr[-1000:]}"
    st.raw = base / "run" / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", st.raw, run.core, st.exe])
    assert ce.returncode == 0, ce.stderr
    st.server = Server(base, srv, st.bid)
    st.n = 0
    try:
        yield st
    finally:
        st.server.stop()


def decode(tree, st, url=None):
    """funtrace-decode --json with (url) or without DEBUGINFOD_URLS; -> (rc, stderr, json, cache dir)."""
    st.n += 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    cache = st.base / f"cache{st.n}"
    env["DEBUGINFOD_CACHE_PATH"] = str(cache)
    env["DEBUGINFOD_TIMEOUT"] = "10"
    if url:
        env["DEBUGINFOD_URLS"] = url
    out = st.base / f"t{st.n}.json"
    r = subprocess.run([str(tree.tool("funtrace-decode")), "--json", str(out), str(st.raw)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"rc={r.returncode}: {r.stderr}"
    data = json.loads(out.read_text())
    return r.stderr, data, cache


def names(data):
    return [e["name"] for e in data["traceEvents"] if e["ph"] == "X"]


def check_file_line(data):
    fi = data["file_info"]["functions"]
    for f, prefix in (("dbg_inner", "NI void dbg_inner("), ("dbg_outer", "NI void dbg_outer("),
                      ("dbg_crash", "NI void dbg_crash("), ("main", "int main(")):
        assert f in fi, f"no file:line for {f}: {fi}"
        path, line = fi[f]
        assert path.endswith("tests/progs/dec_dbg.c") and line == src_line(prefix), (f, path, line)


def test_debuginfo_from_debuginfod(tree, served):
    """The executable is on disk but stripped: names from .dynsym/.symtab both
    ways; file:line only when the server provides the debug file."""
    err, data, cache = decode(tree, served)
    assert sorted(set(names(data))) == sorted(FUNCS), names(data)
    assert data["file_info"]["functions"] == {}, "file:line without debug info: the test would prove nothing"
    assert not (cache / served.bid).exists()

    err, data, cache = decode(tree, served, served.server.url)
    assert names(data) == ["main", "dbg_outer", "dbg_inner", "dbg_inner", "dbg_crash"], names(data)
    check_file_line(data)
    assert "warning" not in err, err
    assert (cache / served.bid / "debuginfo").is_file()
    assert f"GET /buildid/{served.bid}/debuginfo 200" in served.server.log.read_text()


def test_missing_executable_from_debuginfod(tree, served):
    """The executable is gone from disk: without debuginfod one warning and
    module+offset names; with it the executable and its debug info are fetched."""
    away = served.exe.with_name("dec_dbg.away")
    served.exe.rename(away)
    try:
        err, data, cache = decode(tree, served)
        warns = [l for l in err.splitlines() if "warning" in l]
        assert len(warns) == 1 and f"cannot open {served.exe}" in warns[0], err
        assert all(re.fullmatch(r"dec_dbg\+0x[0-9a-f]+", n) for n in names(data)), names(data)

        err, data, cache = decode(tree, served, served.server.url)
        assert "warning" not in err, err
        assert names(data) == ["main", "dbg_outer", "dbg_inner", "dbg_inner", "dbg_crash"], names(data)
        check_file_line(data)
        assert (cache / served.bid / "executable").is_file()
        assert (cache / served.bid / "debuginfo").is_file()
    finally:
        away.rename(served.exe)


def test_unreachable_debuginfod(tree, served):
    """A dead DEBUGINFOD_URLS server degrades to what is on disk, quickly."""
    t0 = time.monotonic()
    err, data, _ = decode(tree, served, f"http://127.0.0.1:{free_port()}")
    assert time.monotonic() - t0 < 15
    assert sorted(set(names(data))) == sorted(FUNCS), names(data)
    assert data["file_info"]["functions"] == {}
