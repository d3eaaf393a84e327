"""Programs with their own fatal-signal handlers (tests/progs/ch_handler.c):
the runtime records the original fault and freezes tracing before the
program's handler runs, whatever the handler does next (report and re-raise,
fault again, rewrite all memory, recover by mprotect or siglongjmp), with
real kernel cores."""
import json
import re
import signal

import pytest

import rawfile
from conftest import INSTR_MODES
from test_runtime_helpers import Syms, main_thread, sequence

SEGV_MAPERR, SEGV_ACCERR, SI_TKILL = 1, 2, -6


def extract(tool, r):
    x = tool("coreextract", r.core, r.args[0], text=False)
    assert x.returncode == 0, x.stderr
    return rawfile.parse(x.stdout)


def decode_text(tool, r, *extra):
    raw = r.dir / "trace.raw"
    if not raw.exists():
        x = tool("coreextract", r.core, r.args[0], text=False)
        assert x.returncode == 0, x.stderr
        raw.write_bytes(x.stdout)
    t = tool("funtrace-decode", raw, *extra)
    assert t.returncode == 0, t.stderr
    return t.stdout


def handler_prog(compiled, mode, link=""):
    """ch_handler.c; link "-static": the runtime's libc interposers are ld
    --wrap's there (libfuntrace_static.a): before, the program's sigaction()
    and signal() failed (ENOSYS) and its handlers were never installed"""
    return compiled("ch_handler.c", mode, extra=[link] if link else None, tag=link.strip("-"))


def thread_named(raw, name):
    return next(t for t in raw.threads if t.name == name)


def the_fault(raw, state=rawfile.FAULT_ACTIVE):
    assert raw.faults_total == 1 and len(raw.faults) == 1, raw.faults
    f = raw.faults[0]
    assert f["state"] == state and f["seq"] == 1
    return f


@pytest.mark.parametrize("mode,how,link", [(m, "report", "") for m in INSTR_MODES] +
                         [("pg", "report-signal", ""), ("pg", "report-early", ""), ("pg", "report", "-static"),
                          ("finstr", "report-signal", "-static"), ("pg", "report-early", "-static-pie")])
def test_report_and_reraise(compiled, run_crash, tool, mode, how, link):
    """A handler that prints a report, walks the stack, calls 2000 traced
    functions and re-raises: the main thread's ring ends at the real fault
    (none of the handler's calls), the root keeps the original fault
    (SEGV_MAPERR at 0x28 in w_crash) although the core's signal is the
    re-raise (SI_TKILL), and the decoder reports both for what they are.
    The handler may be installed with sigaction, signal, or from
    .preinit_array before the runtime starts; the program may be linked
    -static or -static-pie."""
    prog = handler_prog(compiled, mode, link)
    r = run_crash([prog, how])
    assert r.returncode == -signal.SIGSEGV and "report done" in r.stderr, r.stderr
    raw = extract(tool, r)
    assert raw.siginfo["code"] == SI_TKILL and raw.siginfo["sender_pid"] == r.pid  # the re-raise
    f = the_fault(raw)
    assert (f["signo"], f["code"], f["addr"], f["tid"]) == (signal.SIGSEGV, SEGV_MAPERR, 0x28, r.pid)
    assert f["flags"] & rawfile.FAULTF_FROZEN and f["end_tsc"] == 0 and f["nested"] == 0
    syms = Syms(prog)
    b = raw.header["root_addr"] - syms.addr["funtrace_root"]
    assert syms.name(f["pc"] - b) == "w_crash"
    seq = sequence(raw, main_thread(raw), syms)
    assert seq[-3:] == [("w_before", "call"), ("w_before", "ret"), ("w_crash", "call")], seq[-8:]
    assert not [e for e in seq if e[0].startswith("h_")]
    out = decode_text(tool, r, "--text")
    head = out.split("\nthread ")[0]
    assert "  fault:      SIGSEGV (Segmentation fault), si_code 1 (SEGV_MAPERR), fault address 0x28, " \
           f"thread {r.pid} \"{prog.name[:15]}\", pc 0x{f['pc']:x} in w_crash (ch_handler.c:" in head, head
    assert "si_code -6 (SI_TKILL), sent by pid" in head and "raised again by the program, not the original fault" \
        in head, head
    assert "tracing was frozen meanwhile, so the rings end at the fault" in head
    s = decode_text(tool, r, "--summary")
    assert "fault:      SIGSEGV" in s and "handler:    the program's own handler for SIGSEGV" in s, s
    j = r.dir / "t.json"
    decode_text(tool, r, "--json", j)
    ev = [e for e in json.loads(j.read_text())["traceEvents"] if e.get("name") == "SIGSEGV (the original fault)"]
    assert len(ev) == 1 and ev[0]["args"]["fault_address"] == "0x28" and ev[0]["args"]["tracing_frozen"] == 1


