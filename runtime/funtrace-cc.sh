#!/bin/bash
# funtrace compiler wrapper: installed as funtrace-gcc, funtrace-g++,
# funtrace-clang and funtrace-clang++ (the name selects the compiler).
#
#   CC=funtrace-gcc CXX=funtrace-g++ make
#   cmake -DCMAKE_C_COMPILER=funtrace-gcc -DCMAKE_CXX_COMPILER=funtrace-g++ ...
#
# Compiling (any C/C++/asm source among the inputs, or -c/-S/-E): adds the
# instrumentation flags and -I<prefix>/include (for funtrace.h):
#   gcc/g++:     -pg -mfentry -minstrument-return=call     (FUNTRACE_INSTR=pg, default)
#                -finstrument-functions                    (FUNTRACE_INSTR=finstr)
#                  + -finstrument-functions-exclude-file-list=.h,.hpp,/usr/include
#                    (as the original funtrace; -funtrace-trace-headers keeps them)
#   clang/++:    -finstrument-functions-after-inlining
#                -fxray-instrument                         (FUNTRACE_INSTR=xray; the
#                  runtime patches the sleds: -fnoxray-link-deps at link time;
#                  the -funtrace-* filter flags become clang's XRay options)
#   any:         nothing                                   (FUNTRACE_INSTR=none)
# The build's own -pg, -finstrument-functions[-after-inlining] or
# -fxray-instrument choose the mode when FUNTRACE_INSTR does not, and are left
# out (one warning line) when it chooses another: one instrumentation, never
# two.  A last -fno-instrument-functions / -fno-xray-instrument: none.
# Linking (no -c/-S/-E/-M/-MM): the instrumentation flags again, so that the
# code generated at link time (-flto) is instrumented too.  Linking an
# executable (no -shared/-r, some input) also adds <prefix>/lib/libfuntrace.a
# (whole archive; libfuntrace_count.a with -funtrace-count; with -static or
# -static-pie libfuntrace_static.a and ld --wrap for its libc interposers) and
# libfuntrace_cxx.a (the C++ runtime's interposers: C++ exception events;
# with -static, -static-pie or -static-libstdc++, a C++ link -- funtrace-g++,
# funtrace-clang++, -lstdc++ or -lc++ -- gets them as libfuntrace_cxxwrap.a
# and ld --wrap for each, a C link none), -ldl -pthread,
# exports the runtime's hooks and root into the executable's .dynsym (so that
# dlopen'ed instrumented libraries and the readers find them), and then checks
# the executable: one warning line if no function (or under 5%) calls the hooks
# (not counting the runtime's, nor a static link's system libraries').
# Shared libraries are instrumented but never get the runtime: their hooks
# resolve to the executable's.
# Flags of the original funtrace (removed before the compiler sees them):
#   -funtrace-instr-thresh=N   leave out functions of < N instructions without loops
#   -funtrace-ignore-loops     ... even those with loops
#   -funtrace-no-trace=FILE    leave out the (mangled) functions listed in FILE
#   -funtrace-do-trace=FILE    never leave out the functions listed in FILE
#   -funtrace-verbose          say which functions were left out and why
# applied by editing the generated assembly (funtrace-asmfilter); and ours:
#   -funtrace-exclude-list=FILE  leave out the functions in FILE with the
#                              compiler's own option where it has one (gcc
#                              -finstrument-functions-exclude-function-list,
#                              FUNTRACE_INSTR=finstr), else as -funtrace-no-trace
#   -funtrace-count            link the call-counting runtime (funtrace-count)
#   -funtrace-trace-headers    finstr mode: do not exclude headers
# The real compiler: $FUNTRACE_CC / $FUNTRACE_CXX / $FUNTRACE_CLANG /
# $FUNTRACE_CLANGXX, else gcc / g++ / clang / clang++ from PATH.
# FUNTRACE_FLAGS: more of these -funtrace-* flags (words), for build systems
# whose compiler flags are hard to reach.
# FUNTRACE_CHECK=0 skips the check of linked executables.
set -u
if [ -n "${FUNTRACE_FLAGS:-}" ]; then
    # shellcheck disable=SC2086
    set -- $FUNTRACE_FLAGS "$@"
