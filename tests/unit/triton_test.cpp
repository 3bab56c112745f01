// The Triton dialect without a GPU: golden files of the seed's kernels; every fixture and
// example run under Triton's interpreter (python/coil_triton/run_plan.py, many plans per
// process) and compared with PyTorch eager with the tolerances of the testing tiers; every
// generated kernel compiled to a cubin for sm_90 by Triton's own compiler.
#include <regex>
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <set>
#include <sstream>

#include "codegen/gpu/gpu_epilogue.h"
#include "codegen/triton/triton_codegen.h"
#include "codegen/triton/triton_kernel_plan.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "ir/interpreter.h"
#include "ir/specialize.h"
#include "runtime/compiler.h"
#include "runtime/triton_build.h"
#include "runtime/triton_interpret.h"
#include "test_util.h"

namespace coil {
namespace {

namespace fs = std::filesystem;

sched::ScheduleOptions gpu_schedule() { return codegen::gpu_schedule_options(sched::ScheduleOptions{}); }

// The cases the interpreter cannot run, with the reason; they must pass on the GPU
// (scripts/gpu_check.sh). Kept in tests/fixtures/INTERPRETER.md.
std::map<std::string, std::string> interpreter_exceptions() {
  std::map<std::string, std::string> out;
  std::ifstream in(test::source_dir() / "tests" / "fixtures" / "INTERPRETER.md");
  for (std::string line; std::getline(in, line);) {
    // "- `name`: reason"
    auto open = line.find("- `"), close = line.find("`:", 3);
    if (open == 0 && close != std::string::npos) out[line.substr(3, close - 3)] = line.substr(close + 2);
  }
  return out;
}

// ---- golden files ------------------------------------------------------------------------

class TritonGolden : public testing::TestWithParam<std::string> {};

// tests/golden/<case>/kernels.py: every kernel of the case, in launch order.
TEST_P(TritonGolden, GeneratedTritonIsUnchanged) {
  auto dir = test::source_dir() / "tests" / "golden" / GetParam();
  Compilation c = compile_graph(test::fixture_graph(dir), gpu_schedule());
  codegen::GpuProgram g = codegen::generate_triton(c.schedule);
  std::string source;
  for (const codegen::GpuStep &st : g.steps)
    if (st.kind == codegen::GpuStep::Kind::Launch) source += g.kernels[size_t(st.kernel)].source + "\n\n";
  test::expect_matches_golden(dir / "kernels.py", source);
}

// The square over 1000 f32 (a mask), a persistent softmax over rows of 1000, a looped sum
// over rows of 100,000 and a split sum over 2^26 elements.
INSTANTIATE_TEST_SUITE_P(Seed, TritonGolden, testing::Values("square", "softmax_rows", "sum_rows_looped", "sum_split"),
                         [](const auto &info) { return std::string(info.param); });

TEST(TritonLayout, ReductionStrategyFollowsTheShape) {
  auto layout = [](const std::string &graph) {
    Compilation c = compile_graph(frontend::parse_graph(graph, "test.py"), gpu_schedule());
    codegen::GpuProgram g = codegen::generate_triton(c.schedule);
    std::string out;
    for (const auto &k : g.kernels) out += k.attrs.at("layout") + "\n";
    return out;
  };
  auto sum = [](const std::string &shape, const std::string &strides, const std::string &dim, const std::string &out) {
    return "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32" + shape + strides +
           "cpu\"):\n        s: \"f32" + out + "cpu\" = torch.ops.aten.sum.dim_IntList(x, [" + dim + "])\n        return (s,)\n";
  };
  EXPECT_NE(layout(sum("[64, 1000]", "[1000, 1]", "1", "[64][1]")).find("persistent"), std::string::npos);
  EXPECT_NE(layout(sum("[512, 100000]", "[100000, 1]", "1", "[512][1]")).find("looped"), std::string::npos);
  EXPECT_NE(layout(sum("[4, 100000]", "[100000, 1]", "1", "[4][1]")).find("split"), std::string::npos);
  EXPECT_NE(layout(sum("[4096, 512]", "[512, 1]", "0", "[512][1]")).find("rows side by side"), std::string::npos);
  // Batch norm's statistics over a channels-last batch: Welford's partials of 64 channels
  // split across programs, the normalization a kernel of its own (the scheduler's
  // min_programs_for_second_pass on the GPU).
  std::string bn = layout(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[16, 64, 64, 64][262144, 1, 4096, 64]cpu", w: "f32[64][1]cpu", b: "f32[64][1]cpu", rm: "f32[64][1]cpu", rv: "f32[64][1]cpu"):
        bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-05)
        y: "f32[16, 64, 64, 64][262144, 1, 4096, 64]cpu" = bn[0]
        m: "f32[64][1]cpu" = bn[1]
        return (y, m)
)");
  EXPECT_NE(bn.find("split: 512 programs per block of XBLOCK rows side by side"), std::string::npos) << bn;
  EXPECT_NE(bn.find("blocks of XBLOCK elements"), std::string::npos) << bn;
}

// ---- every fixture under the interpreter ---------------------------------------------------

struct Case {
  fs::path dir;
  std::shared_ptr<const Compilation> compilation;  // a dyn_ family's is its members' too
  fs::path work;  // the outputs
  fs::path plan;  // the launch plan run
};

// Every fixture and example under the interpreter, the dyn_ fixtures as PyTorch traced them
// with symbolic sizes: each family compiled once, its sizes kept (the graph's first fixture
// gives the hints), and its one launch plan run at every member's sizes.
TEST(TritonInterpreter, EveryFixtureAndExampleMatchesEager) {
  std::vector<fs::path> dirs = test::fixture_dirs();
  for (const fs::path &d : test::example_dirs()) dirs.push_back(d);
  auto exceptions = interpreter_exceptions();
  fs::path root = fs::temp_directory_path() / ("coil_interpret_" + std::to_string(::getpid()));
  fs::remove_all(root);
  std::vector<Case> cases;
  std::map<std::string, Case> families;
  // Two batches, one per core, each a list of {plan, inputs, save}.
  std::vector<std::string> batches(2, "[");
  for (const fs::path &dir : dirs) {
    std::string name = dir.parent_path().filename().string() + "_" + dir.filename().string();
    if (exceptions.count(dir.filename().string())) continue;
    std::string family = test::dynamic_family(dir);
    Case c{dir, nullptr, root / name, root / name / "launch_plan.json"};
    if (!family.empty() && families.count(family)) {
      c.compilation = families.at(family).compilation;
      c.plan = families.at(family).plan;
      fs::create_directories(c.work);
    } else {
      auto compiled = std::make_shared<Compilation>(compile_graph(
          test::fixture_graph(dir), gpu_schedule(), "", family.empty() ? CodegenSizes::CompiledFor : CodegenSizes::Symbolic));
      write_launch_plan(compiled->schedule, codegen::generate_triton(compiled->schedule), c.work.string());
      c.compilation = compiled;
      if (!family.empty()) {
        std::shared_ptr<SizeGuards> guards = size_guards_of(compiled->graph);
        EXPECT_TRUE(guards->specialized(guards->values()).empty())
            << family << ": the Triton program specialized a size\n" << size_guards_str(compiled->graph);
        families.emplace(family, c);
      }
    }
    std::string &batch = batches[cases.size() % 2];
    batch += std::string(batch.size() > 1 ? ",\n" : "\n") + "{\"plan\": \"" + c.plan.string() +
             "\", \"inputs\": \"" + (dir / "inputs.safetensors").string() + "\", \"save\": \"" +
             (c.work / "outputs.safetensors").string() + "\"}";
    cases.push_back(std::move(c));
  }
#ifdef COIL_ASAN
  // The sanitizer build checks coil's part, generating every case's kernels and launch plan
  // above; running them is Triton's interpreter's work, which the g++ build's run checks.
  fs::remove_all(root);
  GTEST_SKIP() << cases.size() << " cases generated; the interpreter runs them in the g++ build";
#endif
  std::vector<std::future<ProcessResult>> runs;
  for (size_t b = 0; b < batches.size(); ++b) {
    fs::path job = root / ("batch" + std::to_string(b) + ".json");
    std::ofstream(job) << batches[b] << "]\n";
    runs.push_back(std::async(std::launch::async, [job] {
      return run_process({triton_python(), triton_helper_file("run_plan.py").string(), "--batch", job.string()});
    }));
  }
  for (auto &r : runs) {
    ProcessResult result = r.get();
    ASSERT_LE(result.exit_code, 1) << result.err;  // 1: some plan failed, named below
  }
  int passed = 0;
  for (const Case &c : cases) {
    std::string name = c.dir.filename().string();
    if (fs::exists(c.work / "outputs.safetensors.error")) {
      ADD_FAILURE() << name << ": " << test::read_text(c.work / "outputs.safetensors.error");
      continue;
    }
    TensorList got = read_safetensors((c.work / "outputs.safetensors").string());
    // The Triton dialect computes as CUDA does: where the devices' eager results differ (a float
    // out of an integer's range converted), the fixture keeps CUDA eager's outputs too.
    fs::path cuda_expected = c.dir / "expected_cuda.safetensors";
    TensorList expected =
        read_safetensors((fs::exists(cuda_expected) ? cuda_expected : c.dir / "expected.safetensors").string());
    // Tolerances by the reductions at the fixture's sizes.
    const ir::Program lowered = ir::specialize(c.compilation->lowered, symbol_values(test::fixture_graph(c.dir)));
    bool ok = true;
    for (size_t i = 0; i < lowered.outputs.size(); ++i) {
      const HostTensor *want = find_tensor(expected, output_tensor_name(i)), *have = find_tensor(got, output_tensor_name(i));
      ASSERT_TRUE(want && have) << name << ": no " << output_tensor_name(i);
      Tolerance tol = default_tolerance(want->dtype, ir::max_reduction_size(lowered, lowered.outputs[i]));
      Comparison cmp = compare(*have, *want, tol);
      ok = ok && cmp.pass;
      EXPECT_TRUE(cmp.pass) << name << " " << output_tensor_name(i) << ": " << cmp.mismatches << " mismatches, first "
                            << cmp.first_mismatch << ", max abs error " << cmp.max_abs_error << "\nkernels: " << c.work;
    }
    passed += ok;
  }
  std::cout << passed << " of " << cases.size() << " cases match eager under the interpreter; " << exceptions.size()
            << " listed in tests/fixtures/INTERPRETER.md\n";
  if (!HasFailure()) fs::remove_all(root);
}

// ---- one program of symbolic sizes at every size ----------------------------------------------

// A graph of symbolic sizes compiled once, at the hints its SizeValues give, runs under the
// interpreter at sizes on both sides of each decision made at the hints and in each size
// bucket of its kernels (plan_variants): a persistent row in a larger block, one that no
// longer fits (the looped variant runs), a split reduction's last chunk
// past the row, rows side by side, Welford, scans and tiles; each against the reference
// interpreter on the program specialized to those sizes.
TEST(TritonInterpreter, OneSymbolicProgramServesEverySize) {
  auto graph = [](const std::string &params, const std::string &body, const std::string &outs) {
    return "class GraphModule(torch.nn.Module):\n    def forward(self, " + params + "):\n" + body + "        return (" + outs + ",)\n";
  };
  struct Graph_ {
    std::string name, text;
    int64_t hint;
    std::vector<int64_t> sizes;  // s0 at each run
  };
  const std::vector<Graph_> graphs = {
      {"softmax", graph("x: \"f32[4, s0][s0, 1]cpu\"", "        s: \"f32[4, s0][s0, 1]cpu\" = torch.ops.aten._softmax.default(x, -1, False)\n", "s"),
       16, {16, 9, 100, 300, 5000}},
      {"var_mean", graph("x: \"f32[8, s0][s0, 1]cpu\"",
                         "        v = torch.ops.aten.var_mean.correction(x, [1], correction = 1)\n"
                         "        a: \"f32[8][1]cpu\" = v[0]\n        b: \"f32[8][1]cpu\" = v[1]\n", "a, b"),
       100, {100, 3, 200, 1000, 4099}},
      {"split_rows", graph("x: \"f32[2, s0][s0, 1]cpu\"", "        s: \"f32[2][1]cpu\" = torch.ops.aten.amax.default(x, [1])\n", "s"),
       65536, {65536, 65543, 3, 5000, 300000}},
      {"split_columns", graph("x: \"f32[s0, 256][256, 1]cpu\"",
                              "        s: \"f32[256][1]cpu\" = torch.ops.aten.sum.dim_IntList(x, [0])\n", "s"),
       1024, {1024, 37, 1500}},
      {"cumsum", graph("x: \"f32[3, s0][s0, 1]cpu\"", "        c: \"f32[3, s0][s0, 1]cpu\" = torch.ops.aten.cumsum.default(x, 1)\n", "c"),
       64, {64, 5, 2100}},
      {"tiles", graph("x: \"f32[s0, 64][64, 1]cpu\", y: \"f32[64, s0][s0, 1]cpu\"",
                      "        t: \"f32[s0, 64][1, s0]cpu\" = torch.ops.aten.permute.default(y, [1, 0])\n"
                      "        s: \"f32[s0, 64][64, 1]cpu\" = torch.ops.aten.add.Tensor(x, t)\n", "s"),
       128, {128, 33, 2, 3000, 4096}},
  };
  fs::path root = fs::temp_directory_path() / ("coil_symbolic_" + std::to_string(::getpid()));
  fs::remove_all(root);
  struct Run {
    std::string name;
    fs::path save;
    std::vector<HostTensor> want;
    ir::Program program;  // specialized to the run's sizes: its tolerances
  };
  std::vector<Run> runs;
  std::string batch = "[";
  for (const Graph_ &gr : graphs) {
    frontend::SizeValues hints{{"s0", gr.hint}};
    Compilation c = compile_graph(frontend::parse_graph(gr.text, gr.name + ".py", &hints), gpu_schedule(), "",
                                  CodegenSizes::Symbolic);
    codegen::GpuProgram g = codegen::generate_triton(c.schedule);
    std::shared_ptr<SizeGuards> guards = size_guards_of(c.graph);
    EXPECT_TRUE(guards->specialized(guards->values()).empty()) << gr.name << ":\n" << size_guards_str(c.graph);
    bool takes_sizes = false;
    for (const codegen::GpuKernel &k : g.kernels) takes_sizes |= !k.sizes.empty();
    EXPECT_TRUE(takes_sizes) << gr.name << ": no kernel takes s0";
    fs::path work = root / gr.name;
    write_launch_plan(c.schedule, g, work.string());
    for (int64_t n : gr.sizes) {
      std::map<std::string, int64_t> values{{"s0", n}};
      Run r{gr.name + " at s0 = " + std::to_string(n), work / ("out_" + std::to_string(n) + ".safetensors"), {},
            ir::specialize(c.lowered, values)};
      TensorList in;
      uint32_t state = uint32_t(n);
      for (ir::BufferId b : r.program.inputs) {
        HostTensor t = HostTensor::zeros(DType::F32, r.program.buffer(b).type.sizes);
        float *f = t.ptr<float>();
        for (int64_t i = 0; i < t.numel(); ++i) f[i] = float((state = state * 1664525u + 1013904223u) >> 8) / float(1 << 24) * 4.0f - 2.0f;
        in.emplace_back(r.program.buffer(b).name, std::move(t));
      }
      fs::path inputs = work / ("in_" + std::to_string(n) + ".safetensors");
      write_safetensors(inputs.string(), in);
      r.want = ir::interpret(r.program, in);
      batch += std::string(batch.size() > 1 ? ",\n" : "\n") + "{\"plan\": \"" + (work / "launch_plan.json").string() +
               "\", \"inputs\": \"" + inputs.string() + "\", \"save\": \"" + r.save.string() + "\"}";
      runs.push_back(std::move(r));
    }
  }
#ifdef COIL_ASAN
  fs::remove_all(root);
  GTEST_SKIP() << runs.size() << " runs generated; the interpreter runs them in the g++ build";
#endif
  fs::path job = root / "batch.json";
  std::ofstream(job) << batch << "]\n";
  ProcessResult result = run_process({triton_python(), triton_helper_file("run_plan.py").string(), "--batch", job.string()});
  ASSERT_LE(result.exit_code, 1) << result.err;
  for (const Run &r : runs) {
    if (fs::exists(r.save.string() + ".error")) {
      ADD_FAILURE() << r.name << ": " << test::read_text(r.save.string() + ".error");
      continue;
    }
    TensorList got = read_safetensors(r.save.string());
    for (size_t i = 0; i < r.want.size(); ++i) {
      const HostTensor *have = find_tensor(got, output_tensor_name(i));
      ASSERT_TRUE(have) << r.name << ": no " << output_tensor_name(i);
      Tolerance tol = default_tolerance(r.want[i].dtype, ir::max_reduction_size(r.program, r.program.outputs[i]));
      Comparison cmp = compare(*have, r.want[i], tol);
      EXPECT_TRUE(cmp.pass) << r.name << " " << output_tensor_name(i) << ": " << cmp.mismatches << " mismatches, first "
                            << cmp.first_mismatch << ", max abs error " << cmp.max_abs_error << "\nkernels: " << r.save.parent_path();
    }
  }
  if (!HasFailure()) fs::remove_all(root);
}

// A variant of symbolic sizes that moves 2^16 elements or more comes in two: a twin that
// serves sizes which are all multiples of 16 and tells Triton so (its compile request marks
// them divisible by 16), and the variant serving the rest; smaller ones are left alone.
TEST(TritonPlan, LargeSymbolicVariantsHaveATwinForSizesOfMultiplesOf16) {
  const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[s0, s1][s1, 1]cpu"):
        s: "f32[s1][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [0])
        return (s,)
)";
  frontend::SizeValues hints{{"s0", 4096}, {"s1", 1024}};
  Compilation c = compile_graph(frontend::parse_graph(text, "by16.py", &hints), gpu_schedule(), "", CodegenSizes::Symbolic);
  const ir::Program &p = c.schedule.ir.program;
  ASSERT_EQ(c.schedule.ir.kernels.size(), 1u);
  const ir::Kernel &k = c.schedule.ir.kernels[0];
  std::vector<codegen::TritonVariant> buckets = codegen::plan_variants(p, k, {});
  std::vector<codegen::TritonVariant> vs = codegen::aligned_variants(p, k, buckets);
  int twins = 0;
  for (const codegen::TritonVariant &v : buckets) twins += v.extent.elements() >= (int64_t(1) << 16);
  ASSERT_GT(twins, 0) << codegen::plans_str(buckets);
  ASSERT_LT(twins, int(buckets.size())) << "a small bucket keeps one variant\n" << codegen::plans_str(buckets);
  ASSERT_EQ(vs.size(), buckets.size() + size_t(twins)) << codegen::plans_str(vs);
  for (auto [s0, s1] : {std::pair<int64_t, int64_t>{4096, 1024}, {4096, 1000}, {4100, 1024}, {8, 1024}, {3, 7}, {100000, 48}}) {
    SCOPED_TRACE("s0 = " + std::to_string(s0) + ", s1 = " + std::to_string(s1));
    std::map<std::string, int64_t> values{{"s0", s0}, {"s1", s1}};
    int serving = 0;
    for (const codegen::TritonVariant &v : vs) {
      if (!std::all_of(v.only_if.begin(), v.only_if.end(), [&](const SizeGuard &g) { return g.holds(values); })) continue;
      ++serving;
      if (v.plan.sizes_by_16) {
        EXPECT_TRUE(s0 % 16 == 0 && s1 % 16 == 0);
        EXPECT_TRUE(v.plan.variant.ends_with("by16")) << v.plan.variant;
      }
    }
    EXPECT_EQ(serving, 1);
  }
  // Each twin's kernels are compiled with the sizes divisible by 16; the others' are not.
  codegen::GpuProgram g = codegen::generate_triton(c.schedule);
  int marked = 0;
  for (const TritonCompileRequest &r : codegen::compile_requests(g)) {
    bool by16 = r.name.find("_by16") != std::string::npos;
    for (const char *s : {"s0", "s1"}) {
      if (std::none_of(r.signature.begin(), r.signature.end(), [&](const TritonArg &a) { return a.name == s; })) continue;
      bool divisible = std::find(r.divisible_by_16.begin(), r.divisible_by_16.end(), s) != r.divisible_by_16.end();
      EXPECT_EQ(divisible, by16) << r.name << " " << s;
    }
    marked += by16;
  }
  EXPECT_GE(marked, twins);
  EXPECT_NE(g.plans.find("s0 % 16 + s1 % 16 == 0"), std::string::npos) << g.plans;
}

