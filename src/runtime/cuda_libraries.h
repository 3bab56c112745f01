// cuBLAS and cuDNN loaded at run time, as the driver is (runtime/cuda_driver.h): the few
// declarations coil uses, with their headers' values, the function tables, whether each
// library loaded (and why not), and errors that name the library's status. Neither
// library is needed to build coil. cuBLASLt is runtime/cuda_blaslt.h.
// Tests: tests/unit/cuda_extern_test.cpp (loading, any machine), tests/gpu/extern_test.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/cuda_driver.h"

// The libraries' opaque handles, declared as their headers declare them.
struct cublasContext;
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;

namespace coil::cuda {

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
  cudnnStatus_t (*cudnnTransformTensor)(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t x_desc,
                                        const void *x, const void *beta, cudnnTensorDescriptor_t y_desc, void *y);
};

/// Whether libcublas loaded with every function coil calls (no GPU needed to answer).
/// Never throws; the first call loads it.
bool cublas_available();
/// Why not, in words ("libcublas.so.13, libcublas.so.12 and libcublas.so cannot be loaded
/// (...): no cuBLAS on this machine"); empty when available.
std::string cublas_unavailable_reason();
/// The same for libcudnn.
bool cudnn_available();
std::string cudnn_unavailable_reason();

/// The loaded tables; only when available.
const Cublas &cublas();
const Cudnn &cudnn();

/// A UserError "<call> failed with <status name> while <what>" unless `status` is success.
void check_cublas(cublasStatus_t status, const char *call, std::string_view what);
void check_cudnn(cudnnStatus_t status, const char *call, std::string_view what);

}  // namespace coil::cuda

/// Calls a library function, checked; `what` (in scope) says what was being done.
#define COIL_CUBLAS(fn, ...) ::coil::cuda::check_cublas(::coil::cuda::cublas().fn(__VA_ARGS__), #fn, what)
#define COIL_CUDNN(fn, ...) ::coil::cuda::check_cudnn(::coil::cuda::cudnn().fn(__VA_ARGS__), #fn, what)
