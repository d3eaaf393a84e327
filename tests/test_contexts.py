"""Stack switches on one thread (coroutines, fibers: ucontext's makecontext
and swapcontext, runtime/contexts.c): the events after a switch belong to
another call stack.  The runtime logs each switch (FORMAT.md 1.4: a marker
and the saved context's key); the decoder keeps every suspended context's
stack and takes it up again when the context is resumed, so nothing is
popped that did not return, and a thread's pieces still nest: a suspended
call's piece ends at the switch ("suspended") and goes on at the resume
("resumed").  tests/progs/dec_fibers.c: a scheduler in main runs 3 fibers
round-robin, each yielding in the middle of every step."""
import re

import pytest

from conftest import run_tool
from dec_util import check_nesting, crash_decoded, crash_raw, decode, forest, text_lines
from views_oracle import fmt_dur, parse_report
from test_decoder import modes

NFIB = 3


def calls(tr, tid, name):
    """the calls of name: its pieces that begin a call (not a resumed one, nor
    one going on from the previous generation)"""
    return [s for s in tr.slices[tid] if s.n == name and not s.args.get("resumed")
            and not s.args.get("from_previous_generation")]


def ctx_of(line):
    """the context a --text line's call was made in ([context N])"""
    m = re.search(r"  \[context (\d+)\]", line)
    return int(m.group(1)) if m else None


def contexts_apart(lines, main_names, fiber_top, fiber_names):
    """each fiber's calls are marked with its own context: NFIB contexts begin at
    fiber_top, none of them main's, and every call of fiber_names is in one of them"""
    def ctx(names):
        fn = lambda ln: ln[36:].strip().split("  ")[0]
        return [ctx_of(ln) for ln in lines if re.sub(r"\(.*", "", fn(ln)) in names and "{lambda" not in fn(ln)]
    mains, tops, inner = set(ctx(main_names)), ctx([fiber_top]), set(ctx(fiber_names))
    assert len(mains) == 1 and None not in mains, lines
    assert len(set(tops)) == len(tops) == NFIB and not mains & set(tops), (mains, tops)
    assert inner <= set(tops), (inner, tops)


def line_of(lines, name, depth):
    """the --text lines of calls of name at depth (its indentation)"""
    return [ln for ln in lines if ln[36:].startswith("  " * depth + name + "  ")]


