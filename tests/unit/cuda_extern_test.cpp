// Who runs an extern call on the GPU, planned from the node alone at compile time
// (codegen/gpu/extern_plan.h): cuBLAS for products whose views it can read, with their
// transposes, leading dims and batch strides; cuBLASLt for epilogues; cuDNN for
// convolutions, NHWC where the tensors are channels-last; the host loops otherwise with the
// reason. Runs on any machine: the plans need no library, the words with this machine's
// libraries are checked to be clean refusals where they are missing, and generate_triton
// is checked to keep each plan in the host program and kernel_plans.txt. The calls running
// on a GPU: tests/gpu/extern_test.cpp, tests/gpu/program_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/gpu/extern_plan.h"
#include "codegen/gpu/gpu_epilogue.h"
#include "codegen/triton/triton_codegen.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "runtime/cuda_blaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_extern.h"
#include "support/error.h"
#include "test_util.h"

namespace coil::cuda {
namespace {
using ir::BufferId;
using ir::View;
using test::user_error_of;

// A program of input buffers and one extern node writing a contiguous output.
struct Call {
  ir::Program program;

  BufferId buffer(DType t, Shape sizes, Shape strides = {}) {
    if (strides.empty()) strides = contiguous_strides(sizes);
    ir::Buffer b;
    b.name = "buf" + std::to_string(program.buffers.size());
    b.kind = ir::Buffer::Kind::Input;
    b.type = TensorType{t, sizes, strides, {}};
    return program.add_buffer(b);
  }
  // The whole of buffer `b` as a view.
  View whole(BufferId b) const {
    const TensorType &t = program.buffer(b).type;
    return View{b, t.sizes, t.strides, 0};
  }
  const ir::Node &node(ir::ExternOp op, std::vector<View> operands, DType out_type, Shape out_sizes,
                       std::map<std::string, std::vector<int64_t>> attrs = {},
                       std::map<std::string, double> scalars = {}) {
    ir::Node n;
    n.kind = ir::NodeKind::Extern;
    n.extern_op = op;
    n.origin = "node0";
    n.operands = std::move(operands);
    n.attrs = std::move(attrs);
    n.scalars = std::move(scalars);
    n.ranges = out_sizes;
    n.outputs = {buffer(out_type, out_sizes)};
    program.buffers[size_t(n.outputs[0])].kind = ir::Buffer::Kind::Computed;
    program.nodes.push_back(n);
    return program.nodes.back();
  }
  std::string library() const { return gpu_extern_library(program, program.nodes.back(), true); }
  codegen::GpuExternPlan plan(const sched::Epilogue *e = nullptr) const {
    return codegen::plan_gpu_extern(program, program.nodes.back(), e);
  }
};

std::map<std::string, std::vector<int64_t>> conv_attrs(int64_t groups, bool transposed, size_t spatial = 2) {
  return {{"stride", std::vector<int64_t>(spatial, 1)},   {"padding", std::vector<int64_t>(spatial, 1)},
          {"dilation", std::vector<int64_t>(spatial, 1)}, {"output_padding", std::vector<int64_t>(spatial, 0)},
          {"groups", {groups}},                           {"transposed", {transposed ? 1 : 0}}};
}

TEST(CudaExternLibrary, ContiguousProductsGoToCublas) {
  Call mm;
  BufferId a = mm.buffer(DType::F32, {8, 16}), b = mm.buffer(DType::F32, {16, 4});
  mm.node(ir::ExternOp::Mm, {mm.whole(a), mm.whole(b)}, DType::F32, {8, 4});
  EXPECT_EQ(mm.library(), "cuBLAS cublasGemmStridedBatchedEx (f32, TF32 off)");

  Call bmm;
  a = bmm.buffer(DType::BF16, {3, 8, 16}), b = bmm.buffer(DType::BF16, {3, 16, 4});
  bmm.node(ir::ExternOp::Bmm, {bmm.whole(a), bmm.whole(b)}, DType::BF16, {3, 8, 4});
  EXPECT_EQ(bmm.library(), "cuBLAS cublasGemmStridedBatchedEx (bf16, f32 accumulation)");

  Call mv;
  a = mv.buffer(DType::F16, {8, 16}), b = mv.buffer(DType::F16, {16});
  mv.node(ir::ExternOp::Mv, {mv.whole(a), mv.whole(b)}, DType::F16, {8});
  EXPECT_EQ(mv.library(), "cuBLAS cublasGemmStridedBatchedEx (f16, f32 accumulation)");
}

TEST(CudaExternLibrary, ATransposedWeightStaysAView) {
  // linear's weight: a [4, 16] buffer read as its [16, 4] transpose.
  Call c;
  BufferId x = c.buffer(DType::F32, {8, 16}), w = c.buffer(DType::F32, {4, 16});
  c.node(ir::ExternOp::Mm, {c.whole(x), View{w, {16, 4}, {1, 16}, 0}}, DType::F32, {8, 4});
  EXPECT_EQ(c.library(), "cuBLAS cublasGemmStridedBatchedEx (f32, TF32 off)");

  // Both operands transposed, and a batch broadcast (stride 0) over the second.
  Call d;
  BufferId a = d.buffer(DType::F64, {2, 16, 8}), b = d.buffer(DType::F64, {4, 16});
  d.node(ir::ExternOp::Bmm, {View{a, {2, 8, 16}, {128, 1, 8}, 0}, View{b, {2, 16, 4}, {0, 1, 16}, 0}}, DType::F64,
         {2, 8, 4});
  EXPECT_EQ(d.library(), "cuBLAS cublasGemmStridedBatchedEx (f64)");
}

TEST(CudaExternLibrary, AViewWithNoUnitStrideRunsOnTheHost) {
  Call c;
  BufferId a = c.buffer(DType::F32, {8, 32}), b = c.buffer(DType::F32, {16, 4});
  c.node(ir::ExternOp::Mm, {View{a, {8, 16}, {32, 2}, 0}, c.whole(b)}, DType::F32, {8, 4});
  EXPECT_EQ(c.library(),
            "host loops: the first operand has strides [32, 2]: cuBLAS needs a unit stride in one matrix dim");

  // A matrix dim repeated (stride 0) has no leading dimension either.
  Call d;
  a = d.buffer(DType::F32, {8, 16}), b = d.buffer(DType::F32, {16});
  d.node(ir::ExternOp::Mm, {d.whole(a), View{b, {16, 4}, {1, 0}, 0}}, DType::F32, {8, 4});
  EXPECT_EQ(d.library(),
            "host loops: the second operand has strides [1, 0]: cuBLAS needs a unit stride in one matrix dim");
}

TEST(CudaExternLibrary, IntegersAndMixedDtypesRunOnTheHost) {
  Call c;
  BufferId a = c.buffer(DType::I64, {8, 16}), b = c.buffer(DType::I64, {16, 4});
  c.node(ir::ExternOp::Mm, {c.whole(a), c.whole(b)}, DType::I64, {8, 4});
  EXPECT_EQ(c.library(), "host loops: cuBLAS has no i64 matrix product");

  Call d;
  a = d.buffer(DType::F32, {8, 16}), b = d.buffer(DType::BF16, {16, 4});
  d.node(ir::ExternOp::Mm, {d.whole(a), d.whole(b)}, DType::F32, {8, 4});
  EXPECT_EQ(d.library(), "host loops: its operands are f32 and bf16: cuBLAS takes one dtype");

  Call e;  // nothing to sum over: the output is the bias alone, which the loops write
  a = e.buffer(DType::F32, {8, 0}), b = e.buffer(DType::F32, {0, 4});
  e.node(ir::ExternOp::Mm, {e.whole(a), e.whole(b)}, DType::F32, {8, 4});
  EXPECT_EQ(e.library(), "host loops: the product sums over no element");
}

// A bias vector along the rows added once is cuBLASLt's bias epilogue; any other bias is
// broadcast into the output by cuBLAS before the product adds to it.
TEST(CudaExternLibrary, ABiasIsCublasLtsOrBroadcastByCublas) {
  Call c;  // nn.Linear: a bias per column
  BufferId bias = c.buffer(DType::F32, {4}), x = c.buffer(DType::F32, {8, 16}), w = c.buffer(DType::F32, {4, 16});
  c.node(ir::ExternOp::Addmm, {View{bias, {4}, {1}, 0}, c.whole(x), View{w, {16, 4}, {1, 16}, 0}}, DType::F32, {8, 4},
         {}, {{"alpha", 1}, {"beta", 1}});
  EXPECT_EQ(c.library(), "cuBLASLt cublasLtMatmul with epilogue bias (f32, TF32 off)");

  Call scaled;  // the same bias scaled by beta: cuBLASLt's epilogue adds it as it is
  bias = scaled.buffer(DType::F32, {4}), x = scaled.buffer(DType::F32, {8, 16}), w = scaled.buffer(DType::F32, {4, 16});
  scaled.node(ir::ExternOp::Addmm, {View{bias, {4}, {1}, 0}, scaled.whole(x), View{w, {16, 4}, {1, 16}, 0}},
              DType::F32, {8, 4}, {}, {{"alpha", 1}, {"beta", 0.5}});
  EXPECT_EQ(scaled.library(), "cuBLAS cublasGemmStridedBatchedEx (f32, TF32 off), the bias broadcast by a GEMM with a "
                              "vector of ones");

  Call zero;  // beta = 0: the bias is never read
  bias = zero.buffer(DType::F32, {4}), x = zero.buffer(DType::F32, {8, 16}), w = zero.buffer(DType::F32, {16, 4});
  zero.node(ir::ExternOp::Addmm, {zero.whole(bias), zero.whole(x), zero.whole(w)}, DType::F32, {8, 4}, {},
            {{"alpha", 2}, {"beta", 0}});
  EXPECT_EQ(zero.library(), "cuBLAS cublasGemmStridedBatchedEx (f32, TF32 off)");

  Call full;  // a bias per element of every batch, transposed in each matrix: column by column, per batch
  bias = full.buffer(DType::F16, {2, 4, 8});
  BufferId b1 = full.buffer(DType::F16, {2, 8, 16}), b2 = full.buffer(DType::F16, {2, 16, 4});
  full.node(ir::ExternOp::Baddbmm, {View{bias, {2, 8, 4}, {32, 1, 8}, 0}, full.whole(b1), full.whole(b2)}, DType::F16,
            {2, 8, 4}, {}, {{"alpha", 1}, {"beta", 0.5}});
  EXPECT_EQ(full.library(), "cuBLAS cublasGemmStridedBatchedEx (f16, f32 accumulation), the bias broadcast by GEMMs "
                            "with a vector of ones");
}

TEST(CudaExternLibrary, ConvolutionsGoToCudnn) {
  Call c;
  BufferId x = c.buffer(DType::F32, {2, 4, 9, 9}), w = c.buffer(DType::F32, {6, 2, 3, 3}), b = c.buffer(DType::F32, {6});
  c.node(ir::ExternOp::Convolution, {c.whole(x), c.whole(w), c.whole(b)}, DType::F32, {2, 6, 9, 9}, conv_attrs(2, false));
  EXPECT_EQ(c.library(), "cuDNN convolution forward (NCHW, f32, TF32 off), the bias by cudnnAddTensor");

  Call t;  // transposed, no bias, 1-d
  x = t.buffer(DType::BF16, {2, 4, 9}), w = t.buffer(DType::BF16, {4, 3, 3});
  t.node(ir::ExternOp::Convolution, {t.whole(x), t.whole(w), View{}}, DType::BF16, {2, 3, 9}, conv_attrs(1, true, 1));
  EXPECT_EQ(t.library(), "cuDNN convolution backward data, as a transposed convolution (NCHW, bf16, f32 accumulation)");
}

// A convolution's weight gradient (attr weight_grad: operands x and dy, output dw) is
// cuDNN's backward-filter pass, dw written in the tensors' order.
TEST(CudaExternLibrary, WeightGradientsGoToCudnnBackwardFilter) {
  auto attrs = conv_attrs(2, false);
  attrs["weight_grad"] = {1};
  Call c;
  BufferId x = c.buffer(DType::F32, {2, 4, 9, 9}), dy = c.buffer(DType::F32, {2, 6, 9, 9});
  c.node(ir::ExternOp::Convolution, {c.whole(x), c.whole(dy)}, DType::F32, {6, 2, 3, 3}, attrs);
  EXPECT_EQ(c.library(), "cuDNN convolution backward filter, the weight's gradient (NCHW, f32, TF32 off)");
  codegen::GpuExternPlan plan = c.plan();
  EXPECT_EQ(plan.library, codegen::GpuExternLibrary::CudnnBackwardFilter);
  EXPECT_NE(plan.str().find("w [6, 2, 3, 3] NCHW (written), dy [2, 6, 9, 9][486, 81, 9, 1]"), std::string::npos)
      << plan.str();

  // Channels last: x and dy in NHWC, dw too; dw in NCHW is refused (cuDNN writes the
  // filter in the tensors' order), and the host loops run it.
  attrs = conv_attrs(1, false);
  attrs["weight_grad"] = {1};
  for (bool nhwc_dw : {true, false}) {
    Call l;
    x = l.buffer(DType::BF16, {2, 4, 9, 9}, {324, 1, 36, 4}), dy = l.buffer(DType::BF16, {2, 6, 9, 9}, {486, 1, 54, 6});
    const ir::Node &n = l.node(ir::ExternOp::Convolution, {l.whole(x), l.whole(dy)}, DType::BF16, {6, 4, 3, 3}, attrs);
    if (nhwc_dw) l.program.buffers[size_t(n.outputs[0])].type.strides = {36, 1, 12, 4};
    EXPECT_EQ(l.library(), nhwc_dw ? "cuDNN convolution backward filter, the weight's gradient (NHWC, bf16, f32 accumulation)"
                                   : "host loops: the weight's gradient is packed in NCHW order, the tensors in NHWC: "
                                     "cuDNN writes a filter in the tensors' order");
  }
}

TEST(CudaExternLibrary, AStridedWeightOrIntegersRunOnTheHost) {
  Call c;  // the weight a permuted view: a cuDNN filter has no strides
  BufferId x = c.buffer(DType::F32, {2, 4, 9, 9}), w = c.buffer(DType::F32, {4, 6, 3, 3});
  c.node(ir::ExternOp::Convolution, {c.whole(x), View{w, {6, 4, 3, 3}, {9, 54, 3, 1}, 0}, View{}}, DType::F32,
         {2, 6, 9, 9}, conv_attrs(1, false));
  EXPECT_EQ(c.library(), "host loops: the weight has strides [9, 54, 3, 1]: a cuDNN filter is packed, in NCHW or NHWC order");

  Call i;
  x = i.buffer(DType::I32, {2, 4, 9, 9}), w = i.buffer(DType::I32, {6, 4, 3, 3});
  i.node(ir::ExternOp::Convolution, {i.whole(x), i.whole(w), View{}}, DType::I32, {2, 6, 9, 9}, conv_attrs(1, false));
  EXPECT_EQ(i.library(), "host loops: cuDNN has no i32 convolution");
}

TEST(CudaExternLibrary, WithoutTheLibrariesTheHostLoopsSayWhy) {
  Call c;
  BufferId a = c.buffer(DType::F32, {8, 16}), b = c.buffer(DType::F32, {16, 4});
  const ir::Node &n = c.node(ir::ExternOp::Mm, {c.whole(a), c.whole(b)}, DType::F32, {8, 4});
  if (cublas_available()) {
    EXPECT_EQ(cublas_unavailable_reason(), "");
    EXPECT_EQ(gpu_extern_library(c.program, n), c.library());
  } else {
    std::string reason = cublas_unavailable_reason();
    EXPECT_NE(reason.find("libcublas.so.13, libcublas.so.12 and libcublas.so cannot be loaded ("), std::string::npos)
        << reason;
    EXPECT_NE(reason.find("): no cuBLAS on this machine"), std::string::npos) << reason;
    EXPECT_EQ(gpu_extern_library(c.program, n), "host loops: " + reason);
    EXPECT_FALSE(cublas_available()) << "the answer does not change";
  }
  if (!cudnn_available()) {
    std::string reason = cudnn_unavailable_reason();
    EXPECT_NE(reason.find("libcudnn.so.9 and libcudnn.so cannot be loaded ("), std::string::npos) << reason;
    EXPECT_NE(reason.find("no cuDNN on this machine"), std::string::npos) << reason;
  }
  // The node's own reason comes first: it holds wherever the call runs.
  Call i;
  a = i.buffer(DType::I32, {8, 16}), b = i.buffer(DType::I32, {16, 4});
  const ir::Node &m = i.node(ir::ExternOp::Mm, {i.whole(a), i.whole(b)}, DType::I32, {8, 4});
  EXPECT_EQ(gpu_extern_library(i.program, m), "host loops: cuBLAS has no i32 matrix product");
}

// Epilogues fused onto products (gpu_epilogue.h): cuBLASLt takes a bias vector along the
// last dim and then relu or gelu_tanh; anything else names why, and with no cuBLASLt the
// post-ops run on the host after the product.
TEST(CudaExternLibrary, EpiloguesGoToCublasLt) {
  Call c;
  BufferId a = c.buffer(DType::F32, {8, 16}), b = c.buffer(DType::F32, {16, 4}), bias = c.buffer(DType::F32, {4});
  BufferId out = c.buffer(DType::F32, {8, 4});
  const ir::Node &n = c.node(ir::ExternOp::Mm, {c.whole(a), c.whole(b)}, DType::F32, {8, 4});
  auto words = [&](std::vector<sched::PostOp> ops, bool assume = true) {
    sched::Epilogue e{std::move(ops), c.whole(out)};
    return gpu_extern_library(c.program, n, &e, assume);
  };
  sched::PostOp add{sched::PostOpKind::Add, 0, 0, View{bias, {8, 4}, {0, 1}, 0}};
  sched::PostOp relu{sched::PostOpKind::Relu, 0, 0, {}};
  sched::PostOp gelu_tanh{sched::PostOpKind::GeluTanh, 0, 0, {}};
  EXPECT_EQ(words({add, relu}), "cuBLASLt cublasLtMatmul with epilogue bias+relu (f32, TF32 off)");
  EXPECT_EQ(words({add, gelu_tanh}), "cuBLASLt cublasLtMatmul with epilogue bias+gelu (f32, TF32 off)");
  EXPECT_EQ(words({add}), "cuBLASLt cublasLtMatmul with epilogue bias (f32, TF32 off)");
  EXPECT_EQ(words({relu}), "cuBLASLt cublasLtMatmul with epilogue relu (f32, TF32 off)");
  sched::PostOp leaky{sched::PostOpKind::Relu, 0.1, 0, {}};
  EXPECT_EQ(words({add, leaky}),
            "host loops for the epilogue (cuBLASLt's relu has no negative slope); the product: cuBLAS "
            "cublasGemmStridedBatchedEx (f32, TF32 off)");
  sched::PostOp gelu_erf{sched::PostOpKind::GeluErf, 0, 0, {}};
  EXPECT_NE(words({gelu_erf}).find("cuBLASLt has no gelu_erf epilogue"), std::string::npos) << words({gelu_erf});
  sched::PostOp full{sched::PostOpKind::Add, 0, 0, View{out, {8, 4}, {4, 1}, 0}};
  EXPECT_NE(words({full}).find("not a vector along the last dim"), std::string::npos) << words({full});
  EXPECT_EQ(codegen::cublaslt_epilogue_problem(c.program, n, sched::Epilogue{{relu, add}, c.whole(out)}),
            "cuBLASLt runs one bias and one activation; add follows them");
  if (!cublaslt_available()) {
    std::string reason = cublaslt_unavailable_reason();
    EXPECT_NE(reason.find("libcublasLt.so.13, libcublasLt.so.12 and libcublasLt.so cannot be loaded"), std::string::npos)
        << reason;
    EXPECT_EQ(words({add, relu}, false).rfind("host loops for the epilogue (" + reason + "); the product: ", 0), 0u)
        << words({add, relu}, false);
  }
}

TEST(CudaExternLibrary, RunningWithoutAGpuSaysWhy) {
  if (available()) GTEST_SKIP() << "this machine has a GPU; tests/gpu/extern_test.cpp covers it";
  Call c;
  BufferId a = c.buffer(DType::F32, {8, 16}), b = c.buffer(DType::F32, {16, 4});
  const ir::Node &n = c.node(ir::ExternOp::Mm, {c.whole(a), c.whole(b)}, DType::F32, {8, 4});
  EXPECT_EQ(user_error_of([&] { run_gpu_extern(c.program, n, [](BufferId) { return CUdeviceptr(0); }, nullptr); }),
            unavailable_reason());
}

// ---- the plans' fields ------------------------------------------------------------------------

using codegen::GpuExternLibrary;
using codegen::TensorFormat;

TEST(GpuExternPlan, LinearsTransposedWeightIsReadTransposed) {
  // x [8, 16] @ w^T, w a [4, 16] buffer: row-major C is computed as C^T = w x^T, column-major.
  Call c;
  BufferId x = c.buffer(DType::F32, {8, 16}), w = c.buffer(DType::F32, {4, 16});
  c.node(ir::ExternOp::Mm, {c.whole(x), View{w, {16, 4}, {1, 16}, 0}}, DType::F32, {8, 4});
  codegen::GpuExternPlan p = c.plan();
  ASSERT_EQ(p.library, GpuExternLibrary::CublasGemm) << p.words();
  EXPECT_TRUE(p.gemm.swapped);
  const codegen::GemmCall &g = p.gemm.product;
  EXPECT_EQ(std::vector<int64_t>({g.m, g.n, g.k, g.batches}), std::vector<int64_t>({4, 8, 16, 1}));
  EXPECT_EQ(g.a.buffer, w);
  EXPECT_TRUE(g.a.transposed);  // the weight as it is stored, no copy
  EXPECT_EQ(g.a.ld, 16);
  EXPECT_EQ(g.b.buffer, x);
  EXPECT_FALSE(g.b.transposed);
  EXPECT_EQ(g.b.ld, 16);
  EXPECT_EQ(g.c.buffer, c.program.nodes.back().outputs[0]);
  EXPECT_EQ(g.c.ld, 4);
  EXPECT_TRUE(p.gemm.bias_copy.empty());
  EXPECT_EQ(p.workspace_bytes, 0);
  EXPECT_NE(p.str().find(str_cat("gemm m=4 n=8 k=16 batches=1 alpha=1 beta=0; A b", w, "+0 T ld=16 batch_stride=0")),
            std::string::npos)
      << p.str();
}

TEST(GpuExternPlan, BatchStridesAndTheBiasBroadcast) {
  Call c;  // baddbmm: a bias per column of each batch, added with beta 1 (not cuBLASLt's: a vector per batch)
  BufferId bias = c.buffer(DType::BF16, {3, 1, 9}), a = c.buffer(DType::BF16, {3, 17, 32}), b = c.buffer(DType::BF16, {3, 32, 9});
  c.node(ir::ExternOp::Baddbmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::BF16, {3, 17, 9}, {},
         {{"alpha", 1}, {"beta", 1}});
  codegen::GpuExternPlan p = c.plan();
  ASSERT_EQ(p.library, GpuExternLibrary::CublasGemm) << p.words();
  EXPECT_EQ(p.dtype, DType::BF16);
  const codegen::GemmCall &g = p.gemm.product;
  EXPECT_EQ(g.batches, 3);
  EXPECT_EQ(g.a.batch_stride, 32 * 9);   // b, first in the swapped product
  EXPECT_EQ(g.b.batch_stride, 17 * 32);  // a
  EXPECT_EQ(g.c.batch_stride, 17 * 9);
  EXPECT_EQ(g.beta, 1);
  ASSERT_EQ(p.gemm.bias_copy.size(), 1u);
  const codegen::GemmCall &copy = p.gemm.bias_copy[0];
  EXPECT_EQ(copy.k, 1);
  EXPECT_EQ(copy.beta, 0);
  EXPECT_EQ(copy.a.buffer, bias);
  EXPECT_EQ(copy.b.buffer, -1);  // the vector of ones
  EXPECT_EQ(p.gemm.ones, 17);
}

// A linear over a 3-d input as bmm with an expanded weight: the batches share the second
// operand and the first's rows run on from one batch to the next, so the product is one
// GEMM over every row. A bias per batch row runs on too; the folded product checks that.
TEST(GpuExternPlan, BatchesSharingTheSecondOperandAreOneGemm) {
  Call c;
  BufferId x = c.buffer(DType::BF16, {5, 6, 16}), w = c.buffer(DType::BF16, {16, 24});
  c.node(ir::ExternOp::Bmm, {c.whole(x), View{w, {5, 16, 24}, {0, 24, 1}, 0}}, DType::BF16, {5, 6, 24});
  codegen::GpuExternPlan p = c.plan();
  ASSERT_EQ(p.library, GpuExternLibrary::CublasGemm) << p.words();
  const codegen::GemmCall &g = p.gemm.product;
  EXPECT_EQ(std::vector<int64_t>({g.m, g.n, g.k, g.batches}), std::vector<int64_t>({24, 30, 16, 1}));
  EXPECT_EQ(g.b.ld, 16);   // x, its 30 rows of 16
  EXPECT_EQ(g.c.ld, 24);

  Call apart;  // the first operand's batches are not one after the other: one GEMM per batch
  x = apart.buffer(DType::BF16, {5, 8, 16}), w = apart.buffer(DType::BF16, {16, 24});
  apart.node(ir::ExternOp::Bmm, {View{x, {5, 6, 16}, {128, 16, 1}, 0}, View{w, {5, 16, 24}, {0, 24, 1}, 0}},
             DType::BF16, {5, 6, 24});
  EXPECT_EQ(apart.plan().gemm.product.batches, 5);

  Call seq_first;  // [L, N, E] as a transposed [N, L, E] (attention's in-projection): batches over N
  x = seq_first.buffer(DType::BF16, {4, 9, 16}), w = seq_first.buffer(DType::BF16, {16, 24});
  seq_first.node(ir::ExternOp::Bmm, {View{x, {9, 4, 16}, {16, 144, 1}, 0}, View{w, {9, 16, 24}, {0, 24, 1}, 0}},
                 DType::BF16, {9, 4, 24});
  const codegen::GemmCall &e = seq_first.plan().gemm.product;
  EXPECT_EQ(std::vector<int64_t>({e.m, e.n, e.k, e.batches}), std::vector<int64_t>({24, 9, 16, 4}));
  EXPECT_EQ(std::vector<int64_t>({e.b.ld, e.b.batch_stride, e.c.ld, e.c.batch_stride}),
            std::vector<int64_t>({16, 144, 96, 24}));

  Call shared;  // a different second operand per batch
  x = shared.buffer(DType::BF16, {5, 6, 16}), w = shared.buffer(DType::BF16, {5, 16, 24});
  shared.node(ir::ExternOp::Bmm, {shared.whole(x), shared.whole(w)}, DType::BF16, {5, 6, 24});
  EXPECT_EQ(shared.plan().gemm.product.batches, 5);
}

TEST(GpuExternPlan, ConvolutionsOfChannelsLastTensorsRunInNhwc) {
  auto conv = [](Shape x_strides, Shape w_sizes, Shape w_strides, Shape y_strides) {
    Call c;
    BufferId x = c.buffer(DType::F32, {2, 16, 10, 10}, x_strides), w = c.buffer(DType::F32, w_sizes, w_strides);
    auto attrs = conv_attrs(1, false);
    if (w_sizes[2] == 1) attrs["padding"] = {0, 0};
    c.node(ir::ExternOp::Convolution, {c.whole(x), c.whole(w), View{}}, DType::F32, {2, 32, 10, 10}, attrs);
    c.program.buffers[size_t(c.program.nodes.back().outputs[0])].type.strides = y_strides;
    return c.plan();
  };
  Shape nhwc_x = {1600, 1, 160, 16}, nhwc_y = {3200, 1, 320, 32}, nchw_x = {1600, 100, 10, 1}, nchw_y = {3200, 100, 10, 1};
  // A 1x1 weight is packed both ways: it takes the input's order.
  codegen::GpuExternPlan one = conv(nhwc_x, {32, 16, 1, 1}, {16, 1, 1, 1}, nhwc_y);
  ASSERT_EQ(one.library, GpuExternLibrary::CudnnForward) << one.words();
  EXPECT_EQ(one.conv.tensors, TensorFormat::NHWC);
  EXPECT_EQ(one.conv.filter, TensorFormat::NHWC);
  EXPECT_EQ(one.words(), "cuDNN convolution forward (NHWC, f32, TF32 off)");
  EXPECT_EQ(one.conv.x_strides, std::vector<int>({1600, 1, 160, 16}));
  EXPECT_EQ(one.workspace_bytes, -1);
  EXPECT_NE(one.str().find("workspace: decided at load"), std::string::npos) << one.str();
  codegen::GpuExternPlan contiguous = conv(nchw_x, {32, 16, 1, 1}, {16, 1, 1, 1}, nchw_y);
  EXPECT_EQ(contiguous.words(), "cuDNN convolution forward (NCHW, f32, TF32 off)");
  // A channels-last input written to a contiguous output: cuDNN's NCHW, the input by its strides.
  EXPECT_EQ(conv(nhwc_x, {32, 16, 1, 1}, {16, 1, 1, 1}, nchw_y).words(), "cuDNN convolution forward (NCHW, f32, TF32 off)");
  // The filter is read in the tensors' order: a 3x3 weight packed the other way is
  // repacked per call (cuDNN refuses the mix in bf16, as ResNet-50's exported graph has it).
  EXPECT_EQ(conv(nhwc_x, {32, 16, 3, 3}, {144, 1, 48, 16}, nhwc_y).words(), "cuDNN convolution forward (NHWC, f32, TF32 off)");
  codegen::GpuExternPlan repacked = conv(nhwc_x, {32, 16, 3, 3}, {144, 9, 3, 1}, nhwc_y);
  EXPECT_TRUE(repacked.conv.repack_filter);
  EXPECT_EQ(repacked.conv.filter, TensorFormat::NHWC);
  EXPECT_EQ(repacked.conv.w_given_strides, std::vector<int>({144, 9, 3, 1}));
  EXPECT_EQ(repacked.conv.w_strides, std::vector<int>({144, 1, 48, 16}));
  EXPECT_EQ(repacked.words(),
            "cuDNN convolution forward (NHWC, f32, TF32 off), the weight repacked to NHWC by cudnnTransformTensor");
  EXPECT_NE(repacked.str().find("w [32, 16, 3, 3] NCHW repacked to NHWC"), std::string::npos) << repacked.str();
  codegen::GpuExternPlan to_nchw = conv(nchw_x, {32, 16, 3, 3}, {144, 1, 48, 16}, nchw_y);
  EXPECT_TRUE(to_nchw.conv.repack_filter);
  EXPECT_EQ(to_nchw.conv.filter, TensorFormat::NCHW);
  EXPECT_FALSE(conv(nchw_x, {32, 16, 3, 3}, {144, 9, 3, 1}, nchw_y).conv.repack_filter);
}

TEST(GpuExternPlan, AnEpilogueWritesWhereItStores) {
  Call c;
  BufferId a = c.buffer(DType::F16, {8, 16}), b = c.buffer(DType::F16, {16, 4}), bias = c.buffer(DType::F16, {4});
  BufferId out = c.buffer(DType::F16, {8, 4});
  c.node(ir::ExternOp::Mm, {c.whole(a), c.whole(b)}, DType::F16, {8, 4});
  sched::PostOp add{sched::PostOpKind::Add, 0, 0, View{bias, {8, 4}, {0, 1}, 0}};
  sched::PostOp gelu{sched::PostOpKind::GeluTanh, 0, 0, {}};
  sched::Epilogue e{{add, gelu}, c.whole(out)};
  codegen::GpuExternPlan p = c.plan(&e);
  ASSERT_EQ(p.library, GpuExternLibrary::CublasLt) << p.words();
  EXPECT_EQ(p.lt_epilogue, codegen::LtEpilogue::GeluBias);
  ASSERT_TRUE(p.lt_bias.has_value());
  EXPECT_EQ(p.lt_bias->buffer, bias);
  EXPECT_EQ(p.gemm.product.c.buffer, out);  // the call's own output is never stored
  EXPECT_EQ(p.workspace_bytes, int64_t(32) << 20);
  // Refused by cuBLASLt: the product as planned alone, the post-ops on the host, with why.
  sched::PostOp erf{sched::PostOpKind::GeluErf, 0, 0, {}};
  sched::Epilogue exact{{erf}, c.whole(out)};
  codegen::GpuExternPlan q = c.plan(&exact);
  EXPECT_EQ(q.library, GpuExternLibrary::CublasGemm);
  EXPECT_EQ(q.gemm.product.c.buffer, c.program.nodes.back().outputs[0]);
  EXPECT_NE(q.epilogue_host_reason.find("cuBLASLt has no gelu_erf epilogue"), std::string::npos) << q.epilogue_host_reason;
}

// generate_triton plans every extern step once and keeps the plan in the host program and
// in kernel_plans.txt (what --explain and the runtime read).
TEST(GpuExternPlan, TheHostProgramKeepsThePlans) {
  const char *text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 16, 10, 10][1600, 1, 160, 16]cpu", w: "f32[32, 16, 1, 1][16, 1, 16, 16]cpu", y: "f32[20, 40][40, 1]cpu", fw: "f32[24, 40][40, 1]cpu", fb: "f32[24][1]cpu"):
        convolution: "f32[2, 32, 10, 10][3200, 1, 320, 32]cpu" = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        t: "f32[40, 24][1, 40]cpu" = torch.ops.aten.t.default(fw)
        addmm: "f32[20, 24][24, 1]cpu" = torch.ops.aten.addmm.default(fb, y, t)
        relu: "f32[20, 24][24, 1]cpu" = torch.ops.aten.relu.default(addmm)
        return (convolution, relu)
)";
  Compilation c = compile_graph(frontend::parse_graph(text, "plans.py"), codegen::gpu_schedule_options(sched::ScheduleOptions{}));
  codegen::GpuProgram g = codegen::generate_triton(c.schedule);
  std::vector<std::string> words;
  for (const codegen::GpuStep &st : g.steps) {
    if (st.kind != codegen::GpuStep::Kind::Extern) continue;
    ASSERT_TRUE(st.extern_plan.has_value()) << st.schedule_kernel;
    words.push_back(st.extern_plan->words());
    EXPECT_NE(g.plans.find(st.schedule_kernel + "  " + std::string(ir::extern_op_name(
                                                             c.schedule.ir.program.nodes[size_t(st.node)].extern_op)) +
                           "  " + words.back()),
              std::string::npos)
        << g.plans;
  }
  EXPECT_EQ(words, std::vector<std::string>({"cuDNN convolution forward (NHWC, f32, TF32 off)",
                                             "cuBLASLt cublasLtMatmul with epilogue bias+relu (f32, TF32 off)"}));
  EXPECT_NE(g.plans.find("# The GPU's extern calls"), std::string::npos) << g.plans;
}

