"""--text reads only the end of each ring (decoder/textwindow.c): on a ring
larger than the part it reads, the last calls, their depths and the frames
enclosing them are those of the whole decode; what it cannot know (when an
enclosing call began) is said; filters that leave too few calls make it
read further back.  dec_pattern: main -> run -> (leaf x3, mid -> leaf) x N,
then crash_here (or a snapshot)."""
import re

import pytest

from conftest import run_program, run_tool
from dec_util import core_trace, crash_raw
from views_oracle import bare, trees

N = 100000          # iterations: 5 calls each, 1,000,000 ring entries
BUF = str(16 << 20)  # a ring that holds them all (16 MiB = 1 Mi entries)
WINDOW = 65536       # items --text reads first (TW_BASE)


def calls(out, marker):
    """(depth, name, duration, marks) of one thread's call lines"""
    body = out[out.index(marker):].split("\n  final stack")[0].split("\nthread ")[0]
    res = []
    for ln in body.splitlines()[2:]:
        m = re.match(r"^  +\S+ \S+ +(open|\S+ \S+)  ( *)(\w+)(?:  \S+:\d+)?(.*)$", ln)
        if m:
            res.append((len(m.group(2)) // 2, m.group(3), m.group(1), re.findall(r"\[([^\]]+)\]", m.group(4))))
    return res


@pytest.fixture(scope="module")
def big(tree, compiled, tmp_path_factory):
    exe = compiled("dec_pattern.c", "pg")
    d = tmp_path_factory.mktemp("tw")
    raw, full = core_trace(tree, exe, ["crash", str(N)], d, env={"FUNTRACE_BUF": BUF, "FUNTRACE_GEN_MS": "0"})
    return raw, full, exe, d


def test_text_reads_the_end_of_a_big_ring_and_agrees_with_the_whole_decode(tree, big):
    raw, full, _, _ = big
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text", "-n", "5"])
    assert r.returncode == 0, r.stderr
    m = re.search(r"\[crashed\] -- (\d+) events read from the end of its ring \(the last (\d+) of (\d+) entries\)",
                  r.stdout)
    assert m and int(m.group(2)) == WINDOW and int(m.group(3)) >= 5 * N * 2, r.stdout[:2000]
    assert "events read from the ends of the rings" in r.stdout
    got = calls(r.stdout, "[crashed]")
    # the whole decode's last 5 calls and the frames enclosing the first of them
    nodes = next(iter(trees(full).values()))
    last = nodes[-5:]
    chain, p = [], last[0].parent
    while p:
        chain.insert(0, p)
        p = p.parent
    want = [(n.depth, bare(n.name)) for n in chain + last]
    # main's call is not in the part read: main comes from the final stack,
    # with the frames below it (_start, libc's), as for a ring that wrapped
    names = [nm for _, nm, _, _ in got]
    k = names.index("main")
    assert names[:k] and all(nm.startswith(("_start", "__libc")) for nm in names[:k]), r.stdout
    assert all("enclosing" in c[3] and c[2] == "open" for c in got[:k])
    assert [(dp - k, nm) for dp, nm, _, _ in got[k:]] == want, r.stdout
    main, run = got[k], got[k + 1]
    assert main[2] == "open" and "still open" in main[3] and "enclosing" in main[3]
    # run began long before the part read: a lower bound, and it says why
    assert run[2].startswith(">") and "started before the part read" in run[3], run
    assert "started before the ring" not in r.stdout


def test_filters_make_the_text_view_read_further_back(tree, big):
    """--until a little after the first calls: the calls it asks for are at the very
    beginning of the ring, far before the part read first"""
    raw, full, _, _ = big
    nodes = next(iter(trees(full).values()))
    # the cut (ns from the JSON's origin, the start of what is shown) halfway into the first gap
    # of at least 200 ns between call starts after the sixth call: whatever the machine's speed
    starts = sorted(n.s.start for n in nodes)
    k = next(i for i in range(5, len(starts) - 1) if starts[i + 1] - starts[i] >= 200)
    until = (starts[k] + starts[k + 1]) // 2
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text", "-n", "4", "--until", f"+{until}ns"])
    assert r.returncode == 0, r.stderr
    got = calls(r.stdout, "[crashed]")
    early = [n for n in nodes if n.s.start < until]
    assert len(early) > 4 and starts[-1] > until
    assert [(dp, nm) for dp, nm, _, _ in got][-4:] == [(n.depth, bare(n.name)) for n in early[-4:]], r.stdout
    # it read back to the start of the ring
    assert "read from the end of its ring" not in r.stdout, r.stdout


def test_snapshot_without_final_stack_says_what_it_cannot_know(tree, big):
    _, _, exe, d = big
    snap = d / "snap.raw"
    r = run_program([exe, "snapshot", str(N), snap], d / "snap", env={"FUNTRACE_BUF": BUF, "FUNTRACE_GEN_MS": "0"},
                    want_core=False)
    assert r.returncode == 0 and snap.exists(), r.stderr
    r = run_tool([tree.tool("funtrace-decode"), snap, "--text", "-n", "3"])
    assert r.returncode == 0, r.stderr
    assert "read from the end of its ring" in r.stdout
    assert "(calls made before the part read that were still running are not shown: no whole final stack " \
           "for this thread)" in r.stdout, r.stdout
    # the whole decode knows main; the end of the ring alone cannot
    got = calls(r.stdout, "-- ")
    assert "main" not in [nm for _, nm, _, _ in got] and "run" in [nm for _, nm, _, _ in got], r.stdout


def test_text_header_names_an_original_raw(tree, compiled, run_crash, tmp_path):
    """issue 14: the header says what the raw came from, with the right article"""
    import dec_oldraw
    exe = compiled("dec_pattern.c", "pg")
    raw = crash_raw(tree, run_crash, exe, ["crash"])
    old = tmp_path / "funtrace.raw"
    old.write_bytes(dec_oldraw.to_original(raw.read_bytes()))
    r = run_tool([tree.tool("funtrace-decode"), old, "--text"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"^funtrace: `.*dec_pattern-pg crash` \(pid \d+\), from an original funtrace\.raw$",
                     r.stdout, re.M), r.stdout[:300]
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text"])
    assert re.search(r"\), from a core file$", r.stdout, re.M), r.stdout[:300]


def with_items(raw, dst, changes):
    """Copy raw to dst with the crashed thread's (the biggest TRACEE08 chunk's) items
    changed: {item index: new 8-byte value}; returns that thread's items as they were."""
    import struct
    from rawfile import chunks, parse
    data = bytearray(raw.read_bytes())
    off, best = 0, None
    for magic, p in chunks(bytes(data)):
        if magic == "TRACEE08" and (best is None or len(p) > best[1]):
            best = (off + 16, len(p))
        off += 16 + len(p)
    assert best, "no TRACEE08 chunk"
    for i, w in changes.items():
        struct.pack_into("<Q", data, best[0] + 8 * i, w)
    dst.write_bytes(data)
    [items] = [t.items for t in parse(raw).threads if len(t.items) * 8 == best[1]]
    return items


def test_text_view_checks_only_the_part_it_reads_for_zeroed_entries(tree, big, tmp_path):
    """issue 13 + the fast text view: a zeroed entry before the part --text reads (with the
    escapes the runtime writes at the next generation after it, so that the state is known
    again) neither changes its lines nor is reported by it, while the whole-ring views still
    report it; one inside the part read is reported, with how much was checked."""
    from rawfile import e8_escape, E8_ADDR_HI, E8_TSC_HI, E8_ESC
    raw, _, _, _ = big
    dec = tree.tool("funtrace-decode")
    ref = run_tool([dec, raw, "--text", "-n", "5"])
    assert ref.returncode == 0 and "zeroed" not in ref.stdout, ref.stdout
    # before the part read: a zeroed entry, then the two escapes (over two events) that
    # give the high halves back
    before = tmp_path / "before.raw"
    items = with_items(raw, before, {})
    n = len(items)
    k = n - WINDOW - 20000
    hi = {}
    for w in items[:k]:
        if w & 3 == E8_ESC:
            hi[(w >> 2) & 63] = w >> 32
    assert E8_ADDR_HI in hi and E8_TSC_HI in hi
    with_items(raw, before, {k: 0, k + 1: e8_escape(E8_ADDR_HI, hi[E8_ADDR_HI]),
                             k + 2: e8_escape(E8_TSC_HI, hi[E8_TSC_HI])})
    r = run_tool([dec, before, "--text", "-n", "5"])
    assert r.returncode == 0, r.stdout
    assert r.stdout == ref.stdout
    s = run_tool([dec, before, "--summary"])
    assert s.returncode == 3
    assert f"has 1 zeroed or invalid entries inside its trace (items {k}..{k}" in s.stdout, s.stdout
    # inside the part read: reported, with the part checked; the exit status says so
    inside = tmp_path / "inside.raw"
    j = n - 1000
    with_items(raw, inside, {j: 0})
    r = run_tool([dec, inside, "--text", "-n", "5"])
    assert r.returncode == 3, r.stdout
    m = re.search(r"has 1 zeroed or invalid entries in the last (\d+) of its (\d+) entries, the part read and "
                  rf"checked \(items {j}\.\.{j}, after the event ", r.stdout)
    assert m and WINDOW <= int(m.group(1)) < n and int(m.group(2)) == n, r.stdout
    s = run_tool([dec, inside, "--summary"])
    assert s.returncode == 3
    assert f"has 1 zeroed or invalid entries inside its trace (items {j}..{j}" in s.stdout, s.stdout
