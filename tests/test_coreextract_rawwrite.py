"""reader/rawwrite.c + rawwrite_ring.c on constructed targets: the ring linearization rules of
FORMAT.md 2.3 for states a real program only reaches by chance (torn and
uncommitted slots, missing pages, corrupt registries, a writer racing a live copy).

tests/progs/ce_rawunit.c builds the target in its own memory (the real ABI structs,
written the way the runtime's hot path writes them) and runs the real rawwrite.c +
rawwrite_ring.c, compiled with ASan+UBSan, over it."""
import os
import subprocess

import pytest

import rawfile
from conftest import ROOT

TSF = rawfile.TSF
GEN_NONE = rawfile.GEN_NONE
PARTIAL, TIME_FILTERED = 1, 4
W = 0x400000  # event k has word W + k and tsc k


@pytest.fixture(scope="module")
def unit_exe(compiled):
    return compiled("ce_rawunit.c", "none", tag="san",
                    extra=["-I", str(ROOT / "runtime" / "include"), "-I", str(ROOT / "reader"),
                           str(ROOT / "reader" / "rawwrite.c"), str(ROOT / "reader" / "rawwrite_ring.c"),
                           "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])


@pytest.fixture(scope="module")
def unit(unit_exe):
    def run(*args):
        r = subprocess.run([str(unit_exe), *map(str, args)], capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        raw = rawfile.parse(r.stdout)
        assert raw.ended and raw.header["nthreads"] == len(raw.threads)
        return raw, r.stderr.decode()
    return run


def tscs(t):
    return [tsc for _, tsc in t.entries]


def test_first_lap(unit):
    raw, _ = unit("firstlap")
    [t] = raw.threads
    assert (t.flags, t.n_entries, t.n_dropped, t.first_off, t.pos_off) == (0, 10, 0, 0, 160)
    assert t.entries == [(W + k, k) for k in range(1, 11)]
    assert (t.tid, t.name, t.pid) == (100, "t100", 4242)
    assert raw.cmdline == "prog arg one x" and raw.header["flags"] == 0


def test_wrapped(unit):
    raw, _ = unit("wrapped")          # 300 events in 256 slots: pos at slot 44
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] and t.pos_off == 44 * 16
    assert t.n_entries == 255 and t.first_off == 45 * 16 and t.n_dropped == 0
    assert tscs(t) == list(range(46, 301))   # the slot at pos (event 45) is not emitted


def test_uncommitted_is_appended_last(unit):
    raw, _ = unit("uncommitted")
    [t] = raw.threads
    assert t.flags == TSF["UNCOMMITTED"] and t.n_entries == 11 and t.n_dropped == 0
    assert tscs(t) == list(range(1, 12)) and t.entries[-1] == (W + 11, 11)


def test_torn_slot_is_dropped(unit):
    raw, _ = unit("torn")
    [t] = raw.threads
    assert t.flags == TSF["TORN"] and t.n_entries == 10 and t.n_dropped == 1
    assert tscs(t) == list(range(1, 11))


def test_wrapped_uncommitted(unit):
    raw, _ = unit("wrapped_uncommitted")
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] | TSF["UNCOMMITTED"] and t.n_entries == 256
    assert tscs(t) == list(range(46, 302))


def test_wrapped_torn_over_oldest_is_not_emitted(unit):
    raw, _ = unit("wrapped_torn")
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] and t.n_entries == 255 and t.n_dropped == 0
    assert tscs(t) == list(range(46, 301))


def test_pos_at_last_slot(unit):
    raw, _ = unit("lastslot_wrapped")   # 511 events: pos = slot 255, which holds event 256
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] and t.first_off == 0 and tscs(t) == list(range(257, 512))
    raw, _ = unit("lastslot_torn")      # first lap, torn write into the last slot
    [t] = raw.threads
    assert t.flags == TSF["TORN"] and t.n_dropped == 1 and tscs(t) == list(range(1, 256))