def test_report_traced_on_request(compiled, run_crash, tool):
    """FUNTRACE_CRASH_HANDLERS=trace: the handler's calls are traced after
    the fault; the original fault is recorded all the same."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "report"], env={"FUNTRACE_CRASH_HANDLERS": "trace"})
    raw = extract(tool, r)
    f = the_fault(raw)
    assert f["addr"] == 0x28 and not f["flags"] & rawfile.FAULTF_FROZEN
    seq = sequence(raw, main_thread(raw), Syms(prog))
    i = seq.index(("w_crash", "call"))
    assert seq[i + 1:].count(("h_format", "call")) == 1000, seq[i:i + 5]
    assert "was traced (FUNTRACE_CRASH_HANDLERS=trace)" in decode_text(tool, r, "--text")


def test_longjmp_within_the_handler_keeps_it_frozen(compiled, run_crash, tool):
    """A longjmp whose target is inside the handler itself (its jmp_buf set
    there) does not end the episode: the handler's calls after it are not
    traced either, and the fault stays the original one."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "inner-longjmp"])
    assert r.returncode == -signal.SIGSEGV and "report done" in r.stderr
    raw = extract(tool, r)
    f = the_fault(raw)
    assert f["addr"] == 0x28 and f["flags"] & rawfile.FAULTF_FROZEN
    seq = sequence(raw, main_thread(raw), Syms(prog))
    assert seq[-1] == ("w_crash", "call") and not [e for e in seq if e[0].startswith("h_")], seq[-6:]


def test_handler_that_joins_a_thread(compiled, run_crash, tool):
    """Like redis's crash report: the handler cancels and joins a traced
    worker before going on; the worker's exit does not wait for the runtime
    (tracing is frozen: its bookkeeping is skipped), so the handler finishes
    and the process dies of its re-raise, with the original fault kept."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "join"], timeout=30)
    assert r.returncode == -signal.SIGSEGV and "worker joined" in r.stderr and "report done" in r.stderr, r.stderr
    f = the_fault(extract(tool, r))
    assert f["addr"] == 0x28 and f["flags"] & rawfile.FAULTF_FROZEN


def test_second_fault_in_the_handler(compiled, run_crash, tool):
    """The handler faults again (at 0x99): the kernel's core shows that
    second fault, the decoder still reports the first one as the original."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "second"])
    raw = extract(tool, r)
    assert (raw.siginfo["code"], raw.siginfo["addr"]) == (SEGV_MAPERR, 0x99)
    f = the_fault(raw)
    assert f["addr"] == 0x28
    head = decode_text(tool, r, "--text").split("\nthread ")[0]
    assert "fault:      SIGSEGV (Segmentation fault), si_code 1 (SEGV_MAPERR), fault address 0x28" in head
    assert "fault address 0x99" in head and "a second fault, not the original one" in head, head


def run_memtest(run_crash, prog, env):
    r = run_crash([prog, "memtest"], env={"FUNTRACE_GEN_MS": "10",
                                           # the chunk holding the housekeeper's stack keeps each pattern
                                           # 35 ms: it wakes for a boundary (at least 3 times) meanwhile
                                           "MEMTEST_HOLD_MS": "35",
                                           # the kernel writes each thread's rseq area (in its TLS)
                                           # whenever it is rescheduled: not the runtime's doing
                                           "GLIBC_TUNABLES": "glibc.pthread.rseq=0", **env}, timeout=120)
    assert "; held 35 ms 4 times" in r.stderr, r.stderr[-3000:]
    return r