fi
self=$(readlink -f -- "$0")
prefix=$(dirname -- "$(dirname -- "$self")")
lib="$prefix/lib"
inc="$prefix/include"
bin="$prefix/bin"
me=$(basename -- "$0")

case "$me" in
    *clang++*) cc=${FUNTRACE_CLANGXX:-clang++}; kind=clang ;;
    *clang*)   cc=${FUNTRACE_CLANG:-clang}; kind=clang ;;
    *g++*)     cc=${FUNTRACE_CXX:-g++}; kind=gcc ;;
    *)         cc=${FUNTRACE_CC:-gcc}; kind=gcc ;;
esac

# --version: the compiler's own text (build systems parse it), then funtrace's
# line; --funtrace-version: only funtrace's line
ftver="$(basename -- "$0") (funtrace) @FT_VERSION@; FORMAT: ABI @FT_ABI@, raw @FT_RAW@"
if [ $# = 1 ] && [ "$1" = --funtrace-version ]; then
    echo "$ftver"
    exit 0
fi
if [ $# = 1 ] && [ "$1" = --funtrace-help ]; then
    n=$(basename -- "$0")
    cat <<EOF
Usage: $n [COMPILER ARGUMENTS]...

Compiles and links C/C++ with funtrace's function tracing: runs the real
compiler with the instrumentation flags and -I for funtrace.h, and links
executables with the funtrace runtime (libfuntrace.a, or with -static
libfuntrace_static.a and ld --wrap; and for C++ exception events
libfuntrace_cxx.a, or with a static C++ runtime -- -static,
-static-libstdc++ -- libfuntrace_cxxwrap.a and ld --wrap) and the exports
its readers need.  Shared
libraries are instrumented but get no runtime.  Use it
as CC/CXX (CC=funtrace-gcc CXX=funtrace-g++ make, cmake
-DCMAKE_C_COMPILER=funtrace-gcc ...).

Options of its own (everything else goes to the compiler):
  --version              the compiler's --version, then funtrace's line
  --funtrace-version     only funtrace's version line
  --funtrace-help        this text

Environment:
  FUNTRACE_INSTR         pg (gcc default: -pg -mfentry -minstrument-return=call),
                         finstr (-finstrument-functions; clang's default:
                         -finstrument-functions-after-inlining), xray (clang:
                         -fxray-instrument, sleds patched by the runtime; add
                         -fxray-instruction-threshold=1 to trace every
                         function) or none.  Unset: the build's own -pg,
                         -finstrument-functions[-after-inlining] or
                         -fxray-instrument chooses (two of them: refused);
                         set: the build's flags of another mode are left out
                         (a warning).  A last -fno-instrument-functions or
                         -fno-xray-instrument: that command gets none
  FUNTRACE_CC, FUNTRACE_CXX, FUNTRACE_CLANG, FUNTRACE_CLANGXX
                         the real compilers (default gcc, g++, clang, clang++)

The runtime's settings (FUNTRACE_BUF, FUNTRACE_ON_CRASH, ...) are read by the
traced program at start-up: see the README.
EOF
    exit 0
fi
if [ $# = 1 ] && [ "$1" = --version ]; then
    "$cc" --version || exit
    echo "$ftver"
    exit 0
fi

# The build's own instrumentation flags (a build made for gprof, or for the
# original funtrace): one instrumentation only, since two would log every call
# twice.  Without FUNTRACE_INSTR they choose the mode; with it they give way
# (left out, one warning line); FUNTRACE_INSTR=none passes them through.  A
# last -fno-instrument-functions or -fno-xray-instrument: this command gets no
# instrumentation at all (a file the build wants untraced).
own_modes=     # the modes the build's flags ask for
own_flags=     # those flags
own_finstr=    # the build's finstr flag (clang: either flavour is kept as given)
own_off=0
for a in "$@"; do
    case "$a" in
        -pg) m=pg ;;
        -finstrument-functions|-finstrument-functions-after-inlining) m=finstr; own_finstr=$a ;;
        -fxray-instrument) m=xray ;;
        -fno-instrument-functions|-fno-xray-instrument) own_off=1; continue ;;
        *) continue ;;
    esac
    own_off=0
    case " $own_flags " in *" $a "*) ;; *) own_flags+="${own_flags:+ }$a" ;; esac
    case " $own_modes " in *" $m "*) ;; *) own_modes+="${own_modes:+ }$m" ;; esac
