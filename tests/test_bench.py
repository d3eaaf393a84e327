"""bench/run --quick produces every table of BENCHMARKS.md, a MET / NOT MET verdict for every
target that follows from the figure next to it, and the README block; it writes no gmon.out.
No timing is asserted: figures depend on the machine; only that each benchmark ran, produced
numbers, and that the verdicts are computed from them."""
import os
import re
import subprocess
import time

import pytest

from conftest import ROOT

NUM = r"[0-9]+(?:\.[0-9]+)?"
STAT = rf"{NUM} \({NUM}–{NUM}\)"  # median (min–max)
BEGIN, END = "<!-- bench:begin -->\n", "<!-- bench:end -->\n"

# the targets' names as the Targets table starts them
TARGETS = (
    "exact: ≤ 1.00× the floor hook's added ns",
    "exact: ≤ 16 bytes of ring per call+return",
    "sampled: ≤ 8 bytes of ring per call+return",
    "sampled ≤ 3 ns added per call+return",
    "sampled ≥ 3× faster than exact",
    "exact not slower because sampled exists",
    "no shared cache line on the hot path",
    "thread start: pthread_create + one call + join ≤ +3 µs",
    "coreextract ≥ 20× faster than the gdb path",
    "coreextract time not growing with the heap",
    "decoder ≥ 500 MB/s of raw to JSON with symbols",
    "bench/run completes in under 10 minutes",
)


def met_of(ver):
    """MET / NOT MET, or NOISY (...; would be MET): the verdict the figure gives, and
    whether it was withheld because the machine was busy, or because a parity target's
    paired runs straddle its threshold while the median misses it (would be NOT MET)"""
    m = re.match(r"NOISY \(load .* on [0-9]+ CPUs; would be (MET|NOT MET)\)$", ver)
    if m:
        return m.group(1) == "MET", True
    if re.match(r"NOISY \([-a-z ]+: the middle half of the paired runs straddles [0-9.]+; "
                r"would be NOT MET by the median\)$", ver):
        return False, True
    assert ver in ("MET", "NOT MET"), ver
    return ver == "MET", False


def nums(text):
    return [float(x) for x in re.findall(NUM, text)]


def gmon_files_since(t0, *dirs):
    found = []
    for d in dirs:
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = [x for x in dirnames if x != ".git"]
            p = os.path.join(dirpath, "gmon.out")
            if "gmon.out" in filenames and os.stat(p).st_mtime >= t0:
                found.append(p)
    return found


