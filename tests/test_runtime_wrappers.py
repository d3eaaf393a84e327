"""The compiler wrappers and funtrace.pc as a build system uses them:
CC=funtrace-gcc make, CMake, pkg-config, shared libraries, -c objects."""
import os
import shutil
import subprocess

import pytest

from conftest import run_program
from dec_util import decode
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
    syms = Syms(prog)
    # the compiler's clones (LTO: here.constprop.0, other.lto_priv.0) are the function
    syms.funcs = [(a, e, n.split(".")[0]) for a, e, n in syms.funcs]
    assert sequence(raw, main_thread(raw), syms, keep={"here", "other"}) == EXPECTED
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


HOOKS = {"pg": {"__fentry__", "__return__"}, "finstr": {"__cyg_profile_func_enter", "__cyg_profile_func_exit"},
         "xray": set()}
XRAY_T1 = "-fxray-instruction-threshold=1"  # (clang's default threshold leaves out functions this small)
OWN_FLAGS = [
    # wrapper, FUNTRACE_INSTR, the build's CFLAGS, the mode the objects get, the wrapper's warning
    ("funtrace-gcc", None, "-finstrument-functions", "finstr", None),
    ("funtrace-gcc", None, "-O1 -pg", "pg", None),
    ("funtrace-gcc", "pg", "-finstrument-functions", "pg", "leaving out the build's -finstrument-functions"),
    ("funtrace-gcc", "finstr", "-pg", "finstr", "leaving out the build's -pg"),
    ("funtrace-gcc", None, "-fxray-instrument", "pg", "the build's -fxray-instrument (left out) needs clang"),
    ("funtrace-clang", None, f"-fxray-instrument {XRAY_T1}", "xray", None),
    ("funtrace-clang", None, "-finstrument-functions", "finstr", None),
    ("funtrace-clang", "xray", f"-finstrument-functions {XRAY_T1}", "xray",
     "leaving out the build's -finstrument-functions"),
    ("funtrace-clang", None, "-pg", "finstr", "the build's -pg (left out) needs gcc"),
]


@pytest.mark.parametrize("wrapper,env_instr,cflags,mode,warning", OWN_FLAGS,
                         ids=[f"{w}-{e or 'default'}-{c.split()[0 if c[:2] != '-O' else 1]}"
                              for w, e, c, _, _ in OWN_FLAGS])
def test_builds_own_instrumentation_flags(tree, tmp_path, wrapper, env_instr, cflags, mode, warning):
    """A build that already passes an instrumentation flag (made for gprof,
    for the original funtrace, for XRay) gets one instrumentation, not two
    (which logged every call twice): without FUNTRACE_INSTR the build's flag
    chooses the mode, with it the flag is left out with one warning line;
    every call is logged exactly once either way."""
    if "clang" in wrapper and shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    src = project(tmp_path)
    (src / "Makefile").write_text("prog: main.o other.o\n\t$(CC) $(CFLAGS) -o $@ $^\n")
    env = {"FUNTRACE_INSTR": env_instr} if env_instr else {}
    if not env_instr:
        env["FUNTRACE_INSTR"] = ""
    r = sh(["make", f"CC={tree.tool(wrapper)}", f"CFLAGS={cflags}"], src, env=env)
    said = [ln for ln in r.stderr.splitlines() if ln.startswith(wrapper + ":")]
    if warning:
        assert said and all(warning in ln for ln in said), r.stderr
    else:
        assert not said, r.stderr
    for obj in ("main.o", "other.o"):
        undef = set(sh(["nm", "-u", obj], src).stdout.split())
        others = set().union(*(h for m, h in HOOKS.items() if m != mode))
        assert HOOKS[mode] <= undef and not (others & undef), (obj, undef)
        has_sleds = "xray_instr_map" in sh(["objdump", "-h", obj], src).stdout
        assert has_sleds == (mode == "xray"), obj
    check_program(src / "prog", tmp_path)


