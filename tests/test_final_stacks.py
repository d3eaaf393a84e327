"""Final stacks as gdb's `bt` shows them, against real gdb on the same kernel
core, frame by frame (tests/gdbbt.py): inlined callers, signal frames, deep
stacks; and the timeline's enclosing frames agreeing with them."""
import re
import struct

import pytest

import rawfile
from conftest import INSTR_MODES, PROGS_SRC
from gdbbt import compare_final_stacks, decoder_stacks, gdb_backtraces, norm_func

STKF_TRUNCATED, STKF_CUT = 0x2, 0x4


def core_and_text(tool, run_crash, prog, args=(), env=None, ce_args=(), decode_args=()):
    r = run_crash([prog, *args], env=env)
    raw = r.dir / "trace.raw"
    x = tool("coreextract", *ce_args, "-o", raw, r.core, prog)
    assert x.returncode == 0, x.stderr
    t = tool("funtrace-decode", raw, "--text", *decode_args)
    assert t.returncode == 0, t.stderr
    return r, raw, t.stdout


def src_line(src, marker):
    lines = (PROGS_SRC / src).read_text().splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if marker in ln)


def thread_block(text, tid):
    return text.split(f"\nthread {tid} ")[1].split("\nthread ")[0]


@pytest.mark.parametrize("mode", INSTR_MODES)
def test_pc_in_a_plt_entry(compiled, run_crash, tool, mode):
    """A thread stopped inside a PLT entry (between a call and the function
    it calls: fs_plt.c faults on the entry's own push): its frame is named as
    gdb names it, getppid@plt, not module+offset"""
    prog = compiled("fs_plt.c", mode)
    r, raw, text = core_and_text(tool, run_crash, prog)
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + text
    frames = decoder_stacks(text)[r.pid].frames
    assert [f.func for f in frames[:2]] == ["getppid@plt", "main"], frames


@pytest.mark.parametrize("mode", INSTR_MODES)
def test_inlined_callers(compiled, run_crash, tool, mode):
    """A fault in poke, inlined into middle, inlined into outer: the final
    stack is gdb's frame for frame -- poke and middle as inlined frames --
    and the line of poke is the faulting line (its pc, not pc - 1).  With
    -finstrument-functions the inlined functions are traced too, and the
    timeline keeps them open (not "[return missing]")."""
    prog = compiled("fs_inline.c", mode, extra=["-O2"], tag="O2")
    r, raw, text = core_and_text(tool, run_crash, prog)
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + text
    frames = decoder_stacks(text)[r.pid].frames
    assert [norm_func(f.func) for f in frames[:4]] == ["poke", "middle", "outer", "main"], frames
    assert (frames[0].file, frames[0].line) == ("fs_inline.c", src_line("fs_inline.c", "/* fault */"))
    lines = thread_block(text, r.pid).splitlines()
    assert re.match(r"    #0 +\[inlined\] +poke at ", lines[lines.index(next(x for x in lines if "#0 " in x))])
    assert "return missing" not in text
    if mode == "finstr":  # the inlined calls are in the ring: open, like the final stack says
        calls = [x for x in lines if "[still open]" in x]
        assert [x.split()[3] for x in calls[-3:]] == ["outer", "middle", "poke"], calls


@pytest.mark.parametrize("mode", INSTR_MODES)
def test_inlined_cxx_frames_are_qualified(compiled, run_crash, tool, mode):
    """C++ functions that exist only inlined and have internal linkage (a
    parameter's type is in an anonymous namespace) have no linkage name in
    the debug info: they are named by their namespaces and classes, as gdb
    names them (`app::Engine::step`, not `step`: seen first in leveldb's
    db_bench, `leveldb::Benchmark::RunBenchmark`); a class local to a
    function as gdb names it (`Local::go`)."""
    prog = compiled("fs_qualified.cc", mode, extra=["-O2"], tag="O2")
    r, raw, text = core_and_text(tool, run_crash, prog)
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + text
    names = [norm_func(f.func) for f in decoder_stacks(text)[r.pid].frames]
    assert "app::Engine::step" in names and "app::Engine::run" in names and "Local::go" in names, names
    assert not {"step", "go", "poke"} & set(names), names


