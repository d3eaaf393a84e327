#!/usr/bin/env bash
# examples/demo.sh -- funtrace end to end on a real crash (the README's first command).
#
# Runs build/examples/crash (4 worker threads; "loader" dies with SIGSEGV) in a
# new temporary directory with `ulimit -c unlimited` set for that run only (no
# machine-wide setting is touched), checks that the kernel wrote a core,
# recovers the trace from the core with coreextract, prints the last calls of
# every thread with funtrace-decode, and writes a Perfetto/Chrome JSON
# timeline next to the core.  It builds nothing: run ./setup.sh first.
#
# Exit status: 0 if every step worked; 1 if a step failed (its name is
# printed), including step "build": a program or tool it needs is not built
# (checked before anything runs); 2 for an unknown option.
#
#   examples/demo.sh
#   FUNTRACE_BUILD=DIR  use DIR instead of build/ (e.g. build-san)
#   FUNTRACE_DEMO_LAST=N  calls shown per thread (default 12)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${FUNTRACE_BUILD:-$ROOT/build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
CRASH=$B/examples/crash
COREEXTRACT=$B/bin/coreextract
DECODE=$B/bin/funtrace-decode
GDB_EXT=$B/share/funtrace/gdb/funtrace.py
LAST=${FUNTRACE_DEMO_LAST:-12}

say() { printf 'demo: %s\n' "$*"; }
fail() {
    printf 'demo: FAILED at step "%s": %s\n' "$1" "$2" >&2
    [[ -n ${WORK:-} ]] && printf 'demo: files so far are in %s\n' "$WORK" >&2
    exit 1
}
indent() { sed 's/^/    /'; }

for arg in "$@"; do
    case $arg in
        -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "demo: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

# ---- 0. what it runs: all built, or nothing is run -------------------------
for need in "$CRASH" "$COREEXTRACT" "$DECODE"; do
    [[ -x $need ]] || fail "build" "$need is not built: run ./setup.sh (or make) first"
done

# ---- 1. the example program ------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/funtrace-demo.XXXXXX") || fail "mktemp" "cannot create a temporary directory"
say "running $CRASH in $WORK (ulimit -c unlimited for this run only)"

# The subshell execs the program, so $! is the crashing process's pid.
(
    cd "$WORK" || exit 125
    ulimit -c unlimited 2>/dev/null || ulimit -c "$(ulimit -H -c)"
    exec "$CRASH"
) >"$WORK/crash.out" 2>&1 </dev/null &
PID=$!
{ wait "$PID"; } 2>/dev/null # (without bash's own "Segmentation fault" line)
RC=$?
indent <"$WORK/crash.out"
if ((RC != 128 + 11)); then
    fail "run crash" "expected it to die of SIGSEGV (exit status 139), got exit status $RC"
fi
say "crash (pid $PID) died of SIGSEGV, as intended"

# ---- 2. the core -----------------------------------------------------------
CORE=
for c in "$WORK/core" "$WORK/core.$PID" "$WORK"/core*; do
    [[ -f $c ]] && { CORE=$c; break; }
done
if [[ -z $CORE ]]; then
    PATTERN=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo '?')
    if [[ $PATTERN == '|'* ]] && command -v coredumpctl >/dev/null; then
        # systemd-coredump keeps cores itself: ask it for ours
        coredumpctl -q dump --output="$WORK/core" "$PID" >/dev/null 2>&1 && CORE=$WORK/core
    fi
    [[ -n $CORE ]] || fail "find core" "no core file in $WORK; the kernel's core_pattern is '$PATTERN' (cores must be written to the crashing process's directory, e.g. core_pattern 'core'; the hard ulimit -c is $(ulimit -H -c))"
fi
say "core: $CORE ($(stat -c %s "$CORE") bytes)"

# ---- 3. trace out of the core ----------------------------------------------
RAW=$WORK/trace.raw
"$COREEXTRACT" "$CORE" "$CRASH" >"$RAW" 2>"$WORK/coreextract.err"
RC=$?
if ((RC)); then
    indent <"$WORK/coreextract.err" >&2
    fail "coreextract" "coreextract $CORE exited with status $RC"
fi
[[ -s $RAW ]] || fail "coreextract" "coreextract wrote an empty trace"
indent <"$WORK/coreextract.err"
say "coreextract: trace recovered from the core: $RAW ($(stat -c %s "$RAW") bytes)"

# ---- 4. decode -------------------------------------------------------------
say "the last calls of every thread before the crash:"
echo
"$DECODE" "$RAW" --text --calls "$LAST" 2>"$WORK/decode.err"
RC=$?
if ((RC)); then
    indent <"$WORK/decode.err" >&2
    fail "decode --text" "funtrace-decode --text exited with status $RC"
fi
echo
JSON=$WORK/trace.json
"$DECODE" "$RAW" --json "$JSON" >/dev/null 2>"$WORK/decode-json.err"
RC=$?
if ((RC)); then
    indent <"$WORK/decode-json.err" >&2
    fail "decode --json" "funtrace-decode --json exited with status $RC"
fi
[[ -s $JSON ]] || fail "decode --json" "no JSON was written to $JSON"

say "all steps worked.  Files: $WORK (core, trace.raw, trace.json)"
echo "Perfetto JSON: $JSON — open https://ui.perfetto.dev and drag the file in (or: vizviewer $JSON)"
if [[ -f $GDB_EXT ]]; then
    echo "The same from gdb: gdb -q -batch -x $GDB_EXT -ex 'funtrace tail $LAST' $CRASH $CORE"
fi
exit 0
