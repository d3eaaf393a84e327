"""Runtime: recorded call sequences per instrumentation mode, register
preservation of the hooks, rings (wrap-around, FUNTRACE_BUF, sampled mode),
longjmp, C++ exceptions, the exported root.  Rings are read back through the
runtime's own snapshot files (raw format) and, for the call pattern in every
instrumentation and time mode, through a real core with coreextract."""
import os
import shutil
import signal
import subprocess

import pytest

import rawfile
from conftest import run_program, run_tool
from test_runtime_helpers import Syms, main_thread, only_snapshot, sequence, snapshots

MODES = ["pg", "finstr", pytest.param("clang", marks=pytest.mark.clang), pytest.param("xray", marks=pytest.mark.clang)]

PATTERN_FUNCS = {"pat_a", "pat_b", "pat_c", "pat_d", "pat_hidden"}
PATTERN = ([("pat_a", "call"), ("pat_b", "call"),
            ("pat_c", "call"), ("pat_c", "ret"), ("pat_c", "call"), ("pat_c", "ret"),
            ("pat_b", "ret"), ("pat_a", "ret")] * 2
           + [("pat_d", "call"), ("pat_c", "call"), ("pat_c", "ret"), ("pat_d", "ret")])


def run_snapshot(prog, tmp_path, name="run", env=None, args=()):
    r = run_program([prog, *args], tmp_path / name, env=env, want_core=False)
    assert r.returncode == 0, r.stderr
    return r, only_snapshot(r.dir / "funtrace.raw")


@pytest.mark.parametrize("mode", MODES)
def test_pattern_sequence(compiled, tmp_path, mode):
    """The recorded call/return sequence equals the program's call pattern;
    the NOFUNTRACE function is absent (its callee is still traced)."""
    prog = compiled("rt_pattern.c", mode)
    r, raw = run_snapshot(prog, tmp_path)
    assert r.stdout == "done\n"
    assert raw.header["source"] == 3 and raw.header["pid"] == r.pid
    assert raw.header["time_mode"] == 0
    t = main_thread(raw)
    assert t.tid == r.pid and t.state == 1 and t.fmt == 3
    syms = Syms(prog)
    seq = sequence(raw, t, syms, keep=PATTERN_FUNCS | {"main"})
    assert seq[0] == ("main", "call")
    assert seq[1:] == PATTERN
    # call entries of -finstrument-functions carry the "return logged on throw" flag
    b = raw.header["root_addr"] - syms.addr["funtrace_root"]
    calls = [w for w, _ in t.entries if syms.name((w & rawfile.ADDR_MASK) - b) == "pat_a" and not w >> 62]
    assert calls and all(bool(w & rawfile.F_CALL_RET_ON_THROW) == (mode in ("finstr", "clang")) for w in calls)
    # timestamps are non-decreasing
    tscs = [e.tsc for e in t.events()]
    assert tscs == sorted(tscs) and tscs[0] > 0


