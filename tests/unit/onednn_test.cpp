// Extern calls through oneDNN, their epilogues as post-ops (src/codegen/cpp/cpp_extern.cpp,
// runtime/include/coil/onednn.h): fixtures of products and convolutions with the ops a
// library runs after them, compiled by the real compiler, run, and compared with PyTorch
// eager; each once through oneDNN and once as the plain loop (cpp.onednn off, as in a
// build without oneDNN). The layout line of each kernel says which library ran it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "codegen/cpp/cpp_extern.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "runtime/cpu_module.h"
#include "support/files.h"
#include "support/options.h"
#include "test_util.h"

namespace coil {
namespace {

std::filesystem::path fixture(const std::string &name) { return test::source_dir() / "tests" / "fixtures" / name; }

class OneDnn : public testing::Test {
 protected:
  void SetUp() override { options::clear_overrides(); }
  void TearDown() override { options::clear_overrides(); }

  // Compiles fixture `name`; the library of each extern kernel, in order.
  std::vector<std::string> compile(const std::string &name) {
    c_ = compile_graph(frontend::parse_graph_file((fixture(name) / "graph.py").string()), sched::ScheduleOptions{});
    std::vector<std::string> out;
    for (const ir::Kernel &k : c_.schedule.ir.kernels)
      if (k.kind == ir::KernelKind::Extern) out.push_back(codegen::extern_library(c_.schedule.ir.program, k));
    return out;
  }

  // Builds and runs the compiled fixture; every output within the testing tiers'
  // tolerance of eager's. The generated source, for the callers to look into.
  std::string run_and_compare(const std::string &name) {
    CpuBuild build = build_cpu(c_.schedule);
    TensorList inputs = read_safetensors((fixture(name) / "inputs.safetensors").string());
    std::vector<HostTensor> outputs = CpuModule(build.so_path).run(inputs);
    TensorList expected = read_safetensors((fixture(name) / "expected.safetensors").string());
    EXPECT_EQ(outputs.size(), c_.graph.outputs().size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const HostTensor *want = find_tensor(expected, output_tensor_name(i));
      if (!want) continue;
      Tolerance tol = default_tolerance(want->dtype, ir::max_reduction_size(c_.lowered, c_.lowered.outputs[i]));
      Comparison cmp = compare(outputs[i], *want, tol);
      EXPECT_TRUE(cmp.pass) << name << " " << output_tensor_name(i) << ": " << cmp.mismatches << " mismatches, first "
                            << cmp.first_mismatch << ", max abs error " << cmp.max_abs_error << "\n" << build.so_path;
    }
    return build.source;
  }

  // Skips a oneDNN expectation in a build of coil without it (then the plain-loop tests
  // below cover these fixtures).
  bool without_onednn(const std::vector<std::string> &libraries) {
    return !libraries.empty() && libraries[0] == "a plain loop (coil was built without oneDNN)";
  }

  // Compiles fixture `name` and runs it on 4 threads at once, 20 times each: every call
  // gives the bytes of a call alone.
  void expect_concurrent_calls_agree(const std::string &name) {
    compile(name);
    CpuModule module(build_cpu(c_.schedule).so_path);
    TensorList in = read_safetensors((fixture(name) / "inputs.safetensors").string());
    std::vector<HostTensor> first = module.run(in);
    std::vector<std::thread> threads;
    std::vector<int> differ(4, 0);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 20; ++i) {
          std::vector<HostTensor> out = module.run(in);
          for (size_t k = 0; k < out.size(); ++k)
            differ[size_t(t)] += std::memcmp(out[k].data.data(), first[k].data.data(), first[k].data.size()) != 0;
        }
      });
    for (auto &t : threads) t.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(differ[size_t(t)], 0) << name << ", thread " << t;
  }

  Compilation c_;
};

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST_F(OneDnn, AddmmRelu) {
  auto libraries = compile("op_addmm_relu");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{
                           "oneDNN matmul (post-ops: add a_0[1, 23], relu)",
                           "oneDNN matmul (scale 4, post-ops: add a_0[1, 23], linear(0.5, 0), relu)",
                       }));
  std::string source = run_and_compare("op_addmm_relu");
  EXPECT_TRUE(contains(source, "// layout: oneDNN matmul (post-ops: add a_0[1, 23], relu)")) << source;
  EXPECT_TRUE(contains(source, "coil_rt::onednn::eltwise(dnnl_eltwise_relu, 0.0f, 0.0f)}")) << source;
  EXPECT_EQ(c_.schedule.memory.arena_bytes, 0) << "the products never reach memory";
}

