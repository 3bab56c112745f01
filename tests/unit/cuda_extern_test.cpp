// Who runs an extern call on the GPU, decided from the node alone: cuBLAS for products
// whose views it can read, cuDNN for convolutions, the host loops otherwise with the reason.
// Runs on any machine: the decisions are asked as if the libraries were loadable, and the
// loaders' own answers are checked to be clean refusals where they are missing. The calls
// running on a GPU: tests/gpu/extern_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/gpu/gpu_epilogue.h"
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

TEST(CudaExternLibrary, ABiasIsBroadcastByCublas) {
  Call c;  // nn.Linear: a bias per column
  BufferId bias = c.buffer(DType::F32, {4}), x = c.buffer(DType::F32, {8, 16}), w = c.buffer(DType::F32, {4, 16});
  c.node(ir::ExternOp::Addmm, {View{bias, {4}, {1}, 0}, c.whole(x), View{w, {16, 4}, {1, 16}, 0}}, DType::F32, {8, 4},
         {}, {{"alpha", 1}, {"beta", 1}});
  EXPECT_EQ(c.library(), "cuBLAS cublasGemmStridedBatchedEx (f32, TF32 off), the bias broadcast by a GEMM with a "
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

}  // namespace
}  // namespace coil::cuda
