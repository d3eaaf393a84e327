"""funtrace-decode's filters (--tid, -F, -N, --depth, --min-duration,
--since/--until) and views (--report, --flamegraph, --perfetto) on the core of
examples/crash (README: four workers at known points, "loader" dies in
corrupt_record).  The unfiltered JSON of the same raw is the oracle: a filter
must keep exactly what views_oracle.filtered() keeps of it; the report's
numbers and the folded stacks must add up to its slices; the Perfetto file,
parsed by protoc with Perfetto's own schema, must hold the same slices."""
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import run_tool
from dec_util import core_trace, decode
from views_oracle import (as_kept, bare, call_durations, filtered, fmt_dur, parse_folded, parse_report,
                          perfetto_slices, report_of, trees)

PERFETTO_PROTO = Path("/work/shared/perfetto/perfetto_trace.proto")
CRASH_FUNCS = {"main", "start_workers", "wait_for_workers", "worker_main", "process_item", "parse_record", "checksum",
               "corrupt_record", "wait_for_more_work", "hash_forever", "mix_round", "wait_for_others"}


@pytest.fixture(scope="module")
def crash(tree, tmp_path_factory):
    """the crash example's core -> raw, its unfiltered JSON, its threads by name"""
    d = tmp_path_factory.mktemp("views")
    raw, full = core_trace(tree, tree.example("crash"), [], d)
    # (the runtime's housekeeping thread "funtrace" has no events)
    tids = {n.split(" [")[0]: t for t, n in full.names.items() if n != "funtrace"}
    assert sorted(tids) == sorted(["crash", "parser-1", "parser-2", "hasher", "loader"]), tids
    crash_ts = next(e for e in full.instants if e["name"].startswith("SIGSEGV"))
    end = round(crash_ts["ts"] * 1000)  # the end of the trace, JSON ns
    return SimpleNamespace(raw=raw, dir=d, full=full, tids=tids, end=end)


def run_filtered(tree, crash, tag, *args):
    r, tr = decode(tree, crash.raw, *args, json_out=crash.dir / f"{tag}.json")
    assert r.returncode == 0, r.stderr
    return tr


def names_by_thread(kept, tids):
    back = {t: n for n, t in tids.items()}
    return {back[t]: sorted({bare(x[0]) for x in v}) for t, v in kept.items()}


# ---------------------------------------------------------------- filters

