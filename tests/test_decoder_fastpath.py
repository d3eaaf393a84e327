"""funtrace-decode's fast replay loops change nothing.

The discovery replay and the replay into the pieces views (JSON, Perfetto, --report,
--flamegraph) take the common events -- a call, or the return of the top frame -- in loops
of their own (decoder/replay.c: on_events_disc, on_events_pieces) and hand every other
event to the general code.  --reference-replay sends every event through the general code.
On real raws of every kind (exceptions, catches and unwinding, longjmp, tail calls, an
exception escaping to std::terminate, generations, sampled time with loose brackets, a
wrapped ring, no symbols, filters that measure whole calls first) every view must come out
byte for byte the same either way.
"""
import pytest

from conftest import CLANG_MODES, INSTR_MODES, run_program
from dec_util import crash_raw, decode

# each "-" is a file of its own; views that print (--report, --summary) share
# stdout in one run with the file views, --text has a run of its own (alone,
# it reads only the end of each ring: a path of its own)
VIEWS = [
    ("--json", "-", "--perfetto", "-", "--flamegraph", "-", "--report", "--summary"),
    ("--text", "-n", "60"),
    ("--json", "-", "--no-symbols"),
    ("--json", "-", "--min-duration", "1us"),  # measures whole calls first (replay_measure)
    ("--json", "-", "--depth", "3", "-N", "leaf"),
]


def same_either_way(tree, raw, tmp_path):
    for view in VIEWS:
        out = {}
        for kind, extra in (("fast", ()), ("ref", ("--reference-replay",))):
            files, args = [], []
            for a in view:
                if a == "-":
                    files.append(tmp_path / f"{kind}.{len(files)}.out")
                    a = str(files[-1])
                args.append(a)
            r, _ = decode(tree, raw, *args, *extra)
            assert r.returncode in (0, 3), (view, kind, r.stderr)
            err = r.stderr
            for f in files:
                err = err.replace(str(f), "OUT")
            out[kind] = (r.returncode, r.stdout, err, [f.read_bytes() for f in files])
        assert out["fast"][:3] == out["ref"][:3], view
        for i, (a, b) in enumerate(zip(out["fast"][3], out["ref"][3])):
            assert a == b, f"{' '.join(view)}: the fast replay's output differs (file {i})"


def modes():
    return [pytest.param(m, marks=pytest.mark.clang) if m in CLANG_MODES else m for m in INSTR_MODES]


