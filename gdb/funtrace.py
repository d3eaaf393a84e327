"""funtrace gdb extension: the `funtrace` command (see `help funtrace`).

Only what only gdb can do is here: the commands and their arguments, gdb's
memory reads, gdb's unwinder for the final stacks, and what gdb knows about the
target (core file name, the signal a process stopped with).  Finding the root,
reading the rings and writing the raw file is the shared reader's C code
(libfuntrace_reader.so, reader/funtrace_reader.h), called through ctypes with a
read function over gdb's memory; the views are funtrace-decode's.  Both are
found next to this file (PREFIX/share/funtrace/gdb -> PREFIX/lib, PREFIX/bin).
"""
import ctypes
import os
import re
import signal
import subprocess
import tempfile

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
LIBRARY = os.path.join(PREFIX, "lib", "libfuntrace_reader.so")
DECODER = os.path.join(PREFIX, "bin", "funtrace-decode")
API_VERSION = 2  # the funtrace_reader.h this file is written against

C = ctypes
READ_FN = C.CFUNCTYPE(C.c_size_t, C.c_void_p, C.c_uint64, C.c_void_p, C.c_size_t)
U64P = C.POINTER(C.c_uint64)
PROTOTYPES = {
    "ftr_api_version": (C.c_uint, []),
    "ftr_new": (C.c_void_p, [C.c_char_p, READ_FN, C.c_void_p]),
    "ftr_free": (None, [C.c_void_p]),
    "ftr_message": (C.c_char_p, [C.c_void_p]),
    "ftr_core_file": (C.c_int, [C.c_void_p, C.c_char_p]),
    "ftr_proc_maps": (C.c_int, [C.c_void_p, C.c_char_p, C.c_size_t]),
    "ftr_local_pid": (C.c_int, [C.c_void_p, C.c_int]),
    "ftr_signal": (None, [C.c_void_p, C.c_int, C.c_int, C.c_int, C.c_uint32, C.c_uint64, C.c_uint32]),
    "ftr_find_root": (C.c_int, [C.c_void_p, C.c_uint64]),
    "ftr_root_symbol": (C.c_char_p, []),
    "ftr_add_stack": (C.c_int, [C.c_void_p, C.c_char_p, C.c_uint32, C.c_int, U64P, U64P, C.c_uint32]),
    "ftr_stack_regs": (C.c_char_p, []),
    "ftr_stack_max": (C.c_uint, []),
    "ftr_write": (C.c_int, [C.c_void_p, C.c_char_p]),
    "ftr_report": (C.c_char_p, [C.c_void_p]),
}
_lib = None


class FtError(Exception):
    """An error reported as one line: 'funtrace: <message>'."""


def lib():
    global _lib
    if _lib is None:
        try:
            so = C.CDLL(LIBRARY)
        except OSError as e:
            raise FtError("cannot load the funtrace reader library: %s" % e)
        for name, (res, args) in PROTOTYPES.items():
            fn = getattr(so, name)
            fn.restype, fn.argtypes = res, args
        if so.ftr_api_version() != API_VERSION:
            raise FtError("%s has API version %d, this extension wants %d: reinstall funtrace"
                          % (LIBRARY, so.ftr_api_version(), API_VERSION))
        _lib = so
    return _lib


def text(b):
    return b.decode("utf-8", "replace") if b else ""


# ---------------------------------------------------------------------------
# the target, as gdb sees it
# ---------------------------------------------------------------------------

