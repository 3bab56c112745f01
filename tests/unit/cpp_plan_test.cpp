// The dialects' plans (codegen/cpp/cpp_plan.h, codegen/triton/triton_kernel_plan.h): what
// the planners decide for kernels of known shape, that the emitters print what the plan
// says (an override changes the source and so the cache key, and the result still matches
// eager), the overrides' errors, the kernel_plans.txt dump, and that the emitters decide
// nothing themselves.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "codegen/cpp/cpp_plan.h"
#include "codegen/triton/triton_kernel_plan.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "runtime/cpu_module.h"
#include "support/options.h"
#include "test_util.h"

namespace coil {
namespace {

using codegen::CppKernelPlan;
using codegen::CppStrategy;

std::filesystem::path example(const std::string &name) { return test::source_dir() / "examples" / name; }

Compilation compile_example(const std::string &name) {
  return compile_graph(frontend::parse_graph_file((example(name) / "graph.py").string()), sched::ScheduleOptions{});
}

// AVX-512's registers of 16 floats, whatever this machine has.
std::vector<CppKernelPlan> plans_of(const std::string &name, const std::string &overrides = "") {
  return codegen::plan_cpp(compile_example(name).schedule, codegen::CppOptions{}, overrides);
}

// Compiles and runs an example with the options set now and checks it against eager.
CpuBuild expect_example_matches_eager(const std::string &name) {
  Compilation c = compile_example(name);
  CpuBuild build = build_cpu(c.schedule);
  TensorList inputs = read_safetensors((example(name) / "inputs.safetensors").string());
  TensorList expected = read_safetensors((example(name) / "expected.safetensors").string());
  std::vector<HostTensor> outputs = CpuModule(build.so_path).run(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor *want = find_tensor(expected, output_tensor_name(i));
    Tolerance tol = default_tolerance(want->dtype, ir::max_reduction_size(c.lowered, c.lowered.outputs[i]));
    Comparison cmp = compare(outputs[i], *want, tol);
    EXPECT_TRUE(cmp.pass) << name << " with cpp.plan=" << options::get_string("cpp.plan") << ": "
                          << output_tensor_name(i) << " max abs error " << cmp.max_abs_error;
  }
  return build;
}

TEST(CppPlan, PointwiseRowsInVectorsWithATail) {
  std::vector<CppKernelPlan> plans = plans_of("pointwise_chain");
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].strategy, CppStrategy::Rows);
  EXPECT_EQ(plans[0].vector_var, "x0");
  EXPECT_EQ(plans[0].lanes, 16);
  EXPECT_EQ(codegen::describe(plans[0]), "threads over the outer loops; x0 (4096) in vectors of 16 lanes, no tail");
}

TEST(CppPlan, TransposedLoadsGoThroughTiles) {
  std::vector<CppKernelPlan> plans = plans_of("transpose_add");
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].strategy, CppStrategy::TransposedTiles);
  EXPECT_EQ(plans[0].tile, 32);
  EXPECT_EQ(plans[0].tile_lanes, 16);
  EXPECT_EQ(plans[0].transposed.size(), 1u);
  EXPECT_FALSE(plans[0].tile_edges);  // 64 x 256: whole tiles
}

TEST(CppPlan, SoftmaxKeepsItsExpInARowBuffer) {
  std::vector<CppKernelPlan> plans = plans_of("softmax_lastdim");
  ASSERT_EQ(plans.size(), 1u);
  const CppKernelPlan &p = plans[0];
  EXPECT_EQ(p.strategy, CppStrategy::RowsOnThreads);
  ASSERT_EQ(p.passes.size(), 3u);
  for (const codegen::CppPassPlan &pass : p.passes) EXPECT_EQ(pass.lanes, 16);
  ASSERT_EQ(p.row_cache.size(), 1u);
  EXPECT_EQ(p.row_cache[0].step, 2);  // the pass of the sum writes exp(x - max); the last pass reads it
  EXPECT_NE(p.row_cache[0].key.find("exp"), std::string::npos) << p.row_cache[0].key;
}

TEST(CppPlan, SumOfOneRowIsSplitAcrossThreads) {
  std::vector<CppKernelPlan> plans = plans_of("sum_all");
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].strategy, CppStrategy::SplitRow);
  ASSERT_EQ(plans[0].passes.size(), 1u);
  EXPECT_TRUE(plans[0].passes[0].split);
}

TEST(CppPlan, SumOverDim0RunsRowsSideBySide) {
  std::vector<CppKernelPlan> plans = plans_of("sum_dim0");
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].strategy, CppStrategy::LanesOverKeptDim);
  EXPECT_EQ(plans[0].tile, 64);
}

