"""The -pg hooks' call frame information (runtime/hooks_pg.S): gdb unwinds
right from every instruction of __fentry__ and __return__ (and of
ft_asm_slow, their cold path), in exact and sampled mode, on every path
(escapes, stamps, paused, frozen, no record, a new thread's first event),
also from a signal handler run at that instruction and from a real core
dumped by a SIGSEGV inside a hook: the hook, then its caller at the
instruction after the call, then the caller's callers -- no hook twice, no
wrong caller."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import run_program

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "hook_cfi_gdb.py"


def gdb_steps(prog, mode, tmp_path):
    out = tmp_path / f"cfi-{mode}.json"
    env = dict(os.environ, HOOK_CFI_MODE=mode, HOOK_CFI_SIGNALS="1", HOOK_CFI_OUT=str(out))
    r = subprocess.run(["gdb", "-batch", "-nx", "-x", str(SCRIPT), "--args", str(prog)],
                       capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.exists(), f"gdb wrote no result (rc {r.returncode})\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def prog(compiled):
    return compiled("hook_cfi.c", mode="pg")


def test_gdb_unwinds_from_every_hook_instruction(prog, tmp_path):
    res = {m: gdb_steps(prog, m, tmp_path) for m in ("exact", "sampled")}
    errors = [e for m in res for e in res[m]["errors"]]
    assert not errors, f"{len(errors)} wrong backtraces, e.g.:\n" + "\n".join(errors[:12])
    # every instruction of both hooks was stepped through in one mode or the other
    for hook in ("__fentry__", "__return__"):
        insns = res["exact"]["insns"][hook]
        seen = set(res["exact"]["visited"][hook]) | set(res["sampled"]["visited"][hook])
        missed = [f"{hook}+{off}: {text}" for off, text in insns if off not in seen]
        assert not missed, "instructions never reached (no path to them, or a scenario is missing):\n" + \
            "\n".join(missed)
    assert res["exact"]["visited"]["ft_asm_slow"] and res["sampled"]["visited"]["ft_asm_slow"]
    assert res["exact"]["checked"] > 500 and res["sampled"]["checked"] > 500


def return_offsets(prog):
    """offsets into __return__ of: the exact entry's store, the sampled stamp path's rdtsc"""
    out = subprocess.run(["gdb", "-batch", "-nx", "-ex", "disassemble __return__", str(prog)],
                         capture_output=True, text=True, timeout=60).stdout
    ins = re.findall(r"<\+(\d+)>:\s*(.*)", out)
    store = [int(o) for o, t in ins if re.match(r"mov\s+%rax,\(%r11\)", t)][0]
    # the stamp path's: right after the leaf-return test (the previous item's tag bit 0)
    rdtsc = [int(o) for k, (o, t) in enumerate(ins) if t.strip() == "rdtsc" and k >= 2
             and re.match(r"test\s+\$0x1,%eax", ins[k - 2][1])]
    assert len(rdtsc) == 1, out
    return store, rdtsc[0]


@pytest.mark.parametrize("mode", ["exact", "sampled"])
def test_core_dumped_inside_a_hook_unwinds(prog, tmp_path, mode):
    store, rdtsc = return_offsets(prog)
    off = store if mode == "exact" else rdtsc  # sampled: 4 words pushed there (the stamp path)
    d = tmp_path / mode
    r = run_program(["gdb", "-batch", "-nx", "-x", str(SCRIPT), "--args", str(prog)], d,
                    env={"HOOK_CFI_MODE": mode, "HOOK_CFI_FAULT": str(off), "HOOK_CFI_OUT": str(d / "unused")},
                    timeout=300)
    assert r.core is not None, f"no core (gdb rc {r.returncode})\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    bt = subprocess.run(["gdb", "-batch", "-nx", "-ex", "echo @@bt\\n", "-ex", "bt", str(prog), str(r.core)],
                        capture_output=True, text=True, timeout=120).stdout
    assert "@@bt" in bt, bt
    bt = bt.split("@@bt", 1)[1]
    frames = re.findall(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(", bt, re.M)
    names = [n for _, n in frames]
    # the runtime's own SIGSEGV handling may come first; from the hook on, exactly:
    assert "__return__" in names, bt
    k = names.index("__return__")
    assert names[k:k + 4] == ["__return__", "leaf", "mid", "main"], bt
    assert names.count("__return__") == 1, bt
