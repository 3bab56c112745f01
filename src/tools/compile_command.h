// `coil compile`: runs the pipeline on a graph and writes what each stage made.
#pragma once

#include <string>
#include <vector>

namespace coil::tools {

/// `coil compile FILE --device cpu --out DIR [--explain] [--set name=value]...`.
int run_compile(const std::vector<std::string> &args);

inline constexpr const char *kCompileHelp =
    "usage: coil compile FILE --out DIR [--device cpu] [--explain] [--size s0=N]... [--set name=value]...\n\n"
    "Compiles a graph: graph passes, lowering to the loop IR, fusion into kernels and the\n"
    "memory plan. Writes to DIR:\n"
    "  graph.txt               the graph as read\n"
    "  graph_after_passes.txt  after dead-code and common-subexpression elimination,\n"
    "                          scalar folding and no-op removal (changes listed on top)\n"
    "  ir_pre_fusion.txt       the loop IR: one node per op\n"
    "  ir_post_fusion.txt      the kernels, each with its passes and member nodes\n"
    "  memory_plan.txt         where each intermediate lives in the arena\n"
    "  stats.json              {\"kernels\", \"extern_calls\", \"arena_bytes\", ...}\n"
    "  graph.cpp, graph.so     the generated C++ (kernels and entry points of\n"
    "                          coil/artifact.h) and the shared library built from it\n\n"
    "options:\n"
    "  --out DIR          where to write (created if missing)\n"
    "  --device D         cpu (the default)\n"
    "  --explain          print each kernel with its nodes, and every fusion not made with\n"
    "                     the reason\n"
    "  --size s0=N        the value of a symbolic size of the graph (`f32[s0, 768]`,\n"
    "                     `Sym(s0)`), which it is compiled for; one --size per symbol\n"
    "  --set name=value   override an option for this run (see coil config)\n\n"
    "exit status: 0 on success, 1 on a bad graph or option.\n";

}  // namespace coil::tools