@pytest.mark.parametrize("mode", modes())
def test_exceptions_longjmp_tail_calls(tree, compiled, run_crash, mode, tmp_path):
    for src, extra in (("dec_exc.cc", None), ("dec_catch.cc", None), ("dec_longjmp.c", None),
                       ("dec_builtin_longjmp.c", None), ("dec_manyfuncs.c", None),
                       ("dec_tail.c", ["-foptimize-sibling-calls"])):
        exe = compiled(src, mode, extra=extra)
        raw = crash_raw(tree, run_crash, exe, name=src)
        same_either_way(tree, raw, tmp_path)


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_sampled_exceptions_longjmp_tail_calls(tree, compiled, run_crash, mode, tmp_path):
    """the same programs in sampled time (every 4th event stamped): the sampled runs' loops
    (decoder/replay.c: stack4_pairs, light4_pairs) take a call's frame as closed by its
    return by the pair of their items, and must stop where the loops that look up each item
    stop -- at a bit-61 call whose flags are not known yet, a catch, a __cxa_throw that never
    returns, a longjmp's lost returns -- and replay from there as they do"""
    env = {"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "4"}
    for src, extra in (("dec_exc.cc", None), ("dec_catch.cc", None), ("dec_longjmp.c", None),
                       ("dec_builtin_longjmp.c", None), ("dec_manyfuncs.c", None),
                       ("dec_tail.c", ["-foptimize-sibling-calls"])):
        exe = compiled(src, mode, extra=extra)
        for k in ("4", "64"):  # (64: runs long enough for a frame's call and return to share one)
            raw = crash_raw(tree, run_crash, exe, env={**env, "FUNTRACE_SAMPLE_K": k}, name=f"{src}-{k}")
            same_either_way(tree, raw, tmp_path)
    exe = compiled("exc_cases.cc", mode)
    for case in ("caught", "nested", "rethrow", "cleanups"):
        r = run_program([exe, case], tmp_path / f"run-{case}", env=env, want_core=False)
        assert r.returncode == 0, r.stderr
        same_either_way(tree, r.dir / "funtrace.raw", tmp_path)


@pytest.mark.parametrize("mode", modes())
def test_exception_cases(tree, compiled, mode, tmp_path):
    """tests/progs/exc_cases.cc's sequences (bit-61 calls, catches, rethrows, cleanups, a
    function that catches its own throw), also with only the catcher logged
    (FUNTRACE_CATCH_CALLERS=0): --no-symbols among the views, where a return closes the
    innermost frame but for a bit-61 one, and only while no bit-61 frame is open"""
    exe = compiled("exc_cases.cc", mode)
    for case in ("caught", "untraced", "nested", "rethrow", "self", "cleanups"):
        for env in (None, {"FUNTRACE_CATCH_CALLERS": "0"}):
            r = run_program([exe, case], tmp_path / f"run-{case}-{'callers0' if env else 'default'}", env=env,
                            want_core=False)
            assert r.returncode == 0, r.stderr
            same_either_way(tree, r.dir / "funtrace.raw", tmp_path)


@pytest.mark.parametrize("stacks", [True, False], ids=["finstack", "no-finstack"])
def test_exception_escaping_to_terminate(tree, run_crash, tmp_path, stacks):
    """(with the final stack: the liveness pass of the discovery, frames proven live)"""
    raw = crash_raw(tree, run_crash, tree.example("abort"), stacks=stacks)
    same_either_way(tree, raw, tmp_path)


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_generations_and_wrapped_rings(tree, compiled, run_crash, time, tmp_path):
    """many generations, calls that span them, a wrapped ring (frames open at its start);
    sampled time: unmeasured calls, calls bounded by a loose bracket (dec_gens sleeps)"""
    env = {"FUNTRACE_GEN_MS": "10", **({"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "4"}
                                       if time == "sampled" else {})}
    raw = crash_raw(tree, run_crash, compiled("dec_gens.c", "pg"), env=env)
    same_either_way(tree, raw, tmp_path)


def test_sampled_loose_bracket_inside_a_run(tree, compiled, run_crash, tmp_path):
    """a stretch of plain sampled items whose dense brackets are followed by a loose one
    (a sleep between two stamps): the brackets handed to the fast loops as one run end
    before the loose one, whose calls get bounds, not point estimates -- in both replays
    (--reference-replay reads the same runs: the check is on the output itself)"""
    raw = crash_raw(tree, run_crash, compiled("dec_nap.c", "pg"), env={"FUNTRACE_TIME": "sampled"})
    r, _ = decode(tree, raw, "--json", str(tmp_path / "nap.json"))
    assert r.returncode == 0, r.stderr
    naps = [ln for ln in (tmp_path / "nap.json").read_text().splitlines() if '"name":"nap"' in ln]
    assert len(naps) >= 30, naps  # (one more piece where a generation boundary fell in a nap)
    bounded = [ln for ln in naps if '"upper_bound_ns"' in ln]
    assert len(bounded) >= 25, f"{len(bounded)} of {len(naps)} naps bounded by their loose bracket"
    same_either_way(tree, raw, tmp_path)


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_context_switches(tree, compiled, run_crash, time, tmp_path):
    """fibers (swapcontext) in a ring that wrapped, over many generations: stacks set aside
    and taken up again, contexts resumed from before the ring, a crash in a fiber"""
    env = {"FUNTRACE_BUF": "64K", "FUNTRACE_GEN_MS": "2", "FUNTRACE_TIME": time}
    raw = crash_raw(tree, run_crash, compiled("dec_fibers.c", "pg"), ["20000", "fiber"], env=env)
    same_either_way(tree, raw, tmp_path)
    # a fiber that moves to another thread and back (its stale stack set aside)
    raw = crash_raw(tree, run_crash, compiled("dec_fiber_back.c", "pg"), env={"FUNTRACE_TIME": time}, name="back")
    same_either_way(tree, raw, tmp_path)
