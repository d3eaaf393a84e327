"""Real third-party programs, built from their Debian source packages with
their own build systems and CC=funtrace-gcc (tests/realprogs/build.sh),
crashed mid-work with a kernel core:

* redis-server: multi-threaded (bio and I/O threads, named), its own fatal
  signal handler (crash report, stack trace, and an in-place memory test of
  every anonymous mapping before it re-raises); crashed with its own
  `DEBUG SEGFAULT` while redis-benchmark loads it; twice: tracing frozen in
  its handler (the default) and left on (FUNTRACE_CRASH_HANDLERS=trace);
* unbound: multi-threaded DNS server whose default build uses LTO
  (configure adds -flto); crashed with kill -SEGV while its own load
  generator (testcode/perf) queries it;
* memcached: multi-threaded server with named threads (mc-worker, ...);
  crashed with kill -SEGV under a set/get load;
* lua 5.4: the interpreter, whose errors are longjmps (luaD_throw) out of
  the frames that raised them, running a script of caught errors and
  coroutines, in exact and in sampled mode (FUNTRACE_TIME=sampled); crashed
  with kill -SEGV.  Every luaD_throw is a call whose return is missing,
  left by its logged longjmp;
* nginx 1.22: a master that forks its worker processes; a worker killed
  with kill -SEGV under keep-alive HTTP load: its core's trace is its own;
* yaml-cpp 0.7 (C++, built by its CMake), driven by yaml_driver.cpp: its
  exceptions thrown and caught, then one rethrown to std::terminate (abort);
  the driver linked twice, the second time -static-libstdc++;
* leveldb 1.23 (C++, built by its CMake): db_bench fills and compacts a
  database (a run that exits normally), then reads it with two std::thread
  readers, the busiest of which is sent SIGSEGV (tgkill) mid-lookup;
* PCL 1.12, the Portable Coroutine Library (autotools): coroutines on
  ucontext's swapcontext; its cobench switches between a thread's main
  context and a coroutine over and over, in two threads at once, one of
  which is sent SIGSEGV (tgkill) mid-switching;
* GNU Pth 2.0.7 (autotools), configured for its sjlj machine contexts: its
  threads switched by sigsetjmp/siglongjmp, each thread's stack entered the
  sigaltstack way (a signal handler run on it saves its place and returns);
  its test_philo (five philosopher threads and the scheduler) crashed with
  kill -SEGV.

For each core: coreextract and funtrace-decode succeed; the crashing thread's
final stack equals gdb's `bt` of the same core frame by frame (inlined frames
included), and so does every other thread's (the multi-threaded programs);
its last calls are functions of the program; every thread of the
process (as /proc listed it just before the crash) is in the trace with its
name.
"""
import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from gdbbt import gdb_thread_stacks, norm_func

HERE = Path(__file__).resolve().parent



def run_tool(args, timeout=120):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_core_limit():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    os.setsid()


def proc_threads(pid) -> dict:
    """{tid: name} of process pid, from /proc"""
    out = {}
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(t.name)] = (t / "comm").read_text().rstrip("\n")
        except OSError:
            pass
    return out


@contextlib.contextmanager
def load_clients(fn, port, n):
    """n daemon threads running fn(port, stop) until the block ends"""
    stop = threading.Event()
    clients = [threading.Thread(target=fn, args=(port, stop), daemon=True) for _ in range(n)]
    for c in clients:
        c.start()
    try:
        yield
    finally:
        stop.set()
        for c in clients:
            c.join(timeout=10)


class Server:
    """A server process in its own directory (cores land there), always reaped."""

    def __init__(self, args, cwd: Path, env=None):
        self.dir = cwd
        cwd.mkdir(parents=True, exist_ok=True)
        self.out = open(cwd / "server.out", "w")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.p = subprocess.Popen([str(a) for a in args], cwd=cwd, env=full_env, stdout=self.out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  preexec_fn=raise_core_limit)

    def output(self) -> str:
        return (self.dir / "server.out").read_text(errors="replace")

    def wait_for(self, pred, what, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.p.poll() is not None:
                raise AssertionError(f"server exited ({self.p.returncode}) before {what}:\n{self.output()[-3000:]}")
            if pred():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}:\n{self.output()[-3000:]}")

    def threads(self) -> dict:
        return proc_threads(self.p.pid)

    def wait_exit(self, timeout=120) -> int:
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"server did not die within {timeout}s:\n{self.output()[-3000:]}")

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=30)
        self.out.close()


@pytest.fixture
def servers():
    started = []

    def _start(*a, **kw):
        s = Server(*a, **kw)
        started.append(s)
        return s
    yield _start
    for s in started:
        s.close()


