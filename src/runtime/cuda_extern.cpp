#include "runtime/cuda_extern.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

// The plain loops are the kernels' own; without -fopenmp their pragmas are ignored and
// the fallback runs on one thread.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "coil/extern_loops.h"
#pragma GCC diagnostic pop
#include "codegen/triton/gpu_epilogue.h"
#include "io/host_tensor.h"
#include "runtime/cuda_blaslt.h"
#include "runtime/library_loader.h"

// The libraries' opaque handles, declared as their headers declare them.
struct cublasContext;
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;

namespace coil::cuda {
namespace {

using ir::BufferId;
using ir::Node;
using ir::Program;
using ir::View;

// ---- cuBLAS: the few declarations coil uses, with cublas_api.h's and library_types.h's values

using cublasHandle_t = cublasContext *;
using cublasStatus_t = int;
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr int CUBLAS_OP_N = 0;
constexpr int CUBLAS_OP_T = 1;
// cudaDataType_t
constexpr int CUDA_R_32F = 0;
constexpr int CUDA_R_64F = 1;
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;
// cublasComputeType_t: plain 32F never rounds inputs to TF32 (that is CUBLAS_COMPUTE_32F_FAST_TF32).
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_COMPUTE_64F = 70;
constexpr int CUBLAS_GEMM_DEFAULT = -1;

struct Cublas {
  cublasStatus_t (*cublasCreate)(cublasHandle_t *handle);
  cublasStatus_t (*cublasDestroy)(cublasHandle_t handle);
  cublasStatus_t (*cublasSetStream)(cublasHandle_t handle, CUstream stream);
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                                               const void *alpha, const void *a, int a_type, int lda,
                                               long long stride_a, const void *b, int b_type, int ldb,
                                               long long stride_b, const void *beta, void *c, int c_type, int ldc,
                                               long long stride_c, int batch_count, int compute_type, int algo);
  // Optional (cuBLAS 11.4+): null when the library lacks it.
  const char *(*cublasGetStatusName)(cublasStatus_t status);
};

// ---- cuDNN: the legacy convolution API, with cudnn_graph.h's and cudnn_cnn.h's values -------

using cudnnHandle_t = cudnnContext *;
using cudnnTensorDescriptor_t = cudnnTensorStruct *;
using cudnnFilterDescriptor_t = cudnnFilterStruct *;
using cudnnConvolutionDescriptor_t = cudnnConvolutionStruct *;
using cudnnStatus_t = int;
constexpr cudnnStatus_t CUDNN_STATUS_SUCCESS = 0;
// cudnnDataType_t
constexpr int CUDNN_DATA_FLOAT = 0;
constexpr int CUDNN_DATA_DOUBLE = 1;
constexpr int CUDNN_DATA_HALF = 2;
constexpr int CUDNN_DATA_BFLOAT16 = 9;
// cudnnTensorFormat_t
constexpr int CUDNN_TENSOR_NCHW = 0;
constexpr int CUDNN_TENSOR_NHWC = 1;
// cudnnConvolutionMode_t: PyTorch's convolution is a cross-correlation (no kernel flip).
constexpr int CUDNN_CROSS_CORRELATION = 1;
// cudnnMathType_t
constexpr int CUDNN_TENSOR_OP_MATH = 1;
constexpr int CUDNN_FMA_MATH = 3;
// The fallback when the heuristics offer nothing: cudnnConvolutionFwdAlgo_t and
// cudnnConvolutionBwdDataAlgo_t, each the most general of its kind.
constexpr int CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0;
constexpr int CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 = 1;

// cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t share this layout.
struct cudnnAlgoPerf {
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Cudnn {
  const char *(*cudnnGetErrorString)(cudnnStatus_t status);
  cudnnStatus_t (*cudnnCreate)(cudnnHandle_t *handle);
  cudnnStatus_t (*cudnnDestroy)(cudnnHandle_t handle);
  cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t handle, CUstream stream);
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t *desc);
  cudnnStatus_t (*cudnnSetTensorNdDescriptor)(cudnnTensorDescriptor_t desc, int data_type, int dims, const int *sizes,
                                              const int *strides);
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t desc);
  cudnnStatus_t (*cudnnCreateFilterDescriptor)(cudnnFilterDescriptor_t *desc);
  cudnnStatus_t (*cudnnSetFilterNdDescriptor)(cudnnFilterDescriptor_t desc, int data_type, int format, int dims,
                                              const int *sizes);
  cudnnStatus_t (*cudnnDestroyFilterDescriptor)(cudnnFilterDescriptor_t desc);
  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t *desc);
  cudnnStatus_t (*cudnnSetConvolutionNdDescriptor)(cudnnConvolutionDescriptor_t desc, int spatial, const int *padding,
                                                   const int *stride, const int *dilation, int mode,
                                                   int compute_type);
  cudnnStatus_t (*cudnnSetConvolutionGroupCount)(cudnnConvolutionDescriptor_t desc, int groups);
  cudnnStatus_t (*cudnnSetConvolutionMathType)(cudnnConvolutionDescriptor_t desc, int math_type);
  cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t desc);
  cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithm_v7)(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                          cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                                          cudnnTensorDescriptor_t y, int requested, int *returned,
                                                          cudnnAlgoPerf *results);
  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                           cudnnFilterDescriptor_t w,
                                                           cudnnConvolutionDescriptor_t conv,
                                                           cudnnTensorDescriptor_t y, int algo, size_t *bytes);
  cudnnStatus_t (*cudnnConvolutionForward)(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t x_desc,
                                           const void *x, cudnnFilterDescriptor_t w_desc, const void *w,
                                           cudnnConvolutionDescriptor_t conv, int algo, void *workspace,
                                           size_t workspace_bytes, const void *beta, cudnnTensorDescriptor_t y_desc,
                                           void *y);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(cudnnHandle_t handle, cudnnFilterDescriptor_t w,
                                                               cudnnTensorDescriptor_t dy,
                                                               cudnnConvolutionDescriptor_t conv,
                                                               cudnnTensorDescriptor_t dx, int requested,
                                                               int *returned, cudnnAlgoPerf *results);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataWorkspaceSize)(cudnnHandle_t handle, cudnnFilterDescriptor_t w,
                                                                cudnnTensorDescriptor_t dy,
                                                                cudnnConvolutionDescriptor_t conv,
                                                                cudnnTensorDescriptor_t dx, int algo, size_t *bytes);
  cudnnStatus_t (*cudnnConvolutionBackwardData)(cudnnHandle_t handle, const void *alpha, cudnnFilterDescriptor_t w_desc,
                                                const void *w, cudnnTensorDescriptor_t dy_desc, const void *dy,
                                                cudnnConvolutionDescriptor_t conv, int algo, void *workspace,
                                                size_t workspace_bytes, const void *beta,
                                                cudnnTensorDescriptor_t dx_desc, void *dx);
  cudnnStatus_t (*cudnnAddTensor)(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t a_desc,
                                  const void *a, const void *beta, cudnnTensorDescriptor_t c_desc, void *c);
};

// ---- loading -------------------------------------------------------------------------------

struct LoadedCublas {
  Cublas api{};
  std::string reason;  // empty: usable
};

struct LoadedCudnn {
  Cudnn api{};
  std::string reason;
};

