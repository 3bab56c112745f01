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
//
// For training (ir::AttentionPart): `logsumexp` writes each row's log(sum_j exp(S_ij)) by
// the same online pass without the values; `grad_query` (rows on threads) and `grad_key`,
// `grad_value` (keys on threads, so that no two threads add to one row) recompute
// P = exp(S - lse) from it: dv = P^T dO, dS = P * (dO v^T - D) * scale, dq = dS k,
// dk = dS^T q, with P and dS rounded to the inputs' dtype before they multiply.
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

/// The score of query row `qf` (scaled, in Acc) against key row `kr`, with the mask's
/// element `m` (`mask` at [b, h, i, j]) dropping or biasing it.
template <typename T, typename Mask, typename Acc>
Acc score_of(const Acc *qf, const typename T::storage *kr, const typename Mask::storage *m, const Shape &s) {
  Acc dot = 0;
  for (int64_t d = 0; d < s.d; ++d) dot += qf[d] * Acc(T::get(kr[d * s.k.c]));
  if constexpr (std::is_same_v<Mask, Bool>) {
    if (!*m) dot = -std::numeric_limits<Acc>::infinity();
  } else if constexpr (!std::is_same_v<Mask, NoMask>) {
    dot += Acc(Mask::get(*m));
  }
  return dot;
}

/// The mask's element at [b, h, i, j], or nullptr without a mask.
template <typename Mask>
const typename Mask::storage *mask_at(const typename Mask::storage *mask, const Shape &s, int64_t b, int64_t h, int64_t i,
                                      int64_t j) {
  if constexpr (std::is_same_v<Mask, NoMask>) return nullptr;
  else return mask + b * s.mask.b + h * s.mask.h + i * s.mask.r + j * s.mask.c;
}

/// One query row's online softmax over its keys: with values (`vb`, `acc`) the weighted sum
/// of the output, without them the logsumexp alone. Returns (running max, running sum).
template <typename T, typename Mask, typename Acc>
void online_row(const Acc *qf, const typename T::storage *kb, const typename T::storage *vb,
                const typename Mask::storage *mask, const Shape &s, int64_t b, int64_t h, int64_t i, Acc *acc, Acc &run_max,
                Acc &run_sum) {
  const Acc neg_inf = -std::numeric_limits<Acc>::infinity();
  Acc score[kKeyBlock];
  run_max = neg_inf;
  run_sum = 0;
  int64_t keys = s.causal ? (i + 1 < s.lk ? i + 1 : s.lk) : s.lk;
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    int64_t n = keys - j0 < kKeyBlock ? keys - j0 : kKeyBlock;
    Acc block_max = neg_inf;
    for (int64_t j = 0; j < n; ++j) {
      score[j] = score_of<T, Mask>(qf, kb + (j0 + j) * s.k.r, mask_at<Mask>(mask, s, b, h, i, j0 + j), s);
      block_max = max_nan(score[j], block_max);
    }
    if (block_max == neg_inf) continue;  // every key of the block dropped
    Acc new_max = max_nan(block_max, run_max);
    Acc rescale = std::exp(run_max - new_max);  // 0 while run_max is -inf
    run_sum *= rescale;
    if (vb)
      for (int64_t d = 0; d < s.dv; ++d) acc[d] *= rescale;
    for (int64_t j = 0; j < n; ++j) {
      Acc p = std::exp(score[j] - new_max);
      run_sum += p;
      if (!vb) continue;
      p = Acc(T::get(T::put(p)));  // the weight rounded to the input's dtype, as PyTorch's kernels multiply it
      const auto *vr = vb + (j0 + j) * s.v.r;
      for (int64_t d = 0; d < s.dv; ++d) acc[d] += p * Acc(T::get(vr[d * s.v.c]));
    }
    run_max = new_max;
  }
}

/// Query row i of head (b, h) scaled into qf; returns the key head's index.
template <typename T, typename Acc>
int64_t scaled_query(const typename T::storage *q, const Shape &s, int64_t b, int64_t h, int64_t i, Acc *qf) {
  const auto *qr = q + b * s.q.b + h * s.q.h + i * s.q.r;
  for (int64_t d = 0; d < s.d; ++d) qf[d] = Acc(T::get(qr[d * s.q.c])) * Acc(s.scale);
  return h / s.kv_group;
}

/// `Mask` is NoMask, Bool (false drops the key) or an element type (added to the score).
template <typename T, typename Mask>
void run(const typename T::storage *q, const typename T::storage *k, const typename T::storage *v,
         const typename Mask::storage *mask, typename T::storage *out, const Shape &s) {
  using Acc = typename T::acc;
  int64_t rows = s.batch * s.heads * s.lq;
#pragma omp parallel for num_threads(threads_for(rows * s.lk * (s.d + s.dv))) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t i = row % s.lq, h = (row / s.lq) % s.heads, b = row / (s.lq * s.heads);
    Acc qf[kMaxHeadDim], acc[kMaxHeadDim], run_max, run_sum;
    int64_t hk = scaled_query<T>(q, s, b, h, i, qf);
    for (int64_t d = 0; d < s.dv; ++d) acc[d] = 0;
    online_row<T, Mask>(qf, k + b * s.k.b + hk * s.k.h, v + b * s.v.b + hk * s.v.h, mask, s, b, h, i, acc, run_max,
                        run_sum);
    auto *o = out + b * s.out.b + h * s.out.h + i * s.out.r;
    Acc inv = run_sum > 0 ? Acc(1) / run_sum : Acc(0);
    for (int64_t d = 0; d < s.dv; ++d) o[d * s.out.c] = T::put(acc[d] * inv);
  }
}