def test_time_filter(unit):
    raw, _ = unit("min_tsc")
    [t] = raw.threads
    assert raw.header["flags"] == TIME_FILTERED and raw.header["min_tsc"] == 6
    assert tscs(t) == [6, 7, 8, 9, 10] and t.n_dropped == 5 and t.first_off == 5 * 16


def test_missing_page_in_ring(unit):
    raw, err = unit("missing_page")    # 16 KiB ring, page 1 (slots 256..511) unreadable
    [t] = raw.threads
    assert t.flags == TSF["RING_PARTIAL"] and raw.header["flags"] == PARTIAL
    assert tscs(t) == list(range(1, 257)) + list(range(513, 1001)) and t.n_entries == 744
    assert "ring of thread 100 is partly missing" in err


def test_missing_ring(unit):
    raw, _ = unit("missing_ring")
    t, u = raw.threads
    assert t.flags == TSF["RING_MISSING"] and t.entries == [] and t.n_entries == 0
    assert u.flags == 0 and tscs(u) == [1, 2, 3]
    assert raw.header["flags"] == PARTIAL


def test_bad_pos(unit):
    raw, _ = unit("bad_pos")
    [t] = raw.threads
    assert t.flags == TSF["BAD_POS"] and t.entries == [] and t.pos_off == 4096 + 16
    assert raw.header["flags"] == PARTIAL


def test_thread_states(unit):
    raw, _ = unit("states")
    by = {t.tid: t for t in raw.threads}
    assert [t.tid for t in raw.threads] == [100, 101, 102, 103, 106]   # FREE skipped, state 9 lost
    assert raw.header["nthreads_lost"] == 1 and raw.header["flags"] == PARTIAL
    assert tscs(by[100]) == [1, 2] and tscs(by[101]) == [1, 2, 3] and by[101].exit_tsc == 99
    for tid in (102, 103):   # evicted / ignored: no ring by design, not "missing"
        assert by[tid].flags == 0 and by[tid].entries == [] and by[tid].first_off == by[tid].pos_off
    assert by[106].flags == TSF["RING_MISSING"]
    chunk_names = [m for m, _ in raw.chunks]
    assert chunk_names.count("TRACEBUF") == 5


def test_sampled(unit):
    raw, _ = unit("sampled")
    [t] = raw.threads
    tw = lambda v: (7 << 61) | v
    words = [w for w, _ in t.entries]
    assert words == [tw(10), W + 1, W + 2, W + 3, W + 4, tw(50), W + 5, W + 6, W + 7, W + 8]
    # the time word + event in flight at pos are not emitted
    assert t.fmt == 2 and t.n_dropped == 1 and t.flags == 0
    assert [m for m, _ in raw.chunks].count("TRACEW08") == 1
    raw, _ = unit("sampled", 40)
    [t] = raw.threads
    assert [w for w, _ in t.entries][0] == tw(50) and t.n_entries == 5 and t.n_dropped == 1 + 5


def test_sampled_wrapped(unit):
    raw, _ = unit("sampled_wrapped")   # 700 words in 512 slots
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] and t.n_entries == 511
    assert [w - W for w, _ in t.entries] == list(range(190, 701))


def test_tables(unit):
    raw, _ = unit("tables")
    assert [g["gen"] for g in raw.gens] == [2, 3, 4, 5]          # valid ones, ascending
    assert [g["start_tsc"] for g in raw.gens] == [200, 300, 400, 500]
    [payload] = raw.modules
    assert len(payload) == 2 * 496                                # FREE one left out
    import struct
    nseg0, = struct.unpack_from("<I", payload, 44)
    bidlen0, = struct.unpack_from("<I", payload, 112)
    assert nseg0 == 4 and bidlen0 == 40
    assert payload[176 + 319] == 0                                # path NUL-terminated
    m1 = payload[496:]
    assert struct.unpack_from("<I", m1, 40)[0] == 2               # UNLOADED
    assert struct.unpack_from("<2Q", m1, 48) == (0x2000, 0x100)
    assert struct.unpack_from("<2Q", m1, 64) == (0, 0)            # beyond nseg: cleared
    assert m1[176:176 + 320] == b"/lib/x.so" + b"\0" * 311        # garbage after NUL cleared
    [t] = raw.threads
    assert t.gen_pos[2] == (2, 16) and t.gen_pos[3] == (3, 2 ** 64 - 1) and t.gen_pos[4] == (GEN_NONE, 777)
    assert t.gen_pos[0] == (GEN_NONE, 0)


