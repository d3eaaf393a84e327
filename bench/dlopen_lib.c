/* dlopen_lib.c -- the small library dlopen_main.c loads and unloads. */
__attribute__((noinline)) static long step(long x)
{
    __asm__ volatile("" : "+r"(x));
    return x * 3 + 1;
}

long bench_plugin_run(long x)
{
    return step(x) + step(x + 1);
}