def check_stamps(ev, k):
    """FT_FMT_SAMPLED4 events [(word, tsc or None)]: the stamped ones are leaf returns
    (the event before is the call of the same address), the first one is the first
    leaf return, each next one the first leaf return once (k + 1) // 2 returns (k
    events, calls included) have followed the previous, and their times increase."""
    leaf = [i for i in range(1, len(ev)) if ev[i][0] & rawfile.F_RET and not ev[i - 1][0] & rawfile.F_RET]
    rets = [i for i in range(len(ev)) if ev[i][0] & rawfile.F_RET]
    idx = [i for i, (_, tsc) in enumerate(ev) if tsc is not None]
    assert len(idx) >= 3, idx
    assert idx[0] == leaf[0]
    for i in idx:
        assert i in leaf and ev[i][0] & rawfile.ADDR_MASK == ev[i - 1][0] & rawfile.ADDR_MASK
    for a, b in zip(idx, idx[1:]):
        due = [i for i in rets if i > a][(k + 1) // 2 - 1]  # the return that brings the count to 0
        assert b == next(i for i in leaf if i >= due), (a, b)
    tsc = [ev[i][1] for i in idx]
    assert tsc == sorted(tsc) and tsc[0] > 0


def test_sampled_mode(compiled, tmp_path):
    """FUNTRACE_TIME=sampled: 4-byte items (FT_FMT_SAMPLED4); the thread's first
    leaf return, and then the first leaf return once FUNTRACE_SAMPLE_K events
    have passed, is a stamped return (its address is its call's); same call
    sequence; at most 8 bytes per call+return."""
    prog = compiled("rt_pattern.c", "pg")
    r, raw = run_snapshot(prog, tmp_path, env={"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "4",
                                               "FUNTRACE_GEN_MS": "0"})
    assert raw.header["time_mode"] == 1
    t = main_thread(raw)
    assert t.fmt == 4
    assert any(m == "TRACES04" for m, _ in raw.chunks)
    ev = t.entries
    check_stamps(ev, 4)
    assert len(t.items) * 4 <= 8 * len(ev) // 2 + 8 * 4   # <= 8 B per call+return, + escapes
    syms = Syms(prog)
    assert sequence(raw, t, syms, keep=PATTERN_FUNCS) == PATTERN


def core_raw(tree, r, prog, tmp_path):
    """coreextract CORE EXE -> parsed raw"""
    out = tmp_path / "core.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", out, r.core, prog], timeout=60)
    assert ce.returncode == 0, ce.stderr
    raw = only_snapshot(out)
    assert raw.header["source"] == 1  # CORE
    return raw


@pytest.mark.parametrize("mode", MODES)
def test_pattern_from_core(tree, compiled, run_crash, tmp_path, mode):
    """The program dies of SIGSEGV right after the call pattern: the rings
    that coreextract reads from the kernel's core hold exactly the pattern,
    and the same entries (addresses, flags and TSCs) as the snapshot the
    runtime's on-crash handler wrote from inside the process."""
    prog = compiled("rt_pattern.c", mode)
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_crash([prog, "crash"], env={"FUNTRACE_ON_CRASH": str(d)})
    assert r.returncode == -signal.SIGSEGV and r.stdout == ""
    raw = core_raw(tree, r, prog, tmp_path)
    assert raw.header["pid"] == r.pid and raw.header["time_mode"] == 0
    assert raw.siginfo["signo"] == signal.SIGSEGV and raw.siginfo["addr"] == 0
    t = main_thread(raw)
    assert t.tid == r.pid and t.state == 1 and t.fmt == 3
    assert not t.flags & (rawfile.TSF["UNCOMMITTED"] | rawfile.TSF["TORN"])
    syms = Syms(prog)
    assert sequence(raw, t, syms, keep=PATTERN_FUNCS | {"main"}) == [("main", "call")] + PATTERN
    snap = only_snapshot(d / f"funtrace-{r.pid}-{r.pid}.raw")
    assert main_thread(snap).entries == t.entries


def test_sampled_pattern_from_core(tree, compiled, run_crash, tmp_path):
    """Sampled mode through a core: 4-byte items, a stamped return every k
    events (or the next return), the same call pattern."""
    prog = compiled("rt_pattern.c", "finstr")
    r = run_crash([prog, "crash"], env={"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "3",
                                        "FUNTRACE_GEN_MS": "0"})
    raw = core_raw(tree, r, prog, tmp_path)
    assert raw.header["time_mode"] == 1
    t = main_thread(raw)
    assert t.fmt == 4 and any(m == "TRACES04" for m, _ in raw.chunks)
    check_stamps(t.entries, 3)
    assert sequence(raw, t, Syms(prog), keep=PATTERN_FUNCS | {"main"}) == [("main", "call")] + PATTERN


