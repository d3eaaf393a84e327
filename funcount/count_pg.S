/*
 * count_pg.S -- the -pg hooks of the call-counting runtime (funcount):
 * __fentry__ counts the function that called it and keeps every register
 * (the function's arguments are live); __return__ does nothing.  Linked
 * instead of runtime/hooks_pg.S by `funtrace-gcc -funtrace-count`.
 */
    .text
    .globl __fentry__
    .type __fentry__, @function
__fentry__:
    .cfi_startproc
    push %rax
    .cfi_adjust_cfa_offset 8
    push %rcx
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %r8
    .cfi_adjust_cfa_offset 8
    push %r9
    .cfi_adjust_cfa_offset 8
    push %r10
    .cfi_adjust_cfa_offset 8
    push %r11
    .cfi_adjust_cfa_offset 8
    /* the return address (9 pushes above) minus the call: inside the function */
    mov 72(%rsp), %rdi
    sub $5, %rdi
    sub $8, %rsp            /* 16-byte alignment for the call */
    .cfi_adjust_cfa_offset 8
    call ft_count_hit
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %r11
    .cfi_adjust_cfa_offset -8
    pop %r10
    .cfi_adjust_cfa_offset -8
    pop %r9
    .cfi_adjust_cfa_offset -8
    pop %r8
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rcx
    .cfi_adjust_cfa_offset -8
    pop %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size __fentry__, .-__fentry__

    .globl __return__
    .type __return__, @function
__return__:
    .cfi_startproc
    ret
    .cfi_endproc
    .size __return__, .-__return__

    .section .note.GNU-stack,"",@progbits
