"""Test-side oracle for funtrace-decode's filters and views: what the
filters must keep of the unfiltered JSON, what --report and --flamegraph
must say about a set of slices, and a reader of `protoc --decode` output for
--perfetto files.  Everything here is computed from the JSON slices only."""
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from dec_util import Slice, forest


@dataclass
class Node:
    s: Slice
    depth: int
    parent: Optional["Node"]
    children: list = field(default_factory=list)

    @property
    def name(self):
        return self.s.name

    @property
    def dur(self):
        return self.s.end - self.s.start


def trees(tr) -> Dict[int, List[Node]]:
    """tid -> the slices as nodes, pre-order, with depth and parent (nesting by time)."""
    out = {}
    for tid, sl in tr.slices.items():
        nodes = []

        def walk(s, depth, parent):
            n = Node(s, depth, parent)
            nodes.append(n)
            if parent:
                parent.children.append(n)
            for c in s.children:
                walk(c, depth + 1, n)
        for root in forest(list(sl)):
            walk(root, 0, None)
        out[tid] = nodes
    return out


def ancestors(n: Node):
    p = n.parent
    while p:
        yield p
        p = p.parent


def bare(name: str) -> str:
    """'f(int)' -> 'f' (what -F/-N also match), 'f (x.c:3)' -> 'f'"""
    name = re.sub(r" \([^()]*:\d+\)$", "", name)
    name = re.sub(r" \[[^\]]*\]$", "", name)
    return name.split("(")[0]


def filtered(tr, F=None, N=None, depth=None, min_dur=None, since=None, until=None, tids=None,
             call_dur=None):
    """{tid: sorted [(name, start, end, reldepth)]} that the filters keep of tr's
    slices (regexes are Python re here: use plain names).  call_dur(node) gives
    a slice's whole call duration for min_dur (default: its own)."""
    out = {}
    for tid, nodes in trees(tr).items():
        if tids is not None and tid not in tids:
            continue
        kept = []
        for n in nodes:
            chain = [n] + list(ancestors(n))  # innermost first
            names = [bare(x.name) for x in chain]
            if F is not None:
                matches = [i for i, nm in enumerate(names) if re.search(F, nm)]
                if not matches:
                    continue
                rel = n.depth - chain[max(matches)].depth  # from the outermost match
            else:
                rel = n.depth
            if N is not None and any(re.search(N, nm) for nm in names):
                continue
            if depth is not None and rel >= depth:
                continue
            if min_dur is not None and (call_dur(n) if call_dur else n.dur) < min_dur:
                continue
            s, e = n.s.start, n.s.end
            if since is not None or until is not None:
                lo = since if since is not None else -(1 << 62)
                hi = until if until is not None else 1 << 62
                if not ((s < hi and e > lo) or (s == e and lo <= s <= hi)):
                    continue
                s, e = max(s, lo), min(e, hi)
            kept.append((n.name, s, e, rel))
        if kept:
            out[tid] = sorted(kept)
    return out


def as_kept(tr, args=False):
    """the same shape for a (filtered) decoder output (args: with each slice's JSON
    args, as a sorted tuple of (key, value))"""
    return {tid: sorted((n.name, n.s.start, n.s.end, n.depth) + ((tuple(sorted(n.s.args.items())),) if args else ())
                        for n in nodes)
            for tid, nodes in trees(tr).items() if nodes}


# ---- --report / --flamegraph --------------------------------------------

def fmt_dur(ns: int) -> str:
    """textfmt.c's fmt_dur"""
    sign = "-" if ns < 0 else ""
    a = abs(ns)
    if a < 1000:
        return f"{sign}{a} ns"
    if a < 1000000:
        return f"{sign}{a // 1000}.{a % 1000:03d} us"
    if a < 1000000000:
        return f"{sign}{a // 1000000}.{a // 1000 % 1000:03d} ms"
    return f"{sign}{a // 1000000000}.{a // 1000000 % 1000:03d} s"


def report_of(tr, by_thread=False):
    """{(tid or None, name): dict(calls, total, self, max, sum)} from the slices:
    total counts a function once while it is on the stack (recursion), self is
    a slice minus its children, calls and max/sum are per call (the pieces of a
    call that spans generations add up)."""
    rows = {}
    for tid, nodes in trees(tr).items():
        acc = {}
        for n in nodes:
            key = (tid if by_thread else None, n.name)
            r = rows.setdefault(key, dict(calls=0, total=0, self=0, max=0, sum=0))
            if all(a.name != n.name for a in ancestors(n)):
                r["total"] += n.dur
            r["self"] += n.dur - sum(c.dur for c in n.children)
            if not n.s.args.get("from_previous_generation"):
                r["calls"] += 1
                acc[n.depth] = 0
            acc[n.depth] = acc.get(n.depth, 0) + n.dur
            if not n.s.args.get("continues_in_next_generation"):
                r["max"] = max(r["max"], acc[n.depth])
                r["sum"] += acc[n.depth]
    return rows


REPORT_LINE = re.compile(r"^ +(\d+) +(-?\d+(?:\.\d+)? \w+) +(-?\d+(?:\.\d+)? \w+) +([\d.]+)% +"
                         r"(-?\d+(?:\.\d+)? \w+) +(-?\d+(?:\.\d+)? \w+)  (.*?)(?:  (\S+:\d+))?$")


def parse_report(text):
    """[(thread header or None, [dict(calls, total, self, pct, max, avg, name, loc)])]"""
    tables, cur, head = [], None, None
    for ln in text.splitlines():
        if ln.startswith("thread "):
            head = ln
            continue
        if re.match(r"^  \d+ calls of \d+ functions", ln):
            cur = []
            tables.append((head, cur))
            continue
        m = REPORT_LINE.match(ln)
        if m and cur is not None:
            cur.append(dict(calls=int(m[1]), total=m[2], self=m[3], pct=float(m[4]), max=m[5], avg=m[6],
                            name=m[7], loc=m[8]))
    return tables


