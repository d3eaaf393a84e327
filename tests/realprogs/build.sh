#!/bin/bash
# tests/realprogs/build.sh -- fetch a real third-party program's Debian source
# package and build it, unchanged, with the funtrace compiler wrappers (or
# without, for comparison); cached between runs.  Used by the real-programs
# test tier (tests/realprogs/) and by bench/realprogs.
#
#   tests/realprogs/build.sh PROGRAM VARIANT      prints the build directory
#
# PROGRAM: redis | unbound | memcached | lua | nginx | yaml-cpp (a C++ library:
#          its libyaml-cpp.a and tools, built by its CMake; tests link a driver with it)
#          | leveldb (C++, its CMake; its db_bench, whose worker threads are std::threads)
#          | pcl (the Portable Coroutine Library, autotools: coroutines on ucontext's
#          swapcontext; its test programs cobench and cothread, linked with libpcl.a)
#          | pth (GNU Pth, autotools, configured for its sjlj machine contexts: threads
#          switched by sigsetjmp/siglongjmp, their stacks entered with the
#          sigaltstack trick; its test program test_philo, linked with libpth.a)
# VARIANT: traced  CC=funtrace-gcc (FUNTRACE_INSTR=pg)
#          plain   CC=gcc (no funtrace at all)
#          count   the traced build relinked with -funtrace-count
#          excl    CC=funtrace-gcc with -funtrace-no-trace=$REALPROGS_EXCLUDE
#
# Cache: $FUNTRACE_REALPROGS_CACHE, else /var/cache/funtrace-realprogs (root),
# else ~/.cache/funtrace-realprogs:
#   apt/        a private deb-src list and apt lists (the machine's apt
#               configuration is never touched: -o Dir::Etc::SourceList=...)
#   src/PKG/    what `apt-get source PKG` unpacked (Debian patches applied)
#   build/PROGRAM-VARIANT-KEY/   a copy of the source, configured and built.
# KEY hashes RECIPE (below: bump it when the build commands change), the
# wrapper and the asm filter (whatever changes compiled code: a change
# rebuilds, and older builds of the same program and variant are removed); the runtime archive's hash is kept in the
# build directory and a different one only relinks (the executables are
# removed and make runs again).  $FUNTRACE_BUILD is funtrace's build tree
# (default: the repository's build/).  Output of the builds: build.log in the
# build directory; on failure its tail and one line naming the step.
set -euo pipefail
RECIPE=1
prog=${1:?usage: build.sh PROGRAM VARIANT}
variant=${2:?usage: build.sh PROGRAM VARIANT}
here=$(cd "$(dirname "$0")" && pwd)
ft=${FUNTRACE_BUILD:-$(cd "$here/../.." && pwd)/build}
jobs=${FUNTRACE_JOBS:-2}
if [ -n "${FUNTRACE_REALPROGS_CACHE:-}" ]; then
    cache=$FUNTRACE_REALPROGS_CACHE
elif [ "$(id -u)" = 0 ]; then
    cache=/var/cache/funtrace-realprogs
else
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/funtrace-realprogs
fi
mkdir -p "$cache/src" "$cache/build" "$cache/apt/lists/partial"

fail() { echo "realprogs: $prog ($variant): $*" >&2; exit 1; }

case "$prog" in
    redis) pkg=redis; exes=(src/redis-server src/redis-cli src/redis-benchmark) ;;
    unbound) pkg=unbound; exes=(unbound unbound-control perf) ;;
    memcached) pkg=memcached; exes=(memcached) ;;
    lua) pkg=lua5.4; exes=(src/lua) ;;
    nginx) pkg=nginx; exes=(objs/nginx) ;;
    yaml-cpp) pkg=yaml-cpp; exes=(b/util/parse) ;;
    leveldb) pkg=leveldb; exes=(b/db_bench) ;;
    pcl) pkg=libpcl1; exes=(test/cobench test/cothread) ;;
    pth) pkg=pth; exes=(test_philo) ;;
    *) fail "unknown program (redis, unbound, memcached, lua, nginx, yaml-cpp, leveldb, pcl, pth)" ;;
esac

