/* floor_empty.S -- hooks that do nothing (a `ret` each): linked in place of
 * the runtime, they measure what the instrumentation itself costs -- the
 * compiler's calls to the hooks and what it does around them -- for -pg
 * (__fentry__ / __return__) and -finstrument-functions (gcc and clang:
 * __cyg_profile_func_enter / _exit).  No hook can cost less. */
    .text
    .globl __fentry__, __return__, __cyg_profile_func_enter, __cyg_profile_func_exit
    .type __fentry__, @function
    .type __return__, @function
    .type __cyg_profile_func_enter, @function
    .type __cyg_profile_func_exit, @function
    .p2align 4
__fentry__:
    ret
    .size __fentry__, .-__fentry__
    .p2align 4
__return__:
    ret
    .size __return__, .-__return__
    .p2align 4
__cyg_profile_func_enter:
    ret
    .size __cyg_profile_func_enter, .-__cyg_profile_func_enter
    .p2align 4
__cyg_profile_func_exit:
    ret
    .size __cyg_profile_func_exit, .-__cyg_profile_func_exit

    .section .note.GNU-stack,"",@progbits