TEST(CppPlan, OverridesSetFieldsAndAreListed) {
  std::vector<CppKernelPlan> plans = plans_of("softmax_lastdim", "kernel0.lanes=4, kernel0.row_cache=0");
  EXPECT_EQ(plans[0].lanes, 4);
  for (const codegen::CppPassPlan &pass : plans[0].passes) EXPECT_EQ(pass.lanes, 4);
  EXPECT_TRUE(plans[0].row_cache.empty());
  EXPECT_EQ(plans[0].overridden, (std::vector<std::string>{"lanes=4", "row_cache=0"}));
  plans = plans_of("sum_all", "kernel0.strategy=rows_on_threads");
  EXPECT_EQ(plans[0].strategy, CppStrategy::RowsOnThreads);
  EXPECT_FALSE(plans[0].passes[0].split);
}

TEST(CppPlan, BadOverridesNameTheProblem) {
  auto error_of = [](const std::string &overrides) {
    return test::user_error_of([&] { plans_of("sum_dim0", overrides); });
  };
  EXPECT_EQ(error_of("kernel7.lanes=4"), "option cpp.plan: 'kernel7.lanes=4': the graph has no kernel kernel7 (kernel0 to kernel0)");
  EXPECT_EQ(error_of("kernel0.width=4"),
            "option cpp.plan: 'kernel0.width=4': no field 'width'; the fields are strategy, lanes, split, row_cache, prefault");
  EXPECT_EQ(error_of("kernel0.strategy=transposed_tiles"),
            "option cpp.plan: 'kernel0.strategy=transposed_tiles': kernel0 can run as rows_on_threads, lanes_over_kept_dim");
  EXPECT_EQ(error_of("kernel0.lanes=4"),
            "option cpp.plan: 'kernel0.lanes=4': kernel0 (lanes_over_kept_dim) has no vector loop whose lanes could be set");
  EXPECT_EQ(error_of("kernel0.strategy=rows_on_threads,kernel0.lanes=3"),
            "option cpp.plan: 'kernel0.lanes=3': lanes must be 0 (scalar code) or a power of two from 2 to 64");
  EXPECT_EQ(error_of("lanes"), "option cpp.plan: 'lanes' is not KERNEL.FIELD=VALUE (kernel0.lanes=8)");
}

// The done-when of the plans: one field overridden by option changes the generated source,
// so the cache misses, and the kernel still computes what eager does.
TEST(CppPlan, OverrideChangesTheSourceAndMissesTheCache) {
  std::filesystem::path cache = std::filesystem::temp_directory_path() / ("coil-plan-test-" + std::to_string(getpid()));
  options::set_override("cache_dir", cache.string());
  CpuBuild plain = expect_example_matches_eager("pointwise_chain");
  EXPECT_FALSE(plain.cache_hit);
  EXPECT_TRUE(expect_example_matches_eager("pointwise_chain").cache_hit);
  options::set_override("cpp.plan", "kernel0.lanes=4");
  CpuBuild four = expect_example_matches_eager("pointwise_chain");
  options::clear_overrides();
  std::filesystem::remove_all(cache);
  EXPECT_FALSE(four.cache_hit);
  EXPECT_NE(four.source, plain.source);
  EXPECT_NE(four.source.find("// layout: threads over the outer loops; x0 (4096) in vectors of 4 lanes, no tail"),
            std::string::npos);
  EXPECT_NE(four.source.find("Vec<float, 4>"), std::string::npos);
  EXPECT_EQ(four.source.find("Vec<float, 16>"), std::string::npos);
}

// Every strategy a kernel can take computes the same values: the plan is free to choose.
TEST(CppPlan, EveryLegalStrategyMatchesEager) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sum_dim0", "kernel0.strategy=rows_on_threads"},
      {"softmax_lastdim", "kernel0.strategy=lanes_over_kept_dim"},
      {"softmax_lastdim", "kernel0.lanes=0"},
      {"var_mean_lastdim", "kernel0.lanes=4"},
      {"sum_all", "kernel0.strategy=rows_on_threads"},
      {"sum_all", "kernel0.lanes=8"},
      {"transpose_add", "kernel0.strategy=rows"},
      {"transpose_add", "kernel0.lanes=8"},
      {"pointwise_chain", "kernel0.lanes=0"},
  };
  for (const auto &[name, overrides] : cases) {
    options::set_override("cpp.plan", overrides);
    CpuBuild b = expect_example_matches_eager(name);
    EXPECT_NE(b.plans[0].overridden.size(), 0u) << name;
    options::clear_overrides();
  }
}

