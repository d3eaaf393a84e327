"""FUNTRACE_INSTR=xray (issue 14 part 3): clang's -fxray-instrument sleds,
patched by the runtime into calls of the -pg hooks; the raw and the decoder
are those of the other modes.  (The modes' shared tests -- call patterns,
exceptions, threads, dlopen at a reused address, cores -- run in xray mode
too: conftest.INSTR_MODES.)"""
import os
import re
import subprocess

import pytest

from conftest import compile_prog, run_program
from dec_util import check_nesting, decode, forest, merge_gens, render

pytestmark = pytest.mark.clang


def xray_env():
    return {**os.environ, "FUNTRACE_INSTR": "xray"}


def main_render(tr):
    return render(merge_gens(forest(tr.slices[tr.pid])))


def snapshot_trace(tree, exe, tmp_path, args=(), env=None, name="run"):
    r = run_program([exe, *args], tmp_path / name, env=env, want_core=False)
    assert r.returncode == 0, r.stderr
    res, tr = decode(tree, r.dir / "funtrace.raw", json_out=tmp_path / f"{name}.json")
    assert res.returncode == 0, res.stderr
    check_nesting(tr)
    return r, tr


def test_link_has_sleds_and_no_compiler_rt(compiled):
    """The executable has clang's sled map, no compiler-rt XRay runtime, and
    unpatched sleds in its file (the runtime patches them in memory)."""
    exe = compiled("xr_toggle.c", "xray")
    secs = subprocess.run(["readelf", "-SW", str(exe)], capture_output=True, text=True).stdout
    assert "xray_instr_map" in secs
    syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout
    assert not re.search(r"\b__xray_(init|patch|FunctionEntry)\b", syms), "compiler-rt's XRay runtime was linked"
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True).stdout
    m = re.search(r"<leaf>:\n\s+\w+:\s+(\S+)", dis)
    assert m and m.group(1) == "jmp", dis[:2000]


def test_disable_unpatches_the_sleds(tree, compiled, tmp_path):
    """funtrace_disable_tracing() puts the sleds back (a disabled call costs
    a jump and a return), funtrace_enable_tracing() patches them again; the
    calls made meanwhile are not traced, the others are, with -pg's
    nesting (a tail call's return is logged before the jump)."""
    exe = compiled("xr_toggle.c", "xray")
    r, tr = snapshot_trace(tree, exe, tmp_path, ["toggle"])
    assert r.stdout.splitlines() == ["on 66 90 e8", "off eb 09 e8", "on 66 90 e8"], r.stdout
    lines = main_render(tr)
    assert "  while_off" not in lines and "    leaf" not in [ln for ln in lines if "while_off" in ln]
    assert lines[:5] == ["main", "  mid", "    leaf", "    leaf", "    leaf"], lines
    tail = lines[5:]
    assert tail in (["  tail_to_leaf", "    leaf", "  leaf"], ["  tail_to_leaf", "  leaf", "  leaf"]), lines


def test_toggling_while_threads_run(tree, compiled, tmp_path):
    """Two threads call traced functions in loops while main disables and
    enables tracing 300 times: the sleds change under running code (atomic
    2-byte stores), nothing crashes, and the trace decodes with every slice
    nested."""
    exe = compiled("xr_toggle.c", "xray")
    r, tr = snapshot_trace(tree, exe, tmp_path, ["stress", "300"])
    assert r.stdout == "done\n"
    workers = [tid for tid in tr.slices if tid != tr.pid]
    assert len(workers) == 2
    for tid in workers:
        names = {s.n for s in tr.slices[tid]}
        assert {"mid", "leaf", "tail_to_leaf"} <= names, names
    s, _ = decode(tree, r.dir / "funtrace.raw", "--summary")
    assert s.returncode == 0, s.stderr


def test_shared_libraries(tree, compiled, tmp_path):
    """Sleds of a shared library the executable is linked with and of one it
    dlopens are patched too (far from the executable's hooks: through a stub
    page near them); their functions are named in the trace."""
    libdir = tmp_path / "lib"
    linked = compile_prog(tree, "rt_dlib.c", libdir / "libxrlinked.so", mode="xray",
                          extra=["-shared", "-fPIC", "-DLIBNUM=1"])
    opened = compile_prog(tree, "rt_dlib.c", libdir / "libxropened.so", mode="xray",
                          extra=["-shared", "-fPIC", "-DLIBNUM=2"])
    exe = compile_prog(tree, "xr_main.c", tmp_path / "xr_main", mode="xray",
                       extra=[f"-L{libdir}", "-lxrlinked", f"-Wl,-rpath,{libdir}", "-ldl"])
    r, tr = snapshot_trace(tree, exe, tmp_path, [str(opened)])
    assert r.stdout == "1 2\n"
    lines = main_render(tr)
    assert lines == ["main", "  via_link", "    lib_fn", "      lib_inner", "  via_dlopen", "    lib_fn",
                     "      lib_inner"], lines


