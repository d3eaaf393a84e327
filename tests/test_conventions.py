"""What every funtrace program shares: --version (one line: the project
version and the FORMAT versions), one wording for usage errors, a hint with
the next step when a core is given to the decoder or a raw to coreextract,
man pages generated from --help and installed by make install, progress on a
terminal for long runs, and a decoder that writes nothing into the current
directory unless asked to."""
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_program, run_tool

PROGRAMS = ["coreextract", "funtrace-decode", "funtrace-oomwatch", "funtrace-sched", "funtrace-count",
            "funtrace-asmfilter", "funtrace-instrcheck"]
# programs with options that take a value (getopt): the missing-value wording
SHORT_WITH_VALUE = {"coreextract": "-o", "funtrace-decode": "-j", "funtrace-oomwatch": "-o", "funtrace-sched": "-t"}
WRAPPERS = ["funtrace-gcc", "funtrace-g++", "funtrace-clang", "funtrace-clang++"]


def versions():
    """the project version (cli/build.mk) and the ABI/raw versions (the ABI header)"""
    mk = (ROOT / "cli" / "build.mk").read_text()
    ver = re.search(r"^FT_VERSION := (\S+)$", mk, re.M).group(1)
    abi = (ROOT / "runtime" / "include" / "funtrace_abi.h").read_text()
    a = re.search(r"#define FT_ABI_VERSION (\d+)u", abi).group(1)
    r = re.search(r"#define FT_RAW_VERSION (\d+)u", abi).group(1)
    return ver, a, r


def version_line(prog):
    ver, a, r = versions()
    return f"{prog} (funtrace) {ver}; FORMAT: ABI {a}, raw {r}"


def test_version_everywhere(tree):
    for p in PROGRAMS:
        r = run_tool([tree.tool(p), "--version"])
        assert r.returncode == 0 and r.stdout == version_line(p) + "\n" and r.stderr == "", (p, r)
        r = run_tool([tree.tool(p), "-V"])
        assert r.returncode == 0 and r.stdout == version_line(p) + "\n", (p, r)
    for w in WRAPPERS:
        if "clang" in w and not Path("/usr/bin/clang").exists():
            continue
        r = run_tool([tree.tool(w), "--funtrace-version"])
        assert r.returncode == 0 and r.stdout == version_line(w) + "\n", (w, r)
        # --version stays the compiler's (build systems parse it), funtrace's line after it
        r = run_tool([tree.tool(w), "--version"])
        lines = r.stdout.rstrip("\n").split("\n")
        assert r.returncode == 0 and lines[-1] == version_line(w), (w, r.stdout)
        assert ("Free Software Foundation" in r.stdout) == ("clang" not in w) and len(lines) > 1
    # funtrace.pc carries the same version
    pc = (tree.lib / "pkgconfig" / "funtrace.pc").read_text()
    assert f"Version: {versions()[0]}\n" in pc


@pytest.mark.parametrize("prog", PROGRAMS)
def test_usage_errors_share_one_wording(tree, prog):
    exe = tree.tool(prog)
    r = run_tool([exe, "--frobnicate"])
    assert r.returncode == 2 and r.stderr == f"{prog}: unknown option '--frobnicate' (see {prog} --help)\n", r
    short = SHORT_WITH_VALUE.get(prog)
    if short:
        r = run_tool([exe, short])
        assert r.returncode == 2 and r.stderr == f"{prog}: option '{short}' needs a value (see {prog} --help)\n", r
    r = run_tool([exe, "-Z"])
    assert r.returncode == 2 and r.stderr == f"{prog}: unknown option '-Z' (see {prog} --help)\n", r
    r = run_tool([exe, "--help"])
    assert r.returncode == 0 and r.stdout.startswith(f"Usage: {prog} ") and "--version" in r.stdout


@pytest.fixture(scope="module")
def crash_core(tree, tmp_path_factory):
    d = tmp_path_factory.mktemp("conv")
    r = run_program([tree.example("crash")], d)
    assert r.core is not None
    raw = d / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", raw, r.core, tree.example("crash")])
    assert ce.returncode == 0, ce.stderr
    return d


