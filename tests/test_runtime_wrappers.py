"""The compiler wrappers and funtrace.pc as a build system uses them:
CC=funtrace-gcc make, CMake, pkg-config, shared libraries, -c objects."""
import os
import shutil
import subprocess

import pytest

from conftest import run_program
from test_runtime_helpers import Syms, main_thread, modules, only_snapshot, sequence

MAIN_C = r"""
#include <funtrace.h>
#include <stdio.h>
void other(int);
volatile int after;
__attribute__((noinline)) void here(int x) { other(x); after++; }
int main(void) { here(1); funtrace_pause_and_write_current_snapshot(); puts("ok"); return 0; }
"""
OTHER_C = r"""
volatile int sink;
__attribute__((noinline)) void other(int x) { sink += x; }
"""
EXPECTED = [("here", "call"), ("other", "call"), ("other", "ret"), ("here", "ret")]


def project(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text(MAIN_C)
    (src / "other.c").write_text(OTHER_C)
    return src


def check_program(prog, tmp_path):
    r = run_program([prog], tmp_path / "run", want_core=False)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    raw = only_snapshot(r.dir / "funtrace.raw")
    assert sequence(raw, main_thread(raw), Syms(prog), keep={"here", "other"}) == EXPECTED
    assert not (r.dir / "gmon.out").exists()


def sh(cmd, cwd, env=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})},
                       timeout=300)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.mark.parametrize("instr", ["pg", "finstr"])
def test_make_cc(tree, tmp_path, instr):
    """CC=funtrace-gcc make with separate compile and link steps."""
    src = project(tmp_path)
    (src / "Makefile").write_text("prog: main.o other.o\n\t$(CC) -o $@ $^\n")
    sh(["make", f"CC={tree.tool('funtrace-gcc')}"], src, env={"FUNTRACE_INSTR": instr})
    undef = sh(["nm", "-u", "other.o"], src).stdout
    hooks = {"pg": ["__fentry__", "__return__"], "finstr": ["__cyg_profile_func_enter"]}[instr]
    for h in hooks:
        assert h in undef
    assert "funtrace_root" not in sh(["nm", "other.o"], src).stdout
    check_program(src / "prog", tmp_path)


def test_one_step_no_gmon(tree, tmp_path):
    """One command compiling and linking with -pg: no gmon.out at exit."""
    src = project(tmp_path)
    sh([str(tree.tool("funtrace-gcc")), "-O2", "-fomit-frame-pointer", "-o", "prog", "main.c", "other.c"], src)
    check_program(src / "prog", tmp_path)


def test_shared_library_has_no_runtime(tree, tmp_path):
    """-shared: instrumented, but the hooks stay undefined (resolved from the
    executable) and the runtime is not linked in."""
    src = project(tmp_path)
    sh([str(tree.tool("funtrace-gcc")), "-shared", "-fPIC", "-o", "libother.so", "other.c"], src)
    dyn = sh(["nm", "-D", "libother.so"], src).stdout
    assert " U __fentry__" in dyn and " U __return__" in dyn
    assert "funtrace_root" not in dyn
    sh([str(tree.tool("funtrace-gcc")), "-o", "prog", "main.c", "-L.", "-lother", "-Wl,-rpath,$ORIGIN"], src)
    r = run_program([src / "prog"], tmp_path / "run", want_core=False)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    raw = only_snapshot(r.dir / "funtrace.raw")
    lib = [m for m in modules(raw) if m["path"].endswith("/libother.so")]
    assert len(lib) == 1 and lib[0]["state"] == 1
    events = main_thread(raw).events()
    in_lib = [e.ret for e in events if any(s <= e.addr < s + n for s, n in lib[0]["segs"])]
    assert in_lib == [False, True]  # other() called and returned, traced in the library


