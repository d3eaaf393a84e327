"""C++ exceptions in the trace (issue 14 part 4): __cxa_throw, __cxa_rethrow,
__cxa_begin_catch and __cxa_end_catch appear as calls, the frames an exception
unwound end at the catch (or at their own logged returns under gcc
-finstrument-functions), and the catcher's later calls nest under the catcher
-- also when the catcher is not traced -- in every instrumentation mode.

The expectations are those of the original funtrace's exceptions and
untraced_catcher tests, as call/return sequences of the decoder's JSON: for
an untraced catcher the original expects the "clean" sequence (the catcher
simply absent) only from gcc -finstrument-functions, and a fully unwound stack
plus invented calls from the other modes; here every mode gives the clean one.
"""
import os
import re
import subprocess

import pytest

from conftest import CLANG_MODES, INSTR_MODES, run_program
from dec_util import check_nesting, crash_raw, decode, forest, merge_gens


def modes():
    return [pytest.param(m, marks=pytest.mark.clang) if m in CLANG_MODES else m for m in INSTR_MODES]


def calls_and_returns(nodes, out=None):
    """[('+', name), ..., ('-', name)] in pre-order: the original funtrace's
    call/return sequences"""
    out = [] if out is None else out
    for s in nodes:
        out.append(("+", s.n))
        calls_and_returns(s.children, out)
        out.append(("-", s.n))
    return out


def c(name, *inner):
    return [("+", name)] + [x for part in inner for x in part] + [("-", name)]


THROW = c("__cxa_throw")
CATCH = c("__cxa_begin_catch")
END = c("__cxa_end_catch")
UNWOUND = c("pass_outer", c("pass_mid", c("pass_inner", c("raise_int", THROW))))

CASES = {
    "caught": c("case_caught", c("handler", c("setup"), UNWOUND, CATCH, c("on_caught"), END)),
    # the original's "clean" untraced-catcher sequence: the catcher is absent,
    # nothing else changes
    "untraced": c("case_untraced", c("setup"), UNWOUND, CATCH, c("on_caught"), END),
    "nested": c("nested_outer",
                c("nested_inner", c("pass_mid", c("pass_inner", c("raise_int", THROW)))),
                CATCH, c("on_caught"), END,
                c("nested_inner", c("raise_str", THROW), CATCH, c("on_caught"), END)),
    # the catch block's __cxa_end_catch runs in relay's landing pad, while
    # the rethrow unwinds it: __cxa_rethrow's frame was left by then
    "rethrow": c("rethrow_outer",
                 c("relay", c("raise_int", THROW), CATCH, c("on_relay"), c("__cxa_rethrow"), END),
                 CATCH, c("on_caught"), END),
    "self": c("self_catch", THROW, CATCH, END, c("after_self")),
    # a destructor run by a landing pad nests under its own frame: the frames
    # above it were left when the unwinder entered the landing pad (gcc
    # -finstrument-functions logs their returns; elsewhere the personality
    # routine's landing-pad entry ends them)
    "cleanups": c("cleanups",
                  c("guard_outer",
                    c("guard_inner", c("pass_inner", c("raise_int", THROW)), c("Guard::~Guard", c("on_cleanup"))),
                    c("Guard::~Guard", c("on_cleanup"))),
                  CATCH, c("on_caught"), END),
}


def main_calls(tr):
    roots = merge_gens(forest(tr.slices[tr.pid]))
    main = [s for s in roots if s.n == "main"]
    assert len(main) == 1, [s.n for s in roots]
    return main[0]