def test_function_filter_keeps_matching_calls_with_their_callees(tree, crash):
    tr = run_filtered(tree, crash, "F", "-F", "^process_item$")
    got = as_kept(tr)
    assert got == filtered(crash.full, F=r"^process_item$")
    # the known structure: workers' records only, nothing around them
    names = names_by_thread(got, crash.tids)
    assert names["loader"] == ["checksum", "corrupt_record", "parse_record", "process_item"]
    assert names["parser-1"] == names["parser-2"] == ["checksum", "parse_record", "process_item"]
    # (the hasher's spinning may have overwritten its two records in its ring)
    assert names.get("hasher", ["checksum", "parse_record", "process_item"]) == ["checksum", "parse_record",
                                                                                  "process_item"]
    assert "crash" not in names  # main never calls process_item
    loader = got[crash.tids["loader"]]
    assert [x for x in loader if bare(x[0]) == "process_item"] == [x for x in loader if x[3] == 0]
    assert len([x for x in loader if x[3] == 0]) == 4  # records 400..403
    # and the text view: depths count from the match
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "-F", "^process_item$", "--tid",
                  str(crash.tids["loader"]), "-n", "3"])
    assert r.returncode == 0, r.stderr
    calls = re.findall(r"^ +\S+ \S+ +(?:open|\S+ \S+) {2}( *)(\w+)  crash\.c", r.stdout, re.M)
    assert [(len(i) // 2, n) for i, n in calls] == [(0, "process_item"), (1, "parse_record"),
                                                   (2, "corrupt_record")], r.stdout


def test_not_function_filter_drops_matching_calls_and_their_callees(tree, crash):
    tr = run_filtered(tree, crash, "N", "-N", "^parse_record$")
    got = as_kept(tr)
    assert got == filtered(crash.full, N=r"^parse_record$")
    every = {bare(x[0]) for v in got.values() for x in v}
    assert not every & {"parse_record", "checksum", "corrupt_record"}, every
    assert {"process_item", "worker_main", "hash_forever", "mix_round"} <= every, every


def test_depth_filter(tree, crash):
    got = as_kept(run_filtered(tree, crash, "D", "--depth", "2"))
    assert got == filtered(crash.full, depth=2)
    names = names_by_thread(got, crash.tids)
    assert names["loader"] == ["process_item", "wait_for_others", "worker_main"], names
    # with -F, depths count from the match: --depth 1 leaves the matches alone
    got = as_kept(run_filtered(tree, crash, "FD", "-F", "process_item", "--depth", "1"))
    assert got == filtered(crash.full, F="process_item", depth=1)
    assert {bare(x[0]) for v in got.values() for x in v} == {"process_item"}


def test_tid_filter(tree, crash):
    loader = crash.tids["loader"]
    tr = run_filtered(tree, crash, "T", "--tid", str(loader))
    assert set(tr.names) == {loader} and set(tr.slices) == {loader}
    assert as_kept(tr) == filtered(crash.full, tids={loader})
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--tid", f"{loader},{crash.tids['hasher']}"])
    assert r.returncode == 0 and sorted(re.findall(r'^thread \d+ "([^"]+)"', r.stdout, re.M)) == \
        ["hasher", "loader"], r.stdout
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--tid", "1"])
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--tid 1: no such thread" in r.stderr


def test_min_duration_keeps_whole_calls_that_lasted_long_enough(tree, crash):
    loader = trees(crash.full)[crash.tids["loader"]]
    wm = next(n for n in loader if bare(n.name) == "worker_main")
    thr = max(2000, wm.dur // 2)  # the loader's worker_main lasts longer, a checksum far less
    tr = run_filtered(tree, crash, "M", "--min-duration", f"{thr / 1000}us")
    cd = call_durations(crash.full)
    assert as_kept(tr) == filtered(crash.full, min_dur=thr, call_dur=lambda n: cd[id(n.s)])
    names = {bare(x[0]) for v in as_kept(tr).values() for x in v}
    assert "worker_main" in names, names
    # the short calls are gone (a mix_round preempted while the hasher spins may stay)
    kept = sum(len(v) for v in as_kept(tr).values())
    assert kept * 10 < sum(len(v) for v in crash.full.slices.values()), names


def test_since_until_clip_to_the_window(tree, crash):
    """--since/--until relative to the end: the calls that ran in the window,
    cut at its edges (and marked so)"""
    loader = trees(crash.full)[crash.tids["loader"]]
    last_item = [n for n in loader if bare(n.name) == "process_item"][-1]
    since, until = last_item.s.start + 1, crash.end - 1  # ns, JSON origin
    tr = run_filtered(tree, crash, "S", "--since", f"-{crash.end - since}ns", "--until", "-1ns")
    assert as_kept(tr) == filtered(crash.full, since=since, until=until)
    cut = [s for sl in tr.slices.values() for s in sl if s.args.get("clipped_by_since")]
    assert any(bare(s.name) == "process_item" for s in cut) and all(s.start == since for s in cut)
    assert all(s.end == until for sl in tr.slices.values() for s in sl if s.args.get("clipped_by_until"))
    # the text view: the cut calls say so
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--tid", str(crash.tids["loader"]),
                  "--since", f"-{crash.end - since}ns", "-n", "2"])
    assert r.returncode == 0 and "[started before --since]" in r.stdout, r.stdout
    # wall-clock times and bad values
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--since", "-5 parsecs"])
    assert r.returncode == 2 and "bad --since value '-5 parsecs'" in r.stderr