done
instr=${FUNTRACE_INSTR:-}
src_of_mode="FUNTRACE_INSTR=$instr"
if [ -z "$instr" ] && [ -n "$own_modes" ]; then
    if [ "$own_modes" != "${own_modes%% *}" ]; then
        echo "$me: $own_flags: two instrumentations would log every call twice; keep one, or choose with" \
             "FUNTRACE_INSTR=pg|finstr|xray" >&2
        exit 2
    fi
    instr=$own_modes
    src_of_mode="the build's ${own_flags} (left out)"
fi
if [ -z "$instr" ]; then
    if [ $kind = gcc ]; then instr=pg; else instr=finstr; fi
fi
warned=0
case "$instr" in
    pg)
        if [ $kind = clang ]; then
            echo "$me: $src_of_mode needs gcc; clang uses -finstrument-functions-after-inlining" >&2
            instr=finstr; warned=1
        fi ;;
    xray)
        # gcc has no XRay; its -pg code calls the same hooks, so both mix
        if [ $kind = gcc ]; then
            echo "$me: $src_of_mode needs clang; gcc uses -pg -mfentry -minstrument-return=call" >&2
            instr=pg; warned=1
        fi ;;
    finstr|none) ;;
    *) echo "$me: FUNTRACE_INSTR must be pg, finstr, xray or none (got '$instr')" >&2; exit 2 ;;
esac
# the build's flags of another mode give way (FUNTRACE_INSTR, or a mode the
# compiler does not have)
if [ $instr != none ] && [ -n "$own_modes" ] && [ "$own_modes" != $instr ] && [ $warned = 0 ]; then
    echo "$me: leaving out the build's $own_flags: funtrace's $instr mode instruments this" \
         "(a second instrumentation would log every call twice)" >&2
fi