def fibers_run(tree, run_crash, exe, rounds, time, tmp_path, more=()):
    """the fibers program crashed in main after ROUNDS steps (more: its other
    arguments), decoded: (raw, Trace, main thread's slices); its pieces nest
    and no frame lost its return"""
    env = {"FUNTRACE_TIME": time, "FUNTRACE_SAMPLE_K": "4"} if time == "sampled" else None
    raw = crash_raw(tree, run_crash, exe, [str(rounds), *more], env=env)
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    sl = tr.slices[tr.pid]
    bad = [s for s in sl if s.args.get("return_missing") or s.args.get("started_before_ring")]
    assert not bad, bad[:5]
    return raw, tr, sl


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", modes())
def test_fibers_nest_and_keep_their_stacks(tree, compiled, run_crash, mode, time, tmp_path):
    """Every switch keeps the suspended stack: no frame loses its return, each
    call is counted once (its pieces are one call), every suspended piece is
    resumed, and the thread's pieces nest."""
    exe = compiled("dec_fibers.c", mode)
    rounds = 3
    raw, tr, sl = fibers_run(tree, run_crash, exe, rounds, time, tmp_path)
    expect = {"fiber": NFIB, "step": NFIB * rounds, "yield": NFIB * rounds, "leaf": 2 * NFIB * rounds,
              "resume": NFIB * (rounds + 1), "schedule": 1, "main": 1, "crash_here": 1}
    assert {n: len(calls(tr, tr.pid, n)) for n in expect} == expect
    # every yield: suspended at its switch, resumed when the scheduler comes back to its fiber
    ys = [s for s in sl if s.n == "yield"]
    assert len(ys) == 2 * NFIB * rounds
    assert sum(1 for s in ys if s.args.get("suspended")) == NFIB * rounds
    assert sum(1 for s in ys if s.args.get("resumed")) == NFIB * rounds
    # nothing is left suspended: every fiber returned to the scheduler
    assert sum(1 for s in sl if s.args.get("suspended")) == sum(1 for s in sl if s.args.get("resumed"))
    # a fiber's first call begins right after the scheduler's switch, at depth 0: its
    # pieces are not inside the scheduler's suspended ones
    lines = text_lines(tree, raw, "--calls", "200")
    assert len(line_of(lines, "fiber", 0)) == NFIB
    assert not [ln for ln in lines if "[return missing]" in ln or "[suspended]" in ln]
    # the calls of the contexts, interleaved in call order, say which context each is in
    contexts_apart(lines, {"main", "schedule", "resume"}, "fiber", {"step", "leaf", "yield"})
    # -F schedule: schedule and the calls made under it -- in its own context: every
    # resume, none of the fibers' calls made meanwhile at the same depths
    lines = text_lines(tree, raw, "--calls", "200", "-F", "schedule")
    assert len(line_of(lines, "resume", 1)) == NFIB * (rounds + 1), lines
    assert not [ln for ln in lines if " step " in ln or " yield " in ln or " fiber " in ln], lines


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_report_times_a_suspended_call_whole(tree, compiled, run_crash, time, tmp_path):
    """--report: a call that was suspended (every yield: switched away from,
    resumed when the scheduler comes back to its fiber) lasted from its call
    to its return, the other fibers' time included -- not the sum of its
    pieces, nor its last piece alone; --min-duration measures it so too"""
    exe = compiled("dec_fibers.c", "pg")
    raw, tr, sl = fibers_run(tree, run_crash, exe, 3, time, tmp_path)
    whole = []
    for c in {s.args.get("context") for s in sl if s.n == "yield"}:
        ys = [s for s in sl if s.n == "yield" and s.args.get("context") == c]
        for a, b in zip(ys[0::2], ys[1::2]):  # each call: its suspended piece, then its resumed one
            assert a.args.get("suspended") and b.args.get("resumed"), (a, b)
            whole.append(b.end - a.start)
    assert len(whole) == 3 * NFIB
    pieces = max(s.end - s.start for s in sl if s.n == "yield")
    assert max(whole) > pieces  # (the point: a whole call is longer than any piece)
    r = run_tool([tree.tool("funtrace-decode"), raw, "--report"])
    assert r.returncode == 0, r.stderr
    row = next(x for _, t in parse_report(r.stdout) for x in t if x["name"] == "yield")
    assert row["calls"] == 3 * NFIB and row["max"] == fmt_dur(max(whole)), (row, whole)
    # --min-duration: the yields whose whole call lasted long enough, both pieces of each
    thr = sorted(whole)[len(whole) // 2]
    r, kept = decode(tree, raw, "--min-duration", f"{thr}ns", json_out=tmp_path / "m.json")
    assert r.returncode == 0, r.stderr
    got = [s for s in kept.slices[kept.pid] if s.n == "yield"]
    assert len(got) == 2 * sum(1 for w in whole if w >= thr), (len(got), whole, thr)


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_crash_in_a_fiber(tree, compiled, run_crash, mode, tmp_path):
    """A crash inside fiber 1: its frames are the final stack's (open, not
    abandoned); fiber 2 and the scheduler are suspended at the end, their
    calls open and marked so; fiber 0 had returned."""
    exe = compiled("dec_fibers.c", mode)
    raw, tr = crash_decoded(tree, run_crash, exe, ["3", "fiber"], json_out=tmp_path / "f.json")
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "200")
    open_ = [ln.split()[3:] for ln in lines if "[still open]" in ln]  # (start, unit, "open", name ...)
    names = [w[0] for w in open_]
    suspended = [w[0] for w in open_ if "[suspended]" in " ".join(w)]
    assert suspended == ["main", "schedule", "fiber", "step", "yield", "resume"], lines
    running = [w[0] for w in open_ if "[suspended]" not in " ".join(w)]
    assert running == ["fiber", "step", "crash_here"], lines
    assert len([n for n in names if n == "fiber"]) == 2  # fibers 1 (crashed) and 2 (suspended)
    # the frames enclosing the last call, crash_here, are fiber 1's own: not the
    # frames of fiber 2 at the same depths (called later, suspended)
    for args in (("--calls", "1"), ("--calls", "1", "-F", "step|crash_here")):
        lines = text_lines(tree, raw, *args)
        enc = [ln.split()[3:] for ln in lines if "[enclosing]" in ln]
        assert [w[0] for w in enc] == ["fiber", "step"][-len(enc):] and enc, lines
        assert not [w for w in enc if "[suspended]" in " ".join(w)], lines