@pytest.mark.slow
def test_bench_quick_writes_every_table(tree, tmp_path):
    """The one-command benchmark runs end to end in quick mode and writes the machine
    section, the Targets table with a verdict per target that agrees with its figure, the
    hot-path table with a measured row per instrumentation mode (no prototype rows left),
    the k sweep, thread/dlopen, coreextract-vs-gdb and decoder tables; it rewrites only the
    marked block of the README it is given, and no process it runs writes gmon.out."""
    out = tmp_path / "B.md"
    readme = tmp_path / "README.md"
    before = (ROOT / "README.md").read_text()
    readme.write_text(before)
    t0 = time.time() - 1
    r = subprocess.run([str(ROOT / "bench" / "run"), "--quick", "--out", str(out),
                        "--readme", str(readme)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"wrote {out}" in r.stderr
    # the floor binaries are -pg without the runtime: they must not leave gmon.out anywhere
    assert gmon_files_since(t0, ROOT, tmp_path) == []
    md = out.read_text()
    for heading in ("## Machine", "## Targets", "## Hot path: ns per call+return",
                    "### Sampled mode: k", "### Two threads at once", "## Threads and dlopen",
                    "## coreextract vs gdb on a big core", "## Decoder"):
        assert heading in md, heading
    assert "proposed" not in md and "proto" not in md
    assert "failed" not in md

    # --- targets: every one present, with a figure and a verdict computed from it
    section = md.split("## Targets", 1)[1].split("\n## ", 1)[0]
    trows = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| target") and not line.startswith("| ---"):
            name, fig, ver = [c.strip() for c in line.strip("|").split(" | ")]
            trows[name] = (fig, ver.strip("*"))
    assert len(trows) == len(TARGETS), list(trows)
    got = {}
    for t in TARGETS:
        name = next((k for k in trows if k.startswith(t)), None)
        assert name is not None, t
        fig, ver = trows[name]
        met, _noisy = met_of(ver)
        assert nums(fig), (t, fig)
        got[t] = (fig, met, ver == "MET")
    n_met = sum(v for _, _, v in got.values())
    assert f"{n_met} of {len(TARGETS)} met" in section.replace("\n", " ")
    fig, met, _ = got["sampled ≤ 3 ns added per call+return"]
    per_mode = [float(x) for x in re.findall(rf"(?:-pg|finstr|clang) ({NUM})", fig)]
    assert len(per_mode) >= 2, fig
    assert met == (max(per_mode) <= 3), fig
    # ... and what hooks that only return cost, per instrumentation (the part no hook can save)
    empty = re.search(rf"hooks that only return cost ({NUM}) \(-pg\), ({NUM}) \(finstr\)", fig)
    assert empty, fig
    fig, met, _ = got["exact: ≤ 16 bytes of ring per call+return"]
    b = [float(x) for x in re.findall(rf"(?:-pg|finstr) ({NUM})", fig)]
    assert len(b) == 2 and all(16 <= x < 16.5 for x in b) and met == (max(b) <= 16), fig
    fig, met, _ = got["sampled: ≤ 8 bytes of ring per call+return"]
    assert re.match(rf"-pg 8\.0[0-9]", fig) and met == (float(nums(fig)[0]) <= 8), fig
    fig, met, _ = got["sampled ≥ 3× faster than exact"]
    assert met == (float(re.match(rf"(-?{NUM})", fig).group(1)) >= 3), fig  # (negative on a busy machine)
    fig, met, _ = got["exact: ≤ 1.00× the floor hook's added ns"]
    ratios = [float(x) for x in re.findall(rf"(?:-pg|finstr|clang) ({NUM}) \(", fig)]
    assert len(ratios) >= 2 and met == (max(ratios) <= 1.00), fig
    fig, met, _ = got["no shared cache line on the hot path"]
    r = [float(x) for x in re.findall(rf"(?:exact|sampled) ({NUM}) \(", fig)]
    assert len(r) == 2 and "the floor itself" in fig and met == (max(r) <= 1.15), fig
    fig, met, _ = got["thread start: pthread_create + one call + join ≤ +3 µs"]
    assert met == (float(re.match(rf"\+(-?{NUM})", fig).group(1)) <= 3), fig
    fig, met, _ = got["coreextract ≥ 20× faster than the gdb path"]
    assert met == (nums(fig)[0] >= 20), fig
    fig, met, _ = got["decoder ≥ 500 MB/s of raw to JSON with symbols"]
    mbs = [float(x) for x in re.findall(rf"(?:pg|finstr|sampled) ({NUM})", fig)]
    assert len(mbs) == 3 and met == (min(mbs) >= 500), fig
    # the load of every section is recorded
    assert re.search(r"\| 1-min load per section \(before→after\) \| hot [0-9.]+→[0-9.]+; mt ", md), md
    # ... and the CPU's speed (a VM's host can slow it without the load showing)
    speed = re.search(r"\| CPU speed per section \(bench/speedprobe[^|]*\| hot ([0-9.]+)→([0-9.]+); mt ", md)
    assert speed and all(float(x) >= 1.0 for x in speed.groups()), md
    stores = re.search(r"\| store chain per section \(bench/speedprobe[^|]*\| hot ([0-9.]+)→([0-9.]+); mt ", md)
    assert stores and all(float(x) >= 1.0 for x in stores.groups()), md

    # --- hot path: every configuration measured at both depths, with ring bytes
    rows = {}  # label -> its first row (the hot-path table comes before the 2-thread one)
    for line in md.splitlines():
        if line.startswith("| "):
            rows.setdefault(line.split(" | ")[0].lstrip("| ").strip("*"), line)
    for label in ("uninstrumented (gcc -O2)", "floor hook, -pg (bench/floor_pg.S)",
                  "floor hook, -pg, counter instead of rdtsc",
                  "funtrace-gcc (-pg), exact", "funtrace-gcc (-pg), FUNTRACE_TIME=sampled (k = 64, default)",
                  "funtrace-gcc (-pg), funtrace_disable_tracing()",
                  "control: -pg exact, runtime hook minus the sampled-mode test",
                  "funtrace-gcc FUNTRACE_INSTR=finstr, exact",
                  "control: finstr exact, runtime hook minus the sampled-mode test",
                  "empty hooks (`ret` only), -pg: the instrumentation alone",
                  "empty hooks (`ret` only), gcc -finstrument-functions"):
        row = next((v for k, v in rows.items() if k.startswith(label)), None)
        assert row is not None, label
        assert len(re.findall(STAT, row)) == 2, row
    exact = next(v for k, v in rows.items() if k.startswith("funtrace-gcc (-pg), exact"))
    sampled = next(v for k, v in rows.items() if k.startswith("funtrace-gcc (-pg), FUNTRACE_TIME=sampled"))
    # bytes of ring per call+return: 2 x 8-byte entries exact; 2 x 4-byte items sampled
    assert re.search(r"\| 16\.0[0-9] \|", exact), exact
    assert re.search(r"\| 8\.0[0-9] \|", sampled), sampled
    # k sweep: 8 bytes per call+return whatever k (a stamp replaces a return item)
    for k, b in ((4, "8\\.0"), (16, "8\\.0"), (32, "8\\.0"), (64, "8\\.0"), (128, "8\\.0")):
        assert re.search(rf"^\| \**{k}( \(default\))?\** \| {NUM} \| {NUM} \| {b}[0-9]* \| {NUM}× \| [0-9]+ \|$",
                         md, re.M), k
    # the other tables have measured figures
    assert re.search(rf"\| pthread_create \+ one call \+ join .*\| {STAT} \| {STAT} \| {NUM} \|", md)
    assert re.search(rf"\| dlopen \+ dlsym \+ call \+ dlclose .*\| {STAT} \| {STAT} \| {NUM} \|", md)
    for heap in (16, 64):
        assert re.search(rf"\| {heap} MiB \| {NUM} MiB \| {STAT} \| {STAT} \| {NUM} MiB \| {STAT} \| {STAT} \| {NUM}× \|", md)
    for v in ("pg", "finstr", "sampled"):
        assert re.search(rf"\| {v}, {NUM} MiB \| JSON, on \| {STAT} \| {NUM} \| {NUM} MiB \| [0-9]+ slices \|", md), v
        assert re.search(rf"\| {v}, {NUM} MiB \| Perfetto, on \| {STAT} \| {NUM} \| {NUM} MiB \| [0-9]+ slices \(as the JSON\) \|",
                         md), v

    # --- README: only the marked block changed; it quotes this run's headline figures
    after = readme.read_text()
    head, rest = before.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    assert after.startswith(head + BEGIN) and after.endswith(END + tail)
    block = after[len(head + BEGIN):len(after) - len(END + tail)]
    assert "quick smoke run" in block
    assert "**Exact or sampled?**" in block
    assert re.search(rf"{NUM}× the history per MiB of ring", block)
    assert f"({n_met} of {len(TARGETS)} targets met)" in block


def test_bench_refuses_readme_without_markers(tmp_path):
    """A README without the bench:begin/bench:end block is refused before anything runs,
    with one line on stderr, exit status 2, and the file untouched."""
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\nno block here\n<!-- bench:end -->\n")
    r = subprocess.run([str(ROOT / "bench" / "run"), "--quick", "--out", str(tmp_path / "B.md"),
                        "--readme", str(readme)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "bench:begin" in r.stderr, r.stderr
    assert readme.read_text() == "# x\n\nno block here\n<!-- bench:end -->\n"
    assert not (tmp_path / "B.md").exists()