// A bf16 product whose dims are not multiples of 8 (a language-model head over 30,522 words)
// runs on zero-padded copies where its arithmetic outweighs them: in training, 4,096 tokens;
// at inference over 128 tokens the weight's copy would cost more than the slow kernel loses,
// and only the result's rows are padded (extern.align_product_rows).
TEST(GpuExternPlan, ProductsOfUnalignedDimsRunPadded) {
  auto plans = [](int64_t tokens) {
    std::string text = str_cat(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "bf16[)", tokens, R"(, 768][768, 1]cuda:0", w: "bf16[30522, 768][768, 1]cuda:0", b: "bf16[30522][1]cuda:0"):
        t: "bf16[768, 30522][1, 768]cuda:0" = torch.ops.aten.t.default(w)
        addmm: "bf16[)", tokens, R"(, 30522][30522, 1]cuda:0" = torch.ops.aten.addmm.default(b, x, t)
        return (addmm,)
)");
    Compilation c = compile_graph(frontend::parse_graph(text, "head.py"), codegen::gpu_schedule_options(sched::ScheduleOptions{}));
    return codegen::generate_triton(c.schedule).plans;
  };
  std::string training = plans(4096);
  EXPECT_NE(training.find("gemm m=30528 n=4096 k=768 batches=1 alpha=1 beta=0; A b"), std::string::npos) << training;
  EXPECT_NE(training.find("N ld=30528 batch_stride=0\n    bias vector: b"), std::string::npos) << training;
  std::string inference = plans(128);
  EXPECT_NE(inference.find("gemm m=30522 n=128 k=768"), std::string::npos) << inference;
  EXPECT_NE(inference.find("N ld=30528 batch_stride=0"), std::string::npos) << inference;  // rows still aligned
}

}  // namespace
}  // namespace coil::cuda