// ---- every tuning candidate -----------------------------------------------------------------

// Every config the autotuner may pick, for each layout, generates kernels that compute the
// reference interpreter's result: the winner is never a config that was not checked.
// The host program of a symbolic compile at one call's sizes (codegen::at_sizes), as the
// GPU's runtime sets it up per size: integers everywhere, the variant of each reduction that
// serves the sizes, each extern call planned for its library there.
TEST(TritonCodegen, AProgramAtOneCallsSizesHoldsIntegersAndTheVariantThatServesThem) {
  const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, s0][s0, 1]cpu", a: "f32[s0, 32][32, 1]cpu", b: "f32[32, 24][24, 1]cpu"):
        s: "f32[4, s0][s0, 1]cpu" = torch.ops.aten._softmax.default(x, -1, False)
        mm: "f32[s0, 24][24, 1]cpu" = torch.ops.aten.mm.default(a, b)
        return (s, mm)
)";
  frontend::SizeValues hints{{"s0", 16}};
  Compilation c = compile_graph(frontend::parse_graph(text, "at_sizes.py", &hints), gpu_schedule(), "",
                                CodegenSizes::Symbolic);
  codegen::GpuProgram g = codegen::generate_triton(c.schedule);
  size_t variants = 0;
  for (const codegen::GpuStep &st : g.steps) variants += !st.only_if.empty();
  // The softmax's row by buckets: persistent in blocks of 16 (the hint's), 256 and 4096,
  // then looped, in two (where s0 is a multiple of 16, and where not); the product is an
  // extern call.
  ASSERT_EQ(variants, 5u) << g.plans;
  for (int64_t n : {9, 16, 17, 300, 5000, 8192}) {
    SCOPED_TRACE("s0 = " + std::to_string(n));
    std::map<std::string, int64_t> values{{"s0", n}};
    sched::Schedule at = c.schedule;
    sched::specialize(at, values);
    codegen::GpuProgram got = codegen::at_sizes(g, at, values);
    EXPECT_FALSE(got.arena_bytes.symbolic());
    for (const auto &[id, place] : got.places) EXPECT_FALSE(place.offset.symbolic()) << "buffer " << id;
    for (const auto &[id, elements] : got.scratch_elements) EXPECT_FALSE(elements.symbolic()) << "scratch " << id;
    int launches = 0, externs = 0;
    for (const codegen::GpuStep &st : got.steps) {
      EXPECT_TRUE(st.only_if.empty());
      if (st.kind == codegen::GpuStep::Kind::Extern) {
        ++externs;
        ASSERT_TRUE(st.extern_plan.has_value()) << st.schedule_kernel;
        continue;
      }
      ++launches;
      const codegen::GpuKernel &k = got.kernels[size_t(st.kernel)];
      for (const SymInt &n : k.grid) EXPECT_FALSE(n.symbolic()) << k.name;
      // The softmax's variant: the hint's plan (16) up to 16, persistent in 256 up to 256, looped above 4096.
      std::string want = n <= 16 ? "_upto16" : n <= 256 ? "_upto256" : n <= 4096 ? "_upto4096" : n % 16 ? "_above4096" : "_above4096_by16";
      EXPECT_TRUE(k.name.ends_with(want)) << k.name << "\n" << g.plans;
    }
    EXPECT_EQ(launches, 1);
    EXPECT_EQ(externs, 1);
  }
}