def test_wrong_input_says_the_next_step(tree, crash_core):
    d = crash_core
    r = run_tool([tree.tool("funtrace-decode"), "core"], cwd=d)
    assert r.returncode == 2 and r.stderr == \
        "funtrace-decode: core: this is a core file, not a raw trace: run coreextract core > trace.raw first\n"
    r = run_tool([tree.tool("funtrace-decode"), "-"], cwd=d, input=(d / "core").read_bytes(), text=False)
    assert r.returncode == 2 and b"this is a core file, not a raw trace: run coreextract" in r.stderr
    subprocess.run(["zstd", "-q", "-f", "core", "-o", "core.zst"], cwd=d, check=True)
    r = run_tool([tree.tool("funtrace-decode"), "core.zst"], cwd=d)
    assert r.returncode == 2 and "core.zst: this is a core file, not a raw trace" in r.stderr
    r = run_tool([tree.tool("coreextract"), "trace.raw"], cwd=d)
    assert r.returncode == 2 and r.stderr == \
        "coreextract: trace.raw: this is already a raw trace: decode it with funtrace-decode\n"
    r = run_tool([tree.tool("coreextract"), "-"], cwd=d, input=(d / "trace.raw").read_bytes(), text=False)
    assert r.returncode == 2 and b"this is already a raw trace: decode it with funtrace-decode" in r.stderr


def test_decoder_default_view_writes_nothing(tree, crash_core, tmp_path):
    """`funtrace-decode RAW` prints the text view; nothing lands in the current directory"""
    r = run_tool([tree.tool("funtrace-decode"), crash_core / "trace.raw"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    t = run_tool([tree.tool("funtrace-decode"), crash_core / "trace.raw", "--text"], cwd=tmp_path)
    assert r.stdout == t.stdout and r.stdout.startswith("funtrace: `") and "[crashed]" in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_man_pages_generated_and_installed(tree, tmp_path):
    mandir = tree.build / "share" / "man" / "man1"
    for p in PROGRAMS + ["funtrace-gcc"]:
        page = (mandir / f"{p}.1").read_text()
        assert page.startswith(".\\\" DO NOT MODIFY THIS FILE!") and f".TH {p.upper()} \"1\"" in page, p
        assert "\\-\\-version" in page and versions()[0] in page, p
    for w in WRAPPERS[1:]:
        assert (mandir / f"{w}.1").read_text() == ".so man1/funtrace-gcc.1\n"
    # the decoder's page holds its whole --help: every option
    page = (mandir / "funtrace-decode.1").read_text().replace("\\-", "-")
    for opt in ("--report", "--perfetto", "--flamegraph", "--not-function", "--min-duration", "--since"):
        assert opt in page, opt
    r = subprocess.run(["make", "install", f"DESTDIR={tmp_path}", "PREFIX=/usr/local"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    inst = tmp_path / "usr/local/share/man/man1"
    assert sorted(p.name for p in inst.iterdir()) == sorted(f"{p}.1" for p in PROGRAMS + WRAPPERS)
    r = subprocess.run(["man", "-l", inst / "funtrace-decode.1"], capture_output=True, text=True,
                       env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""})
    if r.returncode == 0:  # man-db may be absent on a minimal machine
        assert "--perfetto FILE" in r.stdout.replace("\u2010", "-")


def run_in_pty(argv, env, timeout=120):
    """(exit status, everything written to the terminal) of argv with stdout
    and stderr on a pseudo-terminal"""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(env)
        os.execv(str(argv[0]), [str(a) for a in argv])
    out, t0 = b"", time.time()
    while time.time() - t0 < timeout:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def test_progress_only_on_a_terminal(tree, crash_core, tmp_path):
    """FUNTRACE_PROGRESS_AFTER_MS=0 stands for a run longer than a second: on a
    terminal, a progress line rewritten in place and erased at the end;
    without a terminal, not a byte of it"""
    raw = crash_core / "trace.raw"
    env = {"FUNTRACE_PROGRESS_AFTER_MS": "0"}
    rc, out = run_in_pty([tree.tool("funtrace-decode"), raw, "--json", tmp_path / "p.json"], env)
    assert rc == 0, out
    assert re.search(rf"\rfuntrace-decode: {re.escape(str(raw))}: \d+%\x1b\[K", out), repr(out[:300])
    assert "\r\x1b[K" in out  # erased
    r = run_tool([tree.tool("funtrace-decode"), raw, "--json", tmp_path / "q.json"], env=env)
    assert r.returncode == 0 and "\r" not in r.stderr and "%" not in r.stderr, r.stderr
    # coreextract writing a raw
    rc, out = run_in_pty([tree.tool("coreextract"), "-o", tmp_path / "t.raw", crash_core / "core",
                          tree.example("crash")], env)
    assert rc == 0, out
    assert re.search(r"\rcoreextract: writing the trace: \d+ MiB\x1b\[K", out), repr(out[:300])
    r = run_tool([tree.tool("coreextract"), "-o", tmp_path / "u.raw", crash_core / "core", tree.example("crash")],
                 env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