def test_corrupt_counts_and_pointers(unit):
    raw, err = unit("corrupt")       # threads_used > cap, huge module table, huge cmdline
    assert raw.header["flags"] == PARTIAL and len(raw.threads) == 1 and tscs(raw.threads[0]) == [1, 2, 3]
    assert raw.cmdline == "prog arg one x"
    assert "exceeds its capacity" in err
    raw, err = unit("corrupt_ptrs")  # registry pointer that wraps the address space
    assert raw.header["flags"] == PARTIAL and raw.threads == [] and raw.gens == []


@pytest.mark.parametrize("scratch", [True, False])
def test_live_copy_race(unit, scratch):
    """A writer advancing k entries while the ring is copied: exactly the k oldest
    are dropped (they may have been overwritten), the rest is the intact tail."""
    sc = "live_race" if scratch else "live_race_noscratch"
    raw, err = unit(sc, 10)
    [t] = raw.threads
    assert raw.header["source"] == 2
    assert t.flags == TSF["WRAPPED"] | TSF["COPY_RACED"] and t.n_dropped == 10
    assert t.first_off == (44 + 10 + 1) * 16 and tscs(t) == list(range(56, 301))
    assert "was written while it was copied" in err
    raw, _ = unit(sc, 255)           # lapped: nothing is trustworthy
    [t] = raw.threads
    assert t.flags & TSF["COPY_RACED"] and t.entries == [] and t.n_dropped == 255


def test_live_writer_lapping_the_ring_during_the_copy(unit):
    """pos moved by only 10 slots, but while page 2 of 4 was being copied the writer
    went once around the ring: its new entries are newer than the time pos was read
    and are left out; what is emitted is what the ring held then, in order."""
    raw, _ = unit("live_lap")
    [t] = raw.threads
    assert t.flags & TSF["COPY_RACED"]
    assert tscs(t) == list(range(1, 513))    # pages 0-1, copied before the lap
    assert t.n_dropped >= 1000 - 512