@pytest.mark.parametrize("mode", ["pg", "clang"])
def test_signal_frames(compiled, run_crash, tool, mode):
    """A second fault inside the program's SIGSEGV handler: the final stack
    runs through the handler, `<signal handler called>` (not
    libc.so.6+0x...), and the interrupted frame at the line of its faulting
    instruction (pc, not pc - 1, which is the line before) -- gdb's bt."""
    prog = compiled("ch_handler.c", mode)
    r, raw, text = core_and_text(tool, run_crash, prog, ["second"])
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + text
    frames = decoder_stacks(text)[r.pid].frames
    names = [norm_func(f.func) for f in frames]
    k = names.index(norm_func("<signal handler called>"))
    assert names[:k][:2] == ["h_second", "report"] and names[k + 1:k + 3] == ["w_crash", "w_outer"], names
    assert frames[k + 1].line == src_line("ch_handler.c", "*p = 1; /* fault */")
    assert "libc.so.6+0x" not in thread_block(text, r.pid).split("final stack")[1]


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_tail_call_frames(compiled, run_crash, tool, mode):
    """gdb_tc_outer calls gdb_tc_middle, which tail-calls gdb_tc_fault
    (-O2, -pg): gdb_tc_middle is not on the machine stack, but gdb shows it,
    found from the debug info's call sites; so does the final stack
    ([tail-call]), at the line of the tail call."""
    prog = compiled("gdb_tailcall.c", mode, extra=["-O2"], tag="O2")
    r, raw, text = core_and_text(tool, run_crash, prog)
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + text
    block = thread_block(text, r.pid)
    # (-finstrument-functions: the exit hook after the call leaves no tail call)
    where = r"\[tail-call\]" if mode == "pg" else r"0x[0-9a-f]+"
    assert re.search(r"#1 +" + where + r" +gdb_tc_middle at \S*gdb_tailcall\.c:15", block), block
    assert "return missing" not in block


def test_deep_cycle_cut_and_folded(compiled, run_crash, tool):
    """A 1050-frame recursion through a cycle of 7 functions: the unwinder
    keeps its innermost 448 and outermost 64 frames and says how many it left
    out (which, with the kept ones, are all the frames gdb finds); the
    decoder folds the 7-frame cycle and prints the stack in a few lines, with
    gdb's frame numbers; every frame it shows is gdb's."""
    prog = compiled("fs_deep.c", "pg")
    r, raw, text = core_and_text(tool, run_crash, prog)
    st = next(s for s in rawfile.parse(raw).stacks if s.tid == r.pid)
    assert st.flags & STKF_CUT and not st.flags & STKF_TRUNCATED and len(st.pcs) == 512
    cut_at, ncut = struct.unpack_from("<II", raw.read_bytes(), raw.read_bytes().index(b"FINSTACK") + 16 + 16 + 27 * 8)
    gdb_all = gdb_backtraces(prog, r.core, past_main=True)[r.pid]
    assert (cut_at, len(st.pcs) + ncut) == (448, len(gdb_all)), (cut_at, ncut, len(gdb_all))
    fs = thread_block(text, r.pid).split("  final stack")[1]
    assert len(fs.splitlines()) < 30, fs  # two turns of the cycle, the cut, main and below
    assert f"frames not kept by the unwinder" in fs and f": {ncut} frames not kept" in fs, fs
    assert re.search(r"more frames repeating c\d( <- c\d){6} \.\.\.", fs), fs
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + fs


