"""Runtime: the thread registry (alive, exited in every way, names, the
memory budget), generations and the housekeeping thread, fork(), and the
module table across dlopen/dlclose."""
import signal

import pytest

import rawfile
from conftest import compile_prog, run_program
from test_runtime_helpers import Syms, core_root_u64, main_thread, modules, only_snapshot, sequence

ALIVE, EXITED, EVICTED, IGNORED = 1, 2, 3, 4
GEN_NONE = (1 << 64) - 1


def run_ok(prog, d, args=(), env=None):
    r = run_program([prog, *args], d, env=env, want_core=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def by_name(raw):
    return {t.name: t for t in raw.threads}


MODES = ["pg", "finstr", pytest.param("clang", marks=pytest.mark.clang), pytest.param("xray", marks=pytest.mark.clang)]


@pytest.mark.parametrize("mode", MODES)
def test_threads_registry(compiled, tmp_path, mode):
    """Threads that returned, called pthread_exit or were cancelled are
    EXITED with their rings; alive ones are ALIVE; names are current
    (pthread_setname_np by the thread or by another thread, and prctl,
    picked up at a generation boundary); the housekeeper is 'funtrace'."""
    prog = compiled("rt_threads.c", mode)
    r = run_ok(prog, tmp_path / "run", env={"FUNTRACE_GEN_MS": "10"})
    raw = only_snapshot(r.dir / "funtrace.raw")
    th = by_name(raw)
    assert {"t-return", "t-exit", "t-cancel", "t-alive", "t-prctl", "funtrace"} <= set(th), list(th)
    syms = Syms(prog)
    for name in ("t-return", "t-exit", "t-cancel"):
        t = th[name]
        assert t.state == EXITED, name
        assert t.exit_tsc > t.start_tsc > 0
        assert ("thr_work", "call") in sequence(raw, t, syms), name
    # pthread_exit from a nested function: its frames never returned
    assert sequence(raw, th["t-exit"], syms, keep={"thr_exit", "thr_exit_deep", "thr_work"}) == [
        ("thr_exit", "call"), ("thr_exit_deep", "call"), ("thr_work", "call"), ("thr_work", "ret")]
    for name in ("t-alive", "t-prctl"):
        t = th[name]
        assert t.state == ALIVE and t.exit_tsc == 0
        assert ("thr_alive", "call") in sequence(raw, t, syms)
    assert th["funtrace"].state == IGNORED and th["funtrace"].entries == []
    main = main_thread(raw)
    assert main.tid == r.pid and main.state == ALIVE
    tids = [t.tid for t in raw.threads]
    assert len(set(tids)) == len(tids)
    assert raw.header["nthreads"] == len(raw.threads)


def test_tids_and_names_are_the_kernels(compiled, tmp_path):
    """Each record holds the tid and name the kernel gave its thread, more
    threads than the runtime checks its gettid-free tid against gettid
    (tid.c): the main thread's new name, inherited, or the name the main
    thread gave the thread before its first traced call."""
    prog = compiled("rt_threads.c", "pg")
    r = run_ok(prog, tmp_path / "run", ["tids"])
    told = [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("tid ")]
    assert len(told) == 8
    raw = only_snapshot(r.dir / "funtrace.raw")
    got = {t.tid: t.name for t in raw.threads if t.tid != r.pid and t.name != "funtrace"}
    assert got == {int(tid): name for tid, name in told}
    assert [name for _, name in told] == [f"t-named-{i}" if i % 2 else "m-renamed" for i in range(8)]
    assert main_thread(raw).name == "m-renamed"


def test_names_set_by_prctl_before_the_first_traced_call(compiled, tmp_path):
    """80 threads rename themselves with prctl before their first traced call,
    so their records start with the main thread's name; the refreshes at
    generation boundaries correct every one a few generations later."""
    prog = compiled("rt_threads.c", "pg")
    r = run_ok(prog, tmp_path / "run", ["prctl-early"], env={"FUNTRACE_GEN_MS": "10"})
    raw = only_snapshot(r.dir / "funtrace.raw")
    names = sorted(t.name for t in raw.threads if t.tid != r.pid and t.name != "funtrace")
    assert names == sorted(f"t-early-{i}" for i in range(80))


def test_budget_evicts_oldest_exited(compiled, tmp_path):
    """With a budget of 4 rings, the main thread's ring and the 3 most
    recently exited threads' rings are kept; older exited rings are evicted
    and their records reused (the registry stays compact)."""
    prog = compiled("rt_threads.c", "pg")
    # (no housekeeper: a late one would register in the first evicted record's slot)
    r = run_ok(prog, tmp_path / "run", args=["budget"],
               env={"FUNTRACE_BUF": "65536", "FUNTRACE_BUDGET": str(4 * 65536), "FUNTRACE_GEN_MS": "0"})
    raw = only_snapshot(r.dir / "funtrace.raw")
    short = [t for t in raw.threads if t.tid != r.pid and t.name != "funtrace"]
    short.sort(key=lambda t: t.start_tsc)
    assert [t.state for t in short] == [EVICTED, EXITED, EXITED, EXITED], [t.state for t in short]
    assert short[0].entries == [] and short[0].exit_tsc > 0
    syms = Syms(prog)
    for t in short[1:]:
        assert sequence(raw, t, syms, keep={"thr_short"}) == [("thr_short", "call"), ("thr_short", "ret")]
        assert t.ring_size == 65536
    # records of the 6 threads evicted before were reused: the registry did not grow
    assert len(raw.threads) <= 6
    assert main_thread(raw).ring_size == 65536


def test_generations(compiled, tmp_path):
    """FUNTRACE_GEN_MS=10: consecutive generation records with clock
    snapshots that agree with the TSC frequency, and ring positions of the
    alive threads at each boundary."""
    prog = compiled("rt_threads.c", "pg")
    r = run_ok(prog, tmp_path / "run", env={"FUNTRACE_GEN_MS": "10"})
    raw = only_snapshot(r.dir / "funtrace.raw")
    gens = raw.gens
    assert raw.header["gen_ms"] == 10
    assert len(gens) >= 5, gens
    nums = [g["gen"] for g in gens]
    assert nums == list(range(nums[0], nums[0] + len(nums)))
    # the housekeeper may start a generation while the snapshot is being written
    assert nums[-1] - raw.header["gen_current"] in (0, 1)
    hz = raw.header["tsc_hz"]
    for a, b in zip(gens, gens[1:]):
        assert a["flags"] & 1 and b["start_tsc"] > a["start_tsc"]
        dt_ns = (b["clk_tsc"] - a["clk_tsc"]) * 1e9 / hz
        dm = b["clk_mono_ns"] - a["clk_mono_ns"]
        assert abs(dt_ns - dm) < 0.01 * dm + 50000, (dt_ns, dm)
        assert abs((b["clk_real_ns"] - a["clk_real_ns"]) - dm) < 0.01 * dm + 1e6
        assert 0 < dm < 1e9
    # fixed-rate schedule: a late boundary is followed by an early one
    span = gens[-1]["clk_mono_ns"] - gens[0]["clk_mono_ns"]
    assert 5e6 <= span / (len(gens) - 1) <= 50e6
    # the main thread's gen_pos has the boundaries it lived through, with
    # positions inside its ring and non-decreasing
    main = main_thread(raw)
    recorded = sorted((g, off) for g, off in main.gen_pos if g != GEN_NONE)
    assert len(recorded) >= 5
    assert all(0 <= off < main.ring_size for _, off in recorded)
    assert [o for _, o in recorded] == sorted(o for _, o in recorded)


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_sampled_time_word_every_generation(compiled, tmp_path, mode):
    """FUNTRACE_TIME=sampled with the default k (64) and FUNTRACE_GEN_MS=10:
    a thread making ~5 calls per generation gets a stamped return in every
    generation it records a return in - the housekeeper forces one at each
    boundary - and its time falls in that generation."""
    prog = compiled("rt_sparse.c", mode)
    r = run_ok(prog, tmp_path / "run", env={"FUNTRACE_TIME": "sampled", "FUNTRACE_GEN_MS": "10"})
    raw = only_snapshot(r.dir / "funtrace.raw")
    assert raw.header["time_mode"] == 1
    main = main_thread(raw)
    assert main.fmt == 4 and main.first_off == 0 and not main.flags & 1  # not wrapped
    # item index -> (word, tsc) of the events (escapes are not events)
    ev_at, j = {}, 0
    for i, w in enumerate(main.items):
        if w and w & 7 != 3:
            ev_at[i] = main.entries[j]
            j += 1
    start = {g["gen"]: g["start_tsc"] for g in raw.gens}
    bounds = sorted((g, off // 4) for g, off in main.gen_pos if g != GEN_NONE)
    bounds.append((None, len(main.items)))
    checked = 0
    for (g, a), (_, b) in zip(bounds, bounds[1:]):
        part = [ev_at[i] for i in range(a, b) if i in ev_at]
        if not part or g not in start or not any(w & rawfile.F_RET for w, _ in part):
            continue
        assert len(part) < 64, "the thread must not reach k events in a generation"
        stamps = [tsc for _, tsc in part if tsc is not None]
        assert stamps, f"generation {g}: {len(part)} events and no stamped return"
        assert stamps[0] >= start[g] - 100000, (g, stamps[0], start[g])
        if g + 1 in start:
            assert stamps[0] < start[g + 1] + 100000
        checked += 1
    assert checked >= 5, (checked, bounds)


def test_housekeeper_off(compiled, tmp_path):
    """FUNTRACE_GEN_MS=0: no housekeeping thread, generation 0 only."""
    prog = compiled("rt_pattern.c", "pg")
    r = run_ok(prog, tmp_path / "run", env={"FUNTRACE_GEN_MS": "0"})
    raw = only_snapshot(r.dir / "funtrace.raw")
    assert [t.name for t in raw.threads if t.name == "funtrace"] == []
    assert raw.header["gen_current"] == 0 and len(raw.gens) == 1


@pytest.mark.parametrize("mode", MODES)
def test_fork(compiled, tmp_path, mode):
    """The child starts clean: own pid, only the forking thread (plus its
    own threads), generation numbering from 0, none of the parent's events;
    the parent's trace is undisturbed."""
    prog = compiled("rt_fork.c", mode)
    r = run_ok(prog, tmp_path / "run", env={"FUNTRACE_GEN_MS": "10"})
    child_pid = int(r.stdout.split()[1])
    parent = only_snapshot(r.dir / "parent.raw")
    child = only_snapshot(r.dir / "child.raw")
    syms = Syms(prog)
    names = {"fk_pre", "fk_child", "fk_parent", "fk_bystander_fn"}
    assert parent.header["pid"] == r.pid and child.header["pid"] == child_pid
    # parent: everything it did, and the bystander thread
    assert sequence(parent, main_thread(parent), syms, keep=names) == [
        ("fk_pre", "call"), ("fk_pre", "ret"), ("fk_parent", "call"), ("fk_parent", "ret")]
    assert any(("fk_bystander_fn", "call") in sequence(parent, t, syms) for t in parent.threads)
    # child: only the forking thread (now main of the child) and its own thread
    cm = [t for t in child.threads if t.tid == child_pid]
    assert len(cm) == 1
    assert sequence(child, cm[0], syms, keep=names) == [("fk_child", "call"), ("fk_child", "ret")]
    others = [t for t in child.threads if t.tid != child_pid and t.name != "funtrace"]
    assert len(others) == 1 and others[0].state == EXITED
    assert sequence(child, others[0], syms, keep=names) == [("fk_child", "call"), ("fk_child", "ret")]
    for t in child.threads:
        assert ("fk_bystander_fn", "call") not in sequence(child, t, syms)
    # fresh generations in the child, housekeeper restarted
    assert child.gens[0]["gen"] == 0 and child.header["gen_current"] >= 1
    assert child.gens[0]["start_tsc"] > parent.gens[0]["start_tsc"]
    assert any(t.name == "funtrace" for t in child.threads)


@pytest.mark.parametrize("mode", MODES)
def test_dlopen_same_address(tree, compiled, tmp_path, mode):
    """A library is dlclose'd and another one is dlopen'ed at the same
    address: two module records with disjoint generation ranges, each
    library's events inside its own record's segments."""
    prog = compiled("rt_dlopen.c", mode, extra=["-ldl"])
    libs = []
    for n in (1, 2):
        libs.append(compile_prog(tree, "rt_dlib.c", tmp_path / f"librt_d{n}.so", mode=mode,
                                 extra=["-shared", "-fPIC", f"-DLIBNUM={n}"]))
    r = run_ok(prog, tmp_path / "run", args=[str(libs[0]), str(libs[1])], env={"FUNTRACE_GEN_MS": "0"})
    addrs = [int(line.split()[1], 16) for line in r.stdout.splitlines()]
    raw = only_snapshot(r.dir / "funtrace.raw")
    mods = modules(raw)
    assert mods[0]["path"] == str(prog) and mods[0]["state"] == 1
    m1 = [m for m in mods if m["path"] == str(libs[0])]
    m2 = [m for m in mods if m["path"] == str(libs[1])]
    assert len(m1) == 1 and len(m2) == 1, [m["path"] for m in mods]
    m1, m2 = m1[0], m2[0]
    assert m1["state"] == 2 and m2["state"] == 1
    assert m1["bias"] == m2["bias"], "the loader did not reuse the address (test premise)"
    assert m1["gen_loaded"] < m1["gen_unloaded"] <= m2["gen_loaded"]
    assert m2["gen_unloaded"] == GEN_NONE
    assert m1["epoch_loaded"] < m1["epoch_unloaded"] < m2["epoch_loaded"] <= raw.header["module_epoch"]
    # dlclose started a generation; the library's events were before it
    gens = {g["gen"]: g for g in raw.gens}
    boundary = gens[m1["gen_unloaded"]]["start_tsc"]
    main = main_thread(raw)
    in_lib = [e for e in main.events()
              if any(s <= e.addr < s + n for s, n in m1["segs"])]
    assert len(in_lib) >= 8  # lib_fn and lib_inner, calls and returns, in both libraries
    first = [e for e in in_lib if e.tsc < boundary]
    second = [e for e in in_lib if e.tsc >= gens[m2["gen_loaded"]]["start_tsc"]]
    assert len(first) == 4 and len(second) == 4
    assert all(e.tsc < boundary for e in first)
    for a in addrs:
        assert any(s <= a < s + n for s, n in m2["segs"])


# root field ids of the registry counters (funtrace_abi.h enum ft_field_id)
F_ROOT_THREADS_CREATED, F_ROOT_RINGS_EVICTED, F_ROOT_RECORDS_REUSED = 56, 57, 58


def test_budget_counters_in_core(tree, compiled, run_crash, tool):
    """300 short threads one after another with a budget of 4 rings, then
    abort(): the registry reuses the evicted records, but the root counts
    every thread that got a record, every ring evicted for the budget and
    every evicted record reused (read from the kernel's core through the
    root's own offsets table)."""
    prog = compiled("rt_threads.c", "pg")
    n = 300
    r = run_crash([prog, "budget-abort", str(n)],
                  env={"FUNTRACE_BUF": "65536", "FUNTRACE_BUDGET": str(4 * 65536), "FUNTRACE_GEN_MS": "0"})
    assert r.returncode == -signal.SIGABRT
    x = tool("coreextract", r.core, text=False)
    assert x.returncode == 0, x.stderr
    raw = rawfile.parse(x.stdout)
    root = raw.header["root_addr"]
    # main + n short threads got records; main and the 3 last short threads
    # keep their rings, so the first n - 3 rings were evicted; from the 5th
    # short thread on, each took the record of a thread whose ring was evicted.
    assert core_root_u64(r.core, root, F_ROOT_THREADS_CREATED) == n + 1
    assert core_root_u64(r.core, root, F_ROOT_RINGS_EVICTED) == n - 3
    assert core_root_u64(r.core, root, F_ROOT_RECORDS_REUSED) == n - 4
    # ... and coreextract carries them into FTHEADER
    assert (raw.header["threads_created"], raw.header["rings_evicted"], raw.header["records_reused"]) \
        == (n + 1, n - 3, n - 4)
    # ... and the decoder's summary says those threads are missing and why
    raw_path = r.dir / "t.raw"
    raw_path.write_bytes(x.stdout)
    d = tool("funtrace-decode", "--summary", raw_path)
    assert d.returncode == 0, d.stderr
    assert f"{n - 4} exited threads are not in the file" in d.stdout and "FUNTRACE_BUDGET" in d.stdout
    short = [t for t in raw.threads if t.tid != r.pid]
    assert sorted(t.state for t in short) == [EXITED, EXITED, EXITED, EVICTED]
