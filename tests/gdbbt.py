"""Final stacks: gdb's `bt` of a core next to funtrace-decode's, frame by frame.

Reusable by any test that has a kernel core and its raw (coreextract):

    from gdbbt import compare_final_stacks
    problems = compare_final_stacks(exe, core, decode_text, tid)
    assert not problems, "\\n".join(problems)

A frame is (function, source file basename, line).  Function names are
compared without parameters, return types and spaces (gdb prints
`std::__invoke<void (*)()>`, the decoder the demangled linkage name with its
signature); gdb's `??` (no symbol) matches the decoder's `lib.so+0xOFF`; and
the compiler's clones are their function (gdb's `f.isra.0`, the decoder's
`f`); glibc's aliases of one function are one name (`clone3`/`__clone3`,
`__GI_kill`/`__kill`, `__libc_sendto`/`sendto`, `__memcpy_avx512_unaligned_erms`/
`__memmove_avx512_unaligned_erms`: gdb and libdwfl pick
different ones of the ELF symbols at one address): leading underscores and
the `__GI_`/`__libc_` prefixes are not compared.
gdb's `bt` stops at main (as users see it); the decoder's frames past main
are not compared.
"""
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple


@dataclass
class Frame:
    num: int
    func: str
    file: Optional[str]
    line: Optional[int]

    def __str__(self):
        loc = f" at {self.file}:{self.line}" if self.file else ""
        return f"#{self.num} {self.func}{loc}"


def _strip_params(name: str) -> str:
    """`void ns::f<int>(int, char*) const` -> `void ns::f<int>`"""
    name = re.sub(r"\s+const$", "", name.strip())
    if not name.endswith(")") or name.endswith("operator()"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return name[:i] if name[:i] else name
    return name


def _strip_return_type(name: str) -> str:
    """`void ns::f<a b>` -> `ns::f<a b>`: the part after the last space outside <> and ()"""
    depth, cut = 0, -1
    for i, c in enumerate(name):
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == " " and depth == 0:
            cut = i
    return name[cut + 1:] if cut >= 0 and not name[:cut].endswith("operator") else name


def norm_func(name: str) -> str:
    # gdb shows a demangled clone's symbol as `f() [clone .cold]`
    name = re.sub(r" \[clone [^]]*\]$", "", name)
    if name.endswith("operator()()"):
        name = name[:-2]
    n = _strip_return_type(_strip_params(name)).replace(" ", "")
    # a class local to a function: gdb names its members from the DWARF
    # (`State::Match`), the demangled name says where it is
    # (`leveldb::Version::Get(...)::State::Match`)
    cut = n.replace("(anonymousnamespace)", "_" * 20).rfind(")::")
    if cut >= 0:
        n = n[cut + 3:]
    n = re.sub(r"\.(isra|part|constprop|lto_priv|cold|clone)\.\d+.*$|\.cold$", "", n)  # gdb names the clones
    n = re.sub(r"^(_*)memcpy_", r"\1memmove_", n)  # glibc's x86-64 __memcpy_<cpu> are its __memmove_<cpu>
    return re.sub(r"^_*(GI_+|libc_+)?", "", n)


def _unknown(name: str) -> bool:
    return name == "??" or bool(re.match(r"^\S+\+0x[0-9a-f]+$", name)) or bool(re.match(r"^0x[0-9a-f]+$", name))


_GDB_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*?)(?: at (\S+):(\d+))?(?: from \S+)?$")


def _gdb_func(rest: str) -> str:
    """`poke (p=0x0)` -> `poke`; `std::f<int> (x=...)` -> `std::f<int>`; `<signal handler called>`;
    a symbol without debug info, demangled with its parameters: `ns::f(void (*)()) ()` -> `ns::f(void (*)())`"""
    if rest.startswith("<signal handler called>"):
        return "<signal handler called>"
    depth = parens = 0
    for i, c in enumerate(rest):
        if c in "<":
            depth += 1
        elif c in ">":
            depth -= 1
        elif c == "(" and depth == 0 and parens == 0 and i > 0 and rest[i - 1] == " ":
            return rest[:i - 1]
        elif c == "(":
            parens += 1
        elif c == ")":
            parens -= 1
    return rest


def gdb_frame(line: str) -> Optional[Frame]:
    """one frame line of gdb's bt (`#3  0x... in f (a=...) at x.c:12`), or None"""
    m = _GDB_FRAME.match(line.rstrip())
    if not m:
        return None
    return Frame(int(m.group(1)), _gdb_func(m.group(2)), m.group(3) and Path(m.group(3)).name,
                 int(m.group(4)) if m.group(4) else None)