def test_long_cycle_names_folded(compiled, run_crash, tool):
    """A recursion through a cycle of 9 functions: the fold's line names the
    first 6 of them and then says how many there are."""
    prog = compiled("fs_deep.c", "pg", extra=["-DLONG_CYCLE"], tag="long")
    r, raw, text = core_and_text(tool, run_crash, prog)
    fs = thread_block(text, r.pid).split("  final stack")[1]
    assert re.search(r"more frames repeating c\d( <- c\d){5} <- \.\.\. \(9 functions\) \.\.\.", fs), fs


def test_deep_cycle_max_frames(compiled, run_crash, tool):
    """--max-frames 2048 keeps the whole 1050-frame stack: nothing cut,
    still printed in a few lines, every frame gdb's."""
    prog = compiled("fs_deep.c", "pg")
    r, raw, text = core_and_text(tool, run_crash, prog, ce_args=["--max-frames", "2048"])
    st = next(s for s in rawfile.parse(raw).stacks if s.tid == r.pid)
    assert not st.flags & (STKF_CUT | STKF_TRUNCATED) and len(st.pcs) > 1050
    fs = thread_block(text, r.pid).split("  final stack")[1]
    assert "not kept" not in fs and len(fs.splitlines()) < 30, fs
    problems = compare_final_stacks(prog, r.core, text, r.pid)
    assert not problems, "\n".join(problems) + "\n" + fs
    bad = tool("coreextract", "--max-frames", "3", r.core)
    assert bad.returncode == 2 and "--max-frames" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_enclosing_frames_say_where_frames_are_missing(compiled, run_crash, tool, tmp_path):
    """With a small ring, the frames enclosing the first call shown come
    from the final stack: outermost first (from _start), and where the
    unwinder left frames out the list says so at that depth; when unwinding
    stopped early, the outermost line says the outer frames are unknown --
    never a recursion frame presented as the outermost one."""
    prog = compiled("fs_deep.c", "pg")
    r, raw, text = core_and_text(tool, run_crash, prog, env={"FUNTRACE_BUF": "4096"}, decode_args=["-n", "5"])
    block = thread_block(text, r.pid)
    enc = [x for x in block.splitlines() if x.endswith("[enclosing]")]
    assert enc[0].split()[3] == "_start", enc[:6]
    ncut = int(re.search(r"final stack \(libunwind, \d+ frames, (\d+) of them not kept", block).group(1))
    # (the ring holds the innermost of those frames: the marker counts the others)
    assert [x for x in enc if re.search(r"\[(\d+ of the )?%d frames not kept by the unwinder\]" % ncut, x)], block[:3000]
    assert "1 more open frame of main" in block
    # the same stack as if unwinding had stopped at 300 frames (TRUNCATED, no outer part)
    data, out, off = raw.read_bytes(), b"", 0
    while off < len(data):
        magic, ln = data[off:off + 8], struct.unpack_from("<Q", data, off + 8)[0]
        p = bytearray(data[off + 16:off + 16 + ln])
        if magic == b"FINSTACK" and struct.unpack_from("<I", p, 0)[0] == r.pid:
            hdr = 16 + 27 * 8 + 8
            struct.pack_into("<II", p, 8, 300, STKF_TRUNCATED | 1)
            struct.pack_into("<II", p, hdr - 8, 0, 0)
            p = p[:hdr + 300 * 8]
        out += magic + struct.pack("<Q", len(p)) + bytes(p)
        off += 16 + ln
    trunc = tmp_path / "trunc.raw"
    trunc.write_bytes(out)
    t = tool("funtrace-decode", trunc, "--text", "-n", "5")
    assert t.returncode == 0, t.stderr
    block = thread_block(t.stdout, r.pid)
    enc = [x for x in block.splitlines() if x.endswith("[enclosing]")]
    assert "[outer frames unknown: unwinding stopped]" in enc[0], enc[:3]
    assert "outer frames unknown" in block.split("final stack")[1]


