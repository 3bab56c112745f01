#include "ir/scalar_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "coil/philox.h"
#include "coil/polynomials.h"
#include "coil/series.h"
#include "io/host_tensor.h"
#include "support/error.h"

namespace coil::ir {
namespace {

int64_t wrap(int64_t v, DType t) {
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::U8: return int64_t(uint8_t(v));
    case DType::I8: return int64_t(int8_t(v));
    case DType::I16: return int64_t(int16_t(v));
    case DType::I32: return int64_t(int32_t(v));
    case DType::I64: return v;
    case DType::F16:
    case DType::BF16:
    case DType::F32:
    case DType::F64: break;
  }
  COIL_ASSERT(false, "wrap of a floating dtype");
}

// Truncation to I, where a value out of I's range (NaN and infinities included) gives
// I's lowest value, as x86's cvttss2si/cvttsd2si do.
template <typename I>
int64_t trunc_or_lowest(double v) {
  constexpr double lo = -double(std::numeric_limits<I>::max()) - 1, hi = double(std::numeric_limits<I>::max()) + 1;
  return v > lo - 1 && v < hi ? int64_t(I(v)) : int64_t(std::numeric_limits<I>::min());
}

// A cast of a float value to an integer dtype as PyTorch's CPU kernels convert on x86
// (the table of tests/fixtures/op_to_copy_special): int64 directly, uint8 through int64
// (c10's static_cast_with_inter_type), int32, int16 and int8 through int32; then wrap to t.
int64_t float_to_int(double v, DType t) {
  return t == DType::I64 || t == DType::U8 ? trunc_or_lowest<int64_t>(v) : trunc_or_lowest<int32_t>(v);
}

// The integer a number of the graph stands for (a constant, an index), made total: NaN
// gives 0 and values beyond int64 saturate (2^63 is what INT64_MAX becomes as a double).
int64_t to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// Wrapping integer arithmetic: PyTorch's integer ops overflow silently.
int64_t add_wrap(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t sub_wrap(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t mul_wrap(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

void check_divisor(int64_t b) {
  COIL_USER_CHECK(b != 0, "integer division by zero");
}

int64_t int_floor_div(int64_t a, int64_t b) {
  check_divisor(b);
  if (b == -1) return sub_wrap(0, a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t int_remainder(int64_t a, int64_t b) {
  check_divisor(b);
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// PyTorch's div(rounding_mode='floor') for floats: exact through fmod, so that
// floor(a / b) is not thrown off by the rounding of a / b.
template <typename T>
T float_floor_div(T a, T b) {
  if (b == 0) return a / b;
  T m = std::fmod(a, b);
  T div = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) div -= 1;
  if (div == 0) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += 1;
  return floordiv;
}

template <typename T>
T float_remainder(T a, T b) {
  T m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}

// The divisions that round their quotient, in T: eager computes f32 (and f16, bf16) in
// float, and a quotient computed in double can fall just short of an integer that float's
// rounding reaches, which moves trunc and floor by one.
template <typename T>
T rounding_div(Op op, T a, T b) {
  switch (op) {
    case Op::FloorDiv: return float_floor_div(a, b);
    case Op::TruncDiv: return std::trunc(a / b);
    case Op::Remainder: return float_remainder(a, b);
    default: break;
  }
  COIL_ASSERT(false, op_name(op), " is not a rounding division");
}

bool is_rounding_div(Op op) { return op == Op::FloorDiv || op == Op::TruncDiv || op == Op::Remainder; }

// PyTorch's powi: a negative exponent gives 1 / base^-exp in integer arithmetic.
int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 == 0 ? 1 : -1) : 0;
  int64_t r = 1;
  while (exp) {
    if (exp & 1) r = mul_wrap(r, base);
    base = mul_wrap(base, base);
    exp >>= 1;
  }
  return r;
}

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
// fmax/fmin: a NaN operand gives the other; equal operands (0 and -0) give the first, as
// eager's CPU kernels do.
double nan_skip_max(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : a < b ? b : a; }
double nan_skip_min(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : b < a ? b : a; }

// (0 < v) - (v < 0), as PyTorch: NaN gives 0.
double sign(double v) { return double(v > 0) - double(v < 0); }

double unary_float(Op op, double x) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Exp: return std::exp(x);
    case Op::Exp2: return std::exp2(x);
    case Op::Expm1: return std::expm1(x);
    case Op::Log: return std::log(x);
    case Op::Log1p: return std::log1p(x);
    case Op::Log2: return std::log2(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1.0 / std::sqrt(x);
    case Op::Reciprocal: return 1.0 / x;
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tan: return std::tan(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Op::Erf: return std::erf(x);
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Round: return std::nearbyint(x);
    case Op::Trunc: return std::trunc(x);
    case Op::Sign: return sign(x);
    case Op::Acos: return std::acos(x);
    case Op::Asin: return std::asin(x);
    case Op::Atan: return std::atan(x);
    case Op::Acosh: return std::acosh(x);
    case Op::Asinh: return std::asinh(x);
    case Op::Atanh: return std::atanh(x);
    case Op::Cosh: return std::cosh(x);
    case Op::Sinh: return std::sinh(x);
    case Op::Log10: return std::log10(x);
    default: break;
  }
  COIL_ASSERT(false, op_name(op), " is not a floating unary op");
}

int64_t unary_int(Op op, int64_t x) {
  switch (op) {
    case Op::Neg: return sub_wrap(0, x);
    case Op::Abs: return x < 0 ? sub_wrap(0, x) : x;
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc: return x;
    case Op::Sign: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case Op::BitwiseNot: return ~x;
    default: break;
  }
  COIL_ASSERT(false, op_name(op), " is not an integer unary op");
}

double binary_float(Op op, double a, double b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::TrueDiv: return a / b;
    case Op::FloorDiv:
    case Op::TruncDiv:
    case Op::Remainder: return rounding_div(op, a, b);
    case Op::Fmod: return std::fmod(a, b);
    case Op::Pow: return std::pow(a, b);
    case Op::Maximum: return nan_max(a, b);
    case Op::Minimum: return nan_min(a, b);
    case Op::Atan2: return std::atan2(a, b);
    case Op::Copysign: return std::copysign(a, b);
    case Op::Fmax: return nan_skip_max(a, b);
    case Op::Fmin: return nan_skip_min(a, b);
    case Op::Hypot: return std::hypot(a, b);
    case Op::Ldexp: return std::ldexp(a, int(std::clamp(b, -2200.0, 2200.0)));
    case Op::Igamma: return coil_rt::igamma(a, b);
    case Op::Igammac: return coil_rt::igammac(a, b);
    case Op::Zeta: return coil_rt::zeta(a, b);
    default: break;
  }
  if (is_polynomial(op)) return coil_rt::polynomial(coil_rt::Polynomial(polynomial_family(op)), a, b);
  switch (op) {
    default: break;
  }
  COIL_ASSERT(false, op_name(op), " is not a floating binary op");
}

int64_t binary_int(Op op, int64_t a, int64_t b) {
  switch (op) {
    case Op::Add: return add_wrap(a, b);
    case Op::Sub: return sub_wrap(a, b);
    case Op::Mul: return mul_wrap(a, b);
    case Op::FloorDiv: return int_floor_div(a, b);
    case Op::TruncDiv: check_divisor(b); return b == -1 ? sub_wrap(0, a) : a / b;
    case Op::Remainder: return int_remainder(a, b);
    case Op::Fmod: check_divisor(b); return b == -1 ? 0 : a % b;
    case Op::Pow: return int_pow(a, b);
    case Op::Maximum:
    case Op::Fmax: return std::max(a, b);
    case Op::Minimum:
    case Op::Fmin: return std::min(a, b);
    case Op::BitwiseAnd: return a & b;
    case Op::BitwiseOr: return a | b;
    case Op::BitwiseXor: return a ^ b;
    default: break;
  }
  COIL_ASSERT(false, op_name(op), " is not an integer binary op");
}

template <typename T>
bool compare(Op op, T a, T b) {
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    default: break;
  }
  COIL_ASSERT(false, op_name(op), " is not a comparison");
}

bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

}  // namespace

Scalar Scalar::of(double v, DType t) {
  Scalar s;
  if (is_floating(t)) {
    s.f = v;
  } else {
    s.i = t == DType::Bool ? v != 0 : to_int(v);
  }
  return round_to(s, t);
}

Scalar round_to(Scalar v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: v.f = double(float(v.f)); return v;
    case DType::F16: v.f = double(half_to_float(float_to_half(float(v.f)))); return v;
    case DType::BF16: v.f = double(bf16_to_float(float_to_bf16(float(v.f)))); return v;
    case DType::Bool:
    case DType::U8:
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: v.i = wrap(v.i, t); return v;
  }
  return v;
}

