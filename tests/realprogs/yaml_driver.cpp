// yaml_driver.cpp -- drives yaml-cpp (its libyaml-cpp.a, built by its own
// CMake: tests/realprogs/build.sh yaml-cpp) for the real-programs tier.
// Parses good and malformed documents in a loop: yaml-cpp throws
// YAML::ParserException deep in its parser, unwinding its RAII objects, and
// load() catches it.  Then one malformed document whose exception load()
// catches and rethrows with nothing above it: std::terminate, whose handler
// rethrows it again to print what(), then abort() (SIGABRT).
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <string>

static long good, bad;

__attribute__((noinline)) static void load(const std::string &text, bool rethrow)
{
    try {
        YAML::Node n = YAML::Load(text);
        good += (long)n.size();
    } catch (const YAML::ParserException &) {
        bad++;
        if (rethrow)
            throw;
    }
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? std::atol(argv[1]) : 3000;
    const char *docs[] = {"a: 1\nb: [1, 2, 3]\nc: {x: y}\n", "a: [1, 2\nb: 3\n", "- x\n- y\n- {z: 1}\n",
                          "{a: 1, b: ]\n"};
    for (long i = 0; i < rounds; i++)
        load(docs[i % 4], false);
    std::printf("parsed %ld, rejected %ld\n", good, bad);
    std::fflush(stdout);
    load(docs[1], true); /* escapes main */
    return 0;
}
