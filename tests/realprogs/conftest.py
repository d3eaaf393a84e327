"""The real-programs tier: third-party C programs from Debian source packages,
built unchanged with the funtrace wrappers, crashed mid-work, their cores
decoded and compared with gdb.

Not part of the default suite (a cold build takes ~12 minutes on 2 cores):
run it with

    FUNTRACE_REALPROGS=1 /usr/bin/python3 -m pytest tests/realprogs

(`make test-realprogs`; .ci/run runs it after the default suite).  Builds are
cached by tests/realprogs/build.sh (see there).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HERE = Path(__file__).resolve().parent

if os.environ.get("FUNTRACE_REALPROGS") != "1":
    collect_ignore_glob = ["test_*.py"]


def build(prog: str, variant: str = "traced", env=None) -> Path:
    """Build (or take from the cache) PROG's VARIANT; returns its build directory."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    r = subprocess.run([str(HERE / "build.sh"), prog, variant], capture_output=True, text=True,
                       timeout=3600, env=full_env)
    if r.returncode != 0:
        pytest.fail(f"building {prog} ({variant}) failed:\n{r.stderr[-4000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def realprog(tree):
    """realprog(name, variant='traced') -> build directory (built once per session)."""
    cache = {}

    def _get(name, variant="traced"):
        if (name, variant) not in cache:
            cache[(name, variant)] = build(name, variant)
        return cache[(name, variant)]
    return _get