# ---- the source package --------------------------------------------------
apt_opts=(-o "Dir::Etc::SourceList=$cache/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$cache/apt/lists" -o APT::Sandbox::User=root -q)
fetch() {
    # deb-src for the mirror(s) the machine's apt already uses (deb822 or one-line lists)
    local uris
    uris=$( (grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
                /etc/apt/sources.list.d/*.list 2>/dev/null || true) |
            sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*//' |
            grep -E '^https?://[^ ]*debian' | sort -u)
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    : > "$cache/apt/sources.list.tmp"
    local u
    for u in $uris; do
        case "$u" in
            *security*) echo "deb-src $u $codename-security main" ;;
            *) echo "deb-src $u $codename main"; echo "deb-src $u $codename-updates main" ;;
        esac >> "$cache/apt/sources.list.tmp"
    done
    [ -s "$cache/apt/sources.list.tmp" ] || fail "no Debian mirror found in /etc/apt/sources.list*"
    mv "$cache/apt/sources.list.tmp" "$cache/apt/sources.list"
    apt-get "${apt_opts[@]}" update > "$cache/apt/update.log" 2>&1 ||
        { tail -5 "$cache/apt/update.log" >&2; fail "apt-get update (private source list) failed"; }
    local t
    t=$(mktemp -d "$cache/src/.fetch.XXXXXX")
    # nginx: the release's own version (its newest, in the security pocket, may
    # list files the mirror does not carry)
    local spec=$pkg
    [ "$prog" = nginx ] && spec="$pkg/$codename"
    (cd "$t" && apt-get "${apt_opts[@]}" source "$spec") > "$t.log" 2>&1 ||
        { tail -5 "$t.log" >&2; rm -rf "$t" "$t.log"; fail "apt-get source $pkg failed"; }
    rm -f "$t.log"
    rm -rf "$cache/src/$pkg"
    mv "$t" "$cache/src/$pkg"
}
exec 9> "$cache/$prog.lock"
flock 9
srcdir=$(ls -d "$cache/src/$pkg"/"$pkg"-*/ 2>/dev/null | head -1 || true)
if [ -z "$srcdir" ]; then
    fetch
    srcdir=$(ls -d "$cache/src/$pkg"/"$pkg"-*/ 2>/dev/null | head -1 || true)
    [ -n "$srcdir" ] || fail "apt-get source $pkg unpacked nothing"
fi

# ---- the variant -----------------------------------------------------------
[ -x "$ft/bin/funtrace-gcc" ] || fail "$ft/bin/funtrace-gcc not built (run make)"
export FUNTRACE_INSTR=pg
flags=
base=$variant
case "$variant" in
    traced) cc="$ft/bin/funtrace-gcc"; cxx="$ft/bin/funtrace-g++" ;;
    plain) cc=gcc; cxx=g++ ;;
    count) cc="$ft/bin/funtrace-gcc"; cxx="$ft/bin/funtrace-g++"; base=traced ;;
    excl)
        cc="$ft/bin/funtrace-gcc"; cxx="$ft/bin/funtrace-g++"
        [ -r "${REALPROGS_EXCLUDE:-}" ] || fail "REALPROGS_EXCLUDE must name a readable exclusion file"
        flags="-funtrace-no-trace=$REALPROGS_EXCLUDE" ;;
    *) fail "unknown variant (traced, plain, count, excl)" ;;
esac
h() { sha256sum "$@" 2>/dev/null | cut -c1-16; }
keysrc="$RECIPE $prog $base $(basename "$srcdir")"
if [ "$cc" != gcc ]; then
    keysrc+=" $(h "$ft/bin/funtrace-gcc") $(h "$ft/bin/funtrace-asmfilter")"
    [ $variant = excl ] && keysrc+=" $(h "$REALPROGS_EXCLUDE")"
    case "$prog" in yaml-cpp|leveldb) keysrc+=" $(h "$ft/bin/funtrace-g++")" ;; esac
fi
key=$(echo "$keysrc" | sha256sum | cut -c1-12)
dir="$cache/build/$prog-$base-$key"
[ $variant = excl ] && dir="$cache/build/$prog-excl-$key"

# the runtime the executables were linked with (a change only relinks)
rtlib="$ft/lib/libfuntrace.a"
[ $variant = count ] && rtlib="$ft/lib/libfuntrace_count.a"
rtkey=none
[ "$cc" != gcc ] && rtkey=$(h "$rtlib" "$ft/lib/libfuntrace_cxx.a" "$ft/lib/libfuntrace_cxxwrap.a" "$ft/bin/funtrace-instrcheck" | tr -d '\n')

