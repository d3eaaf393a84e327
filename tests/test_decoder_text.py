"""funtrace-decode --text: the frames enclosing the first call shown, bounded
output for deep recursions, and caught exceptions decoded without symbols."""
import functools
import re
import struct
import subprocess

import pytest

from conftest import CLANG_MODES, INSTR_MODES
from dec_util import check_nesting, crash_raw, decode


def modes():
    return [pytest.param(m, marks=pytest.mark.clang) if m in CLANG_MODES else m for m in INSTR_MODES]


def calls(out, thread_marker="[crashed]"):
    """The call lines of one thread's --text section: dicts of start,
    duration, depth (indentation or [depth N]), name, marks."""
    body = out[out.index(thread_marker):]
    body = body.split("\n  final stack")[0].split("\nthread ")[0]
    res = []
    for ln in body.splitlines()[2:]:
        if not ln.startswith("  "):
            continue
        start, dur, rest = ln[2:20].strip(), ln[22:34].strip(), ln[36:]
        m = re.match(r"\[depth (\d+)\] (.*)$", rest)
        if m:
            depth, rest = int(m.group(1)), m.group(2)
        else:
            depth = (len(rest) - len(rest.lstrip(" "))) // 2
            rest = rest.lstrip(" ")
        res.append(dict(start=start, dur=dur, depth=depth, name=rest.split()[0] if rest.split() else "",
                        marks=re.findall(r"\[([^\]]+)\]", rest), line=ln))
    return res


def to_ns(s):
    v, u = s.split()
    return float(v) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[u]


@pytest.mark.parametrize("stacks", [True, False], ids=["finstack", "no-finstack"])
def test_enclosing_frames_come_first(tree, compiled, run_crash, stacks):
    """main -> outer_a -> outer_b -> work x40 -> leaf x2, then crash_here: the
    last 3 calls (leaf, leaf, crash_here) come after the 4 frames that were
    open when the first of them started, outermost first, at their real start
    times; those still running at the crash say so."""
    exe = compiled("dec_deep.c", "pg")
    raw = crash_raw(tree, run_crash, exe, stacks=stacks)
    r, _ = decode(tree, raw, "--text", "-n", "3")
    assert r.returncode == 0, r.stderr
    assert re.search(r"\[crashed\] -- \d+ events; last 3 calls \(and the 4 enclosing the first\), ", r.stdout), r.stdout
    cs = calls(r.stdout)
    assert [c["name"] for c in cs] == ["main", "outer_a", "outer_b", "work", "leaf", "leaf", "crash_here"], r.stdout
    assert [c["depth"] for c in cs] == [0, 1, 2, 3, 4, 4, 3], r.stdout
    assert all("enclosing" in c["marks"] for c in cs[:4]) and not any("enclosing" in c["marks"] for c in cs[4:])
    for c in cs[:3]:
        assert c["dur"] == "open" and "still open" in c["marks"], c["line"]
    # work returned: a real duration, started before its first leaf, ended after it
    assert cs[3]["dur"] != "open" and "still open" not in cs[3]["marks"], cs[3]["line"]
    starts = [to_ns(c["start"]) for c in cs]
    assert starts == sorted(starts) and starts[0] < starts[3] <= starts[4], r.stdout
    assert to_ns(cs[3]["start"]) + to_ns(cs[3]["dur"]) >= to_ns(cs[5]["start"]), r.stdout

    # -n 1: crash_here's enclosing frames are the ones still open
    r, _ = decode(tree, raw, "--text", "-n", "1")
    assert r.returncode == 0, r.stderr
    cs = calls(r.stdout)
    assert [(c["name"], c["depth"]) for c in cs] == [("main", 0), ("outer_a", 1), ("outer_b", 2),
                                                     ("crash_here", 3)], r.stdout
    assert all("still open" in c["marks"] for c in cs)

    # enough calls to reach back to main: nothing is marked enclosing
    r, _ = decode(tree, raw, "--text", "-n", "1000")
    assert r.returncode == 0, r.stderr
    cs = calls(r.stdout)
    assert cs[0]["name"] == "main" and not any("enclosing" in c["marks"] for c in cs), r.stdout
    assert "enclosing the first" not in r.stdout


