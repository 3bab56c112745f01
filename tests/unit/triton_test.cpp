// The Triton dialect without a GPU: golden files of the seed's kernels; every fixture and
// example run under Triton's interpreter (python/coil_triton/run_plan.py, many plans per
// process) and compared with PyTorch eager with the tolerances of the testing tiers; every
// generated kernel compiled to a cubin for sm_90 by Triton's own compiler.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>

#include "codegen/triton/triton_codegen.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "runtime/compiler.h"
#include "runtime/triton_build.h"
#include "runtime/triton_interpret.h"
#include "test_util.h"

namespace coil {
namespace {

namespace fs = std::filesystem;

sched::ScheduleOptions gpu_schedule() {
  sched::ScheduleOptions o;
  o.extern_epilogues = false;
  return o;
}

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
  Compilation c = compile_graph(frontend::parse_graph_file((dir / "graph.py").string()), gpu_schedule());
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
}

// ---- every fixture under the interpreter ---------------------------------------------------

struct Case {
  fs::path dir;
  Compilation compilation;
  fs::path work;
};

TEST(TritonInterpreter, EveryFixtureAndExampleMatchesEager) {
  std::vector<fs::path> dirs = test::fixture_dirs();
  for (const fs::path &d : test::example_dirs()) dirs.push_back(d);
  auto exceptions = interpreter_exceptions();
  fs::path root = fs::temp_directory_path() / ("coil_interpret_" + std::to_string(::getpid()));
  fs::remove_all(root);
  std::vector<Case> cases;
  // Two batches, one per core, each a list of {plan, inputs, save}.
  std::vector<std::string> batches(2, "[");
  for (const fs::path &dir : dirs) {
    std::string name = dir.parent_path().filename().string() + "_" + dir.filename().string();
    if (exceptions.count(dir.filename().string())) continue;
    Case c{dir, compile_graph(frontend::parse_graph_file((dir / "graph.py").string()), gpu_schedule()), root / name};
    write_launch_plan(c.compilation.schedule, codegen::generate_triton(c.compilation.schedule), c.work.string());
    std::string &batch = batches[cases.size() % 2];
    batch += std::string(batch.size() > 1 ? ",\n" : "\n") + "{\"plan\": \"" + (c.work / "launch_plan.json").string() +
             "\", \"inputs\": \"" + (dir / "inputs.safetensors").string() + "\", \"save\": \"" +
             (c.work / "outputs.safetensors").string() + "\"}";
    cases.push_back(std::move(c));
  }
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
    TensorList expected = read_safetensors((c.dir / "expected.safetensors").string());
    const ir::Program &lowered = c.compilation.lowered;
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

// ---- every kernel to a cubin ---------------------------------------------------------------

TEST(TritonCompiler, EveryGeneratedKernelCompilesForSm90) {
  std::vector<fs::path> dirs = test::fixture_dirs();
  for (const fs::path &d : test::example_dirs()) dirs.push_back(d);
  std::vector<TritonCompileRequest> requests;
  std::set<std::string> seen;  // one request per distinct kernel
  for (const fs::path &dir : dirs) {
    Compilation c = compile_graph(frontend::parse_graph_file((dir / "graph.py").string()), gpu_schedule());
    for (TritonCompileRequest &r : codegen::compile_requests(codegen::generate_triton(c.schedule))) {
      r.capability = 90;
      std::string key = r.source + std::to_string(r.num_warps);
      if (seen.insert(key).second) requests.push_back(std::move(r));
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
  std::cout << binaries.size() << " distinct kernels compiled to cubins for sm_90\n";
}

}  // namespace
}  // namespace coil
