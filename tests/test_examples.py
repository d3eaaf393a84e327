"""The example programs (examples/): built with the compiler wrappers, and each
does what its comment says -- the demo, the README and other tests rely on it."""
import re
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

import rawfile
from conftest import (functions_in_trace, raw_modules, require_tools,
                      run_program, run_tool, wait_for)

PROGRAMS = ["crash", "abort", "oomhog", "server", "plugin"]
PLUGINS = ["libplugin_a.so", "libplugin_b.so"]


@pytest.fixture(scope="module")
def ex(tree):
    """tree, after checking that make built every example."""
    missing = [n for n in PROGRAMS + PLUGINS if not tree.example(n).exists()]
    assert not missing, f"make did not build build/examples/{missing}"
    return tree


def gdb_backtraces(exe, core) -> str:
    r = run_tool(["gdb", "-q", "-nx", "-batch", "-ex", "thread apply all bt", exe, core], timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def decode_text(tree, raw_path) -> str:
    r = run_tool([tree.tool("funtrace-decode"), raw_path, "--text"], timeout=120)
    assert r.returncode == 0, f"funtrace-decode --text {raw_path}: rc={r.returncode}\n{r.stderr}"
    return r.stdout


# --------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------

def test_examples_are_linked_with_the_runtime(ex):
    """Every example executable carries the runtime (funtrace_root exported in
    .dynsym, where readers look for it); the plugins are instrumented but do not
    carry a second runtime."""
    for name in PROGRAMS:
        r = run_tool(["nm", "-D", "--defined-only", ex.example(name)])
        assert r.returncode == 0, r.stderr
        assert re.search(r"\bfuntrace_root\b", r.stdout), f"{name}: funtrace_root not in .dynsym"
    for name in PLUGINS:
        r = run_tool(["nm", "-D", ex.example(name)])
        assert r.returncode == 0, r.stderr
        assert not re.search(r" [BDT] funtrace_root\b", r.stdout), f"{name} defines its own funtrace_root"
        hooks = re.findall(r" U (__fentry__|__return__|__cyg_profile_func_enter|\S*funtrace\S*)", r.stdout)
        assert hooks, f"{name} is not instrumented (no undefined hook symbol):\n{r.stdout}"


# --------------------------------------------------------------------------
# crash
# --------------------------------------------------------------------------

def test_crash_dies_of_sigsegv_in_corrupt_record(ex, run_crash):
    r = run_crash([ex.example("crash")])
    assert r.signal == signal.SIGSEGV, f"rc={r.returncode} stderr={r.stderr}"
    assert '"loader" will crash on record 403' in r.stdout
    bt = gdb_backtraces(ex.example("crash"), r.core)
    # the crashing thread, and every other thread in its documented state
    assert re.search(r"#0 .*corrupt_record .*\n#1 .*parse_record .*\n#2 .*process_item .*id=(id@entry=)?403", bt), bt
    assert len(re.findall(r"wait_for_more_work", bt)) == 2, bt
    assert "hash_forever" in bt and "wait_for_workers" in bt, bt


def test_crash_trace_has_every_thread(ex, run_crash):
    """coreextract on the crash's core: five threads with their names, the
    SIGSEGV on the loader, and each thread's last functions in its ring."""
    require_tools(ex, "coreextract")
    exe = ex.example("crash")
    r = run_crash([exe])
    assert r.signal == signal.SIGSEGV
    out = run_tool([ex.tool("coreextract"), r.core, exe], text=False)
    assert out.returncode == 0, out.stderr
    raw = rawfile.parse(out.stdout)
    assert raw.ended
    # (the runtime's own housekeeping thread, "funtrace", may be listed too)
    names = sorted(t.name for t in raw.threads if t.name != "funtrace")
    assert names == sorted(["crash", "parser-1", "parser-2", "hasher", "loader"]), names
    loader = next(t for t in raw.threads if t.name == "loader")
    assert raw.siginfo and raw.siginfo["signo"] == signal.SIGSEGV
    assert raw.siginfo["tid"] == loader.tid
    found = functions_in_trace(raw, exe, ["corrupt_record", "wait_for_more_work", "mix_round",
                                          "wait_for_workers"])
    assert list(found["corrupt_record"]) == [loader.tid]
    calls = [e for e in found["corrupt_record"][loader.tid] if not e.ret]
    assert calls and not [e for e in found["corrupt_record"][loader.tid] if e.ret], \
        "corrupt_record must be called and never return"
    by_name = {t.tid: t.name for t in raw.threads}
    assert sorted(by_name[t] for t in found["wait_for_more_work"]) == ["parser-1", "parser-2"]
    assert [by_name[t] for t in found["mix_round"]] == ["hasher"]
    assert [by_name[t] for t in found["wait_for_workers"]] == ["crash"]


# --------------------------------------------------------------------------
# abort
# --------------------------------------------------------------------------

def test_abort_uncaught_exception_aborts(ex, run_crash):
    r = run_crash([ex.example("abort")])
    assert r.signal == signal.SIGABRT, f"rc={r.returncode} stderr={r.stderr}"
    assert "malformed value for port: 80x; trying the fallback" in r.stdout
    assert "loading fallback configuration" in r.stdout
    assert "terminate called after throwing an instance of 'std::out_of_range'" in r.stderr
    bt = gdb_backtraces(ex.example("abort"), r.core)
    assert "abort" in bt and "load_with_fallback" in bt, bt


# --------------------------------------------------------------------------
# oomhog
# --------------------------------------------------------------------------

def test_oomhog_stops_at_limit_mb(ex, tmp_path):
    r = run_program([ex.example("oomhog"), "--limit-mb", "40", "--step-ms", "0"], tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "oomhog: 16 MiB" in r.stdout and "oomhog: 32 MiB" in r.stdout
    assert r.stdout.rstrip().endswith("oomhog: reached --limit-mb 40: 40 MiB in use"), r.stdout


def test_oomhog_really_uses_the_memory(ex, spawn):
    p = spawn([ex.example("oomhog"), "--limit-mb", "48", "--step-ms", "0", "--hold"], text=True)
    line = wait_for(lambda: _read_until(p, "reached --limit-mb"), timeout=30, what="oomhog at its limit")
    assert "48 MiB in use" in line
    status = Path(f"/proc/{p.pid}/status").read_text()
    rss_kb = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))
    assert rss_kb >= 48 * 1024, status


