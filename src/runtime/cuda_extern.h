// The extern calls of the loop IR (matrix products, convolutions) on the GPU, through the
// vendor libraries loaded at run time as the driver is (runtime/cuda_driver.h): cuBLAS
// for the matmul family, cuDNN for convolutions. Neither is needed to build coil, and a
// machine without them still runs every call: what a library cannot take (a view it has
// no layout for, an integer dtype, a missing library) runs as coil's plain loops
// (runtime/include/coil/extern_loops.h) on the host, between a download and an upload.
//
// Products: one cublasGemmStridedBatchedEx per call. Row-major C = A @ B is the column-major
// product C^T = B^T A^T, so a row-major output needs no copy; each operand needs a unit
// stride in one of its two matrix dims, the other being its leading dimension. f32 runs in
// full precision (CUBLAS_COMPUTE_32F, never TF32, as PyTorch's default), f16 and bf16 with
// f32 accumulation, f64 in f64. A bias (addmm, baddbmm, addmv) is first broadcast into the
// output by cuBLAS itself, as GEMMs with one inner element against a vector of ones (a
// copy that is exact: one product by 1, no sum), then the product adds to it with beta.
// beta = 0 never reads the bias, NaNs included, as PyTorch does.
//
// Convolutions: cuDNN's convolution API, 1 to 3 spatial dims (1 as 2 with a unit height),
// input and output described by their strides, the weight packed (a cuDNN filter takes
// no strides), groups, dilation; the bias added after by cudnnAddTensor; a transposed
// convolution is cuDNN's backward-data pass. f32 without TF32 (FMA kernels only).
//
// Products with an epilogue (bias, relu, gelu_tanh fused by the scheduler where
// codegen/triton/gpu_epilogue.h says cuBLASLt takes it): one cublasLtMatmul with the
// epilogue, writing the epilogue's output; the call's own output is never stored. Without
// cuBLASLt, or for a layout it cannot take, the product runs as above into a buffer of its
// own and the post-ops run on the host.
//
// Every library call is checked; a failure names the call, the library's status name,
// the graph node and the kernel. Tests: tests/unit/cuda_extern_test.cpp (any machine),
// tests/gpu/extern_test.cpp (a GPU).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ir/loop_ir.h"
#include "runtime/cuda_driver.h"
#include "scheduler/epilogue.h"

namespace coil::cuda {

/// The device address of element 0 of buffer `b`'s storage, as the executor placed it.
using BufferAddress = std::function<CUdeviceptr(ir::BufferId)>;

/// Which library runs extern node `n` of `p` on the GPU, in words for `coil compile --explain`:
/// e.g. "cuBLAS cublasGemmStridedBatchedEx (f32, TF32 off)", "cuDNN convolution forward (NCHW)",
/// or "host loops: <reason>" (no libcublas on this machine, a view cuBLAS cannot take, ...).
/// Decided from the node alone plus library availability; never throws.
std::string gpu_extern_library(const ir::Program &p, const ir::Node &n);

/// The same decision as if cuBLAS, cuBLASLt and cuDNN were loadable here
/// (`assume_libraries`), or with what this machine has (false): the node's part of the
/// decision, testable anywhere. With `epilogue` (fused onto `n`): "cuBLASLt cublasLtMatmul
/// with epilogue bias+relu (...)", or "host loops for the epilogue: <why>; the product:
/// <the decision without it>".
std::string gpu_extern_library(const ir::Program &p, const ir::Node &n, bool assume_libraries);
std::string gpu_extern_library(const ir::Program &p, const ir::Node &n, const sched::Epilogue *epilogue,
                               bool assume_libraries);

/// Runs extern node `n`: reads its operand views (ir::View: buffer, sizes, strides, offset, in
/// elements) and writes its output buffer n.outputs[0] (the whole buffer, laid out by
/// p.buffer(out).type.strides) at the addresses given, on `stream`.
void run_gpu_extern(const ir::Program &p, const ir::Node &n, const BufferAddress &address, CUstream stream);

/// The same, with the name of the kernel the call belongs to, for error messages, and the
/// epilogue fused onto the call (null: none), whose output it then writes instead.
void run_gpu_extern(const ir::Program &p, const ir::Node &n, const BufferAddress &address, CUstream stream,
                    std::string_view kernel, const sched::Epilogue *epilogue = nullptr);

/// Whether libcublas loaded with every function coil calls (no GPU needed to answer).
/// Never throws; the first call loads it.
bool cublas_available();
/// Why not, in words ("libcublas.so.13, libcublas.so.12 and libcublas.so cannot be loaded
/// (...): no cuBLAS on this machine"); empty when available.
std::string cublas_unavailable_reason();

/// The same for libcudnn.
bool cudnn_available();
std::string cudnn_unavailable_reason();

}  // namespace coil::cuda