class Target:
    def __init__(self):
        inf = gdb.selected_inferior()
        conn = getattr(inf, "connection", None)
        self.conn = conn.type if conn is not None else None
        if self.conn is None and inf.pid == 0:
            raise FtError("no process or core file (start the program, attach with -p, or load a core)")
        self.inf, self.pid, self.core = inf, inf.pid, None
        if self.conn == "core":
            self.core = getattr(inf.progspace, "core_filename", None)
            if not self.core:
                m = re.search(r"Local core dump file:\s*`(.*)', file type", gdb.execute("info target", False, True))
                if not m:
                    raise FtError("cannot find the core file name in 'info target'")
                self.core = m.group(1)
        elif inf.pid == 0 or not inf.threads():
            raise FtError("the program is not running (start it, attach with -p, or load a core)")
        self.interrupted = False
        self.read_fn = READ_FN(self._read)

    def _read(self, _ctx, addr, buf, n):
        """the library's read function: all n bytes through gdb, or 0"""
        try:
            C.memmove(buf, (C.c_char * n).from_buffer(self.inf.read_memory(addr, n)), n)
            return n
        except KeyboardInterrupt:
            self.interrupted = True
        except Exception:  # unreadable (gdb.MemoryError, out of range): the library narrows it down
            pass
        return 0

    def maps_text(self):
        """/proc/PID/maps of the process (through gdb's file access on a remote target)"""
        path = "/proc/%d/maps" % self.pid
        if self.conn in ("remote", "extended-remote"):
            with tempfile.TemporaryDirectory(prefix="funtrace-gdb-") as d:
                gdb.execute("remote get %s %s/maps" % (path, d), False, True)
                with open(os.path.join(d, "maps"), "rb") as f:
                    return f.read()
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise FtError("cannot read %s: %s" % (path, e.strerror))

    def own_signal(self):
        """(signo, code, errno, tid, si_addr, si_pid) of a thread stopped by a
        signal of the program's own (gdb's SIGTRAP, SIGSTOP, SIGINT are not)"""
        sel = gdb.selected_thread()
        threads = sorted(self.inf.threads(), key=lambda t: t.num)
        if sel is not None:
            threads = [sel] + [t for t in threads if t != sel]
        try:
            for thr in threads:
                thr.switch()
                try:
                    v = gdb.parse_and_eval("$_siginfo")
                    signo = int(v["si_signo"])
                    if signo in (0, signal.SIGTRAP, signal.SIGSTOP, signal.SIGINT):
                        continue
                    u = v["_sifields"]
                    return (signo, int(v["si_code"]), int(v["si_errno"]), thr.ptid[1],
                            int(u["_sigfault"]["si_addr"]) & (2 ** 64 - 1), int(u["_kill"]["si_pid"]) & 0xFFFFFFFF)
                except (gdb.error, RuntimeError):
                    continue
        finally:
            if sel is not None and sel.is_valid():
                sel.switch()
        return None


def root_symbol(L):
    try:
        return int(gdb.parse_and_eval("(unsigned long)&'%s'" % text(L.ftr_root_symbol()))) & (2 ** 64 - 1)
    except gdb.error:
        return 0


def unwind(f, limit):
    """pcs (innermost first, physical frames only: not gdb's inline and
    tail-call frames, which are not on the machine stack) and truncated"""
    pcs = []
    while True:
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            if len(pcs) >= limit:
                return pcs, True
            try:
                pc = f.pc()
            except gdb.error:
                return pcs, True
            if pc == 0 and pcs:
                return pcs, False  # gdb's "0x0 in ??" past the outermost frame
            pcs.append(pc & (2 ** 64 - 1))
        try:
            older = f.older()
            if older is None:
                return pcs, f.unwind_stop_reason() not in (gdb.FRAME_UNWIND_NO_REASON, gdb.FRAME_UNWIND_OUTERMOST)
        except gdb.error:
            return pcs, True
        f = older