@pytest.mark.parametrize("mode", MODES)
def test_registers_preserved(compiled, tmp_path, mode):
    """A variadic function taking doubles called 1,000,000 times returns 0
    wrong results; rdx/r10/st0/128-bit returns intact; the -pg hooks called
    directly from assembly give back every GPR (rax..r11) and xmm0-15, and DF
    (clear, and on the hot path also deliberately set), on the cold path (the
    thread's first event) and the hot path - in exact mode, sampled mode, and
    sampled mode with a time word every 2nd event.  The arithmetic flags are
    call-clobbered (not checked; FORMAT.md 1.4)."""
    prog = compiled("rt_regs.c", mode, extra=["-DRT_PG"] if mode == "pg" else None)
    for i, env in enumerate(({}, {"FUNTRACE_TIME": "sampled"},
                             {"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "2"})):
        r = run_program([prog], tmp_path / f"run{i}", env=env, want_core=False)
        assert "vsum wrong results: 0\n" in r.stdout, r.stdout
        assert r.stdout.endswith("bad=0\n"), r.stdout
        assert r.returncode == 0


@pytest.mark.parametrize("mode", ["pg", "finstr"])
@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_pause_during_hot_path(compiled, tmp_path, mode, time):
    """2000 pauses (disable/enable tracing) landing anywhere in a thread's
    hooks while it calls in a tight loop: its ring position stays valid and
    it keeps recording afterwards (a hook that wrapped pos with a second
    read of the mask would commit pos = 0 and go silent)."""
    prog = compiled("rt_pause.c", mode)
    r, raw = run_snapshot(prog, tmp_path, env={"FUNTRACE_TIME": time})
    assert r.stdout == "done\n"
    workers = [t for t in raw.threads if t.tid != r.pid and t.name != "funtrace"]
    assert len(workers) == 1
    w = workers[0]
    assert not w.flags & rawfile.TSF["BAD_POS"] and 0 <= w.pos_off < w.ring_size
    seq = sequence(raw, w, Syms(prog), keep={"pz_marker"})
    assert seq == [("pz_marker", "call"), ("pz_marker", "ret")]


@pytest.mark.parametrize("mode", MODES)
def test_longjmp(compiled, tmp_path, mode):
    """longjmp out of two traced frames: their returns are missing, and the
    calls after the longjmp are recorded normally."""
    prog = compiled("rt_longjmp.c", mode)
    _, raw = run_snapshot(prog, tmp_path)
    seq = sequence(raw, main_thread(raw), Syms(prog), keep={"lj_a", "lj_b", "lj_c", "lj_after"})
    assert seq == [("lj_a", "call"), ("lj_b", "call"), ("lj_c", "call"),
                   ("lj_after", "call"), ("lj_after", "ret"), ("lj_a", "ret")]


@pytest.mark.parametrize("mode", MODES)
def test_cxx_exception(compiled, tmp_path, mode):
    """A C++ exception thrown two frames below the catcher: a landing-pad
    entry names each function whose cleanup code or handler the unwinder
    enters (the catcher's handler; under gcc -finstrument-functions also
    the unwound frames' cleanups, which log their returns), and a catch
    entry names the catching function."""
    prog = compiled("rt_exc.cc", mode)
    _, raw = run_snapshot(prog, tmp_path)
    names = {"ex_thrower", "ex_mid", "ex_catcher", "ex_after"}
    seq = sequence(raw, main_thread(raw), Syms(prog), keep=names)
    head = [("ex_catcher", "call"), ("ex_mid", "call"), ("ex_thrower", "call")]
    tail = [("ex_catcher", "landing"), ("ex_catcher", "catch"), ("ex_catcher", "ret"), ("ex_after", "call"),
            ("ex_after", "ret")]
    if mode == "finstr":
        middle = [("ex_thrower", "landing"), ("ex_thrower", "ret"), ("ex_mid", "landing"), ("ex_mid", "ret")]
    else:
        middle = []
    assert seq == head + middle + tail, seq


def test_wraparound_and_buf_size(compiled, tmp_path):
    """FUNTRACE_BUF=4096: a 512-entry ring (8-byte entries) that wrapped keeps
    exactly the newest entries, oldest first (the slot at pos, and the
    escapes, are not events); funtrace_set_thread_log_buf_size()."""
    prog = compiled("rt_wrap.c", "pg")
    # no housekeeper: a late one (a busy machine) would register its IGNORED record
    # after the resize, in the retired record's slot (EVICTED slots are reused first)
    r, raw = run_snapshot(prog, tmp_path, env={"FUNTRACE_BUF": "4096", "FUNTRACE_GEN_MS": "0"})
    t = main_thread(raw)
    assert t.ring_size == 4096
    assert t.flags & rawfile.TSF["WRAPPED"]
    assert 511 - 4 <= len(t.entries) <= 511 and len(t.items) in (511, 512)
    syms = Syms(prog)
    seq = sequence(raw, t, syms)
    # 1000 wrap_early calls, then 40 wrap_late calls: the newest 80 events are
    # wrap_late, everything before them in the ring is wrap_early
    late = [("wrap_late", "call"), ("wrap_late", "ret")] * 40
    assert seq[-80:] == late
    assert set(seq[:-80]) <= {("wrap_early", "call"), ("wrap_early", "ret"), ("main", "call")}
    assert len(seq) >= 500
    tscs = [e.tsc for e in t.events()]
    assert tscs == sorted(tscs)
    # the second thread resized its own ring to 2^13 bytes: a new record,
    # the old one retired (EVICTED, its ring and events dropped)
    other = [x for x in raw.threads if x.tid != t.tid and x.state in (1, 2)]
    assert [x.ring_size for x in other] == [8192]
    retired = [x for x in raw.threads if x.tid == other[0].tid and x.state == 3]
    assert len(retired) == 1 and retired[0].entries == []
    assert sequence(raw, other[0], syms, keep={"wrap_thread_fn"}) == [("wrap_thread_fn", "call"),
                                                                     ("wrap_thread_fn", "ret")]


def test_buf_env_invalid(compiled, tmp_path):
    """An invalid FUNTRACE_BUF is reported on stderr and the default used; a
    valid one may end in K, M or G."""
    prog = compiled("rt_pattern.c", "pg")
    r, raw = run_snapshot(prog, tmp_path, env={"FUNTRACE_BUF": "5000"})
    assert "FUNTRACE_BUF" in r.stderr and len(r.stderr.splitlines()) == 1
    assert main_thread(raw).ring_size == 1 << 20
    r, raw = run_snapshot(prog, tmp_path, name="ok", env={"FUNTRACE_BUF": "65536"})
    assert r.stderr == ""
    assert main_thread(raw).ring_size == 65536
    # binary multiples, as a user writes them
    for i, (v, size) in enumerate([("16K", 16384), ("64KiB", 65536), ("2M", 2 << 20), ("32kB", 32768)]):
        r, raw = run_snapshot(prog, tmp_path, name=f"suffix{i}", env={"FUNTRACE_BUF": v})
        assert r.stderr == "", (v, r.stderr)
        assert main_thread(raw).ring_size == size, v
    for i, v in enumerate(["16Q", "K", "16KiBx", "17179869184G"]):
        r, raw = run_snapshot(prog, tmp_path, name=f"bad{i}", env={"FUNTRACE_BUF": v})
        assert "FUNTRACE_BUF" in r.stderr and len(r.stderr.splitlines()) == 1, (v, r.stderr)
        assert main_thread(raw).ring_size == 1 << 20, v


def test_stripped_binary_root_in_dynsym(compiled, tmp_path):
    """funtrace_root (and the hooks) are in .dynsym, so they survive strip;
    the stripped program still works and reports the same root."""
    prog = compiled("rt_pattern.c", "pg")
    stripped = tmp_path / "stripped"
    shutil.copy(prog, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    dyn = subprocess.run(["readelf", "--dyn-syms", "-W", str(stripped)], capture_output=True,
                         text=True, check=True).stdout
    names = {line.split()[-1] for line in dyn.splitlines() if line.strip()[:1].isdigit()}
    for sym in ("funtrace_root", "__fentry__", "__return__", "__cyg_profile_func_enter",
                "__cyg_profile_func_exit", "dlopen", "dlclose", "funtrace_write_snapshot_fd"):
        assert sym in names, sym
    sym = subprocess.run(["nm", "-D", str(stripped)], capture_output=True, text=True).stdout
    root_off = int(next(l.split()[0] for l in sym.splitlines() if l.endswith(" funtrace_root")), 16)
    _, raw = run_snapshot(stripped, tmp_path)
    assert raw.header["root_addr"] % 64 == 0
    assert (raw.header["root_addr"] - root_off) % 4096 == 0  # PIE bias is page aligned
    assert len(main_thread(raw).events()) > 10


def test_magic_not_in_binary(compiled):
    """The root magic is only in the binary complemented."""
    prog = compiled("rt_pattern.c", "pg")
    data = prog.read_bytes()
    magic = b"\x89FUNTRACEROOT\r\n\x1a"
    assert magic not in data
    assert bytes(~b & 0xFF for b in magic) in data


def test_traced_binary_carries_no_path_of_the_tree(tree, tmp_path):
    """A program built outside the tree holds no path of it (the runtime's debug
    info is prefix-mapped) and no gdb auto-load entry: gdb gets the `funtrace`
    command from its system-wide gdbinit directory (tests/test_gdb_install.py)."""
    shutil.copy(tree.root / "examples" / "crash.c", tmp_path)
    subprocess.run([str(tree.tool("funtrace-gcc")), "-O1", "-g", "-pthread", "-o", "crash", "crash.c"],
                   cwd=tmp_path, check=True, timeout=300)
    data = (tmp_path / "crash").read_bytes()
    assert str(tree.root).encode() not in data
    sections = subprocess.run(["readelf", "-S", "-W", str(tmp_path / "crash")], capture_output=True, text=True,
                              check=True).stdout
    assert ".debug_gdb_scripts" not in sections


def test_api_snapshots(compiled, tmp_path):
    """In-memory snapshots, time-limited snapshots, disable/enable,
    funtrace_ignore_this_thread, funtrace_ticks_per_second."""
    prog = compiled("rt_api.c", "pg")
    r = run_program([prog], tmp_path / "run", want_core=False)
    assert r.returncode == 0, r.stdout + r.stderr
    hz = int(r.stdout.split("hz=")[1].split()[0])
    assert 5e8 < hz < 1e10
    syms = Syms(prog)
    names = {"api_before", "api_after", "api_disabled", "api_enabled", "api_ignored"}
    full = only_snapshot(r.dir / "full.raw")
    seq = sequence(full, main_thread(full), syms, keep=names)
    assert seq == [("api_before", "call"), ("api_before", "ret")]
    recent = only_snapshot(r.dir / "recent.raw")
    assert recent.header["flags"] & 0x4  # TIME_FILTERED
    assert recent.header["min_tsc"] > 0
    seq = sequence(recent, main_thread(recent), syms, keep=names)
    assert seq == [("api_after", "call"), ("api_after", "ret")]
    age = only_snapshot(r.dir / "age.raw")
    assert sequence(age, main_thread(age), syms, keep=names) == [("api_after", "call"), ("api_after", "ret")]
    last = only_snapshot(r.dir / "funtrace.raw")
    seq = sequence(last, main_thread(last), syms, keep=names)
    assert ("api_disabled", "call") not in seq
    assert ("api_enabled", "call") in seq
    ignored = [t for t in last.threads if t.name == "ignored"]
    assert len(ignored) == 1 and ignored[0].state == 4 and ignored[0].entries == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_garbage_state_is_not_traced_not_a_crash(compiled, tmp_path, mode, time):
    """issue 11: the thread's record overwritten with patterns, and its TLS record
    pointer aimed at unmapped memory, into the middle of a record, at a pattern and
    at the registry's last bytes, while it calls traced functions: no crash, nothing
    recorded meanwhile, and tracing resumes once the state is restored (FORMAT.md
    1.4 "Hot path": the validity check)."""
    prog = compiled("rt_garbage.c", mode)
    r, raw = run_snapshot(prog, tmp_path, env={"FUNTRACE_TIME": time})
    assert r.stdout == "survived\n"
    seq = sequence(raw, main_thread(raw), Syms(prog), keep={"gb_before", "gb_during", "gb_after"})
    assert seq == [("gb_before", "call"), ("gb_before", "ret"), ("gb_after", "call"), ("gb_after", "ret")], seq
