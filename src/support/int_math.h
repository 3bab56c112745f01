// Integer arithmetic of sizes: divisions rounded up, and sizes rounded up to a multiple.
#pragma once

#include <cstdint>

namespace coil {

/// ceil(a / b) for a >= 0, b > 0: the blocks of b that cover a.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The least multiple of `align` (> 0) that is at least n (>= 0).
inline int64_t round_up(int64_t n, int64_t align) { return ceil_div(n, align) * align; }

}  // namespace coil
