// The pipeline, stage by stage, on one screen (DESIGN.md, "The pipeline"):
//
//   graph -> graph passes -> lowering -> scheduling (inline, fuse, plan memory)
//
// Each stage's result is kept, and with a trace directory (the `trace` option,
// COIL_TRACE) each is dumped as it is made: graph.txt, graph_after_passes.txt,
// ir_pre_fusion.txt, ir_post_fusion.txt, memory_plan.txt; then, for the CPU,
// kernel_plans.txt (build_for_cpu). The code generators start from `schedule`. Tests:
// tests/unit/scheduler_test.cpp, tests/unit/cpp_plan_test.cpp, tests/cli/cli_test.sh.
#pragma once

#include <filesystem>
#include <string>

#include "graph/graph.h"
#include "ir/loop_ir.h"
#include "passes/passes.h"
#include "runtime/cpu_module.h"
#include "scheduler/scheduler.h"
#include "support/files.h"  // write_file_atomically, which the stages' writers use

namespace coil {

struct Compilation {
  Graph graph;             // as read
  Graph optimized;         // after the graph passes
  passes::PassLog passes;  // what they changed
  ir::Program lowered;     // the loop IR before fusion
  sched::Schedule schedule;
};

/// Runs every stage on `g`; writes the dumps to `trace_dir` unless it is empty.
Compilation compile_graph(Graph g, const sched::ScheduleOptions &o, const std::string &trace_dir = "");

/// The same with the options registry's values and its `trace` directory.
Compilation compile_graph(Graph g);

/// The back half for the CPU: plans, generates and builds the kernels of `c` (build_cpu),
/// with the plans dumped to `trace_dir` (kernel_plans.txt) unless it is empty.
CpuBuild build_for_cpu(const Compilation &c, const std::string &trace_dir);

/// The same with the options registry's `trace` directory.
CpuBuild build_for_cpu(const Compilation &c);

/// The counts of stats.json: loop-nest kernels, extern calls and the arena's size.
std::string stats_json(const Compilation &c);

}  // namespace coil