def test_builds_own_instrumentation_flags_conflict_and_off(tree, tmp_path):
    """Two instrumentations in the build's flags and no FUNTRACE_INSTR to
    choose: refused with one line and exit 2.  A file compiled with a last
    -fno-instrument-functions gets no instrumentation in any mode."""
    src = project(tmp_path)
    cc = str(tree.tool("funtrace-gcc"))
    r = subprocess.run([cc, "-pg", "-finstrument-functions", "-c", "other.c"], capture_output=True, text=True,
                       cwd=src, env={**os.environ, "FUNTRACE_INSTR": ""})
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "-pg -finstrument-functions" in r.stderr and "FUNTRACE_INSTR" in r.stderr
    assert not (src / "other.o").exists()
    for instr in ("pg", "finstr"):
        sh([cc, "-O1", "-finstrument-functions", "-fno-instrument-functions", "-fomit-frame-pointer", "-c",
            "other.c"], src, env={"FUNTRACE_INSTR": instr})
        undef = set(sh(["nm", "-u", "other.o"], src).stdout.split())
        assert not (undef & (HOOKS["pg"] | HOOKS["finstr"])), undef
        sh([cc, "-O1", "-o", "prog", "main.c", "other.o"], src, env={"FUNTRACE_INSTR": instr})
        r = run_program([src / "prog"], tmp_path / f"run-{instr}", want_core=False)
        assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
        raw = only_snapshot(r.dir / "funtrace.raw")
        assert sequence(raw, main_thread(raw), Syms(src / "prog"), keep={"here", "other"}) == [
            ("here", "call"), ("here", "ret")]


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


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed")
def test_pkg_config_static_cxx_runtime(tree, tmp_path):
    """g++ -static-libstdc++ ... $(pkg-config --variable=libs_static_cxx
    funtrace): the program's exceptions work and are in the trace"""
    env = {"PKG_CONFIG_PATH": str(tree.lib / "pkgconfig")}
    cflags = sh(["pkg-config", "--cflags", "funtrace"], tmp_path, env).stdout.split()
    libs = sh(["pkg-config", "--variable=libs_static_cxx", "funtrace"], tmp_path, env).stdout.split()
    sh(["g++", "-O1", "-g", *cflags, "-o", "prog", str(tree.root / "tests" / "progs" / "exc_cases.cc"),
        "-static-libstdc++", *libs], tmp_path)
    run = tmp_path / "run"
    r = run_program([tmp_path / "prog", "caught"], run, want_core=False)
    assert r.returncode == 0, r.stderr
    res, tr = decode(tree, run / "funtrace.raw", json_out=tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    names = {s.n for s in tr.slices[tr.pid]}
    assert {"__cxa_throw", "__cxa_begin_catch", "__cxa_end_catch", "on_caught"} <= names, sorted(names)


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed")
def test_pkg_config_static(tree, tmp_path):
    """gcc -static ... $(pkg-config --variable=libs_static funtrace): the
    program's own SIGSEGV handler is installed and runs (with the runtime's
    interposers named for ld --wrap), and the trace records the fault"""
    env = {"PKG_CONFIG_PATH": str(tree.lib / "pkgconfig")}
    cflags = sh(["pkg-config", "--cflags", "funtrace"], tmp_path, env).stdout.split()
    libs = sh(["pkg-config", "--variable=libs_static", "funtrace"], tmp_path, env).stdout.split()
    sh(["gcc", "-O1", "-g", *cflags, "-o", "prog", str(tree.root / "tests" / "progs" / "ch_handler.c"), "-static",
        *libs], tmp_path)
    r = run_program([tmp_path / "prog", "query"], tmp_path / "run", want_core=False)
    assert r.returncode == 0 and r.stdout == "dispositions ok\n", (r.stdout, r.stderr)


@pytest.mark.parametrize("link", ["-static-libstdc++", "-static"])
def test_static_libstdcxx(tree, tmp_path, link):
    """-static-libstdc++ and -static link (with the C++ interposers under ld
    --wrap's names: test_exceptions.py) and the program is traced.  The
    check after the link counts the program's functions, not those of the
    static libraries linked in (libstdc++.a, libc.a: hundreds, uninstrumented,
    which made it warn "only 3 of 662 functions are instrumented")."""
    src = project(tmp_path)
    (src / "main.cc").write_text(MAIN_C.replace("void other(int);", 'extern "C" void other(int);'))
    sh([str(tree.tool("funtrace-gcc")), "-O1", "-c", "other.c"], src)
    r = sh([str(tree.tool("funtrace-g++")), "-O1", link, "-o", "prog", "main.cc", "other.o"], src)
    assert "funtrace-g++: warning" not in r.stderr, r.stderr
    check_program(src / "prog", tmp_path)
    c = sh([str(tree.tool("funtrace-gcc")), "-O1", "-static", "-o", "cprog", "main.c", "other.c"], src)
    assert "funtrace-gcc: warning" not in c.stderr, c.stderr
    (tmp_path / "c").mkdir()
    check_program(src / "cprog", tmp_path / "c")


def test_installed_wrappers(tree, tmp_path):
    """make install DESTDIR=...: the installed wrappers find the installed
    runtime and header relative to themselves."""
    dest = tmp_path / "dest"
    r = subprocess.run(["make", "install", f"DESTDIR={dest}"], cwd=tree.root, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    prefix = dest / "usr" / "local"
    for f in ("lib/libfuntrace.a", "lib/libfuntrace_static.a", "lib/libfuntrace_cxx.a", "lib/libfuntrace_cxxwrap.a",
              "include/funtrace.h",
              "include/funtrace_abi.h", "lib/pkgconfig/funtrace.pc", "bin/funtrace-gcc", "bin/funtrace-g++", "bin/funtrace-clang", "bin/funtrace-clang++"):
        assert (prefix / f).exists(), f
    src = project(tmp_path)
    sh([str(prefix / "bin" / "funtrace-gcc"), "-O1", "-o", "prog", "main.c", "other.c"], src)
    check_program(src / "prog", tmp_path)


# --------------------------------------------------------------------------
# LTO (issue 11.1): the code generated at link time is instrumented too
# --------------------------------------------------------------------------

LTO_CASES = [
    # (wrapper, FUNTRACE_INSTR, compile flags, how: "link" | "archive")
    ("funtrace-gcc", "pg", ["-flto"], "link"),
    ("funtrace-gcc", "pg", ["-flto=auto"], "link"),
    ("funtrace-gcc", "pg", ["-flto", "-fuse-linker-plugin"], "link"),
    ("funtrace-gcc", "pg", ["-flto", "-ffat-lto-objects"], "link"),
    ("funtrace-gcc", "pg", ["-flto=auto"], "archive"),
    ("funtrace-gcc", "finstr", ["-flto"], "link"),
    ("funtrace-gcc", "finstr", ["-flto=auto"], "archive"),
    ("funtrace-clang", "finstr", ["-flto"], "link"),
    ("funtrace-clang", "finstr", ["-flto=thin"], "link"),
    ("funtrace-clang", "finstr", ["-flto=thin"], "archive"),
]


@pytest.mark.parametrize("wrapper,instr,flags,how", LTO_CASES,
                         ids=[f"{w[9:]}-{i}-{'_'.join(f)}-{h}" for w, i, f, h in LTO_CASES])
def test_lto(tree, tmp_path, wrapper, instr, flags, how):
    """Separate compile and link under LTO (the repro of issue 11: 0 calls to
    __fentry__ before): every function is traced, with no warning."""
    if "clang" in wrapper and shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    src = project(tmp_path)
    cc = str(tree.tool(wrapper))
    env = {"FUNTRACE_INSTR": instr}
    for f in ("main.c", "other.c"):
        r = sh([cc, "-O2", *flags, "-c", f], src, env)
        assert r.stderr == ""
    inputs = ["main.o", "other.o"]
    if how == "archive":
        ar = "llvm-ar-14" if "clang" in wrapper else "gcc-ar"
        if shutil.which(ar) is None:
            ar = "llvm-ar"
        sh([ar, "rcs", "libother.a", "other.o"], src)
        inputs = ["main.o", "libother.a"]
    r = sh([cc, "-O2", *flags, "-o", "prog", *inputs], src, env)
    assert r.stderr == "", r.stderr
    undef = sh(["nm", "-u", "main.o"], src).stdout
    assert "__fentry__" not in undef  # an LTO object: the code is generated at link time
    check_program(src / "prog", tmp_path)


def test_lto_objects_without_wrapper_warn(tree, tmp_path):
    """LTO objects compiled with the plain compiler and linked with the wrapper:
    nothing is instrumented, and the link says so in one line (exit 0)."""
    src = project(tmp_path)
    for f in ("main.c", "other.c"):
        sh(["gcc", "-O2", "-flto", f"-I{tree.build / 'include'}", "-c", f], src)
    r = sh([str(tree.tool("funtrace-gcc")), "-O2", "-flto", "-o", "prog", "main.o", "other.o"], src)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert "prog: no function is instrumented" in lines[0] and "LTO" in lines[0]
    assert lines[0].startswith("funtrace-gcc: warning: ")
    r = sh([str(tree.tool("funtrace-gcc")), "-O2", "-flto", "-o", "prog", "main.o", "other.o"], src,
           {"FUNTRACE_CHECK": "0"})
    assert r.stderr == ""


def test_few_instrumented_warn(tree, tmp_path):
    """Only a tiny fraction instrumented (one wrapper-compiled file among 40
    plain-gcc functions): one warning line with the counts."""
    src = project(tmp_path)
    (src / "many.c").write_text("".join(
        f"__attribute__((noinline)) int f{i}(int x) {{ return x * {i} + {i}; }}\n" for i in range(40))
        + "int (*keep[])(int) = {" + ",".join(f"f{i}" for i in range(40)) + "};\n")
    sh(["gcc", "-O2", "-c", "many.c"], src)
    sh(["gcc", "-O2", "-c", "other.c"], src)
    r = sh([str(tree.tool("funtrace-gcc")), "-O2", "-o", "prog", "main.c", "other.o", "many.o"], src)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "only 2 of 43 functions are instrumented" in lines[0], r.stderr
    # every file through the wrapper: silent
    for f in ("many.c", "other.c"):
        sh([str(tree.tool("funtrace-gcc")), "-O2", "-c", f], src)
    r = sh([str(tree.tool("funtrace-gcc")), "-O2", "-o", "prog", "main.c", "other.o", "many.o"], src)
    assert r.stderr == ""


# --------------------------------------------------------------------------
# overhead control (issue 14.2): the original funtrace's filter flags, the
# compiler's exclusion list, and the call-counting mode
# --------------------------------------------------------------------------

FILTER_C = r"""
#include <funtrace.h>
volatile int n;
__attribute__((noinline)) void short_function(void) { n++; }
__attribute__((noinline)) void short_but_whitelisted(void) { n++; }
__attribute__((noinline)) void long_enough_function(void) {
    short_function(); n++; short_function(); n++; short_function(); n++; short_function(); n++;
    short_function(); n++; short_function(); n++; short_function(); n++; short_function(); n++;
}
__attribute__((noinline)) void long_but_blacklisted(void) {
    short_function(); n++; short_function(); n++; short_function(); n++; short_function(); n++;
    short_function(); n++; short_function(); n++; short_function(); n++; short_function(); n++;
}
__attribute__((noinline)) void short_with_loop(void) { while (!n); }
int main(void) {
    short_function(); short_but_whitelisted(); long_enough_function(); long_but_blacklisted();
    short_with_loop();
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
"""
FILTER_FUNCS = {"short_function", "short_but_whitelisted", "long_enough_function", "long_but_blacklisted",
                "short_with_loop"}
MODES = [("funtrace-gcc", "pg"), ("funtrace-gcc", "finstr"), ("funtrace-clang", "finstr")]


def traced_functions(prog, tmp_path, name="run"):
    r = run_program([prog], tmp_path / name, want_core=False)
    assert r.returncode == 0, r.stderr
    raw = only_snapshot(r.dir / "funtrace.raw")
    return {f for f, _ in sequence(raw, main_thread(raw), Syms(prog), keep=FILTER_FUNCS)}


@pytest.mark.parametrize("wrapper,instr", MODES, ids=["pg", "finstr", "clang"])
def test_filter_flags(tree, tmp_path, wrapper, instr):
    """-funtrace-instr-thresh / -ignore-loops / -no-trace / -do-trace with the
    original funtrace's meanings (its asm_filter test): short functions go,
    unless listed in the do-trace file or they loop; listed ones go."""
    if "clang" in wrapper and shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.c").write_text(FILTER_C)
    (src / "no-trace.txt").write_text("long_but_blacklisted\n")
    (src / "do-trace.txt").write_text("# kept although short\nshort_but_whitelisted\n")
    cc = str(tree.tool(wrapper))
    env = {"FUNTRACE_INSTR": instr}
    flags = ["-funtrace-instr-thresh=24", "-funtrace-no-trace=no-trace.txt", "-funtrace-do-trace=do-trace.txt"]
    # separate compile (with a dependency file) and link
    sh([cc, "-O1", "-g", *flags, "-MD", "-c", "f.c", "-o", "f.o"], src, env)
    assert "f.o:" in (src / "f.d").read_text()
    sh([cc, "-O1", "-o", "prog", "f.o"], src, env)
    assert traced_functions(src / "prog", tmp_path) == {
        "short_but_whitelisted", "long_enough_function", "short_with_loop"}
    # one step, and -funtrace-ignore-loops
    sh([cc, "-O1", "-g", *flags, "-funtrace-ignore-loops", "-o", "prog2", "f.c"], src, env)
    assert traced_functions(src / "prog2", tmp_path, "run2") == {"short_but_whitelisted", "long_enough_function"}
    # no flags: everything
    sh([cc, "-O1", "-g", "-o", "prog3", "f.c"], src, env)
    assert traced_functions(src / "prog3", tmp_path, "run3") == FILTER_FUNCS


@pytest.mark.parametrize("wrapper,instr", MODES, ids=["pg", "finstr", "clang"])
def test_exclude_list(tree, tmp_path, wrapper, instr):
    """-funtrace-exclude-list=FILE: gcc -finstrument-functions gets the
    compiler's own -finstrument-functions-exclude-function-list (no assembly
    editing), the other modes the assembly filter; the listed functions are
    not traced either way."""
    if "clang" in wrapper and shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.c").write_text(FILTER_C)
    (src / "x.txt").write_text("short_function\nlong_but_blacklisted\n")
    cc = str(tree.tool(wrapper))
    env = {"FUNTRACE_INSTR": instr}
    sh([cc, "-O1", "-g", "-funtrace-exclude-list=x.txt", "-c", "f.c", "-o", "f.o"], src, env)
    sh([cc, "-O1", "-o", "prog", "f.o"], src, env)
    assert traced_functions(src / "prog", tmp_path) == FILTER_FUNCS - {"short_function", "long_but_blacklisted"}


def test_filter_flag_errors(tree, tmp_path):
    """An unknown -funtrace-* flag, a bad threshold or an unreadable list: one line, exit 2."""
    for flag, what in [("-funtrace-bogus", "unknown flag"), ("-funtrace-instr-thresh=x", "number"),
                       ("-funtrace-no-trace=/nonexistent", "cannot read")]:
        r = subprocess.run([str(tree.tool("funtrace-gcc")), flag, "-c", "x.c"], capture_output=True, text=True,
                           cwd=tmp_path)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and what in r.stderr, r.stderr


COUNT_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <funtrace.h>
volatile int sink;
__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void mid(int x) { for (int i = 0; i < 10; i++) leaf(x + i); }
static void *worker(void *a) { for (int i = 0; i < 100000; i++) mid(i); return a; }
int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, worker, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    funtrace_pause_and_write_current_snapshot(); /* links, does nothing */
    puts("ok");
    return 0;
}
"""


@pytest.mark.parametrize("wrapper,instr", MODES, ids=["pg", "finstr", "clang"])
def test_count_mode(tree, tmp_path, wrapper, instr):
    """The same objects linked with -funtrace-count: exact call counts from 4
    threads, a report (calls, share, bytes, function, location) and an
    exclusion file of the hottest short functions."""
    if "clang" in wrapper and shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    src = tmp_path / "src"
    src.mkdir()
    (src / "c.c").write_text(COUNT_C)
    cc = str(tree.tool(wrapper))
    env = {"FUNTRACE_INSTR": instr}
    sh([cc, "-O2", "-g", "-pthread", "-c", "c.c"], src, env)
    sh([cc, "-pthread", "-funtrace-count", "-o", "prog", "c.o"], src, env)
    r = run_program([src / "prog"], tmp_path / "run", want_core=False,
                    env={"FUNTRACE_COUNT_FILE": str(tmp_path / "counts.txt")})
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    assert "call counts written to" in r.stderr
    assert not (r.dir / "funtrace.raw").exists() and not (r.dir / "gmon.out").exists()
    rep = subprocess.run([str(tree.tool("funtrace-count")), "-x", str(tmp_path / "ex.txt"),
                          str(tmp_path / "counts.txt")], capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    rows = {}
    for line in rep.stdout.splitlines()[2:]:
        parts = line.split()
        if len(parts) >= 4 and parts[0].isdigit():
            rows[parts[3]] = (int(parts[0]), parts[1], parts[4] if len(parts) > 4 else "")
    assert rows["leaf"][0] == 4_000_000 and rows["mid"][0] == 400_000, rep.stdout
    assert rows["worker"][0] == 4 and rows["main"][0] == 1
    assert rows["leaf"][1] == "90.91%"
    if "clang" not in wrapper:
        # clang 14's DWARF 5 line table is not read by Debian 12's libdw (0.188):
        # eu-addr2line says ??:0 as well, binutils' addr2line finds c.c:6
        assert rows["leaf"][2].endswith("c.c:6"), rep.stdout
    assert rep.stdout.startswith("4400005 calls to ")
    assert (tmp_path / "ex.txt").read_text().split() == ["leaf", "mid"]
    # the exclusion file goes straight back into the build
    sh([cc, "-O2", "-g", "-pthread", f"-funtrace-no-trace={tmp_path / 'ex.txt'}", "-c", "c.c"], src, env)
    sh([cc, "-pthread", "-funtrace-count", "-o", "prog", "c.o"], src, env)
    r = run_program([src / "prog"], tmp_path / "run2", want_core=False,
                    env={"FUNTRACE_COUNT_FILE": str(tmp_path / "counts2.txt")})
    rep = subprocess.run([str(tree.tool("funtrace-count")), str(tmp_path / "counts2.txt")],
                         capture_output=True, text=True)
    assert rep.stdout.startswith("5 calls to ") and " leaf " not in rep.stdout, rep.stdout


def test_count_report_errors(tree, tmp_path):
    """Not a count file: exit 2, one line; no calls: exit 1."""
    (tmp_path / "bad.txt").write_text("hello\n")
    r = subprocess.run([str(tree.tool("funtrace-count")), str(tmp_path / "bad.txt")], capture_output=True,
                       text=True)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "not a call-count file" in r.stderr
    (tmp_path / "none.txt").write_text("# funtrace call counts\nM 0 /bin/true\nL 0\n")
    r = subprocess.run([str(tree.tool("funtrace-count")), str(tmp_path / "none.txt")], capture_output=True,
                       text=True)
    assert r.returncode == 1 and "no calls" in r.stderr
