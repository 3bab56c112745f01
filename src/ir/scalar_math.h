// The meaning of each body op on one element, as PyTorch computes it on the CPU:
// Python's floor division and remainder, C's truncation, NaN-propagating maximum,
// round-half-to-even, integer wrap-around at the dtype's width. The reference
// interpreter uses it; the code generators are tested against the interpreter.
#pragma once

#include <cstdint>

#include "graph/dtype.h"
#include "ir/body.h"

namespace coil::ir {

/// One element: floating values in `f`, integral and bool values in `i`.
struct Scalar {
  double f = 0;
  int64_t i = 0;

  static Scalar of(double v, DType t);
  double as_double(DType t) const { return is_floating(t) ? f : double(i); }
  bool truthy(DType t) const { return is_floating(t) ? f != 0 : i != 0; }
};

/// Rounds a value to what `t` can hold: f32/f16/bf16 rounding, integer wrap-around,
/// bool as 0/1.
Scalar round_to(Scalar v, DType t);

/// Converts between dtypes as PyTorch's casts do on the CPU (float to int truncates toward
/// zero; NaN, infinities and values out of range give what eager gives on x86).
Scalar cast(Scalar v, DType from, DType to);

/// Applies a unary, binary or ternary op whose operands have dtype `in` (the condition
/// of Where is bool) and whose result has dtype `out`. Throws UserError for integer
/// division by zero, as PyTorch does.
Scalar apply_op(Op op, DType in, DType out, Scalar a, Scalar b = {}, Scalar c = {});

}  // namespace coil::ir