def add_stacks(L, h, t):
    """every thread's final stack, unwound by gdb past main (as libunwind does)"""
    names = text(L.ftr_stack_regs()).split()
    limit = L.ftr_stack_max()
    sel = gdb.selected_thread()
    try:
        sel_frame = gdb.selected_frame()
    except gdb.error:
        sel_frame = None
    past_main = gdb.parameter("backtrace past-main")
    try:
        gdb.execute("set backtrace past-main on", False, True)
        for thr in t.inf.threads():
            thr.switch()
            try:
                f = gdb.newest_frame()
            except gdb.error:
                continue
            regs = []
            for n in names:
                try:
                    regs.append(int(f.read_register(n)) & (2 ** 64 - 1))
                except (gdb.error, ValueError, RuntimeError):
                    regs.append(0)
            pcs, truncated = unwind(f, limit)
            if not pcs:  # no registers (e.g. a thread libthread_db lists but the core has not)
                continue
            L.ftr_add_stack(h, b"gdb", thr.ptid[1] & 0xFFFFFFFF, truncated, (C.c_uint64 * len(regs))(*regs),
                            (C.c_uint64 * max(1, len(pcs)))(*pcs), len(pcs))
    finally:
        if not past_main:
            gdb.execute("set backtrace past-main off", False, True)
        if sel is not None and sel.is_valid():
            sel.switch()
            if sel_frame is not None and sel_frame.is_valid():
                sel_frame.select()


def extract(path):
    """write the raw trace of the selected inferior to path; the library's report lines"""
    L = lib()
    t = Target()
    h = L.ftr_new(b"core" if t.core else b"stopped", t.read_fn, None)
    if not h:
        raise FtError("out of memory")

    def check(rc):
        if t.interrupted:
            raise KeyboardInterrupt
        if rc:
            raise FtError(text(L.ftr_message(h)))
    try:
        if t.core:
            check(L.ftr_core_file(h, os.fsencode(t.core)))
        else:
            maps = t.maps_text()
            L.ftr_proc_maps(h, maps, len(maps))
            if t.conn not in ("remote", "extended-remote"):  # untouched ring pages: not read (faulted in)
                L.ftr_local_pid(h, t.pid)
            sig = t.own_signal()
            if sig:
                L.ftr_signal(h, *sig)
        check(L.ftr_find_root(h, root_symbol(L)))
        # gdb repeats its warnings about the core's register notes as we switch
        # threads; they were shown when the core was loaded: keep them out of ours
        failed = []

        def stacks():
            try:
                add_stacks(L, h, t)
            except BaseException as e:  # re-raised below, not swallowed with the output
                failed.append(e)
        gdb._funtrace_stacks = stacks
        gdb.execute("python gdb._funtrace_stacks()", False, True)
        if failed:
            raise failed[0]
        rc = L.ftr_write(h, os.fsencode(path))
        report = text(L.ftr_report(h))
        check(0 if report else rc)
        return report.splitlines()
    finally:
        L.ftr_free(h)


def decode(*args):
    """funtrace-decode's output (its warnings go to gdb's stderr)"""
    if not os.access(DECODER, os.X_OK):
        raise FtError("%s not found: the extension's installation is incomplete" % DECODER)
    with tempfile.TemporaryDirectory(prefix="funtrace-gdb-") as d:
        raw = os.path.join(d, "trace.raw")
        extract(raw)
        r = subprocess.run([DECODER, *args, raw], capture_output=True, text=True)
    if r.stderr:
        gdb.write(r.stderr.replace(raw, "(trace)"), gdb.STDERR)
    if r.returncode not in (0, 1, 3):
        raise FtError("funtrace-decode failed (exit %d)" % r.returncode)
    return r.stdout


def section(out, key):
    """the `key:` part of funtrace-decode --summary (its line and the indented ones after it)"""
    lines, keep = [], False
    for ln in out.splitlines(True):
        if not ln[:1].isspace():
            keep = ln.startswith(key + ":")
        if keep:
            lines.append(ln)
    return "".join(lines)


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------

def cmd_save(arg):
    args = gdb.string_to_argv(arg)
    if len(args) > 1:
        raise FtError("usage: funtrace save [FILE]")
    for ln in extract(os.path.expanduser(args[0]) if args else "funtrace.raw"):
        gdb.write("funtrace: %s\n" % ln)


