"""funtrace-decode on bad, damaged and unusual input: exit codes, one-line
errors, what is recovered.  The damaged files are real raws (a crashed
dec_pattern) cut or altered; every input also goes through the ASan+UBSan
build of the decoder (make SAN=1 funtrace-decode)."""
import re
import struct
import subprocess

import pytest

import rawfile
from conftest import ROOT, run_tool
from dec_util import check_nesting, crash_raw, decode, forest, load, render


@pytest.fixture(scope="session")
def san_decoder(tree):
    r = subprocess.run(["make", "-j2", "SAN=1", "funtrace-decode"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return ROOT / "build-san" / "bin" / "funtrace-decode"


@pytest.fixture(scope="module")
def good_raw(tree, compiled, tmp_path_factory):
    from conftest import run_program
    exe = compiled("dec_pattern.c", "pg")
    d = tmp_path_factory.mktemp("good")
    r = run_program([exe, "crash", "5"], d)
    assert r.core
    raw = d / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", raw, r.core, exe])
    assert ce.returncode == 0, ce.stderr
    return raw


def chunk(magic, payload):
    return magic.encode("latin1") + struct.pack("<Q", len(payload)) + payload


def rebuild(chunks):
    return b"".join(chunk(m, p) for m, p in chunks)


def both(tree, san, path, *args, tmp_path, expect):
    """run the normal and the sanitizer build; same exit code, no sanitizer report"""
    out = []
    for exe, tag in ((tree.tool("funtrace-decode"), "n"), (san, "s")):
        j = tmp_path / f"{path.name}.{tag}.json"
        r = run_tool([exe, *args, "--json", j, path], timeout=120)
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-3000:]
        assert r.returncode == expect, f"{tag}: rc {r.returncode}, stderr: {r.stderr}"
        out.append((r, j))
    return out[0]


def one_line(stderr):
    lines = [l for l in stderr.strip().split("\n") if l]
    assert len(lines) == 1, stderr
    return lines[0]


def test_not_raw_inputs(tree, san_decoder, tmp_path):
    cases = {"empty": b"", "random": bytes(range(256)) * 8, "text": b"hello world, this is not a trace\n" * 20,
             "tiny": b"FUNTR"}
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        r, j = both(tree, san_decoder, p, tmp_path=tmp_path, expect=2)
        line = one_line(r.stderr)
        assert str(p) in line and ("not a funtrace raw file" in line or "empty input" in line), line
        assert not j.exists()
    r = run_tool([tree.tool("funtrace-decode"), tmp_path / "missing.raw"])
    assert r.returncode == 2 and "cannot open" in one_line(r.stderr)
    # endless or non-raw streams are refused from their first bytes, not spooled
    r = run_tool([tree.tool("funtrace-decode"), "--summary", "/dev/zero"], timeout=20)
    assert r.returncode == 2 and "/dev/zero: not a funtrace raw file" in one_line(r.stderr)
    r = run_tool([tree.tool("funtrace-decode"), "--summary", "-"], input="x" * 7 + "\x01" * 100, timeout=20)
    assert r.returncode == 2 and "not a funtrace raw file" in one_line(r.stderr)


def test_bad_arguments(tree, good_raw):
    dec = tree.tool("funtrace-decode")
    for args in ([], [good_raw, good_raw], ["--generations", "0", good_raw], ["--bogus", good_raw],
                 ["-n", "x", good_raw], ["--substitute-path", "nonsense", good_raw], ["--json"]):
        r = run_tool([dec, *args])
        assert r.returncode == 2, (args, r.stderr)
        assert "funtrace-decode:" in one_line(r.stderr)
    r = run_tool([dec, "--json", "/nonexistent-dir/x.json", good_raw])
    assert r.returncode == 4 and "cannot write /nonexistent-dir/x.json" in one_line(r.stderr)
    r = run_tool([dec, "--help"])
    assert r.returncode == 0 and "exit status" in r.stdout and "--substitute-path" in r.stdout


def test_good_raw_clean_under_sanitizers(tree, san_decoder, good_raw, tmp_path):
    r, j = both(tree, san_decoder, good_raw, "--text", "--summary", tmp_path=tmp_path, expect=0)
    check_nesting(load(j))
    assert "crash_here" in r.stdout


def test_truncated_raw(tree, san_decoder, good_raw, tmp_path):
    data = good_raw.read_bytes()
    chunks = rawfile.chunks(data)
    # cut in the middle of the ring: the older half of the events survives
    off, best = 0, 0
    for m, p in chunks:
        if m in ("TRACEBUF", "TRACEE08") and len(p) > best:  # the main thread's ring
            best = len(p)
            cut = off + 16 + (len(p) // 2 // 16) * 16 + 7
        off += 16 + len(p)
    t = tmp_path / "cut.raw"
    t.write_bytes(data[:cut])
    r, j = both(tree, san_decoder, t, "--summary", tmp_path=tmp_path, expect=3)
    assert "truncated" in r.stderr and "incomplete or damaged" in r.stderr
    assert "the raw file is truncated" in r.stdout
    tr = load(j)
    check_nesting(tr)
    lines = render(forest(tr.slices[tr.pid]))
    assert lines[0] == "main" and "  run" in lines and len(lines) > 5
    # no ENDTRACE only
    t2 = tmp_path / "noend.raw"
    t2.write_bytes(rebuild([c for c in chunks if c[0] != "ENDTRACE"]))
    r, j = both(tree, san_decoder, t2, tmp_path=tmp_path, expect=3)
    assert render(forest(load(j).slices[tr.pid]))[-1] == "  crash_here"


def test_corrupt_chunks(tree, san_decoder, good_raw, tmp_path):
    chunks = rawfile.chunks(good_raw.read_bytes())
    # a corrupt chunk header after the thread's ring: the ring is kept
    idx = [m for m, _ in chunks].index("FINSTACK")
    data = rebuild(chunks[:idx]) + b"\xff" * 16 + rebuild(chunks[idx:])
    p = tmp_path / "corrupt.raw"
    p.write_bytes(data)
    r, j = both(tree, san_decoder, p, tmp_path=tmp_path, expect=3)
    assert "corrupt chunk header" in r.stderr
    tr = load(j)
    check_nesting(tr)
    assert "crash_here" in {s.name for s in tr.slices[tr.pid]}
    # bad lengths of known chunks, an absurd FINSTACK frame count, an unknown chunk
    bad = []
    for m, pl in chunks:
        if m == "GENERATN":
            pl = pl + b"\0" * 5
        elif m == "FINSTACK":
            pl = pl[:8] + struct.pack("<I", 1 << 30) + pl[12:]
        elif m == "THRDSTAT":
            bad.append(("NEWCHUNK", b"x" * 24))
        bad.append((m, pl))
    p = tmp_path / "badlen.raw"
    p.write_bytes(rebuild(bad))
    r, j = both(tree, san_decoder, p, tmp_path=tmp_path, expect=3)
    assert "GENERATN" in r.stderr and "FINSTACK" in r.stderr and 'unknown chunk "NEWCHUNK"' in r.stderr
    check_nesting(load(j))
    # an unknown chunk alone is not a problem
    p = tmp_path / "unknown.raw"
    p.write_bytes(rebuild(chunks[:1] + [("ZZZZZZZZ", b"abc")] + chunks[1:]))
    r, j = both(tree, san_decoder, p, tmp_path=tmp_path, expect=0)
    assert 'unknown chunk "ZZZZZZZZ"' in r.stderr


def test_odd_events(tree, san_decoder, good_raw, tmp_path):
    """events out of order and addresses in no module decode; names are never empty"""
    chunks = rawfile.chunks(good_raw.read_bytes())
    out = []
    for m, p in chunks:
        if m == "TRACEBUF" and len(p) >= 16 * 10:
            n = len(p) // 16
            ents = [list(struct.unpack_from("<QQ", p, 16 * i)) for i in range(n)]
            ents[4][1] = ents[2][1] - 100000                          # out of order
            ents.insert(6, [0x1234, ents[5][1] + 1])                  # a call at 0x1234
            ents.insert(7, [0x1234 | (1 << 63), ents[5][1] + 2])     # and its return
            p = b"".join(struct.pack("<QQ", w, t) for w, t in ents)
        if m == "TRACEE08" and len(p) >= 8 * 10:  # FT_FMT_EXACT8 (rawfile.expand_e8)
            its = list(struct.unpack(f"<{len(p) // 8}Q", p))
            ev = [i for i, w in enumerate(its) if w and w & 3 != 3]
            lo = lambda w: w >> 32
            its[ev[4]] = ((lo(its[ev[2]]) - 100000) % 2**32) << 32 | (its[ev[4]] & 0xFFFFFFFF)  # out of order
            ahi = [w >> 32 for w in its[:ev[5] + 1] if w & 3 == 3 and (w >> 2) & 63 == 1][-1]
            t5 = lo(its[ev[5]])
            its[ev[5] + 1:ev[5] + 1] = [rawfile.e8_escape(1, 0),                 # a call at 0x1234
                                        (t5 + 1) << 32 | 0x1234, (t5 + 2) << 32 | 0x1234 | 1,  # and its return
                                        rawfile.e8_escape(1, ahi)]
            p = struct.pack(f"<{len(its)}Q", *its)
        out.append((m, p))
    p = tmp_path / "odd.raw"
    p.write_bytes(rebuild(out))
    r, j = both(tree, san_decoder, p, "--summary", tmp_path=tmp_path, expect=0)
    tr = load(j)
    check_nesting(tr)
    names = [s.name for s in tr.slices[tr.pid]]
    assert "0x1234" in names and all(names)
    assert "out-of-order timestamps" in r.stdout


# found by `make fuzz-decoder` (UBSan: signed overflow adding up durations in --report):
# an original-format ring of garbage whose times are ~2^62 ticks apart
HUGE_TIMES_RAW = ("VFJBQ0VCVUZUUvPHIk0A8////wAAABhDAAAiCj4AGQAAAAATQ0VFr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+v"
                  "r6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr6+vr68wuCJNGEP/"
                  "AwAAAAAiCkUAGQAAAAATAAEA")


def test_huge_times_saturate_in_report_and_flamegraph(tree, san_decoder, tmp_path):
    """A damaged ring whose times add up past 2^63 ns: --report and --flamegraph sum
    durations without overflowing (no sanitizer report, every figure non-negative), and
    the damage is the exit code (3)."""
    import base64
    p = tmp_path / "huge.raw"
    p.write_bytes(base64.b64decode(HUGE_TIMES_RAW))
    fl = tmp_path / "f.folded"
    r, _ = both(tree, san_decoder, p, "--report", "--flamegraph", fl, tmp_path=tmp_path, expect=3)
    rows = [l for l in r.stdout.splitlines() if re.match(r"\s+\d+\s", l)]
    assert rows and not any("-" in l.split("0x")[0] for l in rows), r.stdout
    assert all(int(l.rsplit(" ", 1)[1]) >= 0 for l in fl.read_text().splitlines()), fl.read_text()


def test_no_events(tree, san_decoder, good_raw, tmp_path):
    chunks = rawfile.chunks(good_raw.read_bytes())
    p = tmp_path / "empty-rings.raw"
    p.write_bytes(rebuild([(m, b"" if m in ("TRACEBUF", "TRACEE08") else pl) for m, pl in chunks]))
    r, j = both(tree, san_decoder, p, tmp_path=tmp_path, expect=1)
    assert "no trace events" in one_line(r.stderr) and not j.exists()


@pytest.mark.slow
def test_sanitizers_on_real_traces(tree, san_decoder, compiled, run_crash, tmp_path):
    """generations, wrapped rings, exceptions and sampled time under ASan+UBSan"""
    raws = [crash_raw(tree, run_crash, compiled("dec_gens.c", "pg"), env={"FUNTRACE_GEN_MS": "10"}, name="g"),
            crash_raw(tree, run_crash, compiled("dec_exc.cc", "pg"), name="e"),
            crash_raw(tree, run_crash, compiled("dec_pattern.c", "pg"), ["crash", "50"], name="s",
                      env={"FUNTRACE_TIME": "sampled", "FUNTRACE_SAMPLE_K": "3"}),
            # loose sampled brackets (upper bounds), a mutual-recursion final stack (cycle folding)
            crash_raw(tree, run_crash, compiled("dec_sleepy.c", "pg"), name="l", env={"FUNTRACE_TIME": "sampled"}),
            crash_raw(tree, run_crash, compiled("dec_deep.c", "pg"), ["mutual"], name="m")]
    for raw in raws:
        r, j = both(tree, san_decoder, raw, "--text", "--summary", "--generations", "4", tmp_path=tmp_path, expect=0)
        check_nesting(load(j))


def test_fuzz_seeds_decode(tree, san_decoder, tmp_path):
    """decoder/fuzz/corpus, the seeds `make fuzz-decoder` starts from: real raws (kernel cores of the
    examples with 2 KiB rings, coreextract) in exact and sampled time, an exception escaping to
    abort() with its final stack, and the original funtrace's format.  Each decodes cleanly (also
    under ASan+UBSan) into slices, the same with --reference-replay: the fuzzer starts from inputs
    that reach the whole pipeline."""
    seeds = sorted(p for p in (ROOT / "decoder" / "fuzz" / "corpus").iterdir() if p.is_file())
    assert {p.name for p in seeds} >= {"crash-exact", "crash-sampled", "abort-exact", "abort-sampled",
                                       "crash-original-format"}
    for seed in seeds:
        assert seed.stat().st_size <= 65536  # make fuzz-decoder's -max_len
        r, j = both(tree, san_decoder, seed, "--no-symbols", "--text", "--summary", tmp_path=tmp_path, expect=0)
        ref = tmp_path / f"{seed.name}.ref.json"
        rr = run_tool([tree.tool("funtrace-decode"), "--no-symbols", "--reference-replay", "--json", ref, seed])
        assert rr.returncode == 0, rr.stderr
        assert ref.read_bytes() == j.read_bytes(), seed.name
        t = load(j)
        check_nesting(t)
        assert sum(len(v) for v in t.slices.values()) > 10, seed.name


# ---- outputs: never a partial file, never two outputs on one stream --------------

def test_json_write_error_leaves_no_file(tree, compiled, tmp_path):
    """a write error (here a file size limit, as a full disk would do) gives exit 4 and one
    line; neither a truncated FILE nor the temporary FILE.tmp.PID is left behind, and an
    existing FILE is kept as it was"""
    from conftest import run_program
    exe = compiled("dec_pattern.c", "pg")
    r = run_program([exe, "crash", "300"], tmp_path / "big")
    raw = tmp_path / "big" / "trace.raw"
    assert run_tool([tree.tool("coreextract"), "-o", raw, r.core, exe]).returncode == 0
    dec = tree.tool("funtrace-decode")
    full = tmp_path / "full.json"
    assert run_tool([dec, "--json", full, raw]).returncode == 0
    assert full.stat().st_size > 2 * 40 * 1024  # well over the limit below
    out = tmp_path / "out"
    out.mkdir()
    j = out / "t.json"
    for trap in ("trap '' XFSZ; ", ""):  # SIGXFSZ ignored by the caller, or left to the decoder
        r = run_tool(["bash", "-c", f'{trap}ulimit -f 40; exec "$0" --json "$1" "$2"', dec, j, raw])
        assert r.returncode == 4, (trap, r.returncode, r.stderr)
        assert f"cannot write {j}: File too large" in one_line(r.stderr)
        assert list(out.iterdir()) == []
    j.write_text("previous contents\n")
    r = run_tool(["bash", "-c", 'ulimit -f 40; exec "$0" --json "$1" "$2"', dec, j, raw])
    assert r.returncode == 4 and j.read_text() == "previous contents\n"
    assert [p.name for p in out.iterdir()] == ["t.json"]
    # without the limit: replaced as a whole
    r = run_tool([dec, "--json", j, raw])
    assert r.returncode == 0 and j.read_bytes() == full.read_bytes()
    assert [p.name for p in out.iterdir()] == ["t.json"]


def test_json_to_stdout_with_text_refused(tree, good_raw, tmp_path):
    """--json - and --text/--summary would mix JSON and text on stdout"""
    for view in ("--text", "--summary"):
        r = run_tool([tree.tool("funtrace-decode"), "--json", "-", view, good_raw], cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == ""
        line = one_line(r.stderr)
        assert "--json -" in line and view in line
    r = run_tool([tree.tool("funtrace-decode"), "--json", "-", good_raw], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith('{"traceEvents":[') and r.stdout.rstrip().endswith("}")
    import json
    json.loads(r.stdout)
    assert list(tmp_path.iterdir()) == []


def test_text_escapes_garbage_names(tree, san_decoder, good_raw, tmp_path):
    """thread names, the command line and module names from a damaged raw are shown with
    their control and invalid bytes as \\xNN: never sent to the terminal as they are"""
    data = good_raw.read_bytes()
    name = b"dec_pattern-pg"
    bad = b"dec\xff\x1b[1m\x07e\xc3n-p"
    assert len(bad) == len(name) and data.count(name) >= 3
    p = tmp_path / "garbage.raw"
    p.write_bytes(data.replace(name, bad))
    for exe in (tree.tool("funtrace-decode"), san_decoder):
        r = run_tool([exe, "--text", "--summary", "--no-symbols", p], text=False)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        out.decode("utf-8")  # valid UTF-8
        assert not any(b < 0x20 and b not in b"\n" or b == 0x7f for b in out), out
        esc = rb"dec\xff\x1b[1m\x07e\xc3n-p"
        assert out.count(esc) >= 4, out  # command line, thread, summary row, function names
        assert b'thread %d "' % int(out.split(b"\nthread ")[1].split()[0]) + esc + b'" [crashed]' in out
        assert esc + b"+0x" in out  # names of the module's functions (no symbols)
    # printable UTF-8 stays as it is
    q = tmp_path / "utf8.raw"
    q.write_bytes(data.replace(name, "dec_pättern-p".encode()))
    r = run_tool([tree.tool("funtrace-decode"), "--text", q])
    assert r.returncode == 0 and 'thread' in r.stdout and '"dec_pättern-p" [crashed]' in r.stdout


def header_fields(payload, **kw):
    """FTHEADER payload with fields replaced (struct ft_raw_header offsets)"""
    offs = {"flags": 12, "nthreads": 88, "nthreads_lost": 92}
    b = bytearray(payload)
    for k, v in kw.items():
        struct.pack_into("<I", b, offs[k], v)
    return bytes(b)


def test_partial_input_without_events(tree, san_decoder, good_raw, compiled, tmp_path):
    """a producer that could not read any thread record (a core cut short before the
    registry): exit 3 and one line saying why nothing was decoded; --summary and --text say
    what is missing; a complete input without events stays exit 1"""
    chunks = rawfile.chunks(good_raw.read_bytes())
    nthr = sum(m == "THRDSTAT" for m, _ in chunks)
    kept = [(m, header_fields(pl, flags=struct.unpack_from("<I", pl, 12)[0] | 1, nthreads=0, nthreads_lost=nthr)
             if m == "FTHEADER" else pl)
            for m, pl in chunks if m not in ("THREADID", "THRDSTAT", "TRACEBUF", "TRACEW08", "TRACEE08", "TRACES04")]
    p = tmp_path / "lost.raw"
    p.write_bytes(rebuild(kept))
    r, j = both(tree, san_decoder, p, "--summary", "--text", tmp_path=tmp_path, expect=3)
    line = one_line(r.stderr)
    assert "no trace events could be recovered" in line and "PARTIAL" in line, line
    assert f"{nthr} of the process's {nthr} thread records could not be read" in line
    assert not j.exists()
    summ, _, text = r.stdout.partition("\nfuntrace: ")
    assert re.search(r"^problems: .*PARTIAL", summ, re.M) and f"{nthr} of the process's {nthr} thread" in summ
    assert f"threads:     0 (header: 0, lost {nthr})" in summ
    assert "last event: none" in text and re.search(r"^  incomplete: .*PARTIAL", text, re.M)
    assert f"{nthr} of the process's {nthr} thread records" in text
    # the real thing: a core cut short before the thread registry, read by coreextract
    d = tmp_path / "cut"
    d.mkdir()
    cut = d / "core"
    cut.write_bytes((good_raw.parent / "core").read_bytes()[:64 * 1024])
    raw = d / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", raw, cut, compiled("dec_pattern.c", "pg")])
    assert ce.returncode == 3 and raw.exists(), ce.stderr
    hdr = rawfile.parse(raw).header
    assert hdr["nthreads"] == 0 and hdr["nthreads_lost"] >= 1 and hdr["flags"] & 1, hdr
    r = run_tool([tree.tool("funtrace-decode"), "--summary", raw])
    assert r.returncode == 3, r.stderr
    line = one_line(r.stderr)
    assert "no trace events could be recovered" in line and "thread records could not be read" in line
    assert "PARTIAL" in r.stdout and "thread records could not be read" in r.stdout


def test_help_and_readme_agree(tree):
    """--help and the README section document the same exit codes; the README quotes no
    performance figures of its own (BENCHMARKS.md has the measured ones)"""
    from conftest import ROOT
    h = run_tool([tree.tool("funtrace-decode"), "--help"]).stdout
    text = (ROOT / "README.md").read_text()
    sec = text[text.index("## Reference: funtrace-decode"):text.index("## Reference: funtrace-oomwatch")]
    status = sec[sec.index("Exit status:"):]
    status = " ".join(status[:status.index("\n\n")].split())
    helpst = " ".join(h[h.index("exit status:"):].split())
    for code, phrases in {0: ["decoded"], 1: ["complete raw file", "no JSON written"],
                          2: ["not a raw file", "bad arguments", "out of memory", "truncated while it was being read"],
                          3: ["damaged or incomplete", "PARTIAL", "lost thread", "missing rings", "no JSON"],
                          4: ["could not be written", "no partial JSON"]}.items():
        for p in phrases:
            assert p in helpst, (code, p)
            assert p in status, (code, p)
        assert f"**{code}**" in status and f" {code} " in helpst
    limits = sec[sec.index("**Limits and costs.**"):]
    assert "BENCHMARKS.md" in limits
    assert not re.search(r"\d+(\.\d+)? ?(MB|MiB|GB|ms)\b|\d+(\.\d+)? s\b", limits), limits


def test_resident_memory_does_not_grow_with_the_raw(tree, compiled, tmp_path):
    """memory stays O(one generation), not O(raw): decoding a ~96 MiB one-thread raw (30
    rounds of 200000 calls, a 12 ms sleep after each, 10 ms generations: at most about a
    round per generation) stays far below the raw's size in peak resident memory (as
    getrusage counts it: file pages mapped into the process would count too).  On a slow
    machine the run outlasts the 64 generation records and the older part of the ring is
    cut at estimated boundaries (the next test); either way the bound holds."""
    from conftest import run_program
    exe = compiled("dec_many.c", "pg")
    r = run_program([exe, "30", "200000", "12"], tmp_path / "run",
                    env={"FUNTRACE_BUF": str(128 << 20), "FUNTRACE_GEN_MS": "10"}, want_core=False)
    assert r.returncode == 0 and r.stdout == "done\n", r.stderr
    raw = r.dir / "funtrace.raw"
    size = raw.stat().st_size
    assert size > 90 * 2**20
    # the decoder as the only child of a process that reports its children's peak RSS
    probe = ("import resource, subprocess, sys\n"
             "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
             "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = subprocess.run(["/usr/bin/python3", "-c", probe, tree.tool("funtrace-decode"), "--json", "/dev/null",
                        "--no-symbols", "-q", raw], capture_output=True, text=True, timeout=300)
    rc, maxrss_kib = map(int, p.stdout.split())
    assert rc == 0, p.stderr
    assert maxrss_kib * 1024 < size / 3, (maxrss_kib, size)


def test_generations_older_than_the_records_are_estimated(tree, san_decoder, compiled, tmp_path):
    """The runtime keeps 64 generation records; a ring that holds more history has a part
    older than the oldest record.  When it is big, the decoder cuts it where its
    generations began (every measured period back from the oldest record) instead of
    holding it all in memory as one batch: 80 rounds of 20000 calls with a 12 ms sleep
    after each and 10 ms generations last longer than 80 generations whatever the machine,
    so more than 26 rounds (> 2^18 items) are older than the records.  The parts are
    numbered down from the oldest record without a gap, marked estimated in --summary,
    JSON and Perfetto, and no call is lost or counted twice."""
    from conftest import run_program
    exe = compiled("dec_many.c", "pg")
    r = run_program([exe, "80", "20000", "12"], tmp_path / "run",
                    env={"FUNTRACE_BUF": str(32 << 20), "FUNTRACE_GEN_MS": "10"}, want_core=False)
    assert r.returncode == 0 and r.stdout == "done\n", r.stderr
    raw = r.dir / "funtrace.raw"
    dec = tree.tool("funtrace-decode")
    s = subprocess.run([dec, "--summary", "--no-symbols", raw], capture_output=True, text=True, timeout=120)
    assert s.returncode == 0, s.stderr
    m = re.search(r"generations: 64 recorded, current #(\d+), every 10 ms; (\d+) older parts? estimated", s.stdout)
    assert m and int(m.group(2)) >= 2, s.stdout
    est = re.findall(r"^  #(\d+)(?:\.\.#(\d+))? +estimated start ~", s.stdout, re.M)
    rec = [int(g) for g in re.findall(r"^  #(\d+) +start \d", s.stdout, re.M)]
    assert len(est) == int(m.group(2)) and len(rec) == 64, s.stdout
    spans = [(int(a), int(b or a)) for a, b in est]
    # contiguous, oldest first, up to the oldest record
    assert all(spans[i][1] + 1 == spans[i + 1][0] for i in range(len(spans) - 1)), spans
    assert spans[-1][1] + 1 == rec[0] == int(m.group(1)) - 63, (spans, rec)
    # every call once: 80 x 20000 calls of the leaf
    rep = subprocess.run([dec, "--report", "--no-symbols", raw], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert re.search(r"^ +1600000 ", rep.stdout, re.M), rep.stdout
    # the views name them
    j = tmp_path / "t.json"
    pf = tmp_path / "t.pftrace"
    d = subprocess.run([dec, "--no-symbols", "-q", "--json", j, "--perfetto", pf, raw], capture_output=True,
                       text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    names = re.findall(r'"name":"(generations? [^"]*)"', j.read_text())
    assert names[:len(spans)] == [f"generation {a} (estimated)" if a == b else
                                  f"generations {a}..{b} (estimated)" for a, b in spans], names[:20]
    assert names[len(spans)] == f"generation {rec[0]}"
    assert b"(estimated)" in pf.read_bytes()
    # the estimation under ASan+UBSan: the same output
    _, jn = both(tree, san_decoder, raw, "--no-symbols", "-q", tmp_path=tmp_path, expect=0)
    assert jn.read_bytes() == (tmp_path / f"{raw.name}.s.json").read_bytes()


def test_wrong_binary_does_not_make_the_decode_quadratic(tree, compiled, tmp_path):
    """An executable rebuilt since the trace was taken: the decoder warns about the
    build-id, and the names it finds make no return match its call.  Every such return
    is an orphan; past the 65536 frames the discovery pass keeps for the ring's start, the
    emission replay used to ignore them, so 1M calls piled up on its stack and every
    later return searched it (hours).  It now drops what is open at an orphan return, as
    discovery does, and decodes in about the time of a good raw."""
    import shutil
    from conftest import run_program
    prog = tmp_path / "prog"
    shutil.copy(compiled("dec_many.c", "pg"), prog)
    r = run_program([prog, "1", "1000000", "0"], tmp_path / "run", env={"FUNTRACE_BUF": str(32 << 20)},
                    want_core=False)
    assert r.returncode == 0 and r.stdout == "done\n", r.stderr
    # "rebuilt since": 4096 functions of ~15 bytes over the old text, so that a call's and
    # its return's addresses fall in different ones
    src = tmp_path / "other.c"
    src.write_text("".join(f"__attribute__((noinline)) int f{i}(int x) {{ return x + {i}; }}\n"
                           for i in range(4096)) +
                   "int main(int c, char **v) { (void)v; return f0(c); }\n")
    subprocess.run(["gcc", "-O0", "-fcf-protection=none", "-o", prog, src], check=True)
    d = subprocess.run([tree.tool("funtrace-decode"), "--json", tmp_path / "t.json", r.dir / "funtrace.raw"],
                       capture_output=True, text=True, timeout=60)
    assert "does not have the traced build-id" in d.stderr, d.stderr
    assert d.returncode in (0, 3), d.stderr
    s = subprocess.run([tree.tool("funtrace-decode"), "--summary", r.dir / "funtrace.raw"], capture_output=True,
                       text=True, timeout=60)
    assert re.search(r"[1-9]\d{5,} orphan returns", s.stdout), s.stdout  # the case it is about
    m = re.search(r"wrote \S+: \d+ threads, (\d+) slices", d.stderr)
    assert m and int(m.group(1)) >= 1000000, d.stderr
    assert (tmp_path / "t.json").read_bytes().rstrip().endswith(b"}")


@pytest.mark.parametrize("time", ["exact", "sampled"])
def test_executable_mapping_of_absurd_size(tree, compiled, run_crash, time, tmp_path):
    """A damaged MAPPINGS record with an executable range of almost 2^64 bytes
    (found by make fuzz-decoder: the decoder tried every 4 GiB of it as the
    address high half of each run of a wrapped ring's oldest items, for
    minutes): decoded at once, into the slices it has without that record."""
    exe = compiled("dec_fibers.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["3000"], env={"FUNTRACE_BUF": "16K", "FUNTRACE_TIME": time})
    chunks = rawfile.chunks(raw.read_bytes())
    path = b"/absurd"
    rec = struct.pack("<QQQII40sII", 0x1000, 2**64 - 0x1000, 0, 5, 0, b"", len(path), 0) + path + b"\0"
    assert [m for m, _ in chunks].count("MAPPINGS") == 1
    bad = tmp_path / "absurd.raw"
    bad.write_bytes(rebuild([(m, p + rec if m == "MAPPINGS" else p) for m, p in chunks]))
    dec = tree.tool("funtrace-decode")
    want = run_tool([dec, "--no-symbols", "--json", tmp_path / "want.json", raw])
    assert want.returncode == 0, want.stderr
    got = run_tool([dec, "--no-symbols", "--json", tmp_path / "got.json", bad], timeout=30)
    assert got.returncode == 0, got.stderr
    # the same slices (their names may now be the huge mapping's offsets)
    shape = lambda t: {tid: [(s.start, s.end, s.args) for s in sl] for tid, sl in t.slices.items()}
    assert shape(load(tmp_path / "got.json")) == shape(load(tmp_path / "want.json"))


def test_input_that_shrinks_while_it_is_read(tree, good_raw, tmp_path):
    """The rings are read through a window of the raw mapped into memory: a raw that another
    program truncates meanwhile makes that read fault (SIGBUS).  The decoder says what
    happened in one line, exits 2 and leaves no output file half-written.  The JSON goes to a
    FIFO, which the decoder opens -- and blocks on until the test opens it -- after the
    discovery replay has read every ring once and before the emission reads them again: the
    raw is truncated right then."""
    import os
    import time
    raw = tmp_path / "trace.raw"
    raw.write_bytes(good_raw.read_bytes())
    fifo, pf = tmp_path / "json.fifo", tmp_path / "out.pftrace"
    os.mkfifo(fifo)
    p = subprocess.Popen([tree.tool("funtrace-decode"), raw, "--json", fifo, "--perfetto", pf],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while open(f"/proc/{p.pid}/syscall").read().split()[0] != "257":  # openat, of the FIFO
            assert p.poll() is None and time.time() < deadline, "the decoder never opened the FIFO"
            time.sleep(0.01)
        os.truncate(raw, 0)
        with open(fifo, "rb") as f:
            f.read()
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2, (p.returncode, err)
    assert one_line(err) == (f"funtrace-decode: {raw}: the file shrank while it was being read (another program "
                             "truncated or rewrote it): decode a copy of it once it is complete")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["json.fifo", "trace.raw"]  # no .tmp of the Perfetto file