// A kernel of symbolic sizes is planned per size bucket: a pointwise kernel compiled at a
// few elements gets larger blocks for more, a reduction's row larger blocks then a loop; the
// buckets cover the symbol's range without overlap, the sizes compiled for keep the plan of
// a static compile, a kernel of numbers has one plan, and a config named for one variant
// plans that variant alone.
TEST(TritonPlan, SymbolicKernelsArePlannedPerSizeBucket) {
  const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[s0][1]cpu", y: "f32[4, s0][s0, 1]cpu", z: "f32[8, 32][32, 1]cpu"):
        a: "f32[s0][1]cpu" = torch.ops.aten.relu.default(x)
        s: "f32[4][1]cpu" = torch.ops.aten.sum.dim_IntList(y, [1])
        t: "f32[8][1]cpu" = torch.ops.aten.sum.dim_IntList(z, [1])
        return (a, s, t)
)";
  auto compile = [&](const frontend::SizeValues &hints) {
    return compile_graph(frontend::parse_graph(text, "buckets.py", &hints), gpu_schedule(), "", CodegenSizes::Symbolic);
  };
  Compilation c = compile({{"s0", 8}});
  const ir::Program &p = c.schedule.ir.program;
  std::map<std::string, std::vector<codegen::TritonVariant>> variants;
  for (const ir::Kernel &k : c.schedule.ir.kernels) variants[k.name] = codegen::plan_variants(p, k, {});
  ASSERT_EQ(variants.size(), 3u) << codegen::generate_triton(c.schedule).plans;
  int bucketed = 0;
  for (const ir::Kernel &k : c.schedule.ir.kernels) {
    SCOPED_TRACE(k.name);
    const std::vector<codegen::TritonVariant> &vs = variants.at(k.name);
    if (!checked_numel(k.ranges).symbolic() && !checked_numel(k.reduction_ranges).symbolic()) {
      ASSERT_EQ(vs.size(), 1u);  // the sum over [8, 32]
      EXPECT_TRUE(vs[0].only_if.empty());
      continue;
    }
    ++bucketed;
    ASSERT_GE(vs.size(), 2u);
    // Each size of s0's range is served by exactly one variant; the hint's plan is the one of
    // the kernel's unnamed variant, and larger sizes get blocks at least as large.
    int64_t last_block = 0;
    for (int64_t n : {2, 8, 9, 16, 17, 255, 256, 257, 4096, 5000, 70000, 3000000}) {
      std::map<std::string, int64_t> values{{"s0", n}};
      int serving = 0;
      for (const codegen::TritonVariant &v : vs) {
        if (!std::all_of(v.only_if.begin(), v.only_if.end(), [&](const SizeGuard &g) { return g.holds(values); })) continue;
        ++serving;
        EXPECT_FALSE(v.plan.variant.empty()) << "s0 = " << n;
        int64_t block = k.kind == ir::KernelKind::Reduction ? v.plan.block1 : v.plan.block0;
        if (v.plan.strategy == codegen::TritonStrategy::Persistent) {
          EXPECT_GE(block, n);
        }
        if (v.plan.strategy != codegen::TritonStrategy::Blocks && v.plan.strategy != codegen::TritonStrategy::Persistent)
          continue;  // a loop or a split past the persistent rows
        EXPECT_GE(block, last_block) << "s0 = " << n;
        last_block = block;
      }
      EXPECT_EQ(serving, 1) << "s0 = " << n;
    }
  }
  EXPECT_EQ(bucketed, 2);
  // At the hint the plan is a static compile's plan at those sizes.
  auto at_hint = [&](const std::vector<codegen::TritonVariant> &vs) {
    for (const codegen::TritonVariant &v : vs)
      if (std::all_of(v.only_if.begin(), v.only_if.end(), [](const SizeGuard &g) { return g.holds({{"s0", 8}}); }))
        return v.plan;
    throw std::runtime_error("no variant serves the hint");
  };
  const std::string static_text = std::regex_replace(text, std::regex("s0"), "8");
  Compilation fixed = compile_graph(frontend::parse_graph(static_text, "buckets_static.py"), gpu_schedule(), "");
  for (const ir::Kernel &k : fixed.schedule.ir.kernels) {
    codegen::TritonKernelPlan want = codegen::plan_triton_kernel(fixed.schedule.ir.program, k, {});
    codegen::TritonKernelPlan got = at_hint(variants.at(k.name));
    EXPECT_EQ(got.config(), want.config()) << k.name;
    EXPECT_EQ(got.strategy, want.strategy) << k.name;
  }
  // A config named for one variant plans that one alone.
  const ir::Kernel &pointwise = *std::find_if(c.schedule.ir.kernels.begin(), c.schedule.ir.kernels.end(),
                                              [](const ir::Kernel &k) { return k.kind == ir::KernelKind::Pointwise; });
  std::vector<codegen::TritonVariant> plain = variants.at(pointwise.name);
  const codegen::TritonVariant &top = plain.back();
  codegen::TritonOptions o;
  o.configs[pointwise.name + "_" + top.plan.variant] = codegen::TritonConfig{128, 0, 2, 1, 0};
  std::vector<codegen::TritonVariant> tuned = codegen::plan_variants(p, pointwise, o);
  ASSERT_EQ(tuned.size(), plain.size());
  for (size_t i = 0; i + 1 < tuned.size(); ++i) EXPECT_EQ(tuned[i].plan.config(), plain[i].plan.config());
  EXPECT_EQ(tuned.back().plan.block0, 128);
  EXPECT_EQ(tuned.back().plan.warps, 2);
  EXPECT_EQ(tuned.back().plan.variant, top.plan.variant);
  // kernel_plans.txt says where each variant runs.
  std::string plans = codegen::generate_triton(c.schedule).plans;
  EXPECT_NE(plans.find(pointwise.name + "_" + top.plan.variant), std::string::npos) << plans;
  EXPECT_NE(plans.find(" and "), std::string::npos) << plans;
}

