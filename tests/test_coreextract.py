"""coreextract on real cores made by the kernel (FORMAT.md section 2).

Each test crashes a small instrumented program (tests/progs/ce_crash.c) whose last
events are known, extracts the trace with build/bin/coreextract and asserts the exit
code, the one-line messages and the content: rings end with the known events, the
crash signal and thread, final stacks naming the functions gdb's `bt` shows.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import gdbbt
import rawfile
from conftest import ROOT, elf_symbols, load_bias, raw_modules, require_tools, run_tool

TSF = rawfile.TSF
RAWF_PARTIAL = 1
RAWF_ROOT_BY_SCAN = 2
STKF_CRASHED = 1
STKF_TRUNCATED = 2
SRC_CORE = 1


# --------------------------------------------------------------------------
# helpers (also used by the other test_coreextract_*.py files)
# --------------------------------------------------------------------------

class Syms:
    """Function names of addresses in one ELF object loaded at a bias."""

    def __init__(self, elf, bias):
        self.bias = bias
        self.ranges = sorted((v + bias, v + bias + max(s, 1), n) for n, (v, s) in elf_symbols(elf).items())

    def name(self, addr):
        for lo, hi, n in self.ranges:
            if lo <= addr < hi:
                return n
        return None


def extract(tree, core, *args, exe=None, out=None, timeout=120):
    """Run coreextract; returns (CompletedProcess with bytes stdout, Raw or None)."""
    cmd = [tree.tool("coreextract"), *args, str(core)]
    if exe:
        cmd.append(str(exe))
    if out:
        cmd[1:1] = ["-o", str(out)]
    r = subprocess.run([str(c) for c in cmd], capture_output=True, timeout=timeout)
    data = Path(out).read_bytes() if out and Path(out).exists() else r.stdout
    raw = rawfile.parse(data) if data else None
    return r, raw


def stderr_lines(r):
    return [l for l in r.stderr.decode(errors="replace").splitlines() if l.strip()]


def event_names(thread, syms):
    return [("ret " if e.ret else "call ") + str(syms.name(e.addr)) for e in thread.events()]


def gdb_backtraces(exe, core):
    """{lwp: [function names, innermost first]} from gdb's 'thread apply all bt' (tests/gdbbt.py)."""
    return {tid: [f.func for f in frames] for tid, frames in gdbbt.gdb_backtraces(exe, core, timeout=120).items()}


# gdb's own unwinding of every thread, as pcs: frame 0's pc, then each caller's
# return address -- what FINSTACK holds.  Inline frames (they share the pc of
# the real frame around them) and the tail-call frames gdb synthesizes from
# DWARF call-site info are not frames on the machine stack: left out.
GDB_FRAMES_PY = """
import gdb
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
for t in gdb.selected_inferior().threads():
    t.switch()
    f = gdb.newest_frame()
    pcs = []
    while f is not None:
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            pcs.append(f.pc())
        try:
            f = f.older()
        except gdb.error:
            break
    print("FRAMES", t.ptid[1], " ".join(hex(p) for p in pcs))
"""


def gdb_frames(exe, core, tmp_path):
    """{lwp: [pcs, innermost first]} as gdb unwinds them."""
    script = tmp_path / "frames.py"
    script.write_text(GDB_FRAMES_PY)
    r = subprocess.run(["gdb", "-batch", "-nx", "-x", str(script), str(exe), str(core)],
                       capture_output=True, text=True, timeout=120)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("FRAMES "):
            words = line.split()
            pcs = [int(w, 16) for w in words[2:]]
            # gdb's "0x0 in ??" past the outermost frame (a thread not yet run
            # since clone: FORMAT.md 2.2, a return address outside executable
            # memory ends the stack) is not a frame
            while len(pcs) > 1 and pcs[-1] == 0:
                pcs.pop()
            out[int(words[1])] = pcs
    assert out, f"gdb printed no frames:\n{r.stdout}\n{r.stderr}"
    return out


def stack_names(stack, syms):
    # pcs[0] is the pc; callers' entries are return addresses: look up pc - 1
    return [syms.name(pc if i == 0 else pc - 1) for i, pc in enumerate(stack.pcs)]


@pytest.fixture(scope="module")
def crashprog(compiled):
    return compiled("ce_crash.c", "pg")


def crash(run_crash, prog, *args, name="run", env=None):
    r = run_crash([prog, *args], name=name, env=env)
    assert r.signal in (6, 11), f"expected a crash, got rc={r.returncode}: {r.stderr}"
    return r


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------