Scalar cast(Scalar v, DType from, DType to) {
  if (is_floating(from) == is_floating(to)) return round_to(v, to);
  Scalar out;
  if (is_floating(to)) {
    out.f = double(v.i);
  } else if (to == DType::Bool) {
    out.i = v.f != 0;
  } else {
    out.i = float_to_int(v.f, to);
  }
  return round_to(out, to);
}

Scalar apply_op(Op op, DType in, DType out, Scalar a, Scalar b, Scalar c) {
  bool fl = is_floating(in);
  Scalar r;
  if (op == Op::Cast) return cast(a, in, out);
  if (op == Op::Rand) return Scalar::of(out == DType::F64 ? coil_rt::philox_uniform<double>(a.i, b.i)
                                                          : coil_rt::philox_uniform<float>(a.i, b.i), out);
  if (op == Op::Randn) return Scalar::of(out == DType::F64 ? coil_rt::philox_normal<double>(a.i, b.i)
                                                           : coil_rt::philox_normal<float>(a.i, b.i), out);
  if (op == Op::RandBits) {
    r.i = coil_rt::philox_bits(a.i, b.i);
    return round_to(r, out);
  }
  if (op == Op::Where) return a.i ? b : c;
  if (op == Op::LogicalNot || (op == Op::BitwiseNot && in == DType::Bool)) return Scalar::of(!a.truthy(in), out);
  if (op == Op::IsNan) return Scalar::of(fl && std::isnan(a.f), out);
  if (op == Op::IsInf) return Scalar::of(fl && std::isinf(a.f), out);
  if (is_comparison(op)) return Scalar::of(fl ? compare(op, a.f, b.f) : compare(op, a.i, b.i), out);
  if (is_logical(op)) {
    bool x = a.truthy(in), y = b.truthy(in);
    bool v = op == Op::LogicalAnd ? x && y : op == Op::LogicalOr ? x || y : x != y;
    return Scalar::of(v, out);
  }
  if (op_arity(op) == 1) {
    if (fl) {
      r.f = unary_float(op, a.f);
    } else {
      r.i = unary_int(op, a.i);
    }
    return round_to(r, out);
  }
  if (fl && in != DType::F64 && is_rounding_div(op)) {
    r.f = double(rounding_div(op, float(a.f), float(b.f)));
  } else if (fl) {
    r.f = binary_float(op, a.f, b.f);
  } else if (op == Op::TrueDiv) {
    return Scalar::of(double(a.i) / double(b.i), out);
  } else {
    r.i = binary_int(op, a.i, b.i);
  }
  return round_to(r, out);
}

}  // namespace coil::ir