def test_passthrough_and_bad_mode(tree, tmp_path):
    """No inputs (--version): passed through untouched; a bad FUNTRACE_INSTR
    is refused with one line and exit 2."""
    r = subprocess.run([str(tree.tool("funtrace-gcc")), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and "gcc" in r.stdout
    r = subprocess.run([str(tree.tool("funtrace-gcc")), "-c", "x.c"], capture_output=True, text=True,
                       env={**os.environ, "FUNTRACE_INSTR": "bogus"}, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "FUNTRACE_INSTR" in r.stderr


@pytest.mark.clang
def test_clang_cxx(tree, tmp_path):
    """funtrace-clang++ builds and links a C++ program (the -fPIC-free,
    after-inlining instrumentation)."""
    src = project(tmp_path)
    (src / "main.cc").write_text(MAIN_C.replace("void other(int);", 'extern "C" void other(int);'))
    sh([str(tree.tool("funtrace-clang")), "-O2", "-c", "other.c"], src)
    sh([str(tree.tool("funtrace-clang++")), "-O2", "-o", "prog", "main.cc", "other.o"], src)
    check_program(src / "prog", tmp_path)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake(tree, tmp_path):
    """cmake -DCMAKE_C_COMPILER=funtrace-gcc: configure, build, run."""
    src = project(tmp_path)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.10)\nproject(t C)\nadd_executable(prog main.c other.c)\n")
    b = tmp_path / "b"
    b.mkdir()
    sh(["cmake", "-DCMAKE_C_COMPILER=" + str(tree.tool("funtrace-gcc")), str(src)], b)
    sh(["cmake", "--build", "."], b)
    check_program(b / "prog", tmp_path)


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed")
def test_pkg_config(tree, tmp_path):
    """gcc $(pkg-config --cflags) ... $(pkg-config --libs funtrace)"""
    src = project(tmp_path)
    env = {"PKG_CONFIG_PATH": str(tree.lib / "pkgconfig")}
    cflags = sh(["pkg-config", "--cflags", "funtrace"], src, env).stdout.split()
    libs = sh(["pkg-config", "--libs", "funtrace"], src, env).stdout.split()
    assert "-pg" in cflags
    for f in ("main.c", "other.c"):
        sh(["gcc", "-O1", "-c", *cflags, f], src)
    sh(["gcc", "-o", "prog", "main.o", "other.o", *libs], src)
    dyn = sh(["nm", "-D", "--defined-only", "prog"], src).stdout
    for sym in ("funtrace_root", "__fentry__", "__return__", "funtrace_write_snapshot_fd", "funtrace_time"):
        assert f" {sym}\n" in dyn, sym
    check_program(src / "prog", tmp_path)


def test_static_libstdcxx(tree, tmp_path):
    """-static-libstdc++ links (the runtime's __cxa_begin_catch interposer is
    weak and yields to the static one) and the program is traced."""
    src = project(tmp_path)
    (src / "main.cc").write_text(MAIN_C.replace("void other(int);", 'extern "C" void other(int);'))
    sh([str(tree.tool("funtrace-gcc")), "-O1", "-c", "other.c"], src)
    sh([str(tree.tool("funtrace-g++")), "-O1", "-static-libstdc++", "-o", "prog", "main.cc", "other.o"], src)
    check_program(src / "prog", tmp_path)


def test_installed_wrappers(tree, tmp_path):
    """make install DESTDIR=...: the installed wrappers find the installed
    runtime and header relative to themselves."""
    dest = tmp_path / "dest"
    r = subprocess.run(["make", "install", f"DESTDIR={dest}"], cwd=tree.root, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    prefix = dest / "usr" / "local"
    for f in ("lib/libfuntrace.a", "include/funtrace.h", "include/funtrace_abi.h", "lib/pkgconfig/funtrace.pc",
              "bin/funtrace-gcc", "bin/funtrace-g++", "bin/funtrace-clang", "bin/funtrace-clang++"):
        assert (prefix / f).exists(), f
    src = project(tmp_path)
    sh([str(prefix / "bin" / "funtrace-gcc"), "-O1", "-o", "prog", "main.c", "other.c"], src)
    check_program(src / "prog", tmp_path)