def test_segv_in_worker_thread(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "segv-thread")
    r, raw = extract(tree, run.core, "-v")
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert "root found by symbol funtrace_root" in err
    assert raw.ended and raw.header["source"] == SRC_CORE and raw.header["flags"] == 0
    assert raw.header["pid"] == run.pid and raw.header["taken_tsc"] == 0
    assert [m for m, _ in raw.chunks][:8] == ["FUNTRACE", "FTHEADER", "CMD LINE", "SIGINFO ", "MAPPINGS", "PROCMAPS",
                                              "MODULES ", "GENERATN"]
    assert raw.cmdline.endswith("segv-thread") and "ce_crash" in raw.cmdline
    # the signal, and which thread got it: the worker, not the main thread
    assert raw.siginfo["signo"] == 11 and raw.siginfo["addr"] == 0 and raw.siginfo["code"] == 1
    crashed_tid = raw.siginfo["tid"]
    assert crashed_tid != run.pid
    syms = Syms(crashprog, load_bias(raw, crashprog))
    worker = raw.thread(crashed_tid)
    assert worker.state == 1 and worker.n_entries == len(worker.items) and worker.fmt == 3
    names = event_names(worker, syms)
    # the worker's ring ends with exactly what it did last
    assert names[-5:] == ["call ce_step1", "ret ce_step1", "call ce_step2", "ret ce_step2", "call ce_fault"], names
    tscs = [e.tsc for e in worker.events()]
    assert tscs == sorted(tscs)
    main = raw.thread(run.pid)
    assert event_names(main, syms)[-1] == "call main"
    assert raw.header["nthreads"] == len(raw.threads)
    # mappings name the executable with its build-id
    exe_maps = [m for m in raw.mappings if m["path"] == str(crashprog)]
    assert exe_maps and exe_maps[0]["offset"] == 0 and len(exe_maps[0]["build_id"]) == 40
    assert any(m["prot"] & 4 for m in exe_maps)
    # PROCMAPS: the same mappings as /proc/PID/maps text (original funtrace readers)
    assert [(p["start"], p["end"], p["offset"], p["path"]) for p in raw.procmaps] == \
        [(m["start"], m["end"], m["offset"], m["path"]) for m in raw.mappings]
    assert any(p["path"] == str(crashprog) and p["perms"] == "r-xp" for p in raw.procmaps)
    # the decoder prefers MAPPINGS; without it, PROCMAPS alone gives the same mappings
    stripped = tmp_path / "nomappings.raw"
    stripped.write_bytes(b"".join(m.encode("latin1") + len(p).to_bytes(8, "little") + p
                                  for m, p in raw.chunks if m != "MAPPINGS"))
    for f, tag in ((None, ""), (stripped, " (PROCMAPS)")):
        d = subprocess.run([str(tree.tool("funtrace-decode")), "-s", "-"], input=f.read_bytes() if f else r.stdout,
                           capture_output=True, timeout=60)
        assert d.returncode == 0, d.stderr
        assert f" {len(raw.mappings)} mappings{tag}\n".encode() in d.stdout, d.stdout
    # a FINSTACK per kernel thread; the crashed one flagged
    assert {t.tid for t in raw.threads if t.state == 1} <= {s.tid for s in raw.stacks}
    assert len(raw.stacks) == len({s.tid for s in raw.stacks})
    crashed = [s for s in raw.stacks if s.flags & STKF_CRASHED]
    assert [s.tid for s in crashed] == [crashed_tid]
    assert crashed[0].pcs[0] == crashed[0].regs[16]
    assert stack_names(crashed[0], syms)[:2] == ["ce_fault", "segv_worker"]


def test_final_stacks_match_gdb_bt(tree, crashprog, run_crash):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "exited")
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    syms = Syms(crashprog, load_bias(raw, crashprog))
    exe_funcs = {n for _, _, n in syms.ranges}
    bts = gdb_backtraces(crashprog, run.core)
    assert set(bts) == {s.tid for s in raw.stacks}
    compared = 0
    for s in raw.stacks:
        ours = [n for n in stack_names(s, syms) if n in exe_funcs]
        theirs = [n for n in bts[s.tid] if n in exe_funcs]
        assert ours[:len(theirs)] == theirs, (s.tid, ours, bts[s.tid])
        compared += bool(theirs)
    assert compared >= 1
    main = [s for s in raw.stacks if s.tid == run.pid][0]
    assert stack_names(main, syms)[:2] == ["ce_fault", "main"]