@pytest.mark.parametrize("scenario", [
    ("firstlap",), ("wrapped",), ("uncommitted",), ("torn",), ("wrapped_uncommitted",), ("wrapped_torn",),
    ("lastslot_wrapped",), ("lastslot_torn",), ("min_tsc",), ("missing_page",), ("missing_ring",),
    ("bad_pos",), ("states",), ("sampled",), ("sampled", 25), ("sampled_wrapped",), ("tables",), ("corrupt",),
])
def test_rings_used_in_place_give_the_same_bytes(unit_exe, scenario):
    """A source that holds the rings in the producer's memory (coreextract's
    mmapped core: ft_source_info.map) has them planned and streamed in place;
    the raw is byte for byte the one read through the reader (in blocks, page by
    page), including rings with missing pages (not offered in place)."""
    outs = []
    for env in (None, dict(os.environ, CE_RAWUNIT_MAP="1")):
        r = subprocess.run([str(unit_exe), *map(str, scenario)], capture_output=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr.decode()
        outs.append((r.stdout, r.stderr))
    assert outs[0] == outs[1]
    raw = rawfile.parse(outs[1][0])
    assert raw.ended and raw.header["nthreads"] == len(raw.threads)


def test_procmaps_mirrors_mappings(unit):
    """PROCMAPS (FORMAT.md 2.2): the MAPPINGS records as /proc/PID/maps lines,
    right after MAPPINGS, for readers of the original format (funtrace2viz)."""
    raw, _ = unit("procmaps")
    names = [m for m, _ in raw.chunks]
    assert names[names.index("MAPPINGS") + 1] == "PROCMAPS"
    assert raw.procmaps_text == (b"00400000-00401000 r--p 00000000 00:00 0 /bin/prog\n"
                                 b"00401000-00402000 r-xp 00001000 00:00 0 /bin/prog\n"
                                 b"7f0000001000-7f0000003000 rw-p 123456789 00:00 0 \n"
                                 b"00000010-00000020 ---p 00000000 00:00 0 /tmp/a\\012b c\n")
    assert [(m["start"], m["end"], m["offset"]) for m in raw.procmaps] == \
        [(m["start"], m["end"], m["offset"]) for m in raw.mappings[:4]]
    raw, _ = unit("firstlap")          # no MAPPINGS payload: an empty PROCMAPS
    assert ("PROCMAPS", b"") in raw.chunks


# ---- FT_FMT_EXACT8 rings (FORMAT.md 1.4, 2.3): 8-byte entries with escapes ----
# ce_rawunit's events8: event k at address 0x7f0000400000 + 4k, TSC 5 << 32 | k;
# the first event is preceded by ADDR_HI 0x7f00 and TSC_HI 5 (as the runtime does)
B8 = 5 << 32


def e8(k):
    """the 8-byte entry of event k (no escape)"""
    return (k << 32) | (0x400000 + 4 * k)


ESC_A, ESC_T = rawfile.e8_escape(1, 0x7f00), rawfile.e8_escape(2, 5)


def test_e8_first_lap(unit):
    raw, _ = unit("e8_firstlap")
    [t] = raw.threads
    assert t.fmt == 3 and ("TRACEE08", t.items and raw.chunks[-2][1]) in raw.chunks
    assert (t.flags, t.n_entries, t.n_dropped, t.first_off, t.pos_off) == (TSF["TSC_HI"], 12, 0, 0, 96)
    assert t.tsc_hi == 5  # the record's: the high half of the newest events
    assert t.items == [ESC_A, ESC_T] + [e8(k) for k in range(1, 11)]
    assert t.entries == [(0x7f0000400000 + 4 * k, B8 + k) for k in range(1, 11)]
    assert raw.header["raw_version"] == 2


def test_e8_wrapped(unit):
    raw, _ = unit("e8_wrapped")        # 602 items in 512 slots: pos at slot 90
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] | TSF["TSC_HI"] and t.pos_off == 90 * 8 and t.first_off == 91 * 8
    assert t.items == [e8(k) for k in range(90, 601)] and t.n_entries == 511 and t.n_dropped == 0
    # no TSC_HI escape is left in the ring: the record's high half dates its events
    assert t.tsc_hi == 5 and tscs(t) == [B8 + k for k in range(90, 601)]


def test_e8_uncommitted(unit):
    raw, _ = unit("e8_uncommitted")
    [t] = raw.threads
    assert t.flags == TSF["UNCOMMITTED"] | TSF["TSC_HI"] and t.n_entries == 13 and t.items[-1] == e8(11)
    raw, _ = unit("e8_uncommitted_escape")   # an escape at pos: not emitted, counted
    [t] = raw.threads
    # a TSC_HI escape in flight: the record already has its high half, which is not
    # the committed events' -- not given
    assert t.flags == 0 and t.n_entries == 12 and t.n_dropped == 1 and t.tsc_hi is None
    raw, _ = unit("e8_wrapped_uncommitted")  # the newest entry over the oldest one
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] | TSF["UNCOMMITTED"] | TSF["TSC_HI"]
    assert t.items == [e8(k) for k in range(90, 602)] and t.n_entries == 512