def check_deep_text(tree, raw, stacks):
    r, _ = decode(tree, raw, "--text", "-n", "30")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) < 400, len(lines)
    assert max(len(ln) for ln in lines) < 200
    m = re.search(r"\[crashed\] -- \d+ events; last 30 calls \(and the (\d+) enclosing the first\)", r.stdout)
    assert m and int(m.group(1)) > 10000, r.stdout[:2000]
    cs = [c for c in calls(r.stdout) if c["start"]]
    assert [c["name"] for c in cs[:3]] == ["main", "deep_start", "recurse"], r.stdout[:3000]
    assert all("enclosing" in c["marks"] and "still open" in c["marks"] for c in cs[:3])
    fold = re.search(r"^ +\.\.\. (\d+) more open frames of recurse \.\.\.$", r.stdout, re.M)
    assert fold and int(fold.group(1)) > 10000, r.stdout[:3000]
    deep = [c for c in cs if "[depth " in c["line"]]
    assert len(deep) == 38, r.stdout  # 8 innermost enclosing + the 30 calls
    assert [c["depth"] for c in deep] == list(range(deep[0]["depth"], deep[0]["depth"] + 38))
    assert deep[0]["depth"] == int(m.group(1)) - 8
    assert all(c["name"] == "recurse" and "still open" in c["marks"] for c in deep)
    if stacks:
        fs = r.stdout[r.stdout.index("final stack"):]
        assert re.search(r"\.\.\. #\d+\.\.#\d+: \d+ more frames at the same address \.\.\.", fs), fs
        # the unwinder keeps the innermost and the outermost frames and says how many it left out
        assert re.search(r"\.\.\. #\d+\.\.#\d+: \d+ frames not kept by the unwinder", fs) and " main at " in fs, fs
        assert len(fs.splitlines()) < 16, fs
        # the truncated final stack's frames are the innermost open ones, not
        # frames that began before the ring
        assert "started before the ring" not in r.stdout
    return int(m.group(1))


@functools.lru_cache(maxsize=None)
def nm_symbols(exe):
    out = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    return {ln.split()[-1]: int(ln.split()[0], 16) for ln in reversed(out.splitlines()) if len(ln.split()) == 3}


def nm_addr(exe, name):
    return nm_symbols(exe)[name]


STACK_HDR = 4 * 4 + 27 * 8 + 8  # struct ft_raw_stack


def with_crashed_stack(raw, out, fn):
    """Copy raw to out with the crashed thread's FINSTACK pcs replaced by fn(pcs)."""
    data, res, off = raw.read_bytes(), b"", 0
    while off < len(data):
        magic, ln = data[off:off + 8], struct.unpack_from("<Q", data, off + 8)[0]
        payload = data[off + 16:off + 16 + ln]
        if magic == b"FINSTACK" and struct.unpack_from("<I", payload, 12)[0] & 1:
            n = struct.unpack_from("<I", payload, 8)[0]
            pcs = fn(list(struct.unpack_from(f"<{n}Q", payload, STACK_HDR)))
            hdr = bytearray(payload[:STACK_HDR])
            struct.pack_into("<I", hdr, 8, len(pcs))
            payload = bytes(hdr) + struct.pack(f"<{len(pcs)}Q", *pcs)
        res += magic + struct.pack("<Q", len(payload)) + payload
        off += 16 + ln
    out.write_bytes(res)
    return out


