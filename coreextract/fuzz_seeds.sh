#!/bin/sh
# fuzz_seeds.sh DIR -- write small real cores (seeds for the coreextract fuzzer)
# into DIR: a tiny funtrace-instrumented program crashed in a few ways, with
# small rings (FUNTRACE_BUF=4096), a small registry (FUNTRACE_MAX_THREADS=8)
# and coredump_filter limited to private anonymous memory.
# Needs a built tree (build/bin/funtrace-gcc).  Usage:
#   make fuzz-coreextract && coreextract/fuzz_seeds.sh build/fuzz/corpus &&
#   build/fuzz/coreextract-fuzz -max_len=4000000 build/fuzz/corpus
set -eu
out=${1:?usage: fuzz_seeds.sh DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/build/bin/funtrace-gcc" -O1 -g -pthread -o "$work/prog" "$here/tests/progs/ce_crash.c"
n=0
for mode in "segv-thread" "abort" "exited" "loop 300" "many 3"; do
    n=$((n + 1))
    (
        cd "$work"
        rm -f core
        ulimit -c unlimited
        ulimit -s 256
        echo 1 > /proc/self/coredump_filter
        FUNTRACE_BUF=4096 FUNTRACE_MAX_THREADS=8 ./prog $mode >/dev/null 2>&1 || true
    )
    if [ -f "$work/core" ]; then
        mv "$work/core" "$out/seed$n.core"
    fi
done
ls -la "$out"