log() { echo "== $*" >> "$dir/build.log"; }
run_make() {
    local what=$1
    shift
    case "$prog" in
        # MALLOC=libc: the Debian patch 0004 (USE_SYSTEM_JEMALLOC) breaks the
        # bundled jemalloc ("#if USE_SYSTEM_JEMALLOC == yes" holds when it is
        # undefined: undefined je_mallctl...); Debian itself links the system one
        redis) make -j"$jobs" CC="$cc" MALLOC=libc "$@" ;;
        unbound) make -j"$jobs" "$@" all perf ;;
        memcached) make -j"$jobs" "$@" memcached ;;
        # as debian/rules builds it (linux-readline there: readline left out),
        # with the system's libtool for Debian's libtoolized one
        # (its two libraries are one rule with two targets: under -j make runs
        # it twice at once, and the two links race -- "ar: unable to copy
        # file '.libs/liblua.a'"; so the objects in parallel, the links not)
        lua) make -C src -j"$jobs" o CC="$cc -std=gnu99" LIBTOOL="libtool --quiet" SYSCFLAGS="-DLUA_USE_LINUX" "$@" &&
             make -C src -j1 linux CC="$cc -std=gnu99" LIBTOOL="libtool --quiet" "$@" ;;
        nginx) make -j"$jobs" "$@" ;;
        yaml-cpp) make -C b -j"$jobs" "$@" ;;
        leveldb) make -C b -j"$jobs" "$@" db_bench ;;
        # the library, then its two test programs (check_PROGRAMS: made by name)
        pcl) make -j"$jobs" "$@" && make -C test -j"$jobs" "$@" cobench cothread ;;
        pth) make -j"$jobs" "$@" && make -j"$jobs" "$@" test_philo ;;
    esac >> "$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; fail "$what failed (log: $dir/build.log)"; }
}
build_from_scratch() {
    rm -rf "$cache/build/$prog-$variant-"*
    [ $variant = traced ] && rm -rf "$cache/build/$prog-count-"*
    cp -a "$srcdir" "$dir.tmp"
    mv "$dir.tmp" "$dir"
    : > "$dir/build.log"
    cd "$dir"
    case "$prog" in
        unbound|memcached|pcl)
            log "configure CC=$cc"
            FUNTRACE_FLAGS="$flags" ./configure CC="$cc" >> "$dir/build.log" 2>&1 ||
                { tail -30 "$dir/build.log" >&2; fail "configure failed (log: $dir/build.log)"; } ;;
        pth) # its configure's machine-context options: setjmp/longjmp switching (sjlj), with
             # the signal mask (ssjlj: sigsetjmp/siglongjmp), stacks set up on a sigaltstack
             # (sas); linked statically (libtool's wrapper scripts are not the programs)
            log "configure CC=$cc --with-mctx-mth=sjlj --with-mctx-dsp=ssjlj --with-mctx-stk=sas"
            FUNTRACE_FLAGS="$flags" ./configure CC="$cc" --with-mctx-mth=sjlj --with-mctx-dsp=ssjlj \
                --with-mctx-stk=sas --disable-shared >> "$dir/build.log" 2>&1 ||
                { tail -30 "$dir/build.log" >&2; fail "configure failed (log: $dir/build.log)"; } ;;
        nginx) # its own configure; the modules needing PCRE and zlib left out (not installed)
            log "configure --with-cc=$cc"
            FUNTRACE_FLAGS="$flags" ./configure --with-cc="$cc" --with-cc-opt="-O2 -g" \
                --without-http_rewrite_module --without-http_gzip_module >> "$dir/build.log" 2>&1 ||
                { tail -30 "$dir/build.log" >&2; fail "configure failed (log: $dir/build.log)"; } ;;
        yaml-cpp)
            log "cmake CXX=$cxx"
            FUNTRACE_FLAGS="$flags" cmake -S . -B b -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
                -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYAML_CPP_BUILD_TESTS=OFF -DYAML_CPP_BUILD_TOOLS=ON \
                >> "$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; fail "cmake failed (log: $dir/build.log)"; } ;;
        leveldb) # db_bench only (its unit tests are not needed); it links gtest/gmock (testutil.h)
            log "cmake CXX=$cxx"
            FUNTRACE_FLAGS="$flags" cmake -S . -B b -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
                -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=ON \
                >> "$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; fail "cmake failed (log: $dir/build.log)"; } ;;
        lua) # the header debian/rules writes before building
            printf '#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n#define DEB_HOST_MULTIARCH "%s"\n#endif\n' \
                "$(dpkg-architecture -qDEB_HOST_MULTIARCH)" > src/lua5.4-deb-multiarch.h ;;
    esac
    log "make"
    FUNTRACE_FLAGS="$flags" run_make make
    echo "$rtkey" > "$dir/.funtrace-runtime"
    touch "$dir/.funtrace-built"
}

if [ ! -f "$dir/.funtrace-built" ]; then
    build_from_scratch
fi
cd "$dir"
if [ $variant = count ]; then
    # the same objects, relinked with the counting runtime
    cdir="$cache/build/$prog-count-$key"
    if [ ! -f "$cdir/.funtrace-built" ] || [ "$(cat "$cdir/.funtrace-runtime")" != "$rtkey" ]; then
        rm -rf "$cdir" "$cdir.tmp"
        cp -a "$dir" "$cdir.tmp"
        mv "$cdir.tmp" "$cdir"
        dir=$cdir
        cd "$dir"
        rm -f "$dir/.funtrace-built" "${exes[@]}"
        log "relink with -funtrace-count"
        FUNTRACE_FLAGS="-funtrace-count" run_make relink
        echo "$rtkey" > "$dir/.funtrace-runtime"
        touch "$dir/.funtrace-built"
    fi
    dir=$cdir
elif [ "$(cat "$dir/.funtrace-runtime")" != "$rtkey" ]; then
    log "relink: the runtime changed"
    rm -f "${exes[@]}"
    FUNTRACE_FLAGS="$flags" run_make relink
    echo "$rtkey" > "$dir/.funtrace-runtime"
fi
for e in "${exes[@]}"; do
    [ -x "$dir/$e" ] || fail "the build made no $e (log: $dir/build.log)"
done
echo "$dir"