def test_stacks_equal_gdb_on_every_thread_of_the_crash_example(tree, run_crash, tmp_path):
    """Every thread of examples/crash -- the crashed loader, workers blocked in
    pthread_cond_wait, the spinning hasher, main in pthread_join, and the
    runtime's "funtrace" housekeeper waiting in a futex syscall -- unwinds to
    exactly the frames gdb finds (past main and _start too), never repeating
    a frame."""
    require_tools(tree, "coreextract")
    exe = tree.example("crash")
    run = crash(run_crash, exe)
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    frames = gdb_frames(exe, run.core, tmp_path)
    assert set(frames) == {s.tid for s in raw.stacks} and len(frames) == 6
    for s in raw.stacks:
        assert s.pcs == frames[s.tid], (s.tid, [hex(p) for p in s.pcs], [hex(p) for p in frames[s.tid]])
        assert not s.flags & STKF_TRUNCATED, s.tid
        assert all(a != b for a, b in zip(s.pcs, s.pcs[1:])), s.tid
    syms = Syms(exe, load_bias(raw, exe))
    # the housekeeper registers itself (an IGNORED record named "funtrace")
    # when it first runs: a crash before that (a loaded machine) finds its
    # thread in the core but no record yet
    [stk] = [s for s in raw.stacks if "housekeeper" in stack_names(s, syms)]
    assert len(stk.pcs) >= 4
    recs = [t for t in raw.threads if t.tid == stk.tid]
    assert all(t.name == "funtrace" for t in recs), [t.name for t in recs]
    [crashed] = [s for s in raw.stacks if s.flags & STKF_CRASHED]
    assert stack_names(crashed, syms)[:2] == ["corrupt_record", "parse_record"]


def test_static_executable_stacks_equal_gdb(tree, compiled, run_crash, tmp_path):
    """examples/crash linked -static: gcc gives such an executable .eh_frame
    but no .eh_frame_hdr, the table libunwind searches; coreextract indexes
    .eh_frame itself.  Every thread unwinds to gdb's frames -- without the
    index, each stack was its innermost frame alone, and the decoder ended
    the crashed thread's open frames as if they had returned."""
    exe = compiled(tree.root / "examples" / "crash.c", "pg", extra=["-O1", "-pthread", "-static"], tag="static")
    hdr = subprocess.run(["readelf", "-lW", str(exe)], capture_output=True, text=True, check=True).stdout
    assert "GNU_EH_FRAME" not in hdr, "gcc gave this -static executable an .eh_frame_hdr: the test tests nothing"
    run = crash(run_crash, exe)
    out = tmp_path / "static.raw"
    r, raw = extract(tree, run.core, out=out)
    assert r.returncode == 0, r.stderr
    frames = gdb_frames(exe, run.core, tmp_path)
    assert set(frames) == {s.tid for s in raw.stacks} and len(frames) == 6
    for s in raw.stacks:
        assert s.pcs == frames[s.tid], (s.tid, [hex(p) for p in s.pcs], [hex(p) for p in frames[s.tid]])
        assert len(s.pcs) >= 4 and not s.flags & STKF_TRUNCATED, s.tid
    d = subprocess.run([str(tree.tool("funtrace-decode")), "--summary", str(out)], capture_output=True, text=True,
                       timeout=60)
    assert d.returncode == 0, d.stderr
    # (the decoder ends the open frames missing from the final stack as return_missing)
    assert set(re.findall(r"(\d+) frames not on the final stack", d.stdout)) <= {"0"}, d.stdout


def test_a_stack_that_unwinds_into_itself_stops(tree, compiled, run_crash, tmp_path):
    """ce_loopstack's "looper" thread sits in a function whose unwind info makes
    its caller itself at the same stack pointer: the unwinder stops after that
    frame (flagged TRUNCATED) where gdb stops ("previous frame identical to
    this frame"), instead of repeating the pc.  Its "sigalt" thread sits in a
    signal handler on an alternate stack above its own: the step out of the
    signal frame moves the stack pointer down and is followed, like gdb does."""
    require_tools(tree, "coreextract")
    exe = compiled("ce_loopstack.c", "pg")
    run = crash(run_crash, exe)
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    syms = Syms(exe, load_bias(raw, exe))
    frames = gdb_frames(exe, run.core, tmp_path)
    [looper] = [s for s in raw.stacks if syms.name(s.pcs[0]) == "ce_loop_frame"]
    assert looper.pcs == frames[looper.tid] == [looper.regs[16]]
    assert looper.flags & STKF_TRUNCATED
    for s in raw.stacks:
        assert s.pcs == frames[s.tid], (s.tid, [hex(p) for p in s.pcs], [hex(p) for p in frames[s.tid]])
        assert all(a != b for a, b in zip(s.pcs, s.pcs[1:])), s.tid
    [crashed] = [s for s in raw.stacks if s.flags & STKF_CRASHED]
    assert stack_names(crashed, syms)[:2] == ["ce_fault", "main"] and not crashed.flags & STKF_TRUNCATED
    [sigalt] = [s for s in raw.stacks if "on_usr1" in stack_names(s, syms)]
    names = [n for n in stack_names(sigalt, syms) if n]
    assert names == ["ce_in_handler", "on_usr1", "ce_raise_usr1", "sigalt"], names
    assert not sigalt.flags & STKF_TRUNCATED and len(sigalt.pcs) >= 7