def test_e8_pos_at_last_slot(unit):
    raw, _ = unit("e8_lastslot_wrapped")     # 1023 items: pos = slot 511 holds event 510, the oldest
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] | TSF["TSC_HI"] and t.first_off == 0
    assert t.items == [e8(k) for k in range(511, 1022)]
    raw, _ = unit("e8_lastslot_unc")         # first lap, the newest entry uncommitted in the last slot
    [t] = raw.threads
    assert t.flags == TSF["UNCOMMITTED"] | TSF["TSC_HI"] and t.items == [ESC_A, ESC_T] + [e8(k) for k in range(1, 511)]


def test_e8_time_filter(unit):
    raw, _ = unit("e8_min_tsc")
    [t] = raw.threads
    assert raw.header["flags"] == TIME_FILTERED and raw.header["min_tsc"] == B8 + 6
    assert t.items == [e8(k) for k in range(6, 11)] and t.n_dropped == 2 + 5 and t.first_off == 7 * 8


def test_e8_tiny_ring(unit):
    """a 32-byte ring (funtrace_set_thread_log_buf_size(5)): 4 slots, 3 emitted"""
    raw, _ = unit("e8_tiny")
    [t] = raw.threads
    assert t.ring_size == 32 and t.flags == TSF["WRAPPED"] | TSF["TSC_HI"] and t.items == [e8(5), e8(6), e8(7)]


def test_e8_high_halves_and_flags(unit):
    raw, _ = unit("e8_hi_change")
    [t] = raw.threads
    F = rawfile
    assert t.entries == [(0x7f0000400010, 0x5FFFFFFF0), (0x7f0000400020, 0x600000010),
                         (0x550000001000, 0x600000020), (0x7f0000400030 | F.F_RET, 0x600000030),
                         (0x7f0000400040 | F.F_CATCH, 0x600000040),
                         (0x7f0000400050 | F.F_CALL_RET_ON_THROW, 0x600000050)]
    assert sum(1 for w in t.items if w & 3 == 3) == 2 + 1 + 2 + 1   # ADDR/TSC, TSC, ADDR x2, CATCH


