"""funtrace-decode: an exception that escapes to std::terminate (examples/abort),
and the wording for events left out of a time-limited snapshot (examples/server)."""
import os
import re
import subprocess

import pytest

from dec_util import check_nesting, crash_raw, decode

# the loader thread's final stack, outermost first: __cxa_throw <- parse_value
# <- parse_section <- load_config <- load_with_fallback <- loader_main
LIVE = ["loader_main", "load_with_fallback", "load_config", "parse_section", "parse_value"]


def loader_slices(tr):
    tid = tr.tid_by_name("loader")
    return tid, tr.slices[tid]


def last_of(slices, name):
    return [s for s in slices if s.n == name][-1]


@pytest.mark.parametrize("stacks", [True, False], ids=["finstack", "no-finstack"])
def test_exception_escaping_to_terminate_leaves_frames_open(tree, run_crash, tmp_path, stacks):
    """libstdc++'s terminate handler catches the escaped exception (to print
    what()) in code that is on no traced stack: the frames it escaped from are
    still running when the thread aborts, not unwound (its catch entries name
    the catcher's callers, among them the thread's open __cxa_throw)."""
    exe = tree.example("abort")
    raw = crash_raw(tree, run_crash, exe, stacks=stacks)
    r, tr = decode(tree, raw, json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    tid, sl = loader_slices(tr)
    end = max(s.end for s in sl)
    for name in LIVE:
        s = last_of(sl, name)
        assert s.args.get("open_at_end"), (name, s.args)
        assert not s.args.get("unwound_by_exception"), (name, s.args)
        assert s.end == end, (name, s.end, end)
    # the first attempt's exception was caught in load_with_fallback: its
    # frames were unwound, ending at the catch
    firsts = [s for s in sl if s.n in ("load_config", "parse_section")]
    assert len(firsts) == 4
    assert all(s.args.get("unwound_by_exception") for s in firsts[:2])

    r, _ = decode(tree, raw, "--text", "-n", "40")
    assert r.returncode == 0, r.stderr
    body = r.stdout[r.stdout.index('"loader" [crashed]'):]
    body = body[:body.index("final stack" if stacks else "\nthread ")]
    lines = [ln for ln in body.splitlines() if re.search(r"(" + "|".join(LIVE) + r")\(", ln)]
    last = {}
    for ln in lines:
        last[re.search(r"(" + "|".join(LIVE) + r")\(", ln).group(1)] = ln
    for name in LIVE:
        assert "open" in last[name] and "[still open]" in last[name], last[name]
        assert "[unwound by exception]" not in last[name], last[name]

    # the terminate path's two catches (in __cxa_throw, then in the terminate
    # handler after its rethrow) name their callers: the exception's own
    # __cxa_throw frame is among them, so they unwind nothing and none is
    # unmatched, with or without a final stack
    r, _ = decode(tree, raw, "--summary")
    assert r.returncode == 0, r.stderr
    loader = r.stdout[r.stdout.index(" loader "):]
    assert "unmatched catches" not in loader and "problems:    none" in loader, loader
    thr = [s for s in sl if s.n == "__cxa_throw"]
    assert thr and thr[-1].args.get("open_at_end") and thr[-1].end == end, thr


def test_time_filtered_snapshot_says_left_out(tree, tmp_path):
    """a snapshot starting at a time leaves older events out: not 'overwritten'"""
    r = subprocess.run([tree.example("server"), "--threads", "3", "--requests", "1500", "--slow-every", "500",
                        "--out", "slow.raw"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    raw = tmp_path / "slow.raw"
    t, _ = decode(tree, raw, "--text", "-n", "3")
    assert t.returncode == 0, t.stderr
    heads = re.findall(r'^thread \d+ "server-\d" -- \d+ events.*$', t.stdout, re.M)
    assert len(heads) == 3, t.stdout
    # a thread whose events all lie after the start time lost nothing
    said = [h for h in heads if "(older ones" in h]
    assert said and all("(older ones left out by the snapshot's start time)" in h for h in said), heads
    assert "overwritten" not in t.stdout
    s, _ = decode(tree, raw, "--summary")
    assert s.returncode == 0, s.stderr
    inc = re.findall(r"^ +incomplete \(.*$", s.stdout, re.M)
    assert inc and all("older events left out by the snapshot's start time" in x for x in inc), inc
    assert "overwritten" not in "\n".join(inc)


def test_time_filtered_and_wrapped_snapshot(tree, tmp_path):
    """a tiny ring wraps AND is cut by the snapshot's start time: both said;
    a thread all of whose events came before the start time says so.
    One server thread, so that it is the one that served the 499 requests
    before the slow one (wrapping its 4 KiB ring) whatever the scheduler did:
    with three, a busy machine could leave the slow request to a thread that
    had served almost nothing, whose ring had not wrapped (one CI run)."""
    env = {"FUNTRACE_BUF": "4096"}
    r = subprocess.run([tree.example("server"), "--threads", "1", "--requests", "600", "--slow-every", "500",
                        "--out", "slow.raw"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, **env})
    assert r.returncode == 0, r.stderr
    s, _ = decode(tree, tmp_path / "slow.raw", "--summary")
    assert s.returncode == 0, s.stderr
    (b,) = re.findall(r"^  tid \d+ +server-\d .*\n(?: {6}.*\n)*", s.stdout, re.M)
    assert "WRAPPED" in b.split("\n")[0], b
    # the slow request logged 13 events in its 60 ms: the ring reaches back
    # past the start time, and had wrapped before
    assert "incomplete (older events left out by the snapshot's start time; the ring also wrapped) in " \
        "generations" in b, b
    # the main thread's traced calls all came before the start time: said, not just "0 events"
    (m,) = re.findall(r"^  tid \d+ +server +alive .*\n(?: {6}.*\n)*", s.stdout, re.M)
    assert " 0 events " in m and re.search(r"\n      no events since the snapshot's start time: its [1-9]\d* older "
                                           r"ring items were left out by the snapshot's start time\n", m), m
    t, _ = decode(tree, tmp_path / "slow.raw", "--text")
    assert t.returncode == 0, t.stderr
    assert re.search(r'^thread \d+ "server" -- 0 events \(its [1-9]\d* older ring items left out by the '
                     r"snapshot's start time\); no calls", t.stdout, re.M), t.stdout


def test_idle_wrapped_thread_outside_a_time_filtered_snapshot(tree, compiled, tmp_path):
    """a thread whose ring wrapped and all of whose events predate the
    snapshot's start time: both said, in --summary and --text (the worker of
    tests/progs/dec_idle.c churns 20000 calls through a 4 KiB ring, then
    waits while the main thread takes a snapshot starting after that)."""
    exe = compiled("dec_idle.c", "pg")
    r = subprocess.run([exe], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "FUNTRACE_BUF": "4096"})
    assert r.returncode == 0, r.stderr
    s, _ = decode(tree, tmp_path / "idle.raw", "--summary")
    assert s.returncode == 0, s.stderr
    assert re.search(r"\n      no events since the snapshot's start time: its [1-9]\d* older ring items were left "
                     r"out by the snapshot's start time; the ring also wrapped\n", s.stdout), s.stdout
    t, _ = decode(tree, tmp_path / "idle.raw", "--text")
    assert t.returncode == 0, t.stderr
    assert re.search(r'^thread \d+ "dec_idle-pg" -- 0 events \(its [1-9]\d* older ring items left out by the '
                     r"snapshot's start time; the ring also wrapped\); no calls", t.stdout, re.M), t.stdout
    # the main thread's call after the start time is there
    assert re.search(r"after_start", t.stdout), t.stdout