def test_abort(tree, crashprog, run_crash):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "abort")
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    assert raw.siginfo["signo"] == 6 and raw.siginfo["tid"] == run.pid
    assert raw.siginfo["sender_pid"] == run.pid and raw.siginfo["code"] <= 0
    syms = Syms(crashprog, load_bias(raw, crashprog))
    names = [n for n in event_names(raw.thread(run.pid), syms) if n != "call None" and n != "ret None"]
    assert names[-5:] == ["call ce_step1", "ret ce_step1", "call ce_step2", "ret ce_step2", "call ce_do_abort"]
    [stk] = [s for s in raw.stacks if s.flags & STKF_CRASHED]
    assert "ce_do_abort" in stack_names(stk, syms)


def test_thread_that_already_exited(tree, crashprog, run_crash):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "exited")
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    syms = Syms(crashprog, load_bias(raw, crashprog))
    exited = [t for t in raw.threads if t.state == 2]
    assert len(exited) == 1
    t = exited[0]
    assert t.exit_tsc > t.start_tsc > 0
    names = event_names(t, syms)
    assert names[:2] == ["call exited_worker", "call ce_exited_work"], names
    assert "ret ce_exited_work" in names
    # no FINSTACK for it: the kernel had no such thread any more
    assert t.tid not in {s.tid for s in raw.stacks}
    assert event_names(raw.thread(run.pid), syms)[-3:] == ["call ce_step1", "ret ce_step1", "call ce_fault"]


def test_many_threads(tree, crashprog, run_crash):
    require_tools(tree, "coreextract")
    n = 70
    run = crash(run_crash, crashprog, "many", str(n))
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    syms = Syms(crashprog, load_bias(raw, crashprog))
    traced = [t for t in raw.threads if t.state == 1 and t.n_entries]
    assert len(traced) == n + 1
    workers = [t for t in traced if t.tid != run.pid]
    marks = sorted(e for t in workers for e in event_names(t, syms) if e == "call ce_worker_mark")
    assert len(marks) == n
    for t in workers:
        assert event_names(t, syms)[-1] == "call ce_wait_forever"
    assert len(raw.stacks) >= n + 1
    assert len({t.tid for t in raw.threads}) == len(raw.threads) == raw.header["nthreads"]


def test_wrapped_ring(tree, crashprog, run_crash):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "loop", "5000", env={"FUNTRACE_BUF": "16384"})
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    syms = Syms(crashprog, load_bias(raw, crashprog))
    main = raw.thread(run.pid)
    assert main.ring_size == 16384 and main.flags & TSF["WRAPPED"]
    assert main.n_entries == 16384 // 8 - 1           # every slot but the one at pos
    assert main.first_off == (main.pos_off + 8) % 16384
    names = event_names(main, syms)
    assert names[-3:] == ["call ce_step1", "ret ce_step1", "call ce_fault"]
    assert set(names[:-1]) == {"call ce_step1", "ret ce_step1"}
    tscs = [e.tsc for e in main.events()]
    assert tscs == sorted(tscs)


def test_non_pie(tree, compiled, run_crash):
    require_tools(tree, "coreextract")
    prog = compiled("ce_crash.c", "pg", extra=["-no-pie"], tag="nopie")
    run = crash(run_crash, prog, "abort")
    r, raw = extract(tree, run.core, "-v")
    assert r.returncode == 0, r.stderr
    assert "(load bias 0)" in r.stderr.decode()
    syms = Syms(prog, 0)
    assert event_names(raw.thread(run.pid), syms)[-1] == "call ce_do_abort"