@pytest.fixture
def loads():
    """background load generators (processes), killed at teardown"""
    procs = []

    def _start(args, cwd):
        p = subprocess.Popen([str(a) for a in args], cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        procs.append(p)
        return p
    yield _start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


def tcp_port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------
# reading the results
# --------------------------------------------------------------------------

THREAD_RE = re.compile(r'^thread (\d+) "(.*?)"(.*)$')
FRAME_RE = re.compile(r"^\s+#(\d+)\s+(.*)$")
SAME_RE = re.compile(r"^\s+\.\.\. #\d+\.\.#\d+: (\d+) more frames? at the same address")
CALL_RE = re.compile(r"^\s+(?:-?[\d.]+ \w+)\s+(?:open|[<>=~]*[\d.]+ \w+)\s+(\S+)")


def frame_name(rest: str) -> str:
    """the function of a final-stack frame line of funtrace-decode --text (after '#N')"""
    if "<signal handler called>" in rest:
        return "<signal handler called>"
    words = rest.split()
    while words and (re.fullmatch(r"0x[0-9a-f]+", words[0]) or words[0] == "in" or words[0].startswith("[")):
        words = words[1:]
    # all of it up to " at FILE:LINE": a demangled C++ name has spaces (its
    # parameters, its template arguments, a template function's return type)
    return " ".join(words).rsplit(" at ", 1)[0] if words else "?"


def decode_text(tree, raw: Path) -> dict:
    """{'threads': {tid: {'name', 'crashed', 'calls': [fn...], 'stack': [fn...]}}} from --text"""
    r = run_tool([tree.tool("funtrace-decode"), raw, "--text", "--calls", "40"], timeout=300)
    threads = {}
    cur = None
    in_stack = False
    for line in r.stdout.splitlines():
        m = THREAD_RE.match(line)
        if m:
            cur = threads[int(m.group(1))] = dict(name=m.group(2), crashed="[crashed]" in m.group(3),
                                                   calls=[], stack=[], tail=[], text=[line])
            in_stack = False
            continue
        if cur is None:
            continue
        cur["text"].append(line)
        if line.strip().startswith("final stack"):
            in_stack = True
            continue
        m = FRAME_RE.match(line)
        if in_stack and m:
            cur["stack"].append(frame_name(m.group(2)))
            cur["tail"].append(m.group(2).startswith("[tail-call]"))
            continue
        m = SAME_RE.match(line)
        if in_stack and m and cur["stack"]:  # a recursion's frames, folded: the one before, again
            cur["stack"] += [cur["stack"][-1]] * int(m.group(1))
            cur["tail"] += [False] * int(m.group(1))
            continue
        m = CALL_RE.match(line)
        if m and not in_stack:
            cur["calls"].append(m.group(1))
    return dict(threads=threads, stdout=r.stdout, stderr=r.stderr, rc=r.returncode)


def gdb_stacks(exe: Path, core: Path):
    """gdb's stacks of a core, one gdb run: (the crashed thread's [function...],
    {tid: [function...]} of every thread), innermost first"""
    current, stacks = gdb_thread_stacks(exe, core, past_main=True, past_entry=True)
    names = {tid: [f.func for f in frames] for tid, frames in stacks.items()}
    assert current in names, f"gdb named no current thread in {core}: {sorted(names)}"
    return names[current], names


def exe_functions(exe: Path) -> set:
    out = subprocess.run(["nm", "-C", "--defined-only", str(exe)], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()  # (a demangled C++ name: its first word, as CALL_RE takes it)
        if len(parts) >= 3 and parts[1] in "tTwW":
            names.add(parts[2].split(".")[0])
    return names


def check_core(tree, exe: Path, srv: Server, names_before: dict, real_open=()):
    """Extract and decode the core, ask gdb; the tests assert on the result."""
    core = srv.dir / "core"
    assert core.exists(), f"no core (exit {srv.p.returncode}):\n{srv.output()[-3000:]}"
    raw = srv.dir / "trace.raw"
    r = run_tool([tree.tool("coreextract"), "-o", raw, core, exe], timeout=300)
    res = dict(exe=exe, core=core, raw=raw, ce_rc=r.returncode, ce_err=r.stderr.strip(), crashed=None,
               real_open=real_open)
    res["gdb"], res["gdb_all"] = gdb_stacks(exe, core)
    if r.returncode not in (0, 3):
        return res
    dec = res["dec"] = decode_text(tree, raw)
    threads = dec["threads"]
    crashed = [t for t in threads.values() if t["crashed"]]
    res["ncrashed"] = len(crashed)
    if len(crashed) != 1:
        return res
    ct = res["crashed"] = crashed[0]
    # every thread of the process, with its name (our housekeeping thread is not traced)
    res["missing_threads"] = {tid: n for tid, n in names_before.items()
                              if n != "funtrace" and (tid not in threads or threads[tid]["name"] != n)}
    # the last calls are the program's real functions
    funcs = exe_functions(exe)
    res["foreign_calls"] = [c for c in ct["calls"][-10:] if c.split(".")[0] not in funcs]
    res["open_ok"] = all(f in ct["calls"] for f in real_open)
    return res


def assert_core(res):
    assert res["ce_rc"] == 0, f"coreextract exit {res['ce_rc']}: {res['ce_err']}"
    assert res["dec"]["rc"] == 0, f"funtrace-decode exit {res['dec']['rc']}: {res['dec']['stderr'][-2000:]}"
    assert res.get("ncrashed") == 1, f"{res.get('ncrashed')} crashed threads in the trace:\n" + \
        res["dec"]["stdout"][:3000]
    ct = res["crashed"]
    assert ct["calls"], "the crashed thread has no calls:\n" + "\n".join(ct["text"][:60])
    assert not res["foreign_calls"], (
        f"the crashed thread's last calls are not the program's functions: {res['foreign_calls']}\n"
        + "\n".join(ct["text"][:60]))
    assert res["open_ok"], f"{res['real_open']} not among the crashed thread's calls:\n" + \
        "\n".join(ct["text"][:60])
    assert not res["missing_threads"], f"threads missing or misnamed in the trace: {res['missing_threads']}"


def same_frame(ours: str, gdbs: str) -> bool:
    """one frame: gdb names the compiler's clones (f.isra.0), the decoder strips
    the suffix; gdb says ?? where the decoder says module+0xOFFSET; glibc's
    aliases of one function are one name (tests/gdbbt.py)"""
    if gdbs == "??":
        return ours == "??" or re.search(r"\+0x[0-9a-f]+$", ours) is not None
    return norm_func(ours) == norm_func(gdbs)


def stacks_agree(ours, tails, gdbs, called) -> bool:
    """frame by frame, except for a tail-call frame of ours that gdb did not
    infer (it shows none it cannot be sure of: the decoder's inference from
    the call sites' DWARF can find one more) where the trace saw that
    function called, and gdb's ?? frames past the outermost frame of a
    coroutine's stack.  (A tail-call frame is named as gdb names it, after the
    function inlined at the jump: glibc's abort, __pthread_kill_internal.)"""
    # (a stack entered the sigaltstack way, GNU Pth's: below its first frame
    # lies the signal frame of the handler that set it up, whose interrupted
    # context -- sigsuspend's, on another stack -- is long gone; libunwind
    # stops after that frame, gdb goes on into what is there now: ?? frames)
    i = j = 0
    while i < len(ours) and j < len(gdbs):
        if same_frame(ours[i], gdbs[j]):
            i, j = i + 1, j + 1
        elif tails[i] and ours[i].split(" ")[0] in called:  # (called: names up to their first space)
            i += 1
        else:
            return False
    # the outermost frame of a makecontext stack (glibc's __start_context, no
    # symbol: ours lib.so+0x..., gdb's ??), where the unwinder stops: gdb
    # goes on into the data above it, ?? frames
    if i == len(ours) and i and re.search(r"\+0x[0-9a-f]+$", ours[-1]) and all(g == "??" for g in gdbs[j:]):
        return True
    if i == len(ours) and "<signal handler called>" in ours and all(g == "??" for g in gdbs[j:]):
        return True
    return i == len(ours) and j == len(gdbs)


def stack_difference(ours, tails, gdbs, called):
    """None when the stacks agree (stacks_agree), else both, side by side"""
    if stacks_agree(ours, tails, gdbs, called):
        return None
    return ("  ours: " + " > ".join(("[tail-call] " if t else "") + o for o, t in zip(ours, tails))
            + "\n  gdb:  " + " > ".join(gdbs))


def assert_stack_is_gdbs(res):
    assert res["crashed"], f"no crashed thread in the trace (coreextract: {res['ce_err']})"
    ct = res["crashed"]
    diff = stack_difference(ct["stack"], ct["tail"], res["gdb"], set(ct["calls"]))
    assert diff is None, "final stack differs from gdb's bt:\n" + diff


def killed_by_sigsegv(tree, exe, srv, what, settle=2.0):
    """let the program work for `settle` s, note its threads, kill -SEGV it,
    wait for its death and check its core (check_core)"""
    time.sleep(settle)
    names = srv.threads()
    os.kill(srv.p.pid, signal.SIGSEGV)
    rc = srv.wait_exit()
    assert rc == -signal.SIGSEGV, f"{what} exit {rc}:\n{srv.output()[-3000:]}"
    return check_core(tree, exe, srv, names)


# --------------------------------------------------------------------------
# the programs
# --------------------------------------------------------------------------

def redis_crash_in(tree, realprog, tmp_path_factory, name, env=None):
    """redis-server under redis-benchmark, crashed by DEBUG SEGFAULT: its own
    handler writes the crash report, runs the memory test (which rewrites every
    anonymous mapping: rings, registry, thread stacks) and re-raises."""
    d = realprog("redis")
    tmp = tmp_path_factory.mktemp(name)
    port = free_port()
    exe = d / "src" / "redis-server"
    srv = Server([exe, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--io-threads", "2", "--io-threads-do-reads", "yes", "--dir", tmp / "run",
                  "--crash-memcheck-enabled", "yes", "--enable-debug-command", "local", "--daemonize", "no"],
                 tmp / "run", env=env)
    bench = None
    try:
        srv.wait_for(lambda: tcp_port_open(port), "redis to listen")
        bench = subprocess.Popen([d / "src" / "redis-benchmark", "-p", str(port), "-q", "-n", "100000000",
                                  "-c", "8", "-P", "4", "-t", "set,get,incr,lpush,zadd"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
        names = srv.threads()
        subprocess.run([d / "src" / "redis-cli", "-p", str(port), "DEBUG", "SEGFAULT"], capture_output=True,
                       timeout=60)
        rc = srv.wait_exit()
        assert rc == -signal.SIGSEGV, f"redis exit {rc}:\n{srv.output()[-3000:]}"
        assert "REDIS BUG REPORT" in srv.output()  # its own handler ran
        # and its memory test, to the end: frozen, nothing of ours wrote meanwhile; traced,
        # the handler's own calls rewrite the rings under test (a reported error is expected)
        assert "Fast memory test PASSED" in srv.output() or \
            (env and "MEMORY ERROR DETECTED" in srv.output()), srv.output()[-3000:]
        yield check_core(tree, exe, srv, names, real_open=("debugCommand",)), ("debugCommand",)
    finally:
        if bench:
            bench.kill()
            bench.wait()
        srv.close()


@pytest.fixture(scope="module")
def redis_crash(tree, realprog, tmp_path_factory):
    yield from redis_crash_in(tree, realprog, tmp_path_factory, "redis")


@pytest.fixture(scope="module")
def redis_trace_crash(tree, realprog, tmp_path_factory):
    """The same with tracing left on in redis's handler (FUNTRACE_CRASH_HANDLERS=trace)
    and a generation boundary due every 10 ms while its memory test rewrites the
    housekeeper's stack"""
    yield from redis_crash_in(tree, realprog, tmp_path_factory, "redis-trace",
                              env={"FUNTRACE_CRASH_HANDLERS": "trace", "FUNTRACE_GEN_MS": "10"})


UNBOUND_CONF = """server:
    interface: 127.0.0.1
    port: {port}
    num-threads: 2
    username: ""
    chroot: ""
    directory: "{dir}"
    pidfile: ""
    logfile: ""
    use-syslog: no
    do-daemonize: no
    verbosity: 1
    do-not-query-localhost: yes
    access-control: 127.0.0.0/8 allow
    local-zone: "test." static
    local-data: "a.test. IN A 10.0.0.1"
    local-data: "b.test. IN A 10.0.0.2"
remote-control:
    control-enable: no
"""


@pytest.fixture(scope="module")
def unbound_crash(tree, realprog, tmp_path_factory):
    """unbound (an LTO build) answering its perf tool's queries, crashed by kill -SEGV."""
    d = realprog("unbound")
    tmp = tmp_path_factory.mktemp("unbound")
    run = tmp / "run"
    run.mkdir()
    port = free_port()
    (run / "unbound.conf").write_text(UNBOUND_CONF.format(port=port, dir=run))
    exe = d / "unbound"
    srv = Server([exe, "-d", "-c", run / "unbound.conf"], run)
    perf = None
    try:
        srv.wait_for(lambda: "start of service" in srv.output(), "unbound to start")
        perf = subprocess.Popen([d / "perf", "-q", "-d", "120", "-a", "a.test IN A", f"127.0.0.1@{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield killed_by_sigsegv(tree, exe, srv, "unbound"), ()
    finally:
        if perf:
            perf.kill()
            perf.wait()
        srv.close()


def memcached_load(port, stop):
    """set/get pipelines over one connection until stop is set"""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return
    i = 0
    try:
        while not stop.is_set():
            batch = b"".join(b"set k%d 0 0 5\r\nhello\r\nget k%d\r\n" % (i + j, i + j) for j in range(64))
            i += 64
            s.sendall(batch)
            got = b""
            while got.count(b"END\r\n") < 64:
                chunk = s.recv(65536)
                if not chunk:
                    return
                got += chunk
    except OSError:
        pass
    finally:
        s.close()


@pytest.fixture(scope="module")
def memcached_crash(tree, realprog, tmp_path_factory):
    """memcached with 4 worker threads under set/get load, crashed by kill -SEGV."""
    d = realprog("memcached")
    tmp = tmp_path_factory.mktemp("memcached")
    port = free_port()
    exe = d / "memcached"
    srv = Server([exe, "-u", "root", "-l", "127.0.0.1", "-p", port, "-U", "0", "-t", "4"], tmp / "run")
    try:
        srv.wait_for(lambda: tcp_port_open(port), "memcached to listen")
        with load_clients(memcached_load, port, 3):
            yield killed_by_sigsegv(tree, exe, srv, "memcached"), ()
    finally:
        srv.close()


LUA_SCRIPT = """
local function deep(n) if n == 0 then error("boom") end return deep(n - 1) + 1 end
local function gen(k) return coroutine.wrap(function() for i = 1, k do coroutine.yield(i) end end) end
io.stdout:write("running\\n") io.stdout:flush()
local t = {}
while true do
  for i = 1, 50 do
    local ok = pcall(deep, 20)
    local s = 0
    for v in gen(10) do s = s + v end
    t[#t + 1] = string.format("%d %s", s, tostring(ok))
    if #t > 100 then t = {} end
  end
  table.sort(t)
end
"""


def lua_crash_in(tree, realprog, tmp_path_factory, timing):
    """lua running LUA_SCRIPT (pcall of an error 20 calls deep, coroutines),
    crashed by kill -SEGV after a second and a half."""
    d = realprog("lua")
    run = tmp_path_factory.mktemp(f"lua-{timing}") / "run"
    run.mkdir()
    (run / "errors.lua").write_text(LUA_SCRIPT)
    exe = d / "src" / "lua"
    srv = Server([exe, "errors.lua"], run, env={"FUNTRACE_TIME": timing})
    try:
        srv.wait_for(lambda: "running" in srv.output(), "lua to start")
        yield killed_by_sigsegv(tree, exe, srv, "lua", settle=1.5), ()
    finally:
        srv.close()


@pytest.fixture(scope="module")
def lua_crash(tree, realprog, tmp_path_factory):
    yield from lua_crash_in(tree, realprog, tmp_path_factory, "exact")


@pytest.fixture(scope="module")
def lua_sampled_crash(tree, realprog, tmp_path_factory):
    yield from lua_crash_in(tree, realprog, tmp_path_factory, "sampled")


NGINX_CONF = """daemon off;
master_process on;
worker_processes 2;
user root;
working_directory {dir};
worker_rlimit_core 1g;
error_log {dir}/error.log info;
pid {dir}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/tmp;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/html;
    }}
}}
"""


def http_load(port, stop):
    """keep-alive GETs of / until stop is set"""
    req = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                for _ in range(100):
                    s.sendall(req)
                    got = b""
                    while b"hello" not in got:
                        chunk = s.recv(65536)
                        if not chunk:
                            raise OSError("closed")
                        got += chunk
        except OSError:
            time.sleep(0.01)


class Worker:
    """an nginx worker process (a child of the master): what check_core reads"""

    def __init__(self, pid, master):
        self.pid, self.dir, self.master = pid, master.dir, master
        self.p = self  # (check_core's srv.p.returncode)
        self.returncode = None

    def threads(self):
        return proc_threads(self.pid)

    def output(self):
        return (self.dir / "error.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def nginx_crash(tree, realprog, tmp_path_factory):
    """nginx (master and two forked workers) serving a static file under
    keep-alive load; one worker killed by kill -SEGV (it dumps its core in
    working_directory; the master starts another)."""
    d = realprog("nginx")
    run = tmp_path_factory.mktemp("nginx") / "run"
    (run / "html").mkdir(parents=True)
    (run / "html" / "index.html").write_text("hello\n")
    port = free_port()
    (run / "nginx.conf").write_text(NGINX_CONF.format(dir=run, port=port))
    exe = d / "objs" / "nginx"
    srv = Server([exe, "-p", run, "-c", run / "nginx.conf"], run)
    try:
        srv.wait_for(lambda: tcp_port_open(port), "nginx to listen")
        with load_clients(http_load, port, 4):
            time.sleep(2)
            workers = sorted(int(x) for x in (Path(f"/proc/{srv.p.pid}/task/{srv.p.pid}/children")
                                              .read_text().split()))
            assert len(workers) == 2, workers
            w = Worker(workers[0], srv)
            names = w.threads()
            os.kill(w.pid, signal.SIGSEGV)
            srv.wait_for(lambda: f"worker process {w.pid} exited on signal 11 (core dumped)" in w.output(),
                         "the master to see its worker's death")
            w.returncode = -signal.SIGSEGV
            res = check_core(tree, exe, w, names)
            res["pid"] = w.pid
            yield res, ()
    finally:
        srv.close()


def yaml_crash_in(tree, realprog, tmp_path_factory, name, link=()):
    """tests/realprogs/yaml_driver.cpp linked with yaml-cpp's libyaml-cpp.a:
    3000 documents, a quarter of them malformed (yaml-cpp's exceptions,
    caught), then a rethrow that escapes main: std::terminate -> SIGABRT."""
    d = realprog("yaml-cpp")
    tmp = tmp_path_factory.mktemp(name)
    exe = tmp / "yaml_driver"
    r = run_tool([tree.tool("funtrace-g++"), "-O2", "-g", "-I", d / "include", HERE / "yaml_driver.cpp",
                  d / "b" / "libyaml-cpp.a", *link, "-o", exe], timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    srv = Server([exe], tmp / "run")
    try:
        rc = srv.wait_exit()
        assert rc == -signal.SIGABRT, f"yaml_driver exit {rc}:\n{srv.output()[-3000:]}"
        assert "parsed " in srv.output() and "terminate called" in srv.output(), srv.output()[-3000:]
        yield check_core(tree, exe, srv, {}), ()
    finally:
        srv.close()


@pytest.fixture(scope="module")
def yaml_crash(tree, realprog, tmp_path_factory):
    yield from yaml_crash_in(tree, realprog, tmp_path_factory, "yaml")


@pytest.fixture(scope="module")
def yaml_static_crash(tree, realprog, tmp_path_factory):
    """the same, linked -static-libstdc++ (its C++ runtime in the executable:
    the exception events come from ld --wrap's interposers)"""
    yield from yaml_crash_in(tree, realprog, tmp_path_factory, "yaml-static", ["-static-libstdc++"])


def tgkill(pid, tid, sig):
    """a signal to one thread of another process (Python has no tgkill)"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(234, pid, tid, sig) != 0:  # SYS_tgkill on x86-64
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {tid}, {sig})")


def cpu_ticks(pid, tid) -> int:
    """user + system time of one thread, in clock ticks (/proc/PID/task/TID/stat)"""
    st = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    fields = st[st.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def kill_the_busiest(tree, exe, srv, name, window):
    """send SIGSEGV (tgkill) to the thread named name, other than the main
    one, that used the most CPU in the next `window` seconds; its core
    checked (check_core), res["target"] that thread"""
    main = srv.p.pid
    names = srv.threads()
    others = [t for t, n in names.items() if t != main and n == name]
    before = {t: cpu_ticks(main, t) for t in others}
    time.sleep(window)
    busiest = max(others, key=lambda t: cpu_ticks(main, t) - before[t])
    tgkill(main, busiest, signal.SIGSEGV)
    rc = srv.wait_exit()
    assert rc == -signal.SIGSEGV, f"{name} exit {rc}:\n{srv.output()[-3000:]}"
    res = check_core(tree, exe, srv, names)
    res["target"] = busiest
    return res


@pytest.fixture(scope="module")
def leveldb_crash(tree, realprog, tmp_path_factory):
    """leveldb's db_bench (C++, its CMake build): one run fills and compacts a
    database and exits normally; a second one reads it with two std::thread
    readers, and the thread that used the most CPU in the last half second (a
    reader) is sent SIGSEGV (tgkill) mid-lookup."""
    d = realprog("leveldb")
    tmp = tmp_path_factory.mktemp("leveldb")
    exe = d / "b" / "db_bench"
    db = tmp / "db"
    # (compacted: the reading run needs no compaction, so its only other threads are the readers)
    fill = run_tool([exe, "--benchmarks=fillrandom,compact", f"--db={db}", "--num=200000"], timeout=300)
    assert fill.returncode == 0 and "fillrandom" in fill.stdout, fill.stdout[-2000:] + fill.stderr[-2000:]
    srv = Server([exe, "--benchmarks=readrandom", "--use_existing_db=1", f"--db={db}", "--num=200000",
                  "--reads=1000000000", "--threads=2"], tmp / "run")
    try:
        srv.wait_for(lambda: sum(1 for n in srv.threads().values() if n == "db_bench") >= 3, "the readers")
        time.sleep(1.0)
        # the busiest over the last half second: a reader (each runs on a CPU of its own)
        yield kill_the_busiest(tree, exe, srv, "db_bench", 0.5), ()
    finally:
        srv.close()


@pytest.fixture(scope="module")
def pcl_crash(tree, realprog, tmp_path_factory):
    """PCL's cobench -n 2: two threads, each measuring coroutine creation and
    then switching between its main context and a coroutine (co_call,
    co_resume: swapcontext) for seconds; the busier one is sent SIGSEGV
    (tgkill) a second into the switching."""
    d = realprog("pcl")
    exe = d / "test" / "cobench"
    srv = Server([exe, "-n", "2"], tmp_path_factory.mktemp("pcl") / "run")
    try:
        srv.wait_for(lambda: srv.output().count("measuring switch performance") >= 2, "the switching")
        time.sleep(1.0)
        yield kill_the_busiest(tree, exe, srv, "cobench", 0.3), ()
    finally:
        srv.close()


@pytest.fixture(scope="module")
def pth_crash(tree, realprog, tmp_path_factory):
    """GNU Pth's test_philo: five philosopher threads that think, wait for
    their forks (a mutex, condition variables) and eat, with pth_sleep
    between, and Pth's scheduler, all on one kernel thread (sigsetjmp and
    siglongjmp between their stacks); crashed by kill -SEGV after 3 s."""
    d = realprog("pth")
    exe = d / "test_philo"
    srv = Server([exe], tmp_path_factory.mktemp("pth") / "run")
    try:
        yield killed_by_sigsegv(tree, exe, srv, "test_philo", settle=3.0), ()
    finally:
        srv.close()


DECODES = ["redis", "redis_trace", "unbound", "memcached", "lua", "lua_sampled", "nginx", "yaml", "yaml_static",
           "leveldb", "pcl", "pth"]
STACKS = ["redis", "redis_trace", "unbound", "memcached", "lua", "lua_sampled", "nginx", "yaml", "yaml_static",
          "leveldb", "pcl", "pth"]


@pytest.mark.parametrize("prog", DECODES)
def test_trace_decodes(request, prog):
    """coreextract (exit 0, not partial) and funtrace-decode succeed; one
    crashed thread; its last calls are the program's own functions; every
    thread is present with its name."""
    res, _ = request.getfixturevalue(f"{prog}_crash")
    assert_core(res)


@pytest.mark.parametrize("prog", DECODES)
def test_fast_replay_is_the_reference(request, tree, prog, tmp_path):
    """funtrace-decode's fast replay loops (the run loops of exact and sampled rings, with
    symbols and without) change nothing on a real program's raw: the JSON and the Perfetto
    trace, and the JSON without symbols, are byte for byte what --reference-replay (every
    event through the general code) writes."""
    res, _ = request.getfixturevalue(f"{prog}_crash")
    assert_core(res)
    for view in (("--json", "J", "--perfetto", "P"), ("--no-symbols", "--json", "J")):
        out = {}
        for kind, extra in (("fast", ()), ("ref", ("--reference-replay",))):
            files = {a: tmp_path / f"{kind}.{a}" for a in view if a in ("J", "P")}
            r = run_tool([tree.tool("funtrace-decode"), res["raw"], *(files.get(a, a) for a in view), *extra],
                         timeout=300)
            assert r.returncode in (0, 3), r.stderr
            out[kind] = (r.returncode, [files[a].read_bytes() for a in sorted(files)])
        assert out["fast"] == out["ref"], f"{prog} {' '.join(view)}: the fast replay's output differs"


@pytest.mark.parametrize("prog", STACKS)
def test_final_stack_is_gdbs(request, prog):
    """The crashing thread's final stack equals gdb's bt of the same core,
    frame by frame (inlined frames and the signal frame included; a
    tail-call frame gdb did not infer is allowed where the trace saw that
    function called: lua's sort_comp -> lua_compare -> luaV_lessthan)."""
    res, _ = request.getfixturevalue(f"{prog}_crash")
    assert_stack_is_gdbs(res)


# (the others have one thread at the crash: redis ends its own; pcl's main waits in pthread_join, which
# tail-calls __pthread_clockjoin_ex in the C library: a tail-call frame across modules, as gdb shows it; memcached's
# threads are now and then caught in pthread_mutex_unlock, which tail-calls __pthread_mutex_unlock_usercnt)
ALL_STACKS = ["leveldb", "memcached", "unbound", "pcl"]


@pytest.mark.parametrize("prog", ALL_STACKS)
def test_every_threads_final_stack_is_gdbs(request, prog):
    """Not only the crashed thread: every traced thread's final stack equals
    gdb's bt of that thread in the same core, as the crashed thread's does
    (test_final_stack_is_gdbs): threads blocked in the C library -- a
    condition variable's futex wait, with its inlined and tail-call frames --
    and threads caught mid-computation."""
    res, _ = request.getfixturevalue(f"{prog}_crash")
    assert_core(res)
    gdbs = res["gdb_all"]
    ours = {tid: t for tid, t in res["dec"]["threads"].items() if t["stack"]}
    assert len(ours) >= 2 and set(ours) <= set(gdbs), (sorted(ours), sorted(gdbs))
    differ = [f"thread {tid}:\n{d}" for tid, t in ours.items()
              if (d := stack_difference(t["stack"], t["tail"], gdbs[tid], set(t["calls"]))) is not None]
    assert not differ, "final stacks differ from gdb's:\n" + "\n".join(differ)


def test_leveldb_reader_crashed_mid_lookup(leveldb_crash):
    """The thread sent SIGSEGV is the crashed one: a std::thread reader inside
    DBImpl::Get (under Benchmark::ReadRandom), its recent calls leveldb's
    lookups."""
    res, _ = leveldb_crash
    assert_core(res)
    ct = res["crashed"]
    tid = next(t for t, v in res["dec"]["threads"].items() if v is ct)
    assert tid == res["target"], (tid, res["target"])
    assert "leveldb::Benchmark::ReadRandom" in " ".join(res["gdb"]), res["gdb"]
    assert any(c.startswith("leveldb::") for c in ct["calls"][-10:]), ct["calls"][-10:]


def test_pcl_coroutines_keep_their_stacks(pcl_crash, tree, tmp_path):
    """Each switching thread's timeline: the coroutine's calls (co_resume,
    which calls co_call) are never inside the main context's co_call, the
    pieces nest, calls are suspended and resumed, and no frame lost its
    return -- the stacks were switched, not unwound."""
    from dec_util import decode, forest
    res, _ = pcl_crash
    assert_core(res)
    ct = res["crashed"]
    assert next(t for t, v in res["dec"]["threads"].items() if v is ct) == res["target"]
    r, tr = decode(tree, res["raw"], json_out=tmp_path / "pcl.json")
    assert r.returncode == 0, r.stderr
    workers = [tid for tid, sl in tr.slices.items() if any(s.n == "co_resume" for s in sl)]
    assert len(workers) == 2, sorted(tr.slices)
    for tid in workers:
        sl = tr.slices[tid]
        lost = [s for s in sl if s.args.get("return_missing")]
        assert not lost, (tid, lost[:5])
        assert sum(1 for s in sl if s.args.get("resumed")) > 1000, tid
        assert sum(1 for s in sl if s.args.get("suspended")) > 1000, tid
        inside = []

        def walk(nodes, above):
            for n in nodes:
                if n.n in ("co_resume", "switch_bench") and ({"co_call", "run_test"} & above):
                    inside.append(n)
                walk(n.children, above | {n.n})
        walk(forest(sl), frozenset())  # (forest: the pieces nest, or it fails)
        assert not inside, (tid, inside[:3])


def test_pth_threads_keep_their_stacks(pth_crash, tree, tmp_path):
    """Pth's threads switch with sigsetjmp/siglongjmp, which the runtime logs:
    each philosopher's calls are in a context of its own, the scheduler's in
    another, main's in a third; no frame lost its return (the stacks were
    switched, not unwound: a thread's first entry, a longjmp into a signal
    handler's returned frame, starts its context); the pieces nest, and no
    philosopher is inside another's or the scheduler's calls.  Without the
    setjmp and longjmp markers each thread's calls nested in the one that
    switched to it, deeper and deeper."""
    from dec_util import decode, forest
    res, _ = pth_crash
    assert_core(res)
    r, tr = decode(tree, res["raw"], json_out=tmp_path / "pth.json")
    assert r.returncode == 0, r.stderr
    sl = tr.slices[tr.pid]
    lost = [s for s in sl if s.args.get("return_missing")]
    assert not lost, lost[:5]
    ctx = lambda name: {s.args.get("context") for s in sl if s.n == name}
    phil, sched, main = ctx("philosopher"), ctx("__pth_scheduler"), ctx("main")
    assert len(phil) == 5 and None not in phil, phil
    assert len(sched) == 1 and len(main) == 1 and not (phil & sched) and not (phil & main) and sched != main, \
        (phil, sched, main)
    assert sum(1 for s in sl if s.args.get("resumed")) > 20 and sum(1 for s in sl if s.args.get("suspended")) > 20
    inside = []

    def walk(nodes, above):
        for n in nodes:
            if n.n == "philosopher" and {"philosopher", "__pth_scheduler", "main"} & above:
                inside.append(n)
            walk(n.children, above | {n.n})
    walk(forest(sl), frozenset())  # (forest: the pieces nest, or it fails)
    assert not inside, inside[:3]


def test_lto_build_is_traced(realprog, tree):
    """unbound's own build uses -flto (configure adds it): its objects are LTO
    objects, and the linked daemon is instrumented anyway."""
    d = realprog("unbound")
    mk = (d / "Makefile").read_text()
    assert re.search(r"^CFLAGS=.*-flto", mk, re.M), "unbound's configure did not enable -flto"
    r = run_tool([tree.tool("funtrace-instrcheck"), "--runtime", tree.lib / "libfuntrace.a",
                  "--runtime", tree.lib / "libfuntrace_cxx.a", d / "unbound"])
    m = re.search(r"(\d+) of (\d+) functions instrumented", r.stdout)
    assert r.returncode == 0 and m, r.stdout + r.stderr
    assert int(m.group(1)) * 10 > int(m.group(2)) * 9, r.stdout


@pytest.mark.parametrize("prog", ["lua", "lua_sampled"])
def test_lua_errors_are_longjmps(request, tree, prog):
    """Each Lua error leaves luaD_throw by longjmp: in the trace every
    luaD_throw lost its return (return_missing) -- none ends as if it had
    returned, which is what a sampled ring's stamped return after the jump
    used to make of the return of the frame the jump landed in -- and the
    frames still open at the end are those of the final stack.  (A luaD_throw
    cut by a generation boundary failed this check once in CI: its first
    piece, which ends at the boundary, was taken for a return.)  The kill
    may land just after a jump, in the setjmp's frame before any hook ran
    since: then the frames the jump skipped are still open in the ring, and
    the decoder, aligning them with the final stack, ends them as
    return_missing and counts them as "not on the final stack" (CI once
    caught this: 5 such frames, unroll .. luaD_throw) -- and, the final stack
    showing the jump happened, as left by it (CI caught the luaD_throw without
    left_by_longjmp once; test_decoder's test_longjmp_then_a_crash_where_it_landed
    makes that case every time)."""
    import json
    res, _ = request.getfixturevalue(f"{prog}_crash")
    assert_core(res)
    out = res["raw"].with_suffix(".json")
    r = run_tool([tree.tool("funtrace-decode"), res["raw"], "--json", out], timeout=300)
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    throws = [e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("luaD_throw")]
    assert len(throws) > 20, len(throws)
    # a call that spans a generation boundary is cut into pieces: only its last
    # piece says how it ended (the others continue_in_next_generation)
    returned = [e for e in throws if not {"return_missing", "open_at_end", "continues_in_next_generation"}
                & set(k for k, v in (e.get("args") or {}).items() if v)]
    assert not returned, f"{len(returned)} of {len(throws)} luaD_throw calls returned: {returned[:3]}"
    # the runtime logs Lua's _setjmp and _longjmp (runtime/setjmps.c): a luaD_throw whose
    # luaD_rawrunprotected (where the _setjmp is) began in the ring ends at its jump, which
    # says so (left_by_longjmp); without the markers none did.  (Times in whole ns: the
    # JSON's µs with 3 decimals, as floats, are off by rounding errors.)
    span = lambda e: (round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e.get("dur", 0) * 1000))
    args = lambda e: e.get("args") or {}
    prot = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name", "").startswith("luaD_rawrunprotected"):
            prot.setdefault(e.get("tid"), []).append((*span(e), bool(args(e).get("started_before_ring"))))
    unlogged = []
    for e in throws:
        if {"continues_in_next_generation", "open_at_end"} & set(args(e)):
            continue  # (not its last piece; or killed in the jump, before it)
        a, b = span(e)
        around = [p for p in prot.get(e.get("tid"), []) if p[0] <= a and b <= p[1]]
        if around and not max(around)[2] and not args(e).get("left_by_longjmp"):
            unlogged.append(e)
    assert not unlogged, f"{len(unlogged)} luaD_throw ended by their jumps without saying so: {unlogged[:3]}"
    tid = next(t for t, v in res["dec"]["threads"].items() if v is res["crashed"])
    still_open = {e["name"] for e in events if e.get("ph") == "X" and e.get("tid") == tid
                  and (e.get("args") or {}).get("open_at_end")}
    gdb_funcs = {norm_func(f) for f in res["gdb"]}
    assert still_open and not {f for f in still_open if norm_func(f) not in gdb_funcs}, (
        f"frames open at the end but not on gdb's stack: {sorted(f for f in still_open if norm_func(f) not in gdb_funcs)}"
        f"\ngdb: {res['gdb']}")
    s = run_tool([tree.tool("funtrace-decode"), res["raw"], "--summary"], timeout=300)
    assert s.returncode == 0, s.stderr
    m = re.search(r"(\d+) frames not on the final stack", s.stdout)
    if m and int(m.group(1)):  # only after a jump that landed with no hook run since
        assert "luaD_rawrunprotected" in res["gdb"][:2], (s.stdout, res["gdb"])


def test_nginx_worker_is_the_forked_process(nginx_crash):
    """The core is a worker's, forked by the master after start-up: the trace
    is that process's (its pid, its own ring since the fork: the runtime
    starts a fork child clean), and the frames it inherited from the master,
    open since before the fork, enclose its calls."""
    res, _ = nginx_crash
    assert_core(res)
    first = res["dec"]["stdout"].splitlines()[0]
    assert f"(pid {res['pid']})" in first, first
    ct = res["crashed"]
    assert {"ngx_spawn_process", "ngx_worker_process_cycle"} <= set(ct["stack"]), ct["stack"]
    traced = "\n".join(ct["text"]).split("final stack")[0]  # (open frames may be folded: "... of NAME ...")
    assert "ngx_spawn_process" in traced, traced[:3000]


@pytest.mark.parametrize("prog", ["yaml", "yaml_static"])
def test_yaml_rethrow_escaping_to_terminate(request, tree, prog):
    """yaml-cpp's exception, caught in load() and rethrown with nothing above
    it: at the end load's __cxa_rethrow is still running (gdb's bt has it),
    and the terminate handler's own rethrow of it, under it, was unwound by
    the handler's catch; the thousands of exceptions before were caught, their
    __cxa_throw frames unwound, none left open.  The same with libstdc++
    linked into the program (-static-libstdc++)."""
    import json
    res, _ = request.getfixturevalue(f"{prog}_crash")
    assert_core(res)
    out = res["raw"].with_suffix(".json")
    r = run_tool([tree.tool("funtrace-decode"), res["raw"], "--json", out], timeout=300)
    assert r.returncode == 0, r.stderr
    ev = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") == "X"]
    end = max(e["ts"] + e["dur"] for e in ev)
    # a call cut by generation boundaries: its last piece says how it ended
    ev = [e for e in ev if not (e.get("args") or {}).get("continues_in_next_generation")]

    def args(e):
        return e.get("args") or {}
    rethrows = sorted((e for e in ev if e["name"].startswith("__cxa_rethrow")), key=lambda e: e["ts"])
    assert len(rethrows) == 2, rethrows
    escaped, handlers = rethrows
    assert args(escaped).get("open_at_end") and not args(escaped).get("return_missing"), escaped
    assert args(handlers).get("unwound_by_exception") and handlers["ts"] + handlers["dur"] < end, handlers
    throws = [e for e in ev if e["name"].startswith("__cxa_throw")]
    assert len(throws) > 10 and all(args(e).get("unwound_by_exception") for e in throws), \
        [e for e in throws if not args(e).get("unwound_by_exception")][:3]
    assert [e["name"] for e in ev if e["name"].startswith("load(") and args(e).get("open_at_end")], \
        "load() is not open at the end"
