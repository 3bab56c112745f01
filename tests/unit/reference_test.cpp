// The reference interpreter against PyTorch eager: every fixture and example is lowered
// to the loop IR and run twice, one node at a time and as the scheduler's fused kernels
// (with the interpreter checking that no kernel reads a value its loop would not have at
// hand), and compared with eager's outputs using the tolerances of the testing tiers
// (src/io/compare.h), never loosened here.
#include <gtest/gtest.h>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "ir/kernel.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "ir/interpreter.h"
#include "lowering/lowering.h"
#include "test_util.h"

namespace coil {
namespace {

class Reference : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(Reference, MatchesEager) {
  const auto dir = GetParam();
  Graph g = test::fixture_graph(dir);
  TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
  TensorList expected = read_safetensors((dir / "expected.safetensors").string());
  size_t outputs_expected = g.outputs().size();
  Compilation compiled = compile_graph(g, sched::ScheduleOptions{});
  const ir::Program &p = compiled.lowered;
  for (const char *how : {"node by node", "fused"}) {
    SCOPED_TRACE(how);
    std::vector<HostTensor> outputs = std::string(how) == "fused" ? ir::interpret(compiled.schedule.ir, inputs)
                                                                  : ir::interpret(ir::unfused(p), inputs);
    ASSERT_EQ(outputs.size(), outputs_expected);
    test::expect_outputs_match(outputs, expected, p);
  }
}

// The weight gradients of the convolution fixtures as the GPU lowers them (one call per
// gradient, cuDNN's backward-filter pass there), run by the interpreter here: the same
// graphs on cuda, against eager's outputs on the CPU. The GPU check runs the calls on cuDNN.
TEST(ReferenceOnCuda, ConvolutionWeightGradientCallsMatchEager) {
  for (const char *name : {"op_convolution_backward", "op_convolution_backward_1x1"}) {
    SCOPED_TRACE(name);
    std::filesystem::path dir = test::source_dir() / "tests" / "fixtures" / name;
    std::string text = test::read_text(dir / "graph.py");
    for (size_t at = 0; (at = text.find("]cpu\"", at)) != std::string::npos;) text.replace(at, 5, "]cuda:0\""), at += 8;
    Graph g = frontend::parse_graph(text, (dir / "graph.py").string());
    TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
    TensorList expected = read_safetensors((dir / "expected.safetensors").string());
    Compilation compiled = compile_graph(g, sched::ScheduleOptions{});
    const ir::Program &p = compiled.lowered;
    int calls = 0;
    for (const ir::Node &n : p.nodes) calls += n.attrs.count("weight_grad") && n.attrs.at("weight_grad")[0];
    EXPECT_GT(calls, 0) << "no weight gradient was lowered as a call";
    std::vector<HostTensor> outputs = ir::interpret(ir::unfused(p), inputs);
    ASSERT_EQ(outputs.size(), g.outputs().size());
    test::expect_outputs_match(outputs, expected, p);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Reference, testing::ValuesIn(test::fixture_dirs()),
                         [](const auto &info) { return info.param.filename().string(); });
INSTANTIATE_TEST_SUITE_P(Examples, Reference, testing::ValuesIn(test::example_dirs()),
                         [](const auto &info) { return info.param.filename().string(); });

}  // namespace
}  // namespace coil