@pytest.mark.parametrize("buf", ["8192", "4096", "2048"])
def test_deep_cycle_depths_with_cut_stack(compiled, run_crash, tool, buf):
    """The ring holds the innermost calls of a 1054-frame recursion whose
    final stack the unwinder cut (448 innermost + 64 outermost kept): the
    ring's first call lies in the kept outer part (8 KiB ring), in the cut
    (4 KiB) or in the kept inner part (2 KiB).  In every case the leaf's
    depth is its depth in gdb's stack (_start at 0), the calls shown are at
    consecutive depths up to it, the "enclosing" count is the first call's
    depth, the enclosing list folds the recursion as the 7-function cycle it
    is (at the right depths), and frames that neither the ring nor the
    unwinder kept are counted at the depth where they start."""
    prog = compiled("fs_deep.c", "pg")
    r, raw, text = core_and_text(tool, run_crash, prog, env={"FUNTRACE_BUF": buf}, decode_args=["-n", "20"])
    gdb_all = gdb_backtraces(prog, r.core, past_main=True)[r.pid]
    block = thread_block(text, r.pid)
    timeline = block.split("  final stack")[0]
    m = re.search(r"last (\d+) calls \(and the (\d+) enclosing the first\)", timeline)
    assert m and int(m.group(1)) == 20, timeline[:2000]
    shown = [x for x in timeline.splitlines() if "[still open]" in x and not x.endswith("[enclosing]")]
    depths = [int(re.search(r"\[depth (\d+)\]", x).group(1)) for x in shown]
    leaf = len(gdb_all) - 1
    assert depths == list(range(leaf - 19, leaf + 1)), (depths, leaf, timeline[:3000])
    assert re.search(r"\[depth %d\] c7 " % leaf, shown[-1]), shown[-1]
    assert int(m.group(2)) == leaf - 19, (m.group(0), leaf)
    assert "runs of functions" not in timeline, timeline[:3000]
    lines = timeline.splitlines()
    folds = 0
    for i, ln in enumerate(lines):
        f = re.search(r"\.\.\. (\d+) more open frames repeating ((?:c\d -> ){6}c\d) \.\.\.$", ln)
        if not f:
            continue
        folds += 1
        names = f.group(2).split(" -> ")
        assert sorted(names) == [f"c{i}" for i in range(1, 8)], ln
        # the line after it is at the depth after the folded frames; gdb's frame
        # at the fold's first depth (frame number leaf - depth) is the cycle's first function
        first = int(re.search(r"\[depth (\d+)\]", lines[i + 1]).group(1)) - int(f.group(1))
        assert norm_func(gdb_all[leaf - first].func) == names[0], (first, ln, gdb_all[leaf - first])
    assert folds == (1 if buf == "8192" else 2), timeline[:3000]
    enc = [x for x in timeline.splitlines() if x.endswith("[enclosing]")]
    assert enc[0].split()[3] == "_start", enc[:4]
    marks = [x for x in enc if "frames not kept by the unwinder]" in x]
    ncut = int(re.search(r"final stack \(libunwind, \d+ frames, (\d+) of them not kept", block).group(1))
    if buf == "8192":  # the ring reaches into the outer part: nothing unknown
        assert not marks, marks
    else:
        assert len(marks) == 1, enc
        mm = re.search(r"\[depth (\d+)\] \[(?:(\d+) of the )?(\d+) frames not kept by the unwinder\]", marks[0])
        unknown = int(mm.group(2) or mm.group(3))
        assert int(mm.group(3)) == ncut and mm.group(1) == "64", marks
        events = int(re.search(r"-- (\d+) events", block).group(1))
        # the ring's first call is at depth leaf - events + 1: the unknown frames end just outside it
        assert 64 + unknown == min(leaf - events + 1, 64 + ncut), (unknown, events, leaf, marks)