TEST(CppPlan, PlansAreDumpedAndAreTheLayoutLines) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("coil-plan-dump-" + std::to_string(getpid()));
  Compilation c = compile_example("softmax_lastdim");
  CpuBuild b = build_for_cpu(c, dir.string());
  std::string dump = test::read_text(dir / "kernel_plans.txt");
  std::filesystem::remove_all(dir);
  EXPECT_NE(dump.find("kernel0  reduction over"), std::string::npos) << dump;
  EXPECT_NE(dump.find("  strategy   rows_on_threads\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("  row cache  row_value0[256] of f32, written by pass 2: exp"), std::string::npos) << dump;
  for (const CppKernelPlan &p : b.plans)
    EXPECT_NE(b.source.find("// layout: " + codegen::describe(p) + "\n"), std::string::npos) << codegen::describe(p);
}

// The emitters print; they decide nothing. The deciding functions live in the planners,
// and none of the emitters' files calls them or the access facts they decide by.
void expect_calls_none_of(const std::string &dialect, const std::vector<std::string> &files,
                          const std::vector<std::string> &deciders) {
  for (const std::string &file : files) {
    std::string text = test::read_text(test::source_dir() / "src" / "codegen" / dialect / file);
    for (const std::string &d : deciders) EXPECT_EQ(text.find(d + "("), std::string::npos) << file << " calls " << d;
  }
}

TEST(TritonPlan, TheEmitterCallsNoPlanner) {
  expect_calls_none_of("triton", {"triton_kernel.h", "triton_kernel.cpp", "triton_pointwise.cpp", "triton_reduction.cpp"},
                       {"plan_triton_kernel", "tuning_plans", "splittable", "default_split",
                        "loads_transposed_in_last_two_dims", "rows_contiguous_across_reduction", "pick"});
}

TEST(TritonPlan, KernelsAreEmittedAsPlanned) {
  for (std::string name : {"pointwise_chain", "transpose_add", "softmax_lastdim", "sum_dim0", "var_mean_lastdim"}) {
    Compilation c = compile_example(name);
    const ir::Kernel &k = c.schedule.ir.kernels[0];
    codegen::TritonKernelPlan plan = codegen::plan_triton_kernel(c.schedule.ir.program, k, {});
    codegen::GpuProgram g = codegen::generate_triton(c.schedule);
    ASSERT_FALSE(g.kernels.empty()) << name;
    const codegen::GpuKernel &kernel = g.kernels[0];
    EXPECT_EQ(kernel.num_warps, plan.warps) << name;
    EXPECT_EQ(kernel.num_stages, plan.stages) << name;
    std::string b0 = plan.strategy == codegen::TritonStrategy::Tiles ? "YBLOCK" : "XBLOCK";
    EXPECT_EQ(std::get<int64_t>(kernel.constexprs.at(b0)), plan.block0) << name;
    if (plan.block1) {
      std::string b1 = plan.strategy == codegen::TritonStrategy::Tiles ? "XBLOCK" : "RBLOCK";
      EXPECT_EQ(std::get<int64_t>(kernel.constexprs.at(b1)), plan.block1) << name;
    }
    EXPECT_NE(g.plans.find(k.name + "  " + codegen::strategy_name(plan.strategy) + "  " + plan.config().str()),
              std::string::npos) << g.plans;
  }
}

TEST(CppPlan, TheEmitterCallsNoPlanner) {
  const std::vector<std::string> deciders = {"plan_cpp",         "lanes_for",
                                             "loads_transposed_in_last_two_dims", "rows_contiguous_across_reduction",
                                             "plan_row_cache",   "plan_prefault",
                                             "transposed_loads", "splittable"};
  for (const char *file : {"cpp_kernel.h", "cpp_kernel.cpp", "cpp_pointwise.cpp", "cpp_reduction.cpp", "cpp_codegen.cpp"}) {
    std::string text = test::read_text(test::source_dir() / "src" / "codegen" / "cpp" / file);
    for (const std::string &d : deciders) {
      if (std::string(file) == "cpp_codegen.cpp" && d == "plan_cpp") continue;  // generate_cpp(s, o) plans, then prints
      EXPECT_EQ(text.find(d + "("), std::string::npos) << file << " calls " << d;
    }
  }
  // The Triton emitter likewise: block sizes, warps and strategies come from its plan.
  for (const char *file : {"triton_kernel.h", "triton_kernel.cpp", "triton_pointwise.cpp", "triton_reduction.cpp"}) {
    std::string text = test::read_text(test::source_dir() / "src" / "codegen" / "triton" / file);
    for (const std::string d : {"plan_triton_kernel", "tuning_plans", "plan_triton"})
      EXPECT_EQ(text.find(d + "("), std::string::npos) << file << " calls " << d;
  }
}

}  // namespace
}  // namespace coil