def test_stripped_executable(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    stripped = tmp_path / "ce_crash_stripped"
    shutil.copy(crashprog, stripped)
    subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
    run = crash(run_crash, stripped, "abort")
    r, raw = extract(tree, run.core, "-v")
    assert r.returncode == 0, r.stderr
    assert "root found by symbol funtrace_root" in r.stderr.decode()   # from .dynsym
    assert not raw.header["flags"] & RAWF_ROOT_BY_SCAN
    syms = Syms(crashprog, load_bias(raw, stripped))
    assert event_names(raw.thread(run.pid), syms)[-1] == "call ce_do_abort"


def test_executable_deleted_after_crash(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    exe = tmp_path / "ce_crash_gone"
    shutil.copy(crashprog, exe)
    run = crash(run_crash, exe, "segv-thread")
    r0, raw0 = extract(tree, run.core)
    bias = load_bias(raw0, exe)
    exe.unlink()
    r, raw = extract(tree, run.core, "-v")
    assert r.returncode == 0, r.stderr
    assert "by scanning" in r.stderr.decode()
    assert raw.header["flags"] == RAWF_ROOT_BY_SCAN
    assert raw.header["root_addr"] == raw0.header["root_addr"]
    # same trace as with the executable present (only the header flag differs)
    for t0, t in zip(raw0.threads, raw.threads):
        assert (t0.tid, t0.entries) == (t.tid, t.entries)
    assert raw.mappings == raw0.mappings   # build-ids come from the core's memory
    syms = Syms(crashprog, bias)
    assert event_names(raw.thread(raw.siginfo["tid"]), syms)[-1] == "call ce_fault"


def test_wrong_exe_argument_falls_back_to_scan(tree, crashprog, compiled, run_crash):
    require_tools(tree, "coreextract")
    other = compiled("ce_crash.c", "pg", extra=["-DCE_OTHER_BUILD=1", "-O2"], tag="other")
    run = crash(run_crash, crashprog, "abort")
    r, raw = extract(tree, run.core, "-v", exe=other)
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert "build-id" in err and "by scanning" in err
    assert raw.header["flags"] & RAWF_ROOT_BY_SCAN
    # the right one given explicitly: by symbol
    r, raw = extract(tree, run.core, "-v", exe=crashprog)
    assert r.returncode == 0 and "root found by symbol" in r.stderr.decode()


@pytest.mark.parametrize("kind", ["missing", "directory", "not-elf"])
def test_unusable_exe_argument_warns_and_scans(tree, crashprog, run_crash, tmp_path, kind):
    """An explicit EXE that cannot be read as an ELF file is not silently
    ignored: one warning line (without -v), then the root is found by scanning."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "abort")
    exe = tmp_path / "exe"
    if kind == "directory":
        exe.mkdir()
    elif kind == "not-elf":
        exe.write_text("#!/bin/sh\n")
    r, raw = extract(tree, run.core, exe=exe)
    assert r.returncode == 0, r.stderr
    lines = stderr_lines(r)
    want = {"missing": "cannot open", "directory": "is a directory", "not-elf": "not an x86-64 ELF file"}[kind]
    assert len(lines) == 1 and str(exe) in lines[0] and want in lines[0], lines
    assert "finding the root by scanning the core" in lines[0]
    assert raw.ended and raw.header["flags"] == RAWF_ROOT_BY_SCAN and raw.threads


def test_output_that_cannot_be_created_exits_4(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "abort")
    out = tmp_path / "nonexistent" / "d" / "x.raw"
    r, raw = extract(tree, run.core, out=out)
    assert r.returncode == 4, r.stderr
    lines = stderr_lines(r)
    assert len(lines) == 1 and "cannot create" in lines[0] and str(out) in lines[0], lines
    assert raw is None and not out.parent.exists()


def test_dlopened_instrumented_library(tree, crashprog, compiled, run_crash):
    require_tools(tree, "coreextract")
    lib = compiled("ce_plugin.c", "pg", extra=["-shared", "-fPIC"], tag="so")
    run = crash(run_crash, crashprog, "plugin", str(lib))
    r, raw = extract(tree, run.core)
    assert r.returncode == 0, r.stderr
    assert any(m["path"] == str(lib) for m in raw_modules(raw))
    lib_maps = [m for m in raw.mappings if m["path"] == str(lib)]
    assert lib_maps and lib_maps[0]["build_id"]
    lsyms = Syms(lib, load_bias(raw, lib))
    names = [lsyms.name(e.addr) for e in raw.thread(run.pid).events()]
    assert names[-2:] == ["ce_plugin_entry", "ce_plugin_inner"]
    [stk] = [s for s in raw.stacks if s.flags & STKF_CRASHED]
    assert stack_names(stk, lsyms)[:2] == ["ce_plugin_inner", "ce_plugin_entry"]


def test_program_without_runtime(tree, compiled, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    prog = compiled("ce_crash.c", "none")
    run = crash(run_crash, prog, "abort")
    out = tmp_path / "out.raw"
    r, raw = extract(tree, run.core, out=out)
    assert r.returncode == 1
    lines = stderr_lines(r)
    assert len(lines) == 1 and "no funtrace trace" in lines[0] and str(run.core) in lines[0]
    assert not out.exists() and not Path(str(out) + ".tmp").exists()
    assert r.stdout == b""


def test_truncated_core_is_partial(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "segv-thread")
    _, full = extract(tree, run.core)
    ring = full.thread(full.siginfo["tid"]).ring
    # cut the core 4 KiB into the segment holding that ring (and all that follows it)
    seg = core_segment(run.core, ring)
    cut = tmp_path / "core.cut"
    with open(run.core, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(seg["offset"] + (ring - seg["vaddr"]) + 4096))
    out = tmp_path / "cut.raw"
    r, raw = extract(tree, cut, out=out)
    assert r.returncode == 3, r.stderr
    lines = stderr_lines(r)
    assert len(lines) == 1 and "incomplete" in lines[0] and "truncated" in lines[0] and str(cut) in lines[0]
    assert out.exists() and not Path(str(out) + ".tmp").exists()
    assert raw.ended and raw.header["flags"] & RAWF_PARTIAL
    assert raw.header["root_addr"] == full.header["root_addr"]


def root_field_offset(tmp_path, field):
    """offsetof(struct ft_root, field) in the current ABI (what the runtime writes)."""
    src = tmp_path / "off.c"
    src.write_text('#include <stdio.h>\n#include "funtrace_abi.h"\n'
                   f'int main(void) {{ printf("%zu", offsetof(struct ft_root, {field})); return 0; }}\n')
    exe = tmp_path / "off"
    subprocess.run(["gcc", "-I", str(ROOT / "runtime" / "include"), "-o", str(exe), str(src)], check=True)
    return int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)


def test_truncated_core_without_registry_says_what_is_missing(tree, crashprog, run_crash, tmp_path):
    """A core cut before the thread registry: the one line counts the threads
    lost and names the other missing parts, not only the first problem."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "segv-thread")
    _, full = extract(tree, run.core)
    root = full.header["root_addr"]
    seg = core_segment(run.core, root)
    data = run.core.read_bytes()
    at = seg["offset"] + root - seg["vaddr"] + root_field_offset(tmp_path, "threads")
    registry = int.from_bytes(data[at:at + 8], "little")
    rseg = core_segment(run.core, registry)
    assert rseg["offset"] > seg["offset"], "registry expected after the root in the core"
    cut = tmp_path / "core.cut"
    cut.write_bytes(data[:rseg["offset"] + registry - rseg["vaddr"]])
    r, raw = extract(tree, cut, out=tmp_path / "cut.raw")
    assert r.returncode == 3, r.stderr
    lines = stderr_lines(r)
    n = len(full.threads)
    assert len(lines) == 1, lines
    assert f"core truncated at {cut.stat().st_size} of {len(data)} bytes" in lines[0], lines
    assert f"thread registry not readable (0 of {n} threads)" in lines[0], lines
    assert raw.ended and raw.threads == [] and raw.header["nthreads_lost"] == n


def patch_segment_filesz(core, dst, addr, filesz):
    """Copy core to dst with p_filesz of the PT_LOAD holding addr set to filesz."""
    import struct
    data = bytearray(Path(core).read_bytes())
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        o = phoff + i * phentsize
        ptype, _, _, vaddr, _, fsz, msz = struct.unpack_from("<IIQQQQQ", data, o)
        if ptype == 1 and vaddr <= addr < vaddr + msz:
            struct.pack_into("<Q", data, o + 32, filesz + (addr - vaddr))
            Path(dst).write_bytes(data)
            return
    raise AssertionError(f"no PT_LOAD holds {addr:#x}")


@pytest.mark.parametrize("keep", [8192, 0])
def test_ring_memory_missing_from_core(tree, crashprog, run_crash, tmp_path, keep):
    """A core whose ring segment is (partly) absent (p_filesz < p_memsz): what is there
    is emitted in order, the ring is flagged, the header is PARTIAL, exit 3."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "loop", "1000")
    _, full = extract(tree, run.core)
    main = full.thread(run.pid)
    # main, 1000 x (call, ret), ce_fault, and the first event's two escapes
    assert len(main.entries) == 2002 and main.n_entries == 2004 and main.first_off == 0
    bad = tmp_path / "core.bad"
    patch_segment_filesz(run.core, bad, main.ring, keep)
    r, raw = extract(tree, bad)
    assert r.returncode == 3, r.stderr
    lines = stderr_lines(r)
    assert len(lines) == 1 and f"ring of thread {run.pid}" in lines[0] and "missing" in lines[0]
    assert raw.header["flags"] & RAWF_PARTIAL and raw.ended
    t = raw.thread(run.pid)
    if keep:
        assert t.flags & TSF["RING_PARTIAL"] and not t.flags & TSF["RING_MISSING"]
        assert t.items == main.items[:keep // 8] and t.n_entries == keep // 8
    else:
        assert t.flags & TSF["RING_MISSING"] and t.entries == [] and t.n_entries == 0
    # every other thread is intact
    for t0 in full.threads:
        if t0.tid != run.pid:
            assert raw.thread(t0.tid).entries == t0.entries


def core_segment(core, addr):
    """The PT_LOAD of a core containing addr: {vaddr, offset, filesz} (readelf -lW)."""
    out = subprocess.run(["readelf", "-lW", str(core)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        w = line.split()
        if w and w[0] == "LOAD":
            off, vaddr, filesz, memsz = int(w[1], 16), int(w[2], 16), int(w[4], 16), int(w[5], 16)
            if vaddr <= addr < vaddr + memsz:
                return dict(vaddr=vaddr, offset=off, filesz=filesz)
    raise AssertionError(f"no PT_LOAD holds {addr:#x}")


def test_output_is_deterministic_and_independent_of_core_name(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "segv-thread")
    other = tmp_path / "renamed-core"
    shutil.copy(run.core, other)
    r1, _ = extract(tree, run.core)
    r2, _ = extract(tree, other, out=tmp_path / "b.raw")
    assert r1.returncode == 0
    assert r1.stdout == (tmp_path / "b.raw").read_bytes()
    # options may follow the CORE argument, as with most GNU tools
    r3 = run_tool([tree.tool("coreextract"), run.core, "-o", tmp_path / "c.raw"], text=False)
    assert r3.returncode == 0, r3.stderr
    assert (tmp_path / "c.raw").read_bytes() == r1.stdout


def test_output_file_pipe_or_append_hold_the_same_raw(tree, crashprog, run_crash, tmp_path):
    """A full 1 MiB ring (its spans are the core file's bytes, which go to an
    output file by copy_file_range, file to file in the kernel): the raw in
    a pipe, in -o FILE, on stdout redirected to a file, and appended to a
    file that holds bytes of its own (copy_file_range refuses an O_APPEND
    file: written as through a pipe) is the same."""
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "loop", "200000")
    ref, raw = extract(tree, run.core)
    assert ref.returncode == 0, ref.stderr
    main = raw.thread(run.pid)
    assert main.ring_size == 1 << 20 and main.flags & TSF["WRAPPED"]
    r = run_tool([tree.tool("coreextract"), run.core, "-o", tmp_path / "o.raw"], text=False)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o.raw").read_bytes() == ref.stdout
    for name, mode, before in (("d.raw", "wb", b""), ("e.raw", "ab", b"earlier bytes\n")):
        (tmp_path / name).write_bytes(before)
        with open(tmp_path / name, mode) as f:
            r = subprocess.run([str(tree.tool("coreextract")), str(run.core)], stdout=f, stderr=subprocess.PIPE,
                               timeout=120)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / name).read_bytes() == before + ref.stdout, name


@pytest.mark.parametrize("comp", ["zstd", "lz4", "xz", "stdin", "stdin-zstd"])
def test_compressed_and_stdin_cores(tree, crashprog, run_crash, tmp_path, comp):
    require_tools(tree, "coreextract")
    if shutil.which(comp.split("-")[-1]) is None and comp != "stdin":
        pytest.skip(f"{comp} not installed")
    run = crash(run_crash, crashprog, "abort")
    ref, _ = extract(tree, run.core)
    assert ref.returncode == 0
    src = run.core
    if comp.endswith("zstd"):
        subprocess.run(["zstd", "-q", "-1", str(src), "-o", str(tmp_path / "c.zst")], check=True)
        src = tmp_path / "c.zst"
    elif comp == "lz4":
        subprocess.run(["lz4", "-q", str(src), str(tmp_path / "c.lz4")], check=True)
        src = tmp_path / "c.lz4"
    elif comp == "xz":
        subprocess.run(["xz", "-T1", "-0", "-k", "-c", str(src)], stdout=open(tmp_path / "c.xz", "wb"), check=True)
        src = tmp_path / "c.xz"
    if comp.startswith("stdin"):
        # through a pipe, as from a core_pattern "|coreextract ... -" line
        r = subprocess.run([str(tree.tool("coreextract")), "-v", "-"], input=Path(src).read_bytes(),
                           capture_output=True, timeout=120)
        assert b"input is stdin" in r.stderr
    else:
        r, _ = extract(tree, src)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    if comp.startswith("stdin"):  # sched: the pipe handler adds the scheduling events (test_sched.py)
        assert b"SCHEDEVT" in out
        out = rawfile.without_chunks(out, {"SCHEDEVT"})
    assert out == ref.stdout


def test_refuses_terminal_and_cleans_up_tmp(tree, crashprog, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    import pty
    run = crash(run_crash, crashprog, "abort")
    master, slave = pty.openpty()
    try:
        p = subprocess.run([str(tree.tool("coreextract")), str(run.core)], stdout=slave, stderr=subprocess.PIPE,
                           timeout=60)
    finally:
        os.close(slave)
        os.close(master)
    assert p.returncode == 2 and b"terminal" in p.stderr
    # an output that cannot be written: exit 4, one line
    with open("/dev/full", "wb") as full:
        p = subprocess.run([str(tree.tool("coreextract")), str(run.core)], stdout=full, stderr=subprocess.PIPE,
                           timeout=60)
    assert p.returncode == 4 and len(p.stderr.splitlines()) == 1 and b"cannot write" in p.stderr
    # -o into a directory that does not exist: the output cannot be written, exit 4, one line
    r, _ = extract(tree, run.core, out=tmp_path / "nodir" / "x.raw")
    assert r.returncode == 4 and len(stderr_lines(r)) == 1 and "nodir" in r.stderr.decode()


def test_no_stacks_option(tree, crashprog, run_crash):
    require_tools(tree, "coreextract")
    run = crash(run_crash, crashprog, "abort")
    r, raw = extract(tree, run.core, "--no-stacks")
    assert r.returncode == 0 and raw.stacks == [] and raw.ended
    full, raw_full = extract(tree, run.core)
    # identical up to the FINSTACK chunks
    assert [c for c in raw_full.chunks if c[0] != "FINSTACK"] == raw.chunks


def test_help_documents_exit_codes_and_core_pattern(tree):
    require_tools(tree, "coreextract")
    r = subprocess.run([str(tree.tool("coreextract")), "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for s in ["Exit status", "0  trace extracted", "1  the input is fine", "2  unusable input", "3  partial",
              "--pid", "--stacks", "core_pattern", "|/usr/local/bin/coreextract -o /var/crash/%e-%p.raw -"]:
        assert s in r.stdout
    r = subprocess.run([str(tree.tool("coreextract"))], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    r = subprocess.run([str(tree.tool("coreextract")), "--bogus", "x"], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


def zero_core_range(core, dst, addr, n):
    """Copy core to dst with the n bytes of process memory at addr zeroed."""
    import struct
    data = bytearray(Path(core).read_bytes())
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        ptype, _, off, vaddr, _, fsz, _ = struct.unpack_from("<IIQQQQQ", data, phoff + i * phentsize)
        if ptype == 1 and vaddr <= addr and addr + n <= vaddr + fsz:
            data[off + addr - vaddr:off + addr - vaddr + n] = bytes(n)
            Path(dst).write_bytes(data)
            return
    raise AssertionError(f"no PT_LOAD holds {addr:#x}+{n}")


def test_zeroed_ring_entries_in_a_core_are_reported(tree, crashprog, run_crash, tmp_path):
    """issue 13: 8 KiB zeroed inside a thread's ring in a core (what an in-place memory
    test can leave): coreextract keeps the slots as they are, the decoder says how many
    entries and where, exits 3, and still decodes the events after the hole (their high
    halves come back with the next escapes, or are inferred)."""
    require_tools(tree, "coreextract", "funtrace-decode")
    run = crash(run_crash, crashprog, "loop", "5000")   # ~10000 entries in a 1 MiB ring
    _, full = extract(tree, run.core)
    main = full.thread(run.pid)
    assert main.n_entries > 9000 and not main.flags & TSF["WRAPPED"]
    bad = tmp_path / "core.zeroed"
    zero_core_range(run.core, bad, main.ring + 8 * 4000, 8192)
    r, raw = extract(tree, bad)
    assert r.returncode == 0, r.stderr
    t = raw.thread(run.pid)
    assert t.n_entries == main.n_entries and t.items[4000:5024] == [0] * 1024
    assert t.items[:4000] == main.items[:4000] and t.items[5024:] == main.items[5024:]
    p = tmp_path / "zeroed.raw"
    p.write_bytes(r.stdout)
    d = run_tool([tree.tool("funtrace-decode"), "--summary", "--text", str(p)])
    assert d.returncode == 3, d.stderr
    assert (f"the ring of thread {run.pid} has 1024 zeroed or invalid entries inside its trace "
            "(items 4000..5023, after the event") in d.stdout, d.stdout
    # the calls after the hole are named, the last ones as they happened
    text = d.stdout.split("\nfuntrace: ", 1)[-1]
    assert "ce_fault" in text and "ce_step1" in text
