#include "driver/compile.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "frontend/printer.h"
#include "ir/interpreter.h"
#include "ir/specialize.h"
#include "lowering/lowering.h"
#include "support/error.h"
#include "support/options.h"

namespace coil {
namespace {

// Writes `text` to dir/name through a temporary file, so a dump is whole or absent.
void dump(const std::string &dir, const std::string &name, const std::string &text) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError(str_cat("cannot create the trace directory ", dir, ": ", ec.message()));
  write_file_atomically((std::filesystem::path(dir) / name).string(), text);
}

std::string with_log(const std::string &graph_text, const passes::PassLog &log) {
  std::string out;
  for (const auto &line : log.lines) out += "# " + line + "\n";
  return out + graph_text;
}

}  // namespace

const passes::ScalarEvaluator &reference_evaluator() {
  static const passes::ScalarEvaluator eval{
      [](const Node &n) { return lowering::lowerings().count(n.target()) > 0; },
      [](const Graph &sub) -> std::optional<HostTensor> {
        try {
          std::vector<HostTensor> out = ir::interpret(lowering::lower(sub), {});
          COIL_ASSERT(out.size() == 1, "a subgraph of one output gave ", out.size());
          return std::move(out[0]);
        } catch (const UserError &) {
          return std::nullopt;
        }
      }};
  return eval;
}

Compilation compile_graph(Graph g, const sched::ScheduleOptions &o, const std::string &trace_dir, CodegenSizes sizes) {
  Compilation c;
  c.graph = std::move(g);
  dump(trace_dir, "graph.txt", frontend::print_graph(c.graph));
  GuardActivity what("the graph passes");
  c.optimized = passes::run_graph_passes(c.graph, reference_evaluator(), &c.passes);
  if (o.channels_last_convolutions) c.optimized = passes::channels_last_convolutions(c.optimized, &c.passes);
  dump(trace_dir, "graph_after_passes.txt", with_log(frontend::print_graph(c.optimized), c.passes));
  c.lowered = lowering::lower_symbolic(c.optimized, lowering::LowerOptions::from_registry());
  dump(trace_dir, "ir_pre_fusion.txt", ir::str(c.lowered));
  {
    GuardActivity scheduling("scheduling");
    c.schedule = sched::schedule_kernels(c.lowered, o);
  }
  sched::plan_memory(c.schedule);
  dump(trace_dir, "ir_post_fusion.txt", ir::str(c.schedule.ir));
  dump(trace_dir, "memory_plan.txt", sched::memory_plan_str(c.schedule));
  // Code generation for the GPU and the interpreters takes integers: the sizes compiled
  // for, each guarded.
  std::shared_ptr<SizeGuards> guards = size_guards_of(c.graph);
  if (guards && sizes == CodegenSizes::CompiledFor) {
    guards->fix(ir::symbols_of(c.schedule.ir), kCodegenFixesSizes);
    c.lowered = ir::specialize(std::move(c.lowered), guards->values());
    sched::specialize(c.schedule, guards->values());
  }
  if (sizes == CodegenSizes::CompiledFor) dump_sizes(c, trace_dir);
  return c;
}

void dump_sizes(const Compilation &c, const std::string &trace_dir) {
  if (std::string sizes = size_guards_str(c.graph); !sizes.empty()) dump(trace_dir, "sizes.txt", sizes);
}

CpuBuild build_for_cpu(const Compilation &c, const std::string &trace_dir) {
  CpuBuild b = build_cpu(c.schedule);
  dump(trace_dir, "kernel_plans.txt", codegen::plans_str(b.plans, c.schedule));
  dump_sizes(c, trace_dir);  // with what code generation guarded
  return b;
}

CudaBuild build_for_cuda(const Compilation &c, const std::string &trace_dir) {
  CudaBuild b = build_cuda(c.schedule);
  dump(trace_dir, "kernel_plans.txt", b.program.plans);
  return b;
}

CpuBuild build_for_cpu(const Compilation &c) { return build_for_cpu(c, options::get_string("trace")); }

Compilation compile_graph(Graph g) {
  return compile_graph(std::move(g), sched::ScheduleOptions::from_registry(), options::get_string("trace"));
}

std::string stats_json(const Compilation &c) {
  int kernels = 0, externs = 0;
  for (const ir::Kernel &k : c.schedule.ir.kernels) (k.kind == ir::KernelKind::Extern ? externs : kernels)++;
  nlohmann::ordered_json j;
  j["kernels"] = kernels;
  j["extern_calls"] = externs;
  j["arena_bytes"] = c.schedule.memory.arena_bytes.hint();  // at the sizes compiled for
  j["arena_bytes_without_reuse"] = c.schedule.memory.naive_bytes.hint();
  j["graph_nodes"] = c.graph.nodes().size();
  j["graph_nodes_after_passes"] = c.optimized.nodes().size();
  j["loop_ir_nodes"] = c.lowered.nodes.size();
  j["inlined_nodes"] = c.schedule.inlined.size();
  j["memory_ordered_nodes"] = c.schedule.reordered.size();
  j["fusions"] = c.schedule.fusions.size();
  j["rejected_fusions"] = c.schedule.rejected.size();
  return j.dump(2) + "\n";
}

}  // namespace coil
