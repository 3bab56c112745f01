// The plan of an extern call on the GPU (matrix products, convolutions), made at compile
// time from the graph alone, without a GPU: which library runs it and how. The executor
// (runtime/cuda_extern.h) prepares each plan once when a program is loaded (handles,
// descriptors, the algorithm, the workspace) and only calls the library per call; where
// the library a plan wants is missing on the machine that runs it, the call runs on the
// host's loops instead, and `--explain` says so.
//
// Products: one cublasGemmStridedBatchedEx. Row-major C = A @ B is the column-major
// product C^T = B^T A^T, so a row-major output needs no copy; each operand needs a unit
// stride in one of its two matrix dims, the other being its leading dimension. f32 runs in
// full precision (no TF32, as PyTorch's default), f16 and bf16 with f32 accumulation, f64
// in f64. A bias (addmm, baddbmm, addmv) is first broadcast into the output by GEMMs with
// one inner element against a vector of ones (a copy that is exact: one product by 1),
// then the product adds to it with beta. beta = 0 never reads the bias, NaNs included.
//
// Products with an epilogue (gpu_epilogue.h): one cublasLtMatmul with the epilogue (bias,
// relu, gelu_tanh), writing the epilogue's output; otherwise the product as above into a
// buffer of its own and the post-ops on the host, with the reason.
//
// Convolutions: cuDNN's convolution API, 1 to 3 spatial dims (1 as 2 with a unit height),
// input and output described by their strides (NHWC where both are channels-last), the
// weight a packed cuDNN filter in NCHW or NHWC order (NHWC tensors pick NHWC when the
// weight is packed both ways, as a 1x1 weight is), groups, dilation; the bias added
// after by cudnnAddTensor; a transposed convolution is cuDNN's backward-data pass, and a
// weight gradient (attr weight_grad: operands x and dy, the output dw) its backward-filter
// pass, dw packed in the tensors' order. f32 without TF32. The algorithm and its workspace
// are decided when the program is loaded.
//
// Tests: tests/unit/cuda_extern_test.cpp (the plans, any machine), tests/gpu/extern_test.cpp
// and tests/gpu/program_test.cpp (run on a GPU).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/loop_ir.h"
#include "scheduler/epilogue.h"