TEST_F(OneDnn, MmBiasGelu) {
  auto libraries = compile("op_mm_bias_gelu");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{
                           "oneDNN matmul (post-ops: add a_3[1, 29], gelu_erf)",
                           "oneDNN matmul (post-ops: add a_3[1, 29], gelu_tanh)",
                       }));
  run_and_compare("op_mm_bias_gelu");
}

// b.transpose(1, 2) is read in place: its strides are the weights' descriptor, no copy.
TEST_F(OneDnn, BmmWithATransposedOperand) {
  auto libraries = compile("op_bmm_transposed");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{"oneDNN matmul", "oneDNN matmul (post-ops: linear(0.125, 0), sigmoid)"}));
  EXPECT_EQ(c_.schedule.ir.kernels.size(), 2u) << sched::explain(c_.schedule);
  std::string source = run_and_compare("op_bmm_transposed");
  EXPECT_TRUE(contains(source, "{dnnl_f32, 3, {3, 17, 12}, {204, 1, 17}}")) << source;
}

// One weight expanded over the batch (stride 0, as nn.MultiheadAttention's projection
// exports): oneDNN takes the call. Given a stride of 0 on that batch dim of one it declined,
// and the plain loop ran a ViT's projections 30 times slower.
TEST_F(OneDnn, BmmOfABroadcastWeight) {
  auto libraries = compile("op_bmm_broadcast_weight");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{"oneDNN matmul"}));
  testing::internal::CaptureStderr();
  std::string source = run_and_compare("op_bmm_broadcast_weight");
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.find("declined"), std::string::npos) << said;
  EXPECT_TRUE(contains(source, "{dnnl_f32, 3, {1, 64, 192}, {12288, 1, 64}}")) << source;
}

TEST_F(OneDnn, ConvolutionBiasRelu) {
  auto libraries = compile("op_convolution_bias_relu");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{
                           "oneDNN convolution (post-ops: relu)",
                           "oneDNN convolution (post-ops: clip(0, 6))",
                           "oneDNN convolution (post-ops: silu)",
                       }));
  std::string source = run_and_compare("op_convolution_bias_relu");
  EXPECT_TRUE(contains(source, "static const coil_rt::onednn::Desc bias = {dnnl_f32, 1, {6}, {1}};")) << source;
}

// PyTorch leaves a convolution's output layout to the library it calls (on CUDA, cuDNN
// by its version and the dtype): a graph that states a dense layout for it gets that
// layout, here channels-last outputs of contiguous inputs, with eager's values.
TEST_F(OneDnn, ConvolutionOutputsInTheLayoutTheGraphStates) {
  std::string text = read_file((fixture("op_convolution") / "graph.py").string());
  for (auto [from, to] : {std::pair{"convolution: \"f32[2, 6, 9, 8][432, 72, 8, 1]cpu\"",
                                    "convolution: \"f32[2, 6, 9, 8][432, 1, 48, 6]cpu\""},
                          std::pair{"convolution_1: \"f32[2, 6, 4, 3][72, 12, 3, 1]cpu\"",
                                    "convolution_1: \"f32[2, 6, 4, 3][72, 1, 18, 6]cpu\""}}) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, std::strlen(from), to);
  }
  c_ = compile_graph(frontend::parse_graph(text, "convolution_nhwc.py"), sched::ScheduleOptions{});
  EXPECT_EQ(c_.graph.type(c_.graph.outputs()[0]).strides, (Shape{432, 1, 48, 6}));
  EXPECT_EQ(c_.graph.type(c_.graph.outputs()[1]).strides, (Shape{72, 1, 18, 6}));
  EXPECT_EQ(c_.graph.type(c_.graph.outputs()[2]).strides, (Shape{432, 72, 8, 1}));
  run_and_compare("op_convolution");
  options::set_override("cpp.onednn", "0");
  c_ = compile_graph(frontend::parse_graph(text, "convolution_nhwc.py"), sched::ScheduleOptions{});
  run_and_compare("op_convolution");
}