@pytest.mark.parametrize("mode", ["pg", "finstr"])
def test_memtest_handler(compiled, run_crash, tool, mode):
    """A handler that saves, overwrites with patterns, checks and restores
    every private writable mapping (rings, registry, root, TLS, the
    runtime's threads' stacks included), calling traced functions while the
    memory is overwritten, with the housekeeper due every 10 ms and a thread
    spinning in traced calls: no byte changes under the patterns (no hook
    and no runtime thread writes while frozen), and the core decodes fully
    with the original fault."""
    prog = compiled("ch_handler.c", mode)
    r = run_memtest(run_crash, prog, {})
    line = [x for x in r.stderr.splitlines() if x.startswith("memtest:")]
    assert line and line[0].startswith("memtest: 0 mismatches"), r.stderr[-3000:]
    tested = int(line[0].split(" in ")[1].split()[0])
    assert tested > 8 << 20, line  # rings and registry at least
    x = tool("coreextract", r.core, prog, text=False)
    assert x.returncode == 0, x.stderr
    raw = rawfile.parse(x.stdout)
    assert raw.header["nthreads_lost"] == 0 and not raw.header["flags"] & 1
    assert {t.name for t in raw.threads} >= {f"ch_handler-{mode}"[:15], "spinner", "sleeper", "funtrace"}
    f = the_fault(raw)
    assert f["addr"] == 0x28 and f["flags"] == rawfile.FAULTF_FROZEN
    spin = thread_named(raw, "spinner")
    tscs = [e.tsc for e in spin.events()]
    assert len(tscs) > 1000 and sum(1 for t in tscs if t > f["tsc"]) <= 1  # stopped at the freeze
    assert raw.gens and max(g["gen"] for g in raw.gens) >= 2  # the housekeeper ran before, parked during
    out = decode_text(tool, r, "--text")
    assert "fault:      SIGSEGV (Segmentation fault), si_code 1 (SEGV_MAPERR), fault address 0x28" in out


def test_memtest_handler_traced_is_survived_but_not_frozen(compiled, run_crash, tool):
    """The control: with tracing left on in the handler
    (FUNTRACE_CRASH_HANDLERS=trace) the hooks meet the overwritten thread
    state and skip it (their validity check: no fault, the core extracts),
    but the other threads' rings go on past the original fault -- what the
    freeze of test_memtest_handler prevents, so its "stopped at the freeze"
    assertion can fail.  The runtime's own threads are parked in this mode
    too: the housekeeper, woken for boundaries while its stack is
    overwritten, would return into the pattern (the process then dies of
    the housekeeper's SIGSEGV before the memtest's line)."""
    prog = compiled("ch_handler.c", "pg")
    r = run_memtest(run_crash, prog, {"FUNTRACE_CRASH_HANDLERS": "trace"})
    assert any(x.startswith("memtest:") for x in r.stderr.splitlines()), r.stderr[-3000:]
    x = tool("coreextract", r.core, prog, text=False)
    assert x.returncode == 0, x.stderr
    raw = rawfile.parse(x.stdout)
    f = the_fault(raw)
    assert f["addr"] == 0x28 and not f["flags"] & rawfile.FAULTF_FROZEN
    spin = thread_named(raw, "spinner")
    assert sum(1 for e in spin.events() if e.tsc > f["tsc"]) > 1


@pytest.mark.parametrize("how,state,link", [("mprotect", rawfile.FAULT_RETURNED, ""),
                                            ("longjmp", rawfile.FAULT_LONGJMP, ""),
                                            ("longjmp", rawfile.FAULT_LONGJMP, "-static")])
