// fs_qualified: C++ functions that exist only inlined and have internal
// linkage (a parameter's type is in an anonymous namespace) have no linkage
// name in the debug info: gdb names their inlined frames by their scopes
// (app::Engine::step), and so must the final stack (seen first in leveldb's
// db_bench: leveldb::Benchmark::RunBenchmark).  A class local to a function
// is named as gdb names it (Local::go).  The fault is in the innermost one.
volatile int sink;

namespace app {
namespace {
struct Cell {
    int *target;
    __attribute__((always_inline)) inline void poke(int v) { *target = v; /* fault */ }
};
} // namespace

class Engine {
public:
    __attribute__((noinline)) void run(int *p);

private:
    __attribute__((always_inline)) inline void step(Cell c)
    {
        struct Local {
            __attribute__((always_inline)) static inline void go(Cell *q) { q->poke(sink + 1); }
        };
        Local::go(&c);
        sink++;
    }
};

void Engine::run(int *p)
{
    step(Cell{p});
    sink++;
}
} // namespace app

int main(int argc, char **argv)
{
    (void)argv;
    app::Engine e;
    e.run((int *)(long)(argc - 1));
    return sink;
}
