"""funtrace-decode end to end: real programs with known call patterns, built
in each instrumentation mode, crashed by real signals; their cores extracted
by coreextract (or their on-crash snapshots), decoded to JSON/text/summary."""
import re
import struct
import time

import pytest

from conftest import CLANG_MODES, INSTR_MODES, run_tool
from dec_util import (check_nesting, crash_decoded, crash_raw, decode, forest, last_event_ns, load, merge_gens, modules,
                      objdump_has_jmp, render, text_lines)
from views_oracle import as_kept, call_durations, filtered


def modes():
    return [pytest.param(m, marks=pytest.mark.clang) if m in CLANG_MODES else m for m in INSTR_MODES]


PATTERN = ["main", "  run"] + ["    leaf", "    leaf", "    leaf", "    mid", "      leaf"] * 3 + \
          ["  crash_here"]


def main_tree(tr, tid=None):
    """the thread's calls, with the pieces of calls spanning generations joined"""
    tid = tid if tid is not None else tr.pid
    return merge_gens(forest(tr.slices[tid]))


@pytest.mark.parametrize("mode", modes())
def test_pattern_from_core(tree, compiled, run_crash, mode, tmp_path):
    exe = compiled("dec_pattern.c", mode)
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    r, tr = decode(tree, raw, json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert render(main_tree(tr)) == PATTERN
    sl = {s.n: s for s in tr.slices[tr.pid]}
    # the crashing frames are open at the end; nothing else is
    assert sl["crash_here"].args.get("open_at_end") and sl["main"].args.get("open_at_end")
    assert not any(s.args for s in tr.slices[tr.pid] if s.n in ("leaf", "mid", "run"))
    # the crash instant on the crashing thread, at the end of the trace
    crash = [e for e in tr.instants if e["name"].startswith("SIGSEGV")]
    assert len(crash) == 1 and crash[0]["tid"] == tr.pid and crash[0]["args"]["fault_address"] == "0x0"
    assert tr.names[tr.pid].endswith("[crashed]")
    # viztracer file_info: functions point at the source, which is embedded
    fi = tr.data["file_info"]
    path, line = fi["functions"]["crash_here"]
    assert path.endswith("tests/progs/dec_pattern.c") and line > 0
    assert "NI void crash_here" in fi["files"][path][0].splitlines()[line - 1]
    # --no-source: no embedded files
    r2, tr2 = decode(tree, raw, "--no-source", json_out=tmp_path / "ns.json")
    assert r2.returncode == 0 and tr2.data["file_info"]["files"] == {}


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_pattern_from_on_crash_snapshot(tree, compiled, run_crash, mode, tmp_path):
    """the runtime's own snapshot (FUNTRACE_ON_CRASH): no final stack"""
    exe = compiled("dec_pattern.c", mode)
    d = tmp_path / "snap"
    d.mkdir()
    run_crash([exe, "crash"], env={"FUNTRACE_ON_CRASH": str(d)}, name="oc", expect_core=False)
    raws = list(d.glob("*.raw"))
    assert len(raws) == 1
    r, tr = decode(tree, raws[0], json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert render(main_tree(tr)) == PATTERN


def test_text_view(tree, compiled, run_crash):
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash", "20"])
    r, _ = decode(tree, raw, "--text", "-n", "7")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert not (raw.parent / "trace.json").exists()
    head, _, body = out.partition("\nthread ")
    assert "dec_pattern-pg crash 20` (pid " in head
    assert re.search(r"signal: +SIGSEGV \(Segmentation fault\).*fault address 0x0, thread \d+", head)
    assert re.search(r"last event: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9}", head)
    # crashing thread first, the last 7 calls, indented, relative times, open frames marked
    assert body.startswith(str(r.stdout.split("thread ")[1].split()[0])) and "[crashed]" in body.split("\n")[0]
    lines = body.split("\n")
    # the frames enclosing the first of the 7 calls come first, marked
    enc = [l for l in lines[2:] if l.endswith("[enclosing]")]
    assert enc and "main  dec_pattern.c" in enc[0] and lines[2:2 + len(enc)] == enc
    calls = lines[2 + len(enc):9 + len(enc)]
    assert len(calls) == 7 and not any("[enclosing]" in l for l in calls)
    assert lines[9 + len(enc)].startswith("  final stack")
    assert re.match(r"\s+-\d+(\.\d+)? (ns|us|ms)\s+\d", calls[0])
    last = calls[-1]
    assert "crash_here" in last and "[still open]" in last and "open" in last.split("crash_here")[0]
    assert "leaf  dec_pattern.c:" in calls[-2]
    # indentation: leaf called from mid is deeper than mid
    mid = [l for l in calls if "mid  dec_pattern.c" in l]
    if mid:
        i = calls.index(mid[0])
        if i + 1 < len(calls) - 1:
            assert calls[i + 1].index("leaf") == calls[i].index("mid") + 2
    # the final stack with file:line
    fs = body[body.index("final stack"):]
    assert re.search(r"#0 +0x[0-9a-f]+ +crash_here at .*dec_pattern\.c:\d+", fs)
    assert re.search(r"#1 +0x[0-9a-f]+ +main at .*dec_pattern\.c:\d+", fs)


def test_summary_view(tree, compiled, run_crash):
    exe = compiled("dec_gens.c", "pg")
    raw = crash_raw(tree, run_crash, exe, env={"FUNTRACE_GEN_MS": "10"})
    r, _ = decode(tree, raw, "--summary")
    assert r.returncode == 0, r.stderr
    s = r.stdout
    assert re.search(r"source: +core", s) and "problems:    none" in s
    # main resized its ring (its old record retired) before creating the
    # threads that reused that record: nobody is missing
    assert "records reused 0" in s
    gens = re.findall(r"^  #(\d+) ", s, re.M)
    assert len(gens) >= 6
    busy = s[s.index(" busy "):].split("\n")
    assert "WRAPPED" in busy[0]
    assert "incomplete (older events overwritten) in generations: #" in busy[1]
    assert re.search(r"tid \d+ +sleeper +alive +exact +\d+ events", s)


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_laps_old_generation_position(tree, compiled, run_crash, tmp_path, time):
    """A wrapped ring's recorded generation positions are laps old: one can
    fall on the escapes of a later boundary.  Taken as that generation's
    boundary, it made the ring's oldest events 2^32 ticks too old (a 1.6 s
    span, events before the oldest generation: a CI failure).  Point the
    busy thread's oldest recorded position at the first TSC_HI escape in its
    ring, as the runtime can leave it, and check the times stay true and
    that no event is put before the generation."""
    import struct
    from rawfile import GEN_NONE, parse
    exe = compiled("dec_gens.c", "pg")
    # sampled: stamps only at boundaries (K = 10^6), so the ring has no stamp
    # before the first boundary's escapes to refute the position with
    env = {"FUNTRACE_GEN_MS": "10",
           **({"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "1000000"} if time == "sampled" else {})}
    # 2 leaf calls a round: the busy ring spans ~30 ms, several boundaries
    raw = crash_raw(tree, run_crash, exe, ["300", "2"], env=env)
    data = bytearray(raw.read_bytes())
    busy = [t for t in parse(bytes(data)).threads if t.name == "busy"]
    assert len(busy) == 1 and busy[0].flags & 1, "the busy thread's ring wrapped"
    t = busy[0]
    if t.fmt == 3:
        k = [i for i, w in enumerate(t.items) if w & 3 == 3 and (w >> 2) & 63 == 2]
    else:
        assert t.fmt == 4
        k = [i for i, w in enumerate(t.items) if w & 7 == 3 and (w >> 3) & 3 == 1]
    assert k, "a boundary's TSC_HI escape in the busy ring"
    k = k[0]
    g0 = min(g for g, _ in t.gen_pos if g != GEN_NONE)
    # the THRDSTAT chunk after the busy thread's THREADID: gen_pos at payload offset 96
    off, cur, stat = 0, None, None
    while off < len(data):
        magic = bytes(data[off:off + 8])
        (ln,) = struct.unpack_from("<Q", data, off + 8)
        if magic == b"THREADID":
            cur = bytes(data[off + 32:off + 48]).split(b"\0")[0]
        elif magic == b"THRDSTAT" and cur == b"busy":
            stat = off + 16
        off += 16 + ln
    isz = 8 if t.fmt == 3 else 4
    struct.pack_into("<QQ", data, stat + 96 + 16 * (g0 % 64), g0, (t.first_off + isz * k) % t.ring_size)
    mod = tmp_path / "laps-old.raw"
    mod.write_bytes(bytes(data))
    # and the busy ring's oldest items zeroed (exit 3: damaged), as items
    # without a time of their own (an escape, a zeroed item) can be: they go
    # with the event after them, not before the oldest generation (a busy CI
    # machine's ring began with a boundary's TSC_HI escape)
    zeroed = bytearray(raw.read_bytes())
    off, cur = 0, None
    while off < len(zeroed):
        magic = bytes(zeroed[off:off + 8])
        (ln,) = struct.unpack_from("<Q", zeroed, off + 8)
        if magic == b"THREADID":
            cur = bytes(zeroed[off + 32:off + 48]).split(b"\0")[0]
        elif magic in (b"TRACEE08", b"TRACES04") and cur == b"busy":
            zeroed[off + 16:off + 16 + 8 * isz] = bytes(8 * isz)
        off += 16 + ln
    zpath = tmp_path / "zeroed.raw"
    zpath.write_bytes(bytes(zeroed))
    for path, rc in ((raw, 0), (mod, 0), (zpath, 3)):
        r, _ = decode(tree, path, "--summary")
        assert r.returncode == rc, r.stderr
        s = r.stdout
        line = s[s.index(" busy "):].split("\n")
        span = re.search(r"span ([\d.]+) (ns|us|ms|s) ", line[0])
        assert span and span.group(2) != "s", line[0]
        assert "incomplete (older events overwritten) in generations: #" in line[1], line[:3]
        assert "(before #" not in line[1]


# ---- generations -----------------------------------------------------------

def gens_trace(tree, compiled, run_crash, tmp_path, mode="pg", *args, env=None):
    exe = compiled("dec_gens.c", mode)
    raw = crash_raw(tree, run_crash, exe, env={"FUNTRACE_GEN_MS": "10", **(env or {})})
    r, tr = decode(tree, raw, *args, json_out=tmp_path / "g.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    return raw, tr


@pytest.mark.parametrize("mode", modes())
def test_generations_opening_stacks(tree, compiled, run_crash, tmp_path, mode):
    raw, tr = gens_trace(tree, compiled, run_crash, tmp_path, mode)
    starts = tr.gen_starts()
    assert len(starts) >= 8, starts
    sleeper = tr.tid_by_name("sleeper")
    roots = forest(tr.slices[sleeper])
    # one root per generation the thread lived in: sleeper_main, clipped at the boundaries
    assert all(s.n == "sleeper_main" for s in roots)
    gen_ts = [ts for _, ts in starts]

    def at_boundary(t):  # a thread's piece starts at the boundary (or just after its last event)
        return min(abs(t - g) for g in gen_ts) < 100_000

    later = [s for s in roots[1:]]
    assert len(later) >= 6
    for s in later:
        # every later generation opens with the stack that was open at its start
        assert at_boundary(s.start) and s.args.get("from_previous_generation"), s
        assert s.children and s.children[0].n == "outer" and s.children[0].start == s.start
        assert s.children[0].args.get("from_previous_generation")
    for s in roots[:-1]:
        assert s.args.get("continues_in_next_generation") and at_boundary(s.end)
    assert roots[-1].args.get("open_at_end")
    # the generation of a boundary holds the sleeper's calls of that period only
    names = set(render(roots))
    assert {n.strip() for n in names} == {"sleeper_main", "outer", "inner", "leaf", "napper"}


def test_min_duration_keeps_every_piece_of_a_long_call(tree, compiled, run_crash, tmp_path):
    """--min-duration measures a call that spans generations whole: the
    sleeper's sleeper_main lasts the whole run in pieces of one generation
    each (10 ms); with a threshold above every piece's own duration, every
    piece of it stays, and the filter keeps what the oracle keeps (by whole
    calls)"""
    raw, tr = gens_trace(tree, compiled, run_crash, tmp_path)
    sleeper = tr.tid_by_name("sleeper")
    roots = forest(tr.slices[sleeper])
    assert len(roots) >= 6 and all(s.n == "sleeper_main" for s in roots)
    thr = max(s.end - s.start for s in roots) + 1000  # more than any piece, less than the whole call
    assert roots[-1].end - roots[0].start > thr
    r, kept = decode(tree, raw, "--min-duration", f"{thr}ns", json_out=tmp_path / "m.json")
    assert r.returncode == 0, r.stderr
    got = forest(kept.slices.get(sleeper, []))
    assert [(s.n, s.start, s.end) for s in got] == [(s.n, s.start, s.end) for s in roots]
    cd = call_durations(tr)
    assert as_kept(kept) == filtered(tr, min_dur=thr, call_dur=lambda n: cd[id(n.s)])


@pytest.mark.parametrize("mode", modes())
def test_wrapped_ring_exact_stack(tree, compiled, run_crash, tmp_path, mode):
    """busy's 2 KiB ring wraps: the frames open at its start come from the returns whose
    calls were overwritten and from the final stack: real names, no orphans"""
    raw, tr = gens_trace(tree, compiled, run_crash, tmp_path, mode)
    busy = tr.tid_by_name("busy")
    # uninstrumented frames of the final stack below the thread function are real frames too
    roots = main_tree(tr, busy)
    while roots and roots[0].n in ("__clone3", "clone3", "start_thread"):
        assert roots[0].args.get("started_before_ring") and len(roots) == 1
        roots = roots[0].children
    lines = render(roots)
    assert {l.strip() for l in lines} <= {"busy_main", "busy_outer", "busy_step", "leaf", "napper"}, lines
    assert len(roots) == 1 and roots[0].n == "busy_main" and roots[0].args.get("open_at_end")
    assert roots[0].args.get("started_before_ring")
    assert all(c.n == "busy_outer" for s in roots for c in s.children)
    steps = [c for s in roots for o in s.children for c in o.children]
    assert {c.n for c in steps} <= {"busy_step", "napper"}
    assert all(l.n == "leaf" for c in steps if c.n == "busy_step" for l in c.children)
    # the ring start is marked, and the summary flags the older generations
    assert any(e["name"].startswith("ring starts here") and e["tid"] == busy for e in tr.instants)
    gi = [e for e in tr.instants if e.get("s") == "g"]
    assert any(e["args"]["threads_incomplete"] >= 1 for e in gi)
    lost = [e for e in tr.instants if e["tid"] == busy and e["name"].startswith("no events")]
    assert len(lost) >= 3 and all(e["args"]["gen"] in {g["args"]["gen"] for g in gi} for e in lost)


def test_last_k_generations(tree, compiled, run_crash, tmp_path):
    raw, full = gens_trace(tree, compiled, run_crash, tmp_path)
    r, tr = decode(tree, raw, "--generations", "3", json_out=tmp_path / "k.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    starts = tr.gen_starts()
    assert [g for g, _ in starts] == [g for g, _ in full.gen_starts()][-3:]
    first = starts[0][1]
    for tid, sl in tr.slices.items():
        assert all(s.start >= first for s in sl)
    # each thread's first shown generation starts with its real open stack
    sleeper = tr.tid_by_name("sleeper")
    roots = forest(tr.slices[sleeper])
    assert roots[0].n == "sleeper_main" and roots[0].start == first and roots[0].children[0].n == "outer"


# ---- exceptions, longjmp, tail calls, dlclose -------------------------------

EXC_ITER = ["  caller", "    catcher", "      before_try", "      wrapper_outer", "        wrapper_call",
            "          thrower", "            __cxa_throw", "      __cxa_begin_catch", "      after_catch",
            "      __cxa_end_catch"]


@pytest.mark.parametrize("mode", modes())
@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_exceptions(tree, compiled, run_crash, mode, time, tmp_path):
    """(sampled time: the catch is a CATCH escape before a 4-byte call item)"""
    exe = compiled("dec_exc.cc", mode)
    raw = crash_raw(tree, run_crash, exe, env={"FUNTRACE_TIME": time})
    r, tr = decode(tree, raw, json_out=tmp_path / "e.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert render(main_tree(tr)) == ["main"] + EXC_ITER * 3 + ["  crash_here"]
    unwound = [s for s in tr.slices[tr.pid] if s.n in ("thrower", "wrapper_call", "wrapper_outer")]
    assert len(unwound) == 9
    if mode == "finstr":  # gcc -finstrument-functions logs returns during unwinding
        assert not any(set(s.args) - {"measured"} for s in unwound)  # (sampled: "measured": false)
    else:  # closed by the catch event
        assert all(s.args.get("unwound_by_exception") for s in unwound)
    # __cxa_throw never returns: unwound, at the thrower's logged return (gcc
    # -finstrument-functions) or at the catch
    throws = [s for s in tr.slices[tr.pid] if s.n == "__cxa_throw"]
    assert len(throws) == 3 and all(s.args.get("unwound_by_exception") for s in throws)


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", modes())
def test_longjmp(tree, compiled, run_crash, mode, time, tmp_path):
    """the runtime logs each setjmp and longjmp with the jmp_buf's stack
    pointer: the frames the jump leaves end at it, and after_longjmp is
    setter's child (without the markers it looked called from jumper until
    setter's return revealed the jump)"""
    exe = compiled("dec_longjmp.c", mode)
    env = {"FUNTRACE_TIME": "sampled"} if time == "sampled" else None
    _, tr = crash_decoded(tree, run_crash, exe, env=env, json_out=tmp_path / "l.json")
    it = ["  setter", "    before_setjmp", "    wrapper_outer", "      wrapper_call", "        jumper",
          "    after_longjmp"]
    assert render(main_tree(tr)) == ["main"] + it * 3 + ["  crash_here"]
    sl = sorted(tr.slices[tr.pid], key=lambda s: s.start)
    missing = [s for s in sl if s.n in ("wrapper_outer", "wrapper_call", "jumper")]
    assert len(missing) == 9 and all(s.args.get("return_missing") and s.args.get("left_by_longjmp")
                                     for s in missing)
    # ... ending at the jump: before after_longjmp began
    after = [s for s in sl if s.n == "after_longjmp"]
    for i, a in enumerate(after):
        assert all(m.end <= a.start for m in missing[3 * i:3 * i + 3]), (missing, after)


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", modes())
def test_longjmp_to_a_main_loop(tree, compiled, run_crash, mode, time, tmp_path):
    """Errors that siglongjmp to a main loop's sigsetjmp, whose frame never
    returns (PostgreSQL's ereport(ERROR) to PostgresMain): every request is
    serve's child, each failed one's frames end at its jump.  Without the
    setjmp markers nothing ever revealed the jumps: each request after an
    error nested under the failed one's frames, deeper and deeper."""
    from views_oracle import assert_perfetto_is_json
    exe = compiled("dec_errloop.c", mode)
    env = {"FUNTRACE_TIME": "sampled"} if time == "sampled" else None
    raw, tr = crash_decoded(tree, run_crash, exe, env=env, json_out=tmp_path / "l.json")
    ok = ["    handle", "      check", "      leaf"]
    failed = ["    handle", "      check", "        fail", "    recover"]
    assert render(main_tree(tr)) == ["main", "  serve"] + (ok + failed) * 3 + ["    crash_here"]
    missing = [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    assert sorted(s.n for s in missing) == sorted(["handle", "check", "fail"] * 3), missing
    assert all(s.args.get("left_by_longjmp") for s in missing), missing
    lines = text_lines(tree, raw, "--calls", "50")
    assert len([ln for ln in lines if "[left by longjmp]" in ln]) == 9, lines
    assert not [ln for ln in lines if "[return missing]" in ln], lines
    pf = tmp_path / "l.pftrace"
    r = run_tool([tree.tool("funtrace-decode"), raw, "--perfetto", pf])
    assert r.returncode == 0, r.stderr
    assert_perfetto_is_json(pf, tr, tr.pid)  # left_by_longjmp among the annotations


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_longjmp_that_aborts(tree, compiled, run_crash, time, tmp_path):
    """A longjmp into a frame that returned, which glibc's __longjmp_chk
    (_FORTIFY_SOURCE) aborts before jumping: the thread's events end with
    the longjmp's marker, and the jump did not happen -- the stack is still
    the one that jumped (jumper open, under main, as the final stack says),
    not a new context nor jumper's frames left."""
    exe = compiled("dec_badjmp.c", "pg", extra=["-D_FORTIFY_SOURCE=2"], tag="fortify")
    env = {"FUNTRACE_TIME": "sampled"} if time == "sampled" else None
    raw, tr = crash_decoded(tree, run_crash, exe, env=env, json_out=tmp_path / "b.json")
    assert render(main_tree(tr)) == ["main", "  d1", "    d2", "      d3", "        deep", "  jumper"]
    sl = tr.slices[tr.pid]
    assert {s.n for s in sl if s.args.get("open_at_end")} == {"main", "jumper"}
    assert not [s for s in sl if s.args.get("return_missing") or s.args.get("suspended")], sl
    lines = "\n".join(text_lines(tree, raw))
    assert "__longjmp_chk" in lines and "[suspended]" not in lines and "[context" not in lines, lines


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_longjmp_then_a_crash_where_it_landed(tree, compiled, run_crash, mode, time, tmp_path):
    """The process dies where a longjmp landed, before any hook ran there (lua's
    errors killed at the wrong instant, in CI): the thread's events end with the
    longjmp's marker, no event shows the jump happen -- but the final stack does
    (setter, main: the frames above setter's are gone), so those frames end at
    the jump, left by it, as when an event follows; not merely "return missing"
    by the final stack, as if nobody knew why.  (The other way round,
    test_longjmp_that_aborts: the final stack still holds the jumper.)"""
    exe = compiled("dec_longjmp_land.c", mode)
    env = {"FUNTRACE_TIME": "sampled"} if time == "sampled" else None
    raw, tr = crash_decoded(tree, run_crash, exe, env=env, json_out=tmp_path / "l.json")
    assert render(main_tree(tr)) == ["main", "  setter", "    wrapper_outer", "      wrapper_call", "        jumper"]
    sl = tr.slices[tr.pid]
    assert {s.n for s in sl if s.args.get("open_at_end")} == {"main", "setter"}
    left = [s for s in sl if s.n in ("wrapper_outer", "wrapper_call", "jumper")]
    assert len(left) == 3 and all(s.args.get("return_missing") and s.args.get("left_by_longjmp") for s in left), left
    lines = text_lines(tree, raw)
    assert len([ln for ln in lines if "[left by longjmp]" in ln]) == 3, lines
    assert not [ln for ln in lines if "[return missing]" in ln], lines


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", modes())
def test_longjmp_to_a_returning_frame(tree, compiled, run_crash, mode, time, tmp_path):
    """the longjmp's target returns at once: its return follows the call of
    the function that jumped.  Sampled, with a stamp due at every return
    (FUNTRACE_SAMPLE_K=1), that return must not become a stamped return
    (which the decoder would take for jumper's: a leaf's) -- the runtime's
    longjmp puts an escape between them -- so protect ends there and
    wrapper and jumper lost their returns."""
    exe = compiled("dec_longjmp_ret.c", mode)
    env = {"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "1"} if time == "sampled" else None
    raw = crash_raw(tree, run_crash, exe, env=env)
    r, tr = decode(tree, raw, json_out=tmp_path / "l.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    it = ["  protect", "    wrapper", "      jumper", "  after"]
    assert render(main_tree(tr)) == ["main"] + it * 3 + ["  crash_here"]
    missing = [s for s in tr.slices[tr.pid] if s.n in ("wrapper", "jumper")]
    assert len(missing) == 6 and all(s.args.get("return_missing") for s in missing), missing
    assert not [s for s in tr.slices[tr.pid] if s.n == "protect" and s.args.get("return_missing")]


@pytest.mark.parametrize("mode", modes())
def test_tail_calls(tree, compiled, run_crash, mode, tmp_path):
    exe = compiled("dec_tail.c", mode, extra=["-foptimize-sibling-calls"])
    raw = crash_raw(tree, run_crash, exe)
    r, tr = decode(tree, raw, json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    if objdump_has_jmp(exe, "tail_caller", "callee"):
        # -pg logs tail_caller's return before the jump: callee runs as its sibling
        it = ["    tail_caller", "    callee", "    tail_caller_untraced"]
    else:
        it = ["    tail_caller", "      callee", "    tail_caller_untraced"]
    assert render(main_tree(tr)) == ["main", "  run"] + it * 3 + ["  crash_here"]
    assert not any(s.args for s in tr.slices[tr.pid] if s.n != "main" and s.n != "crash_here")


@pytest.mark.parametrize("mode", modes())
@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_dlclose_reload_same_address(tree, compiled, run_crash, mode, time, tmp_path):
    """calls back and forth between the executable and libraries (address high
    halves that differ: an ADDR_HI escape at every crossing, in both time modes)"""
    liba = compiled("dec_plugin.c", mode, extra=["-shared", "-fPIC", "-DPLUGIN_A"], tag="a")
    libb = compiled("dec_plugin.c", mode, extra=["-shared", "-fPIC", "-DPLUGIN_B"], tag="b")
    exe = compiled("dec_dlmain.c", mode, extra=["-ldl"])
    raw = crash_raw(tree, run_crash, exe, [liba, libb], env={"FUNTRACE_TIME": time})
    import rawfile
    assert rawfile.parse(raw).threads[0].fmt == (4 if time == "sampled" else 3)
    r, tr = decode(tree, raw, json_out=tmp_path / "d.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    a = ["      plugin_run", "        plugin_a_helper", "          plugin_a_work", "        plugin_a_work"]
    b = ["      plugin_run", "        plugin_b_helper", "          plugin_b_work", "          plugin_b_work"]
    assert render(main_tree(tr)) == ["main"] + (["  cycle", "    use_plugin"] + a + ["    use_plugin"] + b) * 2 + \
        ["  crash_here"]
    # the two libraries were loaded at the same address in different generations
    # (when the kernel placed them so: the module table says; usually the case)
    mods = modules(raw)
    sa = {m["seg0"] for m in mods if m["path"].endswith(liba.name)}
    sb = {m["seg0"] for m in mods if m["path"].endswith(libb.name)}
    assert sa and sb
    if sa & sb:
        ga = [(m["gen_loaded"], m["gen_unloaded"]) for m in mods if m["path"].endswith(liba.name)]
        gb = [(m["gen_loaded"], m["gen_unloaded"]) for m in mods if m["path"].endswith(libb.name)]
        assert len(ga) == 2 and len(gb) == 2, (ga, gb)


# ---- the original funtrace.raw format ---------------------------------------

def test_original_format(tree, compiled, run_crash, tmp_path):
    import dec_oldraw
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    old = tmp_path / "funtrace.raw"
    sample = dec_oldraw.to_original(raw.read_bytes())
    old.write_bytes(sample)
    r, tr = decode(tree, old, json_out=tmp_path / "o.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    # same names and nesting as our own raw (minus crash_here: open at the end either way)
    assert render(main_tree(tr)) == PATTERN
    # several samples in one file: the last by default, --sample N picks one
    r1 = decode(tree, raw, json_out=tmp_path / "n.json")[1]
    two = tmp_path / "two.raw"
    first = dec_oldraw.to_original(raw.read_bytes()).replace(b"dec_pattern-pg crash", b"dec_pattern-pg first")
    two.write_bytes(first + sample)
    r, tr = decode(tree, two, "--summary", json_out=tmp_path / "2.json")
    assert r.returncode == 0 and "sample 1 of 2" in r.stdout and "original funtrace format" in r.stdout
    r, tr0 = decode(tree, two, "--sample", "0", json_out=tmp_path / "s0.json")
    assert r.returncode == 0
    pn = [e for e in tr0.data["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert "first" in pn[0]["args"]["name"]
    r, _ = decode(tree, two, "--sample", "2", json_out=tmp_path / "s2.json")
    assert r.returncode == 2 and "no sample 2" in r.stderr
    assert render(main_tree(r1)) == PATTERN


def test_original_format_ring_dump(tree, compiled, run_crash, tmp_path):
    """the original runtime's SIGTRAP dump writes the whole ring in buffer order: a wrapped
    ring starts with its newer half, an unwrapped one ends with never-written (zero) slots;
    decoded, both read exactly like the entries oldest first"""
    import dec_oldraw
    import rawfile
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash", "8"])
    data = raw.read_bytes()
    n = max(len(t.entries) for t in rawfile.parse(data).threads)
    assert n > 40

    def decoded(tag, **kw):
        p = tmp_path / f"{tag}.raw"
        p.write_bytes(dec_oldraw.to_original(data, **kw))
        r, tr = decode(tree, p, "--summary", json_out=tmp_path / f"{tag}.json")
        assert r.returncode == 0, r.stderr
        check_nesting(tr)
        return r, {tid: [(s.name, s.start, s.end, s.args) for s in sl] for tid, sl in tr.slices.items()}

    r0, base = decoded("linear")
    assert render(main_tree(load(tmp_path / "linear.json"))) == PATTERN[:2] + PATTERN[2:7] * 8 + PATTERN[-1:]
    for tag, kw in (("wrapped", dict(rotate=n // 3)), ("zeros", dict(zeros=9)),
                    ("both", dict(rotate=n // 2, zeros=5)), ("zeros-first", dict(rotate=n + 3, zeros=7))):
        r, got = decoded(tag, **kw)
        assert got == base, tag
        assert "out-of-order" not in r.stdout and "out of order" not in r.stderr, tag
        # zero slots are not events
        assert re.search(r"tid \d+ .* (\d+) events", r.stdout).group(1) == \
            re.search(r"tid \d+ .* (\d+) events", r0.stdout).group(1)


# ---- durations in the text view ----------------------------------------------------

def test_text_shows_measured_durations(tree, compiled, run_crash, tmp_path):
    """a call whose return carries the same TSC as its call lasted 0 ns: --text says so,
    while the JSON still gives each event its own ns (1 ns) so that slices nest"""
    import struct
    import rawfile
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    out = []
    for m, p in rawfile.chunks(raw.read_bytes()):
        if m == "TRACEBUF":
            ents = [list(struct.unpack_from("<QQ", p, 16 * i)) for i in range(len(p) // 16)]
            for a, b in zip(ents, ents[1:]):
                if a[0] and not a[0] >> 62 and b[0] >> 63:  # a call, then a return: a leaf call
                    b[1] = a[1]
            p = b"".join(struct.pack("<QQ", w, t) for w, t in ents)
        if m == "TRACEE08":  # FT_FMT_EXACT8: the TSC's low half is bits 63..32
            its = list(struct.unpack(f"<{len(p) // 8}Q", p))
            for i in range(len(its) - 1):
                a, b = its[i], its[i + 1]
                if a and a & 3 in (0, 2) and b & 3 == 1:
                    its[i + 1] = (a & ~0xFFFFFFFF) | (b & 0xFFFFFFFF)
            p = struct.pack(f"<{len(its)}Q", *its)
        out.append(m.encode("latin1") + struct.pack("<Q", len(p)) + p)
    zero = tmp_path / "zero.raw"
    zero.write_bytes(b"".join(out))
    r, tr = decode(tree, zero, "--text", "-n", "100", json_out=tmp_path / "z.json")
    assert r.returncode == 0, r.stderr
    leaf = [l for l in r.stdout.split("\n") if re.search(r"\bleaf  dec_pattern\.c:", l)]
    assert len(leaf) == 12 and all(re.match(r"\s+-?\d+(\.\d+)? (ns|us)\s+0 ns\s", l) for l in leaf), leaf
    check_nesting(tr)
    assert {s.end - s.start for s in tr.slices[tr.pid] if s.n == "leaf"} == {1}


# ---- without symbols ----------------------------------------------------------------

@pytest.mark.parametrize("src,mode", [("dec_pattern.c", "pg"), ("dec_exc.cc", "pg"), ("dec_pattern.c", "finstr")])
def test_no_symbols_same_calls(tree, compiled, run_crash, tmp_path, src, mode):
    """--no-symbols: names are module+0xOFFSET (of the call), and the calls, their nesting
    and their times are those decoded with symbols (-pg: a return closes the innermost -pg
    frame, a catch the frame whose code holds it)"""
    exe = compiled(src, mode)
    raw = crash_raw(tree, run_crash, exe, [] if src.endswith(".cc") else ["crash"])
    r1, sym = decode(tree, raw, json_out=tmp_path / "s.json")
    r2, nos = decode(tree, raw, "--no-symbols", json_out=tmp_path / "n.json")
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    check_nesting(nos)
    a, b = forest(sym.slices[sym.pid]), forest(nos.slices[nos.pid])
    la, lb = render(a), render(b)
    assert len(la) == len(lb) == len(sym.slices[sym.pid]) == len(nos.slices[nos.pid])
    assert [len(x) - len(x.lstrip()) for x in la] == [len(x) - len(x.lstrip()) for x in lb]
    names = dict(zip((x.strip() for x in la), (x.strip() for x in lb)))
    assert len(set(names.values())) == len(names), names  # one name per function
    assert all(v.startswith(exe.name + "+0x") for v in names.values()), names
    assert [(s.start, s.end, s.args) for s in sym.slices[sym.pid]] == \
        [(s.start, s.end, s.args) for s in nos.slices[nos.pid]]
    last = nos.slices[nos.pid][-1]
    assert last.name == names["crash_here"] and last.args.get("open_at_end")


# ---- sampled time -------------------------------------------------------------

def test_sampled_mode(tree, compiled, run_crash, tmp_path):
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash"], env={"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "4"})
    import rawfile
    rf = rawfile.parse(raw)
    assert any(t.fmt == 4 for t in rf.threads), "the runtime did not write a sampled ring"
    r, tr = decode(tree, raw, json_out=tmp_path / "s.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert render(main_tree(tr)) == PATTERN
    sl = tr.slices[tr.pid]
    unmeasured = [s for s in sl if s.args.get("measured") is False]
    # only returns carry times (stamped returns): no call's start is measured
    assert unmeasured and len(unmeasured) == len(sl)
    # times still increase along the calls
    leafs = sorted(s.start for s in sl if s.n == "leaf")
    assert leafs == sorted(set(leafs)) or len(set(leafs)) > 1
    r, _ = decode(tree, raw, "--text")
    assert r.returncode == 0 and re.search(r"~\d+(\.\d+)? (ns|us)", r.stdout)


def test_sampled_loose_brackets_are_upper_bounds(tree, compiled, run_crash, tmp_path):
    """Sampled mode, a time word every 64 events: top -> leaf then a 1 ms sleep,
    100 times, then the same calls back to back.  A bracket between two time
    words that spans sleeps cannot place its events: their calls show "<=" the
    bracket (never a made-up ~100 us for a 10 ns leaf) and the JSON says
    measured=false with upper_bound_ns; dense brackets keep "~" estimates."""
    exe = compiled("dec_sleepy.c", "pg")
    raw = crash_raw(tree, run_crash, exe, env={"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "64"})
    r, _ = decode(tree, raw, "--text", "-n", "5000")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if re.search(r"\b(top|leaf)\b", ln)]
    dur = {}
    for ln in lines:
        m = re.match(r"^ +\S+ \S+ +(<=|~)?(\d+(?:\.\d+)?) (ns|us|ms|s) +(top|leaf)\b", ln)
        assert m, ln
        v = float(m.group(2)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(3)]
        dur.setdefault((m.group(4), m.group(1) or ""), []).append(v)
    # the sleepy calls: upper bounds, at least a sleep wide.  (A dense bracket during
    # which the host stalled the process for more than 1 us per event is loose too,
    # with a bound the stall's width: the decoder cannot tell it from a sleep, and a
    # busy VM does that now and then -- so those are allowed, among the dense calls.)
    sleepy = [v for v in dur.get(("leaf", "<="), []) if v >= 1e6]
    assert len(sleepy) >= 90 and len([v for v in dur.get(("top", "<="), []) if v >= 1e6]) >= 90, dur.keys()
    stalled = [v for v in dur.get(("leaf", "<="), []) if v < 1e6]
    # the dense calls: estimates, and small ones (not a share of a sleep)
    dense = dur.get(("leaf", "~"), []) + dur.get(("leaf", ""), [])
    assert len(dense) + len(stalled) >= 1900 and len(dense) >= 1000, {k: len(v) for k, v in dur.items()}
    assert max(dur.get(("leaf", "~"), [0])) < 1e4 and max(dur.get(("top", "~"), [0])) < 1e4, r.stdout[-3000:]
    # JSON: the same calls, still nested, measured=false + upper_bound_ns
    r, tr = decode(tree, raw, json_out=tmp_path / "s.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    leafs = [s for s in tr.slices[tr.pid] if s.n == "leaf"]
    bounded = [s for s in leafs if "upper_bound_ns" in s.args]
    assert all(s.args["measured"] is False and s.args["upper_bound_ns"] >= s.end - s.start for s in bounded)
    assert len([s for s in bounded if s.args["upper_bound_ns"] >= 1_000_000]) >= 90
    assert len(leafs) >= 2090 and len(leafs) - len(bounded) >= 1000
    # only the leaf calls (-F: the filter drops the top calls around them): each keeps its own bound
    r, trf = decode(tree, raw, "-F", "^leaf$", json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    fleafs = [s for s in trf.slices[trf.pid] if s.n == "leaf"]
    assert len(fleafs) == len(leafs) and not [s for s in trf.slices[trf.pid] if s.n == "top"]
    assert sorted((s.start, s.args.get("upper_bound_ns")) for s in fleafs) == \
        sorted((s.start, s.args.get("upper_bound_ns")) for s in leafs)
    # exact mode: no bounds, no estimates
    raw = crash_raw(tree, run_crash, exe, name="exact")
    r, _ = decode(tree, raw, "--text", "-n", "5000")
    assert r.returncode == 0 and "<=" not in r.stdout and not re.search(r" ~\d", r.stdout), r.stdout[-2000:]


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_sampled_last_calls_before_a_crash(tree, compiled, run_crash, mode, tmp_path):
    """Sampled time: the crashed thread's last events come after its last
    stamp.  When the fatal signal froze tracing (a handler of the program's
    own: the runtime records when), that time closes their bracket: spin,
    which busy-waits 400 us after its last stamped event, gets an upper bound
    at least that wide, not an estimate of ~0 ns pinned at the last stamp."""
    exe = compiled("dec_sampled_tail.c", mode)
    raw = crash_raw(tree, run_crash, exe, env={"FUNTRACE_TIME": "sampled"})
    r, tr = decode(tree, raw, json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    [spin] = [s for s in tr.slices[tr.pid] if s.n == "spin"]
    assert spin.args.get("measured") is False, spin
    assert spin.args.get("upper_bound_ns", 0) >= 400_000, spin
    [crash] = [s for s in tr.slices[tr.pid] if s.n == "crash_here"]
    assert crash.start >= spin.start and crash.args.get("open_at_end"), crash
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text", "-n", "4"])
    assert re.search(r"<=\d+(\.\d+)? (us|ms) +spin ", r.stdout), r.stdout


# ---- other options ---------------------------------------------------------------

def test_wallclock_and_stdin(tree, compiled, run_crash, tmp_path):
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    r, _ = decode(tree, raw, "--text", "--wallclock")
    assert r.returncode == 0
    # the span shown is the trace's, not the time since midnight
    r0, _ = decode(tree, raw, "--text")
    shown = re.search(r"^  trace: .* (\d+(\.\d+)? (ns|us|ms|s)) shown$", r0.stdout, re.M).group(1)
    assert shown.endswith("us") or shown.endswith("ms"), shown
    assert f"{shown} shown\n" in r.stdout
    head_time = re.search(r"last event: +\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d\.\d{9})", r.stdout).group(1)
    crash_line = [l for l in r.stdout.split("\n") if "crash_here" in l and "[still open]" in l][0]
    assert crash_line.split()[0] == head_time
    # JSON: ts = us since local midnight; stdin input
    r = decode(tree, "-", "--wallclock", "--json", str(tmp_path / "w.json"), input=raw.read_bytes())[0]
    assert r.returncode == 0, r.stderr
    tr = load(tmp_path / "w.json")
    h, m, s = head_time.split(":")
    day_us = (int(h) * 3600 + int(m) * 60) * 1_000_000 + int(s.replace(".", "")) // 1000
    crash = [e for e in tr.instants if e["name"].startswith("SIGSEGV")][0]
    assert abs(crash["ts"] - day_us) < 1_000_000


@pytest.mark.parametrize("time_mode", ["exact", "sampled"])
def test_times_without_boundaries_for_seconds(tree, compiled, run_crash, time_mode):
    """FUNTRACE_GEN_MS=0 (no generation boundaries, README) and a thread busy
    for 2.5 s before the crash: its ring's TSC_HI escape (written when the TSC's
    high half changed, every 2^32 ticks) was overwritten long ago, and nothing
    in the ring dates its events but their low halves.  The thread's record
    has the high half (THRDSTAT tsc_hi): the last event is shown when it
    happened, not a multiple of 2^32 ticks (2 s) earlier."""
    exe = compiled("dec_epoch.c", "pg")
    env = {"FUNTRACE_GEN_MS": "0"}
    if time_mode == "sampled":
        env["FUNTRACE_TIME"] = "sampled"
    r = run_crash([exe, "2.5"], env=env)
    crash_ns = int(re.search(r"crash_at (\d+)", r.stdout).group(1))
    raw = r.dir / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", raw, r.core, exe])
    assert ce.returncode == 0, ce.stderr
    out, _ = decode(tree, raw, "--text")
    assert out.returncode == 0, out.stderr
    shown_ns = last_event_ns(out.stdout)
    # the last event is epoch_crash's call, right after the print (sampled mode:
    # the last stamped return, at most a few calls before)
    assert -100_000_000 < shown_ns - crash_ns < 100_000_000, (shown_ns - crash_ns, out.stdout[:1500])
    assert "epoch_crash" in out.stdout


def epoch_live_raw(tree, compiled, spawn, tmp_path, time_mode="exact"):
    """dec_epoch.c read 2.5 s into its run by coreextract --pid, without
    generation boundaries: (raw, the read's start and end, CLOCK_REALTIME ns)"""
    exe = compiled("dec_epoch.c", "pg")
    p = spawn([exe, "60"], env={"FUNTRACE_GEN_MS": "0", "FUNTRACE_TIME": time_mode})
    time.sleep(2.5)
    raw = tmp_path / "live.raw"
    before = time.time_ns()
    ce = run_tool([tree.tool("coreextract"), "-o", raw, "--pid", p.pid])
    after = time.time_ns()
    assert ce.returncode == 0, ce.stderr
    return raw, before, after


def test_times_without_boundaries_for_seconds_live(tree, compiled, spawn, tmp_path):
    """The same read from the running process (coreextract --pid, as oomwatch
    reads it): the newest events are dated at the time of the read."""
    raw, before, after = epoch_live_raw(tree, compiled, spawn, tmp_path)
    out, _ = decode(tree, raw, "--text")
    assert out.returncode == 0, out.stderr
    shown = last_event_ns(out.stdout)
    assert before - 100_000_000 < shown < after + 100_000_000, (shown - before, after - before)


@pytest.mark.parametrize("time_mode", ["exact", "sampled"])
def test_newest_events_without_their_high_half_are_dated_at_the_read(tree, compiled, spawn, time_mode, tmp_path):
    """The same live raw without the record's high half of the newest events
    (the reader drops it when it changed while the ring was copied, as it
    once did in CI): with no generation boundary and no TSC_HI escape left in
    the ring, they are dated nearest to the time of the read, not to the
    process's start 2.5 s before -- which put them 2^32 ticks (~2 s) early."""
    import rawfile
    raw, before, after = epoch_live_raw(tree, compiled, spawn, tmp_path, time_mode)
    out = []
    cleared = 0
    for magic, payload in rawfile.chunks(raw.read_bytes()):
        if magic == "THRDSTAT":
            flags = struct.unpack_from("<I", payload, 12)[0]
            cleared += bool(flags & rawfile.TSF["TSC_HI"])
            payload = payload[:12] + struct.pack("<I", flags & ~rawfile.TSF["TSC_HI"]) + payload[16:]
        out.append(magic.encode("latin1") + struct.pack("<Q", len(payload)) + payload)
    assert cleared, "no thread record had the high half"
    bare = tmp_path / "bare.raw"
    bare.write_bytes(b"".join(out))
    for path in (raw, bare):
        res, _ = decode(tree, path, "--text")
        assert res.returncode == 0, res.stderr
        shown = last_event_ns(res.stdout)
        assert before - 100_000_000 < shown < after + 100_000_000, (path.name, shown - before, after - before)


def test_substitute_path(tree, compiled, run_crash, tmp_path):
    exe = compiled("dec_pattern.c", "pg", tag="moved")
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    hidden = tmp_path / "elsewhere"
    hidden.mkdir()
    moved = hidden / exe.name
    exe.rename(moved)
    try:
        r, tr = decode(tree, raw, json_out=tmp_path / "a.json")
        assert r.returncode == 0
        assert f"cannot open {exe}" in r.stderr
        names = {s.name for s in tr.slices[tr.pid]}
        assert all(n.startswith(exe.name + "+0x") for n in names), names
        r, tr = decode(tree, raw, "--substitute-path", f"{exe.parent}={hidden}", json_out=tmp_path / "b.json")
        assert r.returncode == 0 and "cannot open" not in r.stderr
        assert render(main_tree(tr)) == PATTERN
    finally:
        moved.rename(exe)


def test_rebuilt_binary_warns(tree, compiled, run_crash, tmp_path):
    """a binary rebuilt since the trace was taken: used with a build-id warning"""
    from conftest import compile_prog
    exe = compile_prog(tree, "dec_pattern.c", tmp_path / "bin" / "pat", mode="pg")
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    r, tr = decode(tree, raw, json_out=tmp_path / "a.json")
    assert r.returncode == 0 and "build-id" not in r.stderr
    compile_prog(tree, "dec_pattern.c", exe, mode="pg", extra=["-O2", "-DREBUILT"])
    r, tr = decode(tree, raw, json_out=tmp_path / "b.json")
    assert r.returncode == 0
    assert f"{exe} does not have the traced build-id" in r.stderr
    check_nesting(tr)


def test_sampled_generations(tree, compiled, run_crash, tmp_path):
    """sampled time with generations and a wrapped ring: same structure as exact mode"""
    raw, tr = gens_trace(tree, compiled, run_crash, tmp_path, env={"FUNTRACE_TIME": "sampled",
                                                                   "FUNTRACE_SAMPLE_K": "5"})
    sleeper = main_tree(tr, tr.tid_by_name("sleeper"))
    assert len(sleeper) == 1 and sleeper[0].n == "sleeper_main" and sleeper[0].args.get("open_at_end")
    assert {l.strip() for l in render(sleeper)} == {"sleeper_main", "outer", "inner", "leaf", "napper"}
    busy = main_tree(tr, tr.tid_by_name("busy"))
    while busy and busy[0].n in ("__clone3", "clone3", "start_thread"):
        busy = busy[0].children
    assert len(busy) == 1 and busy[0].n == "busy_main" and busy[0].args.get("started_before_ring")
    assert {l.strip() for l in render(busy)} <= {"busy_main", "busy_outer", "busy_step", "leaf", "napper"}


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_sampled_last_calls_of_exited_threads_and_snapshots(tree, compiled, tmp_path, mode):
    """Sampled time, a snapshot: a thread's last events come after its last
    stamp.  A thread that exited ran until its exit, and every thread's
    events are older than the snapshot: those times close the bracket, so
    spin, which busy-waits 400 us after its last stamped event, gets an upper
    bound at least that wide in both threads, not ~0 ns at the last stamp."""
    from conftest import run_program
    exe = compiled("dec_sampled_snaptail.c", mode)
    run = run_program([exe], tmp_path / "run", env={"FUNTRACE_TIME": "sampled"})
    assert run.returncode == 0, run.stderr
    raw = tmp_path / "run" / "funtrace.raw"
    r, tr = decode(tree, raw, json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    spins = [s for tid in tr.slices for s in tr.slices[tid] if s.n == "spin"]
    assert len(spins) == 2, spins
    for s in spins:
        assert s.args.get("measured") is False and s.args.get("upper_bound_ns", 0) >= 400_000, s
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text", "-n", "4"])
    assert len(re.findall(r"<=\d+(\.\d+)? (us|ms) +spin ", r.stdout)) == 2, r.stdout