TEST(TritonTuning, EveryCandidateMatchesTheReference) {
  auto graph = [](const std::string &params, const std::string &body, const std::string &outs) {
    return "class GraphModule(torch.nn.Module):\n    def forward(self, " + params + "):\n" + body + "        return (" + outs + ",)\n";
  };
  const std::map<std::string, std::string> graphs = {
      {"blocks", graph("x: \"f32[65536][1]cpu\"", "        a: \"f32[65536][1]cpu\" = torch.ops.aten.mul.Tensor(x, 2.0)\n"
                                                    "        b: \"f32[65536][1]cpu\" = torch.ops.aten.relu.default(a)\n", "b")},
      {"tiles", graph("x: \"f32[256, 256][256, 1]cpu\", y: \"f32[256, 256][256, 1]cpu\"",
                      "        t: \"f32[256, 256][1, 256]cpu\" = torch.ops.aten.permute.default(y, [1, 0])\n"
                      "        s: \"f32[256, 256][256, 1]cpu\" = torch.ops.aten.add.Tensor(x, t)\n", "s")},
      {"persistent", graph("x: \"f32[64, 1024][1024, 1]cpu\"",
                           "        s: \"f32[64, 1024][1024, 1]cpu\" = torch.ops.aten._softmax.default(x, -1, False)\n", "s")},
      {"looped", graph("x: \"f32[4, 32768][32768, 1]cpu\"",
                       "        s: \"f32[4][1]cpu\" = torch.ops.aten.sum.dim_IntList(x, [1])\n", "s")},
      {"split_rows", graph("x: \"f32[2, 65536][65536, 1]cpu\"",
                           "        s: \"f32[2][1]cpu\" = torch.ops.aten.amax.default(x, [1])\n", "s")},
      {"split_columns", graph("x: \"f32[1024, 256][256, 1]cpu\"",
                              "        s: \"f32[256][1]cpu\" = torch.ops.aten.sum.dim_IntList(x, [0])\n", "s")},
      {"split_stored", graph("x: \"f32[4096, 16][16, 1]cpu\"",
                             "        y: \"f32[4096, 16][16, 1]cpu\" = torch.ops.aten.mul.Tensor(x, 2.0)\n"
                             "        s: \"f32[16][1]cpu\" = torch.ops.aten.sum.dim_IntList(y, [0])\n", "y, s")},
      // A row value before the pass (batch norm's backward scales by one per channel): both
      // kernels of the split compute it, the second stores it.
      {"split_leading", graph("x: \"f32[4096, 16][16, 1]cpu\", w: \"f32[16][1]cpu\", b: \"f32[16][1]cpu\"",
                              "        s: \"f32[16][1]cpu\" = torch.ops.aten.mul.Tensor(w, b)\n"
                              "        y: \"f32[4096, 16][16, 1]cpu\" = torch.ops.aten.mul.Tensor(x, s)\n"
                              "        t: \"f32[16][1]cpu\" = torch.ops.aten.sum.dim_IntList(y, [0])\n", "s, t")},
      {"split_welford", graph("x: \"f32[4096, 16][16, 1]cpu\"",
                              "        v = torch.ops.aten.var_mean.correction(x, [0], correction = 1)\n"
                              "        a: \"f32[16][1]cpu\" = v[0]\n        b: \"f32[16][1]cpu\" = v[1]\n", "a, b")},
      {"columns", graph("x: \"f32[512, 256][256, 1]cpu\"",
                        "        v = torch.ops.aten.var_mean.correction(x, [0], correction = 1)\n"
                        "        a: \"f32[256][1]cpu\" = v[0]\n        b: \"f32[256][1]cpu\" = v[1]\n", "a, b")},
  };
  fs::path root = fs::temp_directory_path() / ("coil_tuning_" + std::to_string(::getpid()));
  fs::remove_all(root);
  struct Run {
    std::string name;
    fs::path work;
    const Compilation *compilation;
    const TensorList *inputs;
  };
  std::vector<std::unique_ptr<Compilation>> compilations;
  std::vector<std::unique_ptr<TensorList>> inputs;
  std::vector<Run> runs;
  std::string batch = "[";
  size_t configs_checked = 0;
  for (const auto &[name, text] : graphs) {
    compilations.push_back(std::make_unique<Compilation>(compile_graph(frontend::parse_graph(text, name + ".py"), gpu_schedule())));
    const Compilation &c = *compilations.back();
    auto in = std::make_unique<TensorList>();
    uint32_t state = 12345;
    for (ir::BufferId b : c.lowered.inputs) {
      HostTensor t = HostTensor::zeros(DType::F32, c.lowered.buffer(b).type.sizes);
      float *f = t.ptr<float>();
      for (int64_t i = 0; i < t.numel(); ++i) f[i] = float((state = state * 1664525u + 1013904223u) >> 8) / float(1 << 24) * 4.0f - 2.0f;
      in->emplace_back(c.lowered.buffer(b).name, std::move(t));
    }
    fs::path inputs_file = root / (name + "_inputs.safetensors");
    fs::create_directories(root);
    write_safetensors(inputs_file.string(), *in);
    const ir::Kernel *tuned = nullptr;
    for (const ir::Kernel &k : c.schedule.ir.kernels)
      if (codegen::tuning_configs(c.schedule, k.name).size() > 1) tuned = &k;
    ASSERT_TRUE(tuned) << name << ": no kernel with more than one config";
    std::vector<codegen::TritonConfig> configs = codegen::tuning_configs(c.schedule, tuned->name);
    std::set<std::string> generated;  // configs apart only in warps or stages run the same code here
    for (size_t i = 0; i < configs.size(); ++i) {
      codegen::TritonOptions o;
      o.configs[tuned->name] = configs[i];
      Run r{name + " " + configs[i].str(), root / (name + "_" + std::to_string(i)), &c, in.get()};
      codegen::GpuProgram g = codegen::generate_triton(c.schedule, o);
      std::string code;
      for (const codegen::GpuKernel &k : g.kernels)
        code += k.source + str_cat(k.grid[0], "x", k.grid[1], "x", k.grid[2], "\n");
      ++configs_checked;
      if (!generated.insert(code).second) continue;
      write_launch_plan(c.schedule, g, r.work.string());
      batch += std::string(batch.size() > 1 ? ",\n" : "\n") + "{\"plan\": \"" + (r.work / "launch_plan.json").string() +
               "\", \"inputs\": \"" + inputs_file.string() + "\", \"save\": \"" + (r.work / "outputs.safetensors").string() + "\"}";
      runs.push_back(r);
    }
    inputs.push_back(std::move(in));
  }
  fs::path job = root / "batch.json";
  std::ofstream(job) << batch << "]\n";
  ProcessResult result = run_process({triton_python(), triton_helper_file("run_plan.py").string(), "--batch", job.string()});
  ASSERT_LE(result.exit_code, 1) << result.err;
  for (const Run &r : runs) {
    if (fs::exists(r.work / "outputs.safetensors.error")) {
      ADD_FAILURE() << r.name << ": " << test::read_text(r.work / "outputs.safetensors.error");
      continue;
    }
    TensorList got = read_safetensors((r.work / "outputs.safetensors").string());
    std::vector<HostTensor> want = ir::interpret(r.compilation->lowered, *r.inputs);
    for (size_t i = 0; i < want.size(); ++i) {
      const HostTensor *have = find_tensor(got, output_tensor_name(i));
      ASSERT_TRUE(have) << r.name << ": no " << output_tensor_name(i);
      Tolerance tol = default_tolerance(want[i].dtype, ir::max_reduction_size(r.compilation->lowered, r.compilation->lowered.outputs[i]));
      Comparison cmp = compare(*have, want[i], tol);
      EXPECT_TRUE(cmp.pass) << r.name << " " << output_tensor_name(i) << ": " << cmp.mismatches << " mismatches, first "
                            << cmp.first_mismatch << ", max abs error " << cmp.max_abs_error << "\nkernels: " << r.work;
    }
  }
  std::cout << configs_checked << " configs over " << graphs.size() << " graphs checked under the interpreter, as "
            << runs.size() << " distinct programs\n";
  if (!HasFailure()) fs::remove_all(root);
}