def test_filter_flags_become_clang_options(tree, tmp_path):
    """-funtrace-instr-thresh=N is clang's -fxray-instruction-threshold=N
    (functions with loops stay traced), -funtrace-no-trace / -do-trace FILE
    are an XRay attribute list ([never] / [always] fun:NAME)."""
    src = tree.root / "tests" / "progs" / "xr_toggle.c"
    cc = tree.tool("funtrace-clang")
    (tmp_path / "never.txt").write_text("# no tail calls\ntail_to_leaf\n")
    (tmp_path / "always.txt").write_text("while_off\n")
    exe = tmp_path / "xf"
    tmpd = tmp_path / "tmpd"
    tmpd.mkdir()
    r = subprocess.run([cc, "-O1", "-g", "-pthread", "-funtrace-instr-thresh=40",
                        f"-funtrace-no-trace={tmp_path / 'never.txt'}", f"-funtrace-do-trace={tmp_path / 'always.txt'}",
                        "-o", exe, src], capture_output=True, text=True, env={**xray_env(), "TMPDIR": str(tmpd)})
    assert r.returncode == 0, r.stderr
    _, tr = snapshot_trace(tree, exe, tmp_path, ["toggle"])
    names = {s.n for s in tr.slices[tr.pid]}
    # leaf: too small; mid: a loop; tail_to_leaf: listed; main: big enough
    assert "mid" in names and "main" in names, names
    assert "leaf" not in names and "tail_to_leaf" not in names, names
    assert "while_off" not in names  # (disabled when it runs)
    assert not list(tmpd.iterdir()), "the attribute list was left behind"


def test_default_threshold_is_said(tree, tmp_path):
    """Without -fxray-instruction-threshold clang instruments only functions
    of 200 instructions or more (or with loops): the link says so, naming
    the option."""
    src = tmp_path / "small.c"
    src.write_text("int f(int x) { return x + 1; }\nint main(void) { return f(1) - 2; }\n")
    r = subprocess.run([tree.tool("funtrace-clang"), "-O1", "-o", tmp_path / "xd", src],
                       capture_output=True, text=True, env=xray_env())
    assert r.returncode == 0, r.stderr
    assert re.search(r"funtrace-clang: warning: .*xd: (no function is|only \d+ of \d+ functions are) instrumented.*"
                     r"-fxray-instruction-threshold", r.stderr), r.stderr


def test_gcc_falls_back_to_pg(tree, tmp_path):
    r = subprocess.run([tree.tool("funtrace-gcc"), "-O1", "-pthread", "-o", tmp_path / "xg",
                        tree.root / "tests" / "progs" / "xr_toggle.c"], capture_output=True, text=True,
                       env=xray_env())
    assert r.returncode == 0, r.stderr
    assert "FUNTRACE_INSTR=xray needs clang" in r.stderr
    dis = subprocess.run(["objdump", "-d", str(tmp_path / "xg")], capture_output=True, text=True).stdout
    assert "__fentry__" in dis


def test_count_mode(tree, tmp_path):
    """-funtrace-count with XRay: the sleds call the counting hooks."""
    exe = tmp_path / "xc"
    r = subprocess.run([tree.tool("funtrace-clang"), "-O1", "-g", "-pthread", "-fxray-instruction-threshold=1",
                        "-funtrace-count", "-o", exe, tree.root / "tests" / "progs" / "xr_toggle.c"],
                       capture_output=True, text=True, env=xray_env())
    assert r.returncode == 0, r.stderr
    run = run_program([exe, "toggle"], tmp_path / "run", want_core=False)
    assert run.returncode == 0, run.stderr
    rep = subprocess.run([tree.tool("funtrace-count"), "-n", "0", run.dir / "funcount.txt"], capture_output=True,
                         text=True)
    assert rep.returncode == 0, rep.stderr
    counts = {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+\S+%\s+\d+\s+(\w+)", rep.stdout, re.M)}
    # leaf: 3 from mid, 1 from tail_to_leaf, 1 from while_off (counting has no
    # disabled state), 1 at the end
    assert counts.get("leaf") == 6 and counts.get("mid") == 1 and counts.get("while_off") == 1, rep.stdout
