// Hand-written Triton kernels that the Triton build tests compile and the GPU launch test
// (tests/gpu/launch_test.cpp) also runs: each one exercises one part of the launch facts.
#pragma once

#include <string>

#include "runtime/triton_build.h"

namespace coil::test {

inline constexpr const char *kTritonImports = "import triton\nimport triton.language as tl\n\n\n";

/// out[i] = x[i] + y[i] for i < n: a masked tail, no shared memory.
inline TritonCompileRequest vector_add_kernel(int capability = 90) {
  TritonCompileRequest r;
  r.name = "add_kernel";
  r.source = std::string(kTritonImports) + R"(@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, XBLOCK: tl.constexpr):
    offsets = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
)";
  r.signature = {{"x_ptr", "*fp32"}, {"y_ptr", "*fp32"}, {"out_ptr", "*fp32"}, {"n", "i32"}, {"XBLOCK", "constexpr"}};
  r.constexprs = {{"XBLOCK", int64_t{1024}}};
  r.divisible_by_16 = {"x_ptr", "y_ptr", "out_ptr"};
  r.capability = capability;
  return r;
}

/// out[x] = sum(in[x, :rnumel]): one row per program lane, the whole row in one block
/// (a persistent reduction); 8 warps combine their partial sums through shared memory.
inline TritonCompileRequest row_sum_kernel(int capability = 90) {
  TritonCompileRequest r;
  r.name = "row_sum";
  r.source = std::string(kTritonImports) + R"(@triton.jit
def row_sum(in_ptr, out_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rindex = tl.arange(0, RBLOCK)[None, :]
    rmask = rindex < rnumel
    values = tl.load(in_ptr + (rindex + rnumel * xindex), xmask & rmask, other=0.0)
    tl.store(out_ptr + xindex, tl.sum(values, 1)[:, None], xmask)
)";
  r.signature = {{"in_ptr", "*fp32"}, {"out_ptr", "*fp32"},      {"xnumel", "i32"},
                 {"rnumel", "i32"},   {"XBLOCK", "constexpr"}, {"RBLOCK", "constexpr"}};
  r.constexprs = {{"XBLOCK", int64_t{4}}, {"RBLOCK", int64_t{512}}};
  r.divisible_by_16 = {"in_ptr", "out_ptr"};
  r.num_warps = 8;
  r.capability = capability;
  return r;
}

/// c = a @ b (fp16 in, fp32 out, row-major, masked edges) in 128x128 tiles; the pipelined
/// 128x64 and 64x128 fp16 tiles need more than the 48 KiB of shared memory a launch gets
/// by default (64 KiB with Triton 3.6).
inline TritonCompileRequest matmul_kernel(int capability = 90) {
  TritonCompileRequest r;
  r.name = "matmul_kernel";
  r.source = std::string(kTritonImports) + R"(@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a_mask = (rm[:, None] < M) & ((k + rk)[None, :] < K)
        b_mask = ((k + rk)[:, None] < K) & (rn[None, :] < N)
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";
  r.signature = {{"a_ptr", "*fp16"}, {"b_ptr", "*fp16"}, {"c_ptr", "*fp32"},     {"M", "i32"},         {"N", "i32"},
                 {"K", "i32"},       {"BM", "constexpr"}, {"BN", "constexpr"}, {"BK", "constexpr"}};
  r.constexprs = {{"BM", int64_t{128}}, {"BN", int64_t{128}}, {"BK", int64_t{64}}};
  r.divisible_by_16 = {"a_ptr", "b_ptr", "c_ptr"};
  r.num_warps = 8;
  r.num_stages = 3;
  r.capability = capability;
  return r;
}

/// dst = 2 * src over an M x N fp32 matrix through tensor descriptors made on the device,
/// which Triton places in the global scratch buffer: a kernel whose hidden pointer is not null.
inline TritonCompileRequest scaled_copy_kernel(int capability = 90) {
  TritonCompileRequest r;
  r.name = "scaled_copy";
  r.source = std::string(kTritonImports) + R"(@triton.jit
def scaled_copy(src_ptr, dst_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]) * 2.0)
)";
  r.signature = {{"src_ptr", "*fp32"}, {"dst_ptr", "*fp32"},   {"M", "i32"},
                 {"N", "i32"},         {"BM", "constexpr"}, {"BN", "constexpr"}};
  r.constexprs = {{"BM", int64_t{32}}, {"BN", int64_t{32}}};
  r.divisible_by_16 = {"src_ptr", "dst_ptr", "N"};
  r.capability = capability;
  return r;
}

}  // namespace coil::test