link=1
shared=0
static_cxx=0   # -static, -static-pie, -static-libstdc++: the program links its C++ runtime
static_all=0   # -static, -static-pie: ... and its C library
cxx_link=0     # the C++ runtime is on the link line (a C++ driver, -lstdc++, -lc++)
case "$me" in *++*) cxx_link=1 ;; esac
have_src=0
have_input=0
have_x=0
asm_only=0
lto=0
out=
args=()
srcs=()        # C/C++ sources (candidates for the assembly filter)
expect_value=0
prev=
# the original funtrace's filter flags, and ours
filter=()      # arguments of funtrace-asmfilter
count=0
headers=0
exclude_list=
for a in "$@"; do
    if [ $expect_value = 1 ]; then
        expect_value=0
        [ "$prev" = -o ] && out=$a
        args+=("$a")
        continue
    fi
    case "$a" in
        -funtrace-instr-thresh=*)
            n=${a#*=}
            if ! [[ $n =~ ^[0-9]+$ ]]; then
                echo "$me: $a: the threshold must be a number of instructions" >&2; exit 2
            fi
            filter+=(--thresh "$n"); continue ;;
        -funtrace-ignore-loops) filter+=(--ignore-loops); continue ;;
        -funtrace-no-trace=*|-funtrace-do-trace=*|-funtrace-exclude-list=*)
            f=${a#*=}
            if [ ! -r "$f" ]; then
                echo "$me: $a: cannot read $f" >&2; exit 2
            fi
            case "$a" in
                -funtrace-no-trace=*) filter+=(--no-trace "$f") ;;
                -funtrace-do-trace=*) filter+=(--do-trace "$f") ;;
                *) exclude_list=$f ;;
            esac
            continue ;;
        -funtrace-verbose) filter+=(-v); continue ;;
        -funtrace-count) count=1; continue ;;
        -funtrace-trace-headers) headers=1; continue ;;
        -funtrace-*)
            echo "$me: unknown flag $a (funtrace flags: -funtrace-instr-thresh=N -funtrace-ignore-loops" \
                 "-funtrace-no-trace=FILE -funtrace-do-trace=FILE -funtrace-exclude-list=FILE" \
                 "-funtrace-verbose -funtrace-count -funtrace-trace-headers)" >&2
            exit 2 ;;
        -c|-E|-M|-MM) link=0 ;;
        -S) link=0; asm_only=1 ;;
        -shared|-r|-Wl,-r|-Wl,-shared|-Wl,--relocatable) shared=1 ;;
        -static|-static-pie) static_cxx=1; static_all=1 ;;
        -static-libstdc++) static_cxx=1 ;;
        -lstdc++|-lc++) cxx_link=1 ;;
        -flto|-flto=*) lto=1 ;;
        -fno-lto) lto=0 ;;
        -fomit-frame-pointer)
            # gcc refuses -pg with -fomit-frame-pointer
            [ $instr = pg ] && [ $own_off = 0 ] && continue ;;
        -pg|-finstrument-functions|-finstrument-functions-after-inlining|-fxray-instrument)
            # the build's instrumentation: the mode's flags below stand for it
            [ $instr != none ] && continue ;;
        -o|-I|-L|-D|-U|-x|-MF|-MT|-MQ|-include|-imacros|-isystem|-iquote|-idirafter|-iprefix|\
        -iwithprefix|-iwithprefixbefore|-isysroot|-Xlinker|-Xassembler|-Xpreprocessor|-Xclang|\
        -u|-T|-z|-aux-info|--param|-l|-arch|-target|--target|-MJ|-dumpdir|-dumpbase|-dumpbase-ext)
            [ "$a" = -x ] && { have_src=1; have_x=1; }
            prev=$a
            expect_value=1 ;;
        -o*) out=${a#-o} ;;
        -x*) have_src=1; have_x=1 ;;
        -) have_input=1; have_src=1 ;;
        -*) ;;
        *)
            have_input=1
            case "$a" in
                *.c|*.cc|*.cp|*.cxx|*.cpp|*.CPP|*.c++|*.C|*.i|*.ii) have_src=1; srcs+=("$a") ;;
                *.s|*.S|*.sx|*.m|*.mm|*.M) have_src=1 ;;
            esac ;;
    esac
    args+=("$a")
done

if [ $own_off = 1 ] && [ $instr != none ]; then
    cflags=()
    instr=none
elif [ $instr = pg ]; then
    cflags=(-pg -mfentry -minstrument-return=call)
elif [ $instr = finstr ] && [ $kind = gcc ]; then
    cflags=(-finstrument-functions)
    [ $headers = 0 ] && cflags+=(-finstrument-functions-exclude-file-list=.h,.hpp,/usr/include)
elif [ $instr = finstr ]; then
    # (the build's -finstrument-functions, before inlining, is kept as it is)
    cflags=("${own_finstr:--finstrument-functions-after-inlining}")
elif [ $instr = xray ]; then
    # clang's sleds; the runtime patches them (runtime/xray.c), so no
    # compiler-rt XRay runtime at link time.  clang's threshold applies
    # (-fxray-instruction-threshold=N, default 200 instructions).
    cflags=(-fxray-instrument)
else
    cflags=()
fi
# -funtrace-exclude-list: the compiler's own option where there is one
if [ -n "$exclude_list" ]; then
    if [ $instr = finstr ] && [ $kind = gcc ]; then
        names=$(grep -v '^[[:space:]]*#' -- "$exclude_list" | tr -s ' \t\r\n' ',' | sed 's/^,//; s/,$//')
        [ -n "$names" ] && cflags+=("-finstrument-functions-exclude-function-list=$names")
    else
        filter+=(--no-trace "$exclude_list")
    fi
