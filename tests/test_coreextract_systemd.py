"""Cores stored by systemd-coredump, read by coreextract.

On machines where systemd-coredump owns core_pattern, a crash leaves
/var/lib/systemd/coredump/core.COMM.UID.BOOTID.PID.TIMESTAMP.zst: the core,
zstd-compressed, with its metadata in user.coredump.* xattrs (and the journal).
coreextract reads such a file directly, decompressing on the fly in one pass.

This machine's core_pattern is `core` and must stay so, and installing the
systemd-coredump package would switch it (its postinst applies
50-coredump.conf).  So the test runs systemd-coredump's own storage code from
the Debian package unpacked into a private directory (or the installed one, if
the machine has it) the way systemd runs it: socket-activated
(systemd-coredump@.service, the socket on stdin and fd 3), in a private mount
namespace whose /var/lib/systemd/coredump is a directory of the test.  The
datagrams it receives are the ones its kernel-side half (`systemd-coredump %P
%u ...` from core_pattern) sends after reading /proc of the dying process:
COREDUMP_PID=, COREDUMP_UID=, ..., then the core's fd.  The core itself is a
real kernel core of a traced program.
"""
import array
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

import rawfile
from conftest import require_tools, run_tool
from test_coreextract import crash, extract

STORE = "/var/lib/systemd/coredump"


@pytest.fixture(scope="session")
def systemd_coredump(tmp_path_factory):
    """the systemd-coredump binary: installed, else unpacked from its Debian package"""
    for p in ("/lib/systemd/systemd-coredump", "/usr/lib/systemd/systemd-coredump"):
        if Path(p).exists():
            return Path(p)
    d = tmp_path_factory.mktemp("systemd-coredump")
    r = subprocess.run(["apt-get", "download", "systemd-coredump"], cwd=d, capture_output=True, text=True,
                       timeout=300)
    debs = list(d.glob("systemd-coredump_*.deb"))
    if r.returncode != 0 or not debs:
        pytest.skip(f"systemd-coredump is not installed and its package cannot be downloaded: {r.stderr[-300:]}")
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(d / "root")], check=True)
    binary = d / "root" / "lib" / "systemd" / "systemd-coredump"
    assert binary.exists()
    probe = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    if "not found" in probe.stdout:
        pytest.skip(f"systemd-coredump's libraries are missing here: {probe.stdout}")
    return binary


def store_with_systemd_coredump(binary, core, meta, store):
    """Hand core to systemd-coredump as systemd-coredump@.service gets it; it
    stores it in `store` (mounted on /var/lib/systemd/coredump for it alone)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)

    def stdin_is_the_socket():
        os.dup2(theirs.fileno(), 0)
    p = subprocess.Popen(
        ["unshare", "--mount", "sh", "-c",
         f"exec 3<&0; mount --bind {store} {STORE} && "
         f"LISTEN_PID=$$ LISTEN_FDS=1 SYSTEMD_LOG_TARGET=console exec {binary}"],
        preexec_fn=stdin_is_the_socket, pass_fds=(theirs.fileno(),), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    theirs.close()
    for k, v in meta.items():
        ours.send(f"{k}={v}".encode())
    fd = os.open(core, os.O_RDONLY)
    try:
        # the last, empty datagram carries the core's fd
        ours.sendmsg([b""], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    finally:
        os.close(fd)
    out, err = p.communicate(timeout=120)
    ours.close()
    assert p.returncode == 0, err.decode()
    return err.decode()


@pytest.mark.root
def test_cores_stored_by_systemd_coredump(tree, compiled, run_crash, tmp_path, systemd_coredump):
    require_tools(tree, "coreextract")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    prog = compiled("ce_crash.c", "pg")
    run = crash(run_crash, prog, "many", "4")
    ref, _ = extract(tree, run.core)
    assert ref.returncode == 0, ref.stderr
    store = tmp_path / "store"
    store.mkdir()
    usec = int(time.time() * 1e6)
    meta = {"COREDUMP_PID": run.pid, "COREDUMP_UID": os.getuid(), "COREDUMP_GID": os.getgid(),
            "COREDUMP_SIGNAL": 11, "COREDUMP_TIMESTAMP": usec, "COREDUMP_RLIMIT": 2 ** 64 - 1,
            "COREDUMP_HOSTNAME": socket.gethostname(), "COREDUMP_COMM": prog.name[:15],
            "COREDUMP_EXE": prog, "COREDUMP_CMDLINE": f"{prog} many 4",
            "MESSAGE": f"Process {run.pid} ({prog.name[:15]}) of user {os.getuid()} dumped core."}
    store_with_systemd_coredump(systemd_coredump, run.core, meta, store)
    (stored,) = list(store.iterdir())
    # systemd's naming, compression and metadata
    assert re.fullmatch(rf"core\.{re.escape(prog.name[:15])}\.{os.getuid()}\.[0-9a-f]{{32}}\.{run.pid}\.{usec}\.zst",
                        stored.name), stored.name
    assert stored.read_bytes()[:4] == b"\x28\xb5\x2f\xfd", "zstd"
    assert stored.stat().st_size < run.core.stat().st_size // 10
    xattrs = {a: os.getxattr(stored, a).decode() for a in os.listxattr(stored)}
    assert xattrs.get("user.coredump.pid") == str(run.pid) and xattrs.get("user.coredump.exe") == str(prog), xattrs

    # coreextract: the same raw as from the kernel's core file, with no temporary file
    env = {"TMPDIR": str(tmp_path / "no-such-dir")}
    r = run_tool([tree.tool("coreextract"), "-v", stored], text=False, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ref.stdout
    assert b"input is zstd, read once" in r.stderr
    # as a core_pattern-style pipe, e.g. from `coredumpctl dump` or `zstdcat`
    p = subprocess.run(f"cat {stored} | {tree.tool('coreextract')} -", shell=True, capture_output=True, timeout=120,
                       env=dict(os.environ, **env))
    assert p.returncode == 0, p.stderr
    assert rawfile.without_chunks(p.stdout, {"SCHEDEVT"}) == ref.stdout   # `-` adds scheduling events
