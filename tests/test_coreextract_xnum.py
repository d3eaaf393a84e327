"""PN_XNUM: cores with more program headers than e_phnum can count.

A process with more than 65,534 mappings (JVMs, big servers) gets a core whose
e_phnum is PN_XNUM (0xffff); the true count is in section header 0's sh_info
(the kernel's fs/binfmt_elf.c: fill_extnum_info).  This machine's
vm.max_map_count is 65530 and must not be changed, so no process here can have
that many mappings.  The test therefore:

  1. runs a real traced process that maps as many pages as it may (~65,400
     mappings, alternately readable and not so that they stay separate, plus
     one PROT_NONE mapping of 4096 pages) and lets the kernel dump its core
     (e_phnum ~65,400: just under the limit);
  2. writes, from that core, the core the kernel would have written for the
     same memory had that PROT_NONE mapping been 4096 mappings (alternating
     protections would do it): one PT_LOAD per page for it (no data: the pages
     were never touched), every other program header as the kernel wrote it;
     with 69,000+ program headers the kernel's layout applies: e_phnum =
     PN_XNUM, e_shoff = the end of the memory data, e_shentsize = 64,
     e_shnum = 1, e_shstrndx = 0, and one section header there with sh_type
     SHT_NULL, sh_size = 1 (e_shnum), sh_link = 0 (e_shstrndx), sh_info = the
     real count; the notes right after the program headers, the memory from
     the next page boundary on, in the same order;
  3. checks the construction with readelf and gdb (both read PN_XNUM), then
     that coreextract gives byte for byte the raw of the original core, from
     the file and through a pipe, and also with the section header cut off
     (the count is then inferred from where the data begins, and said).
"""
import struct
import subprocess
from pathlib import Path

import pytest

import rawfile
from conftest import require_tools
from test_coreextract import crash, extract, stderr_lines

PT_LOAD, PT_NOTE = 1, 4
PN_XNUM = 0xFFFF
PAGE = 4096
EHDR = "<16sHHIQQQIHHHHHH"
PHDR = "<IIQQQQQQ"


def kernel_layout_xnum(data: bytes, split_vaddr: int) -> bytes:
    """The core the kernel writes for the memory of `data` with the (empty)
    PT_LOAD at split_vaddr being one mapping per page (see the module doc)."""
    (ident, etype, mach, ver, entry, phoff, shoff, flags, ehsize, phentsize, phnum,
     shentsize, shnum, shstrndx) = struct.unpack_from(EHDR, data, 0)
    assert phnum != PN_XNUM and phentsize == 56
    phdrs = [list(struct.unpack_from(PHDR, data, phoff + 56 * i)) for i in range(phnum)]
    note = [p for p in phdrs if p[0] == PT_NOTE]
    assert len(note) == 1 and phdrs[0][0] == PT_NOTE, "the kernel writes one PT_NOTE, first"
    notes = data[note[0][2]:note[0][2] + note[0][5]]
    old_dataoff = (note[0][2] + note[0][5] + PAGE - 1) // PAGE * PAGE
    new = []
    for p in phdrs:
        ptype, pflags, off, vaddr, paddr, filesz, memsz, align = p
        if ptype == PT_LOAD and vaddr == split_vaddr:
            assert filesz == 0 and memsz % PAGE == 0
            new += [[PT_LOAD, pflags, off, vaddr + k * PAGE, 0, 0, PAGE, align] for k in range(memsz // PAGE)]
        else:
            new.append(p)
    n = len(new)
    assert n > PN_XNUM
    notes_off = 64 + 56 * n
    dataoff = (notes_off + len(notes) + PAGE - 1) // PAGE * PAGE
    for p in new:
        if p[0] == PT_NOTE:
            p[2] = notes_off
        else:
            assert p[2] >= old_dataoff
            p[2] += dataoff - old_dataoff
    body = data[old_dataoff:]
    e_shoff = dataoff + len(body)          # after the memory (x86 has no extra data)
    ehdr = struct.pack(EHDR, ident, etype, mach, ver, entry, 64, e_shoff, flags, ehsize, 56, PN_XNUM,
                       64, 1, 0)
    shdr = struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 1, 0, n, 0, 0)   # SHT_NULL, sh_size 1, sh_info n
    out = bytearray(ehdr)
    for p in new:
        out += struct.pack(PHDR, *p)
    out += notes
    out += bytes(dataoff - len(out))
    out += body
    out += shdr
    return bytes(out)


def none_mapping_of(core: Path) -> int:
    """vaddr of the 4096-page PROT_NONE PT_LOAD of the maps-mode process"""
    out = subprocess.run(["readelf", "-lW", str(core)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        w = line.split()
        if w and w[0] == "LOAD" and int(w[5], 16) == 4096 * PAGE and int(w[4], 16) == 0:
            return int(w[2], 16)
    raise AssertionError("no 16 MiB PROT_NONE segment in the core")


@pytest.mark.slow
def test_pn_xnum_core_of_a_process_with_more_than_65535_mappings(tree, compiled, run_crash, tmp_path):
    require_tools(tree, "coreextract")
    prog = compiled("ce_crash.c", "pg")
    run = crash(run_crash, prog, "maps", "65400")
    maps = int(run.stdout.split()[-1])
    assert maps > 65000, run.stdout
    data = run.core.read_bytes()
    phnum = struct.unpack_from("<H", data, 56)[0]
    assert phnum > 65000      # the real kernel core: just under PN_XNUM
    ref, ref_raw = extract(tree, run.core)
    assert ref.returncode == 0, ref.stderr
    xcore = tmp_path / "core.xnum"
    xcore.write_bytes(kernel_layout_xnum(data, none_mapping_of(run.core)))
    total = phnum - 1 + 4096
    # the construction is what the standard tools read as PN_XNUM
    h = subprocess.run(["readelf", "-hW", str(xcore)], capture_output=True, text=True, check=True).stdout
    assert f"Number of program headers:         65535 ({total})" in h, h
    g = subprocess.run(["gdb", "-batch", "-nx", "-ex", "bt 1", str(prog), str(xcore)], capture_output=True,
                       text=True, timeout=300)
    assert "ce_fault" in g.stdout, g.stdout + g.stderr

    # coreextract: the same raw as from the original core, from the file and through a pipe
    r, raw = extract(tree, xcore, "-v")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ref.stdout
    assert f"e_phnum is PN_XNUM: {total} program headers (from section header 0)" in r.stderr.decode()
    p = subprocess.run([str(tree.tool("coreextract")), "-"], stdin=open(xcore, "rb"), capture_output=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    # (`-` adds the scheduling events it captures first: not part of the core)
    assert rawfile.without_chunks(p.stdout, {"SCHEDEVT"}) == ref.stdout
    pipe = subprocess.run(f"cat {xcore} | {tree.tool('coreextract')} -", shell=True, capture_output=True,
                          timeout=300)
    assert pipe.returncode == 0 and rawfile.without_chunks(pipe.stdout, {"SCHEDEVT"}) == ref.stdout, pipe.stderr

    # without its section header (the last 64 bytes): the count is inferred, and the
    # core is reported truncated, though the trace is complete
    cut = tmp_path / "core.xnum.cut"
    cut.write_bytes(xcore.read_bytes()[:-64])
    for args in (["-v", str(cut)], ["-v", "--one-pass", str(cut)]):
        r = subprocess.run([str(tree.tool("coreextract")), *args], capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert r.stdout == ref.stdout
        err = r.stderr.decode()
        assert f"{total} program headers (inferred from where the data begins" in err, err
        assert "truncated" in err and "the trace is complete" in err, err