// Never closed: like the driver, the libraries stay loaded for the life of the process.
LoadedCublas load_cublas() {
  LoadedCublas out;
  std::string why;
  void *lib = open_first({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, why);
  if (!lib) {
    out.reason = why + ": no cuBLAS on this machine";
    return out;
  }
  Cublas &c = out.api;
  // The _v2 names are the ABI behind cublas_v2.h's macros.
  Symbols symbols(lib);
  symbols.need("cublasCreate_v2", c.cublasCreate);
  symbols.need("cublasDestroy_v2", c.cublasDestroy);
  symbols.need("cublasSetStream_v2", c.cublasSetStream);
  symbols.need("cublasGemmStridedBatchedEx", c.cublasGemmStridedBatchedEx);
  if (!symbols.missing().empty()) {
    out.reason = str_cat("libcublas has no ", symbols.missing(), ": cuBLAS 11 or newer is needed");
    return out;
  }
  symbols.want("cublasGetStatusName", c.cublasGetStatusName);
  return out;
}

LoadedCudnn load_cudnn() {
  LoadedCudnn out;
  std::string why;
  void *lib = open_first({"libcudnn.so.9", "libcudnn.so"}, why);
  if (!lib) {
    out.reason = why + ": no cuDNN on this machine";
    return out;
  }
  Cudnn &c = out.api;
  Symbols symbols(lib);
  symbols.need("cudnnGetErrorString", c.cudnnGetErrorString);
  symbols.need("cudnnCreate", c.cudnnCreate);
  symbols.need("cudnnDestroy", c.cudnnDestroy);
  symbols.need("cudnnSetStream", c.cudnnSetStream);
  symbols.need("cudnnCreateTensorDescriptor", c.cudnnCreateTensorDescriptor);
  symbols.need("cudnnSetTensorNdDescriptor", c.cudnnSetTensorNdDescriptor);
  symbols.need("cudnnDestroyTensorDescriptor", c.cudnnDestroyTensorDescriptor);
  symbols.need("cudnnCreateFilterDescriptor", c.cudnnCreateFilterDescriptor);
  symbols.need("cudnnSetFilterNdDescriptor", c.cudnnSetFilterNdDescriptor);
  symbols.need("cudnnDestroyFilterDescriptor", c.cudnnDestroyFilterDescriptor);
  symbols.need("cudnnCreateConvolutionDescriptor", c.cudnnCreateConvolutionDescriptor);
  symbols.need("cudnnSetConvolutionNdDescriptor", c.cudnnSetConvolutionNdDescriptor);
  symbols.need("cudnnSetConvolutionGroupCount", c.cudnnSetConvolutionGroupCount);
  symbols.need("cudnnSetConvolutionMathType", c.cudnnSetConvolutionMathType);
  symbols.need("cudnnDestroyConvolutionDescriptor", c.cudnnDestroyConvolutionDescriptor);
  symbols.need("cudnnGetConvolutionForwardAlgorithm_v7", c.cudnnGetConvolutionForwardAlgorithm_v7);
  symbols.need("cudnnGetConvolutionForwardWorkspaceSize", c.cudnnGetConvolutionForwardWorkspaceSize);
  symbols.need("cudnnConvolutionForward", c.cudnnConvolutionForward);
  symbols.need("cudnnGetConvolutionBackwardDataAlgorithm_v7", c.cudnnGetConvolutionBackwardDataAlgorithm_v7);
  symbols.need("cudnnGetConvolutionBackwardDataWorkspaceSize", c.cudnnGetConvolutionBackwardDataWorkspaceSize);
  symbols.need("cudnnConvolutionBackwardData", c.cudnnConvolutionBackwardData);
  symbols.need("cudnnAddTensor", c.cudnnAddTensor);
  if (!symbols.missing().empty())
    out.reason = str_cat("libcudnn has no ", symbols.missing(), ": cuDNN 8 or newer with its legacy convolution API is needed");
  return out;
}

const LoadedCublas &loaded_cublas() {
  static const LoadedCublas l = load_cublas();
  return l;
}

const LoadedCudnn &loaded_cudnn() {
  static const LoadedCudnn l = load_cudnn();
  return l;
}

// ---- errors ----------------------------------------------------------------------------------

// What a failure names besides the call: the graph node, and the kernel when known.
struct Where {
  const Node &node;
  std::string_view kernel;
  std::string text() const {
    return str_cat("running extern node ", node.origin.empty() ? std::string("(unnamed)") : node.origin, " (",
                   ir::extern_op_name(node.extern_op), ")", kernel.empty() ? "" : " of kernel ", kernel);
  }
};

std::string cublas_status_name(cublasStatus_t status) {
  if (const auto name_of = loaded_cublas().api.cublasGetStatusName)
    if (const char *name = name_of(status)) return name;
  switch (status) {  // cublas_api.h's cublasStatus_t
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return str_cat("cuBLAS status ", status);
  }
}

void check_cublas(cublasStatus_t status, const char *call, const Where &where) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw UserError(str_cat(call, " failed with ", cublas_status_name(status), " while ", where.text()));
}

void check_cudnn(cudnnStatus_t status, const char *call, const Where &where) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const char *name = loaded_cudnn().api.cudnnGetErrorString(status);
  throw UserError(str_cat(call, " failed with ", name ? std::string(name) : str_cat("cuDNN status ", status), " while ",
                          where.text()));
}

#define COIL_CUBLAS(fn, ...) check_cublas(loaded_cublas().api.fn(__VA_ARGS__), #fn, where)
#define COIL_CUDNN(fn, ...) check_cudnn(loaded_cudnn().api.fn(__VA_ARGS__), #fn, where)

// ---- small helpers -------------------------------------------------------------------------

bool is_product(const Node &n) { return n.extern_op != ir::ExternOp::Convolution; }

bool library_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Operand dtypes: one dtype the library multiplies, or why not.
std::string dtype_problem(const Program &p, const Node &n, const char *library, DType &dtype) {
  std::vector<DType> types;
  for (const View &v : n.operands)
    if (v.buffer >= 0) types.push_back(p.buffer(v.buffer).type.dtype);
  types.push_back(p.buffer(n.outputs[0]).type.dtype);
  dtype = types.back();
  for (DType t : types)
    if (t != dtype) {
      std::string list;
      for (DType u : types)
        if (list.find(short_name(u)) == std::string::npos) list += (list.empty() ? "" : " and ") + std::string(short_name(u));
      return str_cat("its operands are ", list, ": ", library, " takes one dtype");
    }
  if (!library_dtype(dtype)) return str_cat(library, " has no ", short_name(dtype), " ", is_product(n) ? "matrix product" : "convolution");
  return "";
}

std::string precision_words(DType t) {
  switch (t) {
    case DType::F32: return "f32, TF32 off";
    case DType::F16: return "f16, f32 accumulation";
    case DType::BF16: return "bf16, f32 accumulation";
    default: return std::string(short_name(t));
  }
}

// ---- products as one strided-batched GEMM ----------------------------------------------------

// A matrix in memory: element (r, c) at r*row_stride + c*col_stride.
struct Mat {
  int64_t rows, cols, row_stride, col_stride;
};

// How cuBLAS reads a matrix: column-major with leading dimension ld, or its transpose.
struct BlasMat {
  int op;
  int64_t ld;
};

// A dim of one element may have any stride: it is never stepped along.
std::optional<BlasMat> as_blas(const Mat &m, bool output = false) {
  bool unit_rows = m.row_stride == 1 || m.rows <= 1;
  bool unit_cols = m.col_stride == 1 || m.cols <= 1;
  if (unit_rows) {
    int64_t ld = m.cols <= 1 ? std::max<int64_t>(1, m.rows) : m.col_stride;
    if (ld >= std::max<int64_t>(1, m.rows) && fits_int(ld)) return BlasMat{CUBLAS_OP_N, ld};
  }
  if (output) return std::nullopt;  // cuBLAS writes C as it is, never transposed
  if (unit_cols) {
    int64_t ld = m.rows <= 1 ? std::max<int64_t>(1, m.cols) : m.row_stride;
    if (ld >= std::max<int64_t>(1, m.cols) && fits_int(ld)) return BlasMat{CUBLAS_OP_T, ld};
  }
  return std::nullopt;
}

// One operand of a GEMM: a buffer at an element offset, or (buffer -1) the vector of ones.
struct GemmOperand {
  BufferId buffer = -1;
  int64_t offset = 0;
  BlasMat mat{CUBLAS_OP_N, 1};
  int64_t batch_stride = 0;
};

// C = alpha * op(A) op(B) + beta * C over `batches`, in cuBLAS's column-major terms.
struct GemmCall {
  int64_t m = 0, n = 0, k = 0, batches = 1;
  GemmOperand a, b, c;
  double alpha = 1, beta = 0;
};

struct ProductPlan {
  std::string reason;  // non-empty: host loops
  DType dtype = DType::F32;
  std::vector<GemmCall> bias_copy;  // run first: the bias broadcast into the output
  GemmCall product;
  int64_t ones = 0;                 // elements of the vector of ones the calls read
  std::vector<int64_t> bias_strides;  // the bias over the output's dims (0: broadcast)
  bool empty = false;               // an output of no elements: nothing to run
  bool swapped = false;             // computed as C^T = B^T A^T (a row-major output)
};