FOLDED = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")  # flamegraph.pl's own line pattern


def parse_folded(text):
    """[(frames, weight)]"""
    out = []
    for ln in text.splitlines():
        m = FOLDED.match(ln)
        assert m, f"not a folded-stack line: {ln!r}"
        frames = m.group(1).split(";")
        assert all(frames), ln
        out.append((frames, int(m.group(2))))
    return out


# ---- protoc --decode text format ----------------------------------------

def parse_textproto(text):
    """protoc's text format -> nested dicts; repeated fields become lists"""
    tok = re.findall(r'"(?:[^"\\]|\\.)*"|[{}]|[^\s{}:"]+:?', text)
    pos = 0

    def value(t):
        if t.startswith('"'):
            return bytes(t[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        return t

    def msg():
        nonlocal pos
        d = {}
        while pos < len(tok) and tok[pos] != "}":
            key = tok[pos].rstrip(":")
            pos += 1
            if tok[pos] == "{":
                pos += 1
                v = msg()
                assert tok[pos] == "}"
                pos += 1
            else:
                v = value(tok[pos])
                pos += 1
            d.setdefault(key, []).append(v)
        return d
    return msg()


def perfetto_slices(text, args=False):
    """From `protoc --decode=perfetto.protos.Trace` output: (tracks, slices, instants):
    tracks {uuid: descriptor}, slices {track uuid: sorted [(name, start, end, depth)]},
    instants [(track, ts, name)].  Interned names are resolved per sequence.  args: each
    slice also has its debug annotations, as a sorted tuple of (name, value) (the JSON's
    args: bool and int values)."""
    trace = parse_textproto(text)
    tracks, open_, slices, instants, names, seqs, default_track = {}, {}, {}, [], {}, {}, {}
    anames = {}
    for p in trace.get("packet", []):
        seq = p["trusted_packet_sequence_id"][0]
        flags = p.get("sequence_flags", [0])[0]
        if flags & 1:
            names[seq] = {}
            anames[seq] = {}
            default_track.pop(seq, None)
        for d in p.get("trace_packet_defaults", []):
            for ted in d.get("track_event_defaults", []):
                default_track[seq] = ted["track_uuid"][0]
        for idata in p.get("interned_data", []):
            for en in idata.get("event_names", []):
                names[seq][en["iid"][0]] = en["name"][0]
            for an in idata.get("debug_annotation_names", []):
                anames[seq][an["iid"][0]] = an["name"][0]
        if "track_descriptor" in p:
            td = p["track_descriptor"][0]
            tracks[td["uuid"][0]] = td
        if "track_event" in p:
            ev = p["track_event"][0]
            ts = p["timestamp"][0]
            tr = ev["track_uuid"][0] if "track_uuid" in ev else default_track[seq]
            typ = ev["type"][0]
            seqs.setdefault(tr, set()).add(seq)
            if typ == "TYPE_SLICE_BEGIN":
                nm = names[seq][ev["name_iid"][0]] if "name_iid" in ev else ev["name"][0]
                a = {}
                for da in ev.get("debug_annotations", []):
                    key = anames[seq][da["name_iid"][0]] if "name_iid" in da else da["name"][0]
                    a[key] = da["bool_value"][0] == "true" if "bool_value" in da else da["int_value"][0]
                open_.setdefault(tr, []).append((nm, ts, len(open_.get(tr, [])), tuple(sorted(a.items()))))
            elif typ == "TYPE_SLICE_END":
                nm, start, depth, a = open_[tr].pop()
                assert ts >= start, (nm, start, ts)
                slices.setdefault(tr, []).append((nm, start, ts, depth) + ((a,) if args else ()))
            elif typ == "TYPE_INSTANT":
                instants.append((tr, ts, ev.get("name", ["?"])[0]))
    assert all(not v for v in open_.values()), "slices left open at the end of the file"
    return tracks, {k: sorted(v) for k, v in slices.items()}, instants


def call_durations(tr):
    """{id(slice): the whole call's duration} (a call that spans generations
    is one piece per generation: from_previous_generation /
    continues_in_next_generation)"""
    out = {}
    for tid, nodes in trees(tr).items():
        pieces = {}
        for n in nodes:
            if not n.s.args.get("from_previous_generation"):
                pieces[n.depth] = []
            pieces.setdefault(n.depth, []).append(n)
            if not n.s.args.get("continues_in_next_generation"):
                total = sum(p.dur for p in pieces[n.depth])
                for p in pieces[n.depth]:
                    out[id(p.s)] = total
        for ps in pieces.values():  # cut short (cannot happen): their own sum
            for p in ps:
                out.setdefault(id(p.s), sum(q.dur for q in ps))
    return out


def assert_perfetto_is_json(pftrace, tr, tid):
    """the --perfetto file pftrace, decoded with protoc and Perfetto's schema,
    has thread tid's slices of the JSON Trace tr, annotations included"""
    import subprocess
    from test_decoder_views import PERFETTO_PROTO
    with open(pftrace, "rb") as f:
        p = subprocess.run(["protoc", f"--proto_path={PERFETTO_PROTO.parent}", "--decode=perfetto.protos.Trace",
                            PERFETTO_PROTO.name], stdin=f, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    tracks, slices, _ = perfetto_slices(p.stdout.decode(), args=True)
    by_tid = {t["thread"][0]["tid"][0]: u for u, t in tracks.items() if "thread" in t}
    assert slices[by_tid[tid]] == as_kept(tr, args=True)[tid]
