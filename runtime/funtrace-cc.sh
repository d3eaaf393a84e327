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
#   clang/++:    -finstrument-functions-after-inlining
#   any:         nothing                                   (FUNTRACE_INSTR=none)
# Linking an executable (no -c/-S/-E/-M/-MM, no -shared/-r, some input):
#   adds <prefix>/lib/libfuntrace.a (whole archive), -ldl -pthread and
#   exports the runtime's hooks and root into the executable's .dynsym, so
#   that dlopen'ed instrumented libraries and the readers find them.
# Shared libraries are instrumented but never get the runtime: their hooks
# resolve to the executable's.
# The real compiler: $FUNTRACE_CC / $FUNTRACE_CXX / $FUNTRACE_CLANG /
# $FUNTRACE_CLANGXX, else gcc / g++ / clang / clang++ from PATH.
set -u
self=$(readlink -f -- "$0")
prefix=$(dirname -- "$(dirname -- "$self")")
lib="$prefix/lib"
inc="$prefix/include"

case "$(basename -- "$0")" in
    *clang++*) cc=${FUNTRACE_CLANGXX:-clang++}; kind=clang ;;
    *clang*)   cc=${FUNTRACE_CLANG:-clang}; kind=clang ;;
    *g++*)     cc=${FUNTRACE_CXX:-g++}; kind=gcc ;;
    *)         cc=${FUNTRACE_CC:-gcc}; kind=gcc ;;
esac

instr=${FUNTRACE_INSTR:-}
if [ -z "$instr" ]; then
    if [ $kind = gcc ]; then instr=pg; else instr=finstr; fi
fi
case "$instr" in
    pg)
        if [ $kind = clang ]; then
            echo "funtrace-$kind: FUNTRACE_INSTR=pg needs gcc; clang uses -finstrument-functions-after-inlining" >&2
            instr=finstr
        fi ;;
    finstr|none) ;;
    *) echo "funtrace wrapper: FUNTRACE_INSTR must be pg, finstr or none (got '$instr')" >&2; exit 2 ;;
esac

if [ $instr = pg ]; then
    cflags=(-pg -mfentry -minstrument-return=call)
elif [ $instr = finstr ] && [ $kind = gcc ]; then
    cflags=(-finstrument-functions)
elif [ $instr = finstr ]; then
    cflags=(-finstrument-functions-after-inlining)
else
    cflags=()
fi

link=1
shared=0
have_src=0
have_input=0
args=()
expect_value=0
for a in "$@"; do
    if [ $expect_value = 1 ]; then
        expect_value=0
        args+=("$a")
        continue
    fi
    case "$a" in
        -c|-S|-E|-M|-MM) link=0 ;;
        -shared|-r|-Wl,-r|-Wl,-shared|-Wl,--relocatable) shared=1 ;;
        -fomit-frame-pointer)
            # gcc refuses -pg with -fomit-frame-pointer
            [ $instr = pg ] && continue ;;
        -o|-I|-L|-D|-U|-x|-MF|-MT|-MQ|-include|-imacros|-isystem|-iquote|-idirafter|-iprefix|\
        -iwithprefix|-iwithprefixbefore|-isysroot|-Xlinker|-Xassembler|-Xpreprocessor|-Xclang|\
        -u|-T|-z|-aux-info|--param|-l|-arch|-target|--target|-MJ|-dumpdir|-dumpbase|-dumpbase-ext)
            [ "$a" = -x ] && have_src=1
            expect_value=1 ;;
        -x*) have_src=1 ;;
        -) have_input=1; have_src=1 ;;
        -*) ;;
        *)
            have_input=1
            case "$a" in
                *.c|*.cc|*.cp|*.cxx|*.cpp|*.CPP|*.c++|*.C|*.i|*.ii|*.s|*.S|*.sx|*.m|*.mm|*.M) have_src=1 ;;
            esac ;;
    esac
    args+=("$a")
done

extra=()
if [ $link = 0 ] || [ $have_src = 1 ]; then
    extra+=("${cflags[@]}" "-I$inc")
fi
if [ $link = 1 ] && [ $shared = 0 ] && [ $have_input = 1 ]; then
    if [ ! -f "$lib/libfuntrace.a" ]; then
        echo "funtrace wrapper: $lib/libfuntrace.a not found" >&2
        exit 2
    fi
    # -x none: a "-x c++" (or any -x) in the arguments must not apply to the archive
    extra+=(-x none -Wl,--whole-archive "$lib/libfuntrace.a" -Wl,--no-whole-archive -ldl -pthread
            -Wl,--export-dynamic-symbol=funtrace_root
            -Wl,--export-dynamic-symbol=__fentry__
            -Wl,--export-dynamic-symbol=__return__
            -Wl,--export-dynamic-symbol=__cyg_profile_func_enter
            -Wl,--export-dynamic-symbol=__cyg_profile_func_exit
            -Wl,--export-dynamic-symbol=__cxa_begin_catch
            -Wl,--export-dynamic-symbol=dlopen
            -Wl,--export-dynamic-symbol=dlclose
            -Wl,--export-dynamic-symbol=pthread_setname_np
            -Wl,--export-dynamic-symbol=sigaction -Wl,--export-dynamic-symbol=signal
            -Wl,--export-dynamic-symbol=bsd_signal -Wl,--export-dynamic-symbol=sysv_signal
            -Wl,--export-dynamic-symbol=__sysv_signal -Wl,--export-dynamic-symbol=longjmp
            -Wl,--export-dynamic-symbol=_longjmp -Wl,--export-dynamic-symbol=siglongjmp
            -Wl,--export-dynamic-symbol=__longjmp_chk
            '-Wl,--export-dynamic-symbol=funtrace_*')
fi
exec "$cc" "${args[@]}" "${extra[@]}"
