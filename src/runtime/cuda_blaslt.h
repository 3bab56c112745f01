// cuBLASLt, loaded at run time: one matrix product with its epilogue (a bias vector, then
// relu or gelu) in one call, for the extern calls the scheduler fused an epilogue onto
// (codegen/triton/gpu_epilogue.h). runtime/cuda_extern.cpp plans the product in cuBLAS's
// column-major terms and calls lt_matmul; without libcublasLt it runs the epilogue on
// the host's loops instead.
// Tests: tests/gpu/extern_test.cpp (a GPU); availability in tests/unit/cuda_extern_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/cuda_driver.h"

namespace coil::cuda {

/// Whether libcublasLt loaded with every function coil calls (no GPU needed to answer).
/// Never throws; the first call loads it.
bool cublaslt_available();
/// Why not, in words; empty when available.
std::string cublaslt_unavailable_reason();

/// cuBLASLt's epilogues that coil uses (cublasLtEpilogue_t's values).
enum class LtEpilogue : int { None = 1, Relu = 2, Bias = 4, ReluBias = 6, Gelu = 32, GeluBias = 36 };

/// "bias+relu": what an epilogue adds to the product, for --explain.
std::string_view lt_epilogue_name(LtEpilogue e);

/// One matrix of a product, column-major as cuBLAS sees it: `rows` x `cols` of the
/// product's op(M), stored with leading dimension `ld` and transposed when `transposed`.
struct LtMatrix {
  const void *data = nullptr;
  bool transposed = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;  // elements
};

/// D = epilogue(alpha * op(A) op(B) + beta * D), m x n with inner size k, over `batches`
/// (D doubles as C). `type` is cudaDataType_t of every matrix (CUDA_R_32F, R_16F, R_16BF):
/// f32 is computed without TF32, f16 and bf16 in f32. The bias (Bias epilogues) is a
/// vector of m elements of the same type, shared by every batch.
struct LtGemm {
  int type = 0;
  int64_t m = 0, n = 0, k = 0, batches = 1;
  LtMatrix a, b;
  void *d = nullptr;
  int64_t ldd = 1, d_batch_stride = 0;
  double alpha = 1, beta = 0;
  LtEpilogue epilogue = LtEpilogue::None;
  const void *bias = nullptr;
};

/// Runs `g` on `stream` with the workspace given (cuBLASLt picks its algorithm by its
/// heuristic within that workspace). A UserError naming the call and `what` on failure,
/// also when no algorithm takes the problem.
void lt_matmul(const LtGemm &g, CUstream stream, void *workspace, size_t workspace_bytes, std::string_view what);

/// The workspace lt_matmul is given: 32 MiB, as cuBLAS takes on Hopper.
inline constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;

}  // namespace coil::cuda
