// Integer arithmetic of sizes: divisions rounded up or down, and sizes rounded up to a multiple.
#pragma once

#include <cstdint>

namespace coil {

/// ceil(a / b) for a >= 0, b > 0: the blocks of b that cover a.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Python's a // d for d > 0: rounds toward minus infinity.
inline int64_t floor_div(int64_t a, int64_t d) {
  int64_t q = a / d;
  return (a % d != 0 && a < 0) ? q - 1 : q;
}

/// Python's a % m for m > 0: in [0, m).
inline int64_t floor_mod(int64_t a, int64_t m) {
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

/// The least multiple of `align` (> 0) that is at least n (>= 0).
inline int64_t round_up(int64_t n, int64_t align) { return ceil_div(n, align) * align; }

}  // namespace coil