def snapshot_main(tree, exe, case, tmp_path, env=None):
    """run exe CASE (it writes funtrace.raw and exits 0), decode it: (trace, main's slice)"""
    r = run_program([exe, case], tmp_path / "run", env=env, want_core=False)
    assert r.returncode == 0, r.stderr
    res, tr = decode(tree, r.dir / "funtrace.raw", json_out=tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    check_nesting(tr)
    return tr, main_calls(tr)


def slices_named(node, name, out=None):
    out = [] if out is None else out
    for s in node.children:
        if s.n == name:
            out.append(s)
        slices_named(s, name, out)
    return out


@pytest.mark.parametrize("time", ["exact", "sampled"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", modes())
def test_exception_sequences(tree, compiled, tmp_path, mode, case, time):
    """sampled: with a stamp due at every return (FUNTRACE_SAMPLE_K=1), so
    that a return right after a throw's call (gcc -finstrument-functions
    logs the unwound frames' returns) is never taken for the throw's"""
    env = {"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "1"} if time == "sampled" else None
    check_case(tree, compiled("exc_cases.cc", mode), case, mode, tmp_path, env)


def check_case(tree, exe, case, mode, tmp_path, env=None):
    """exc_cases.cc's CASE: the call/return sequence of CASES, every unwound
    frame ended by the exception, no catch unmatched"""
    tr, main = snapshot_main(tree, exe, case, tmp_path, env=env)
    seq = calls_and_returns(main.children)
    assert seq == CASES[case] * 3, "\n".join(f"{a} {n}" for a, n in seq)
    # no frame left open or closed by a guess
    for s in slices_named(main, "__cxa_throw") + slices_named(main, "__cxa_rethrow"):
        assert s.args.get("unwound_by_exception"), s
    bad = [s for s in forest(tr.slices[tr.pid]) if s.n != "main"]
    assert not bad, bad
    for name in ("pass_outer", "pass_mid", "pass_inner", "raise_int", "relay", "nested_inner", "raise_str",
                 "guard_inner", "guard_outer"):
        for s in slices_named(main, name):
            assert not s.args.get("return_missing") and not s.args.get("open_at_end"), s
            # gcc -finstrument-functions logs the returns of unwound frames;
            # elsewhere the catch closes them
            if mode == "finstr":
                assert not s.args.get("unwound_by_exception"), s
    if mode != "finstr" and case in ("caught", "untraced", "cleanups"):
        for name in ("pass_outer", "pass_mid", "pass_inner", "raise_int", "guard_inner", "guard_outer"):
            assert all(s.args.get("unwound_by_exception") for s in slices_named(main, name)), name
    if case == "cleanups":
        # each destructor runs after the frames above its own ended
        for guard in slices_named(main, "guard_inner") + slices_named(main, "guard_outer"):
            (dtor,) = [x for x in guard.children if x.n == "Guard::~Guard"]
            assert all(x.end <= dtor.start for x in guard.children if x is not dtor), guard
    s, _ = decode(tree, tmp_path / "run" / "funtrace.raw", "--summary")
    assert s.returncode == 0 and "unmatched catches" not in s.stdout, s.stdout


@pytest.mark.parametrize("mode", modes())
def test_untraced_catcher_without_callers(tree, compiled, tmp_path, mode):
    """FUNTRACE_CATCH_CALLERS=0 (the original's cost: only the catcher is
    logged): an untraced catcher cannot be found, and the unwinding goes on
    to the outermost frame whose return would still be logged, as the
    original does -- the frames are not left open, and the catcher's later
    calls do not nest inside the thrower."""
    exe = compiled("exc_cases.cc", mode)
    r = run_program([exe, "untraced"], tmp_path / "run", env={"FUNTRACE_CATCH_CALLERS": "0"}, want_core=False)
    assert r.returncode == 0, r.stderr
    res, tr = decode(tree, r.dir / "funtrace.raw", json_out=tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    check_nesting(tr)
    sl = tr.slices[tr.pid]
    for s in sl:
        if s.n == "on_caught":
            parents = [p for p in sl if p.start <= s.start and s.end <= p.end and p is not s]
            assert not {p.n for p in parents} & {"raise_int", "pass_inner", "pass_mid", "pass_outer", "__cxa_throw"}, \
                (s, [p.n for p in parents])
    s, _ = decode(tree, r.dir / "funtrace.raw", "--summary")
    if mode == "finstr":
        # gcc's unwound frames returned themselves: the catch pops nothing,
        # the catcher's callers are still open (bit 61)
        assert re.search(r"\b3 unmatched catches", s.stdout), s.stdout
        seq = calls_and_returns(main_calls(tr).children)
        assert seq == CASES["untraced"] * 3, seq
    else:
        assert re.search(r"\b3 unmatched catches", s.stdout), s.stdout


@pytest.mark.parametrize("callers", ["default", "0"])
@pytest.mark.parametrize("mode", modes())
def test_exception_escaping_a_thread(tree, compiled, run_crash, tmp_path, mode, callers):
    """examples/abort in every mode: the exception that escapes the loader
    thread is caught by the C++ runtime's terminate path inside __cxa_throw;
    the frames it escaped from, and __cxa_throw, are still open when the
    process aborts -- from a core, with and without its final stacks, with
    the catcher's callers logged (they name the open __cxa_throw) or not (the
    catchers are then known by name: __cxa_throw, the terminate handler)."""
    exe = compiled(tree.root / "examples" / "abort.cc", mode)
    env = {} if callers == "default" else {"FUNTRACE_CATCH_CALLERS": callers}
    for stacks in (True, False):
        raw = crash_raw(tree, run_crash, exe, stacks=stacks, name=f"run{int(stacks)}", env=env)
        r, tr = decode(tree, raw, json_out=tmp_path / f"t{int(stacks)}.json")
        assert r.returncode == 0, r.stderr
        check_nesting(tr)
        sl = tr.slices[tr.tid_by_name("loader")]
        end = max(s.end for s in sl)
        names = ["loader_main", "load_with_fallback", "load_config", "parse_section", "parse_value", "__cxa_throw"]
        for name in names:
            last = [s for s in sl if s.n == name][-1]
            assert last.args.get("open_at_end") and last.end == end, (name, last)
        # the first exception (caught in load_with_fallback) unwound its frames
        first = [s for s in sl if s.n in ("load_config", "parse_section")][:2]
        expect = "finstr" if mode == "finstr" else "unwound"
        assert all(bool(s.args.get("unwound_by_exception")) == (expect == "unwound") for s in first), first
        assert any(s.n == "__cxa_begin_catch" for s in sl) and any(s.n == "__cxa_end_catch" for s in sl)


@pytest.mark.parametrize("callers", ["default", "0"])
@pytest.mark.parametrize("mode", modes())
def test_rethrow_escaping_to_terminate(tree, compiled, run_crash, tmp_path, mode, callers):
    """`catch (...) { ...; throw; }` with no handler above: the rethrow goes to
    std::terminate, whose handler (libstdc++'s verbose one) rethrows the
    exception once more to print what() and catches it there, then aborts.
    At the end relay's __cxa_rethrow is still running (gdb's bt has it) and
    the handler's own __cxa_rethrow, called above it, was unwound by the
    handler's catch -- not the other way round (the catch's callers name
    __cxa_rethrow: the escaped one, below the handler, not the topmost).
    From a core, with and without its final stacks, with the catcher's
    callers logged or not."""
    exe = compiled("exc_escape.cc", mode)
    env = {} if callers == "default" else {"FUNTRACE_CATCH_CALLERS": callers}
    for stacks in (True, False):
        raw = crash_raw(tree, run_crash, exe, args=["rethrow"], stacks=stacks, name=f"run{int(stacks)}", env=env)
        r, tr = decode(tree, raw, json_out=tmp_path / f"t{int(stacks)}.json")
        assert r.returncode == 0, r.stderr
        check_nesting(tr)
        main = main_calls(tr)
        end = max(s.end for s in tr.slices[tr.pid])
        (outer,) = slices_named(main, "outer")
        (relay,) = slices_named(outer, "relay")
        for s in (main, outer, relay):
            assert s.args.get("open_at_end") and s.end == end, (stacks, s)
        rethrows = [s for s in relay.children if s.n == "__cxa_rethrow"]
        assert len(rethrows) == 1, (stacks, [s.n for s in relay.children])
        escaped = rethrows[0]
        assert escaped.args.get("open_at_end") and escaped.end == end, (stacks, escaped)
        assert not escaped.args.get("return_missing"), (stacks, escaped)
        # the handler's rethrow, under the escaped one, ended at its catch
        (handlers,) = [s for s in escaped.children if s.n == "__cxa_rethrow"]
        assert handlers.args.get("unwound_by_exception") and not handlers.args.get("open_at_end"), \
            (stacks, handlers)
        assert [s.n for s in escaped.children if s.start > handlers.start] == ["__cxa_begin_catch", "__cxa_end_catch"]
        assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")], stacks


@pytest.mark.parametrize("mode", modes())
def test_destructor_throwing_and_catching_during_unwinding(tree, compiled, tmp_path, mode):
    """guarded's int unwinds it; the landing pad runs an untraced destructor
    that throws and catches an int of its own (the catch's callers name
    guarded).  By then the landing pad had left raise_int and its
    __cxa_throw: they end where the landing pad is entered, before the
    destructor's throw, and that throw and the destructor's catch calls
    nest under guarded -- not under the first __cxa_throw, open until
    catcher's catch (as they did before the landing pads were logged)."""
    tr, main = snapshot_main(tree, compiled("exc_escape.cc", mode), "dtor", tmp_path)
    seq = calls_and_returns(main.children)
    # the landing pad's entry (logged by the personality routine) ended
    # raise_int and its throw: the second throw is where it ran, under
    # guarded (gcc -finstrument-functions: raise_int also logged its return)
    inner = c("raise_int", THROW) + THROW
    assert seq == c("catcher", c("guarded", inner, CATCH, END), CATCH, c("on_caught"), END) + c("after"), seq
    (guarded,) = slices_named(main, "guarded")
    (raise_int,) = slices_named(main, "raise_int")
    second = [x for x in guarded.children if x.n == "__cxa_throw"][0]
    assert raise_int.end <= second.start  # at the landing pad, before the destructor's throw
    assert not [s for s in tr.slices[tr.pid] if s.args.get("return_missing")]


@pytest.mark.parametrize("mode", modes())
def test_c_program_with_a_cxx_library_loaded_rtld_local(tree, compiled, tmp_path, mode):
    """A C program dlopen()s a C++ library with RTLD_LOCAL: the C++ runtime is
    not in the global scope, yet the library's references to __cxa_throw, the
    personality routine and the catch functions bind to the interposers the
    executable exports.  They find the real ones in the library's C++
    runtime (before, the library's first throw aborted the program), and the
    exceptions are in the trace: the destructor run by plugin_throw's landing
    pad under plugin_throw, the catch in plugin_run."""
    lib = compiled("exc_plugin.cc", mode, extra=["-shared", "-fPIC"], tag="so")
    exe = compiled("exc_plugin_main.c", mode, extra=["-ldl"])
    r = run_program([exe, lib], tmp_path / "run", want_core=False)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    res, tr = decode(tree, r.dir / "funtrace.raw", json_out=tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    check_nesting(tr)
    seq = calls_and_returns(main_calls(tr).children)
    one = c("plugin_run", c("plugin_throw", THROW, c("Guard::~Guard", c("on_cleanup"))), CATCH, END)
    assert seq == one * 3, "\n".join(f"{a} {n}" for a, n in seq)


@pytest.mark.parametrize("prog,cleanup,flags", [("exc_pthread_exit.cc", "Guard::~Guard", []),
                                                ("exc_pthread_exit_c.c", "guard_release", ["-fexceptions"])])
@pytest.mark.parametrize("mode", modes())
def test_pthread_exit_runs_destructors_and_ends_the_threads_frames(tree, compiled, tmp_path, mode, prog, cleanup,
                                                                  flags):
    """pthread_exit's forced unwinding runs the destructors of the frames it
    leaves, through the personality routine -- in a C++ program that uses
    nothing else of its C++ runtime (linked --as-needed, the executable's
    interposer is its only personality: it must find the real one, or the
    unwinding fails and glibc aborts) -- and the cleanups of C code built
    with -fexceptions (__attribute__((cleanup))) through C's personality
    routine, __gcc_personality_v0, interposed too.  They nest under their
    own frames; the frames the thread left end when it exited, their
    returns missing, not "still open"."""
    exe = compiled(prog, mode, extra=["-pthread", *flags])
    r = run_program([exe], tmp_path / "run", want_core=False)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    res, tr = decode(tree, r.dir / "funtrace.raw", json_out=tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    check_nesting(tr)
    (roots,) = [merge_gens(forest(sl)) for tid, sl in tr.slices.items() if tr.names.get(tid) == "worker"]
    seq = calls_and_returns(roots)
    dtor = c(cleanup, c("on_cleanup"))
    assert seq == c("worker", c("worker_outer", c("worker_inner", c("worker_leave"), dtor), dtor)), seq
    (w,) = roots
    (outer,) = w.children
    # (gcc -finstrument-functions logs the returns of the frames it unwinds, in their landing pads)
    for s in (w, outer):
        assert bool(s.args.get("return_missing")) == (mode != "finstr") and not s.args.get("open_at_end"), s
    for s in (outer.children[0], outer.children[0].children[0]):
        assert bool(s.args.get("unwound_by_exception")) == (mode != "finstr"), s


@pytest.mark.parametrize("case", ["caught", "cleanups", "rethrow"])
@pytest.mark.parametrize("link", ["-static-libstdc++", "-static"])
@pytest.mark.parametrize("mode", modes())
def test_static_cxx_runtime_has_exception_events(tree, compiled, tmp_path, mode, link, case):
    """A C++ runtime linked into the program (-static-libstdc++, -static):
    the interposers of libfuntrace_cxx.a would define __cxa_throw and the
    personality routine, so libstdc++.a's own would never be linked (an
    archive member is linked only for an undefined symbol) and the first
    throw abort; the wrappers link libfuntrace_cxxwrap.a and ld --wrap
    instead.  The program works, and its exceptions show exactly as in a
    dynamically linked one (the events carry the real functions' addresses,
    named __cxa_throw, ... in the executable)."""
    exe = compiled("exc_cases.cc", mode, extra=[link], tag=link.strip("-"))
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    assert re.search(r" T __cxa_throw$", nm, re.M) and " __wrap___cxa_throw" in nm, "not the C++ runtime's own"
    check_case(tree, exe, case, mode, tmp_path)


def test_static_c_program_gets_no_cxx_interposers(tree, compiled, tmp_path):
    """A C program linked -static has no C++ runtime to define the real
    functions the --wrap interposers call: it gets none, links and runs."""
    exe = compiled("rt_pattern.c", "pg", extra=["-static"], tag="static")
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    assert "__wrap___cxa" not in nm and "__cxa_throw" not in nm
    r = run_program([exe], tmp_path / "run", want_core=False)
    assert r.returncode == 0 and "done" in r.stdout, r.stderr
    res, tr = decode(tree, r.dir / "funtrace.raw", json_out=tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    assert {"main", "pat_a", "pat_b", "pat_c"} <= {s.n for s in tr.slices[tr.pid]}
