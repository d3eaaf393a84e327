"""The product shell: setup.sh, the top-level Makefile (clean, install), the
README's two commands, .ci/run and .gitignore.

Everything that could disturb the session's build/ (make clean, a rebuild)
runs in a copy of the tree, never in the real one."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import rawfile
from conftest import ROOT, require_tools

README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
SETUP = ROOT / "setup.sh"
DEMO_CMD = "./setup.sh && examples/demo.sh"
TEST_CMD = "./setup.sh && /usr/bin/python3 -m pytest tests"


def sh(args, cwd, env=None, timeout=600, **kw):
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


@pytest.fixture(scope="module")
def tree_copy(tree, tmp_path_factory):
    """A copy of the source tree AND of the session's build/ (timestamps kept, so
    make has nothing to do in it)."""
    dst = tmp_path_factory.mktemp("treecopy") / "funtrace"
    shutil.copytree(ROOT, dst, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "build-san", "__pycache__", ".pytest_cache",
                                                  "core", "*.raw"))
    return dst


# --------------------------------------------------------------------------
# README and CI
# --------------------------------------------------------------------------

def readme_commands():
    """The commands in the README's first two code blocks."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(), re.S | re.M)
    return [body.strip() for lang, body in blocks if lang in ("sh", "bash", "")][:2]


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    assert readme_commands() == [DEMO_CMD, TEST_CMD]
    # they come first: before the overview
    assert text.index(DEMO_CMD) < text.index("## What funtrace is")
    for part in ("setup.sh", "examples/demo.sh", ".ci/run"):
        p = ROOT / part
        assert p.exists() and os.access(p, os.X_OK), f"{part} missing or not executable"


def test_readme_has_a_section_per_tool():
    text = README.read_text()
    for title in ("Reference: runtime", "Reference: compiler wrappers", "Reference: coreextract",
                  "Reference: gdb extension", "Reference: funtrace-decode", "Reference: funtrace-oomwatch",
                  "OOM post-mortems", "Benchmarks"):
        assert re.search(rf"^## {re.escape(title)}\s*$", text, re.M), f"no section '{title}'"


def test_ci_runs_setup_then_exactly_the_readme_test_command():
    text = CI_RUN.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") or text.startswith("#!/bin/bash\n")
    assert "set -euo pipefail" in text
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    cmd_lines = [l for l in lines if "pytest" in l and "setup.sh" in l]
    assert len(cmd_lines) == 1, lines
    assert cmd_lines[0] == TEST_CMD or cmd_lines[0].startswith(TEST_CMD + " ||"), cmd_lines
    assert readme_commands()[1] == TEST_CMD


