// Fused attention on the CPU (the C++ dialect's attention kernel, codegen/cpp/cpp_extern.cpp):
//
//   out[b, h, i, :] = sum_j softmax_j(scale * q[b, h, i, :] . k[b, h', j, :] + mask[b, h, i, j]) * v[b, h', j, :]
//
// with h' = h / kv_group (grouped-query attention shares a key/value head among kv_group
// query heads), keys j > i dropped when causal (the top-left causal mask of PyTorch), a
// boolean mask dropping keys where it is false, an additive one added. A thread owns a
// block of kBlock query rows and walks the keys in blocks of as many, keeping per row a
// running maximum, sum and weighted sum of values (the online softmax), so the scores
// never exist whole: no buffer of Lq x Lk. Both blocks are first copied into contiguous
// accumulator rows (the keys as columns) of a scratch of the thread's: one allocation per
// thread and call, a few blocks of rows, and no thread_local state, whose per-thread
// destructors would outlive the threads of OpenMP's pool. A row of scores against a block
// of keys, its exponentials and the weighted sum of values then run in vectors (GCC's
// vector extension, registers of the ISA). A row whose keys are all dropped is 0, as
// PyTorch's math backend gives. Accumulation in float (double for f64 inputs); each weight
// is rounded to the inputs' dtype before it multiplies a value (bf16 and f16, as PyTorch's
// fused kernels do), while the sum that divides the row is of the unrounded weights.
//
// For training (ir::AttentionPart): `forward` also writes each row's log(sum_j exp(S_ij))
// when asked; `gradients` recomputes P = exp(S - lse) from it, dv = P^T dO,
// dS = P * (dO v^T - D) * scale, dq = dS k, dk = dS^T q, with P and dS rounded to the
// inputs' dtype before they multiply, a thread owning a block of rows of each gradient
// (query rows for dq, keys for dk and dv) so that no two add to one row.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
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
  Strides q, k, v, mask;
  /// The results': the output and the logsumexp (its first three), or dq, dk and dv.
  Strides result[3];
};

/// The larger of a and b, NaN if either is (a NaN score makes its row NaN, as in eager).
template <typename Acc> Acc max_nan(Acc a, Acc b) { return a != a || a > b ? a : b; }

inline constexpr int64_t kBlock = 32;         // rows a thread owns, and rows of the other side per step

/// The mask's element at [b, h, i, j], or nullptr without a mask.
template <typename Mask>
const typename Mask::storage *mask_at(const typename Mask::storage *mask, const Shape &s, int64_t b, int64_t h, int64_t i,
                                      int64_t j) {
  if constexpr (std::is_same_v<Mask, NoMask>) return nullptr;
  else return mask + b * s.mask.b + h * s.mask.h + i * s.mask.r + j * s.mask.c;
}

/// Rows first..first+n of head (b, h) of a [B, H, rows, cols] view as contiguous rows of
/// `cols` accumulator values, each times `scale`.
template <typename T, typename Acc>
void load_rows(const typename T::storage *base, const Strides &st, int64_t b, int64_t h, int64_t first, int64_t n,
               int64_t cols, Acc scale, Acc *to) {
  for (int64_t r = 0; r < n; ++r) {
    const auto *src = base + b * st.b + h * st.h + (first + r) * st.r;
    Acc *dst = to + r * cols;
    if (st.c == 1) {
      for (int64_t d = 0; d < cols; ++d) dst[d] = Acc(T::get(src[d])) * scale;
    } else {
      for (int64_t d = 0; d < cols; ++d) dst[d] = Acc(T::get(src[d * st.c])) * scale;
    }
  }
}

/// The same rows transposed, kBlock columns (zeros past n): element (r, d) at
/// to[d * kBlock + r].
template <typename T, typename Acc>
void load_columns(const typename T::storage *base, const Strides &st, int64_t b, int64_t h, int64_t first, int64_t n,
                  int64_t cols, Acc scale, Acc *to) {
  for (int64_t r = 0; r < kBlock; ++r) {
    const auto *src = base + b * st.b + h * st.h + (first + r) * st.r;
    for (int64_t d = 0; d < cols; ++d) to[d * kBlock + r] = r < n ? Acc(T::get(src[d * st.c])) * scale : Acc(0);
  }
}