@pytest.mark.parametrize("mode", INSTR_MODES)
def test_thread_start_frames_in_order(compiled, run_crash, tool, mode):
    """A std::thread whose ring no longer holds its start: the frames
    enclosing its calls are its final stack's, in the stack's order --
    start_thread, libstdc++'s thread routine (no symbol here:
    libstdc++.so.6+0x...), _M_run and what is inlined into it, child,
    child_inf -- the caller always outside its callee."""
    prog = compiled("fs_thread.cc", mode)
    r, raw, text = core_and_text(tool, run_crash, prog, env={"FUNTRACE_BUF": "4096"}, decode_args=["-n", "3"])
    tid = next(t.tid for t in rawfile.parse(raw).threads if t.tid != r.pid and t.name != "funtrace")
    block = thread_block(text, tid)
    enc = [x for x in block.splitlines() if x.endswith("[enclosing]")]
    enc_names = [norm_func(re.split(r"\s{2,}", x.strip())[2]) for x in enc]
    stack = [norm_func(f.func) for f in reversed(decoder_stacks(text)[tid].frames)]
    assert enc_names == stack[:len(enc_names)], (enc_names, stack)
    i = enc_names.index("start_thread")
    assert re.match(r"libstdc\+\+\.so\.6\+0x", enc_names[i + 1]) and "_M_run" in enc_names[i + 2], enc_names
    assert enc_names.index("child") < enc_names.index("child_inf"), enc_names
    problems = compare_final_stacks(prog, r.core, text, tid)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mode", ["pg"])  # (-finstrument-functions' exit hook after the call: no tail call)
def test_tail_call_chain_across_modules(compiled, run_crash, tool, mode):
    """main calls join_wrapped, which tail-calls pthread_join through the
    PLT, which tail-calls __pthread_clockjoin_ex: a chain of tail calls
    that crosses modules (memcached's lru_maintainer_pause jumps to
    pthread_mutex_lock so).  gdb follows it from main's call site into the C
    library and shows both frames; so does the final stack"""
    prog = compiled("fs_join.c", mode, extra=["-O2"], tag="O2")
    r, raw, text = core_and_text(tool, run_crash, prog, ["wrap"])
    main = r.pid
    problems = compare_final_stacks(prog, r.core, text, main)
    assert not problems, "\n".join(problems) + "\n" + text
    names = [norm_func(f.func) for f in decoder_stacks(text)[main].frames]
    k = names.index(norm_func("main"))
    assert names[k - 3:k] == [norm_func(n) for n in ("__pthread_clockjoin_ex", "___pthread_join", "join_wrapped")], names
    assert re.search(r"#\d+ +\[tail-call\] +join_wrapped at \S*fs_join\.c:\d+", thread_block(text, main)), text


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_tail_call_frames_in_another_module(compiled, run_crash, tool, mode):
    """main waits in pthread_join while its thread crashes: the C library's
    pthread_join tail-calls __pthread_clockjoin_ex, so the call from main
    (through the PLT, into another module) returns past a function that is
    not on the machine stack.  gdb finds it from main's call site and the C
    library's own call sites (its debug info) and shows it; so does the
    final stack ([tail-call] ___pthread_join), frame by frame as gdb's --
    as in memcached's threads caught in pthread_mutex_unlock, which
    tail-calls __pthread_mutex_unlock_usercnt."""
    prog = compiled("fs_join.c", mode, extra=["-O2"], tag="O2")
    r, raw, text = core_and_text(tool, run_crash, prog)
    main = r.pid
    problems = compare_final_stacks(prog, r.core, text, main)
    assert not problems, "\n".join(problems) + "\n" + text
    frames = decoder_stacks(text)[main].frames
    names = [norm_func(f.func) for f in frames]
    k = names.index(norm_func("main"))
    assert names[k - 2:k] == [norm_func("__pthread_clockjoin_ex"), norm_func("___pthread_join")], names
    assert re.search(r"#\d+ +\[tail-call\] +___pthread_join at \S*pthread_join\.c:\d+", thread_block(text, main)), text