// The matmul family as batches of (rows x inner) @ (inner x cols), as extern_loops.h sees it.
struct ProductShape {
  const View *a, *b, *bias;
  bool batched, vector;
  int64_t batches, rows, inner, cols;
  double alpha, beta;
};

ProductShape product_shape(const Node &n) {
  ProductShape s;
  bool has_bias = n.operands.size() == 3;
  s.bias = has_bias ? &n.operands[0] : nullptr;
  s.a = &n.operands[has_bias ? 1 : 0];
  s.b = &n.operands[has_bias ? 2 : 1];
  s.batched = s.a->sizes.size() == 3;
  s.vector = s.b->sizes.size() == 1;
  s.batches = s.batched ? s.a->sizes[0] : 1;
  s.rows = s.a->sizes[s.batched ? 1 : 0];
  s.inner = s.a->sizes.back();
  s.cols = s.vector ? 1 : s.b->sizes.back();
  s.alpha = n.scalars.count("alpha") ? n.scalars.at("alpha") : 1;
  s.beta = n.scalars.count("beta") ? n.scalars.at("beta") : 1;
  if (!s.bias) s.beta = 0;
  return s;
}

// The bias's strides over the output's dims, broadcast as PyTorch does: missing leading
// dims and dims of one element do not move (stride 0).
std::vector<int64_t> bias_over(const View &bias, const Shape &out) {
  std::vector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - bias.sizes.size();
  for (size_t d = lead; d < out.size(); ++d)
    if (bias.sizes[d - lead] != 1 && out[d] != 1) strides[d] = bias.strides[d - lead];
  return strides;
}

ProductPlan plan_product(const Program &p, const Node &n) {
  ProductPlan plan;
  if (std::string why = dtype_problem(p, n, "cuBLAS", plan.dtype); !why.empty()) {
    plan.reason = why;
    return plan;
  }
  ProductShape s = product_shape(n);
  const TensorType &out = p.buffer(n.outputs[0]).type;
  if (s.batches == 0 || s.rows == 0 || s.cols == 0) {
    plan.empty = true;
    return plan;
  }
  if (s.inner == 0) {
    plan.reason = "the product sums over no element";
    return plan;
  }
  for (int64_t v : {s.batches, s.rows, s.inner, s.cols})
    if (!fits_int(v)) {
      plan.reason = str_cat("a dim of ", v, " elements is more than cuBLAS's int takes");
      return plan;
    }
  // Strides as (batch, row, col); a vector is a matrix of one column.
  auto strides3 = [&](const View &v, bool is_vector) {
    std::vector<int64_t> st = v.strides;
    if (is_vector) st.push_back(0);
    if (st.size() == 2) st.insert(st.begin(), 0);
    return st;
  };
  std::vector<int64_t> sa = strides3(*s.a, false), sb = strides3(*s.b, s.vector);
  std::vector<int64_t> sc = strides3(View{n.outputs[0], out.sizes, out.strides, 0}, s.vector);
  if (!s.batched || s.batches == 1) sa[0] = sb[0] = sc[0] = 0;
  for (const auto *st : {&sa, &sb})
    if (s.batches > 1 && (*st)[0] < 0) {
      plan.reason = "a batch stride is negative";
      return plan;
    }
  Mat a{s.rows, s.inner, sa[1], sa[2]}, b{s.inner, s.cols, sb[1], sb[2]}, c{s.rows, s.cols, sc[1], sc[2]};

  // Row-major C = A @ B is column-major C^T = B^T A^T: tried first, since a row-major
  // output is the usual one; then C = A @ B for a column-major output.
  bool found = false;
  for (bool swapped : {true, false}) {
    Mat cc = swapped ? Mat{c.cols, c.rows, c.col_stride, c.row_stride} : c;
    Mat aa = swapped ? Mat{b.cols, b.rows, b.col_stride, b.row_stride} : a;
    Mat bb = swapped ? Mat{a.cols, a.rows, a.col_stride, a.row_stride} : b;
    auto bc = as_blas(cc, true), ba = as_blas(aa), bbm = as_blas(bb);
    if (!bc || !ba || !bbm) continue;
    GemmCall &g = plan.product;
    g.m = cc.rows;
    g.n = cc.cols;
    g.k = s.inner;
    g.batches = s.batches;
    const View &first = swapped ? *s.b : *s.a, &second = swapped ? *s.a : *s.b;
    g.a = {first.buffer, first.offset, *ba, swapped ? sb[0] : sa[0]};
    g.b = {second.buffer, second.offset, *bbm, swapped ? sa[0] : sb[0]};
    g.c = {n.outputs[0], 0, *bc, sc[0]};
    g.alpha = s.alpha;
    g.beta = s.beta;
    plan.swapped = swapped;
    found = true;

    if (s.bias && s.beta != 0) {
      // The bias in C's column-major terms: (pr, pc) along C's rows and columns, pb per batch.
      plan.bias_strides = bias_over(*s.bias, out.sizes);
      std::vector<int64_t> over = plan.bias_strides;
      if (s.vector) over.push_back(0);
      if (over.size() == 2) over.insert(over.begin(), 0);
      int64_t pr = swapped ? over[2] : over[1], pc = swapped ? over[1] : over[2], pb = s.batches > 1 ? over[0] : 0;
      if (pr < 0 || pc < 0 || pb < 0) {
        plan.reason = "the bias has a negative stride";
        return plan;
      }
      const int64_t m = g.m, ncols = g.n, ldc = bc->ld;
      GemmOperand bias_at{s.bias->buffer, s.bias->offset, {}, pb};
      GemmOperand ones{-1, 0, {}, 0};
      GemmCall copy;
      copy.k = 1;
      copy.alpha = 1;
      copy.beta = 0;
      copy.c = g.c;
      if (pr != 0 && pc == 0) {
        // Along C's rows only: bias column (m x 1) times a row of ones (1 x n).
        copy.m = m, copy.n = ncols, copy.batches = s.batches;
        bias_at.mat = *as_blas(Mat{m, 1, pr, 0});
        ones.mat = {CUBLAS_OP_N, 1};
        copy.a = bias_at, copy.b = ones;
        plan.bias_copy.push_back(copy);
      } else if (pr == 0 && pc != 0) {
        // Along C's columns only: a column of ones (m x 1) times the bias row (1 x n).
        copy.m = m, copy.n = ncols, copy.batches = s.batches;
        ones.mat = {CUBLAS_OP_N, std::max<int64_t>(1, m)};
        bias_at.mat = *as_blas(Mat{1, ncols, 0, pc});
        copy.a = ones, copy.b = bias_at;
        plan.bias_copy.push_back(copy);
      } else {
        // A scalar per matrix, or a full matrix: column by column, each column of C (m x 1)
        // the bias's column (or ones) times one element (1 or the bias's scalar). Batches
        // of columns, one call per matrix unless all of them line up as one sequence.
        bool scalar = pr == 0;
        GemmOperand column = scalar ? ones : bias_at, unit = scalar ? bias_at : ones;
        column.mat = scalar ? BlasMat{CUBLAS_OP_N, std::max<int64_t>(1, m)} : *as_blas(Mat{m, 1, pr, 0});
        column.batch_stride = scalar ? 0 : pc;
        unit.mat = {CUBLAS_OP_N, 1};
        unit.batch_stride = 0;
        copy.m = m, copy.n = 1;
        copy.a = column, copy.b = unit;
        copy.c.batch_stride = ldc;
        bool one_sequence = s.batches == 1 || (sc[0] == ncols * ldc && (scalar ? pb == 0 : pb == ncols * pc));
        int64_t calls = one_sequence ? 1 : s.batches;
        copy.batches = one_sequence ? ncols * s.batches : ncols;
        if (!fits_int(copy.batches)) {
          plan.reason = "the bias would take more GEMM batches than cuBLAS's int takes";
          return plan;
        }
        for (int64_t i = 0; i < calls; ++i) {
          GemmCall each = copy;
          each.c.offset += i * sc[0];
          (scalar ? each.b : each.a).offset += i * pb;
          plan.bias_copy.push_back(each);
        }
      }
      plan.ones = std::max<int64_t>(m, ncols);
    }
    break;
  }
  if (!found) {
    auto layout = [](const Mat &m) { return str_cat("strides [", m.row_stride, ", ", m.col_stride, "]"); };
    for (const auto &[name, m] : {std::pair<const char *, Mat>{"first operand", a}, {"second operand", b}})
      if (!as_blas(m) && !as_blas(Mat{m.cols, m.rows, m.col_stride, m.row_stride}))
        plan.reason = str_cat("the ", name, " has ", layout(m), ": cuBLAS needs a unit stride in one matrix dim");
    if (plan.reason.empty())
      plan.reason = str_cat("the output has ", layout(c), ": cuBLAS needs a unit stride in one matrix dim");
  }
  return plan;
}

