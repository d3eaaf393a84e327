"""Test-side helpers for the decoder tests: run funtrace-decode, load its
Chrome-trace JSON, check nesting, turn a thread's slices into a call tree."""
import datetime
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from conftest import run_tool


def norm(name: str) -> str:
    """'ns::f(int) (x.cc:3)' -> 'ns::f'; 'g [libx.so]' -> 'g'."""
    name = re.sub(r" \([^()]*:\d+\)$", "", name)
    name = re.sub(r" \[[^\]]*\]$", "", name)
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            if name[i] == ")":
                depth += 1
            elif name[i] == "(":
                depth -= 1
                if depth == 0:
                    name = name[:i]
                    break
    return name


@dataclass
class Slice:
    name: str
    start: int  # ns
    end: int
    args: dict
    children: list = field(default_factory=list)

    @property
    def n(self):
        return norm(self.name)


@dataclass
class Trace:
    data: dict
    slices: Dict[int, List[Slice]]      # tid -> slices in file order
    names: Dict[int, str]               # tid -> thread name
    instants: List[dict]
    pid: int

    def tid_by_name(self, prefix: str) -> int:
        for tid, n in self.names.items():
            if n.split(" [")[0] == prefix:
                return tid
        raise KeyError(f"no thread named {prefix!r} in {self.names}")

    def gen_starts(self) -> List[tuple]:
        """[(gen, ts_ns)] of the generation-boundary instants, ascending."""
        out = [(e["args"]["gen"], ns(e["ts"])) for e in self.instants if e.get("s") == "g"]
        return sorted(out, key=lambda x: x[1])


def ns(us: float) -> int:
    return int(round(us * 1000))


def load(path) -> Trace:
    data = json.loads(Path(path).read_text())
    slices: Dict[int, List[Slice]] = {}
    names: Dict[int, str] = {}
    instants = []
    pid = 0
    for e in data["traceEvents"]:
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            pid = e["pid"]
        elif ph == "X":
            s = ns(e["ts"])
            slices.setdefault(e["tid"], []).append(Slice(e["name"], s, s + ns(e["dur"]), e.get("args", {})))
        elif ph == "i":
            instants.append(e)
        else:
            raise AssertionError(f"unexpected event phase {ph}: {e}")
    return Trace(data, slices, names, instants, pid)


def forest(slices: List[Slice]) -> List[Slice]:
    """Nest slices by time (asserting perfect nesting: no partial overlaps)."""
    order = sorted(range(len(slices)), key=lambda i: (slices[i].start, -slices[i].end, i))
    roots: List[Slice] = []
    stack: List[Slice] = []
    for i in order:
        s = slices[i]
        s.children = []
        assert s.end >= s.start, f"negative duration: {s}"
        while stack and not (stack[-1].start <= s.start and s.end <= stack[-1].end):
            top = stack.pop()
            assert top.end <= s.start, f"slices overlap without nesting:\n  {top}\n  {s}"
        (stack[-1].children if stack else roots).append(s)
        stack.append(s)
    return roots


def merge_gens(nodes: List[Slice]) -> List[Slice]:
    """Join the per-generation pieces of calls that span generation boundaries
    (a piece continuing into the next generation + the next piece from the
    previous one, same name, touching) into one node each, recursively."""
    out: List[Slice] = []
    for s in nodes:
        p = out[-1] if out else None
        if (p is not None and p.name == s.name and p.end == s.start and
                p.args.get("continues_in_next_generation") and s.args.get("from_previous_generation")):
            args = dict(p.args)
            args.pop("continues_in_next_generation", None)
            for k, v in s.args.items():
                if k != "from_previous_generation":
                    args[k] = v
            out[-1] = Slice(p.name, p.start, s.end, args, p.children + s.children)
        else:
            out.append(Slice(s.name, s.start, s.end, dict(s.args), list(s.children)))
    for s in out:
        s.children = merge_gens(s.children)
    return out


def check_nesting(tr: Trace):
    for tid, sl in tr.slices.items():
        forest(sl)


