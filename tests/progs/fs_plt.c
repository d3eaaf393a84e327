/*
 * fs_plt.c -- a thread stopped inside a PLT entry (test_final_stacks.py's
 * test_pc_in_a_plt_entry): main calls getppid through its lazy PLT on a
 * stack with room for the call's return address only, so the entry's own
 * push (of the relocation index, getppid not bound yet) faults: the pc is
 * in getppid@plt, as a thread caught between a call and its callee.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    char *p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p, 4096, PROT_NONE) != 0)
        return 1;
    /* rsp 8 bytes into the second page: the call's push lands there, the
     * PLT entry's next push in the first, inaccessible, page */
    char *top = p + 4096 + 8;
    __asm__ volatile("mov %0, %%rsp\n\tcall getppid@PLT\n\tud2" : : "r"(top) : "memory");
    return 0;
}