// ---- convolution through cuDNN ----------------------------------------------------------------

struct ConvPlan {
  std::string reason;  // non-empty: host loops
  bool empty = false;
  DType dtype = DType::F32;
  bool transposed = false;
  bool bias = false;
  int groups = 1;
  int format = CUDNN_TENSOR_NCHW;
  // cuDNN's view: 4 or 5 dims (a 1-d convolution gains a unit height).
  std::vector<int> x_sizes, x_strides, w_sizes, y_sizes, y_strides, padding, stride, dilation;
};

// Whether the dims of `v` laid out innermost-first in `order` are packed (dims of one
// element may have any stride).
bool packed(const Shape &sizes, const Shape &strides, const std::vector<size_t> &order) {
  int64_t expected = 1;
  for (size_t d : order) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

ConvPlan plan_convolution(const Program &p, const Node &n) {
  ConvPlan plan;
  if (std::string why = dtype_problem(p, n, "cuDNN", plan.dtype); !why.empty()) {
    plan.reason = why;
    return plan;
  }
  const View &x = n.operands[0], &w = n.operands[1];
  const View *bias = n.operands.size() > 2 && n.operands[2].buffer >= 0 ? &n.operands[2] : nullptr;
  const TensorType &out = p.buffer(n.outputs[0]).type;
  size_t spatial = w.sizes.size() - 2;
  plan.transposed = n.attrs.count("transposed") && n.attrs.at("transposed")[0];
  plan.bias = bias != nullptr;
  if (spatial < 1 || spatial > 3) {
    plan.reason = str_cat("cuDNN convolves over 1 to 3 dims, not ", spatial);
    return plan;
  }
  if (out.numel() == 0) {
    plan.empty = true;
    return plan;
  }
  for (const Shape *s : {&x.sizes, &w.sizes})
    for (int64_t v : *s)
      if (v == 0) {
        plan.reason = "an operand has no elements";
        return plan;
      }
  int64_t groups = n.attrs.at("groups")[0];
  // The weight is a cuDNN filter, which has a layout but no strides.
  std::vector<size_t> nchw, nhwc = {1};
  for (size_t d = w.sizes.size(); d-- > 0;) nchw.push_back(d);
  for (size_t d = w.sizes.size(); d-- > 2;) nhwc.push_back(d);
  nhwc.push_back(0);
  if (packed(w.sizes, w.strides, nchw))
    plan.format = CUDNN_TENSOR_NCHW;
  else if (packed(w.sizes, w.strides, nhwc))
    plan.format = CUDNN_TENSOR_NHWC;
  else {
    plan.reason = str_cat("the weight has strides ", shape_str(w.strides),
                          ": a cuDNN filter is packed, in NCHW or NHWC order");
    return plan;
  }
  for (size_t d = 0; d < x.sizes.size(); ++d)
    if (x.strides[d] <= 0 && x.sizes[d] > 1) {
      plan.reason = str_cat("the input repeats its elements along dim ", d, " (stride ", x.strides[d],
                            "), which a cuDNN tensor cannot");
      return plan;
    }
  if (bias && bias->strides[0] <= 0 && bias->sizes[0] > 1) {
    plan.reason = "the bias repeats one element (stride 0), which a cuDNN tensor cannot";
    return plan;
  }
  // cuDNN's sizes and strides, with a unit height before a single spatial dim. A dim of
  // one element gets the stride a packed tensor would have there.
  auto to_cudnn = [&](const Shape &sizes, const Shape &strides, std::vector<int> &s_out, std::vector<int> *st_out) {
    Shape s = sizes, st = strides;
    if (spatial == 1) {
      s.insert(s.begin() + 2, 1);
      st.insert(st.begin() + 2, st[2] * s[3]);
    }
    // A dim of one element takes the stride it would have in the tensor's packed layout
    // (channels innermost when the channel stride is 1), as cuDNN recognizes packed ones.
    std::vector<size_t> order;
    bool channels_last = st[1] == 1 && s[1] > 1;
    if (channels_last) order.push_back(1);
    for (size_t d = s.size(); d-- > 2;) order.push_back(d);
    if (!channels_last) order.push_back(1);
    order.push_back(0);
    int64_t inner = 1;
    for (size_t d : order) {
      if (s[d] == 1) st[d] = inner;
      inner *= s[d];
    }
    for (int64_t v : s) {
      if (!fits_int(v)) return false;
      s_out.push_back(int(v));
    }
    if (st_out)
      for (int64_t v : st) {
        if (!fits_int(v)) return false;
        st_out->push_back(int(v));
      }
    return true;
  };
  if (!to_cudnn(x.sizes, x.strides, plan.x_sizes, &plan.x_strides) || !to_cudnn(w.sizes, w.strides, plan.w_sizes, nullptr) ||
      !to_cudnn(out.sizes, out.strides, plan.y_sizes, &plan.y_strides) || !fits_int(groups)) {
    plan.reason = "a size or stride is more than cuDNN's int takes";
    return plan;
  }
  plan.groups = int(groups);
  if (spatial == 1) plan.padding = {0}, plan.stride = {1}, plan.dilation = {1};
  for (const char *name : {"padding", "stride", "dilation"}) {
    std::vector<int> &dst = name[0] == 'p' ? plan.padding : name[0] == 's' ? plan.stride : plan.dilation;
    for (int64_t v : n.attrs.at(name)) {
      if (!fits_int(v)) {
        plan.reason = str_cat("a ", name, " of ", v, " is more than cuDNN's int takes");
        return plan;
      }
      dst.push_back(int(v));
    }
  }
  return plan;
}

// ---- the decision in words ------------------------------------------------------------------

std::string decide(const Program &p, const Node &n, bool assume_libraries) {
  if (n.kind != ir::NodeKind::Extern || n.outputs.empty()) return "host loops: not an extern call";
  if (is_product(n)) {
    ProductPlan plan = plan_product(p, n);
    if (!plan.reason.empty()) return "host loops: " + plan.reason;
    if (!assume_libraries && !cublas_available()) return "host loops: " + cublas_unavailable_reason();
    std::string words = str_cat("cuBLAS cublasGemmStridedBatchedEx (", precision_words(plan.dtype), ")");
    if (!plan.bias_copy.empty()) words += str_cat(", the bias broadcast by ", plan.bias_copy.size() == 1 ? "a GEMM" : "GEMMs", " with a vector of ones");
    return words;
  }
  ConvPlan plan = plan_convolution(p, n);
  if (!plan.reason.empty()) return "host loops: " + plan.reason;
  if (!assume_libraries && !cudnn_available()) return "host loops: " + cudnn_unavailable_reason();
  std::string words = str_cat("cuDNN convolution ", plan.transposed ? "backward data, as a transposed convolution" : "forward",
                              " (", plan.format == CUDNN_TENSOR_NCHW ? "NCHW" : "NHWC", ", ",
                              precision_words(plan.dtype), ")");
  if (plan.bias) words += ", the bias by cudnnAddTensor";
  return words;
}

// ---- per thread: handles, the vector of ones, workspaces ------------------------------------

// Device memory owned by one thread's state, in the current context.
struct Scratch {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { release(); }
  void release() noexcept {
    if (ptr == 0) return;
    try {
      driver().cuMemFree(ptr);
    } catch (const UserError &) {
    }
    ptr = 0;
    bytes = 0;
  }
  // At least `want` bytes. Work queued earlier may still read the old allocation, so the
  // context finishes first; growth is rare (sizes only increase).
  void reserve(size_t want, const char *what) {
    if (want <= bytes) return;
    if (ptr) {
      COIL_CU(cuCtxSynchronize);
      release();
    }
    check(driver().cuMemAlloc(&ptr, want), "cuMemAlloc", str_cat("allocating ", want, " bytes for ", what));
    bytes = want;
  }
};

// A cuBLAS or cuDNN handle is not safe to share between threads that use it at once, and
// belongs to one context: one of each per thread and context, made on first use.
struct ThreadState {
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  std::map<CUstream, Scratch> workspaces;  // launches on one stream run in order and may share one
  std::map<DType, Scratch> ones;           // 1 in each dtype, as many as the largest call needed
  ThreadState() = default;
  ThreadState(const ThreadState &) = delete;
  ThreadState &operator=(const ThreadState &) = delete;
  ~ThreadState() {
    // Best effort at thread exit: the libraries outlive their handles.
    if (blas) loaded_cublas().api.cublasDestroy(blas);
    if (dnn) loaded_cudnn().api.cudnnDestroy(dnn);
  }
};

ThreadState &thread_state() {
  CUcontext context = nullptr;
  COIL_CU(cuCtxGetCurrent, &context);
  if (!context) {
    Device::get();
    COIL_CU(cuCtxGetCurrent, &context);
  }
  thread_local std::map<CUcontext, ThreadState> states;
  return states[context];
}

CUdeviceptr ones_vector(ThreadState &state, DType t, int64_t count) {
  Scratch &s = state.ones[t];
  size_t bytes = size_t(count) * size_t(itemsize(t));
  if (s.bytes >= bytes) return s.ptr;
  s.reserve(bytes, "a vector of ones");
  std::vector<unsigned char> host(bytes);
  for (int64_t i = 0; i < count; ++i) {
    unsigned char *at = host.data() + size_t(i) * size_t(itemsize(t));
    if (t == DType::F32) {
      float one = 1;
      std::memcpy(at, &one, 4);
    } else if (t == DType::F64) {
      double one = 1;
      std::memcpy(at, &one, 8);
    } else {
      uint16_t one = t == DType::BF16 ? coil_rt::f32_to_bf16(1.0f) : coil_rt::f32_to_f16(1.0f);
      std::memcpy(at, &one, 2);
    }
  }
  check(driver().cuMemcpyHtoD(s.ptr, host.data(), bytes), "cuMemcpyHtoD", "writing a vector of ones");
  return s.ptr;
}

// ---- running on the GPU ---------------------------------------------------------------------

void *device_pointer(CUdeviceptr base, int64_t offset, DType t) {
  return reinterpret_cast<void *>(uintptr_t(base + CUdeviceptr(offset * itemsize(t))));
}

int blas_type(DType t) {
  switch (t) {
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

void run_gemm(cublasHandle_t handle, const GemmCall &g, DType t, const BufferAddress &address, CUdeviceptr ones,
              const Where &where) {
  auto at = [&](const GemmOperand &o) {
    return o.buffer < 0 ? reinterpret_cast<void *>(uintptr_t(ones)) : device_pointer(address(o.buffer), o.offset, t);
  };
  // Scalars in the compute type: double for f64, float otherwise.
  float alpha_f = float(g.alpha), beta_f = float(g.beta);
  double alpha_d = g.alpha, beta_d = g.beta;
  bool f64 = t == DType::F64;
  const void *alpha = f64 ? static_cast<const void *>(&alpha_d) : &alpha_f;
  const void *beta = f64 ? static_cast<const void *>(&beta_d) : &beta_f;
  int type = blas_type(t);
  COIL_CUBLAS(cublasGemmStridedBatchedEx, handle, g.a.mat.op, g.b.mat.op, int(g.m), int(g.n), int(g.k), alpha, at(g.a),
              type, int(g.a.mat.ld), (long long)g.a.batch_stride, at(g.b), type, int(g.b.mat.ld),
              (long long)g.b.batch_stride, beta, at(g.c), type, int(g.c.mat.ld), (long long)g.c.batch_stride,
              int(g.batches), f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// The byte range [first, last) a view or a buffer spans from its storage's address.
struct Span {
  CUdeviceptr first = 0, last = 0;
  bool overlaps(const Span &o) const { return first < o.last && o.first < last; }
};

Span span_of(const Program &p, const View &v, const BufferAddress &address) {
  const TensorType &t = p.buffer(v.buffer).type;
  int64_t extent = storage_extent(TensorType{t.dtype, v.sizes, v.strides, t.device}, v.offset);
  CUdeviceptr base = address(v.buffer);
  return {base + CUdeviceptr(v.offset * itemsize(t.dtype)), base + CUdeviceptr(std::max<int64_t>(extent, v.offset) * itemsize(t.dtype))};
}

View whole(const Program &p, BufferId b) {
  const TensorType &t = p.buffer(b).type;
  return View{b, t.sizes, t.strides, 0};
}

// Whether the product may run in cuBLAS with these addresses: no operand may share memory
// with the output (the bias only when it already is the output, element for element).
// Returns false for the host loops, which read every operand before writing.
bool product_addresses_fit(const Program &p, const Node &n, const ProductPlan &plan, const BufferAddress &address,
                           bool &bias_in_place) {
  ProductShape s = product_shape(n);
  Span out = span_of(p, whole(p, n.outputs[0]), address);
  for (const View *v : {s.a, s.b})
    if (span_of(p, *v, address).overlaps(out)) return false;
  bias_in_place = false;
  if (!plan.bias_copy.empty()) {
    Span bias = span_of(p, *s.bias, address);
    if (!bias.overlaps(out)) return true;
    const TensorType &t = p.buffer(n.outputs[0]).type;
    bool same = bias.first == out.first;
    for (size_t d = 0; d < t.sizes.size() && same; ++d)
      if (t.sizes[d] != 1 && plan.bias_strides[d] != t.strides[d]) same = false;
    if (!same) return false;
    bias_in_place = true;
  }
  return true;
}

void run_product(const Program &p, const Node &n, const ProductPlan &plan, const BufferAddress &address,
                 CUstream stream, const Where &where) {
  ThreadState &state = thread_state();
  if (!state.blas) COIL_CUBLAS(cublasCreate, &state.blas);
  COIL_CUBLAS(cublasSetStream, state.blas, stream);
  CUdeviceptr ones = plan.ones > 0 ? ones_vector(state, plan.dtype, plan.ones) : 0;
  for (const GemmCall &g : plan.bias_copy) run_gemm(state.blas, g, plan.dtype, address, ones, where);
  run_gemm(state.blas, plan.product, plan.dtype, address, ones, where);
}

// A cuDNN descriptor destroyed with the object, so that an error leaks none.
template <typename T>
struct Descriptor {
  T desc = nullptr;
  cudnnStatus_t (*destroy)(T);
  explicit Descriptor(cudnnStatus_t (*destroy_fn)(T)) : destroy(destroy_fn) {}
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  ~Descriptor() {
    if (desc) destroy(desc);
  }
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t>;

int dnn_type(DType t) {
  switch (t) {
    case DType::F64: return CUDNN_DATA_DOUBLE;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

void run_convolution(const Program &p, const Node &n, const ConvPlan &plan, const BufferAddress &address,
                     CUstream stream, const Where &where) {
  ThreadState &state = thread_state();
  if (!state.dnn) COIL_CUDNN(cudnnCreate, &state.dnn);
  cudnnHandle_t h = state.dnn;
  COIL_CUDNN(cudnnSetStream, h, stream);
  const View &xv = n.operands[0], &wv = n.operands[1];
  DType t = plan.dtype;
  int type = dnn_type(t);
  int dims = int(plan.x_sizes.size());
  const Cudnn &api = loaded_cudnn().api;
  TensorDesc x(api.cudnnDestroyTensorDescriptor), y(api.cudnnDestroyTensorDescriptor);
  Descriptor<cudnnFilterDescriptor_t> w(api.cudnnDestroyFilterDescriptor);
  Descriptor<cudnnConvolutionDescriptor_t> conv(api.cudnnDestroyConvolutionDescriptor);
  COIL_CUDNN(cudnnCreateTensorDescriptor, &x.desc);
  COIL_CUDNN(cudnnSetTensorNdDescriptor, x.desc, type, dims, plan.x_sizes.data(), plan.x_strides.data());
  COIL_CUDNN(cudnnCreateTensorDescriptor, &y.desc);
  COIL_CUDNN(cudnnSetTensorNdDescriptor, y.desc, type, dims, plan.y_sizes.data(), plan.y_strides.data());
  COIL_CUDNN(cudnnCreateFilterDescriptor, &w.desc);
  COIL_CUDNN(cudnnSetFilterNdDescriptor, w.desc, type, plan.format, dims, plan.w_sizes.data());
  COIL_CUDNN(cudnnCreateConvolutionDescriptor, &conv.desc);
  COIL_CUDNN(cudnnSetConvolutionNdDescriptor, conv.desc, dims - 2, plan.padding.data(), plan.stride.data(),
             plan.dilation.data(), CUDNN_CROSS_CORRELATION, t == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  COIL_CUDNN(cudnnSetConvolutionGroupCount, conv.desc, plan.groups);
  // f32 on FMA kernels only: tensor cores would round inputs to TF32, which PyTorch's
  // matmul default does not and coil's f32 tolerance would not absorb.
  int math = t == DType::F16 || t == DType::BF16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  COIL_CUDNN(cudnnSetConvolutionMathType, conv.desc, math);

  // The heuristics' first algorithm that works here in the math asked for.
  cudnnAlgoPerf perf[16];
  int returned = 0;
  if (plan.transposed)
    COIL_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7, h, w.desc, x.desc, conv.desc, y.desc, 16, &returned, perf);
  else
    COIL_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7, h, x.desc, w.desc, conv.desc, y.desc, 16, &returned, perf);
  int algo = plan.transposed ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && (math != CUDNN_FMA_MATH || perf[i].math_type == CUDNN_FMA_MATH)) {
      algo = perf[i].algo;
      if (perf[i].math_type != math) COIL_CUDNN(cudnnSetConvolutionMathType, conv.desc, perf[i].math_type);
      break;
    }
  size_t bytes = 0;
  if (plan.transposed)
    COIL_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize, h, w.desc, x.desc, conv.desc, y.desc, algo, &bytes);
  else
    COIL_CUDNN(cudnnGetConvolutionForwardWorkspaceSize, h, x.desc, w.desc, conv.desc, y.desc, algo, &bytes);
  Scratch &workspace = state.workspaces[stream];
  workspace.reserve(bytes, "the cuDNN workspace");
  void *ws = bytes ? reinterpret_cast<void *>(uintptr_t(workspace.ptr)) : nullptr;

  float one_f = 1, zero_f = 0;
  double one_d = 1, zero_d = 0;
  const void *one = t == DType::F64 ? static_cast<const void *>(&one_d) : &one_f;
  const void *zero = t == DType::F64 ? static_cast<const void *>(&zero_d) : &zero_f;
  void *xp = device_pointer(address(xv.buffer), xv.offset, t), *wp = device_pointer(address(wv.buffer), wv.offset, t);
  void *yp = device_pointer(address(n.outputs[0]), 0, t);
  if (plan.transposed)
    COIL_CUDNN(cudnnConvolutionBackwardData, h, one, w.desc, wp, x.desc, xp, conv.desc, algo, ws, bytes, zero, y.desc, yp);
  else
    COIL_CUDNN(cudnnConvolutionForward, h, one, x.desc, xp, w.desc, wp, conv.desc, algo, ws, bytes, zero, y.desc, yp);

  if (plan.bias) {
    // The bias as a 1 x C x 1 x 1 tensor that cuDNN broadcasts over the output.
    const View &bv = n.operands[2];
    std::vector<int> sizes(size_t(dims), 1), strides(size_t(dims), 1);
    sizes[1] = plan.y_sizes[1];
    strides[1] = bv.sizes[0] > 1 ? int(bv.strides[0]) : 1;
    strides[0] = sizes[1] * strides[1];
    TensorDesc b(api.cudnnDestroyTensorDescriptor);
    COIL_CUDNN(cudnnCreateTensorDescriptor, &b.desc);
    COIL_CUDNN(cudnnSetTensorNdDescriptor, b.desc, type, dims, sizes.data(), strides.data());
    COIL_CUDNN(cudnnAddTensor, h, one, b.desc, device_pointer(address(bv.buffer), bv.offset, t), one, y.desc, yp);
  }
}

// Whether the convolution may run in cuDNN with these addresses: no input overlaps the output.
bool convolution_addresses_fit(const Program &p, const Node &n, const BufferAddress &address) {
  Span out = span_of(p, whole(p, n.outputs[0]), address);
  for (const View &v : n.operands)
    if (v.buffer >= 0 && span_of(p, v, address).overlaps(out)) return false;
  return true;
}

// ---- the host loops -------------------------------------------------------------------------

// One buffer's storage copied to the host.
struct HostCopy {
  DType dtype = DType::F32;
  CUdeviceptr device = 0;
  std::vector<unsigned char> bytes;

  double get(int64_t i) const {
    const unsigned char *at = bytes.data() + size_t(i) * size_t(itemsize(dtype));
    auto as = [&](auto zero) {
      decltype(zero) v;
      std::memcpy(&v, at, sizeof v);
      return v;
    };
    switch (dtype) {
      case DType::Bool: return as(uint8_t()) != 0 ? 1.0 : 0.0;
      case DType::U8: return double(as(uint8_t()));
      case DType::I8: return double(as(int8_t()));
      case DType::I16: return double(as(int16_t()));
      case DType::I32: return double(as(int32_t()));
      case DType::I64: return double(as(int64_t()));
      case DType::F16: return double(coil_rt::f16_to_f32(as(uint16_t())));
      case DType::BF16: return double(coil_rt::bf16_to_f32(as(uint16_t())));
      case DType::F32: return double(as(float()));
      case DType::F64: return as(double());
    }
    return 0;
  }

  void put(int64_t i, double v) {
    unsigned char *at = bytes.data() + size_t(i) * size_t(itemsize(dtype));
    auto store = [&](auto value) { std::memcpy(at, &value, sizeof value); };
    // An integer result out of int64's range has no defined conversion; it becomes the
    // smallest int64, as x86 converts it.
    int64_t whole = std::isfinite(v) && std::fabs(v) < 9.2e18 ? int64_t(v) : INT64_MIN;
    switch (dtype) {
      case DType::Bool: store(uint8_t(v != 0)); break;
      case DType::U8: store(uint8_t(whole)); break;
      case DType::I8: store(int8_t(whole)); break;
      case DType::I16: store(int16_t(whole)); break;
      case DType::I32: store(int32_t(whole)); break;
      case DType::I64: store(whole); break;
      case DType::F16: store(coil_rt::f32_to_f16(float(v))); break;
      case DType::BF16: store(coil_rt::f32_to_bf16(float(v))); break;
      case DType::F32: store(float(v)); break;
      case DType::F64: store(v); break;
    }
  }
};

// Every buffer the node touches, its whole storage (as far as the buffer's type and every
// view of it reach), downloaded after the stream's earlier work.
std::map<BufferId, HostCopy> download(const Program &p, const Node &n, const BufferAddress &address, CUstream stream) {
  std::map<BufferId, int64_t> extents;
  auto reach = [&](BufferId b, int64_t extent) { extents[b] = std::max(extents[b], extent); };
  for (const View &v : n.operands)
    if (v.buffer >= 0) {
      const TensorType &t = p.buffer(v.buffer).type;
      reach(v.buffer, storage_extent(t));
      reach(v.buffer, storage_extent(TensorType{t.dtype, v.sizes, v.strides, t.device}, v.offset));
    }
  reach(n.outputs[0], storage_extent(p.buffer(n.outputs[0]).type));
  COIL_CU(cuStreamSynchronize, stream);
  std::map<BufferId, HostCopy> out;
  for (const auto &[b, extent] : extents) {
    HostCopy &h = out[b];
    h.dtype = p.buffer(b).type.dtype;
    h.device = address(b);
    h.bytes.resize(size_t(extent) * size_t(itemsize(h.dtype)));
    if (!h.bytes.empty())
      check(driver().cuMemcpyDtoH(h.bytes.data(), h.device, h.bytes.size()), "cuMemcpyDtoH",
            str_cat("reading buffer ", p.buffer(b).name, " for the host loops of ", n.origin));
  }
  return out;
}

// Element `idx` of view `v` (dims of one element read at 0).
int64_t element(const View &v, const int64_t *idx) {
  int64_t at = v.offset;
  for (size_t d = 0; d < v.sizes.size(); ++d)
    if (v.sizes[d] != 1) at += idx[d] * v.strides[d];
  return at;
}

void run_on_host(const Program &p, const Node &n, const BufferAddress &address, CUstream stream) {
  std::map<BufferId, HostCopy> host = download(p, n, address, stream);
  const BufferId out_id = n.outputs[0];
  HostCopy &out = host.at(out_id);
  const TensorType &ot = p.buffer(out_id).type;
  if (is_product(n)) {
    ProductShape s = product_shape(n);
    const HostCopy &a = host.at(s.a->buffer), &b = host.at(s.b->buffer);
    const HostCopy *bias = s.bias ? &host.at(s.bias->buffer) : nullptr;
    size_t rank = ot.sizes.size();
    // An index (b, i, j) seen by an operand or the output of `rank` dims: its last ones.
    auto tail = [](const int64_t (&bij)[3], size_t r) { return bij + (3 - r); };
    coil_rt::matmul(
        s.batches, s.rows, s.inner, s.cols, s.alpha, s.beta, bias != nullptr,
        [&](int64_t bi, int64_t i, int64_t k) {
          int64_t idx[3] = {bi, i, k};
          return a.get(element(*s.a, tail(idx, s.a->sizes.size())));
        },
        [&](int64_t bi, int64_t k, int64_t j) {
          int64_t idx[3] = {bi, k, j};
          int64_t vec[1] = {k};
          return b.get(element(*s.b, s.vector ? vec : tail(idx, s.b->sizes.size())));
        },
        [&](int64_t bi, int64_t i, int64_t j) {
          int64_t idx[3] = {bi, i, j};
          const int64_t *o = s.vector ? idx + 1 : tail(idx, rank);  // mv's output index is i
          return bias->get(element(*s.bias, o + (rank - s.bias->sizes.size())));
        },
        [&](int64_t bi, int64_t i, int64_t j, double v) {
          int64_t idx[3] = {bi, i, j};
          const int64_t *o = s.vector ? idx + 1 : tail(idx, rank);
          int64_t at = 0;
          for (size_t d = 0; d < rank; ++d) at += o[d] * ot.strides[d];
          out.put(at, v);
        });
  } else {
    const View &xv = n.operands[0], &wv = n.operands[1];
    const View *bv = n.operands.size() > 2 && n.operands[2].buffer >= 0 ? &n.operands[2] : nullptr;
    const HostCopy &x = host.at(xv.buffer), &w = host.at(wv.buffer);
    const HostCopy *bias = bv ? &host.at(bv->buffer) : nullptr;
    int spatial = int(wv.sizes.size()) - 2;
    bool transposed = n.attrs.count("transposed") && n.attrs.at("transposed")[0];
    auto at4 = [&](const View &v, int64_t i0, int64_t i1, const int64_t *rest) {
      int64_t idx[5] = {i0, i1, 0, 0, 0};
      for (int d = 0; d < spatial; ++d) idx[2 + d] = rest[d];
      return element(v, idx);
    };
    coil_rt::convolution(
        spatial, ot.sizes.data(), xv.sizes.data(), wv.sizes.data(), n.attrs.at("stride").data(),
        n.attrs.at("padding").data(), n.attrs.at("dilation").data(), n.attrs.at("groups")[0], transposed,
        bias != nullptr, [&](int64_t bi, int64_t c, const int64_t *pos) { return x.get(at4(xv, bi, c, pos)); },
        [&](int64_t o, int64_t i, const int64_t *k) { return w.get(at4(wv, o, i, k)); },
        [&](int64_t c) {
          int64_t idx[1] = {c};
          return bias->get(element(*bv, idx));
        },
        [&](int64_t bi, int64_t c, const int64_t *pos, double v) {
          int64_t at = bi * ot.strides[0] + c * ot.strides[1];
          for (int d = 0; d < spatial; ++d) at += pos[d] * ot.strides[2 + d];
          out.put(at, v);
        });
  }
  if (!out.bytes.empty())
    check(driver().cuMemcpyHtoD(out.device, out.bytes.data(), out.bytes.size()), "cuMemcpyHtoD",
          str_cat("writing the result of ", n.origin, " from the host loops"));
  // A copy from pageable memory may return before it lands: later work on any stream
  // must see the result.
  COIL_CU(cuCtxSynchronize);
}

// ---- products with an epilogue: cuBLASLt, else the post-ops on the host ----------------------

// The activation of an epilogue cuBLASLt runs (gpu_epilogue.h): its last post-op, or none.
// The bias: the post-op add's operand, or the product's own bias when it is a vector
// along the output's last dim added once (beta 1).
struct LtPlan {
  std::string reason;  // non-empty: not through cuBLASLt
  ProductPlan product;
  LtEpilogue epilogue = LtEpilogue::None;
  std::optional<View> bias;
  bool own_bias = false;  // the bias is the product's own (no bias_copy GEMMs, beta 0)
};

LtPlan plan_lt(const Program &p, const Node &n, const sched::Epilogue &e) {
  LtPlan lt;
  lt.product = plan_product(p, n);
  if (!lt.product.reason.empty()) {
    lt.reason = lt.product.reason;
    return lt;
  }
  if (lt.product.empty) return lt;
  if (std::string why = codegen::cublaslt_epilogue_problem(p, n, e); !why.empty()) {
    lt.reason = why;
    return lt;
  }
  if (lt.product.dtype == DType::F64) {
    lt.reason = "cuBLASLt's epilogues here take no f64";
    return lt;
  }
  bool act_relu = false, act_gelu = false;
  for (const sched::PostOp &op : e.ops) {
    if (op.kind == sched::PostOpKind::Add) lt.bias = op.operand;
    act_relu = act_relu || op.kind == sched::PostOpKind::Relu;
    act_gelu = act_gelu || op.kind == sched::PostOpKind::GeluTanh;
  }
  ProductShape s = product_shape(n);
  if (s.bias && s.beta == 1 && !lt.product.bias_strides.empty() && lt.product.bias_strides.back() == 1) {
    bool vector = true;
    for (size_t d = 0; d + 1 < lt.product.bias_strides.size(); ++d) vector = vector && lt.product.bias_strides[d] == 0;
    if (vector) {
      lt.bias = *s.bias;
      lt.own_bias = true;
      lt.product.bias_copy.clear();
      lt.product.product.beta = 0;
    }
  }
  if (lt.bias && !lt.product.swapped) {
    lt.reason = "the output is column-major, and cuBLASLt adds a bias along its rows";
    return lt;
  }
  lt.epilogue = lt.bias ? (act_relu ? LtEpilogue::ReluBias : act_gelu ? LtEpilogue::GeluBias : LtEpilogue::Bias)
                        : (act_relu ? LtEpilogue::Relu : act_gelu ? LtEpilogue::Gelu : LtEpilogue::None);
  // The result goes where the epilogue stores (gpu_epilogue.h: the same layout).
  lt.product.product.c.buffer = e.out.buffer;
  lt.product.product.c.offset = e.out.offset;
  for (GemmCall &g : lt.product.bias_copy) {
    g.c.buffer = e.out.buffer;
    g.c.offset += e.out.offset;
  }
  return lt;
}

void run_lt(const LtPlan &lt, const BufferAddress &address, CUstream stream, const Where &where) {
  ThreadState &state = thread_state();
  DType t = lt.product.dtype;
  if (!lt.product.bias_copy.empty()) {  // the product's own bias, broadcast into D first
    if (!state.blas) COIL_CUBLAS(cublasCreate, &state.blas);
    COIL_CUBLAS(cublasSetStream, state.blas, stream);
    CUdeviceptr ones = ones_vector(state, t, lt.product.ones);
    for (const GemmCall &g : lt.product.bias_copy) run_gemm(state.blas, g, t, address, ones, where);
  }
  const GemmCall &g = lt.product.product;
  LtGemm call;
  call.type = blas_type(t);
  call.m = g.m, call.n = g.n, call.k = g.k, call.batches = g.batches;
  call.a = {device_pointer(address(g.a.buffer), g.a.offset, t), g.a.mat.op == CUBLAS_OP_T, g.a.mat.ld, g.a.batch_stride};
  call.b = {device_pointer(address(g.b.buffer), g.b.offset, t), g.b.mat.op == CUBLAS_OP_T, g.b.mat.ld, g.b.batch_stride};
  call.d = device_pointer(address(g.c.buffer), g.c.offset, t);
  call.ldd = g.c.mat.ld;
  call.d_batch_stride = g.c.batch_stride;
  call.alpha = g.alpha;
  call.beta = g.beta;
  call.epilogue = lt.epilogue;
  if (lt.bias) call.bias = device_pointer(address(lt.bias->buffer), lt.bias->offset, t);
  Scratch &workspace = state.workspaces[stream];
  workspace.reserve(kLtWorkspaceBytes, "the cuBLASLt workspace");
  lt_matmul(call, stream, reinterpret_cast<void *>(uintptr_t(workspace.ptr)), workspace.bytes, where.text());
}

// One post-op on the running value y, as the IR computes it (f32 math, in double here).
double post_op(const sched::PostOp &op, double y, double t) {
  using K = sched::PostOpKind;
  float a = float(op.alpha), b = float(op.beta);
  switch (op.kind) {
    case K::Relu: return y < 0 ? a * y : y;
    case K::Elu: return y > 0 ? y : a * std::expm1(y);
    case K::GeluErf: return 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
    case K::GeluTanh: return 0.5 * y * (1 + std::tanh(std::sqrt(2 / M_PI) * (y + 0.044715 * y * y * y)));
    case K::Tanh: return std::tanh(y);
    case K::Sigmoid: return 1 / (1 + std::exp(-y));
    case K::Silu: return y / (1 + std::exp(-y));
    case K::Hardswish: return y * std::min(std::max(y + 3, 0.0), 6.0) / 6;
    case K::Exp: return std::exp(y);
    case K::Log: return std::log(y);
    case K::Abs: return std::fabs(y);
    case K::Sqrt: return std::sqrt(y);
    case K::Square: return y * y;
    case K::Linear: return a * y + b;
    case K::Clip: return std::min(std::max(y, double(a)), double(b));
    case K::Pow: return a * std::pow(y, double(b));
    case K::Add: return y + t;
    case K::Sub: return y - t;
    case K::Mul: return y * t;
    case K::Div: return y / t;
  }
  return y;
}

// The epilogue's post-ops on the host: reads the product's result at `result` (laid out
// as the call's output buffer), every operand, and writes the last value through e.out.
void run_epilogue_on_host(const Program &p, const Node &n, const sched::Epilogue &e, CUdeviceptr result,
                          const BufferAddress &address, CUstream stream) {
  const TensorType &rt = p.buffer(n.outputs[0]).type;
  COIL_CU(cuStreamSynchronize, stream);
  auto fetch = [&](BufferId b, CUdeviceptr at, const TensorType &t) {
    HostCopy h;
    h.dtype = t.dtype;
    h.device = at;
    h.bytes.resize(size_t(storage_extent(t)) * size_t(itemsize(t.dtype)));
    if (!h.bytes.empty())
      check(driver().cuMemcpyDtoH(h.bytes.data(), at, h.bytes.size()), "cuMemcpyDtoH",
            str_cat("reading ", b >= 0 ? p.buffer(b).name : std::string("the product"), " for the epilogue of ", n.origin));
    return h;
  };
  HostCopy y = fetch(-1, result, rt);
  std::map<BufferId, HostCopy> operands;
  for (const sched::PostOp &op : e.ops)
    if (op.binary() && !operands.count(op.operand.buffer))
      operands.emplace(op.operand.buffer, fetch(op.operand.buffer, address(op.operand.buffer), p.buffer(op.operand.buffer).type));
  HostCopy out = fetch(e.out.buffer, address(e.out.buffer), p.buffer(e.out.buffer).type);
  std::vector<int64_t> idx(rt.sizes.size());  // the element's index, one buffer for all
  for_each_offset(rt.sizes, rt.strides, 0, [&](int64_t flat, int64_t at) {
    for (int64_t d = int64_t(idx.size()) - 1, rest = flat; d >= 0; --d) {
      idx[size_t(d)] = rest % rt.sizes[size_t(d)];
      rest /= rt.sizes[size_t(d)];
    }
    double v = y.get(at);
    for (const sched::PostOp &op : e.ops)
      v = double(float(post_op(op, v, op.binary() ? operands.at(op.operand.buffer).get(element(op.operand, idx.data())) : 0)));
    out.put(element(e.out, idx.data()), v);
  });
  if (!out.bytes.empty())
    check(driver().cuMemcpyHtoD(out.device, out.bytes.data(), out.bytes.size()), "cuMemcpyHtoD",
          str_cat("writing the epilogue of ", n.origin, " from the host loops"));
  COIL_CU(cuCtxSynchronize);
}

}  // namespace

bool cublas_available() { return loaded_cublas().reason.empty(); }
std::string cublas_unavailable_reason() { return loaded_cublas().reason; }
bool cudnn_available() { return loaded_cudnn().reason.empty(); }
std::string cudnn_unavailable_reason() { return loaded_cudnn().reason; }

std::string gpu_extern_library(const Program &p, const Node &n, bool assume_libraries) {
  return gpu_extern_library(p, n, nullptr, assume_libraries);
}

std::string gpu_extern_library(const Program &p, const Node &n, const sched::Epilogue *epilogue, bool assume_libraries) {
  try {
    if (!epilogue) return decide(p, n, assume_libraries);
    LtPlan lt = plan_lt(p, n, *epilogue);
    std::string why = lt.reason;
    if (why.empty() && !assume_libraries && !cublaslt_available()) why = cublaslt_unavailable_reason();
    if (why.empty())
      return str_cat("cuBLASLt cublasLtMatmul with epilogue ", lt_epilogue_name(lt.epilogue), " (",
                     precision_words(lt.product.dtype), ")",
                     lt.product.bias_copy.empty() ? "" : ", the product's bias broadcast first by cuBLAS GEMMs");
    return str_cat("host loops for the epilogue (", why, "); the product: ", decide(p, n, assume_libraries));
  } catch (const std::exception &e) {
    return str_cat("host loops: ", e.what());
  }
}

std::string gpu_extern_library(const Program &p, const Node &n) { return gpu_extern_library(p, n, false); }

void run_gpu_extern(const Program &p, const Node &n, const BufferAddress &address, CUstream stream) {
  run_gpu_extern(p, n, address, stream, {});
}

void run_gpu_extern(const Program &p, const Node &n, const BufferAddress &address, CUstream stream,
                    std::string_view kernel, const sched::Epilogue *epilogue) {
  COIL_ASSERT(n.kind == ir::NodeKind::Extern && n.outputs.size() == 1, "run_gpu_extern of a node that is not an extern call");
  driver();  // no driver: its reason, before any library is tried
  Where where{n, kernel};
  if (epilogue) {
    LtPlan lt = plan_lt(p, n, *epilogue);
    if (lt.product.empty && lt.reason.empty()) return;
    if (lt.reason.empty() && cublaslt_available() && (lt.product.bias_copy.empty() || cublas_available())) {
      run_lt(lt, address, stream, where);
      return;
    }
    // The product into a buffer of its own, then the post-ops on the host.
    const TensorType &t = p.buffer(n.outputs[0]).type;
    DeviceBuffer result(size_t(std::max<int64_t>(storage_extent(t), 1)) * size_t(itemsize(t.dtype)));
    BufferAddress with_result = [&](BufferId b) { return b == n.outputs[0] ? result.ptr() : address(b); };
    run_gpu_extern(p, n, with_result, stream, kernel, nullptr);
    run_epilogue_on_host(p, n, *epilogue, result.ptr(), address, stream);
    return;
  }
  if (is_product(n)) {
    ProductPlan plan = plan_product(p, n);
    if (plan.empty) return;
    bool bias_in_place = false;
    if (plan.reason.empty() && cublas_available() && product_addresses_fit(p, n, plan, address, bias_in_place)) {
      if (bias_in_place) plan.bias_copy.clear();
      run_product(p, n, plan, address, stream, where);
      return;
    }
  } else {
    ConvPlan plan = plan_convolution(p, n);
    if (plan.empty) return;
    if (plan.reason.empty() && cudnn_available() && convolution_addresses_fit(p, n, address)) {
      run_convolution(p, n, plan, address, stream, where);
      return;
    }
  }
  run_on_host(p, n, address, stream);
}

}  // namespace coil::cuda
