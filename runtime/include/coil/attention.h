// Fused attention on the CPU (the C++ dialect's attention kernel, codegen/cpp/cpp_extern.cpp):
//
//   out[b, h, i, :] = sum_j softmax_j(scale * q[b, h, i, :] . k[b, h', j, :] + mask[b, h, i, j]) * v[b, h', j, :]
//
// with h' = h / kv_group (grouped-query attention shares a key/value head among kv_group
// query heads), keys j > i dropped when causal (the top-left causal mask of PyTorch), a
// boolean mask dropping keys where it is false, an additive one added. Each query row keeps
// a running maximum, sum and weighted sum of values over blocks of kKeyBlock keys (the
// online softmax), so the row of scores never exists whole: no buffer of Lq x Lk, nothing
// allocated. A row whose keys are all dropped is 0, as PyTorch's math backend gives.
// Accumulation in float (double for f64 inputs); each weight is rounded to the inputs'
// dtype before it multiplies a value (bf16 and f16, as PyTorch's fused kernels do), while
// the sum that divides the row is of the unrounded weights. Rows are spread over the threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "coil/prelude.h"

namespace coil_rt::attention {

// How a stored element reads and writes: float, double, and bf16/f16 kept as uint16_t.
struct F32 {
  using storage = float;
  using acc = float;
  static float get(float x) { return x; }
  static float put(float x) { return x; }
};
struct F64 {
  using storage = double;
  using acc = double;
  static double get(double x) { return x; }
  static double put(double x) { return x; }
};
struct BF16 {
  using storage = uint16_t;
  using acc = float;
  static float get(uint16_t x) { return bf16_to_f32(x); }
  static uint16_t put(float x) { return f32_to_bf16(x); }
};
struct F16 {
  using storage = uint16_t;
  using acc = float;
  static float get(uint16_t x) { return f16_to_f32(x); }
  static uint16_t put(float x) { return f32_to_f16(x); }
};
struct Bool {
  using storage = bool;
  static float get(bool x) { return x ? 1.0f : 0.0f; }
};
struct NoMask {
  using storage = bool;
};

/// Strides in elements of a [batch, heads, rows, cols] view.
struct Strides {
  int64_t b, h, r, c;
};

struct Shape {
  int64_t batch, heads, kv_group, lq, lk, d, dv;
  double scale;
  bool causal;
  Strides q, k, v, mask, out;
};

/// The larger of a and b, NaN if either is (a NaN score makes its row NaN, as in eager).
template <typename Acc> Acc max_nan(Acc a, Acc b) { return a != a || a > b ? a : b; }

inline constexpr int64_t kKeyBlock = 64;
inline constexpr int64_t kMaxHeadDim = 1024;  // lowering/extern.cpp refuses longer heads on the CPU

/// `Mask` is NoMask, Bool (false drops the key) or an element type (added to the score).
template <typename T, typename Mask>
void run(const typename T::storage *q, const typename T::storage *k, const typename T::storage *v,
         const typename Mask::storage *mask, typename T::storage *out, const Shape &s) {
  using Acc = typename T::acc;
  const Acc neg_inf = -std::numeric_limits<Acc>::infinity();
  int64_t rows = s.batch * s.heads * s.lq;
#pragma omp parallel for num_threads(threads_for(rows * s.lk * (s.d + s.dv))) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t i = row % s.lq, h = (row / s.lq) % s.heads, b = row / (s.lq * s.heads), hk = h / s.kv_group;
    const auto *qr = q + b * s.q.b + h * s.q.h + i * s.q.r;
    const auto *kb = k + b * s.k.b + hk * s.k.h;
    const auto *vb = v + b * s.v.b + hk * s.v.h;
    Acc qf[kMaxHeadDim], acc[kMaxHeadDim], score[kKeyBlock];
    for (int64_t d = 0; d < s.d; ++d) qf[d] = Acc(T::get(qr[d * s.q.c])) * Acc(s.scale);
    for (int64_t d = 0; d < s.dv; ++d) acc[d] = 0;
    Acc run_max = neg_inf, run_sum = 0;
    int64_t keys = s.causal ? (i + 1 < s.lk ? i + 1 : s.lk) : s.lk;
    for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
      int64_t n = keys - j0 < kKeyBlock ? keys - j0 : kKeyBlock;
      Acc block_max = neg_inf;
      for (int64_t j = 0; j < n; ++j) {
        const auto *kr = kb + (j0 + j) * s.k.r;
        Acc dot = 0;
        for (int64_t d = 0; d < s.d; ++d) dot += qf[d] * Acc(T::get(kr[d * s.k.c]));
        if constexpr (!std::is_same_v<Mask, NoMask>) {
          auto m = mask[b * s.mask.b + h * s.mask.h + i * s.mask.r + (j0 + j) * s.mask.c];
          if constexpr (std::is_same_v<Mask, Bool>) {
            if (!m) dot = neg_inf;
          } else {
            dot += Acc(Mask::get(m));
          }
        }
        score[j] = dot;
        block_max = max_nan(dot, block_max);
      }
      if (block_max == neg_inf) continue;  // every key of the block dropped
      Acc new_max = max_nan(block_max, run_max);
      Acc rescale = std::exp(run_max - new_max);  // 0 while run_max is -inf
      run_sum *= rescale;
      for (int64_t d = 0; d < s.dv; ++d) acc[d] *= rescale;
      for (int64_t j = 0; j < n; ++j) {
        Acc p = std::exp(score[j] - new_max);
        run_sum += p;
        p = Acc(T::get(T::put(p)));  // the weight rounded to the input's dtype, as PyTorch's kernels multiply it
        const auto *vr = vb + (j0 + j) * s.v.r;
        for (int64_t d = 0; d < s.dv; ++d) acc[d] += p * Acc(T::get(vr[d * s.v.c]));
      }
      run_max = new_max;
    }
    auto *o = out + b * s.out.b + h * s.out.h + i * s.out.r;
    Acc inv = run_sum > 0 ? Acc(1) / run_sum : Acc(0);
    for (int64_t d = 0; d < s.dv; ++d) o[d * s.out.c] = T::put(acc[d] * inv);
  }
}

}  // namespace coil_rt::attention