@pytest.mark.parametrize("trace", [False, True])
def test_recovery_resumes_tracing(compiled, run_crash, tool, how, state, trace, link):
    """A handler that recovers (makes a guard page writable and returns, or
    siglongjmps back) does not leave tracing frozen: the calls after the
    recovery are traced, and the episode is an instant between the faulting
    call and them.  The process then aborts (no handler): that is the core's
    signal, and nothing is reported as an original fault."""
    prog = handler_prog(compiled, "pg", link)
    r = run_crash([prog, how], env={"FUNTRACE_CRASH_HANDLERS": "trace"} if trace else None)
    assert r.returncode == -signal.SIGABRT, r.stderr
    raw = extract(tool, r)
    f = the_fault(raw, state)
    assert f["code"] == (SEGV_ACCERR if how == "mprotect" else SEGV_MAPERR) and f["tid"] == r.pid
    assert bool(f["flags"] & rawfile.FAULTF_FROZEN) != trace and f["end_tsc"] > f["tsc"]
    main = main_thread(raw)
    syms = Syms(prog)
    b = raw.header["root_addr"] - syms.addr["funtrace_root"]
    named = [(syms.name(e.addr - b), e.ret, e.tsc) for e in main.events()]
    i = next(k for k, e in enumerate(named) if e[0] == "w_probe" and not e[1])
    j = next(k for k, e in enumerate(named) if e[0] == "after_recovery" and not e[1])
    assert named[i][2] < f["tsc"] < f["end_tsc"] < named[j][2]
    handler_calls = [e for e in named[i:j] if e[0] == "h_format"]
    assert len(handler_calls) == (2 if trace else 0)  # call and return, traced only on request
    out = decode_text(tool, r, "--text")
    head, body = out.split("\nthread ", 1)
    assert "fault:" not in head and "recovered:  1 fatal signal handled by the program" in head, head
    lines = body.splitlines()
    k = next(n for n, x in enumerate(lines) if "** SIGSEGV" in x)
    handler = "fix_guard" if how == "mprotect" else "jump_back"
    assert "w_probe" in lines[k - 1] and (handler if trace else "after_recovery") in lines[k + 1], lines[k - 2:k + 2]
    assert ("left with longjmp" if how == "longjmp" else "handler returned") in lines[k]


def test_exception_out_of_the_handler_resumes_tracing(compiled, run_crash, tool):
    """A SIGSEGV handler that throws; main catches it: the episode ends when
    the exception is caught outside the handler (CAUGHT), the catch is
    traced, and the faulting call shows as unwound by it."""
    prog = compiled("ch_throw.cc", "pg", extra=["-fnon-call-exceptions"])
    r = run_crash([prog])
    assert r.returncode == -signal.SIGABRT and r.stdout == "caught bad address\n", (r.stdout, r.stderr)
    raw = extract(tool, r)
    f = the_fault(raw, rawfile.FAULT_CAUGHT)
    assert f["addr"] == 0x30 and f["flags"] & rawfile.FAULTF_FROZEN and f["end_tsc"] > f["tsc"]
    seq = sequence(raw, main_thread(raw), Syms(prog))
    # a catch is a run of catch entries (the catcher, then its callers), then
    # the interposed __cxa_begin_catch/__cxa_end_catch calls (FORMAT.md 1.4)
    k = max(n for n, e in enumerate(seq) if e == ("main", "catch"))
    assert seq[k - 1][1] != "catch", seq
    after = seq[k + 1:]
    assert all(e[1] == "catch" for e in after[:after.index(("__cxa_begin_catch", "call"))]), seq
    assert [e for e in after if e[1] != "catch" and not e[0].startswith("__cxa_")] == \
        [("after_recovery", "call"), ("after_recovery", "ret")], seq
    out = decode_text(tool, r, "--text")
    assert "an exception left the program's handler after" in out
    assert re.search(r"w_probe.*\[unwound by exception\]", out), out