def cmd_tail(arg):
    n, tid, args = 20, None, gdb.string_to_argv(arg)
    while args:
        a = args.pop(0)
        if a.startswith("-t") and (a[2:] or args):
            tid = a[2:] or args.pop(0)
            if not tid.isdigit():
                raise FtError("bad TID: %s" % tid)
        elif a.isdigit():
            n = int(a)
        else:
            raise FtError("usage: funtrace tail [N] [-t TID]")
    out = decode("--text", "-n", str(n))
    if tid is not None:  # the header, then that thread's part
        parts = out.split("\n\n")
        mine = [p for p in parts[1:] if p.startswith("thread %s " % tid)]
        if not mine:
            raise FtError("no traced thread with tid %s (see 'funtrace threads')" % tid)
        out = "\n\n".join(parts[:1] + mine) + "\n"
    gdb.write(out)


def cmd_summary_part(key):
    def run(arg):
        if arg.strip():
            raise FtError("usage: funtrace %s" % key)
        gdb.write(section(decode("--summary"), key))
    return run


def run(fn, arg):
    try:
        fn(arg)
    except FtError as e:
        raise gdb.GdbError("funtrace: %s" % e)
    except KeyboardInterrupt:
        raise gdb.GdbError("funtrace: interrupted")
    except gdb.GdbError:
        raise
    except gdb.error as e:
        raise gdb.GdbError("funtrace: %s" % e)
    except Exception as e:  # never a traceback in the user's face
        raise gdb.GdbError("funtrace: internal error: %s: %s" % (type(e).__name__, e))


class Funtrace(gdb.Command):
    """Get the funtrace function-call trace out of this core or stopped process.

Usage: funtrace                  same as 'funtrace save'
       funtrace save [FILE]      write the raw trace to FILE (default ./funtrace.raw)
       funtrace tail [N] [-t TID]   last N calls of each thread (default 20)
       funtrace threads          the traced threads
       funtrace generations      the generations held in the trace

Works on a core file (gdb PROG CORE), a process stopped under gdb, one
attached with 'gdb -p PID', and through gdbserver ('target remote').  No debug
info is needed for the runtime.  Decode the raw file with 'funtrace-decode FILE'."""

    def __init__(self):
        super().__init__("funtrace", gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)

    def invoke(self, arg, from_tty):
        self.dont_repeat()
        if arg.strip():
            raise gdb.GdbError("funtrace: unknown subcommand '%s' (try 'help funtrace')" % arg.split()[0])
        run(cmd_save, "")


class Sub(gdb.Command):
    def __init__(self, name, fn, doc, complete=gdb.COMPLETE_NONE):
        self.__doc__ = doc
        self.fn = fn
        super().__init__("funtrace " + name, gdb.COMMAND_DATA, complete)

    def invoke(self, arg, from_tty):
        self.dont_repeat()
        run(self.fn, arg)


Funtrace()
Sub("save", cmd_save, """Write the funtrace raw trace to FILE (default ./funtrace.raw).

Usage: funtrace save [FILE]

Writes the same chunks as 'coreextract' would for this core (the FINSTACK
stacks come from gdb's unwinder), or those of the stopped process.  The file
is written to FILE.tmp.PID first and renamed when complete.  Then says what
was written: threads, events, generations, bytes, the signal, and what is
missing if the trace is incomplete.""", gdb.COMPLETE_FILENAME)
Sub("tail", cmd_tail, """Show the last N function calls of each traced thread (default 20).

Usage: funtrace tail [N] [-t TID]

Prints what 'funtrace-decode --text -n N' prints for this trace: the calls
nested by depth with source lines, times relative to the end of the trace,
durations, the calls still open, and each thread's final stack; the crashed
thread first.  -t TID shows only that thread.""")
Sub("threads", cmd_summary_part("threads"), """List the traced threads.

Usage: funtrace threads

The threads part of 'funtrace-decode --summary' for this trace: one line per
thread (tid, name, state, time mode, events held, their time span, flags such
as wrapped, torn, ring missing; the crashed one marked) and its final stack.""")
Sub("generations", cmd_summary_part("generations"), """List the trace generations held in the process.

Usage: funtrace generations

The generations part of 'funtrace-decode --summary' for this trace: one line
per generation held (number, wall-clock start, length, threads with events,
and how many of them lost some of its events).""")
gdb._funtrace_loaded = True  # binaries built before the installed auto-load skip their own loader
