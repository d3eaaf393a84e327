"""The reader library's C API (reader/funtrace_reader.h, build/lib/libfuntrace_reader.so),
called as a foreign program would (ctypes), with read functions of our own over a
real process's /proc/PID/mem: the "live" and "stopped" kinds, a read function that
fails as a whole (the library narrows it down page by page), and the errors."""
import ctypes as C
import os
import signal
import subprocess

import pytest

import rawfile
from conftest import BIN, BUILD, require_tools
from test_gdb import wait_parked

READ_FN = C.CFUNCTYPE(C.c_size_t, C.c_void_p, C.c_uint64, C.c_void_p, C.c_size_t)
SAME_LIVE = ("CMD LINE", "MAPPINGS", "MODULES ", "THREADID", "TRACEBUF")


@pytest.fixture(scope="module")
def lib(tree):
    so = C.CDLL(str(BUILD / "lib" / "libfuntrace_reader.so"))
    for name, res, args in (
            ("ftr_api_version", C.c_uint, []),
            ("ftr_new", C.c_void_p, [C.c_char_p, READ_FN, C.c_void_p]),
            ("ftr_free", None, [C.c_void_p]),
            ("ftr_message", C.c_char_p, [C.c_void_p]),
            ("ftr_core_file", C.c_int, [C.c_void_p, C.c_char_p]),
            ("ftr_proc_maps", C.c_int, [C.c_void_p, C.c_char_p, C.c_size_t]),
            ("ftr_local_pid", C.c_int, [C.c_void_p, C.c_int]),
            ("ftr_find_root", C.c_int, [C.c_void_p, C.c_uint64]),
            ("ftr_write", C.c_int, [C.c_void_p, C.c_char_p]),
            ("ftr_report", C.c_char_p, [C.c_void_p])):
        fn = getattr(so, name)
        fn.restype, fn.argtypes = res, args
    assert so.ftr_api_version() == 2
    return so


class ProcMem:
    """A read function over /proc/PID/mem; all_or_nothing: fail a read as a whole when
    any byte of it is unreadable or in `hidden` ([start, end) ranges)."""

    def __init__(self, pid, all_or_nothing=False, hidden=()):
        self.fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        self.all_or_nothing, self.hidden, self.reads = all_or_nothing, list(hidden), 0
        self.fn = READ_FN(self.read)

    def read(self, _ctx, addr, buf, n):
        self.reads += 1
        if any(addr < e and s < addr + n for s, e in self.hidden):
            if self.all_or_nothing:
                return 0
            n = min(s for s, e in self.hidden if addr < e and s < addr + n) - addr
            if n <= 0:
                return 0
        try:
            data = os.pread(self.fd, n, addr)
        except OSError:
            return 0
        if self.all_or_nothing and len(data) < n:
            return 0
        C.memmove(buf, data, len(data))
        return len(data)

    def close(self):
        os.close(self.fd)


def extract(lib, kind, pid, mem, out, local_pid=False):
    h = lib.ftr_new(kind, mem.fn, None)
    assert h
    try:
        maps = open(f"/proc/{pid}/maps", "rb").read()
        assert lib.ftr_proc_maps(h, maps, len(maps)) == 0
        if local_pid:
            assert lib.ftr_local_pid(h, pid) == 0
        assert lib.ftr_find_root(h, 0) == 0, lib.ftr_message(h)
        rc = lib.ftr_write(h, str(out).encode())
        return rc, lib.ftr_report(h).decode(), lib.ftr_message(h).decode()
    finally:
        lib.ftr_free(h)


@pytest.fixture
def parked(compiled, spawn):
    """gdb_wait, parked in gdb_park (its rings no longer move)."""
    p = spawn([compiled("gdb_wait.c")], name="parked")
    assert p.stdout.readline().strip() == b"ready"
    wait_parked(p.pid)
    return p


def test_api_errors(lib, tmp_path):
    nothing = READ_FN(lambda ctx, addr, buf, n: 0)
    assert not lib.ftr_new(b"bogus", nothing, None)
    assert lib.ftr_message(None) == b"no handle" and lib.ftr_write(None, b"x") == 2
    h = lib.ftr_new(b"core", nothing, None)
    try:
        notcore = tmp_path / "notcore"
        notcore.write_bytes(b"hello, not a core\n" * 10)
        assert lib.ftr_core_file(h, str(notcore).encode()) == 2
        assert lib.ftr_message(h) == f"{notcore}: not an ELF file".encode()
        assert lib.ftr_find_root(h, 0) == 1
        assert lib.ftr_message(h) == b"no funtrace runtime in this process"
        assert lib.ftr_write(h, str(tmp_path / "x.raw").encode()) == 1
        assert not list(tmp_path.glob("x.raw*"))
    finally:
        lib.ftr_free(h)


def test_live_kind_reads_a_running_process_as_coreextract_does(lib, tree, parked, tmp_path):
    require_tools(tree, "coreextract")
    mem = ProcMem(parked.pid)
    out = tmp_path / "api.raw"
    rc, report, _msg = extract(lib, b"live", parked.pid, mem, out)
    mem.close()
    assert rc == 0, report
    lines = report.splitlines()
    assert lines[0].startswith(f"wrote {out}: ") and "from running process" in lines[1]
    raw = rawfile.parse(out)
    assert raw.header["source"] == 2 and raw.header["taken_tsc"] > 0 and raw.ended
    ce = tmp_path / "ce.raw"
    c = subprocess.run([BIN / "coreextract", "--pid", str(parked.pid), "-o", ce], capture_output=True, text=True,
                       timeout=120)
    assert c.returncode == 0, c.stderr
    assert [x for x in rawfile.chunks(out.read_bytes()) if x[0] in SAME_LIVE] == \
           [x for x in rawfile.chunks(ce.read_bytes()) if x[0] in SAME_LIVE]


