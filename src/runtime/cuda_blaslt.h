// cuBLASLt, loaded at run time: one matrix product with its epilogue (a bias vector, then
// relu or gelu) in one call, for the extern calls the scheduler fused an epilogue onto
// (codegen/gpu/gpu_epilogue.h). The plan (codegen/gpu/extern_plan.h) gives the product in
// cuBLAS's column-major terms; an LtMatmul is made from it once, when the program is
// loaded (descriptors, layouts, the heuristic's algorithm), and run per call with the
// operands' addresses. Without libcublasLt the executor runs the call on the host's loops.
// Tests: tests/gpu/extern_test.cpp (a GPU); availability in tests/unit/cuda_extern_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "codegen/gpu/extern_plan.h"
#include "runtime/cuda_driver.h"

namespace coil::cuda {

/// Whether libcublasLt loaded with every function coil calls (no GPU needed to answer).
/// Never throws; the first call loads it.
bool cublaslt_available();
/// Why not, in words; empty when available.
std::string cublaslt_unavailable_reason();

/// One matrix of a product, column-major as cuBLAS sees it: `rows` x `cols` of the
/// product's op(M), stored with leading dimension `ld` and transposed when `transposed`.
struct LtMatrix {
  bool transposed = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;  // elements
};

/// D = epilogue(alpha * op(A) op(B) + beta * D), m x n with inner size k, over `batches`
/// (D doubles as C). `type` is cudaDataType_t of every matrix (CUDA_R_32F, R_16F, R_16BF):
/// f32 is computed without TF32, f16 and bf16 in f32. The bias (Bias epilogues) is a
/// vector of m elements of the same type, shared by every batch, at `bias`: part of the
/// descriptor, so an LtMatmul is made for one bias address.
struct LtGemm {
  int type = 0;
  int64_t m = 0, n = 0, k = 0, batches = 1;
  LtMatrix a, b;
  int64_t ldd = 1, d_batch_stride = 0;
  double alpha = 1, beta = 0;
  codegen::LtEpilogue epilogue = codegen::LtEpilogue::None;
  const void *bias = nullptr;
};

/// One product with its epilogue, prepared: made in the current context, it creates the
/// descriptors and layouts of `g` and asks cuBLASLt's heuristic once for an algorithm
/// within `workspace_bytes`. A UserError naming the call and `what` on failure, also when
/// no algorithm takes the problem.
class LtMatmul {
 public:
  LtMatmul(const LtGemm &g, size_t workspace_bytes, std::string what);
  ~LtMatmul();
  LtMatmul(const LtMatmul &) = delete;
  LtMatmul &operator=(const LtMatmul &) = delete;

  /// D = epilogue(op(A) op(B) ...) on `stream`: the library call alone.
  void run(const void *a, const void *b, void *d, CUstream stream, void *workspace) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
  std::string what_;
};

}  // namespace coil::cuda
