#!/usr/bin/env bash
# decoder/fuzz/make_seeds.sh -- (re)make the seeds of `make fuzz-decoder` in
# decoder/fuzz/corpus: real raws, small enough for the harness (-max_len 65536).
#
# Each is a kernel core of one of the examples, run with 2 KiB rings
# (FUNTRACE_BUF=2048: every ring wraps) in its own temporary directory with
# `ulimit -c unlimited`, read by coreextract:
#   crash-exact, crash-sampled                 examples/crash (-pg), SIGSEGV
#   crash-finstr-exact, crash-finstr-sampled   the same built with -finstrument-functions
#                                              (call and return share an address: the
#                                              harness decodes without symbols, so these
#                                              reach the replay's fast return path)
#   abort-exact, abort-sampled                 examples/abort (C++, an exception that
#                                              escapes to std::terminate; final stacks)
#   crash-original-format                      crash-exact rewritten in the original
#                                              funtrace's format (tests/dec_oldraw.py)
#   fibers-exact, fibers-sampled               tests/progs/dec_fibers.c (-pg): coroutines
#                                              switching stacks (swapcontext), a crash in a
#                                              fiber
#   sjlj-exact, sjlj-sampled                   tests/progs/dec_sjlj_coro.c (-pg): coroutines
#                                              switched by sigsetjmp/siglongjmp (setjmp and
#                                              longjmp markers), a crash in one
#   fiber-back-exact, fiber-back-sampled       tests/progs/dec_fiber_back.c (-pg): a fiber that
#                                              moves to another thread and back (the saves
#                                              of moving contexts: three discovery passes)
# Run after ./setup.sh; needs the kernel's core_pattern to be `core` (this machine's).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build
OUT=$ROOT/decoder/fuzz/corpus
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

FUNTRACE_INSTR=finstr "$B/bin/funtrace-gcc" -O2 -g -pthread -o "$TMP/crash-finstr" "$ROOT/examples/crash.c"
"$B/bin/funtrace-gcc" -O1 -g -o "$TMP/fibers" "$ROOT/tests/progs/dec_fibers.c"
"$B/bin/funtrace-gcc" -O1 -g -o "$TMP/sjlj" "$ROOT/tests/progs/dec_sjlj_coro.c"
"$B/bin/funtrace-gcc" -O1 -g -pthread -o "$TMP/fiber-back" "$ROOT/tests/progs/dec_fiber_back.c"

# seed NAME TIME EXE [ARGS...]: run EXE until it dies, its trace into $OUT/NAME
seed() {
    local name=$1 time=$2 exe=$3 dir=$TMP/$1
    shift 3
    mkdir "$dir"
    (cd "$dir" && ulimit -c unlimited && FUNTRACE_BUF=2048 FUNTRACE_TIME=$time "$exe" "$@" >/dev/null 2>&1) 2>/dev/null || true
    [[ -f $dir/core ]] || { echo "make_seeds: $exe wrote no core in $dir" >&2; exit 1; }
    "$B/bin/coreextract" -o "$OUT/$name" "$dir/core" "$exe"
    (($(stat -c %s "$OUT/$name") <= 65536)) || { echo "make_seeds: $OUT/$name is over 64 KiB" >&2; exit 1; }
}
seed crash-exact exact "$B/examples/crash"
seed crash-sampled sampled "$B/examples/crash"
seed crash-finstr-exact exact "$TMP/crash-finstr"
seed crash-finstr-sampled sampled "$TMP/crash-finstr"
seed abort-exact exact "$B/examples/abort"
seed abort-sampled sampled "$B/examples/abort"
seed fibers-exact exact "$TMP/fibers" 200 fiber
seed fibers-sampled sampled "$TMP/fibers" 200 fiber
seed sjlj-exact exact "$TMP/sjlj" 200 fiber
seed sjlj-sampled sampled "$TMP/sjlj" 200 fiber
seed fiber-back-exact exact "$TMP/fiber-back"
seed fiber-back-sampled sampled "$TMP/fiber-back"
(cd "$ROOT/tests" && /usr/bin/python3 -c '
import sys, dec_oldraw
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(dec_oldraw.to_original(data, rotate=5))
' "$OUT/crash-exact" "$OUT/crash-original-format")
ls -l "$OUT"
