// The Triton dialect's entry points: configs as text, the kernels and host program of a
// schedule (where buffers live, scratch after the arena), the configs worth timing, and the
// compile requests. The kernel emitter is triton_kernel.h, the launch plan triton_plan.cpp,
// the op table triton_ops.cpp.
#include "codegen/triton/triton_codegen.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "codegen/triton/triton_attention.h"
#include "codegen/triton/triton_kernel.h"
#include "codegen/triton/triton_kernel_plan.h"
#include "ir/specialize.h"
#include "support/error.h"

namespace coil::codegen {

using detail::TritonEmitter;
using ir::Kernel;

std::string TritonConfig::str() const {
  std::string out;
  auto field = [&](const char *name, int64_t v) {
    if (v > 0) out += (out.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(v);
  };
  field("block0", block0);
  field("block1", block1);
  field("warps", num_warps);
  field("stages", num_stages);
  field("split", split);
  return out.empty() ? "default" : out;
}

TritonConfig parse_triton_config(std::string_view text, std::string_view origin) {
  TritonConfig c;
  if (text == "default") return c;
  std::istringstream in{std::string(text)};
  std::string word;
  while (in >> word) {
    size_t eq = word.find('=');
    std::string key = word.substr(0, eq == std::string::npos ? word.size() : eq);
    int64_t value = 0;
    bool number = eq != std::string::npos && eq + 1 < word.size() &&
                  word.find_first_not_of("0123456789", eq + 1) == std::string::npos && word.size() - eq - 1 <= 9;
    if (number) value = std::stoll(word.substr(eq + 1));
    bool pow2 = value > 0 && (value & (value - 1)) == 0;
    if (!number || value <= 0 || ((key == "block0" || key == "block1" || key == "split") && !pow2))
      throw UserError(str_cat(origin, ": '", word, "' is not a field of a Triton config (block0, block1, split: ",
                              "powers of two; warps, stages: positive integers)"));
    if (key == "block0") c.block0 = value;
    else if (key == "block1") c.block1 = value;
    else if (key == "warps") c.num_warps = int(value);
    else if (key == "stages") c.num_stages = int(value);
    else if (key == "split") c.split = value;
    else throw UserError(str_cat(origin, ": unknown field '", key, "' in Triton config '", text, "'"));
  }
  return c;
}

std::vector<TritonConfig> tuning_configs(const sched::Schedule &s, const std::string &kernel, const TritonOptions &o) {
  for (const Kernel &k : s.ir.kernels) {
    if (k.name != kernel) continue;
    if (is_attention(s.ir.program, k)) {
      auto it = o.configs.find(k.name);
      std::vector<TritonConfig> out;
      AttentionPlan chosen = plan_attention(s.ir.program, k, it == o.configs.end() ? TritonConfig{} : it->second);
      for (const AttentionPlan &plan : attention_tuning_plans(s.ir.program, k, chosen)) out.push_back(plan.config());
      return out;
    }
    if (k.kind == ir::KernelKind::Extern) return {TritonConfig{}};
    std::vector<TritonConfig> out;
    for (const TritonKernelPlan &plan : tuning_plans(s.ir.program, k, plan_triton_kernel(s.ir.program, k, o), o))
      out.push_back(plan.config());
    return out;
  }
  throw InternalError(str_cat("tuning_configs: the schedule has no kernel ", kernel));
}

bool is_attention(const ir::Program &p, const Kernel &k) {
  return k.kind == ir::KernelKind::Extern && p.nodes[size_t(k.nodes[0])].extern_op == ir::ExternOp::Attention;
}

namespace {

// The extern steps' plans for kernel_plans.txt: a block per call; nothing without one.
std::string extern_plans_str(const ir::Program &p, const std::vector<GpuStep> &steps) {
  std::string out;
  for (const GpuStep &st : steps) {
    if (!st.extern_plan) continue;
    if (out.empty()) out = "# The GPU's extern calls (codegen/gpu/extern_plan.h; b<N>: buffer N)\n";
    const ir::Node &n = p.nodes[size_t(st.node)];
    out += str_cat(st.schedule_kernel, "  ", ir::extern_op_name(n.extern_op), "  ", st.extern_plan->str());
  }
  return out;
}

}  // namespace

GpuProgram generate_triton(const sched::Schedule &s, const TritonOptions &o) {
  const ir::Program &p = s.ir.program;
  GpuProgram g;
  // Where buffers live: as on the CPU (cpp_wrapper.h), with scratch after the arena.
  for (size_t i = 0; i < p.inputs.size(); ++i) g.places[p.inputs[i]] = {GpuPlace::Kind::Input, int(i), 0};
  for (size_t i = 0; i < p.outputs.size(); ++i)
    if (!g.places.count(p.outputs[i])) g.places[p.outputs[i]] = {GpuPlace::Kind::Output, int(i), 0};
  for (size_t i = 0; i < s.lives.size(); ++i) g.places[s.life_buffers[i]] = {GpuPlace::Kind::Arena, -1, s.memory.offsets[i]};
  g.arena_bytes = s.memory.arena_bytes;
  int next_scratch = int(p.buffers.size());
  std::map<int, std::pair<DType, SymInt>> scratch;
  std::vector<TritonVariant> plans;
  std::string attention_plans;
  for (const Kernel &k : s.ir.kernels) {
    // What code generation relies on at the sizes compiled for is guarded in its name.
    std::string activity = "the Triton code of " + k.name;
    GuardActivity generating(activity);
    if (is_attention(p, k)) {  // coil's own kernel, not a library call
      auto it = o.configs.find(k.name);
      AttentionPlan plan = plan_attention(p, k, it == o.configs.end() ? TritonConfig{} : it->second);
      attention_plans += str_cat(k.name, "  attention  ", plan.str(), "\n");
      GpuStep &step = g.steps.emplace_back();
      step.kind = GpuStep::Kind::Launch;
      step.kernel = int(g.kernels.size());
      step.schedule_kernel = k.name;
      g.kernels.push_back(emit_attention(p, k, plan, step.args));
      continue;
    }
    if (k.kind == ir::KernelKind::Extern) {
      GpuStep &step = g.steps.emplace_back();
      step.kind = GpuStep::Kind::Extern;
      step.node = k.nodes[0];
      step.schedule_kernel = k.name;
      if (k.nodes.size() > 1) step.epilogue = sched::epilogue_of(p, k);
      // A library call is planned for its sizes (descriptors, layouts, workspace): at sizes
      // of symbols, by whatever runs the program at a call's sizes (run_plan.py: torch's
      // ops), not here.
      if (ir::symbols_of(p, k).empty())
        step.extern_plan = plan_gpu_extern(p, p.nodes[size_t(step.node)], step.epilogue_or_null());
      continue;
    }
    for (const TritonVariant &variant : aligned_variants(p, k, plan_variants(p, k, o))) {
      std::vector<std::vector<int>> args;
      int before = next_scratch;
      plans.push_back(variant);
      std::vector<GpuKernel> made = TritonEmitter(p, k, variant.plan).emit(args, scratch, next_scratch);
      // Scratch of this kernel: after the arena, freed when the kernel ends (the next one may reuse it).
      SymInt offset = s.memory.arena_bytes;
      for (int id = before; id < next_scratch; ++id) {
        auto [t, elements] = scratch.at(id);
        g.places[id] = {GpuPlace::Kind::Scratch, -1, offset};
        g.scratch_names[id] = made.front().name + std::to_string(id - before);
        g.scratch_dtypes[id] = t;
        g.scratch_elements[id] = elements;
        offset += sched::aligned(elements * itemsize(t));
      }
      g.arena_bytes = sym_max(g.arena_bytes, offset);
      for (size_t i = 0; i < made.size(); ++i) {
        GpuStep &step = g.steps.emplace_back();
        step.kind = GpuStep::Kind::Launch;
        step.kernel = int(g.kernels.size());
        step.args = args[i];
        step.only_if = variant.only_if;
        step.schedule_kernel = k.name;
        g.kernels.push_back(std::move(made[i]));
      }
    }
  }
  g.plans = plans_str(plans) + (attention_plans.empty() ? "" : "# Attention kernels (triton_attention.h)\n" + attention_plans) +
            extern_plans_str(p, g.steps);
  return g;
}

GpuProgram at_sizes(const GpuProgram &g, const sched::Schedule &at, const std::map<std::string, int64_t> &values) {
  const ir::Program &p = at.ir.program;
  GpuProgram out;
  out.kernels = g.kernels;
  for (GpuKernel &k : out.kernels)
    for (SymInt &n : k.grid) n = at_sizes(n, values);
  for (const auto &[id, place] : g.places) out.places[id] = {place.kind, place.index, at_sizes(place.offset, values)};
  out.scratch_names = g.scratch_names;
  out.scratch_dtypes = g.scratch_dtypes;
  for (const auto &[id, elements] : g.scratch_elements) out.scratch_elements[id] = at_sizes(elements, values);
  out.arena_bytes = at_sizes(g.arena_bytes, values);
  for (const GpuStep &st : g.steps) {
    if (!std::all_of(st.only_if.begin(), st.only_if.end(), [&](const SizeGuard &g) { return g.holds(values); }))
      continue;  // another variant serves these sizes
    GpuStep &step = out.steps.emplace_back(st);
    step.only_if.clear();
    if (step.kind != GpuStep::Kind::Extern || step.extern_plan) continue;
    auto k = std::find_if(at.ir.kernels.begin(), at.ir.kernels.end(),
                          [&](const Kernel &k) { return k.name == st.schedule_kernel; });
    COIL_ASSERT(k != at.ir.kernels.end(), "the specialized schedule has no kernel ", st.schedule_kernel);
    if (step.epilogue) step.epilogue = sched::epilogue_of(p, *k);
    step.extern_plan = plan_gpu_extern(p, p.nodes[size_t(step.node)], step.epilogue_or_null());
  }
  out.plans = g.plans;
  return out;
}

std::vector<TritonCompileRequest> compile_requests(const GpuProgram &g) {
  std::vector<TritonCompileRequest> out;
  for (const GpuKernel &k : g.kernels) {
    TritonCompileRequest r;
    r.name = k.name;
    r.source = k.source;
    r.signature = k.signature;
    r.constexprs = k.constexprs;
    for (const TritonArg &a : k.signature)
      if (a.type[0] == '*') r.divisible_by_16.push_back(a.name);  // every buffer starts 16-byte aligned
    if (k.sizes_by_16) r.divisible_by_16.insert(r.divisible_by_16.end(), k.sizes.begin(), k.sizes.end());
    r.num_warps = k.num_warps;
    r.num_stages = k.num_stages;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace coil::codegen