/// A register of the ISA's accumulator values (GCC's vector extension: 64 bytes with
/// AVX-512, 32 with AVX, 16 with SSE), and its loads, stores and splats. Not wider than the
/// registers: GCC keeps a 64-byte vector on AVX2 in memory and moves it through 16-byte
/// halves, which made the kernel 4x slower there (bench/README.md, the CPU decode loop).
#if defined(__AVX512F__)
inline constexpr int64_t kVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr int64_t kVectorBytes = 32;
#else
inline constexpr int64_t kVectorBytes = 16;
#endif
template <typename Acc> struct Lanes {
  typedef Acc V __attribute__((vector_size(kVectorBytes)));
  static constexpr int64_t kLanes = kVectorBytes / int64_t(sizeof(Acc));
  static V load(const Acc *p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(Acc *p, V v) { std::memcpy(p, &v, sizeof v); }
  static V splat(Acc x) { return V{} + x; }
};

/// out[c] = sum_d row[d] * columns[d * kBlock + c] for the kBlock columns, the sums kept in
/// registers.
template <typename Acc>
void row_times_columns(const Acc *__restrict__ row, const Acc *__restrict__ columns, int64_t depth, Acc *__restrict__ out) {
  using L = Lanes<Acc>;
  constexpr int64_t n = kBlock / L::kLanes;
  typename L::V sum[n] = {};
  for (int64_t d = 0; d < depth; ++d) {
    typename L::V x = L::splat(row[d]);
    for (int64_t v = 0; v < n; ++v) sum[v] += x * L::load(columns + d * kBlock + v * L::kLanes);
  }
  for (int64_t v = 0; v < n; ++v) L::store(out + v * L::kLanes, sum[v]);
}

/// acc[d] += sum_c w[c] * rows[c * width + d] over the first m rows, four vectors of acc
/// at a time kept in registers across the rows.
template <typename Acc>
void add_weighted_rows(const Acc *__restrict__ w, int64_t m, const Acc *__restrict__ rows, int64_t width,
                       Acc *__restrict__ acc) {
  using L = Lanes<Acc>;
  constexpr int64_t k = L::kLanes;
  int64_t d = 0;
  for (; d + 4 * k <= width; d += 4 * k) {
    typename L::V a0 = L::load(acc + d), a1 = L::load(acc + d + k), a2 = L::load(acc + d + 2 * k),
                  a3 = L::load(acc + d + 3 * k);
    for (int64_t c = 0; c < m; ++c) {
      typename L::V x = L::splat(w[c]);
      const Acc *r = rows + c * width + d;
      a0 += x * L::load(r);
      a1 += x * L::load(r + k);
      a2 += x * L::load(r + 2 * k);
      a3 += x * L::load(r + 3 * k);
    }
    L::store(acc + d, a0);
    L::store(acc + d + k, a1);
    L::store(acc + d + 2 * k, a2);
    L::store(acc + d + 3 * k, a3);
  }
  for (; d + k <= width; d += k) {
    typename L::V a = L::load(acc + d);
    for (int64_t c = 0; c < m; ++c) a += L::splat(w[c]) * L::load(rows + c * width + d);
    L::store(acc + d, a);
  }
  for (; d < width; ++d)
    for (int64_t c = 0; c < m; ++c) acc[d] += w[c] * rows[c * width + d];
}

/// One own row's scores against a block of m rows of the other side (`columns`; zeros past
/// m): with the mask's bias, and -inf where a key is dropped (past m, by causality, by a
/// boolean mask). `own` is the own row's index and `first` the other block's first, query
/// rows when `own_is_query` is false.
template <typename Mask, typename Acc>
void block_scores(const Acc *row, const Acc *columns, int64_t depth, int64_t m, const typename Mask::storage *mask,
                  const Shape &s, int64_t b, int64_t h, bool own_is_query, int64_t own, int64_t first, Acc *score) {
  row_times_columns(row, columns, depth, score);
  const Acc neg_inf = -std::numeric_limits<Acc>::infinity();
  for (int64_t c = 0; c < kBlock; ++c) {
    int64_t qi = own_is_query ? own : first + c, kj = own_is_query ? first + c : own;
    if (c >= m || (s.causal && kj > qi)) {
      score[c] = neg_inf;
    } else if constexpr (std::is_same_v<Mask, Bool>) {
      if (!*mask_at<Mask>(mask, s, b, h, qi, kj)) score[c] = neg_inf;
    } else if constexpr (!std::is_same_v<Mask, NoMask>) {
      score[c] += Acc(Mask::get(*mask_at<Mask>(mask, s, b, h, qi, kj)));
    }
  }
}

/// The output into `out`, and each row's logsumexp into `lse` unless it is null ([B, H, L]
/// in the accumulator's type, -inf for a row whose keys are all dropped). `Mask` is NoMask,
/// Bool (false drops the key) or an element type (added to the score).
template <typename T, typename Mask>
void forward(const typename T::storage *q, const typename T::storage *k, const typename T::storage *v,
             const typename Mask::storage *mask, typename T::storage *out, typename T::acc *lse, const Shape &s) {
  using Acc = typename T::acc;
  constexpr int64_t R = kBlock;
  const int64_t blocks = (s.lq + R - 1) / R, items = s.batch * s.heads * blocks;
  const Acc neg_inf = -std::numeric_limits<Acc>::infinity();
  const int64_t tile = R * (s.d > s.dv ? s.d : s.dv);
  const Strides &os = s.result[0], &ls = s.result[1];
#pragma omp parallel num_threads(threads_for(s.batch * s.heads * s.lq * s.lk * (s.d + s.dv)))
  {
    // A thread's scratch for this call: the queries scaled, the keys' columns, the values'
    // rows, the output rows, and per row its running max and sum.
    std::unique_ptr<Acc[]> buffer(new Acc[size_t(4 * tile + 2 * R)]);
    Acc *qs = buffer.get(), *columns = qs + tile, *values = columns + tile, *acc = values + tile;
    Acc *run_max = acc + tile, *run_sum = run_max + R;
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      int64_t block = item % blocks, h = (item / blocks) % s.heads, b = item / (blocks * s.heads), hk = h / s.kv_group;
      int64_t first = block * R, n = s.lq - first < R ? s.lq - first : R;
      load_rows<T>(q, s.q, b, h, first, n, s.d, Acc(s.scale), qs);
      for (int64_t x = 0; x < n * s.dv; ++x) acc[x] = 0;
      for (int64_t i = 0; i < n; ++i) run_max[i] = neg_inf, run_sum[i] = 0;
      Acc score[R], weight[R];
      int64_t end = s.causal ? (first + n < s.lk ? first + n : s.lk) : s.lk;
      for (int64_t j0 = 0; j0 < end; j0 += R) {
        int64_t m = end - j0 < R ? end - j0 : R;
        load_columns<T>(k, s.k, b, hk, j0, m, s.d, Acc(1), columns);
        load_rows<T>(v, s.v, b, hk, j0, m, s.dv, Acc(1), values);
        for (int64_t i = 0; i < n; ++i) {
          block_scores<Mask>(qs + i * s.d, columns, s.d, m, mask, s, b, h, true, first + i, j0, score);
          Acc block_max = neg_inf;
          for (int64_t c = 0; c < m; ++c) block_max = max_nan(score[c], block_max);
          if (block_max == neg_inf) continue;  // every key of the block dropped
          Acc new_max = max_nan(block_max, run_max[i]);
          Acc rescale = coil_rt::exp(run_max[i] - new_max);  // 0 while the running max is -inf
          Acc sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t c = 0; c < R; ++c) {
            Acc p = coil_rt::exp(score[c] - new_max);
            sum += p;
            weight[c] = Acc(T::get(T::put(p)));  // rounded to the inputs' dtype, as PyTorch's kernels multiply it
          }
          run_sum[i] = run_sum[i] * rescale + sum;
          run_max[i] = new_max;
          Acc *row = acc + i * s.dv;
          for (int64_t d = 0; d < s.dv; ++d) row[d] *= rescale;
          add_weighted_rows(weight, m, values, s.dv, row);
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        if (lse)
          lse[b * ls.b + h * ls.h + (first + i) * ls.r] = run_max[i] == neg_inf ? run_max[i] : run_max[i] + std::log(run_sum[i]);
        auto *o = out + b * os.b + h * os.h + (first + i) * os.r;
        Acc inv = run_sum[i] > 0 ? Acc(1) / run_sum[i] : Acc(0);
        for (int64_t d = 0; d < s.dv; ++d) o[d * os.c] = T::put(acc[i * s.dv + d] * inv);
      }
    }
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

/// The gradients dq_i = sum_j dS_ij k_j, dk_j = sum_i dS_ij q_i and dv_j = sum_i P_ij dO_i,
/// each written through its s.result strides. Key and value heads equal the query's.
///
/// With heads enough to share out (at least four per thread, or as many for each), a
/// thread takes whole heads: it walks each head's blocks of kBlock keys, and for each, the
/// blocks of query rows that see them, computing a block of scores, P and dS once for all
/// three gradients (dk and dv of the key block, and dq of every query row, kept for the
/// head in the thread's scratch): five products per pair of blocks.
///
/// Otherwise a thread takes a block of kBlock query rows and the block of as many keys with
/// the same index: the keys' gradients walk the query rows, and the query rows' walk the
/// keys, so no two threads add to one row (the scores, P and dS computed by both walks:
/// seven products per pair of blocks); under causality the two walks of a block are long
/// where the other is short.
///
/// For each own row, a row of scores, of P and of dS against the other block runs in
/// vectors across that block.
template <typename T, typename Mask>
void gradients(const typename T::storage *q, const typename T::storage *k, const typename T::storage *v,
               const GradOperands<T> &g, const typename Mask::storage *mask, typename T::storage *dq,
               typename T::storage *dk, typename T::storage *dv, const Shape &s) {
  using Acc = typename T::acc;
  constexpr int64_t R = kBlock;
  const int64_t query_blocks = (s.lq + R - 1) / R, key_blocks = (s.lk + R - 1) / R;
  const int64_t heads = s.batch * s.heads;
  const int threads = threads_for(3 * heads * s.lq * s.lk * (s.d + s.dv));
  const bool whole_heads = heads % threads == 0 || heads >= 4 * threads;
  const int64_t blocks = query_blocks > key_blocks ? query_blocks : key_blocks;
  const int64_t items = whole_heads ? heads : heads * blocks;
  const int64_t tile = R * (s.d > s.dv ? s.d : s.dv);
  const Acc scale = Acc(s.scale);
#pragma omp parallel num_threads(threads)
  {
    // A thread's scratch for this call, [R, max(D, Dv)] each: the own block's rows (query
    // side: queries scaled and dO; key side: keys and values), the other block's columns
    // (keys and values; queries scaled and dO) and rows (keys; queries and dO), and the own
    // rows' gradients (dq; dk and dv); per query row of the query block its logsumexp's
    // shift and D; with whole heads, a block's dS transposed and the head's dq.
    const size_t head_dq = whole_heads ? size_t(R * R + s.lq * s.d) : 0;
    std::unique_ptr<Acc[]> buffer(new Acc[size_t(9 * tile + 2 * R) + head_dq]);
    Acc *own_a = buffer.get(), *own_b = own_a + tile, *cols_a = own_b + tile, *cols_b = cols_a + tile;
    Acc *rows_a = cols_b + tile, *rows_b = rows_a + tile, *acc_a = rows_b + tile, *acc_b = acc_a + tile;
    Acc *shift = acc_b + tile, *delta = shift + R, *ds_t = delta + R, *head = ds_t + R * R;
    Acc score[R], dp[R];
    // The logsumexp's shift and D of query rows i0..i0+ni.
    auto row_stats = [&](int64_t b, int64_t h, int64_t i0, int64_t ni) {
      for (int64_t i = 0; i < ni; ++i) {
        Acc lse = g.lse[b * g.lse_strides.b + h * g.lse_strides.h + (i0 + i) * g.lse_strides.r];
        shift[i] = lse == -std::numeric_limits<Acc>::infinity() ? Acc(0) : lse;
        delta[i] = g.delta[b * g.delta_strides.b + h * g.delta_strides.h + (i0 + i) * g.delta_strides.r];
      }
      for (int64_t i = ni; i < R; ++i) shift[i] = delta[i] = 0;  // past the last row: finite, read by nothing
    };
    // n rows of `acc` ([n, width]) into rows first.. of head (b, h) of `to`.
    auto store = [&](const Acc *acc, int64_t width, typename T::storage *to, const Strides &st, int64_t b, int64_t h,
                     int64_t first, int64_t n) {
      for (int64_t r = 0; r < n; ++r) {
        auto *o = to + b * st.b + h * st.h + (first + r) * st.r;
        for (int64_t d = 0; d < width; ++d) o[d * st.c] = T::put(acc[r * width + d]);
      }
    };
    // dk and dv of keys first..first+n of head (b, h): dS and P by rows of keys against the
    // query rows; with `head_dq`, each block's dS also adds to the head's dq.
    auto key_side = [&](int64_t b, int64_t h, int64_t first, Acc *head_dq_rows) {
      int64_t n = s.lk - first < R ? s.lk - first : R;
      for (int64_t x = 0; x < n * s.d; ++x) acc_a[x] = 0;
      for (int64_t x = 0; x < n * s.dv; ++x) acc_b[x] = 0;
      load_rows<T>(k, s.k, b, h, first, n, s.d, Acc(1), own_a);
      load_rows<T>(v, s.v, b, h, first, n, s.dv, Acc(1), own_b);
      for (int64_t i0 = s.causal ? first : 0; i0 < s.lq; i0 += R) {
        int64_t m = s.lq - i0 < R ? s.lq - i0 : R;
        load_columns<T>(q, s.q, b, h, i0, m, s.d, scale, cols_a);
        load_columns<T>(g.grad_out, g.grad_out_strides, b, h, i0, m, s.dv, Acc(1), cols_b);
        load_rows<T>(q, s.q, b, h, i0, m, s.d, Acc(1), rows_a);
        load_rows<T>(g.grad_out, g.grad_out_strides, b, h, i0, m, s.dv, Acc(1), rows_b);
        row_stats(b, h, i0, m);
        for (int64_t j = 0; j < n; ++j) {
          block_scores<Mask>(own_a + j * s.d, cols_a, s.d, m, mask, s, b, h, false, first + j, i0, score);
          row_times_columns(own_b + j * s.dv, cols_b, s.dv, dp);
#pragma omp simd
          for (int64_t c = 0; c < R; ++c) {
            Acc p = coil_rt::exp(score[c] - shift[c]);
            score[c] = Acc(T::get(T::put(p)));
            dp[c] = Acc(T::get(T::put(p * (dp[c] - delta[c]) * scale)));
          }
          add_weighted_rows(score, m, rows_b, s.dv, acc_b + j * s.dv);
          add_weighted_rows(dp, m, rows_a, s.d, acc_a + j * s.d);
          if (head_dq_rows)
            for (int64_t c = 0; c < m; ++c) ds_t[c * R + j] = dp[c];
        }
        // dq of the block's query rows: sum over the block's keys of dS times the key.
        if (head_dq_rows)
          for (int64_t c = 0; c < m; ++c) add_weighted_rows(ds_t + c * R, n, own_a, s.d, head_dq_rows + (i0 + c) * s.d);
      }
      store(acc_a, s.d, dk, s.result[1], b, h, first, n);
      store(acc_b, s.dv, dv, s.result[2], b, h, first, n);
    };
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      if (whole_heads) {
        int64_t h = item % s.heads, b = item / s.heads;
        for (int64_t x = 0; x < s.lq * s.d; ++x) head[x] = 0;
        for (int64_t first = 0; first < s.lk; first += R) key_side(b, h, first, head);
        store(head, s.d, dq, s.result[0], b, h, 0, s.lq);
        continue;
      }
      int64_t block = item % blocks, h = (item / blocks) % s.heads, b = item / (blocks * s.heads);
      int64_t first = block * R;
      if (block < key_blocks) key_side(b, h, first, nullptr);
      if (block < query_blocks) {
        // dq of query rows first..first+n: dS by rows of queries against the keys.
        int64_t n = s.lq - first < R ? s.lq - first : R;
        for (int64_t x = 0; x < n * s.d; ++x) acc_a[x] = 0;
        load_rows<T>(q, s.q, b, h, first, n, s.d, scale, own_a);
        load_rows<T>(g.grad_out, g.grad_out_strides, b, h, first, n, s.dv, Acc(1), own_b);
        row_stats(b, h, first, n);
        int64_t end = s.causal ? (first + n < s.lk ? first + n : s.lk) : s.lk;
        for (int64_t j0 = 0; j0 < end; j0 += R) {
          int64_t m = end - j0 < R ? end - j0 : R;
          load_columns<T>(k, s.k, b, h, j0, m, s.d, Acc(1), cols_a);
          load_columns<T>(v, s.v, b, h, j0, m, s.dv, Acc(1), cols_b);
          load_rows<T>(k, s.k, b, h, j0, m, s.d, Acc(1), rows_a);
          for (int64_t i = 0; i < n; ++i) {
            block_scores<Mask>(own_a + i * s.d, cols_a, s.d, m, mask, s, b, h, true, first + i, j0, score);
            row_times_columns(own_b + i * s.dv, cols_b, s.dv, dp);
#pragma omp simd
            for (int64_t c = 0; c < R; ++c)
              dp[c] = Acc(T::get(T::put(coil_rt::exp(score[c] - shift[i]) * (dp[c] - delta[i]) * scale)));
            add_weighted_rows(dp, m, rows_a, s.d, acc_a + i * s.d);
          }
        }
        store(acc_a, s.d, dq, s.result[0], b, h, first, n);
      }
    }
  }
}

}  // namespace coil_rt::attention