@pytest.mark.parametrize("stacks", [True, False], ids=["finstack", "no-finstack"])
def test_deep_recursion_text_stays_small(tree, compiled, run_crash, stacks, tmp_path):
    """A stack overflow leaves tens of thousands of recurse frames open: --text
    -n 30 collapses the enclosing ones into one line that names recurse, keeps
    main and deep_start (outermost) and the innermost ones, prints depths past
    the indentation cap as [depth N], and folds the final stack's run of
    identical return addresses.  With a final stack, that holds wherever the
    overflow faulted: the (truncated, innermost) final stack may start inside
    the -pg hook __fentry__ (before it logged recurse's call) or in the slow
    path it calls, or in recurse's body; the frames line up either way."""
    exe = compiled("dec_deep.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["overflow"], stacks=stacks)
    depth = check_deep_text(tree, raw, stacks)
    if not stacks:
        return
    # the other fault positions, constructed from this core's final stack
    # (truncated at its innermost 512 frames), which may hold any of them
    rec = nm_addr(exe, "recurse")
    bias = None

    def fault_in(*hooks):
        def f(pcs):
            nonlocal bias
            fentry = nm_addr(exe, "__fentry__")
            body = [pc for pc in pcs if bias is None or pc - bias < fentry]
            bias = (body[1] - rec) & ~0xfff
            body = [pc for pc in pcs if pc - bias < fentry]
            return [bias + nm_addr(exe, h) + k for h, k in hooks] + body[:len(pcs) - len(hooks)]
        return f

    variants = {
        # first push of __fentry__ faults: recurse's call is not logged
        "fentry": fault_in(("__fentry__", 0xc)),
        # inside the slow path of __fentry__ (at its first push too)
        "slow": fault_in(("ft_asm_slow", 1), ("__fentry__", 0x60)),
        # in recurse's body (its call logged)
        "body": fault_in(),
    }
    for name, fn in variants.items():
        v = with_crashed_stack(raw, tmp_path / f"{name}.raw", fn)
        assert check_deep_text(tree, v, stacks) == depth, name


@pytest.mark.parametrize("mode", modes())
def test_caught_exception_without_symbols(tree, compiled, run_crash, tmp_path, mode):
    """catcher -> l1 -> l2 -> l3 -> thrower throws, caught in catcher, which
    then calls after(): without symbols the tree is the same as with them --
    the four frames unwound by the exception, after() a child of catcher
    (clang logs no returns for unwound frames: the catch pops them)."""
    exe = compiled("dec_catch.cc", mode)
    raw = crash_raw(tree, run_crash, exe, stacks=False)
    r, _ = decode(tree, raw, "--text", "-n", "20")
    assert r.returncode == 0, r.stderr
    named = calls(r.stdout)
    assert [(c["name"].split("(")[0], c["depth"]) for c in named] == [
        ("main", 0), ("catcher", 1), ("l1", 2), ("l2", 3), ("l3", 4), ("thrower", 5), ("__cxa_throw", 6),
        ("__cxa_begin_catch", 2), ("__cxa_end_catch", 2), ("after", 2), ("crash_here", 1)], r.stdout
    # gcc -finstrument-functions logs the returns of unwound frames itself
    assert all(("unwound by exception" in c["marks"]) == (mode != "finstr") for c in named[2:6]), r.stdout
    assert all(c["dur"] != "open" for c in named[1:7]), r.stdout
    r, tr = decode(tree, raw, "--text", "-n", "20", "--no-symbols", json_out=tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    bare = calls(r.stdout)
    assert "return missing" not in r.stdout, r.stdout
    assert [(c["start"], c["dur"], c["depth"], c["marks"]) for c in bare] == \
        [(c["start"], c["dur"], c["depth"], c["marks"]) for c in named], r.stdout


def test_mutual_recursion_final_stack_folds(tree, compiled, run_crash):
    """A stack overflow through a mutual recursion (ping -> pong -> ping ...):
    the final stack's 512 frames alternate between two return addresses; --text
    shows one cycle and folds the rest into one line naming ping <- pong (or
    pong <- ping) instead of printing hundreds of frames."""
    exe = compiled("dec_deep.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["mutual"])
    r, _ = decode(tree, raw, "--text", "-n", "30")
    assert r.returncode == 0, r.stderr
    fs = r.stdout[r.stdout.index("final stack"):]
    m = re.search(r"final stack \(\w+, (\d+) frames", fs)
    assert m and int(m.group(1)) >= 500, fs[:2000]
    fold = re.search(r"^    \.\.\. #(\d+)\.\.#(\d+): (\d+) more frames repeating (\w+) <- (\w+) \.\.\.$", fs, re.M)
    assert fold, fs[:3000]
    a, b, n = int(fold.group(1)), int(fold.group(2)), int(fold.group(3))
    assert {fold.group(4), fold.group(5)} == {"ping", "pong"} and b - a + 1 == n and n > 400, fold.group(0)
    assert len(fs.splitlines()) < 20, fs  # the innermost frames, the cut, the outermost ones
    # the frames shown before the fold: the cycle once, in full
    shown = re.findall(r"^    #\d+ +0x[0-9a-f]+  (\w+)", fs[:fold.start()], re.M)
    assert shown[-2:] in (["ping", "pong"], ["pong", "ping"]), fs[:fold.start()]