fi
[ $instr = none ] && filter=()
# XRay: the filter flags are clang's own options (the sleds are not in the
# assembly's hook calls): -fxray-instruction-threshold, -fxray-ignore-loops,
# and an attribute list ([always]/[never] fun:NAME) for the name lists
tmp=
if [ $instr = xray ] && [ ${#filter[@]} != 0 ]; then
    never=()
    always=()
    i=0
    while [ $i -lt ${#filter[@]} ]; do
        v=${filter[$((i + 1))]:-}
        case "${filter[$i]}" in
            --thresh) cflags+=("-fxray-instruction-threshold=$v"); i=$((i + 1)) ;;
            --ignore-loops) cflags+=(-fxray-ignore-loops) ;;
            --no-trace) never+=("$v"); i=$((i + 1)) ;;
            --do-trace) always+=("$v"); i=$((i + 1)) ;;
        esac
        i=$((i + 1))
    done
    filter=()
    if [ ${#never[@]} != 0 ] || [ ${#always[@]} != 0 ]; then
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/funtrace-cc.XXXXXX") || exit 2
        trap 'rm -rf "$tmp"' EXIT
        names_of() { grep -hv '^[[:space:]]*#' -- "$@" | tr -s ' \t\r' '\n' | sed '/^$/d; s/^/fun:/'; }
        {
            [ ${#always[@]} != 0 ] && { echo "[always]"; names_of "${always[@]}"; }
            [ ${#never[@]} != 0 ] && { echo "[never]"; names_of "${never[@]}"; }
        } > "$tmp/xray-attr-list.txt"
        cflags+=("-fxray-attr-list=$tmp/xray-attr-list.txt")
    fi
fi

extra=()
if [ $link = 0 ] || [ $have_src = 1 ]; then
    extra+=("${cflags[@]}" "-I$inc")
elif [ $link = 1 ]; then
    # a link: code generated here (LTO) must be instrumented as well
    extra+=("${cflags[@]}")
fi
[ $link = 1 ] && [ $instr = xray ] && extra+=(-fnoxray-link-deps)
rtlib="$lib/libfuntrace.a"
# -static: the runtime whose libc interposers are ld --wrap's (their weak
# definitions would keep libc.a's out, and there is no dlsym to find them:
# runtime/ft_interposing.h)
[ $static_all = 1 ] && rtlib="$lib/libfuntrace_static.a"
[ $count = 1 ] && rtlib="$lib/libfuntrace_count.a"
# the C++ runtime's interposers (exception events, runtime/exc_events.c), but
# not into a program linked with its own C++ runtime: they would keep the
# real functions out of it.  A C++ program linked so gets them under ld
# --wrap's names (the real ones are __real_NAME: a C link, with no C++
# runtime to define them, gets none)
cxx_interposers=0
cxx_wrap=0
[ $count = 0 ] && [ $static_cxx = 0 ] && cxx_interposers=1
[ $count = 0 ] && [ $static_cxx = 1 ] && [ $cxx_link = 1 ] && cxx_wrap=1
rtlibs=("$rtlib")
[ $cxx_interposers = 1 ] && rtlibs+=("$lib/libfuntrace_cxx.a")
[ $cxx_wrap = 1 ] && rtlibs+=("$lib/libfuntrace_cxxwrap.a")
exe=0
if [ $link = 1 ] && [ $shared = 0 ] && [ $have_input = 1 ]; then
    exe=1
    for l in "${rtlibs[@]}"; do
        if [ ! -f "$l" ]; then
            echo "$me: $l not found" >&2
            exit 2
        fi
    done
    # -x none: a "-x c++" (or any -x) in the arguments must not apply to the archive
    extra+=(-x none -Wl,--whole-archive "${rtlibs[@]}" -Wl,--no-whole-archive -ldl -pthread
            -Wl,--export-dynamic-symbol=funtrace_root
            -Wl,--export-dynamic-symbol=__fentry__
            -Wl,--export-dynamic-symbol=__return__
            -Wl,--export-dynamic-symbol=__cyg_profile_func_enter
            -Wl,--export-dynamic-symbol=__cyg_profile_func_exit)
    [ $cxx_interposers = 1 ] && extra+=(
            -Wl,--export-dynamic-symbol=__cxa_begin_catch
            -Wl,--export-dynamic-symbol=__cxa_end_catch
            -Wl,--export-dynamic-symbol=__cxa_throw
            -Wl,--export-dynamic-symbol=__cxa_rethrow
            -Wl,--export-dynamic-symbol=__gxx_personality_v0
            -Wl,--export-dynamic-symbol=__gcc_personality_v0)
    # (the lists: RT_WRAP_CXX, RT_WRAP_LIBC in runtime/build.mk)
    [ $cxx_wrap = 1 ] && extra+=('@FT_WRAP_CXX@')
    [ $static_all = 1 ] && [ $count = 0 ] && extra+=('@FT_WRAP_LIBC@')
    extra+=(-Wl,--export-dynamic-symbol=dlopen
            -Wl,--export-dynamic-symbol=dlclose
            -Wl,--export-dynamic-symbol=pthread_setname_np
            -Wl,--export-dynamic-symbol=sigaction -Wl,--export-dynamic-symbol=signal
            -Wl,--export-dynamic-symbol=bsd_signal -Wl,--export-dynamic-symbol=sysv_signal
            -Wl,--export-dynamic-symbol=__sysv_signal -Wl,--export-dynamic-symbol=longjmp
            -Wl,--export-dynamic-symbol=_longjmp -Wl,--export-dynamic-symbol=siglongjmp
            -Wl,--export-dynamic-symbol=__longjmp_chk -Wl,--export-dynamic-symbol=_setjmp
            -Wl,--export-dynamic-symbol=setjmp -Wl,--export-dynamic-symbol=__sigsetjmp
            '-Wl,--export-dynamic-symbol=funtrace_*')
fi

# after linking an executable: does anything call the hooks?
check_exe() {
    [ $exe = 1 ] && [ $instr != none ] && [ "${FUNTRACE_CHECK:-1}" != 0 ] || return 0
    local x=${out:-a.out}
    [ -x "$bin/funtrace-instrcheck" ] && [ -f "$x" ] || return 0
    local xr=()
    [ $instr = xray ] && xr=(--xray)
    local rt=() l p sys=()
    for l in "${rtlibs[@]}"; do rt+=(--runtime "$l"); done
    # the functions of the static system libraries linked in are not the
    # program's (uninstrumented, and in a small program most of its functions)
    [ $static_cxx = 1 ] && [ $cxx_link = 1 ] && sys+=(libstdc++.a libc++.a libc++abi.a)
    [ $static_all = 1 ] && sys+=(libc.a libm.a libgcc.a libgcc_eh.a)
    for l in "${sys[@]}"; do
        p=$("$cc" -print-file-name="$l" 2>/dev/null)
        # (an archive: Debian's libm.a is a linker script)
        [[ $p == /* && -f $p && $(head -c 7 "$p" 2>/dev/null) == '!<arch>' ]] && rt+=(--runtime "$p")
    done
    "$bin/funtrace-instrcheck" --quiet "${xr[@]}" --name "$me" "${rt[@]}" "$x" 2>&1 >/dev/null | head -1 >&2
    return 0
}

# no assembly filtering needed (or possible): one compiler run
use_filter=1
if [ ${#filter[@]} = 0 ] || [ ${#srcs[@]} = 0 ]; then
    use_filter=0
elif [ $lto = 1 ] || [ $have_x = 1 ]; then
    why="-flto (the code is generated at link time)"
    [ $have_x = 1 ] && why="-x LANG"
    echo "$me: warning: -funtrace-instr-thresh/-no-trace/-do-trace are not applied with $why" >&2
    use_filter=0
else
    for a in "$@"; do
        case "$a" in -E|-M|-MM) use_filter=0 ;; esac
    done
fi
if [ $use_filter = 0 ]; then
    if [ $exe = 0 ] && [ -z "$tmp" ]; then
        exec "$cc" "${args[@]}" "${extra[@]}"
    fi
    "$cc" "${args[@]}" "${extra[@]}"
    rc=$?
    [ $rc = 0 ] && check_exe
    exit $rc
fi

# With the filter: every C/C++ source is compiled to assembly (-S), filtered,
# then assembled; a link step then links the objects instead of the sources.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/funtrace-cc.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
is_src() {
    local s
    for s in "${srcs[@]}"; do [ "$s" = "$1" ] && return 0; done
    return 1
}
# the arguments without the sources, -o X, -c/-S; the dependency flags apart
common=()
deps=()
has_mt=0
has_mf=0
skip=0
for a in "${args[@]}"; do
    if [ $skip = 1 ]; then skip=0; [ "$prev" = -o ] || { [ "$prev" = dep ] && deps+=("$a") || common+=("$a"); }; continue; fi
    case "$a" in
        -o) prev=-o; skip=1 ;;
        -o*|-c|-S) ;;
        -MF|-MT|-MQ) [ $a = -MF ] && has_mf=1 || has_mt=1; deps+=("$a"); prev=dep; skip=1 ;;
        -MD|-MMD|-MP|-MG) deps+=("$a") ;;
        -MF*) has_mf=1; deps+=("$a") ;;
        -MT*|-MQ*) has_mt=1; deps+=("$a") ;;
        -o|-I|-L|-D|-U|-include|-imacros|-isystem|-iquote|-idirafter|-iprefix|-iwithprefix|\
        -iwithprefixbefore|-isysroot|-Xlinker|-Xassembler|-Xpreprocessor|-Xclang|-u|-T|-z|-aux-info|\
        --param|-l|-arch|-target|--target|-MJ|-dumpdir|-dumpbase|-dumpbase-ext)
            common+=("$a"); prev=$a; skip=1 ;;
        *) is_src "$a" || common+=("$a") ;;
    esac
done
# the assembler step: no preprocessing or debug-info flags (the .s has them)
asflags=()
for a in "${common[@]}"; do
    case "$a" in
        -g*|-M*) ;;
        *) asflags+=("$a") ;;
    esac
done
objs=()
i=0
for s in "${srcs[@]}"; do
    i=$((i + 1))
    base=$(basename -- "${s%.*}")
    if [ $link = 1 ]; then
        obj="$tmp/$i-$base.o"
    elif [ -n "$out" ]; then
        obj=$out
    elif [ $asm_only = 1 ]; then
        obj="$base.s"
    else
        obj="$base.o"
    fi
    asm="$tmp/$i-$base.s"
    d=("${deps[@]}")
    if [ ${#deps[@]} != 0 ] && [ $link = 0 ]; then
        [ $has_mt = 0 ] && d+=(-MT "$obj")
        [ $has_mf = 0 ] && d+=(-MF "${obj%.*}.d")
    fi
    "$cc" "${common[@]}" "${d[@]}" "${cflags[@]}" "-I$inc" -S "$s" -o "$asm" || exit $?
    "$bin/funtrace-asmfilter" --name "$me" "${filter[@]}" "$asm" || exit $?
    if [ $asm_only = 1 ]; then
        cp -- "$asm" "$obj" || exit $?
        continue
    fi
    "$cc" "${asflags[@]}" -c "$asm" -o "$obj" || exit $?
    objs+=("$obj")
done
[ $link = 0 ] && exit 0
# link: the objects in place of the sources, in order
largs=()
skip=0
for a in "${args[@]}"; do
    if [ $skip = 1 ]; then skip=0; largs+=("$a"); continue; fi
    case "$a" in
        -o|-L|-Xlinker|-u|-T|-z|-l) largs+=("$a"); skip=1 ;;
        *)
            if is_src "$a"; then
                largs+=("${objs[0]}")
                objs=("${objs[@]:1}")
            else
                largs+=("$a")
            fi ;;
    esac
done
"$cc" "${largs[@]}" "${extra[@]}"
rc=$?
[ $rc = 0 ] && check_exe
exit $rc