def test_stopped_kind_narrows_reads_that_fail_as_a_whole(lib, compiled, spawn, tmp_path):
    """A read function that fails whenever any byte is unreadable (as a debugger's
    does): with two pages in the middle of a 16-page ring hidden, the library still
    reads the rest of that ring (RING_PARTIAL, not RING_MISSING) and says what is
    missing."""
    parked = spawn([compiled("api_busy.c")], name="busy")
    assert parked.stdout.readline().strip() == b"ready"
    wait_parked(parked.pid, threads=1)
    os.kill(parked.pid, signal.SIGSTOP)
    try:
        full = tmp_path / "full.raw"
        rc, _report, _msg = extract(lib, b"stopped", parked.pid, ProcMem(parked.pid, all_or_nothing=True), full)
        assert rc == 0
        whole = rawfile.parse(full)
        t = max(whole.threads, key=lambda t: t.n_entries)
        assert t.pos_off >= 8000 * 8 and not t.flags & rawfile.TSF["WRAPPED"]
        hidden = (t.ring + 4 * 4096, t.ring + 6 * 4096)
        mem = ProcMem(parked.pid, all_or_nothing=True, hidden=[hidden])
        part = tmp_path / "part.raw"
        rc, report, msg = extract(lib, b"stopped", parked.pid, mem, part)
    finally:
        os.kill(parked.pid, signal.SIGCONT)
    assert rc == 3, report
    raw = rawfile.parse(part)
    assert raw.header["flags"] & 1 and raw.header["source"] == 2
    got = raw.thread(t.tid)
    assert got.flags & rawfile.TSF["RING_PARTIAL"] and not got.flags & rawfile.TSF["RING_MISSING"]
    assert 0 < got.n_entries < t.n_entries
    assert set((e.addr, e.tsc) for e in got.events()) < set((e.addr, e.tsc) for e in t.events())
    assert report.splitlines()[-1].startswith("warning: trace incomplete: ")
    assert f"ring of thread {t.tid} is partly missing" in report and msg


def rss_anon_kib(pid):
    line = next(ln for ln in open(f"/proc/{pid}/status") if ln.startswith("RssAnon:"))
    return int(line.split()[1])


def reads_fault_in_pages():
    """does reading a process's untouched anonymous pages through /proc/PID/mem fault them
    in (grow its RssAnon), as gdb's reads do on most kernels?  Some kernels map the shared
    zero page for such reads instead (seen on a 6.18 build), and then there is nothing to save"""
    import mmap
    size = 16 << 20
    to_parent, to_child = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: an untouched mapping, its address to the parent, then wait
        try:
            m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            os.write(to_parent[1], b"%d\n" % C.addressof(C.c_char.from_buffer(m)))
            os.read(to_child[0], 1)
        finally:
            os._exit(0)
    try:
        addr = int(os.read(to_parent[0], 64).split()[0])
        before = rss_anon_kib(pid)
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as f:
            f.seek(addr)
            done = 0
            while done < size:
                got = f.read(min(1 << 20, size - done))
                assert got, "cannot read the probe's memory"
                done += len(got)
        return rss_anon_kib(pid) - before > (size >> 10) // 2
    finally:
        os.write(to_child[1], b"x")
        os.waitpid(pid, 0)
        for fd in (*to_parent, *to_child):
            os.close(fd)


def test_local_pid_leaves_untouched_ring_pages_alone(lib, compiled, spawn, tmp_path):
    """Read through a debugger-like read function (/proc/PID/mem), every page of a ring
    is faulted in on most kernels: 64 MiB rings that hold a few calls become 64 MiB of the
    process's memory each (a kernel that maps the zero page for such reads grows nothing,
    and the test checks that instead).  With ftr_local_pid the pages the process never wrote are taken as
    zeros from /proc/PID/pagemap: its memory stays put, and the raw holds the same
    rings as one read the old way."""
    p = spawn([compiled("gdb_wait.c")], name="big", env={**os.environ, "FUNTRACE_BUF": str(64 << 20)})
    assert p.stdout.readline().strip() == b"ready"
    wait_parked(p.pid)
    os.kill(p.pid, signal.SIGSTOP)
    try:
        before = rss_anon_kib(p.pid)
        mem = ProcMem(p.pid)
        rc, report, _ = extract(lib, b"stopped", p.pid, mem, tmp_path / "local.raw", local_pid=True)
        mem.close()
        after = rss_anon_kib(p.pid)
        assert rc == 0, report
        assert after - before < 4096, (before, after)
        mem = ProcMem(p.pid)
        rc, report, _ = extract(lib, b"stopped", p.pid, mem, tmp_path / "old.raw")
        mem.close()
        assert rc == 0, report
        grew = rss_anon_kib(p.pid) - after
        if reads_fault_in_pages():
            assert grew > 64 << 10, (after, grew)  # (what it saves)
        else:  # this kernel maps the zero page for such reads: the old way costs nothing either
            assert grew < 4096, (after, grew)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    local, old = rawfile.parse(tmp_path / "local.raw"), rawfile.parse(tmp_path / "old.raw")
    assert any(t.ring_size == 64 << 20 and t.entries for t in local.threads)
    assert [(t.tid, t.entries) for t in local.threads] == [(t.tid, t.entries) for t in old.threads]
