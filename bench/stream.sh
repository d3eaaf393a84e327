#!/bin/bash
# bench/stream.sh -- coreextract reading a big core once, as a core_pattern
# handler does (`coreextract -`), and a zstd-compressed one, against the time
# it takes just to read the same bytes.  Writes a Markdown section (stdout,
# or --out FILE); bench/run includes it in BENCHMARKS.md.
#
#   bench/stream.sh [--quick] [--out FILE]
#
# The core: bench/bigcore.c (funtrace-gcc -pg), 4 GiB of touched heap (quick:
# 256 MiB) and 16 threads with 1 MiB rings, dumped by the kernel.  TMPDIR is a
# 4 MiB tmpfs mounted for the run (needs root): nothing can be spooled.  Runs
# are paired and interleaved (baseline, then coreextract, RUNS times); the
# ratio is the median of the per-pair ratios; the machine's load is recorded
# before and after.  Needs `make bench` (bigcore-pg, runstat).  Exit: 0, 1 if
# a measurement failed (the section says which), 2 bad usage / not built.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
QUICK=0
OUT=
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --out) [[ $# -ge 2 ]] || { echo "bench/stream.sh: --out needs a file" >&2; exit 2; }; OUT=$2; shift ;;
        -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/stream.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
BB=$ROOT/build/bench
CE=$ROOT/build/bin/coreextract
for x in "$BB/bigcore-pg" "$BB/runstat" "$CE"; do
    [[ -x $x ]] || { echo "bench/stream.sh: $x is not built (make bench)" >&2; exit 2; }
done
if [[ $QUICK = 1 ]]; then HEAP=256; RUNS=3; else HEAP=4096; RUNS=5; fi
THREADS=16
note() { echo "bench/stream.sh: $*" >&2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/funtrace-stream.XXXXXX")
SMALL=$WORK/tmpfs
mkdir -p "$SMALL"
cleanup() { mountpoint -q "$SMALL" && umount "$SMALL"; rm -rf "$WORK"; }
trap cleanup EXIT
FAILED=0
WHY=
if ! mount -t tmpfs -o size=4m funtrace-stream "$SMALL" 2>/dev/null; then
    WHY="cannot mount a 4 MiB tmpfs for TMPDIR (needs root)"
fi

stats() {
    sort -g | awk '{v[NR] = $1}
        END { if (NR == 0) { print "nan nan nan 0"; exit }
              m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              print m, v[1], v[NR], NR }'
}
fmt() { local m lo hi n; read -r m lo hi n <<<"$1"; [[ $n == 0 ]] && { printf -- '-'; return; }
        printf "%.${2}f (%.${2}f–%.${2}f)" "$m" "$lo" "$hi"; }
val() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A W R C
if [[ -z $WHY ]]; then
    note "a core with $HEAP MiB of heap and $THREADS x 1 MiB rings"
    { (cd "$WORK" && ulimit -c unlimited && exec "$BB/bigcore-pg" --heap-mib "$HEAP" --threads "$THREADS" \
        --calls 100000 --abort) >/dev/null 2>&1; } 2>/dev/null
    [[ -s $WORK/core ]] || WHY="no core was written (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
fi
if [[ -z $WHY ]]; then
    SIZE=$(stat -c %s "$WORK/core")
    "$CE" -o "$WORK/ref.raw" "$WORK/core" "$BB/bigcore-pg" 2>/dev/null || WHY="coreextract failed on the core file"
fi
if [[ -z $WHY ]]; then
    note "zstd -1 of the core"
    zstd -q -1 -T1 "$WORK/core" -o "$WORK/core.zst" || WHY="zstd failed"
    ZSIZE=$(stat -c %s "$WORK/core.zst" 2>/dev/null || echo 0)
fi
# one measurement: KEY, then the command (its stdin: the pipe, if any)
run() {
    local key=$1; shift
    local line
    line=$("$@") || true
    if [[ $line != *" rc 0 "* ]]; then
        WHY="$key failed: $line"; FAILED=1; return 1
    fi
    W[$key]+=" $(val wall_ms "$line")"
    R[$key]+=" $(val maxrss_kb "$line")"
    C[$key]+=" $(val cpu_ms "$line")"
}
RATIO_PIPE= RATIO_ZST=
if [[ -z $WHY ]]; then
    export TMPDIR=$SMALL
    for ((i = 0; i < RUNS; i++)); do
        note "pair $((i + 1)) of $RUNS"
        run cat-pipe sh -c "cat '$WORK/core' | '$BB/runstat' -- cat" || break
        run ce-pipe sh -c "cat '$WORK/core' | '$BB/runstat' -o '$WORK/p.raw' -- '$CE' - '$BB/bigcore-pg'" || break
        run unzstd "$BB/runstat" -- zstd -dc "$WORK/core.zst" || break
        run ce-zst "$BB/runstat" -o "$WORK/z.raw" -- "$CE" "$WORK/core.zst" "$BB/bigcore-pg" || break
        cmp -s "$WORK/z.raw" "$WORK/ref.raw" || { WHY="the raw from the zstd core differs from the file's"; break; }
        run ce-file "$BB/runstat" -o "$WORK/f.raw" -- "$CE" "$WORK/core" "$BB/bigcore-pg" || break
        RATIO_PIPE+=" $(awk -v a="${W[ce-pipe]##* }" -v b="${W[cat-pipe]##* }" 'BEGIN {print a / b}')"
        RATIO_ZST+=" $(awk -v a="${W[ce-zst]##* }" -v b="${W[unzstd]##* }" 'BEGIN {print a / b}')"
    done
    unset TMPDIR
fi
[[ -n $WHY ]] && FAILED=1
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
s() { tr ' ' '\n' <<<"$1" | grep -v '^$' | stats; }
mib() { awk -v x="$1" 'BEGIN {printf "%.0f", x / 1048576}'; }
{
echo "## coreextract reading a core once (core_pattern pipe, compressed core)"
echo
echo "\`bench/stream.sh\`: a core of $HEAP MiB of heap and $THREADS threads with 1 MiB rings ($THREADS MiB of rings),"
echo "read once, in order, with \`TMPDIR\` on a 4 MiB tmpfs (nothing can be spooled); $RUNS interleaved pairs, wall ms"
echo "median (min–max), and CPU ms (user + sys) of the reading process, less sensitive to the machine's load; the"
echo "ratio is the median of the per-pair wall ratios. Load average $LOAD0 before, $LOAD1 after (2 CPUs shared with"
echo "other work: compare within a row, not across machines)."
echo
if [[ -n $WHY ]]; then
    echo "**Not measured: $WHY.**"
else
    echo "| input | baseline: just reading it, wall / CPU ms | coreextract, wall / CPU ms | ratio (wall) | coreextract peak RSS |"
    echo "| --- | --- | --- | --- | --- |"
    row() { # label baseline-label base-key ce-key ratios
        echo "| $1 | $2$(fmt "$(s "${W[$3]}")" 0) / $(fmt "$(s "${C[$3]}")" 0) | $(fmt "$(s "${W[$4]}")" 0) / $(fmt "$(s "${C[$4]}")" 0) | $(fmt "$(s "$5")" 2)× | $(awk -v k="$(s "${R[$4]}" | cut -d' ' -f1)" 'BEGIN {printf "%.1f MiB", k / 1024}') |"
    }
    row "$(mib "$SIZE") MiB core through a pipe (\`cat core \| coreextract -\`)" "\`cat core \| cat\`: " cat-pipe ce-pipe "$RATIO_PIPE"
    row "the same core, zstd -1 ($(mib "$ZSIZE") MiB)" "\`zstd -dc\`: " unzstd ce-zst "$RATIO_ZST"
    echo "| the core file (mmapped, for reference) | | $(fmt "$(s "${W[ce-file]}")" 0) / $(fmt "$(s "${C[ce-file]}")" 0) | | $(awk -v k="$(s "${R[ce-file]}" | cut -d' ' -f1)" 'BEGIN {printf "%.1f MiB", k / 1024}') |"
    echo
    echo "Every raw is the one from the core file (byte for byte; through the pipe with the SCHEDEVT chunk the pipe"
    echo "handler adds, tests/test_coreextract_stream.py). The rings are $THREADS MiB: what the one-pass read"
    echo "keeps is the rings, the registry, the threads' stacks and a few pages per mapped file."
fi
} > "${OUT:-/dev/stdout}"
exit $FAILED
