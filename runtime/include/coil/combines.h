// How running values combine in reductions and scans where the plain operator is not what
// PyTorch computes: the maximum and minimum that keep a NaN once seen, and logcumsumexp's
// log(exp(a) + exp(b)).
//
// This header is the definition for C++: the reference interpreter (src/ir/interpreter.cpp)
// and generated CPU kernels (prelude.h, and vec.h's vector forms) both call these; the
// Triton dialect prints the same rules as the helpers `_max_nan`, `_min_nan` and
// `_log_add_exp` (src/codegen/triton/triton_ops.cpp).
#pragma once

#include <cmath>
#include <limits>

namespace coil_rt {

template <typename T> inline T max_nan(T a, T b) { return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : (a > b ? a : b); }
template <typename T> inline T min_nan(T a, T b) { return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : (a < b ? a : b); }
// log(exp(a) + exp(b)) from the larger operand; a NaN stays, and an infinite larger operand
// (two of one sign, whose difference is NaN) is the result.
template <typename T> inline T log_add_exp(T a, T b) {
  if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
  T hi = a > b ? a : b, lo = a > b ? b : a;
  return std::isinf(hi) ? hi : hi + std::log1p(std::exp(lo - hi));
}

}  // namespace coil_rt