def gdb_thread_stacks(exe, core, past_main=False, past_entry=False,
                      timeout=300) -> Tuple[Optional[int], Dict[int, List[Frame]]]:
    """One gdb run on a core: (the current thread's tid -- the one the kernel
    put first, the thread that got the fatal signal -- or None, {tid: frames}
    of every thread as `thread apply all bt` shows them, innermost first)."""
    cmds = ["-ex", "set pagination off", "-ex", "set print frame-arguments none"]
    if past_main:
        cmds += ["-ex", "set backtrace past-main on"]
    if past_entry:
        cmds += ["-ex", "set backtrace past-entry on"]
    r = subprocess.run(["gdb", "-q", "-batch", "-nx", *cmds, "-ex", "thread apply all bt", str(exe), str(core)],
                       capture_output=True, text=True, timeout=timeout)
    out: Dict[int, List[Frame]] = {}
    cur = current = None
    for ln in r.stdout.splitlines():
        m = re.match(r"^\[Current thread is \d+ \(.*?LWP (\d+)\)", ln)
        if m:
            current = int(m.group(1))
            continue
        m = re.match(r"^Thread \d+ \(.*?LWP (\d+)\)", ln)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        f = gdb_frame(ln)
        if f and cur is not None:
            cur.append(f)
    assert out, f"gdb printed no backtrace of {core}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    if current is None and len(out) == 1:  # (gdb names the current thread only when there are several)
        current = next(iter(out))
    return current, out


def gdb_backtraces(exe, core, past_main=False, timeout=300) -> Dict[int, List[Frame]]:
    """{tid: frames} of every thread of a core, as gdb's `thread apply all bt` shows them."""
    return gdb_thread_stacks(exe, core, past_main=past_main, timeout=timeout)[1]


_OUR_FRAME = re.compile(r"^    #(\d+)\s+(?:0x[0-9a-f]+|\[inlined\]|\[tail-call\])\s+(.*?)(?: at (\S+):(\d+))?$")
_OUR_FOLD = re.compile(r"^    \.\.\. #(\d+)\.\.#(\d+): \d+ more frames (?:at the same address|repeating (.*)) \.\.\.$")
_OUR_CUT = re.compile(r"^    \.\.\. #(\d+)\.\.#(\d+): \d+ frames not kept by the unwinder")


@dataclass
class Stack:
    frames: List[Frame]
    folds: list   # [(first, last, [function names of the cycle] or None: the frame before)]
    cuts: list    # [(first, last)]


def decoder_stacks(text: str) -> Dict[int, Stack]:
    """{tid: Stack} of the final stacks in funtrace-decode --text output: the
    frames printed, the folded runs and the frames the unwinder did not keep,
    by gdb frame number."""
    out: Dict[int, Stack] = {}
    cur = None
    for ln in text.splitlines():
        m = re.match(r'^thread (\d+) "', ln)
        if m:
            cur = out.setdefault(int(m.group(1)), Stack([], [], []))
            continue
        if cur is None:
            continue
        m = _OUR_FRAME.match(ln)
        if m:
            cur.frames.append(Frame(int(m.group(1)), m.group(2), m.group(3) and Path(m.group(3)).name,
                                    int(m.group(4)) if m.group(4) else None))
            continue
        m = _OUR_FOLD.match(ln)
        if m:
            names = m.group(3).split(" <- ") if m.group(3) else None
            cur.folds.append((int(m.group(1)), int(m.group(2)), names))
            continue
        m = _OUR_CUT.match(ln)
        if m:
            cur.cuts.append((int(m.group(1)), int(m.group(2))))
    return out


def _same(g: Frame, o: Frame) -> bool:
    same_func = norm_func(g.func) == norm_func(o.func) or (_unknown(g.func) and _unknown(o.func))
    return same_func and (g.file is None or (g.file == o.file and g.line == o.line))


def compare(gdb: List[Frame], ours: Stack) -> List[str]:
    """The differences over gdb's frames (empty: the same): every frame gdb
    shows must be one the decoder prints with the same number, function and
    line, or lie in a folded run of the same functions, or among the frames
    the unwinder did not keep."""
    problems = []
    mine = {f.num: f for f in ours.frames}
    for g in gdb:
        o = mine.get(g.num)
        if o is not None:
            if not _same(g, o):
                problems.append(f"gdb {g}  vs  decoder {o}")
            continue
        fold = next((f for f in ours.folds if f[0] <= g.num <= f[1]), None)
        if fold is not None:
            if fold[2] is None:  # "more frames at the same address": the frame printed before the run
                o = mine.get(fold[0] - 1)
                ok = o is not None and _same(g, Frame(g.num, o.func, o.file, o.line))
            else:
                ok = norm_func(g.func) in {norm_func(n) for n in fold[2] if not n.startswith("...")} or \
                    any(n.startswith("...") for n in fold[2])
            if not ok:
                problems.append(f"gdb {g} is folded by the decoder into a run of other frames {fold}")
            continue
        if any(c[0] <= g.num <= c[1] for c in ours.cuts):
            continue
        problems.append(f"gdb {g}: no such frame in the decoder's stack")
        if len(problems) > 20:
            break
    return problems


def compare_final_stacks(exe, core, decoded_text: str, tid: int, past_main=False) -> List[str]:
    """compare() for thread tid of a core: gdb's bt against funtrace-decode --text."""
    g = gdb_backtraces(exe, core, past_main=past_main).get(tid)
    o = decoder_stacks(decoded_text).get(tid)
    if not g:
        return [f"gdb shows no stack for thread {tid}"]
    if not o or not o.frames:
        return [f"the decoder shows no final stack for thread {tid}"]
    return compare(g, o)
