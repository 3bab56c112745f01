// The Triton dialect's attention kernel: an Attention call (ir::ExternOp::Attention) as one
// flash-attention kernel generated for its literal sizes and strides. Each program owns
// BLOCK_M query rows of one (batch, head) and walks the keys in blocks of BLOCK_N, keeping a
// running maximum, sum and weighted sum of values per row (the online softmax, in exp2 with
// the scale folded into log2 e), so the scores never reach memory:
//
//   @triton.jit
//   def kernel4(in_ptr0, out_ptr0, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
//       pid = tl.program_id(0)
//       start_m = pid % 4
//       ...
//       for start_n in range(0, hi, BLOCK_N):
//           k = tl.load(...)
//           qk = tl.dot(q, k) * 0.18033688011112042
//           ...
//
// Causal attention stops each program's key loop at its last row (the top-left causal mask
// of PyTorch); masks are loaded per tile (boolean: false drops the key; else added). A row
// with every key dropped is 0. f32 products are exact f32 (no TF32), as PyTorch's kernels
// compute them; f64 uses broadcast products. The plan (block sizes, warps, stages) is
// decided before the kernel is printed and tuned by driver/autotune.h.
//
// For training (ir::AttentionPart), the forward also stores each row's logsumexp when the
// call has it as a second output, and the backward is one kernel of two kinds of programs:
// one per block of keys walks the query rows (dk += dS^T q, dv += P^T dO), one per block of
// query rows walks the keys (dq += dS k), so that no two programs add to one row. Each
// recomputes P = exp2(S log2 e - lse log2 e) from the logsumexp.
// Tests: tests/gpu (the attention fixtures on the H200), tests/unit/triton_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "codegen/triton/triton_codegen.h"

namespace coil::codegen {

struct AttentionPlan {
  int64_t block_m = 128;  // query rows per program
  int64_t block_n = 64;   // keys per step of the loop
  int warps = 4;
  int stages = 3;

  TritonConfig config() const { return {block_m, block_n, warps, stages, 0}; }
  /// "BLOCK_M=128 BLOCK_N=64 warps=4 stages=3"
  std::string str() const;
};

/// The plan of attention kernel `k`: `config`'s fields where set, else the defaults for its
/// head size and dtype.
AttentionPlan plan_attention(const ir::Program &p, const ir::Kernel &k, const TritonConfig &config);

/// The plans worth timing: `chosen` first, then the others of a small grid of block sizes,
/// warps and stages that fit the kernel.
std::vector<AttentionPlan> attention_tuning_plans(const ir::Program &p, const ir::Kernel &k, const AttentionPlan &chosen);

/// The kernel of attention kernel `k` under `plan`; `args` gets the buffer behind each
/// pointer argument, in signature order.
GpuKernel emit_attention(const ir::Program &p, const ir::Kernel &k, const AttentionPlan &plan, std::vector<int> &args);

}  // namespace coil::codegen
