"""bench/run --quick produces every table of BENCHMARKS.md (no timing is asserted:
figures depend on the machine; only that each benchmark ran and produced numbers)."""
import re
import subprocess

import pytest

from conftest import ROOT

NUM = r"[0-9]+(?:\.[0-9]+)?"
STAT = rf"{NUM} \({NUM}–{NUM}\)"  # median (min–max)


@pytest.mark.slow
def test_bench_quick_writes_every_table(tree, tmp_path):
    """The one-command benchmark runs end to end in quick mode and writes the machine
    section, the hot-path table with a measured row per instrumentation mode, the
    targets, thread/dlopen, coreextract-vs-gdb and decoder tables, with figures."""
    out = tmp_path / "B.md"
    r = subprocess.run([str(ROOT / "bench" / "run"), "--quick", "--out", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"wrote {out}" in r.stderr
    md = out.read_text()
    for heading in ("## Machine", "## Hot path: ns per call+return", "### Targets (issue 8)",
                    "### Sampled mode: k", "### Two threads at once", "## Threads and dlopen",
                    "## coreextract vs gdb on a big core", "## Decoder"):
        assert heading in md, heading
    rows = {}  # label -> its first row (the hot-path table comes before the 2-thread one)
    for line in md.splitlines():
        if line.startswith("| "):
            rows.setdefault(line.split(" | ")[0].lstrip("| ").strip("*"), line)
    # every hot-path configuration measured at both depths, with ring bytes
    for label in ("uninstrumented (gcc -O2)", "floor hook, -pg (bench/floor_pg.S)",
                  "funtrace-gcc (-pg), exact", "funtrace-gcc (-pg), FUNTRACE_TIME=sampled",
                  "funtrace-gcc (-pg), funtrace_disable_tracing()",
                  "funtrace-gcc FUNTRACE_INSTR=finstr, exact"):
        row = next((v for k, v in rows.items() if k.startswith(label)), None)
        assert row is not None, label
        assert len(re.findall(STAT, row)) == 2, row
    exact = next(v for k, v in rows.items() if k.startswith("funtrace-gcc (-pg), exact"))
    sampled = next(v for k, v in rows.items() if k.startswith("funtrace-gcc (-pg), FUNTRACE_TIME=sampled"))
    # bytes of ring per call+return: 2 x 16-byte entries exact; 2 x 8 + time words sampled
    assert "| 32.00 |" in exact, exact
    assert re.search(r"\| 1[67]\.[0-9]+ \|", sampled), sampled
    # the other tables have measured figures
    assert re.search(rf"\| pthread_create \+ one call \+ join .*\| {STAT} \| {STAT} \| {NUM} \|", md)
    assert re.search(rf"\| dlopen \+ dlsym \+ call \+ dlclose .*\| {STAT} \| {STAT} \| {NUM} \|", md)
    assert re.search(rf"\| 64 MiB \| {NUM} MiB \| {STAT} \| {STAT} \| {NUM} MiB \| {STAT} \| {STAT} \| {NUM}× \|", md)
    assert re.search(rf"\| pg, 4 MiB \| on \| {STAT} \| {NUM} \| {NUM} MiB \| [0-9]+ slices \|", md)
    assert "failed" not in md