def test_filters_compose(tree, crash):
    loader = crash.tids["loader"]
    args = ["--tid", str(loader), "-F", "process_item", "-N", "checksum", "--depth", "2"]
    got = as_kept(run_filtered(tree, crash, "C", *args))
    assert got == filtered(crash.full, tids={loader}, F="process_item", N="checksum", depth=2)
    assert names_by_thread(got, crash.tids) == {"loader": ["parse_record", "process_item"]}


# ---------------------------------------------------------------- report and flame graph

@pytest.mark.parametrize("filt", [[], ["-F", "process_item"], ["--tid", "loader"], ["--since", "-200us"]],
                         ids=["all", "function", "thread", "since"])
def test_report_and_folded_stacks_add_up_to_the_slices(tree, crash, filt):
    filt = [str(crash.tids["loader"]) if a == "loader" else a for a in filt]
    folded = crash.dir / "f.folded"
    r, tr = decode(tree, crash.raw, "--report", "--flamegraph", folded, *filt, json_out=crash.dir / "r.json")
    assert r.returncode == 0, r.stderr
    tables = parse_report(r.stdout)
    assert len(tables) == 1 and tables[0][0] is None, r.stdout
    rows = tables[0][1]
    want = report_of(tr)
    assert {row["name"] for row in rows} == {k[1] for k in want}, r.stdout
    for row in rows:
        w = want[(None, row["name"])]
        assert (row["calls"], row["total"], row["self"], row["max"]) == \
            (w["calls"], fmt_dur(w["total"]), fmt_dur(w["self"]), fmt_dur(w["max"])), (row, w)
        assert row["avg"] == fmt_dur(w["sum"] // w["calls"]), (row, w)
    selfs = [want[(None, row["name"])]["self"] for row in rows]
    assert selfs == sorted(selfs, reverse=True)  # by self time
    # folded stacks: per function they re-sum to the report's self times, in
    # all to the time of the outermost calls; every stack is a real one
    stacks = parse_folded(folded.read_text())
    per_fn = {}
    for frames, w in stacks:
        per_fn[frames[-1]] = per_fn.get(frames[-1], 0) + w
    assert per_fn == {k[1]: v["self"] for k, v in want.items() if v["self"] > 0}
    roots = sum(n.dur for nodes in trees(tr).values() for n in nodes if n.depth == 0)
    assert sum(w for _, w in stacks) == roots
    paths = set()
    for nodes in trees(tr).values():
        for n in nodes:
            chain, p = [n.name], n.parent
            while p:
                chain.insert(0, p.name)
                p = p.parent
            paths.add(tuple(chain))
    assert all(tuple(f) in paths for f, _ in stacks)


def test_report_by_thread_and_sort(tree, crash):
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--report", "--by-thread", "--sort", "calls"])
    assert r.returncode == 0, r.stderr
    tables = parse_report(r.stdout)
    heads = [re.match(r'thread (\d+) "([^"]*)"', h).group(2) for h, _ in tables]
    assert sorted(heads) == sorted(crash.tids), r.stdout
    want = report_of(crash.full, by_thread=True)
    for head, rows in tables:
        tid = crash.tids[re.match(r'thread \d+ "([^"]*)"', head).group(1)]
        assert [row["calls"] for row in rows] == sorted((row["calls"] for row in rows), reverse=True)
        for row in rows:
            assert row["calls"] == want[(tid, row["name"])]["calls"]
            # (a ring that wrapped has outer frames from the final stack: start_thread, __clone3)
            if row["name"] in CRASH_FUNCS:
                assert row["loc"] and row["loc"].startswith("crash.c:"), row
    hasher = dict(tables[[h for h, _ in tables].index(next(h for h, _ in tables if '"hasher"' in h))][1][0])
    assert hasher["name"] == "mix_round", hasher  # the hasher's most frequent call
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--report", "--sort", "size"])
    assert r.returncode == 2 and "bad --sort value 'size'" in r.stderr


def test_flamegraph_by_thread_starts_with_the_thread(tree, crash):
    r = run_tool([tree.tool("funtrace-decode"), crash.raw, "--flamegraph", "-", "--by-thread"])
    assert r.returncode == 0, r.stderr
    stacks = parse_folded(r.stdout)
    firsts = {f[0] for f, _ in stacks}
    assert firsts == {f"{n} tid {t}" for n, t in crash.tids.items()}, firsts
    # below the thread, its outermost frames: worker_main / main (or, for a ring
    # that wrapped, the final stack's outer frames: __clone3, start_thread)
    assert all({"worker_main", "main"} & set(f[1:4]) for f, _ in stacks), stacks[:5]


# ---------------------------------------------------------------- Perfetto

@pytest.fixture(scope="module")
def crash_sampled(tree, tmp_path_factory):
    """the crash example in sampled time (FUNTRACE_TIME=sampled): its slices carry
    measured: false and, where a bracket is loose, upper_bound_ns"""
    d = tmp_path_factory.mktemp("views-sampled")
    raw, full = core_trace(tree, tree.example("crash"), [], d, env={"FUNTRACE_TIME": "sampled"})
    tids = {n.split(" [")[0]: t for t, n in full.names.items() if n != "funtrace"}
    return SimpleNamespace(raw=raw, dir=d, full=full, tids=tids)


@pytest.mark.parametrize("filt,sampled", [([], 0), (["-F", "parse_record"], 0), ([], 1)],
                         ids=["all", "filtered", "sampled"])
def test_perfetto_parses_with_perfettos_schema_and_matches_the_json(tree, request, filt, sampled):
    """every slice as the JSON has it: name, start, end, depth and flags (the annotations;
    most begin events are packed once and reused: decoder/pfwire.c)"""
    crash = request.getfixturevalue("crash_sampled" if sampled else "crash")
    pf = crash.dir / "t.pftrace"
    r, tr = decode(tree, crash.raw, "--perfetto", pf, *filt, json_out=crash.dir / "p.json")
    assert r.returncode == 0, r.stderr
    assert PERFETTO_PROTO.exists()
    p = subprocess.run(["protoc", f"--proto_path={PERFETTO_PROTO.parent}", "--decode=perfetto.protos.Trace",
                        PERFETTO_PROTO.name], stdin=pf.open("rb"), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    tracks, slices, instants = perfetto_slices(p.stdout.decode(), args=True)
    # one process track, one thread track per thread of the JSON, with tid and name
    procs = [t for t in tracks.values() if "process" in t]
    assert len(procs) == 1 and procs[0]["process"][0]["pid"][0] == tr.pid
    by_tid = {t["thread"][0]["tid"][0]: (u, t["thread"][0]["thread_name"][0])
              for u, t in tracks.items() if "thread" in t}
    assert {tid: name for tid, (_, name) in by_tid.items()} == tr.names
    # slice for slice: names, start, end, nesting, flags
    want = as_kept(tr, args=True)
    assert any(a for v in want.values() for *_, a in v), "no slice with flags: nothing checked"
    if sampled:
        assert any(("measured", False) in a for v in want.values() for *_, a in v)
    got = {tid: slices.get(u, []) for tid, (u, _) in by_tid.items() if slices.get(u)}
    assert got == want
    # the crash, on the crashing thread, at the end
    sig = [i for i in instants if i[2].startswith("SIGSEGV")]
    assert sig and sig[0][0] == by_tid[crash.tids["loader"]][0]
    assert sig[0][1] == round(next(e for e in tr.instants if e["name"].startswith("SIGSEGV"))["ts"] * 1000)
    assert pf.stat().st_size * 2 < (crash.dir / "p.json").stat().st_size