def test_oomhog_pauses_until_sigusr1(ex, spawn):
    """--pause-at-mb holds the hog at a known size until it is told to go on: a
    SIGUSR1 sent before it gets there (after its first line) is kept, not fatal."""
    p = spawn([ex.example("oomhog"), "--limit-mb", "24", "--step-ms", "0", "--pause-at-mb", "20"], text=True)
    wait_for(lambda: _read_until(p, "pausing at 20 MiB until SIGUSR1"), timeout=30, what="the pause")
    time.sleep(0.2)
    assert p.poll() is None
    rss_kb = int(re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{p.pid}/status").read_text()).group(1))
    assert 20 * 1024 <= rss_kb < 24 * 1024, rss_kb
    p.send_signal(signal.SIGUSR1)
    assert p.wait(timeout=30) == 0
    assert p.stdout.read().rstrip().endswith("oomhog: reached --limit-mb 24: 24 MiB in use")

    early = spawn([ex.example("oomhog"), "--limit-mb", "8", "--step-ms", "5", "--pause-at-mb", "4"], text=True)
    wait_for(lambda: _read_until(early, "growing 1 MiB at a time"), timeout=30, what="the first line")
    early.send_signal(signal.SIGUSR1)
    assert early.wait(timeout=30) == 0, early.stderr.read()
    assert "growing again" in early.stdout.read()


def _read_until(p, text):
    line = p.stdout.readline()
    if not line and p.poll() is not None:
        raise AssertionError(f"oomhog exited early: rc={p.returncode} {p.stderr.read()}")
    return line if text in line else None


def test_oomhog_aborts_when_malloc_fails(ex, tmp_path):
    """Without --limit-mb it grows until malloc fails (here: RLIMIT_AS), then aborts."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (192 << 20, 192 << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    p = subprocess.run([str(ex.example("oomhog")), "--step-ms", "0"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60, preexec_fn=limit, stdin=subprocess.DEVNULL)
    assert p.returncode == -signal.SIGABRT, (p.returncode, p.stderr)
    m = re.search(r"oomhog: malloc failed after (\d+) MiB: aborting", p.stderr)
    assert m and 16 <= int(m.group(1)) < 192, p.stderr


# --------------------------------------------------------------------------
# server
# --------------------------------------------------------------------------

def test_server_snapshots_the_slow_request(ex, tmp_path):
    exe = ex.example("server")
    r = run_program([exe, "--threads", "3", "--requests", "3000", "--slow-every", "500",
                     "--out", "slow.raw"], tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    m = re.search(r"server: request (\d+) took ([\d.]+) ms \(threshold 20 ms\): snapshot written to slow.raw",
                  r.stdout)
    assert m, r.stdout
    assert int(m.group(1)) % 500 == 499, "the snapshot must be of an injected slow request"
    assert float(m.group(2)) >= 55, "slow_disk_read sleeps 60 ms"

    raw = rawfile.parse(tmp_path / "slow.raw")
    assert raw.ended
    assert raw.header["source"] == 3  # FT_SRC_SNAPSHOT
    assert raw.header["flags"] & 0x4, "a snapshot starting at a time is TIME_FILTERED"
    names = {t.name for t in raw.threads}
    assert {"server-1", "server-2", "server-3"} <= names, names
    found = functions_in_trace(raw, exe, ["handle_request", "lookup_user", "slow_disk_read", "save_snapshot"])
    # the thread that took the snapshot has its whole slow request: one call and
    # one return of slow_disk_read (other threads may have served later slow
    # requests meanwhile, finished or not)
    assert len(found["save_snapshot"]) == 1, found["save_snapshot"]
    (tid,) = found["save_snapshot"]
    assert [e.ret for e in found["slow_disk_read"].get(tid, [])] == [False, True], found["slow_disk_read"]
    assert tid in found["handle_request"] and tid in found["lookup_user"]
    for other, evs in found["slow_disk_read"].items():  # call, return, call, ...
        # (another thread's slow request may have begun before the window the
        # snapshot starts at: its events then begin with that call's return)
        first = int(bool(evs) and evs[0].ret)
        assert [e.ret for e in evs] == [i % 2 == 1 for i in range(first, first + len(evs))], evs
    # nothing older than the slow request's start
    for t in raw.threads:
        for e in t.events():
            assert e.tsc == 0 or e.tsc >= raw.header["min_tsc"]


def test_server_without_slow_requests_writes_nothing(ex, tmp_path):
    r = run_program([ex.example("server"), "--requests", "300", "--slow-every", "0", "--out", "x.raw"],
                    tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "server: 300 requests, none slower than 20 ms: no snapshot" in r.stdout
    assert not (tmp_path / "x.raw").exists()


def test_server_snapshot_decodes(ex, tmp_path):
    require_tools(ex, "funtrace-decode")
    r = run_program([ex.example("server"), "--out", "slow.raw"], tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    text = decode_text(ex, tmp_path / "slow.raw")
    for fn in ("handle_request", "lookup_user", "slow_disk_read", "render_response"):
        assert fn in text, f"{fn} missing from the decoded snapshot"


# --------------------------------------------------------------------------
# plugin
# --------------------------------------------------------------------------

def _a(n):
    x = n
    for _ in range(n):
        x = (x * 3 + 1) % 1000003
    return x


def _b(n):
    h = 1469598103934665603
    for i in range(n):
        h = ((h ^ i) * 1099511628211) % (1 << 64)
    return h % 1000003


def test_plugin_loads_unloads_and_snapshots(ex, tmp_path):
    r = run_program([ex.example("plugin"), "--out", "p.raw"], tmp_path / "elsewhere", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"plugin: a(5) = {_a(5)}", f"plugin: b(6) = {_b(6)}", "plugin: unloaded a and b",
        f"plugin: a(7) = {_a(7)}", "plugin: snapshot written to p.raw"], r.stdout
    raw = rawfile.parse(tmp_path / "elsewhere" / "p.raw")
    assert raw.ended
    paths = [m["path"] for m in raw_modules(raw)]
    assert any(p.endswith("/libplugin_a.so") for p in paths), paths
    # b was unloaded before the snapshot: the module table still knows it
    b = [m for m in raw_modules(raw) if m["path"].endswith("/libplugin_b.so")]
    assert b and all(m["state"] == "unloaded" for m in b), b


def test_plugin_snapshot_names_unloaded_code(ex, tmp_path):
    require_tools(ex, "funtrace-decode")
    r = run_program([ex.example("plugin"), "--out", "p.raw"], tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    text = decode_text(ex, tmp_path / "p.raw")
    for fn in ("a_transform", "a_step", "b_hash", "b_mix", "load_plugin", "unload_plugin"):
        assert fn in text, f"{fn} missing from the decoded snapshot"


def test_plugin_crash_in_library(ex, run_crash):
    r = run_crash([ex.example("plugin"), "--crash"])
    assert r.signal == signal.SIGSEGV, r.stderr
    assert "plugin: making a crash" in r.stdout
    bt = gdb_backtraces(ex.example("plugin"), r.core)
    assert re.search(r"#0 .*a_fault", bt), bt