@pytest.mark.parametrize("where", ["main", "fiber"])
@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_fibers_in_a_wrapped_ring(tree, compiled, run_crash, time, where, tmp_path):
    """A ring that wrapped many times: contexts suspended before its start
    are resumed with the frames discovery found open in them (their orphan
    returns, shown as started before the ring), the final stack's below
    them, and no switch's marker is ever taken for a call -- a ring that
    starts inside a switch's sequence included."""
    exe = compiled("dec_fibers.c", "pg")
    env = {"FUNTRACE_BUF": "16K", "FUNTRACE_TIME": time}
    raw = crash_raw(tree, run_crash, exe, ["3000", *([where] if where == "fiber" else [])], env=env)
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    sl = tr.slices[tr.pid]
    names = {s.n for s in sl}
    assert names <= {"_start", "__libc_start_main_impl", "__libc_start_call_main", "main", "schedule",
                     "resume", "fiber", "step", "leaf", "yield", "crash_here"} | \
        {n for n in names if n.startswith("libc.so.6+")}, names
    assert not [s for s in sl if s.args.get("return_missing")]
    # contexts resumed with the frames open in them since before the ring
    before = {s.n for s in sl if s.args.get("resumed") and s.args.get("started_before_ring")}
    assert "fiber" in before or "main" in before, before
    if where == "main":  # the scheduler's context is the final stack's: main below it
        assert "main" in names
    lines = text_lines(tree, raw)
    assert "crash_here" in lines[[i for i, ln in enumerate(lines) if "[still open]" in ln][-1]]
    assert not [ln for ln in lines if "[return missing]" in ln]


@pytest.mark.parametrize("prog", ["dec_fibers.c", "dec_sjlj_coro.c"])
@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_switch_markers_are_ring_memory(tree, compiled, run_crash, time, prog):
    """The pages of a ring full of switches (their markers and key digits are
    first-page addresses, not code; dec_sjlj_coro.c: setjmp and longjmp
    markers) are taken for ring memory when the rings go by before the
    registry: one pass gives the file's raw."""
    exe = compiled(prog, "pg")
    env = {"FUNTRACE_BUF": "64K", "FUNTRACE_TIME": time}
    run = run_crash([exe, "3000"], env=env)
    ref = run_tool([tree.tool("coreextract"), run.core, exe], text=False)
    assert ref.returncode == 0, ref.stderr
    one = run_tool([tree.tool("coreextract"), "--one-pass", run.core, exe], text=False)
    assert one.returncode == 0, one.stderr
    assert one.stdout == ref.stdout