def test_readme_first_command_as_written(tree, tree_copy, tmp_path):
    """`./setup.sh && examples/demo.sh`, literally, in a copy of the built tree."""
    require_tools(tree, "coreextract", "funtrace-decode")
    r = sh(["bash", "-c", readme_commands()[0]], cwd=tree_copy, env={"TMPDIR": str(tmp_path)}, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert r.stdout.startswith("setup: checking packages... ok")
    assert "setup: build... ok" in r.stdout
    assert "corrupt_record" in r.stdout and '"loader"' in r.stdout
    m = re.search(r"^Perfetto JSON: (\S+) ", r.stdout, re.M)
    assert m and Path(m.group(1)).is_file(), r.stdout[-2000:]


def make_ci_sandbox(tmp_path, setup_body, tests):
    """A minimal tree holding the real .ci/run, the real tests/conftest.py (its
    slow tier), a stand-in setup.sh and the given test files."""
    d = tmp_path / "ci"
    (d / ".ci").mkdir(parents=True)
    shutil.copy2(CI_RUN, d / ".ci" / "run")
    (d / "setup.sh").write_text("#!/bin/sh\n" + setup_body)
    (d / "setup.sh").chmod(0o755)
    (d / "tests").mkdir()
    shutil.copy2(ROOT / "tests" / "conftest.py", d / "tests" / "conftest.py")
    for name, body in tests.items():
        (d / "tests" / name).write_text(body)
    return d


CI_ENV = {"CI": "true"}


def test_ci_fails_when_pytest_collects_nothing(tmp_path):
    d = make_ci_sandbox(tmp_path, "echo setup ran\n", {"helper.py": "X = 1\n"})
    r = sh(["bash", ".ci/run"], cwd=d, env=CI_ENV, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "setup ran" in r.stdout
    assert "collected no tests" in r.stderr


SLOW_TEST = "import pytest\n\n@pytest.mark.slow\ndef test_slow():\n    open('slow-ran', 'a').write('x')\n"


def test_ci_passes_and_fails_with_the_tests(tmp_path):
    """the default run leaves the slow tier out; CI runs it after, once"""
    d = make_ci_sandbox(tmp_path, "exit 0\n", {"test_one.py": "def test_ok():\n    assert True\n",
                                               "test_slow.py": SLOW_TEST})
    r = sh(["bash", ".ci/run"], cwd=d, env=CI_ENV, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # the default run, then the slow tier: each runs one test and deselects the other
    assert len(re.findall(r"\b1 passed, 1 deselected\b", r.stdout)) == 2, r.stdout
    assert (d / "slow-ran").read_text() == "x"
    (d / "tests" / "test_two.py").write_text("def test_bad():\n    assert False\n")
    r = sh(["bash", ".ci/run"], cwd=d, env=CI_ENV, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert (d / "slow-ran").read_text() == "x", "the slow tier must not run after a failed default run"


def test_ci_fails_with_the_slow_tier(tmp_path):
    d = make_ci_sandbox(tmp_path, "exit 0\n", {"test_one.py": "def test_ok():\n    assert True\n",
                                               "test_slow.py": SLOW_TEST + "    assert False\n"})
    r = sh(["bash", ".ci/run"], cwd=d, env=CI_ENV, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert (d / "slow-ran").exists()


def test_ci_fails_when_the_slow_tier_collects_nothing(tmp_path):
    d = make_ci_sandbox(tmp_path, "exit 0\n", {"test_one.py": "def test_ok():\n    assert True\n"})
    r = sh(["bash", ".ci/run"], cwd=d, env=CI_ENV, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the slow tier collected no tests" in r.stderr


def test_ci_stops_when_setup_fails(tmp_path):
    d = make_ci_sandbox(tmp_path, "echo 'setup: FAILED at step build' >&2; exit 7\n",
                        {"test_one.py": "def test_ok():\n    open('ran', 'w')\n"})
    r = sh(["bash", ".ci/run"], cwd=d, env=CI_ENV, timeout=120)
    assert r.returncode == 7, r.stdout + r.stderr
    assert not (d / "ran").exists(), "pytest must not run after a failed setup"


# --------------------------------------------------------------------------
# setup.sh
# --------------------------------------------------------------------------

SETUP_LINE = re.compile(r"^setup: [^\n]*\.\.\. (ok|FAILED)")


def test_setup_is_idempotent_and_prints_one_line_per_step(tree_copy):
    core_pattern = Path("/proc/sys/kernel/core_pattern").read_text()
    outs = []
    for _ in range(2):
        r = sh(["./setup.sh"], cwd=tree_copy, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
        outs.append(r.stdout)
    for out in outs:
        lines = out.splitlines()
        assert len(lines) == 3 and all(SETUP_LINE.match(l) for l in lines), out
        assert re.match(r"setup: checking packages\.\.\. ok \(all \d+ packages installed\)$", lines[0]), out
        assert lines[1] == "setup: build... ok (make -j2)", out
        assert lines[2] == "setup: install... ok (make install, PREFIX=/usr/local)", out
        assert "installing" not in out
    # the build was incremental: nothing rebuilt in the copy
    r = sh(["make", "-q", "all"], cwd=tree_copy)
    assert r.returncode == 0, "make -q: the copy is not up to date after setup.sh"
    assert Path("/proc/sys/kernel/core_pattern").read_text() == core_pattern


def test_readme_lists_the_packages_setup_installs():
    r = sh(["bash", "-c", 'eval "$(sed -n "/^PACKAGES=(/,/^)/p" setup.sh)"; echo "${PACKAGES[@]}"'], cwd=ROOT)
    assert r.returncode == 0, r.stderr
    packages = r.stdout.split()
    assert "python3-pytest" in packages and "libunwind-dev" in packages, packages
    m = re.search(r"^Packages: `([^`]*)`", README.read_text(), re.M)
    assert m, "README has no 'Packages: `...`' line"
    assert m.group(1).split() == packages


def fake_apt(tmp_path, missing, apt_rc=0):
    """PATH entries: apt-get that only logs (never touches the machine), dpkg-query
    that reports `missing` as not installed until apt-get 'installs' them."""
    d = tmp_path / "fakebin"
    d.mkdir()
    log = tmp_path / "apt.log"
    installed = tmp_path / "installed"
    (d / "apt-get").write_text(f"""#!/bin/sh
echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >> {log}
[ "$1" = install ] && touch {installed}
exit {apt_rc}
""")
    checks = " ".join(f'"{p}"' for p in missing)
    (d / "dpkg-query").write_text(f"""#!/bin/sh
last=""; for a in "$@"; do last=$a; done
for p in {checks}; do
  if [ "$last" = "$p" ] && [ ! -e {installed} ]; then
    echo "dpkg-query: no packages found matching $p" >&2; exit 1
  fi
done
exec /usr/bin/dpkg-query "$@"
""")
    for f in d.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{d}:{os.environ['PATH']}"}, log


def test_setup_installs_only_the_missing_packages(tmp_path):
    env, log = fake_apt(tmp_path, ["lz4", "gdb"])
    r = sh([str(SETUP), "--no-build"], cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "setup: checking packages... ok (missing: gdb lz4)",
        "setup: installing 2 missing package(s): gdb lz4... ok",
    ], r.stdout
    calls = log.read_text().splitlines()
    assert calls[0].startswith("DEBIAN_FRONTEND=noninteractive update")
    assert re.match(r"DEBIAN_FRONTEND=noninteractive install -y .*\bgdb lz4$", calls[1]), calls
    assert len(calls) == 2


def test_setup_runs_no_apt_when_nothing_is_missing(tmp_path):
    env, log = fake_apt(tmp_path, [])
    r = sh([str(SETUP), "--no-build"], cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not log.exists(), "apt-get must not run when every package is installed"


def test_setup_fails_loudly_when_apt_fails(tmp_path):
    env, log = fake_apt(tmp_path, ["zstd"], apt_rc=100)
    r = sh([str(SETUP)], cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "setup: installing 1 missing package(s): zstd... FAILED"
    assert "setup: FAILED at step 'installing 1 missing package(s): zstd'" in r.stderr
    assert "build" not in r.stdout, "no build after a failed step"


def test_setup_fails_loudly_when_the_build_fails(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    shutil.copy2(SETUP, d / "setup.sh")
    (d / "Makefile").write_text("all:\n\t@echo 'broken.c:1: error: this build is broken on purpose'; false\n")
    r = sh(["./setup.sh"], cwd=d, timeout=120)
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "setup: build... FAILED"
    assert "this build is broken on purpose" in r.stderr
    assert r.stderr.rstrip().endswith("setup: FAILED at step 'build'")


# --------------------------------------------------------------------------
# Makefile: install, clean
# --------------------------------------------------------------------------

INSTALLED = ["bin/funtrace-gcc", "bin/funtrace-g++", "bin/funtrace-clang", "bin/funtrace-clang++",
             "lib/libfuntrace.a", "include/funtrace.h", "lib/pkgconfig/funtrace.pc", "bin/coreextract",
             "bin/funtrace-oomwatch", "bin/funtrace-decode", "share/funtrace/gdb/funtrace.py",
             "lib/libfuntrace_reader.so", "include/funtrace_reader.h"]


def test_make_install(tree_copy, tmp_path):
    prefix = tmp_path / "prefix"
    # GDB_INIT_DIR: not the system's (tests/test_gdb_install.py)
    r = sh(["make", "-j2", "install", f"PREFIX={prefix}", f"GDB_INIT_DIR={tmp_path}/gdbinit.d"], cwd=tree_copy)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for d in ("bin", "lib", "include", "lib/pkgconfig", "share/funtrace/gdb"):
        assert (prefix / d).is_dir(), d
    missing = [a for a in INSTALLED if not (prefix / a).exists()]
    assert not missing, f"not installed: {missing}"
    for a in INSTALLED:
        if a.startswith("bin/"):
            assert os.access(prefix / a, os.X_OK), a


def test_installed_wrapper_builds_a_traced_program(tree_copy, tmp_path):
    """The installed compiler wrapper works without the source tree (which is removed)."""
    prefix = tmp_path / "prefix"
    src = tmp_path / "t"
    shutil.copytree(tree_copy, src, symlinks=True)
    r = sh(["make", "-j2", "install", f"PREFIX={prefix}"], cwd=src)
    assert r.returncode == 0, r.stderr[-3000:]
    shutil.rmtree(src)
    prog = tmp_path / "hello.c"
    prog.write_text('#include <stdio.h>\n#include "funtrace.h"\n'
                    'int __attribute__((noinline)) twice(int x) { return 2 * x; }\n'
                    'int main(void) { printf("%d %d\\n", twice(21), funtrace_ticks_per_second() > 0); }\n')
    r = sh([str(prefix / "bin" / "funtrace-gcc"), "-O1", "-o", "hello", "hello.c"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = sh(["./hello"], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "42 1\n", r.stdout + r.stderr
    r = sh(["nm", "-D", "--defined-only", "hello"], cwd=tmp_path)
    assert re.search(r"\bfuntrace_root\b", r.stdout)
    r = sh(["pkg-config", "--cflags", "--libs", "funtrace"], cwd=tmp_path,
           env={"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")})
    assert r.returncode == 0 and str(prefix) in r.stdout, r.stdout + r.stderr


def test_make_clean_removes_build(tree_copy, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(tree_copy, t, symlinks=True)
    assert (t / "build").is_dir()
    (t / "build-san").mkdir(exist_ok=True)
    r = sh(["make", "clean"], cwd=t)
    assert r.returncode == 0, r.stderr
    assert not (t / "build").exists() and not (t / "build-san").exists()
    for keep in ("Makefile", "setup.sh", "README.md", "examples/crash.c", "tests/conftest.py"):
        assert (t / keep).exists(), f"make clean removed {keep}"


def test_gitignore_covers_build_outputs(tmp_path):
    shutil.copy2(ROOT / ".gitignore", tmp_path / ".gitignore")
    assert sh(["git", "init", "-q"], cwd=tmp_path).returncode == 0
    ignored = ["build/bin/x", "build-san/x", "tests/__pycache__/x.pyc", ".pytest_cache/x", "x/trace.raw",
               "core", "examples/core", "trace.json"]
    r = sh(["git", "check-ignore", "--no-index", *ignored], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ignored
    kept = ["examples/crash.c", "tests/conftest.py", "README.md", "examples/core.c", "setup.sh"]
    r = sh(["git", "check-ignore", "--no-index", *kept], cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "", r.stdout


# --------------------------------------------------------------------------
# the README's 60-second tour, run as written
# --------------------------------------------------------------------------

TOUR_PROG = r"""
#include <pthread.h>
#include <stdio.h>
static int *volatile nowhere;
__attribute__((noinline)) void tour_inner(int x) { if (x == 3) *nowhere = x; }
__attribute__((noinline)) void tour_outer(int x) { tour_inner(x); }
static void *tour_thread(void *arg) { for (int i = 0; i < 5; i++) tour_outer(i); return arg; }
int main(void) { pthread_t t; pthread_create(&t, 0, tour_thread, 0); pthread_join(t, 0); return 0; }
"""


def readme_tour():
    text = README.read_text()
    tour = text.split("## A 60-second tour", 1)[1]
    m = re.search(r"^```sh\n(.*?)^```", tour, re.S | re.M)
    return m.group(1)


def test_readme_tour_runs_as_written(tree, tmp_path):
    """The tour's commands, pasted into a shell next to a crashing myprog.c."""
    require_tools(tree, "funtrace-gcc", "coreextract", "funtrace-decode")
    assert (tree.build / "share/funtrace/gdb/funtrace.py").exists()
    (tmp_path / "build").symlink_to(tree.build)  # the tour's paths are relative to the checkout
    (tmp_path / "myprog.c").write_text(TOUR_PROG)
    r = sh(["bash", "-c", readme_tour()], cwd=tmp_path, timeout=300)
    out = r.stdout
    assert (tmp_path / "core").exists(), r.stdout + r.stderr
    raw = rawfile.parse(tmp_path / "trace.raw")
    assert raw.ended and raw.siginfo and raw.siginfo["signo"] == 11
    gdb_raw = rawfile.parse(tmp_path / "funtrace.raw")
    assert gdb_raw.ended and len(gdb_raw.threads) == len(raw.threads)
    assert out.count("tour_inner") >= 2, out  # gdb's tail and funtrace-decode --text
    events = json.loads((tmp_path / "trace.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("name") == "tour_inner" for e in events if isinstance(e, dict))
