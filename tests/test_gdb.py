"""The gdb extension (gdb/funtrace.py over the shared reader library): `funtrace
save/tail/threads/generations` inside a real gdb, on real kernel cores and on
live processes (stopped at a breakpoint, attached with -p), with and without
symbols.

Hermetic: every gdb here runs with -nx (no system-wide gdbinit, so not an
installed funtrace) and sources THIS tree's build/share/funtrace/gdb/funtrace.py,
which loads build/lib/libfuntrace_reader.so and runs build/bin/funtrace-decode.
The installed path is tested in test_gdb_install.py."""
import os
import re
import shutil
import signal
import struct
import subprocess
from pathlib import Path

import pytest

import rawfile
from conftest import (BIN, BUILD, ROOT, compile_prog, elf_symbols, functions_in_trace, load_bias, require_tools,
                      run_program, wait_for)
from dec_util import last_event_ns

GDB_EXT = BUILD / "share" / "funtrace" / "gdb" / "funtrace.py"
DECODE = BIN / "funtrace-decode"
SRC_CORE, SRC_LIVE = 1, 2
RAWF_PARTIAL, RAWF_ROOT_BY_SCAN = 0x1, 0x2
UNW_GDB = 2
STKF_CRASHED = 0x1
SIGSEGV = 11

# what examples/crash does (see its header comment): thread -> its open calls at the crash
CRASH_THREADS = {"parser-1", "parser-2", "hasher", "loader"}

pytestmark = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")


def run_gdb(*cmds, target=(), cwd=None, source=True, init=(), timeout=120, env=None):
    """gdb -batch -nx [-iex init]... [-ex source funtrace.py] -ex cmd... target...

    Asserts that no Python traceback leaked out, whatever the commands did."""
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for c in init:
        args += ["-iex", c]
    if source:
        args += ["-ex", f"source {GDB_EXT}"]
    for c in cmds:
        args += ["-ex", c]
    args += [str(t) for t in target]
    full_env = dict(os.environ, DEBUGINFOD_URLS="")
    full_env.update(env or {})
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                       env=full_env)
    both = r.stdout + r.stderr
    assert "Traceback" not in both and "Python Exception" not in both, both[-4000:]
    assert "internal error" not in both, both[-4000:]
    return r


def capture(cmd, out):
    """A gdb -ex command that runs cmd and writes what it prints (without gdb's own
    messages) to the file out."""
    return f"python open({str(out)!r}, 'w').write(gdb.execute({cmd!r}, False, True))"


def command_output(cmd, target, tmp_path, name="out.txt"):
    """What one gdb command prints on target (without gdb's own messages)."""
    out = tmp_path / name
    g = run_gdb(capture(cmd, out), target=target)
    assert g.returncode == 0 and out.exists(), g.stderr[-3000:]
    return out.read_text()


