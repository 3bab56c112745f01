// coil's random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011), the counter-based generator PyTorch's CUDA generator and Triton's
// tl.rand use. A number is a pure function of a key (the call's seed) and a counter (the
// call's offset plus the element's place in its op's draws), so any kernel can compute any
// element, recompute it, or compute it in any order, and get the same number.
//
// This header is the definition for C++: the reference interpreter (src/ir/scalar_math.cpp)
// and generated CPU kernels (prelude.h) both call it; the Triton dialect spells the same
// rounds in Python (src/codegen/triton/triton_ops.cpp, helper `_philox`), and a test checks
// the two agree bit for bit (tests/unit/random_test.cpp). From the four words of one
// counter:
//   uniform f32: (w0 >> 8) * 2^-24, in [0, 1), every multiple of 2^-24 equally likely;
//   uniform f64: (w0 << 21 | w1 >> 11) * 2^-53, in [0, 1);
//   normal: Box-Muller of two uniforms in (0, 1] and [0, 1): f32 from w0, w1; f64 from
//           (w0, w1) and (w2, w3);
//   bits: (w0 << 32 | w1) >> 1, a uniform integer in [0, 2^63).
#pragma once

#include <cmath>
#include <cstdint>

namespace coil_rt {

struct Philox4 {
  uint32_t w[4];
};

/// Ten rounds of Philox4x32 on counter (lo, hi, 0, 0) under key (seed's low and high words).
inline Philox4 philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

inline float uniform_f32(uint32_t w) { return float(w >> 8) * 0x1p-24f; }
inline double uniform_f64(uint32_t hi, uint32_t lo) {
  return double((uint64_t(hi) << 21) | (lo >> 11)) * 0x1p-53;
}

template <typename T>
inline T philox_uniform(int64_t seed, int64_t counter) {
  Philox4 r = philox(uint64_t(seed), uint64_t(counter));
  if constexpr (sizeof(T) == 8) return uniform_f64(r.w[0], r.w[1]);
  else return uniform_f32(r.w[0]);
}

/// Box-Muller: sqrt(-2 log u1) cos(2 pi u2), with u1 in (0, 1] so the log is finite.
template <typename T>
inline T philox_normal(int64_t seed, int64_t counter) {
  Philox4 r = philox(uint64_t(seed), uint64_t(counter));
  if constexpr (sizeof(T) == 8) {
    double u1 = 1.0 - uniform_f64(r.w[0], r.w[1]), u2 = uniform_f64(r.w[2], r.w[3]);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  } else {
    float u1 = 1.0f - uniform_f32(r.w[0]), u2 = uniform_f32(r.w[1]);
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831855f * u2);
  }
}

inline int64_t philox_bits(int64_t seed, int64_t counter) {
  Philox4 r = philox(uint64_t(seed), uint64_t(counter));
  return int64_t(((uint64_t(r.w[0]) << 32) | r.w[1]) >> 1);
}

}  // namespace coil_rt