def render(nodes: List[Slice], depth=0, keep=None) -> List[str]:
    """Pre-order lines 'indent + normalized name'; keep(slice) filters (children of
    dropped slices are kept at the dropped slice's depth)."""
    out = []
    for s in nodes:
        if keep is None or keep(s):
            out.append("  " * depth + s.n)
            out += render(s.children, depth + 1, keep)
        else:
            out += render(s.children, depth, keep)
    return out


def decode(tree, raw, *args, json_out: Optional[Path] = None, decoder=None, timeout=120, input=None):
    """Run funtrace-decode; returns (CompletedProcess, Trace or None)."""
    exe = decoder or tree.tool("funtrace-decode")
    argv = [exe, *args]
    if json_out is not None:
        argv += ["--json", json_out]
    argv.append(raw)
    r = run_tool(argv, timeout=timeout, input=input, text=input is None or isinstance(input, str))
    tr = load(json_out) if json_out is not None and r.returncode in (0, 3) and Path(json_out).exists() else None
    return r, tr


def last_event_ns(text) -> int:
    """the "last event:" time of a --text header, as ns since the epoch"""
    m = re.search(r"last event: +(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{9}) ([+-]\d{4})", text)
    assert m, text[:2000]
    return int(datetime.datetime.strptime(f"{m.group(1)} {m.group(3)}", "%Y-%m-%d %H:%M:%S %z")
               .timestamp()) * 1_000_000_000 + int(m.group(2))


def crash_raw(tree, run_crash, exe, args=(), env=None, name="run", stacks=True) -> Path:
    """Run exe (expected to crash), extract its core with coreextract -> raw path."""
    r = run_crash([exe, *args], env=env, name=name)
    raw = r.dir / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), *([] if stacks else ["--no-stacks"]), "-o", raw, r.core, exe],
                  timeout=120)
    assert ce.returncode == 0, f"coreextract failed ({ce.returncode}): {ce.stderr}"
    return raw


def text_lines(tree, raw, *args) -> List[str]:
    """funtrace-decode RAW --text ARGS..., which must succeed: its lines"""
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text", *args])
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def crash_decoded(tree, run_crash, exe, args=(), env=None, json_out=None):
    """crash_raw, then its decode into json_out, which must succeed and whose
    pieces must nest: (raw, Trace)."""
    raw = crash_raw(tree, run_crash, exe, args, env=env)
    r, tr = decode(tree, raw, json_out=json_out)
    assert r.returncode == 0, r.stderr
    check_nesting(tr)
    return raw, tr


def core_trace(tree, exe, args, d, env=None):
    """Run exe (expected to crash) in d/run, coreextract its core to d/trace.raw and
    decode that into d/full.json: (raw, Trace)."""
    from conftest import run_program
    r = run_program([exe, *args], d / "run", env=env)
    assert r.core is not None, r.stderr
    raw = d / "trace.raw"
    ce = run_tool([tree.tool("coreextract"), "-o", raw, r.core, exe])
    assert ce.returncode == 0, ce.stderr
    res, full = decode(tree, raw, json_out=d / "full.json")
    assert res.returncode == 0, res.stderr
    return raw, full


def objdump_has_jmp(exe, func, target) -> bool:
    """Does func's code contain a jmp to target (a sibling call)?"""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True,
                         text=True).stdout
    m = re.search(rf"<{re.escape(func)}>:\n(.*?)\n\n", out, re.S)
    return bool(m and re.search(rf"jmp\s+\S+ <{re.escape(target)}", m.group(1)))


MODULE_SIZE = 496  # sizeof(struct ft_module) of ABI version 1


def modules(raw_path) -> List[dict]:
    """The MODULES table of a raw file: path, bias, generations, first segment."""
    import struct
    import rawfile
    out = []
    for payload in rawfile.parse(raw_path).modules:
        for off in range(0, len(payload) - MODULE_SIZE + 1, MODULE_SIZE):
            bias, gl, gu = struct.unpack_from("<QQQ", payload, off)
            state, nseg = struct.unpack_from("<II", payload, off + 40)
            seg0, = struct.unpack_from("<Q", payload, off + 48)
            path = payload[off + 176:off + MODULE_SIZE].split(b"\0")[0].decode("utf-8", "replace")
            out.append(dict(bias=bias, gen_loaded=gl, gen_unloaded=gu, state=state, nseg=nseg, seg0=seg0,
                            path=path))
    return out
