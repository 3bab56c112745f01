// Integer functions as compositions of body ops, the same on every target: gcd and lcm by
// Euclid's algorithm unrolled as far as the dtype needs, and the bitwise shifts through
// exact powers of two, with PyTorch's results for shifts outside [0, bits).
#include <cmath>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

constexpr DType kWide = DType::I64;

int bits(DType t) { return int(itemsize(t)) * 8; }

/// Argument `name` at `index` (a tensor, or a number as a constant), converted to the
/// result's dtype `t` first (eager's common dtype) and then widened to i64.
int integer(Lowering &l, BodyBuilder &b, const Node &n, const char *name, const std::vector<Expr> &index, DType t) {
  return b.cast(b.cast(load_argument(l, b, n, name, index), t), kWide);
}

using IntegerCombine = std::function<int(BodyBuilder &, int x, int y, DType t)>;

/// An elementwise op of self and other in i64, cast to the result's dtype.
LowerFn integer_binary(IntegerCombine combine) {
  return [=](Lowering &l, const Node &n) {
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      int v = combine(b, integer(l, b, n, "self", x, out.dtype), integer(l, b, n, "other", x, out.dtype), out.dtype);
      return b.cast(v, out.dtype);
    })};
  };
}

int constant(BodyBuilder &b, double v) { return b.constant(v, kWide); }
int abs(BodyBuilder &b, int v) { return b.unary(Op::Abs, v, kWide); }

/// gcd(|x|, |y|): (a, b) -> (b mod a, a) while a != 0. Euclid takes the most steps on
/// consecutive Fibonacci numbers: one more step than there are Fibonacci numbers in the
/// dtype's range.
int gcd(BodyBuilder &b, int x, int y, DType t) {
  int steps = 1;
  for (double f0 = 1, f1 = 1; f1 <= std::ldexp(1.0, bits(t) - 1); ++steps) f1 = f0 + f1, f0 = f1 - f0;
  int a = abs(b, x), c = abs(b, y), zero = constant(b, 0);
  for (int i = 0; i < steps; ++i) {
    int live = b.binary(Op::Ne, a, zero, DType::Bool);
    int divisor = b.where(live, a, constant(b, 1), kWide);
    int rest = b.where(live, b.binary(Op::Fmod, c, divisor, kWide), zero, kWide);
    c = b.where(live, a, c, kWide);
    a = rest;
  }
  return c;
}

/// lcm: |x / gcd * y|, 0 where the gcd is 0.
int lcm(BodyBuilder &b, int x, int y, DType t) {
  int g = gcd(b, x, y, t), zero = constant(b, 0);
  int live = b.binary(Op::Ne, g, zero, DType::Bool);
  int quotient = b.binary(Op::TruncDiv, x, b.where(live, g, constant(b, 1), kWide), kWide);
  return b.where(live, abs(b, b.binary(Op::Mul, quotient, y, kWide)), zero, kWide);
}

/// 2^y for 0 <= y <= 63, as i64 with wrapping (2^63 is the smallest i64): a product of
/// 2^(2^i) over y's set bits.
int power_of_two(BodyBuilder &b, int y) {
  int p = constant(b, 1);
  for (int i = 0; i < 6; ++i) {
    int set = b.binary(Op::Ne, b.binary(Op::BitwiseAnd, y, constant(b, double(1 << i)), kWide), constant(b, 0),
                       DType::Bool);
    double factor = std::ldexp(1.0, 1 << i);  // 2^32 is the largest, exact as a double
    p = b.where(set, b.binary(Op::Mul, p, constant(b, factor), kWide), p, kWide);
  }
  return p;
}

/// y in [0, bits), where a shift keeps some bits.
int in_range(BodyBuilder &b, int y, DType t) {
  return b.binary(Op::LogicalAnd, b.binary(Op::Ge, y, constant(b, 0), DType::Bool),
                  b.binary(Op::Lt, y, constant(b, bits(t)), DType::Bool), DType::Bool);
}

/// x << y: x 2^y, wrapping in the dtype; 0 for y outside [0, bits).
int shift_left(BodyBuilder &b, int x, int y, DType t) {
  int clamped = b.binary(Op::Maximum, b.binary(Op::Minimum, y, constant(b, 63), kWide), constant(b, 0), kWide);
  int shifted = b.binary(Op::Mul, x, power_of_two(b, clamped), kWide);
  return b.where(in_range(b, y, t), shifted, constant(b, 0), kWide);
}

/// x >> y, arithmetic: floor(x / 2^y); for y outside [0, bits) (and 63, whose 2^y is
/// negative in i64), x's sign: -1 or 0.
int shift_right(BodyBuilder &b, int x, int y, DType t) {
  int clamped = b.binary(Op::Maximum, b.binary(Op::Minimum, y, constant(b, 62), kWide), constant(b, 0), kWide);
  int shifted = b.binary(Op::FloorDiv, x, power_of_two(b, clamped), kWide);
  int sign = b.where(b.binary(Op::Lt, x, constant(b, 0), DType::Bool), constant(b, -1), constant(b, 0), kWide);
  int keeps = b.binary(Op::LogicalAnd, in_range(b, y, t), b.binary(Op::Le, y, constant(b, 62), DType::Bool),
                       DType::Bool);
  return b.where(keeps, shifted, sign, kWide);
}

}  // namespace

void add_integer_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.gcd.default"] = integer_binary(gcd);
  t["aten.lcm.default"] = integer_binary(lcm);
  for (const char *overload : {"Tensor", "Tensor_Scalar", "Scalar_Tensor"}) {
    t[str_cat("aten.bitwise_left_shift.", overload)] = integer_binary(shift_left);
    t[str_cat("aten.bitwise_right_shift.", overload)] = integer_binary(shift_right);
  }
}

}  // namespace coil::lowering
