"""Runtime: the TSC frequency at start-up (FORMAT.md 1.2 "TSC frequency").
On a machine whose /proc/cpuinfo "cpu MHz" is the kernel's cpu_khz (invariant
TSC, no aperfmperf, no cpufreq driver - e.g. this KVM guest, where the perf
page has no cap_user_time and CPUID 0x15 is empty) start-up does not spin
1 ms calibrating; with no fast source the housekeeper calibrates and
snapshots taken before that carry tsc_hz 0, which the decoder accepts."""
import os
import re
from pathlib import Path

import pytest

import rawfile
from conftest import run_program
from test_runtime_helpers import only_snapshot

SRC_NONE, SRC_CALIBRATED, SRC_CPUINFO = 0, 4, 5


def cpuinfo_mhz_usable():
    """the runtime's condition for source 5, or None: cpu0's 'cpu MHz' as Hz"""
    if os.path.exists("/sys/devices/system/cpu/cpu0/cpufreq"):
        return None
    block = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    flags = set(re.search(r"^flags\s*:\s*(.*)$", block, re.M).group(1).split())
    m = re.search(r"^cpu MHz\s*:\s*(\d+)\.(\d{3})", block, re.M)
    if not m or "aperfmperf" in flags or not {"tsc", "constant_tsc"} <= flags \
            or not flags & {"nonstop_tsc", "tsc_known_freq"}:
        return None
    return (int(m.group(1)) * 1000 + int(m.group(2))) * 1000


def run(prog, tmp_path, name, env=None):
    r = run_program([prog], tmp_path / name, env=env, want_core=False)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.fullmatch(r"startup_ticks=(\d+) hz=(\d+)\n", r.stdout)
    assert m, r.stdout
    return r, int(m.group(1)), int(m.group(2)), only_snapshot(r.dir / "early.raw"), only_snapshot(r.dir / "late.raw")


def test_tsc_from_cpuinfo_without_spin(compiled, tmp_path):
    """Where cpuinfo qualifies and sysfs has no tsc_freq_khz, the frequency
    comes from a fast source without a calibration spin: source 5 (cpuinfo,
    exactly its kHz value) or 1 (perf page) -- neither path spins.  (How long
    start-up takes is measured in bench/, not asserted here.)  With
    FUNTRACE_TSC_SOURCE=calibrated FUNTRACE_GEN_MS=0 the 1 ms spin is used."""
    want = cpuinfo_mhz_usable()
    if want is None or os.path.exists("/sys/devices/system/cpu/cpu0/tsc_freq_khz"):
        pytest.skip("cpuinfo 'cpu MHz' is not the TSC frequency here, or sysfs has it")
    prog = compiled("rt_tsc.c", "pg")
    r, startup, hz, early, late = run(prog, tmp_path, "fast")
    assert early.header["tsc_hz_source"] in (1, SRC_CPUINFO)
    if early.header["tsc_hz_source"] == SRC_CPUINFO:
        assert early.header["tsc_hz"] == want == hz
    assert early.tsc_hz == early.header["tsc_hz"]
    assert early.gens and early.gens[0]["tsc_hz"] == early.header["tsc_hz"]
    # the synchronous calibration (no housekeeper to defer it to) spins >= 1 ms
    r, startup, hz, early, late = run(prog, tmp_path, "spin",
                                      env={"FUNTRACE_TSC_SOURCE": "calibrated", "FUNTRACE_GEN_MS": "0"})
    assert early.header["tsc_hz_source"] == SRC_CALIBRATED
    assert startup / hz >= 0.001
    assert abs(hz - want) < want * 0.002


def test_tsc_deferred_calibration(compiled, tmp_path, tool):
    """With no fast source (FUNTRACE_TSC_SOURCE=calibrated) and a housekeeper,
    start-up does not calibrate: a snapshot taken at once has tsc_hz 0 /
    source 0 (the housekeeper needs ~10 ms), one taken 100 ms later has the
    calibrated value in the header, FUNTRACE and generation 0; the decoder
    decodes both."""
    prog = compiled("rt_tsc.c", "pg")
    r, startup, hz, early, late = run(prog, tmp_path, "deferred", env={"FUNTRACE_TSC_SOURCE": "calibrated"})
    assert 5e8 < hz < 1e10
    assert late.header["tsc_hz_source"] == SRC_CALIBRATED
    assert late.header["tsc_hz"] == late.tsc_hz == hz
    assert late.gens[0]["gen"] == 0 and late.gens[0]["tsc_hz"] == hz
    if early.header["tsc_hz_source"] == SRC_NONE:  # the usual case: main ran before the housekeeper finished
        assert early.header["tsc_hz"] == 0 and early.tsc_hz == 0 and early.gens[0]["tsc_hz"] == 0
    else:
        assert early.header["tsc_hz_source"] == SRC_CALIBRATED
    want = cpuinfo_mhz_usable()
    if want:
        assert abs(hz - want) < want * 0.002
    for f in ("early.raw", "late.raw"):
        d = tool("funtrace-decode", "--json", str(r.dir / (f + ".json")), str(r.dir / f))
        assert d.returncode == 0, d.stderr
        assert (r.dir / (f + ".json")).stat().st_size > 0