// ---- every kernel to a cubin ---------------------------------------------------------------

TEST(TritonCompiler, EveryGeneratedKernelCompilesForSm90) {
  std::vector<fs::path> dirs = test::fixture_dirs();
  for (const fs::path &d : test::example_dirs()) dirs.push_back(d);
  std::vector<TritonCompileRequest> requests;
  // One request per distinct kernel: what Triton compiles, with the kernel's name and the
  // comments left out (the same code under two names compiles the same way).
  auto key_of = [](const TritonCompileRequest &r) {
    std::string key;
    std::istringstream lines(r.source);
    for (std::string line; std::getline(lines, line);) {
      if (size_t first = line.find_first_not_of(' '); first != std::string::npos && line[first] == '#') continue;
      for (size_t at = line.find(r.name); at != std::string::npos; at = line.find(r.name, at))
        line.replace(at, r.name.size(), "KERNEL");
      key += line + "\n";
    }
    key += str_cat(r.num_warps, " ", r.num_stages);
    for (const TritonArg &a : r.signature) key += " " + a.name + ":" + a.type;
    for (const auto &[name, value] : r.constexprs)
      key += " " + name + "=" + std::visit([](auto v) { return str_cat(v); }, value);
    for (const std::string &a : r.divisible_by_16) key += " " + a + "%16";
    return key;
  };
  std::set<std::string> seen;
  size_t kernels = 0;
  for (const fs::path &dir : dirs) {
    Compilation c = compile_graph(test::fixture_graph(dir), gpu_schedule());
    for (TritonCompileRequest &r : codegen::compile_requests(codegen::generate_triton(c.schedule))) {
      r.capability = 90;
      ++kernels;
      if (seen.insert(key_of(r)).second) requests.push_back(std::move(r));
    }
  }
  std::vector<TritonBinary> binaries;
  try {
    binaries = build_triton_kernels(requests);
  } catch (const UserError &e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(binaries.size(), requests.size());
  for (size_t i = 0; i < binaries.size(); ++i) {
    EXPECT_GT(binaries[i].cubin.size(), 0u) << requests[i].name << "\n" << requests[i].source;
  }
  std::cout << kernels << " kernels, " << binaries.size() << " distinct, compiled to cubins for sm_90\n";
}

}  // namespace
}  // namespace coil