/// Each row's logsumexp of its scores, -inf for a row whose keys are all dropped, into
/// `lse` ([B, H, L] through s.out's first three strides), in the accumulator's type.
template <typename T, typename Mask>
void logsumexp(const typename T::storage *q, const typename T::storage *k, const typename Mask::storage *mask,
               typename T::acc *lse, const Shape &s) {
  using Acc = typename T::acc;
  int64_t rows = s.batch * s.heads * s.lq;
#pragma omp parallel for num_threads(threads_for(rows * s.lk * s.d)) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t i = row % s.lq, h = (row / s.lq) % s.heads, b = row / (s.lq * s.heads);
    Acc qf[kMaxHeadDim], run_max, run_sum;
    int64_t hk = scaled_query<T>(q, s, b, h, i, qf);
    online_row<T, Mask>(qf, k + b * s.k.b + hk * s.k.h, nullptr, mask, s, b, h, i, qf, run_max, run_sum);
    lse[b * s.out.b + h * s.out.h + i * s.out.r] =
        run_max == -std::numeric_limits<Acc>::infinity() ? run_max : run_max + std::log(run_sum);
  }
}

/// The gradients' other operands: the incoming gradient dO [B, H, L, Dv], and the
/// logsumexp and D = rowsum(dO * out), [B, H, L] each (their strides' first three).
template <typename T>
struct GradOperands {
  const typename T::storage *grad_out;
  const typename T::acc *lse, *delta;
  Strides grad_out_strides, lse_strides, delta_strides;
};

/// P_ij and dS_ij (as they multiply: rounded to the inputs' dtype) from the score, the
/// row's logsumexp and D, and dp = dO_i . v_j.
template <typename T, typename Acc>
void weights(Acc score, Acc lse, Acc delta, Acc dp, double scale, Acc &p, Acc &ds) {
  Acc shift = lse == -std::numeric_limits<Acc>::infinity() ? Acc(0) : lse;
  Acc e = std::exp(score - shift);
  p = Acc(T::get(T::put(e)));
  ds = Acc(T::get(T::put(e * (dp - delta) * Acc(scale))));
}

/// The gradient of the query (`part` 0, rows on threads: dq_i = sum_j dS_ij k_j), the key
/// (1, keys on threads: dk_j = sum_i dS_ij q_i) or the value (2: dv_j = sum_i P_ij dO_i),
/// written to `grad` through s.out's strides. Key and value heads equal the query's.
template <typename T, typename Mask>
void gradient(int part, const typename T::storage *q, const typename T::storage *k, const typename T::storage *v,
              const GradOperands<T> &g, const typename Mask::storage *mask, typename T::storage *grad, const Shape &s) {
  using Acc = typename T::acc;
  const int64_t rows = part == 0 ? s.lq : s.lk, width = part == 2 ? s.dv : s.d, all = s.batch * s.heads * rows;
#pragma omp parallel for num_threads(threads_for(all * (part == 0 ? s.lk : s.lq) * (s.d + s.dv))) schedule(static)
  for (int64_t row = 0; row < all; ++row) {
    int64_t r = row % rows, h = (row / rows) % s.heads, b = row / (rows * s.heads);
    Acc acc[kMaxHeadDim], qf[kMaxHeadDim];
    for (int64_t d = 0; d < width; ++d) acc[d] = 0;
    if (part == 0) scaled_query<T>(q, s, b, h, r, qf);
    // The pairs (i, j) of this row: its keys (part 0) or its queries (1, 2).
    int64_t first = part == 0 ? 0 : (s.causal ? r : 0), last = part == 0 ? (s.causal && r + 1 < s.lk ? r + 1 : s.lk) : s.lq;
    for (int64_t other = first; other < last; ++other) {
      int64_t i = part == 0 ? r : other, j = part == 0 ? other : r;
      if (part != 0) scaled_query<T>(q, s, b, h, i, qf);
      const auto *kr = k + b * s.k.b + h * s.k.h + j * s.k.r, *vr = v + b * s.v.b + h * s.v.h + j * s.v.r;
      const auto *dy = g.grad_out + b * g.grad_out_strides.b + h * g.grad_out_strides.h + i * g.grad_out_strides.r;
      Acc score = score_of<T, Mask>(qf, kr, mask_at<Mask>(mask, s, b, h, i, j), s), dp = 0, p, ds;
      for (int64_t d = 0; d < s.dv; ++d) dp += Acc(T::get(dy[d * g.grad_out_strides.c])) * Acc(T::get(vr[d * s.v.c]));
      weights<T>(score, g.lse[b * g.lse_strides.b + h * g.lse_strides.h + i * g.lse_strides.r],
                 g.delta[b * g.delta_strides.b + h * g.delta_strides.h + i * g.delta_strides.r], dp, s.scale, p, ds);
      if (part == 0) {
        for (int64_t d = 0; d < s.d; ++d) acc[d] += ds * Acc(T::get(kr[d * s.k.c]));
      } else if (part == 1) {
        const auto *qr = q + b * s.q.b + h * s.q.h + i * s.q.r;
        for (int64_t d = 0; d < s.d; ++d) acc[d] += ds * Acc(T::get(qr[d * s.q.c]));
      } else {
        for (int64_t d = 0; d < s.dv; ++d) acc[d] += p * Acc(T::get(dy[d * g.grad_out_strides.c]));
      }
    }
    auto *o = grad + b * s.out.b + h * s.out.h + r * s.out.r;
    for (int64_t d = 0; d < width; ++d) o[d * s.out.c] = T::put(acc[d]);
  }
}

}  // namespace coil_rt::attention
