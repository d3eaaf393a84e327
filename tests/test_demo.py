"""The README's first command: examples/demo.sh crashes build/examples/crash,
recovers the trace from its core and prints the last calls of every thread."""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

DEMO = ROOT / "examples" / "demo.sh"
THREADS = ["parser-1", "parser-2", "hasher", "loader"]


def run_demo(tmp_path, env=None, core_hard_limit=None, cwd=None, timeout=180):
    """Run the demo from another directory, its temp files under tmp_path."""
    full = dict(os.environ, TMPDIR=str(tmp_path))
    full.pop("FUNTRACE_BUILD", None)
    full.update(env or {})

    def limits():
        if core_hard_limit is not None:
            resource.setrlimit(resource.RLIMIT_CORE, (core_hard_limit, core_hard_limit))
    return subprocess.run(["bash", str(DEMO)], cwd=cwd or tmp_path, env=full, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=limits)


def need(tree, *paths):
    missing = [str(p.relative_to(ROOT)) for p in paths if not p.exists()]
    if missing:
        pytest.fail("make did not build: " + ", ".join(missing))


def fake_build(tree, tmp_path, replace=None, drop=()):
    """A copy of build/bin + build/examples/crash under tmp_path/fbuild, with some
    tools dropped or replaced by a script (to exercise the demo's failure paths)."""
    fb = tmp_path / "fbuild"
    (fb / "bin").mkdir(parents=True)
    (fb / "examples").mkdir()
    shutil.copy2(tree.example("crash"), fb / "examples" / "crash")
    if tree.bin.exists():
        for f in tree.bin.iterdir():
            if f.is_file() and f.name not in drop:
                shutil.copy2(f, fb / "bin" / f.name)
    for name, script in (replace or {}).items():
        p = fb / "bin" / name
        p.write_text(script)
        p.chmod(0o755)
    return fb


def test_demo_prints_last_calls_of_every_thread(tree, tmp_path):
    need(tree, tree.example("crash"), tree.tool("coreextract"), tree.tool("funtrace-decode"))
    r = run_demo(tmp_path)
    assert r.returncode == 0, f"demo failed:\n{r.stdout}\n{r.stderr}"
    out = r.stdout
    assert re.search(r"demo: crash \(pid \d+\) died of SIGSEGV", out), out
    assert "demo: coreextract: trace recovered from the core" in out, out
    assert "FAILED" not in out + r.stderr
    # the decoded part: every thread, and what each one was doing
    decoded = out.split("the last calls of every thread before the crash:", 1)[1]
    for name in THREADS:
        assert name in decoded, f"thread {name} missing from the demo's output:\n{decoded}"
    for fn in ("corrupt_record", "parse_record", "wait_for_more_work", "mix_round", "wait_for_workers"):
        assert fn in decoded, f"{fn} missing from the demo's output:\n{decoded}"
    # the Perfetto JSON, where the demo says it is
    m = re.search(r"^Perfetto JSON: (\S+) — open https://ui\.perfetto\.dev and drag the file in", out, re.M)
    assert m, out
    path = Path(m.group(1))
    assert path.parent.parent == tmp_path and path.exists(), path
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {e.get("name") for e in events if isinstance(e, dict)}
    assert "corrupt_record" in names, sorted(n for n in names if n)[:50]
    assert (path.parent / "core").exists() and (path.parent / "trace.raw").exists()


def test_demo_fails_loudly_when_a_step_fails(tree, tmp_path):
    need(tree, tree.example("crash"))
    fb = fake_build(tree, tmp_path, replace={
        "coreextract": "#!/bin/sh\necho 'coreextract: cannot read core (on purpose)' >&2\nexit 3\n"})
    r = run_demo(tmp_path, env={"FUNTRACE_BUILD": str(fb)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'demo: FAILED at step "coreextract"' in r.stderr
    assert "exited with status 3" in r.stderr and "cannot read core (on purpose)" in r.stderr
    assert "Perfetto JSON" not in r.stdout


def test_demo_fails_when_no_core_is_written(tree, tmp_path):
    need(tree, tree.example("crash"))
    r = run_demo(tmp_path, core_hard_limit=0)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'demo: FAILED at step "find core"' in r.stderr
    assert "core_pattern" in r.stderr and "hard ulimit -c is 0" in r.stderr


def test_demo_says_what_is_missing(tree, tmp_path):
    """A tool that is not built is a failure (exit 1, the file and what to do),
    found before anything runs: no crash, no core left behind."""
    need(tree, tree.example("crash"), tree.tool("coreextract"))
    fb = fake_build(tree, tmp_path, drop=("funtrace-decode",))
    r = run_demo(tmp_path, env={"FUNTRACE_BUILD": str(fb)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r'demo: FAILED at step "build": \S+/bin/funtrace-decode is not built: run ./setup.sh',
                     r.stderr), r.stderr
    assert "running" not in r.stdout and "Perfetto JSON" not in r.stdout, r.stdout
    assert not list(tmp_path.glob("funtrace-demo.*")), "nothing should have been run"


def test_demo_without_a_build(tmp_path):
    empty = tmp_path / "nobuild"
    empty.mkdir()
    r = run_demo(tmp_path, env={"FUNTRACE_BUILD": str(empty)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r'demo: FAILED at step "build": \S+/examples/crash is not built', r.stderr), r.stderr
    assert not list(tmp_path.glob("funtrace-demo.*")), "nothing should have been run"