namespace coil::codegen {

/// Who runs an extern call.
enum class GpuExternLibrary : uint8_t {
  Nothing,            // the output has no elements: nothing runs
  CublasGemm,         // cublasGemmStridedBatchedEx (and GEMMs broadcasting the bias)
  CublasLt,           // cublasLtMatmul with an epilogue
  CudnnForward,       // cudnnConvolutionForward
  CudnnBackwardData,  // cudnnConvolutionBackwardData (a transposed convolution)
  CudnnBackwardFilter,  // cudnnConvolutionBackwardFilter (a convolution's weight gradient)
  HostLoops,          // coil's plain loops on the host (runtime/include/coil/extern_loops.h)
};

/// cuBLASLt's epilogues that coil uses.
enum class LtEpilogue : uint8_t { None, Relu, Bias, ReluBias, Gelu, GeluBias };

/// "bias+relu": what an epilogue adds to the product.
std::string_view lt_epilogue_name(LtEpilogue e);

/// One matrix operand of a GEMM, column-major as cuBLAS reads it: a buffer at an element
/// offset (buffer -1: the vector of ones), transposed or not, its leading dimension and
/// the elements between batches.
struct GemmOperand {
  ir::BufferId buffer = -1;
  int64_t offset = 0;
  bool transposed = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

/// C = alpha * op(A) op(B) + beta * C over `batches`, in cuBLAS's column-major terms.
struct GemmCall {
  int64_t m = 0, n = 0, k = 0, batches = 1;
  GemmOperand a, b, c;
  double alpha = 1, beta = 0;
};

/// A product as GEMMs.
struct GemmPlan {
  std::vector<GemmCall> bias_copy;    // run first: the bias broadcast into the output
  GemmCall product;
  int64_t ones = 0;                   // elements of the vector of ones the calls read
  std::vector<int64_t> bias_strides;  // the bias over the output's dims (0: broadcast)
  bool swapped = false;               // computed as C^T = B^T A^T (a row-major output)
};

/// A cuDNN tensor's memory order.
enum class TensorFormat : uint8_t { NCHW, NHWC };

/// A convolution as cuDNN sees it: 4 or 5 dims (a 1-d convolution gains a unit height).
struct ConvPlan {
  bool transposed = false;
  /// The weight's gradient: x is the input, y the output's gradient (both read), w the
  /// gradient written (never repacked).
  bool weight_grad = false;
  bool bias = false;
  int groups = 1;
  TensorFormat filter = TensorFormat::NCHW;  // the filter's order as cuDNN reads it: the tensors'
  TensorFormat tensors = TensorFormat::NCHW;  // NHWC when the input and output both are channels-last
  /// The weight is packed in the other order than the tensors' (cuDNN refuses the mix for
  /// bf16 and f16): each call first writes it in the filter's order into the call's
  /// workspace (cudnnTransformTensor), as PyTorch's eager call makes it contiguous.
  bool repack_filter = false;
  /// The filter's packed strides in cuDNN's dims, in the filter's order (the backend API's
  /// filter tensor, and the repacking's destination); with repack_filter, also the weight's
  /// as it is given (the repacking's source).
  std::vector<int> w_strides, w_given_strides;
  std::vector<int> x_sizes, x_strides, w_sizes, y_sizes, y_strides, padding, stride, dilation;
  std::vector<int> bias_sizes, bias_strides;  // 1 x C x 1 x 1 (x 1), broadcast over the output
};

/// The plan of one extern call on the GPU.
struct GpuExternPlan {
  GpuExternLibrary library = GpuExternLibrary::HostLoops;
  std::string host_reason;  // HostLoops: why no library takes the call
  DType dtype = DType::F32;
  GemmPlan gemm;            // CublasGemm, CublasLt
  ConvPlan conv;            // CudnnForward, CudnnBackwardData, CudnnBackwardFilter
  /// With an epilogue fused onto the call: cuBLASLt's (library CublasLt), else the reason
  /// it runs on the host after the product, which then writes a buffer of its own.
  bool has_epilogue = false;
  std::string epilogue_host_reason;
  LtEpilogue lt_epilogue = LtEpilogue::None;
  std::optional<ir::View> lt_bias;  // the bias vector cuBLASLt adds
  /// Device scratch the call needs, in bytes; -1 when decided at load (cuDNN's algorithm).
  int64_t workspace_bytes = 0;

  /// What runs the call, in words, as if every library were present: "cuBLAS
  /// cublasGemmStridedBatchedEx (f32, TF32 off)", "cuDNN convolution forward (NHWC, bf16,
  /// f32 accumulation), the bias by cudnnAddTensor", "host loops: <why>", ...
  std::string words() const;
  /// Every field, one line each after the first (indented), for kernel_plans.txt.
  std::string str() const;
  bool on_host() const { return library == GpuExternLibrary::HostLoops; }
};

/// The plan of extern node `n` of `p`, with the epilogue fused onto it (null: none).
/// Never throws on a call no library takes: that is a HostLoops plan with the reason.
GpuExternPlan plan_gpu_extern(const ir::Program &p, const ir::Node &n, const sched::Epilogue *epilogue = nullptr);

/// The matmul family (mm, bmm, mv, addmm, baddbmm, addmv) as batches of (rows x inner) @
/// (inner x cols), as coil/extern_loops.h sees it: the operands, alpha, and beta (0
/// without a bias).
struct ProductShape {
  const ir::View *a, *b, *bias;
  bool batched, vector;
  int64_t batches, rows, inner, cols;
  double alpha, beta;
};
ProductShape product_shape(const ir::Node &n);

/// "f32, TF32 off", "bf16, f32 accumulation", "f64".
std::string precision_words(DType t);

}  // namespace coil::codegen