TEST_F(OneDnn, EveryKindOfPostOp) {
  auto libraries = compile("op_mm_epilogues");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{
                           "oneDNN matmul (post-ops: tanh)",
                           "oneDNN matmul (post-ops: sigmoid)",
                           "oneDNN matmul (post-ops: silu)",
                           "oneDNN matmul (post-ops: hardswish)",
                           "oneDNN matmul (post-ops: relu(0.1))",
                           "oneDNN matmul (post-ops: elu(1))",
                           "oneDNN matmul (post-ops: linear(0.25, 0), exp)",
                           "oneDNN matmul (post-ops: clip(-0.5, 0.75))",
                           "oneDNN matmul (post-ops: sub a_1[9, 13], linear(3, 0))",
                           "oneDNN matmul (post-ops: div a_2[9, 1])",
                           "oneDNN matmul (post-ops: linear(-0.5, 1))",
                           "oneDNN matmul (post-ops: mul a_1[9, 13], linear(1, 1), relu)",
                       }));
  run_and_compare("op_mm_epilogues");
}

// Convolutions on few channels, which oneDNN runs fast only in blocked layouts
// (coil/onednn.h reorders into and out of them): a ResNet stem (3 -> 8 channels, 7x7,
// stride 2) with bias and relu, the same on a channels-last input, and a 3x3 with a
// residual add as a binary post-op, its operand in the caller's layout.
TEST_F(OneDnn, FewChannelConvolutionsInBlockedLayouts) {
  auto libraries = compile("op_convolution_few_channels");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  EXPECT_EQ(libraries, (std::vector<std::string>{
                           "oneDNN convolution (post-ops: relu)",
                           "oneDNN convolution (post-ops: clip(0, 6))",
                           "oneDNN convolution (post-ops: add a_7[2, 16, 9, 7], relu)",
                       }));
  std::string source = run_and_compare("op_convolution_few_channels");
  EXPECT_TRUE(contains(source, "{dnnl_f32, 4, {8, 3, 7, 7}, {147, 49, 7, 1}}")) << "plain weights: " << source;
}

// A 1x1 convolution whose input and result hold their channels innermost runs as a
// oneDNN matmul on the tensors where they are (ConvolutionAsProduct in cpp_extern.cpp),
// not as a convolution that reorders its weights on every call: with bias and relu, strided
// with a residual add (the rows a batch of products), on transposed weights, in bf16, and a
// transposed convolution at stride 1 (a convolution's input gradient). A 1-d convolution
// whose result is channels-first, a grouped one, a channels-first one and a transposed one
// at stride 2 stay convolutions. Both ways match eager.
TEST_F(OneDnn, OneByOneConvolutionsAsProducts) {
  auto libraries = compile("op_convolution_1x1");
  if (without_onednn(libraries)) GTEST_SKIP() << "coil was built without oneDNN";
  std::string product = "oneDNN matmul, the 1x1 convolution as a product of its pixels by the weights";
  EXPECT_EQ(libraries, (std::vector<std::string>{
                           product + " plus the bias (post-ops: relu)",
                           product + " (post-ops: add a_3[6, 3, 24], relu)",
                           "oneDNN convolution",
                           product,
                           product + " plus the bias",
                           "oneDNN convolution",
                           "oneDNN convolution",
                           "oneDNN matmul, the 1x1 transposed convolution as a product of its pixels by the weights",
                           "oneDNN transposed convolution",
                       }));
  std::string source = run_and_compare("op_convolution_1x1");
  // N, H and W of a stride-1 convolution are one dim of rows; a strided one's are 6 batches of 3.
  EXPECT_TRUE(contains(source, "{dnnl_f32, 2, {60, 16}, {16, 1}}")) << source;
  EXPECT_TRUE(contains(source, "{dnnl_f32, 3, {6, 3, 16}, {160, 32, 1}}")) << source;
  options::set_override("cpp.conv1x1_as_matmul", "0");
  libraries = compile("op_convolution_1x1");
  EXPECT_EQ(std::count(libraries.begin(), libraries.end(), "oneDNN convolution (post-ops: relu)"), 1);
  EXPECT_FALSE(contains(run_and_compare("op_convolution_1x1"), "product.run")) << "the option turns products off";
}

