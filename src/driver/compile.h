// The pipeline, stage by stage, on one screen (DESIGN.md, "The pipeline"):
//
//   graph -> graph passes -> lowering -> scheduling (inline, fuse, plan memory)
//         -> for a target: plan kernels -> generate -> build (compile, cache)
//
// Each stage's result is kept, and with a trace directory (the `trace` option,
// COIL_TRACE) each is dumped as it is made: graph.txt, graph_after_passes.txt,
// ir_pre_fusion.txt, ir_post_fusion.txt, memory_plan.txt; then kernel_plans.txt for the
// target (build_for_cpu, build_for_cuda). The front half is compile_graph; the back half
// per target is build_cpu and build_cuda (driver/build_cpu.cpp, driver/build_cuda.cpp),
// the only callers of the code generators outside tests. runtime/ loads and runs what they
// build (runtime/cpu_module.h, runtime/cuda_program.h); include/coil/coil.h is the public
// API over all of it (driver/api.cpp). Tests: tests/unit/scheduler_test.cpp,
// tests/unit/cpp_plan_test.cpp, tests/unit/api_test.cpp, tests/cli/cli_test.sh.
#pragma once

#include <filesystem>
#include <string>

#include "graph/graph.h"
#include "ir/loop_ir.h"
#include "coil/coil.h"
#include "codegen/cpp/cpp_plan.h"
#include "codegen/triton/triton_codegen.h"
#include "driver/autotune.h"
#include "passes/passes.h"
#include "runtime/triton_build.h"
#include "scheduler/scheduler.h"
#include "support/files.h"  // write_file_atomically, which the stages' writers use

namespace coil {

/// A graph of symbolic sizes keeps them through lowering, the scheduler and the memory
/// plan (their dumps show the symbols). Code generation then takes them as they are
/// (Symbolic: the C++ dialect, whose kernels take the symbols as arguments and which guards
/// each size it still needs as a number, where it needs it) or at the sizes compiled for
/// (CompiledFor: the Triton dialect and the interpreters, each symbol guarded for the
/// reason kCodegenFixesSizes).
enum class CodegenSizes { Symbolic, CompiledFor };
inline constexpr std::string_view kCodegenFixesSizes =
    "code generation for the GPU and the interpreters, which does not keep symbols yet";

struct Compilation {
  Graph graph;             // as read
  Graph optimized;         // after the graph passes
  passes::PassLog passes;  // what they changed
  ir::Program lowered;     // the loop IR before fusion (at the sizes compiled for, unless Symbolic)
  sched::Schedule schedule;  // likewise
};

/// The graph passes' way to compute a value at compile time: lowering and the reference
/// interpreter (passes/passes.h, fold_scalar_subgraphs).
const passes::ScalarEvaluator &reference_evaluator();

/// Runs every stage on `g`; writes the dumps to `trace_dir` unless it is empty. `sizes`:
/// what code generation will take (see CodegenSizes).
Compilation compile_graph(Graph g, const sched::ScheduleOptions &o, const std::string &trace_dir = "",
                          CodegenSizes sizes = CodegenSizes::CompiledFor);

/// The same with the options registry's values and its `trace` directory.
Compilation compile_graph(Graph g);

/// Writes sizes.txt, the guards of `c`'s graph so far, to `trace_dir` (when it has
/// symbols): compile_graph does for CompiledFor, build_for_cpu after code generation.
void dump_sizes(const Compilation &c, const std::string &trace_dir);

struct CpuBuild {
  std::string source;   // the generated translation unit
  std::string so_path;  // the shared library in the cache (runtime/cpu_module.h loads it)
  std::vector<codegen::CppKernelPlan> plans;  // per kernel: how the C++ dialect runs it
  bool cache_hit = false;
  double seconds = 0;   // generating and building (or finding) it
};

/// Plans and generates the C++ of `s` (its symbolic sizes kept: CodegenSizes::Symbolic) for the selected ISA (the options cpp.isa,
/// cpp.vector_lanes, cpp.prefault and cpp.plan's overrides) and builds it (cached), with
/// each kernel timed when the option cpp.profile is on.
CpuBuild build_cpu(const sched::Schedule &s);

/// The back half for the CPU: build_cpu of `c`, with the plans dumped to `trace_dir`
/// (kernel_plans.txt) unless it is empty.
CpuBuild build_for_cpu(const Compilation &c, const std::string &trace_dir);

/// The same with the options registry's `trace` directory.
CpuBuild build_for_cpu(const Compilation &c);

struct CudaBuild {
  codegen::GpuProgram program;
  std::vector<TritonBinary> binaries;  // one per program.kernels[i], same order
  double seconds = 0;                  // generating + compiling (or finding in the cache), tuning included
  int cache_hits = 0;
  std::vector<TunedKernel> tuned;      // with triton.autotune: what tuning chose, per schedule kernel
  double tuning_seconds = 0;
};

/// Generates the Triton kernels of `s` (codegen::generate_triton) and compiles them all in
/// one build_triton_kernels call, for the capability of the current GPU when one is
/// present, else for sm_90. Needs no GPU (only Python with triton), except with the option
/// triton.autotune, which times each kernel's configs on the current GPU first
/// (driver/autotune.h) and is ignored, with a note on stderr, when there is none.
CudaBuild build_cuda(const sched::Schedule &s);

/// The back half for the GPU: build_cuda of `c`'s schedule, with the plans dumped to
/// `trace_dir` (kernel_plans.txt) unless it is empty. `c` must have been scheduled with
/// codegen::gpu_schedule_options (extern epilogues where cuBLASLt takes them).
CudaBuild build_for_cuda(const Compilation &c, const std::string &trace_dir);

/// include/coil/coil.h's ScalarType as coil's DType (driver/api.cpp).
DType internal_dtype(ScalarType t);

/// include/coil/coil.h's compile() of a graph already parsed: for a caller that has read
/// the graph to check its tensors first (`coil run`), so that it is parsed once.
CompiledGraph compile_parsed(Graph g, const CompileOptions &o);

/// The counts of stats.json: loop-nest kernels, extern calls and the arena's size.
std::string stats_json(const Compilation &c);

}  // namespace coil
