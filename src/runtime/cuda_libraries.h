// cuBLAS and cuDNN loaded at run time, as the driver is (runtime/cuda_driver.h): the few
// declarations coil uses, with their headers' values, the function tables, whether each
// library loaded (and why not), and errors that name the library's status. Neither
// library is needed to build coil. cuBLASLt is runtime/cuda_blaslt.h.
// Tests: tests/unit/cuda_extern_test.cpp (loading, any machine), tests/gpu/extern_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/cuda_driver.h"

// The libraries' opaque handles, declared as their headers declare them.
struct cublasContext;
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
struct cudnnBackendStruct;

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
constexpr int CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 = 1;  // cudnnConvolutionBwdFilterAlgo_t

// ---- cuDNN's backend (graph) API: a convolution planned once and run by one call, with
// cudnn_graph.h's values. The legacy calls above plan inside every call (tens to hundreds
// of microseconds of host time each on cuDNN 9); an execution plan does not.

using cudnnBackendDescriptor_t = cudnnBackendStruct *;
constexpr cudnnStatus_t CUDNN_STATUS_NOT_SUPPORTED = 3000;
// cudnnBackendDescriptorType_t
constexpr int CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR = 1;
constexpr int CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2;
constexpr int CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3;
constexpr int CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4;
constexpr int CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5;
constexpr int CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR = 10;
constexpr int CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR = 11;
constexpr int CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR = 12;
constexpr int CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15;
constexpr int CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16;
constexpr int CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17;
// cudnnBackendAttributeType_t
constexpr int CUDNN_TYPE_HANDLE = 0;
constexpr int CUDNN_TYPE_DATA_TYPE = 1;
constexpr int CUDNN_TYPE_INT64 = 3;
constexpr int CUDNN_TYPE_FLOAT = 4;
constexpr int CUDNN_TYPE_DOUBLE = 5;
constexpr int CUDNN_TYPE_VOID_PTR = 6;
constexpr int CUDNN_TYPE_CONVOLUTION_MODE = 7;
constexpr int CUDNN_TYPE_HEUR_MODE = 8;
constexpr int CUDNN_TYPE_NUMERICAL_NOTE = 11;
constexpr int CUDNN_TYPE_BACKEND_DESCRIPTOR = 15;
// cudnnBackendAttributeName_t
constexpr int CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100;
constexpr int CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101;
constexpr int CUDNN_ATTR_CONVOLUTION_DILATIONS = 102;
constexpr int CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103;
constexpr int CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104;
constexpr int CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105;
constexpr int CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106;
constexpr int CUDNN_ATTR_ENGINEHEUR_MODE = 200;
constexpr int CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201;
constexpr int CUDNN_ATTR_ENGINEHEUR_RESULTS = 202;
constexpr int CUDNN_ATTR_ENGINECFG_ENGINE = 300;
constexpr int CUDNN_ATTR_EXECUTION_PLAN_HANDLE = 400;
constexpr int CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401;
constexpr int CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA = 706;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA = 707;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC = 708;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W = 709;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX = 710;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY = 711;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA = 712;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA = 713;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC = 714;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW = 715;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X = 716;
constexpr int CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY = 717;
constexpr int CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800;
constexpr int CUDNN_ATTR_OPERATIONGRAPH_OPS = 801;
constexpr int CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900;
constexpr int CUDNN_ATTR_TENSOR_DATA_TYPE = 901;
constexpr int CUDNN_ATTR_TENSOR_DIMENSIONS = 902;
constexpr int CUDNN_ATTR_TENSOR_STRIDES = 903;
constexpr int CUDNN_ATTR_TENSOR_UNIQUE_ID = 906;
constexpr int CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000;
constexpr int CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001;
constexpr int CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003;
constexpr int CUDNN_ATTR_ENGINE_GLOBAL_INDEX = 1301;
constexpr int CUDNN_ATTR_ENGINE_NUMERICAL_NOTE = 1303;
// cudnnBackendHeurMode_t
constexpr int CUDNN_HEUR_MODE_A = 3;
// cudnnBackendNumericalNote_t: an engine with this note rounds f32 inputs (TF32).
constexpr int CUDNN_NUMERICAL_NOTE_TENSOR_CORE = 0;
constexpr int CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS = 1;

// cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and
// cudnnConvolutionBwdFilterAlgoPerf_t share this layout.
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
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterAlgorithm_v7)(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                                 cudnnTensorDescriptor_t dy,
                                                                 cudnnConvolutionDescriptor_t conv,
                                                                 cudnnFilterDescriptor_t dw, int requested,
                                                                 int *returned, cudnnAlgoPerf *results);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterWorkspaceSize)(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                                  cudnnTensorDescriptor_t dy,
                                                                  cudnnConvolutionDescriptor_t conv,
                                                                  cudnnFilterDescriptor_t dw, int algo, size_t *bytes);
  cudnnStatus_t (*cudnnConvolutionBackwardFilter)(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t x_desc,
                                                  const void *x, cudnnTensorDescriptor_t dy_desc, const void *dy,
                                                  cudnnConvolutionDescriptor_t conv, int algo, void *workspace,
                                                  size_t workspace_bytes, const void *beta,
                                                  cudnnFilterDescriptor_t dw_desc, void *dw);
  cudnnStatus_t (*cudnnAddTensor)(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t a_desc,
                                  const void *a, const void *beta, cudnnTensorDescriptor_t c_desc, void *c);
  cudnnStatus_t (*cudnnTransformTensor)(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t x_desc,
                                        const void *x, const void *beta, cudnnTensorDescriptor_t y_desc, void *y);
  // The backend API (cuDNN 8+); null when the library lacks it (the legacy calls then).
  cudnnStatus_t (*cudnnBackendCreateDescriptor)(int type, cudnnBackendDescriptor_t *desc);
  cudnnStatus_t (*cudnnBackendDestroyDescriptor)(cudnnBackendDescriptor_t desc);
  cudnnStatus_t (*cudnnBackendFinalize)(cudnnBackendDescriptor_t desc);
  cudnnStatus_t (*cudnnBackendSetAttribute)(cudnnBackendDescriptor_t desc, int name, int type, int64_t count,
                                            const void *elements);
  cudnnStatus_t (*cudnnBackendGetAttribute)(cudnnBackendDescriptor_t desc, int name, int type, int64_t requested,
                                            int64_t *count, void *elements);
  cudnnStatus_t (*cudnnBackendExecute)(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                       cudnnBackendDescriptor_t variant_pack);
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