// The blocked copies of src, weights and dst belong to the calling thread: concurrent
// calls of one module give the same bytes as a call alone.
TEST_F(OneDnn, ConcurrentCallsInBlockedLayouts) { expect_concurrent_calls_agree("op_convolution_few_channels"); }

// What oneDNN does not take runs as the plain loop, and the layout line says why.
TEST_F(OneDnn, ExactReasonsForPlainLoops) {
  auto mm = compile("op_mm");
  if (without_onednn(mm)) GTEST_SKIP() << "coil was built without oneDNN";
  ASSERT_EQ(mm.size(), 8u);
  EXPECT_EQ(mm[3], "a plain loop (the product sums over no element)");
  EXPECT_EQ(mm[5], "a plain loop (oneDNN has no f64 matmul)");
  EXPECT_EQ(mm[6], "a plain loop (oneDNN 2 has no f16 matmul on the CPU)");
  EXPECT_EQ(mm[7], "oneDNN matmul") << "bf16";
  run_and_compare("op_mm");
  auto conv = compile("op_convolution_more");
  ASSERT_EQ(conv.size(), 6u);
  EXPECT_EQ(conv[2], "oneDNN transposed convolution") << "output padding 1 within padding 1";
  EXPECT_EQ(conv[4], "a plain loop (oneDNN has no f64 convolution)");
  EXPECT_EQ(conv[5], "oneDNN convolution") << "bf16";
  run_and_compare("op_convolution_more");
  options::set_override("cpp.onednn", "false");
  EXPECT_EQ(compile("op_mm")[0], "a plain loop (cpp.onednn is off)");
}

// Without oneDNN the epilogue runs in the plain loop, on each element before its store.
TEST_F(OneDnn, PlainLoopsRunTheEpilogue) {
  options::set_override("cpp.onednn", "false");
  for (const char *name : {"op_addmm_relu", "op_mm_bias_gelu", "op_bmm_transposed", "op_convolution_bias_relu",
                           "op_mm_epilogues", "op_addmm", "op_baddbmm", "op_convolution"}) {
    auto libraries = compile(name);
    for (const std::string &l : libraries) EXPECT_EQ(l.rfind("a plain loop (", 0), 0u) << name << ": " << l;
    std::string source = run_and_compare(name);
    EXPECT_FALSE(contains(source, "coil_rt::onednn::")) << name;
  }
  EXPECT_EQ(compile("op_addmm_relu")[0].substr(std::string("a plain loop (").size()),
            "cpp.onednn is off), post-ops in the loop: relu");
}

// Products under extern.align_product_rows=always (on the GPU, auto does this for large
// matrices): operands read through copies with rows padded to 16 bytes, results written
// with padded rows, through oneDNN and the plain loops alike, every output as eager's. On
// the CPU, auto pads nothing.
TEST_F(OneDnn, ProductsWithRowsPaddedForTheLibrary) {
  auto padded_results = [&] {
    int n = 0;
    for (const ir::Node &node : c_.lowered.nodes) n += node.attrs.count("aligned_rows") > 0;
    return n;
  };
  const char *names[] = {"op_mm", "op_addmm", "op_bmm", "op_baddbmm", "op_mm_epilogues", "op_matmul_linear"};
  for (const char *onednn : {"true", "false"}) {
    options::clear_overrides();
    options::set_override("cpp.onednn", onednn);
    options::set_override("extern.align_product_rows", "always");
    int padded = 0;
    for (const char *name : names) {
      compile(name);
      padded += padded_results();
      run_and_compare(name);
    }
    EXPECT_GT(padded, 10) << "onednn " << onednn;
  }
  options::clear_overrides();
  for (const char *name : names) {
    compile(name);
    EXPECT_EQ(padded_results(), 0) << name;
  }
}

// Concurrent calls of one module share its primitives (coil/artifact.h: calls are safe).
TEST_F(OneDnn, ConcurrentCallsOnOneModule) { expect_concurrent_calls_agree("op_mm_epilogues"); }

}  // namespace
}  // namespace coil