def test_fault_on_another_thread_freezes_every_thread(compiled, run_crash, tool):
    """The fault happens on thread "crasher" while the main thread calls
    traced functions in a loop: the main thread's ring stops at the freeze
    too, and the crasher is the thread marked [crashed]."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "thread"])
    raw = extract(tool, r)
    f = the_fault(raw)
    crasher = thread_named(raw, "crasher")
    assert f["tid"] == crasher.tid != r.pid
    after = [e for e in main_thread(raw).events() if e.tsc > f["tsc"]]
    assert len(after) <= 1, after  # at most the event that was being written at that instant
    out = decode_text(tool, r, "--text")
    assert f'thread {crasher.tid} "crasher" [crashed]' in out


def test_thread_that_ran_on_while_the_handler_ran(compiled, run_crash, tool, tmp_path):
    """Tracing froze at the main thread's fault; the handler then woke thread
    "runner" from its read in wait_for_go, and runner returned and parked in
    after_the_fault -- untraced -- before the re-raise ended the process.
    runner's trace ends in wait_for_go, its final stack is in
    after_the_fault: wait_for_go is open at the trace's end (it returned
    later), not a frame left without a return, and --text says why the final
    stack differs.  Before, wait_for_go was shown [return missing], as if a
    longjmp or an exception had left it."""
    prog = handler_prog(compiled, "pg")
    r = run_crash([prog, "ran-on"])
    raw = extract(tool, r)
    f = the_fault(raw)
    assert f["tid"] == r.pid and f["flags"] & rawfile.FAULTF_FROZEN, f
    runner = thread_named(raw, "runner")
    out = decode_text(tool, r, "--text")
    part = out[out.index(f'thread {runner.tid} "runner"'):]
    assert re.search(r"open +runner .*\[still open\]", part) and \
        re.search(r"open +wait_for_go .*\[still open\]", part), part
    assert "[return missing]" not in out, out
    assert "after_the_fault" in part.split("final stack")[1], part
    assert "this thread ran on, untraced, after tracing froze at the fault; 1 call still open where its trace " \
           "ends returned later" in part, part
    j = tool("funtrace-decode", r.dir / "trace.raw", "--json", tmp_path / "t.json")
    assert j.returncode == 0, j.stderr
    ev = json.loads((tmp_path / "t.json").read_text())
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    wait = [e for e in ev if e.get("name") == "wait_for_go" and e.get("tid") == runner.tid and e.get("ph") == "X"]
    assert len(wait) == 1 and wait[0]["args"].get("open_at_end") and not wait[0]["args"].get("return_missing"), wait


def test_abort_handler_that_returns(compiled, run_crash, tool):
    """A SIGABRT handler that returns: abort() raises the signal again and
    the process dies of it; the decoder says so rather than calling the
    episode a recovery."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "abort"])
    assert r.returncode == -signal.SIGABRT
    raw = extract(tool, r)
    f = the_fault(raw, rawfile.FAULT_RETURNED)
    assert f["signo"] == signal.SIGABRT and f["code"] == SI_TKILL
    head = decode_text(tool, r, "--text").split("\nthread ")[0]
    assert "handler:    the program's own handler for SIGABRT returned after" in head and \
        "the signal then came again and ended the process" in head and "recovered:" not in head, head


def test_on_crash_snapshot_with_a_program_handler(compiled, run_crash, tmp_path):
    """FUNTRACE_ON_CRASH and a handler of the program's: the snapshot is
    written first (frozen rings, the fault), then the program's handler
    runs as usual."""
    prog = compiled("ch_handler.c", "pg")
    d = tmp_path / "crashdir"
    d.mkdir()
    r = run_crash([prog, "report"], env={"FUNTRACE_ON_CRASH": str(d)})
    assert r.returncode == -signal.SIGSEGV and "report done" in r.stderr
    snap = rawfile.parse(d / f"funtrace-{r.pid}-{r.pid}.raw")
    assert snap.siginfo["addr"] == 0x28 and snap.faults[0]["state"] == rawfile.FAULT_ACTIVE
    seq = sequence(snap, main_thread(snap), Syms(prog))
    assert seq[-1] == ("w_crash", "call")


@pytest.mark.parametrize("link", ["", "-static"])
def test_program_sees_its_own_dispositions(compiled, tmp_path, link):
    """sigaction()'s old action and signal()'s return value are what the
    program installed (flags and mask included), never the runtime's
    wrapper; other signals go straight to libc."""
    from conftest import run_program
    prog = handler_prog(compiled, "pg", link)
    r = run_program([prog, "query"], tmp_path / "q", want_core=False)
    assert r.returncode == 0 and r.stdout == "dispositions ok\n", (r.stdout, r.stderr)


def test_fork_from_a_handler_starts_thawed(compiled, run_crash):
    """A handler that forks (e.g. to run a debugger): the child is traced
    (it starts thawed, without the parent's episodes)."""
    prog = compiled("ch_handler.c", "pg")
    r = run_crash([prog, "fork"])
    snap = rawfile.parse(r.dir / "funtrace.raw")
    assert snap.faults_total == 0
    seq = sequence(snap, main_thread(snap), Syms(prog))
    assert ("after_recovery", "call") in seq, seq