def test_e8_zeroed_entries_are_emitted_and_reported(tree, unit, unit_exe, tmp_path):
    """zeros inside the window (a memory test, a stray memset) are emitted as they
    are; the decoder reports how many and where, and exits 3 (issue 13)"""
    raw, _ = unit("e8_zeroed")
    [t] = raw.threads
    assert t.n_entries == 102 and t.items[40:50] == [0] * 10 and t.items[50] == e8(49)
    p = tmp_path / "z.raw"
    p.write_bytes(subprocess.run([str(unit_exe), "e8_zeroed"], capture_output=True, check=True).stdout)
    r = subprocess.run([str(tree.tool("funtrace-decode")), "--summary", str(p)], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "the ring of thread 100 has 10 zeroed or invalid entries inside its trace (items 40..49" in r.stdout


def test_e8_live_copy_race(unit):
    raw, err = unit("e8_live_race", 10)      # 10 events (+ a TSC_HI escape) while copying
    [t] = raw.threads
    assert t.flags == TSF["WRAPPED"] | TSF["COPY_RACED"] and t.n_dropped == 11
    assert t.items == [e8(k) for k in range(90 + 11, 601)]
    assert "was written while it was copied" in err


@pytest.mark.parametrize("scenario", ["e8_firstlap", "e8_wrapped", "e8_uncommitted", "e8_wrapped_uncommitted",
                                      "e8_lastslot_wrapped", "e8_lastslot_unc", "e8_min_tsc", "e8_tiny",
                                      "e8_zeroed", "e8_hi_change"])
def test_e8_rings_used_in_place_give_the_same_bytes(unit_exe, scenario):
    outs = []
    for env in (None, dict(os.environ, CE_RAWUNIT_MAP="1")):
        r = subprocess.run([str(unit_exe), scenario], capture_output=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr.decode()
        outs.append(r.stdout)
    assert outs[0] == outs[1]


def test_e8_decoder_restores_times_across_a_long_sleep(tree, unit, unit_exe, tmp_path):
    """the oldest calls of a wrapped FT_FMT_EXACT8 ring lost their escapes; the thread
    then slept 6 s (more than the 4.3 s a TSC low half covers at 1 GHz): the decoder
    dates them with the generation boundaries recorded after them, not by assuming the
    sleep was short"""
    import dec_util
    raw, _ = unit("e8_sleep")
    [t] = raw.threads
    assert t.flags & TSF["WRAPPED"] and t.items[0] & 3 != 3   # starts with calls of before the sleep
    p = tmp_path / "s.raw"
    p.write_bytes(subprocess.run([str(unit_exe), "e8_sleep"], capture_output=True, check=True).stdout)
    r, tr = dec_util.decode(tree, p, "--no-symbols", json_out=tmp_path / "s.json")
    assert r.returncode == 0, r.stderr
    sl = sorted(tr.slices[100], key=lambda s: s.start)
    gaps = [b.start - a.start for a, b in zip(sl, sl[1:])]
    big = [g for g in gaps if g > 10**6]
    assert len(big) == 1 and big[0] == 6 * 10**9 - 199 * 1000, big   # the 6 s sleep, once
    assert sum(g == 1000 for g in gaps) >= len(gaps) - 2   # (a slice opening the ring may start late)


# ---- FT_FMT_SAMPLED4 rings: 4-byte items, stamped leaf returns ----
# ce_rawunit's pairs4: pair k = call 0x7f0000400000 + 16k and its return, every
# 4th return stamped with TSC 5 << 32 | 1000k; escapes before the first of each
S4A, S4T = rawfile.s4_escape(0, 0x7f00), rawfile.s4_escape(1, 5)


def s4_pair(k):
    ret = ((1000 * k) & ~7) | 7 if k % 4 == 0 else (0x400000 + 16 * k) | 1
    return [0x400000 + 16 * k] + ([S4T] if k == 4 else []) + [ret]


def test_s4_first_lap(unit):
    raw, _ = unit("s4_firstlap")
    [t] = raw.threads
    assert t.fmt == 4 and [m for m, _ in raw.chunks].count("TRACES04") == 1
    items = [S4A] + [i for k in range(1, 11) for i in s4_pair(k)]
    assert t.items == items and t.flags == TSF["TSC_HI"] and t.tsc_hi == 5 and t.pos_off == 4 * len(items)
    F = rawfile
    assert t.entries == [e for k in range(1, 11) for e in
                         ((0x7f0000400000 + 16 * k, None),
                          (0x7f0000400000 + 16 * k | F.F_RET, (5 << 32) | (1000 * k) if k % 4 == 0 else None))]


def test_s4_wrapped(unit):
    raw, _ = unit("s4_wrapped")     # 1 + 700 * 2 + 1 items in 1024 slots
    [t] = raw.threads
    n = 1 + 700 * 2 + 1
    assert t.flags == TSF["WRAPPED"] | TSF["TSC_HI"] and t.n_entries == 1023 and t.pos_off == 4 * (n - 1024)
    assert t.items[-2:] == s4_pair(700)
    raw, _ = unit("s4_uncommitted_escape")  # a TSC_HI escape in flight at pos: the record's value not given
    [t] = raw.threads
    assert t.flags == 0 and t.tsc_hi is None and t.n_dropped == 1


def test_s4_time_filter(unit):
    raw, _ = unit("s4_min_tsc")     # stamps at pairs 4 (4000) and 8 (8000): from the one >= 6000
    [t] = raw.threads
    assert raw.header["flags"] == TIME_FILTERED
    assert t.items[0] == ((8000 & ~7) | 7) and t.items[1:] == s4_pair(9) + s4_pair(10)