def decode(*args):
    r = subprocess.run([DECODE, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 3), r.stderr
    return r.stdout


def summary_part(summary, key):
    """The `key:` line of funtrace-decode --summary and the indented lines after it."""
    lines, keep = [], False
    for ln in summary.splitlines(True):
        if not ln[:1].isspace():
            keep = ln.startswith(key + ":")
        if keep:
            lines.append(ln)
    return "".join(lines)


def funtrace_lines(text):
    """The lines our commands print on stderr ('funtrace: ...' errors)."""
    return [ln for ln in text.splitlines() if ln.startswith("funtrace:")]


def text_sections(out):
    """{header line: [call lines]} of funtrace-decode --text output (what `funtrace tail` prints)."""
    secs = {}
    cur = None
    for ln in out.splitlines():
        if re.match(r'^thread \d+ ".*"', ln):
            cur = ln
            secs[cur] = []
        elif cur is not None and re.match(r"^\s+-?[\d.]+ \w+\s", ln):
            secs[cur].append(ln)
    return secs


def section_of(secs, name):
    for head, lines in secs.items():
        if f'"{name}"' in head:
            return head, lines
    raise AssertionError(f"no tail section for thread {name}: {list(secs)}")


def call_name(line):
    """Function name of one call line: '  <start>  <duration|open>  <indent>[[depth D] ]<name>  <where> ...'."""
    m = re.match(r"^\s+-?[\d.]+ \w+\s+(?:open|-?[\d.]+ \w+)\s+(?:\[depth \d+\] )?(\S+)", line)
    assert m, line
    return m.group(1)


def wait_parked(pid, threads=2):
    """Until `threads` threads of gdb_wait (pid) sit in pause() (syscall 34) in
    gdb_park: its "ready" comes before main's call of gdb_park is recorded."""
    def parked():
        n = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                n += (task / "syscall").read_text().split()[0] == "34"
            except (OSError, IndexError):
                pass
        return n >= threads
    wait_for(parked, timeout=20, what=f"pid {pid} to park in pause()")


def chunks_by_magic(path):
    return rawfile.chunks(Path(path).read_bytes())


@pytest.fixture(scope="module")
def ext(tree):
    assert GDB_EXT.exists(), "make did not install build/share/funtrace/gdb/funtrace.py"
    assert (BUILD / "lib" / "libfuntrace_reader.so").exists(), "make did not build libfuntrace_reader.so"
    assert tree.example("crash").exists(), "make did not build build/examples/crash"
    require_tools(tree, "funtrace-decode", "coreextract")
    return tree


@pytest.fixture(scope="module")
def crash_core(ext, tmp_path_factory):
    """examples/crash run once: its core (5 traced threads, loader crashed with SIGSEGV)."""
    d = tmp_path_factory.mktemp("gdb-crash")
    r = run_program([ext.example("crash")], d, timeout=60)
    assert r.core is not None and r.signal == SIGSEGV, (r.returncode, r.stderr[-2000:])
    return r


@pytest.fixture(scope="module")
def crash_saved(crash_core):
    """`funtrace save` of the crash core: (gdb result, raw path)."""
    out = crash_core.dir / "gdb.raw"
    r = run_gdb(f"funtrace save {out}", target=[crash_core.args[0], crash_core.core],
                cwd=crash_core.dir)
    assert r.returncode == 0, r.stderr[-3000:]
    return r, out


def test_extension_is_thin():
    """The Python side keeps only what only gdb can do: no ELF, ring or raw logic."""
    lines = sum(len(p.read_text().splitlines()) for p in (ROOT / "gdb").glob("*.py"))
    assert lines < 450, f"gdb/*.py has {lines} lines"
    src = (ROOT / "gdb" / "funtrace.py").read_text()
    for word in ("struct.pack", "struct.unpack", "PT_LOAD", "NT_FILE", "TRACEBUF", "FUNTRACEROOT", "0x1216"):
        assert word not in src, word


# --------------------------------------------------------------------------
# cores
# --------------------------------------------------------------------------

def test_save_on_a_multithreaded_crash_core(ext, crash_core, crash_saved):
    r, out = crash_saved
    raw = rawfile.parse(out)
    assert raw.ended, "no ENDTRACE: the file is incomplete"
    h = raw.header
    assert h["source"] == SRC_CORE and h["flags"] & RAWF_PARTIAL == 0
    assert not h["flags"] & RAWF_ROOT_BY_SCAN, "the root symbol was there: no scan needed"
    assert h["pid"] == crash_core.pid
    names = {t.name: t for t in raw.threads}
    assert CRASH_THREADS <= set(names), names.keys()
    loader = names["loader"]
    assert raw.siginfo["signo"] == SIGSEGV and raw.siginfo["tid"] == loader.tid
    # the summary says what was written
    m = re.search(r"wrote \S+: (\d+) threads, (\d+) events, (\d+) generations?, (\d+) bytes", r.stdout)
    assert m, r.stdout
    assert int(m.group(1)) == len(raw.threads) == h["nthreads"]
    assert int(m.group(2)) == sum(t.n_entries for t in raw.threads)
    assert int(m.group(3)) == len(raw.gens) >= 1
    assert int(m.group(4)) == out.stat().st_size
    assert f"thread {loader.tid} got SIGSEGV" in r.stdout
    # the rings hold the functions each thread really ran
    found = functions_in_trace(raw, crash_core.args[0],
                               ["corrupt_record", "mix_round", "wait_for_more_work"])
    assert loader.tid in found["corrupt_record"]
    assert names["hasher"].tid in found["mix_round"]
    assert {names["parser-1"].tid, names["parser-2"].tid} <= set(found["wait_for_more_work"])
    # one gdb-unwound stack per thread of the core; the crashed one is flagged
    assert {s.tid for s in raw.stacks} >= {t.tid for t in raw.threads if t.state == 1}
    assert all(s.unwinder == UNW_GDB for s in raw.stacks)
    crashed = [s for s in raw.stacks if s.flags & STKF_CRASHED]
    assert [s.tid for s in crashed] == [loader.tid]
    assert crashed[0].pcs and crashed[0].pcs[0] == crashed[0].regs[16], "pcs[0] must be the rip"
    # MAPPINGS: the executable, with its build-id
    exe = [m for m in raw.mappings if Path(m["path"]).name == "crash" and m["offset"] == 0]
    assert exe and exe[0]["build_id"], raw.mappings[:3]


def test_bare_funtrace_writes_funtrace_raw_in_the_cwd(crash_core, tmp_path):
    r = run_gdb("funtrace", target=[crash_core.args[0], crash_core.core], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    raw = rawfile.parse(tmp_path / "funtrace.raw")
    assert raw.ended and raw.header["source"] == SRC_CORE
    assert not list(tmp_path.glob("*.tmp.*")), "temporary file left behind"


def test_tail_is_the_decoders_text_view(crash_core, crash_saved, tmp_path):
    """`funtrace tail N` prints exactly what `funtrace-decode --text -n N` prints for the
    same trace: one view, byte for byte."""
    t = [crash_core.args[0], crash_core.core]
    for n in (6, 20):
        got = command_output(f"funtrace tail {n}", t, tmp_path)
        assert got == decode("--text", "-n", n, crash_saved[1])
    got = command_output("funtrace tail", t, tmp_path)
    assert got == decode("--text", "-n", 20, crash_saved[1]), "N defaults to 20"


def test_tail_names_the_functions_last_called(crash_core, crash_saved, tmp_path):
    raw = rawfile.parse(crash_saved[1])
    out = command_output("funtrace tail 6", [crash_core.args[0], crash_core.core], tmp_path)
    secs = text_sections(out)
    heads = list(secs)
    assert '"loader"' in heads[0] and "crashed" in heads[0], "the crashed thread comes first"
    _h, loader = section_of(secs, "loader")
    # the crash: process_item -> parse_record -> corrupt_record, all still open, nested
    last = loader[-3:]
    assert [call_name(ln) for ln in last] == ["process_item", "parse_record", "corrupt_record"]
    assert all("[still open]" in ln for ln in last)
    assert "crash.c:" in last[-1], "source lines"
    assert "final stack (gdb, " in out, "the final stacks are gdb's"
    _h, hasher = section_of(secs, "hasher")
    assert call_name(hasher[-1]) == "mix_round"
    if not next(t for t in raw.threads if t.name == "hasher").flags & rawfile.TSF["WRAPPED"]:
        assert any(call_name(ln) == "hash_forever" and "open" in ln for ln in hasher), hasher
    for parser in ("parser-1", "parser-2"):
        _h, lines = section_of(secs, parser)
        assert call_name(lines[-1]) == "wait_for_more_work" and "[still open]" in lines[-1]


def test_tail_of_one_thread(crash_core, crash_saved, tmp_path):
    raw = rawfile.parse(crash_saved[1])
    hasher = next(t for t in raw.threads if t.name == "hasher")
    t = [crash_core.args[0], crash_core.core]
    out = command_output(f"funtrace tail 4 -t {hasher.tid}", t, tmp_path)
    whole = decode("--text", "-n", 4, crash_saved[1])
    header, *parts = whole.split("\n\n")
    mine = [p for p in parts if p.startswith(f"thread {hasher.tid} ")]
    assert out == header + "\n\n" + mine[0] + "\n", "the header and that thread's part of the text view"
    [(head, lines)] = text_sections(out).items()
    assert f"thread {hasher.tid} " in head and sum(1 for ln in lines if call_name(ln) == "mix_round") == 4
    r = run_gdb("funtrace tail 4 -t 1", target=t)
    assert r.returncode == 1
    assert funtrace_lines(r.stderr) == ["funtrace: no traced thread with tid 1 (see 'funtrace threads')"]


def test_threads_lists_every_traced_thread(crash_core, crash_saved, tmp_path):
    raw = rawfile.parse(crash_saved[1])
    out = command_output("funtrace threads", [crash_core.args[0], crash_core.core], tmp_path)
    assert out == summary_part(decode("--summary", crash_saved[1]), "threads")
    tids = {int(m) for m in re.findall(r"^  tid (\d+) ", out, re.M)}
    assert tids == {t.tid for t in raw.threads}
    loader = next(t for t in raw.threads if t.name == "loader")
    assert re.search(rf"^  tid {loader.tid} +loader .*\[crashed\]", out, re.M), out


def test_generations(crash_core, crash_saved, tmp_path):
    raw = rawfile.parse(crash_saved[1])
    out = command_output("funtrace generations", [crash_core.args[0], crash_core.core], tmp_path)
    assert out == summary_part(decode("--summary", crash_saved[1]), "generations")
    assert [int(g) for g in re.findall(r"^  #(\d+) ", out, re.M)] == [g["gen"] for g in raw.gens]


def test_help_texts(ext):
    r = run_gdb("help funtrace", "help funtrace tail", "help funtrace save")
    assert r.returncode == 0, r.stderr
    for sub in ("save", "tail", "threads", "generations"):
        assert f"funtrace {sub} -- " in r.stdout, r.stdout
    assert "Usage: funtrace tail [N] [-t TID]" in r.stdout
    assert "Usage: funtrace save [FILE]" in r.stdout


def test_save_equals_coreextract(ext, crash_core, crash_saved):
    require_tools(ext, "coreextract")
    ce = crash_core.dir / "ce.raw"
    r = subprocess.run([ext.tool("coreextract"), "-o", ce, crash_core.core, crash_core.args[0]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert_same_chunks(crash_saved[1], ce)


def assert_same_chunks(gdb_raw, ce_raw):
    a = [c for c in chunks_by_magic(gdb_raw) if c[0] != "FINSTACK"]
    b = [c for c in chunks_by_magic(ce_raw) if c[0] != "FINSTACK"]
    assert [m for m, _ in a] == [m for m, _ in b]
    for i, ((m, pa), (_m, pb)) in enumerate(zip(a, b)):
        assert pa == pb, f"chunk {i} ({m!r}) differs between gdb and coreextract"
    ends = [m for m, _ in chunks_by_magic(gdb_raw)]
    assert ends[-1] == "ENDTRACE" and "FINSTACK" in ends


def test_sampled_mode_core(ext, tmp_path):
    r = run_program([ext.example("crash")], tmp_path / "run", env={"FUNTRACE_TIME": "sampled"})
    assert r.core is not None and r.signal == SIGSEGV
    out = tmp_path / "gdb.raw"
    g = run_gdb(f"funtrace save {out}", target=[r.args[0], r.core])
    assert g.returncode == 0, g.stderr[-2000:]
    raw = rawfile.parse(out)
    assert raw.header["time_mode"] == 1
    assert {m for m, _ in raw.chunks} >= {"TRACES04"} and "TRACEBUF" not in {m for m, _ in raw.chunks}
    tail = command_output("funtrace tail 3", [r.args[0], r.core], tmp_path)
    assert tail == decode("--text", "-n", 3, out)
    _h, loader = section_of(text_sections(tail), "loader")
    assert call_name(loader[-1]) == "corrupt_record"
    ce = tmp_path / "ce.raw"
    c = subprocess.run([ext.tool("coreextract"), "-o", ce, r.core, r.args[0]],
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 0, c.stderr
    assert_same_chunks(out, ce)


def test_stripped_executable(ext, tmp_path):
    exe = tmp_path / "crash-stripped"
    shutil.copy(ext.example("crash"), exe)
    subprocess.run(["strip", "--strip-all", str(exe)], check=True)
    r = run_program([exe], tmp_path / "run")
    assert r.core is not None
    out = tmp_path / "gdb.raw"
    g = run_gdb(f"funtrace save {out}", target=[exe, r.core])
    assert g.returncode == 0, g.stderr[-2000:]
    assert "found by scanning" not in g.stdout, "funtrace_root is in .dynsym"
    raw = rawfile.parse(out)
    assert raw.ended and not raw.header["flags"] & RAWF_ROOT_BY_SCAN
    assert CRASH_THREADS <= {t.name for t in raw.threads}
    # no symbols: tail names the object and offset instead
    _h, loader = section_of(text_sections(command_output("funtrace tail 2", [exe, r.core], tmp_path)), "loader")
    assert call_name(loader[-1]).startswith("crash-stripped+0x")


def test_calls_into_unloaded_libraries(ext, tmp_path):
    """examples/plugin --crash: libplugin_b.so was dlclose'd before the crash; gdb
    no longer knows it, the runtime's module table names its calls."""
    r = run_program([ext.example("plugin"), "--crash"], tmp_path / "run")
    assert r.core is not None and r.signal == SIGSEGV
    out = tmp_path / "gdb.raw"
    g = run_gdb(f"funtrace save {out}", target=[r.args[0], r.core])
    assert g.returncode == 0, g.stderr[-2000:]
    _h, lines = section_of(text_sections(command_output("funtrace tail 40", [r.args[0], r.core], tmp_path)),
                           "plugin")
    names = [call_name(ln) for ln in lines]
    b_calls = [ln for ln in lines if "plugin_b.c:" in ln]
    assert {"b_hash", "b_mix"} <= {call_name(ln) for ln in b_calls}, lines
    assert names[-3:] == ["call_plugin", "plugin_run", "a_fault"]
    if ext.tool("coreextract").exists():
        ce = tmp_path / "ce.raw"
        c = subprocess.run([ext.tool("coreextract"), "-o", ce, r.core, r.args[0]],
                           capture_output=True, text=True, timeout=120)
        assert c.returncode == 0, c.stderr
        assert_same_chunks(out, ce)


def test_missing_ring_memory(ext, crash_core, crash_saved, tmp_path):
    """Ring memory the core does not hold (not dumped: p_filesz 0, or cut short)
    is missing -- not the zeros or file bytes gdb would otherwise show -- and
    the trace says so exactly as coreextract does."""
    raw = rawfile.parse(crash_saved[1])
    by_name = {t.name: t for t in raw.threads}
    core = tmp_path / "core"
    shutil.copy(crash_core.core, core)
    data = bytearray(core.read_bytes())
    phoff = int.from_bytes(data[32:40], "little")
    phnum = int.from_bytes(data[56:58], "little")
    hasher = by_name["hasher"]
    assert hasher.pos_off >= 2 * 4096 or hasher.flags & rawfile.TSF["WRAPPED"]
    keep = max(4096, (hasher.pos_off // 2) & ~0xFFF)  # cut the ring in the middle of its events
    loads = []  # (header offset, vaddr, memsz) of every PT_LOAD
    for i in range(phnum):
        o = phoff + 56 * i
        if int.from_bytes(data[o:o + 4], "little") == 1:
            loads.append((o, int.from_bytes(data[o + 16:o + 24], "little"),
                          int.from_bytes(data[o + 40:o + 48], "little")))

    def load_of(addr):
        [h] = [h for h in loads if h[1] <= addr < h[1] + h[2]]
        return h

    # the loader loses its whole ring.  The rings come from one pool: in a mapping of its own,
    # the mapping is cut at the ring's start; in the hasher's mapping past the hasher's ring, the
    # hasher's cut takes it too; before it, the mapping is made to start after the loader's ring
    gone = by_name["loader"]
    o, vaddr, memsz = load_of(hasher.ring)
    filesz = hasher.ring - vaddr + keep
    if load_of(gone.ring) != (o, vaddr, memsz):
        go = load_of(gone.ring)
        data[go[0] + 32:go[0] + 40] = (gone.ring - go[1]).to_bytes(8, "little")  # p_filesz
    elif gone.ring < hasher.ring:
        delta = gone.ring + gone.ring_size - vaddr
        assert gone.ring + gone.ring_size <= hasher.ring
        for field, value in ((8, int.from_bytes(data[o + 8:o + 16], "little") + delta),  # p_offset
                             (16, vaddr + delta), (24, vaddr + delta),  # p_vaddr, p_paddr
                             (40, memsz - delta)):  # p_memsz
            data[o + field:o + field + 8] = value.to_bytes(8, "little")
        filesz -= delta
    data[o + 32:o + 40] = filesz.to_bytes(8, "little")  # p_filesz: the hasher's ring cut in the middle
    core.write_bytes(data)
    out = tmp_path / "gdb.raw"
    g = run_gdb(f"funtrace save {out}", target=[crash_core.args[0], core])
    assert g.returncode == 0, g.stderr[-2000:]
    [warning] = [ln for ln in g.stdout.splitlines() if ln.startswith("funtrace: warning: ")]
    assert warning.startswith("funtrace: warning: trace incomplete: ring memory of "), warning
    got = rawfile.parse(out)
    assert got.header["flags"] & RAWF_PARTIAL
    lost, part = got.thread(gone.tid), got.thread(hasher.tid)
    assert lost.flags & rawfile.TSF["RING_MISSING"] and lost.n_entries == 0
    assert part.flags & rawfile.TSF["RING_PARTIAL"]
    assert 0 < part.n_entries < hasher.n_entries
    threads = command_output("funtrace threads", [crash_core.args[0], core], tmp_path)
    # the decoder's warning (its stderr) comes first
    assert threads.startswith("funtrace-decode: (trace): the trace is incomplete")
    assert threads.split("\n", 1)[1] == summary_part(decode("--summary", out), "threads")
    ce = tmp_path / "ce.raw"
    c = subprocess.run([ext.tool("coreextract"), "-o", ce, core, crash_core.args[0]],
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 3, c.stderr  # FT_EXIT_PARTIAL
    assert_same_chunks(out, ce)
    # gdb and coreextract say the same thing
    assert c.stderr.strip() == warning.replace("funtrace: warning: ", f"coreextract: {core}: ")


def test_truncated_core_is_reported_as_coreextract_reports_it(ext, crash_core, crash_saved, tmp_path):
    """A core cut short inside the rings: the raw says PARTIAL and gdb's warning is
    coreextract's message, word for word (the same C code writes both)."""
    raw = rawfile.parse(crash_saved[1])
    hasher = next(t for t in raw.threads if t.name == "hasher")
    data = crash_core.core.read_bytes()
    off = file_offset(data, hasher.ring + 4096)
    core = tmp_path / "core"
    core.write_bytes(data[:off])
    out = tmp_path / "gdb.raw"
    g = run_gdb(f"funtrace save {out}", target=[crash_core.args[0], core])
    assert g.returncode == 0, g.stderr[-2000:]
    assert rawfile.parse(out).header["flags"] & RAWF_PARTIAL
    [warning] = [ln for ln in g.stdout.splitlines() if ln.startswith("funtrace: warning: ")]
    assert warning.startswith(f"funtrace: warning: trace incomplete, core truncated at {off} of "), warning
    ce = tmp_path / "ce.raw"
    c = subprocess.run([ext.tool("coreextract"), "-o", ce, core, crash_core.args[0]],
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 3, c.stderr
    assert c.stderr.strip() == warning.replace("funtrace: warning: ", f"coreextract: {core}: ")
    assert_same_chunks(out, ce)


def file_offset(core, addr):
    """Offset in the core file of target address addr."""
    phoff, phnum = int.from_bytes(core[32:40], "little"), int.from_bytes(core[56:58], "little")
    for i in range(phnum):
        p_type, _f, off, vaddr, _pa, filesz = struct.unpack_from("<IIQQQQ", core, phoff + 56 * i)
        if p_type == 1 and vaddr <= addr < vaddr + filesz:
            return off + addr - vaddr
    raise AssertionError(f"0x{addr:x} is not in the core")


def prstatus_tid_offsets(core):
    """File offsets of the pr_pid field of every NT_PRSTATUS note, in note order."""
    phoff, phnum = int.from_bytes(core[32:40], "little"), int.from_bytes(core[56:58], "little")
    out = []
    for i in range(phnum):
        p_type, _f, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", core, phoff + 56 * i)
        p = off
        while p_type == 4 and p + 12 <= off + filesz:
            namesz, descsz, ntype = struct.unpack_from("<III", core, p)
            desc = p + 12 + ((namesz + 3) & ~3)
            if ntype == 1:
                out.append(desc + 32)
            p = desc + ((descsz + 3) & ~3)
    return out


def test_odd_thread_ids(ext, crash_core, crash_saved, tmp_path):
    """A core whose thread ids are negative or huge -- in its NT_PRSTATUS notes (the
    crashing thread's too, so SIGINFO's) and in the registry's records: gdb writes
    the same chunks as coreextract, except the stacks, and no internal error."""
    raw = rawfile.parse(crash_saved[1])
    data = bytearray(crash_core.core.read_bytes())
    notes = prstatus_tid_offsets(data)
    odd = [-2, 0x7FFFFFFF, -0x7FFFFFF0]  # int32 pr_pid
    for off, tid in zip(notes, odd):
        struct.pack_into("<i", data, off, tid)
    # registry records: tid is a u32
    _size, root_f = rawfile.abi_struct("ROOT")
    tsize, thr_f = rawfile.abi_struct("THREAD")
    root = raw.header["root_addr"]
    threads = int.from_bytes(data[file_offset(data, root + root_f["threads"][0]):][:8], "little")
    huge = [0xFFFFFFFE, 0x80000000]
    for i, tid in enumerate(huge):
        struct.pack_into("<I", data, file_offset(data, threads + i * tsize + thr_f["tid"][0]), tid)
    core = tmp_path / "core"
    core.write_bytes(data)
    out, ce = tmp_path / "gdb.raw", tmp_path / "ce.raw"
    g = run_gdb(f"funtrace save {out}", target=[crash_core.args[0], core])
    assert g.returncode == 0, g.stderr[-3000:]
    c = subprocess.run([ext.tool("coreextract"), "-o", ce, core, crash_core.args[0]], capture_output=True,
                       text=True, timeout=120)
    assert c.returncode == 0, c.stderr
    assert_same_chunks(out, ce)
    got = rawfile.parse(out)
    assert got.siginfo["tid"] == 0xFFFFFFFE, "the crashing thread's pr_pid -2, as a u32"
    assert [t.tid for t in got.threads[:2]] == huge
    assert {0xFFFFFFFE, 0x7FFFFFFF} <= {s.tid for s in got.stacks}
    tail = command_output("funtrace tail 2", [crash_core.args[0], core], tmp_path)
    assert tail == decode("--text", "-n", 2, out)


def test_core_without_executable_finds_the_root_by_scanning(crash_core, crash_saved, tmp_path):
    out = tmp_path / "scan.raw"
    g = run_gdb(f"funtrace save {out}", target=["-c", crash_core.core])
    assert g.returncode == 0, g.stderr[-2000:]
    assert "found by scanning memory" in g.stdout
    scan, sym = rawfile.parse(out), rawfile.parse(crash_saved[1])
    assert scan.header["flags"] & RAWF_ROOT_BY_SCAN
    assert scan.header["root_addr"] == sym.header["root_addr"]
    assert [(t.tid, t.entries) for t in scan.threads] == [(t.tid, t.entries) for t in sym.threads]


def test_torn_and_uncommitted_slots(ext, tmp_path, compiled):
    exe = compiled("gdb_torn.c", extra=["-I", str(ROOT / "runtime" / "include")])
    syms = {}
    for kind in ("torn", "uncommitted"):
        r = run_program([exe, kind], tmp_path / kind)
        assert r.core is not None and r.signal == SIGSEGV, r.stderr
        out = tmp_path / f"{kind}.raw"
        g = run_gdb(f"funtrace save {out}", target=[exe, r.core])
        assert g.returncode == 0, g.stderr[-2000:]
        raw = rawfile.parse(out)
        main = next(t for t in raw.threads if t.tid == r.pid)
        found = functions_in_trace(raw, exe, ["torn_victim", "torn_last_committed"])
        syms[kind] = found
        threads = command_output("funtrace threads", [exe, r.core], tmp_path)
        main_row = re.search(rf"^  tid {r.pid} .*", threads, re.M).group(0)
        if kind == "torn":  # exact entries cannot tear: an uncommitted escape at pos (FORMAT.md 2.3)
            assert main.fmt == 3 and main.n_dropped == 1
            assert not main.flags & (rawfile.TSF["TORN"] | rawfile.TSF["UNCOMMITTED"])
            assert not found["torn_victim"], "a half-written slot is never emitted"
        else:
            assert main.flags & rawfile.TSF["UNCOMMITTED"]
            assert main.events()[-1].addr == found["torn_victim"][r.pid][0].addr
            assert "UNCOMMITTED" in main_row
            tail = command_output("funtrace tail 3", [exe, r.core], tmp_path)
            _h, lines = section_of(text_sections(tail), raw.thread(r.pid).name)
            assert call_name(lines[-1]) == "torn_victim"
        ce = tmp_path / f"{kind}.ce.raw"
        c = subprocess.run([ext.tool("coreextract"), "-o", ce, r.core, exe],
                           capture_output=True, text=True, timeout=120)
        assert c.returncode == 0, c.stderr
        assert_same_chunks(out, ce)


def test_tail_of_a_stack_overflow_stays_small(ext, tmp_path, compiled):
    """A thread that recursed until its stack overflowed has tens of thousands
    of open `recurse` frames and gdb's stack is cut at 512 frames: tail (the
    decoder's text view) stays a few dozen lines."""
    exe = compiled("gdb_deep.c")
    r = run_program([exe], tmp_path / "run")
    assert r.core is not None and r.signal == SIGSEGV, r.stderr
    out = tmp_path / "deep.raw"
    g = run_gdb(f"funtrace save {out}", target=[exe, r.core], timeout=120)
    assert g.returncode == 0, g.stderr[-2000:]
    [crashed] = [s for s in rawfile.parse(out).stacks if s.flags & STKF_CRASHED]
    assert len(crashed.pcs) == 512 and crashed.flags & 2, "FINSTACK: at most 512 frames, TRUNCATED"
    tail = command_output("funtrace tail 3", [exe, r.core], tmp_path)
    assert tail == decode("--text", "-n", 3, out)
    assert len(tail.splitlines()) < 200 and len(tail) < 20000, tail[-3000:]
    _h, lines = section_of(text_sections(tail), exe.name[:15])
    assert [call_name(ln) for ln in lines[:3]] == ["main", "deep_start", "recurse"]
    assert call_name(lines[-1]) == "recurse"


def test_tail_call_frames_are_not_in_finstack(ext, tmp_path, compiled):
    """gdb invents a TAILCALL frame for a function that tail-called the
    crashing one; it is not on the machine stack, so FINSTACK leaves it out
    (like inline frames) and equals coreextract's libunwind stack."""
    require_tools(ext, "coreextract")
    exe = compiled("gdb_tailcall.c", extra=["-O2"], tag="O2")
    r = run_program([exe], tmp_path / "run")
    assert r.core is not None and r.signal == SIGSEGV, r.stderr
    out = tmp_path / "gdb.raw"
    g = run_gdb("python print('TAILCALL', gdb.newest_frame().older().type() == gdb.TAILCALL_FRAME, "
                "gdb.newest_frame().older().name())", f"funtrace save {out}", target=[exe, r.core])
    assert g.returncode == 0, g.stderr[-2000:]
    assert "TAILCALL True gdb_tc_middle" in g.stdout, "no tail-call frame in gdb: the test proves nothing"
    saved = rawfile.parse(out)
    [crashed] = [s for s in saved.stacks if s.flags & 1]
    lo, size = elf_symbols(exe)["gdb_tc_middle"]
    bias = load_bias(saved, exe)
    assert len(crashed.pcs) >= 3
    assert not [pc for pc in crashed.pcs if bias + lo <= pc < bias + lo + size]
    ce = tmp_path / "ce.raw"
    c = subprocess.run([ext.tool("coreextract"), "-o", ce, r.core, exe], capture_output=True, text=True,
                       timeout=120)
    assert c.returncode == 0, c.stderr
    assert [s.pcs for s in saved.stacks] == [s.pcs for s in rawfile.parse(ce).stacks]


# --------------------------------------------------------------------------
# live processes
# --------------------------------------------------------------------------

def test_live_process_stopped_at_a_breakpoint(ext, compiled, tmp_path):
    exe = compiled("gdb_wait.c")
    out = tmp_path / "live.raw"
    tail = tmp_path / "tail.txt"
    g = run_gdb("break gdb_breakpoint_here", "run", f"funtrace save {out}", capture("funtrace tail 30", tail),
                "funtrace threads", "kill", target=[exe], cwd=tmp_path)
    assert g.returncode == 0, g.stderr[-3000:]
    raw = rawfile.parse(out)
    assert raw.header["source"] == SRC_LIVE and raw.ended
    assert raw.siginfo is None, "a breakpoint stop is not a signal of the program"
    assert {t.name for t in raw.threads} >= {"gdb_wait-pg", "gdb-worker"}
    found = functions_in_trace(raw, exe, ["gdb_leaf", "gdb_middle", "gdb_outer", "gdb_worker_chain"])
    worker = next(t for t in raw.threads if t.name == "gdb-worker")
    assert worker.tid in found["gdb_worker_chain"]
    main = next(t for t in raw.threads if t.name == "gdb_wait-pg")
    # 5 gdb_middle calls in main's chain, 3 in the worker's
    assert sum(1 for e in found["gdb_middle"][main.tid] if not e.ret) == 5
    assert sum(1 for e in found["gdb_middle"][worker.tid] if not e.ret) == 3
    # (not byte-equal to decoding `out`: a live trace's times are relative to when it was read)
    _h, lines = section_of(text_sections(tail.read_text()), "gdb_wait-pg")
    names = [call_name(ln) for ln in lines]
    assert names.count("gdb_middle") == 5 and "gdb_outer" in names
    assert names[-1] in ("gdb_breakpoint_here", "gdb_leaf")
    assert any(call_name(ln) == "main" and "[still open]" in ln for ln in lines)


def test_live_process_stopped_by_its_crash(ext, tmp_path):
    out = tmp_path / "live.raw"
    tail = tmp_path / "tail.txt"
    g = run_gdb("run", f"funtrace save {out}", capture("funtrace tail 3", tail), "kill",
                target=[ext.example("crash")], cwd=tmp_path)
    assert g.returncode == 0, g.stderr[-3000:]
    assert "SIGSEGV" in g.stdout
    raw = rawfile.parse(out)
    assert raw.header["source"] == SRC_LIVE and raw.ended
    loader = next(t for t in raw.threads if t.name == "loader")
    assert raw.siginfo is not None and raw.siginfo["signo"] == SIGSEGV
    assert raw.siginfo["tid"] == loader.tid and 0 < raw.siginfo["addr"] < 4096  # NULL->field
    assert [s.tid for s in raw.stacks if s.flags & STKF_CRASHED] == [loader.tid]
    secs = text_sections(tail.read_text())
    assert '"loader"' in list(secs)[0]
    assert call_name(secs[list(secs)[0]][-1]) == "corrupt_record"


def test_attach_to_a_running_process(ext, compiled, spawn, tmp_path):
    exe = compiled("gdb_wait.c")
    p = spawn([exe], name="attached")
    assert p.stdout.readline().strip() == b"ready"
    wait_parked(p.pid)
    out = tmp_path / "attached.raw"
    tail = tmp_path / "tail.txt"
    g = run_gdb(f"funtrace save {out}", capture("funtrace tail 3", tail), "detach", target=["-p", p.pid])
    assert g.returncode == 0, g.stderr[-3000:]
    raw = rawfile.parse(out)
    assert raw.header["source"] == SRC_LIVE and raw.header["pid"] == p.pid and raw.ended
    assert raw.siginfo is None, "the SIGSTOP of the attach is gdb's, not the program's"
    assert raw.header["taken_tsc"] > 0
    assert any(m["path"] == str(exe) for m in raw.mappings)
    found = functions_in_trace(raw, exe, ["gdb_park"])
    assert found["gdb_park"], "main is parked in gdb_park"
    _h, lines = section_of(text_sections(tail.read_text()), "gdb-worker")
    assert call_name(lines[-1]) == "gdb_park" and "[still open]" in lines[-1]
    # detached: the process goes on, and coreextract --pid sees the same trace
    assert p.poll() is None
    if ext.tool("coreextract").exists():
        ce = tmp_path / "ce.raw"
        c = subprocess.run([ext.tool("coreextract"), "--pid", str(p.pid), "-o", ce],
                           capture_output=True, text=True, timeout=120)
        assert c.returncode == 0, c.stderr
        mine, theirs = chunks_by_magic(out), chunks_by_magic(ce)
        # generations go on in a parked process (housekeeping thread); the rest must not move
        same = ("CMD LINE", "MAPPINGS", "MODULES ", "THREADID", "TRACEBUF")
        assert [c for c in mine if c[0] in same] == [c for c in theirs if c[0] in same]
    os.kill(p.pid, signal.SIGTERM)
    assert p.wait(timeout=10) == -signal.SIGTERM


# --------------------------------------------------------------------------
# errors and loading
# --------------------------------------------------------------------------

def test_program_without_the_runtime(ext, tmp_path):
    exe = compile_prog(ext, "gdb_wait.c", tmp_path / "plain", mode="none")
    g = run_gdb("break gdb_breakpoint_here", "run", "funtrace save x.raw", target=[exe],
                cwd=tmp_path)
    assert g.returncode == 1
    assert funtrace_lines(g.stderr) == ["funtrace: no funtrace runtime in this process"]
    assert not (tmp_path / "x.raw").exists()
    for cmd in ("funtrace tail", "funtrace threads", "funtrace generations"):
        g = run_gdb("break gdb_breakpoint_here", "run", cmd, target=[exe], cwd=tmp_path)
        assert g.returncode == 1
        assert funtrace_lines(g.stderr) == ["funtrace: no funtrace runtime in this process"]


def test_runtime_not_initialized_yet(ext, tmp_path):
    g = run_gdb("starti", "funtrace save x.raw", target=[ext.example("crash")], cwd=tmp_path)
    assert g.returncode == 1
    (line,) = funtrace_lines(g.stderr)
    assert re.fullmatch(r"funtrace: funtrace runtime not initialized in this process "
                        r"\(symbol funtrace_root at 0x[0-9a-f]+: no funtrace root magic\)", line), line
    assert not (tmp_path / "x.raw").exists()


def patch_core(src, dst, addr, data):
    """Copy core src to dst with the bytes at target address addr replaced."""
    b = bytearray(Path(src).read_bytes())
    phoff = int.from_bytes(b[32:40], "little")
    for i in range(int.from_bytes(b[56:58], "little")):
        o = phoff + 56 * i
        p_type = int.from_bytes(b[o:o + 4], "little")
        off, vaddr = int.from_bytes(b[o + 8:o + 16], "little"), int.from_bytes(b[o + 16:o + 24], "little")
        filesz = int.from_bytes(b[o + 32:o + 40], "little")
        if p_type == 1 and vaddr <= addr and addr + len(data) <= vaddr + filesz:
            b[off + addr - vaddr:off + addr - vaddr + len(data)] = data
            Path(dst).write_bytes(b)
            return
    raise AssertionError(f"0x{addr:x} is not in the core")


def test_corrupt_root(ext, crash_core, crash_saved, tmp_path):
    root = rawfile.parse(crash_saved[1]).header["root_addr"]
    core = tmp_path / "core"
    patch_core(crash_core.core, core, root + 16, (99).to_bytes(4, "little"))  # abi_version
    g = run_gdb("funtrace save x.raw", target=[crash_core.args[0], core], cwd=tmp_path)
    assert g.returncode == 1
    assert funtrace_lines(g.stderr) == [
        f"funtrace: no valid funtrace root (symbol funtrace_root at 0x{root:x}: "
        "unknown funtrace ABI version)"]
    assert not list(tmp_path.glob("x.raw*"))


def test_no_process(ext, tmp_path):
    g = run_gdb("funtrace", cwd=tmp_path)
    assert g.returncode == 1
    assert funtrace_lines(g.stderr) == [
        "funtrace: no process or core file (start the program, attach with -p, or load a core)"]
    g = run_gdb("funtrace threads", target=[ext.example("crash")], cwd=tmp_path)
    assert g.returncode == 1
    assert len(funtrace_lines(g.stderr)) == 1
    assert not list(tmp_path.iterdir())


def test_bad_arguments(crash_core, tmp_path):
    t = [crash_core.args[0], crash_core.core]
    g = run_gdb("funtrace save a b", target=t, cwd=tmp_path)
    assert g.returncode == 1 and funtrace_lines(g.stderr) == ["funtrace: usage: funtrace save [FILE]"]
    g = run_gdb("funtrace bogus", target=t, cwd=tmp_path)
    assert g.returncode == 1
    assert funtrace_lines(g.stderr) == ["funtrace: unknown subcommand 'bogus' (try 'help funtrace')"]
    g = run_gdb("funtrace tail x", target=t, cwd=tmp_path)
    assert g.returncode == 1 and funtrace_lines(g.stderr) == ["funtrace: usage: funtrace tail [N] [-t TID]"]
    g = run_gdb(f"funtrace save {tmp_path}/no/such/dir/x.raw", target=t, cwd=tmp_path)
    assert g.returncode == 1
    (line,) = funtrace_lines(g.stderr)
    assert line.startswith(f"funtrace: cannot write {tmp_path}/no/such/dir/x.raw: ")


def test_loading_twice_is_harmless(crash_core):
    t = [crash_core.args[0], crash_core.core]
    g = run_gdb(f"source {GDB_EXT}", "funtrace threads", target=t)
    assert g.returncode == 0, g.stderr[-2000:]
    assert sum(1 for ln in g.stdout.splitlines() if ln.startswith("threads: ")) == 1


def test_save_carries_the_newest_events_time_high_half(ext, compiled, tmp_path):
    """A thread busy 2.5 s without generation boundaries (FUNTRACE_GEN_MS=0):
    its ring keeps no TSC_HI escape. `funtrace save` (the shared reader) copies
    the record's high half into THRDSTAT, as coreextract does, so the decoder
    dates the last event at the crash, not 2^32 ticks (2 s) before it."""
    exe = compiled("dec_epoch.c", "pg")
    r = run_program([exe, "2.5"], tmp_path / "run", env={"FUNTRACE_GEN_MS": "0"}, timeout=60)
    assert r.core is not None, r.stderr[-2000:]
    crash_ns = int(re.search(r"crash_at (\d+)", r.stdout).group(1))
    out = tmp_path / "gdb.raw"
    g = run_gdb(f"funtrace save {out}", target=[exe, r.core], cwd=tmp_path)
    assert g.returncode == 0, g.stderr[-3000:]
    [t] = [t for t in rawfile.parse(out).threads if t.entries]
    assert t.flags & rawfile.TSF["TSC_HI"] and t.tsc_hi is not None, t.flags
    d = subprocess.run([str(DECODE), str(out), "--text"], capture_output=True, text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    shown = last_event_ns(d.stdout)
    assert -100_000_000 < shown - crash_ns < 100_000_000, shown - crash_ns