def test_static_program_logs_its_switches(tree, compiled, run_crash, tmp_path):
    """-static: swapcontext is interposed with ld --wrap (libfuntrace_static.a)."""
    exe = compiled("dec_fibers.c", "pg", extra=["-static"], tag="static")
    raw = crash_raw(tree, run_crash, exe, ["3"])
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    assert len(calls(tr, tr.pid, "step")) == NFIB * 3
    assert sum(1 for s in tr.slices[tr.pid] if s.args.get("resumed")) > 0


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_ring_that_starts_inside_a_switch(tree, compiled, run_crash, time, tmp_path):
    """A ring whose oldest items begin inside a switch's sequence (here: its
    items before the marker's second key digit zeroed, as a wrapped ring
    overwrites them): the digits left, whose address high half no escape
    gives, are markers still -- never calls of code -- and the rest decodes
    as from a ring that starts after that switch."""
    import struct
    from rawfile import chunks
    exe = compiled("dec_fibers.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["3"], env={"FUNTRACE_TIME": time})
    data = bytearray(raw.read_bytes())
    magic, isz, fmt = ("TRACEE08", 8, "<Q") if time == "exact" else ("TRACES04", 4, "<I")
    off, best = 0, None
    for m, p in chunks(bytes(data)):
        if m == magic and (best is None or len(p) > best[1]):
            best = (off + 16, len(p))
        off += 16 + len(p)
    assert best, f"no {magic} chunk"
    items = [struct.unpack_from(fmt, data, best[0] + isz * i)[0] for i in range(best[1] // isz)]
    # the first switch's marker: a call item (tag 0) at FT_CTX_SAVE_ADDR (8)
    k = next(i for i, w in enumerate(items) if w & 3 == 0 and w & 0xFFFFFFFC == 8 and w)
    assert all(items[j] & 3 == 0 and 0x800 <= items[j] & 0xFFFFFFFC < 0x1000 for j in range(k + 1, k + 6))
    data[best[0]:best[0] + isz * (k + 2)] = bytes(isz * (k + 2))
    cut = tmp_path / "cut.raw"
    cut.write_bytes(bytes(data))
    r, tr = decode(tree, cut, json_out=tmp_path / "f.json")
    assert r.returncode == 3, r.stderr  # (zeroed items: damaged)
    check_nesting(tr)
    sl = tr.slices[tr.pid]
    assert not [s for s in sl if s.n.startswith("0x") or s.args.get("unwound_by_exception")
                or s.args.get("return_missing")], sl[:12]
    # the first fiber's events are those of the context the ring starts in; the
    # scheduler is resumed with the frames open in it since before
    assert len(calls(tr, tr.pid, "step")) == NFIB * 3
    assert {"main", "schedule", "resume"} <= {s.n for s in sl if s.args.get("started_before_ring")}


def swapcontext_return_line(tree):
    """the line of runtime/contexts.c that runs first when swapcontext
    returns into the context it saved, before that context's RESUME"""
    src = (tree.root / "runtime" / "contexts.c").read_text().splitlines()
    return next(i for i, ln in enumerate(src, 1) if ln.strip() == "int e = errno;")


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_killed_between_a_switch_and_its_resume(tree, compiled, run_crash, time, tmp_path):
    """A thread killed inside swapcontext after the stack switched and before
    the context switched to logged its RESUME: the ring ends with the other
    context's SAVE, the final stack is the resumed context's.  Here (PCL's
    scheme, tests/progs/dec_cocall.c, the ring wrapped so that main's outer
    frames are older than it) the coroutine saved in co_resume -> co_call,
    and main is back in drive -> co_call: both contexts hold co_call, which
    alone is the final stack's, and the running context is main's, whose
    frames are all on it.  (gdb stops the program there, the second time a
    swapcontext returns after last_round, and sends the SIGSEGV: the core is
    the kernel's.)  Before, the context that saved last was taken up again:
    the coroutine's co_resume lost its return, and main's frames were shown
    under it."""
    exe = compiled("dec_cocall.c", "pg")
    env = {"FUNTRACE_BUF": "16384", "FUNTRACE_TIME": time}
    gdb = ["gdb", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off",
           "-ex", "break last_round", "-ex", "run",
           "-ex", f"break contexts.c:{swapcontext_return_line(tree)}", "-ex", "continue", "-ex", "continue",
           "-ex", "bt", "-ex", "handle SIGSEGV nostop noprint pass", "-ex", "signal SIGSEGV",
           "--args", exe, "3000"]
    run = run_crash(gdb, env=env)
    bt = run.stdout[run.stdout.rindex("Breakpoint 2,"):]
    assert re.search(r"co_call .*\n.*drive ", bt) and "co_resume" not in bt, run.stdout[-3000:]
    raw = tmp_path / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", raw, run.core, exe])
    assert ce.returncode == 0, ce.stderr
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    sl = tr.slices[tr.pid]
    assert not [s for s in sl if s.args.get("return_missing")], [s for s in sl if s.args.get("return_missing")][:5]
    # the pieces open at the end: main's (drive, co_call, running) and the
    # coroutine's (co_resume, co_call, suspended), each in its own context
    end = max(s.end for s in sl)
    last = [s for s in sl if s.end == end and s.n in ("drive", "co_call", "co_resume")]
    running = {s.n: s for s in last if s.args.get("open_at_end")}
    assert set(running) == {"drive", "co_call"}, last
    assert running["drive"].args.get("context") == running["co_call"].args.get("context")
    susp = [s for s in sl if s.n == "co_resume" and s.args.get("suspended")]
    assert susp and susp[-1].args.get("context") != running["co_call"].args.get("context"), susp[-1:]
    lines = text_lines(tree, raw, "--calls", "8")
    open_ = [ln.split()[3:] for ln in lines if "[still open]" in ln]
    running = [w[0] for w in open_ if "[suspended]" not in " ".join(w)]
    assert running[-1:] == ["co_call"] and "co_resume" not in running, lines
    assert "co_resume" in [w[0] for w in open_ if "[suspended]" in " ".join(w)], lines
    assert not [ln for ln in lines if "[return missing]" in ln], lines


# ---- Boost.Context (runtime/fcontext.c) -------------------------------------

def parent_of(roots, pred):
    """[(parent name or None, node)] of the nodes of a forest that satisfy pred"""
    out, todo = [], [(None, r) for r in roots]
    while todo:
        p, s = todo.pop()
        if pred(s):
            out.append((p.n if p else None, s))
        todo += [(s, c) for c in s.children]
    return out


def boost_fibers(compiled, mode):
    return compiled("dec_boost_fibers.cc", mode, extra=["-lboost_context"])


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", modes())
def test_boost_fibers_nest_and_keep_their_stacks(tree, compiled, run_crash, mode, time, tmp_path):
    """Boost.Context's fibers (jump_fcontext, ontop_fcontext): as with
    swapcontext, every switch keeps the suspended stack -- no frame loses its
    return, each call counted once, every suspended piece resumed, the
    pieces nest.  A fiber's exit (Boost's fiber_exit, run on top of the
    scheduler's stack) is inside the scheduler's resume; the generator
    destroyed while suspended has its frames unwound by Boost's
    forced_unwind, not left open."""
    exe = boost_fibers(compiled, mode)
    rounds = 3
    raw, tr, sl = fibers_run(tree, run_crash, exe, rounds, time, tmp_path)
    expect = {"fiber": NFIB, "step": NFIB * rounds, "yield": NFIB * rounds,
              "resume": NFIB * (rounds + 1), "schedule": 1, "main": 1, "crash_here": 1,
              "abandon_generator": 1, "gen_loop": 1, "gen_yield": 2}
    assert {n: len(calls(tr, tr.pid, n)) for n in expect} == expect
    ys = [s for s in sl if s.n == "yield"]
    assert sum(1 for s in ys if s.args.get("suspended")) == NFIB * rounds
    assert sum(1 for s in ys if s.args.get("resumed")) == NFIB * rounds
    roots = forest(list(sl))
    # a fiber's first call is at the top of its own stack: never inside the scheduler's pieces
    assert {p for p, _ in parent_of(roots, lambda s: s.n == "fiber")} <= {None} | \
        {p for p, _ in parent_of(roots, lambda s: "fiber_entry" in s.n or "fiber_record" in s.n)} | \
        {n for n in {s.n for s in sl} if "fiber_entry" in n or "operator()" in n or "::run" in n}
    assert not [p for p, _ in parent_of(roots, lambda s: s.n == "fiber") if p in ("resume", "schedule")]
    # Boost's fiber_exit runs on the resumed stack: inside the scheduler's resume, and
    # the generator's destruction in abandon_generator (not where -finstrument-functions
    # leaves Boost's headers untraced)
    boost_traced = any("fiber_entry" in s.n for s in sl)
    exits = sorted(p for p, s in parent_of(roots, lambda s: "fiber_exit" in s.n))
    if boost_traced:  # (~fiber inlined or not)
        rest = [p for p in exits if p != "resume"]
        assert exits.count("resume") == NFIB and len(rest) == 1 and \
            rest[0] in ("abandon_generator", "boost::context::fiber::~fiber"), exits
    else:
        assert exits == [], exits
    # the generator: resumed twice, then unwound by Boost's forced_unwind in its last
    # yield (its frames end there: unwound, or returned by -finstrument-functions's
    # exit hooks in the cleanups)
    catch = [s for s in sl if s.n == "__cxa_begin_catch"]
    assert len(catch) == 1
    for n in ("gen_loop", "gen_yield"):
        last = [s for s in sl if s.n == n][-1]
        assert last.args.get("resumed") and not last.args.get("suspended") and last.end <= catch[0].start, last
        assert last.args.get("unwound_by_exception") or mode == "finstr", last
    lines = text_lines(tree, raw, "--calls", "300")
    assert not [ln for ln in lines if "[return missing]" in ln], lines
    contexts_apart(lines, {"main", "schedule", "resume", "abandon_generator"}, "fiber", {"step", "yield"})
    # the only contexts suspended at the end are the fibers that ended (Boost's
    # entry functions switch away for good): none of the program's own calls
    sus = [ln for ln in lines if "[suspended]" in ln]
    assert len(sus) == (NFIB + 1 if boost_traced else 0) and all("fiber_entry" in ln for ln in sus), sus


def test_crash_in_a_boost_fiber(tree, compiled, run_crash, tmp_path):
    """A crash inside Boost fiber 1: its frames are the final stack's (open);
    fiber 2 and the scheduler are suspended, their calls open and marked so."""
    exe = boost_fibers(compiled, "pg")
    raw, tr = crash_decoded(tree, run_crash, exe, ["3", "fiber"], json_out=tmp_path / "f.json")
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "300")
    open_ = [[w[0].split("(")[0], *w[1:]] for w in (ln.split()[3:] for ln in lines if "[still open]" in ln)]
    mine = {"main", "schedule", "resume", "fiber", "step", "yield", "crash_here"}
    suspended = [w[0] for w in open_ if "[suspended]" in " ".join(w) and w[0] in mine]
    assert suspended == ["main", "schedule", "fiber", "step", "yield", "resume"], lines
    running = [w[0] for w in open_ if "[suspended]" not in " ".join(w) and w[0] in mine]
    assert running == ["fiber", "step", "crash_here"], lines


def test_boost_fiber_library_switches(tree, compiled, run_crash, tmp_path):
    """Boost.Fiber: the switches made inside libboost_fiber.so (its scheduler)
    reach the interposers in the executable: each fiber's work() has its own
    three leaf() calls, in its own context."""
    exe = compiled("dec_boost_fiber_lib.cc", "pg", extra=["-lboost_fiber", "-lboost_context"])
    raw = crash_raw(tree, run_crash, exe, [])
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "300")
    works = [ctx_of(ln) for ln in line_of(lines, "work(int)", 2) + line_of(lines, "work(int)", 1)]
    assert len(works) == 2 and len(set(works)) == 2 and None not in works, lines
    leaves = [ctx_of(ln) for ln in lines if " leaf(int) " in ln]
    assert sorted(leaves) == sorted(works * 3), lines


def test_context_resumed_by_another_thread(tree, compiled, run_crash, tmp_path):
    """A context suspended on one thread and resumed by another (a fiber that a
    work-stealing scheduler moves): on the first thread its calls are still
    open at the end but not "[suspended]" there -- another thread resumed
    them, and says so; on the other thread its frames go on from before that
    thread's events, and its calls after the switch are in its context."""
    exe = compiled("dec_fiber_move.c", "pg")
    raw = crash_raw(tree, run_crash, exe)
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert not [s for sl in tr.slices.values() for s in sl if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "50")
    heads = [i for i, ln in enumerate(lines) if ln.startswith("thread ")]
    assert len(heads) == 2, lines
    first, other = lines[heads[0]:heads[1]], lines[heads[1]:]
    moved = [ln[36:].split()[0] for ln in first if "[suspended, then resumed by another thread]" in ln]
    assert moved == ["fiber", "step", "yield"], first
    assert not [ln for ln in lines if "[suspended]" in ln], lines
    # the other thread: the fiber's frames from before its events, then step's second leaf
    before = [ln[36:].split()[0] for ln in other if "[started before the ring]" in ln]
    assert before == ["fiber", "step", "yield"], other
    leaf = [ln for ln in other if " leaf " in ln]
    assert len(leaf) == 1 and ctx_of(leaf[0]) == ctx_of([ln for ln in other if " step " in ln][0]) != \
        ctx_of([ln for ln in other if " take_over " in ln][0]), other


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_context_that_moves_away_and_back(tree, compiled, run_crash, time, tmp_path):
    """A fiber that leaves main's thread in step, goes on on thread T (step
    returns, step2 yields) and comes back to main's thread, where it crashes
    in step2 (tests/progs/dec_fiber_back.c): on main's thread the stack it
    left with (fiber -> step -> yield) is stale when it comes back.  Those
    frames stay open, resumed by another thread, and the context that comes
    back is step2's: fiber -> step2, its yield returning, then leaf and
    crash_here.  Before, main's thread took up the stale stack: step lost its
    return and step2 was missing."""
    exe = compiled("dec_fiber_back.c", "pg")
    env = {"FUNTRACE_TIME": time, "FUNTRACE_SAMPLE_K": "4"} if time == "sampled" else None
    raw, tr = crash_decoded(tree, run_crash, exe, env=env, json_out=tmp_path / "f.json")
    assert not [s for sl in tr.slices.values() for s in sl if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "50")
    heads = [i for i, ln in enumerate(lines) if ln.startswith("thread ")]
    assert len(heads) == 2, lines
    main = lines[heads[0]:heads[1]]
    assert "[crashed]" in main[0], main[0]
    moved = [ln[36:].split()[0] for ln in main if "[suspended, then resumed by another thread]" in ln]
    assert moved == ["fiber", "step", "yield"], main
    # the context that came back: crash_here's, under step2 under fiber
    back = ctx_of([ln for ln in main if " crash_here " in ln][0])
    names = [ln[36:].split()[0] for ln in main if ctx_of(ln) == back]
    assert names[-5:] == ["fiber", "step2", "yield", "leaf", "crash_here"], main
    assert [ln for ln in main if ctx_of(ln) == back and " step2 " in ln and "[still open]" in ln], main


def test_timeline_pieces_say_their_context(tree, compiled, run_crash, tmp_path):
    """On the timeline (JSON args, Perfetto annotations) every piece of a
    thread that switched stacks says the context its call was made in, as
    --text numbers them: the fibers' calls in the fibers' contexts, the
    scheduler's in main's.  The Perfetto file says the same as the JSON."""
    from views_oracle import assert_perfetto_is_json
    exe = compiled("dec_fibers.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["3"])
    pf = tmp_path / "f.pftrace"
    r, tr = decode(tree, raw, "--perfetto", pf, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    sl = tr.slices[tr.pid]
    assert all("context" in s.args for s in sl), [s for s in sl if "context" not in s.args][:3]
    ctx = lambda names: {s.args["context"] for s in sl if s.n in names}
    mains, tops = ctx({"main", "schedule", "resume", "crash_here"}), ctx({"fiber"})
    assert len(mains) == 1 and len(tops) == NFIB and not mains & tops, (mains, tops)
    assert ctx({"step", "yield", "leaf"}) <= tops
    lines = text_lines(tree, raw, "--calls", "200")
    assert {ctx_of(ln) for ln in line_of(lines, "fiber", 0)} == tops  # as --text numbers them
    assert_perfetto_is_json(pf, tr, tr.pid)


def test_boost_fibers_in_a_plugin_loaded_locally(tree, compiled, run_crash, tmp_path):
    """A host linked -rdynamic exports the runtime's Boost.Context interposers
    to a plugin it loads RTLD_LOCAL with its own libboost_context, where
    dlsym(RTLD_NEXT) does not look: the interposers find the real functions
    there (before, the host aborted at the plugin's first switch), and the
    plugin's fiber keeps its calls in its own context."""
    lib = compiled("dec_boost_plugin.cc", "pg", extra=["-shared", "-fPIC", "-lboost_context"], tag="so")
    exe = compiled("dec_boost_host.c", "pg", extra=["-rdynamic", "-ldl"])
    raw = crash_raw(tree, run_crash, exe, [str(lib)])
    r, tr = decode(tree, raw, json_out=tmp_path / "f.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "100")
    body = [ctx_of(ln) for ln in lines if " pfiber_body" in ln]
    leaves = [ctx_of(ln) for ln in lines if " pleaf" in ln]
    run = [ctx_of(ln) for ln in lines if " plugin_run " in ln]
    assert len(body) == 1 and leaves == body * 2 and run and run[0] != body[0], lines


@pytest.mark.parametrize("entry", ["swapcontext", "sigaltstack"])
@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("mode", modes())
def test_setjmp_coroutines_keep_their_stacks(tree, compiled, run_crash, mode, time, entry, tmp_path):
    """Coroutines switched by sigsetjmp/siglongjmp (QEMU's scheme: every switch
    a setjmp of the running one and a longjmp to the other's;
    tests/progs/dec_sjlj_coro.c), each entered once by swapcontext, or the
    sigaltstack way (a signal handler run on the new stack saves its place
    and returns; a longjmp into that returned frame runs the coroutine).  The
    runtime logs each setjmp and longjmp with the jmp_buf's stack pointer: a
    longjmp to a setjmp made on another, suspended stack is a switch to it,
    one into a returned frame of the running stack starts a new one.  No
    frame loses its return, each call is counted once, the pieces nest,
    every coroutine's calls are in its own context, and only the finished
    coroutines' last switch stays suspended.  Without the markers the
    coroutines' calls nested in each other's and the scheduler's."""
    exe = compiled("dec_sjlj_coro.c", mode)
    rounds = 3
    raw, tr, sl = fibers_run(tree, run_crash, exe, rounds, time, tmp_path,
                             ["main", entry] if entry == "sigaltstack" else [])
    # the coroutine's first frames: makecontext's trampoline, or the signal handler's
    # frame the longjmp re-entered (shown from the jump: "resumed"), then bootstrap
    top, new = ("trampoline", "co_new") if entry == "swapcontext" else ("trampoline_sig", "co_new_sas")
    firsts = [top, "bootstrap"]
    expect = {"fiber": NFIB, "step": NFIB * rounds, "yield": NFIB * rounds, "leaf": 2 * NFIB * rounds,
              "resume": NFIB * (rounds + 1), "co_switch": NFIB * rounds + NFIB * (rounds + 1) + NFIB,
              "bootstrap": NFIB, new: NFIB, "schedule": 1, "main": 1, "crash_here": 1}
    expect[top] = NFIB  # (trampoline_sig: the handler's runs, under co_new_sas; not its re-entries)
    assert {n: len(calls(tr, tr.pid, n)) for n in expect} == expect
    ys = [s for s in sl if s.n == "yield"]
    assert sum(1 for s in ys if s.args.get("suspended")) == NFIB * rounds
    assert sum(1 for s in ys if s.args.get("resumed")) == NFIB * rounds
    lines = text_lines(tree, raw, "--calls", "300")
    assert len(line_of(lines, top, 0)) == NFIB and len(line_of(lines, "fiber", len(firsts))) == NFIB, lines
    contexts_apart(lines, {"main", "schedule", "resume", new}, "bootstrap", {"fiber", "step", "leaf", "yield"})
    if entry == "sigaltstack":  # the re-entered handler frames: every piece from a jump into them
        main_ctx = {s.args.get("context") for s in sl if s.n == "main"}
        again = [s for s in sl if s.n == "trampoline_sig" and s.args.get("context") not in main_ctx]
        assert again and all(s.args.get("resumed") for s in again), again
    sus = [ln[36:].split()[0] for ln in lines if "[suspended]" in ln]
    assert sorted(sus) == sorted(["co_switch"] * NFIB + firsts * NFIB), lines


@pytest.mark.parametrize("static", [False, True])
def test_crash_in_a_setjmp_coroutine(tree, compiled, run_crash, static, tmp_path):
    """A crash inside setjmp coroutine 1: its frames are the final stack's
    (open); coroutine 2 and the scheduler are suspended.  -static: the
    setjmps are interposed with ld --wrap (libfuntrace_static.a)."""
    extra = ["-static"] if static else None
    exe = compiled("dec_sjlj_coro.c", "pg", extra=extra, tag="static" if static else "")
    raw, tr = crash_decoded(tree, run_crash, exe, ["3", "fiber"], json_out=tmp_path / "f.json")
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]
    lines = text_lines(tree, raw, "--calls", "300")
    open_ = [w for w in (ln.split()[3:] for ln in lines if "[still open]" in ln)]
    suspended = [w[0] for w in open_ if "[suspended]" in " ".join(w)]
    assert suspended == ["main", "trampoline", "bootstrap", "trampoline", "bootstrap", "schedule", "fiber", "step",
                         "yield", "co_switch", "co_switch", "resume", "co_switch"], lines
    running = [w[0] for w in open_ if "[suspended]" not in " ".join(w)]
    assert running == ["trampoline", "bootstrap", "fiber", "step", "crash_here"], lines
