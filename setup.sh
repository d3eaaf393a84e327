#!/usr/bin/env bash
# setup.sh -- make this machine able to build and test funtrace, build it, install it.
#
#   ./setup.sh              install the missing Debian packages (apt-get), `make -j2`,
#                           then `make install` (PREFIX=/usr/local): the tools, and gdb's
#                           `funtrace` command for every gdb (gdb's system gdbinit directory)
#   ./setup.sh --no-install the packages and the build only
#   ./setup.sh --no-build   only the packages
#
# Idempotent: packages already installed are left alone (apt-get is not run at
# all when nothing is missing) and the build is incremental.  Each step prints
# one line ("setup: <step>... ok"); a failing step prints its output and
# "setup: FAILED at step '<step>'" and the script exits non-zero.
# Besides installing funtrace, it never changes machine-wide settings
# (core_pattern, sysctl, ulimits).
set -euo pipefail

cd "$(dirname "$0")"

# Debian packages the build and the test suite need, one per word.
PACKAGES=(
    build-essential gcc g++ make libc6-dev  # toolchain
    binutils pkg-config file cmake git
    clang libclang-rt-14-dev                # funtrace-clang wrapper + its tests; libFuzzer/sanitizer runtimes (only Recommended by clang)
    gdb gdbserver                           # the gdb extension (gdbserver: its remote-target tests)
    libelf-dev libdw-dev libunwind-dev      # coreextract
    libdeflate-dev                          # the decoder inflates compressed debug files (libc6-dbg) with it: twice zlib's speed
    libzstd-dev liblz4-dev liblzma-dev zlib1g-dev   # compressed cores / debug sections
    zstd lz4 xz-utils elfutils              # command-line tools used by the tests
    debuginfod libdebuginfod1               # the decoder fetches debug info through libdebuginfod; the tests run a local server
    protobuf-c-compiler libprotobuf-c-dev   # funtrace-decode --perfetto (protoc-c, protobuf-c)
    protobuf-compiler                       # protoc: the tests parse --perfetto files with Perfetto's schema
    help2man                                # the man pages, from each program's --help
    python3-pytest                          # the test suite
    libboost-context-dev libboost-fiber-dev # the tests: coroutines on Boost.Context and Boost.Fiber (tests/progs/dec_boost_fiber*.cc)
    dpkg-dev libevent-dev libssl-dev libexpat1-dev bison flex libtool-bin  # the real-programs tier: apt-get source, memcached, unbound, lua
    libgtest-dev libgmock-dev               # the real-programs tier: leveldb's db_bench includes its test utilities
    afl++                                   # make fuzz: the AFL++ build of the coreextract fuzz harness
)

BUILD_JOBS=${FUNTRACE_JOBS:-2}
DO_BUILD=1
DO_INSTALL=1

usage() {
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
}

for arg in "$@"; do
    case "$arg" in
        --no-build) DO_BUILD=0; DO_INSTALL=0 ;;
        --no-install) DO_INSTALL=0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "setup: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

LOG=$(mktemp "${TMPDIR:-/tmp}/funtrace-setup.XXXXXX")
trap 'rm -f "$LOG"' EXIT

# step NAME CMD...: run CMD with its output in $LOG; one line of status.
step() {
    local name=$1
    shift
    printf 'setup: %s... ' "$name"
    if "$@" >"$LOG" 2>&1; then
        echo "ok${STEP_NOTE:+ ($STEP_NOTE)}"
        STEP_NOTE=
        return 0
    fi
    echo "FAILED"
    echo "----- output of step '$name' (last 60 lines) -----" >&2
    tail -n 60 "$LOG" >&2
    echo "-----" >&2
    echo "setup: FAILED at step '$name'" >&2
    exit 1
}
STEP_NOTE=

is_installed() {
    local status
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) || return 1
    [[ $status == ii* ]]
}

MISSING=()
check_packages() {
    if ! command -v dpkg-query >/dev/null; then
        echo "dpkg-query not found: setup.sh supports Debian/Ubuntu (apt) machines only;"
        echo "install the equivalents of: ${PACKAGES[*]}"
        return 1
    fi
    MISSING=()
    local p
    for p in "${PACKAGES[@]}"; do
        is_installed "$p" || MISSING+=("$p")
    done
    if ((${#MISSING[@]})); then
        STEP_NOTE="missing: ${MISSING[*]}"
    else
        STEP_NOTE="all ${#PACKAGES[@]} packages installed"
    fi
}

as_root() {
    if [[ $(id -u) == 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "not root and no sudo: cannot run '$*'"
        return 1
    fi
}

install_missing() {
    export DEBIAN_FRONTEND=noninteractive
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || return 1
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${MISSING[@]}" \
        </dev/null || return 1
    local p still=()
    for p in "${MISSING[@]}"; do
        is_installed "$p" || still+=("$p")
    done
    if ((${#still[@]})); then
        echo "apt-get finished but these are still not installed: ${still[*]}"
        return 1
    fi
}

# step() runs its command in the current shell, so MISSING survives.
step "checking packages" check_packages
if ((${#MISSING[@]})); then
    step "installing ${#MISSING[@]} missing package(s): ${MISSING[*]}" install_missing
fi

if ((DO_BUILD)); then
    STEP_NOTE="make -j$BUILD_JOBS"
    step "build" make -j"$BUILD_JOBS"
fi
if ((DO_INSTALL)); then
    STEP_NOTE="make install, PREFIX=/usr/local"
    step "install" as_root make install PREFIX=/usr/local
fi
