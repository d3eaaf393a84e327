#!/bin/sh
# fuzz_seeds.sh [DIR] -- make the seed cores of the coreextract fuzzer (default
# DIR: coreextract/fuzz/seeds, the ones kept in the tree).
#
# Real kernel cores of a tiny traced program (tests/progs/ce_crash.c) crashed in
# several ways, small enough for AFL++'s 1 MB input limit: small rings
# (FUNTRACE_BUF=4096), a small registry (FUNTRACE_MAX_THREADS=8), no
# housekeeping thread, 64 KiB stacks, only private anonymous memory dumped
# (coredump_filter 1); then slimmed by `coreextract --slim-core`, which keeps
# exactly what coreextract reads (the trace, the stacks, ELF headers) and
# drops the rest.  Plus the same kinds of input coreextract meets in the
# field: a zstd-compressed core, a sampled-mode core, a truncated one, one with
# its program header count in section header 0 (PN_XNUM).
# Needs a built tree (make).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/coreextract/fuzz/seeds}
ce=$here/build/bin/coreextract
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/build/bin/funtrace-gcc" -O1 -g -pthread -o "$work/prog" "$here/tests/progs/ce_crash.c"
seed() { # name, env..., -- args...
    name=$1; shift
    (
        cd "$work"
        rm -f core
        ulimit -c unlimited
        ulimit -s 64
        echo 1 > /proc/self/coredump_filter
        env FUNTRACE_BUF=4096 FUNTRACE_MAX_THREADS=8 FUNTRACE_GEN_MS=0 "$@" >/dev/null 2>&1 || true
    )
    [ -f "$work/core" ] || { echo "fuzz_seeds: no core from $*" >&2; exit 1; }
    "$ce" --slim-core "$out/$name.core" "$work/core" "$work/prog" >/dev/null
}
seed segv-thread ./prog segv-thread
seed abort ./prog abort
seed exited ./prog exited
seed loop ./prog loop 300
seed many ./prog many 3
seed sampled FUNTRACE_TIME=sampled ./prog loop 300
zstd -q -19 -f "$out/many.core" -o "$out/many.core.zst"
# PN_XNUM, the kernel's way (fs/binfmt_elf.c fill_extnum_info): e_phnum 0xffff,
# e_shoff/e_shentsize/e_shnum = end of file/64/1, and one section header
# there with sh_size 1, sh_link 0, sh_info = the real count
le() { # value bytes: little-endian bytes on stdout
    v=$1 i=0
    while [ "$i" -lt "$2" ]; do printf "\\$(printf %03o $((v & 255)))"; v=$((v >> 8)); i=$((i + 1)); done
}
patch() { dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
x="$out/xnum.core"
cp "$out/abort.core" "$x"
n=$(od -An -tu2 -j56 -N2 "$x" | tr -d ' ')
end=$(stat -c %s "$x")
le "$end" 8 | patch "$x" 40       # e_shoff
le 65535 2 | patch "$x" 56        # e_phnum = PN_XNUM
le 64 2 | patch "$x" 58           # e_shentsize
le 1 2 | patch "$x" 60            # e_shnum
le 0 2 | patch "$x" 62            # e_shstrndx
{ le 0 24; le 0 8; le 1 8; le 0 4; le "$n" 4; le 0 16; } >> "$x"
size=$(stat -c %s "$out/segv-thread.core")
head -c $((size * 2 / 3)) "$out/segv-thread.core" > "$out/truncated.core"
ls -la "$out"
