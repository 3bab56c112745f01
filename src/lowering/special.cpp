// Special functions as compositions of the body's elementary ops, not as ops of their own:
// written once here, they run the same on the reference interpreter, in C++ (vectorized with
// the rest of the kernel) and in Triton. Each computes in f64 whatever the tensor's dtype and
// rounds once at the end, so an f32 result is the correctly rounded value up to the last bit
// or two.
//
//   lgamma     Lanczos' approximation (g = 7, 9 terms, relative error below 1e-15) for
//              x >= 1/2; the reflection formula below, with sin(pi x) from x's distance to
//              the nearest integer (exact), so that large negative x keeps its accuracy.
//   digamma    the recurrence up to x + 10, then the asymptotic series (8 terms); the
//              reflection formula with cot(pi x) below 1/2.
//   polygamma  n >= 1: (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta by 16 terms of its sum
//              and the Euler-Maclaurin tail; below 0 the reflection formula, whose n-th
//              derivative of cot(pi x) is a polynomial in cot(pi x) worked out when lowering.
//   erfcx      a Chebyshev series in (x - 4) / (x + 4) for x >= 0; erfc, log_ndtr from it.
//   erfinv     a Chebyshev series in y^2 for |y| <= 0.9, and in 1 / sqrt(-ln(1 - |y|))
//              beyond; ndtri from the same two.
//   Bessel     I0, I1, K0, K1, J0, J1, Y0, Y1 and the scaled forms: Chebyshev series on
//              [0, 8] (I, J, Y) or [0, 2] (K) of what is left when the logarithm of Y and K
//              is taken out, and in 1/x beyond of the exponentially scaled I and K and of the
//              modulus-phase pair (P, Q) of J and Y; the spherical j0 as sin(x) / x.
//   airy_ai    a Chebyshev series on [-8, 2]; beyond, the exponential decay or the modulus
//              and phase times Chebyshev series in 1 / zeta, zeta = (2/3) |x|^(3/2).
//   polynomials  the orthogonal polynomials' ops (their recurrences, coil/polynomials.h)
//              with what eager does around them.
//   frexp, nextafter  from an exact split of the exponent (the ldexp op).
//   igamma, igammac, zeta  ops of their own (their series loop until they converge), whose
//              one definition is coil/series.h.
// The Chebyshev series come from scripts/special_tables.py (special_tables.inc), which
// checks each to 4e-15 against mpmath.
#include <cmath>
#include <limits>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

#include "lowering/special_tables.inc"

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// f64 arithmetic on a body, spelled as formulas.
struct F64 {
  BodyBuilder &b;
  static constexpr DType t = DType::F64;

  int c(double v) const { return b.constant(v, t); }
  int add(int x, int y) const { return b.binary(Op::Add, x, y, t); }
  int sub(int x, int y) const { return b.binary(Op::Sub, x, y, t); }
  int mul(int x, int y) const { return b.binary(Op::Mul, x, y, t); }
  int div(int x, int y) const { return b.binary(Op::TrueDiv, x, y, t); }
  int fn(Op op, int x) const { return b.unary(op, x, t); }
  int is(Op predicate, int x) const { return b.unary(predicate, x, DType::Bool); }  // IsInf, IsNan
  int op(Op o, int x, int y) const { return b.binary(o, x, y, t); }  // Copysign, Maximum, Ldexp, Fmod
  int lt(int x, int y) const { return b.binary(Op::Lt, x, y, DType::Bool); }
  int le(int x, int y) const { return b.binary(Op::Le, x, y, DType::Bool); }
  int ge(int x, int y) const { return b.binary(Op::Ge, x, y, DType::Bool); }
  int eq(int x, int y) const { return b.binary(Op::Eq, x, y, DType::Bool); }
  int both(int p, int q) const { return b.binary(Op::LogicalAnd, p, q, DType::Bool); }
  int either(int p, int q) const { return b.binary(Op::LogicalOr, p, q, DType::Bool); }
  /// Whether a whole number is odd.
  int odd(int n) const { return eq(op(Op::Fmod, n, c(2)), c(1)); }
  int where(int cond, int x, int y) const { return b.where(cond, x, y, t); }
  /// The sum of c[i] x^i.
  int polynomial(const std::vector<double> &coeffs, int x) const {
    int acc = c(coeffs.back());
    for (size_t i = coeffs.size() - 1; i-- > 0;) acc = add(mul(acc, x), c(coeffs[i]));
    return acc;
  }
  /// x minus its nearest integer, exactly: sin(pi x) and tan(pi x) of it keep their accuracy
  /// for large x.
  int fraction(int x) const { return sub(x, fn(Op::Round, x)); }
  /// 1 / x^s for an integer s >= 1, by products.
  int inverse_power(int x, int s) const {
    int p = x;
    for (int i = 1; i < s; ++i) p = mul(p, x);
    return div(c(1), p);
  }
  int is_nonpositive_integer(int x) const {
    return both(le(x, c(0)), eq(x, fn(Op::Floor, x)));
  }
};

/// ln Gamma(y) for y >= 1/2: Lanczos' approximation with g = 7 and 9 terms.
int lgamma_right(const F64 &f, int y) {
  static const double kCoeffs[] = {0.99999999999980993,     676.5203681218851,     -1259.1392167224028,
                                   771.32342877765313,      -176.61502916214059,   12.507343278686905,
                                   -0.13857109526572012,    9.9843695780195716e-6, 1.5056327351493116e-7};
  int z = f.sub(y, f.c(1));
  int sum = f.c(kCoeffs[0]);
  for (int i = 1; i < 9; ++i) sum = f.add(sum, f.div(f.c(kCoeffs[i]), f.add(z, f.c(i))));
  int t = f.add(z, f.c(7.5));
  int power = f.sub(f.mul(f.add(z, f.c(0.5)), f.fn(Op::Log, t)), t);
  return f.add(f.add(f.c(0.5 * std::log(2 * M_PI)), power), f.fn(Op::Log, sum));
}

/// ln |Gamma(x)|: inf at the poles (0 and the negative integers) and at both infinities.
int lgamma(const F64 &f, int x) {
  int left = f.lt(x, f.c(0.5));
  int right = lgamma_right(f, f.where(left, f.sub(f.c(1), x), x));
  // Gamma(x) Gamma(1 - x) = pi / sin(pi x).
  int sine = f.fn(Op::Abs, f.fn(Op::Sin, f.mul(f.c(M_PI), f.fraction(x))));
  int reflected = f.sub(f.fn(Op::Log, f.div(f.c(M_PI), sine)), right);
  return f.where(f.is(Op::IsInf, x), f.c(kInf), f.where(left, reflected, right));
}

/// pi cot(pi x), from x's distance to the nearest integer.
int pi_cot_pi(const F64 &f, int x) { return f.div(f.c(M_PI), f.fn(Op::Tan, f.mul(f.c(M_PI), f.fraction(x)))); }

/// digamma(y) for y >= 1/2: psi(y) = psi(y + 10) - sum 1/(y + k), and psi(z) for z >= 10
/// by its asymptotic series, ln z - 1/(2z) - sum B_2k / (2k z^2k).
int digamma_right(const F64 &f, int y) {
  int sum = f.c(0);
  for (int k = 0; k < 10; ++k) sum = f.add(sum, f.div(f.c(1), f.add(y, f.c(k))));
  int z = f.add(y, f.c(10));
  int w = f.div(f.c(1), f.mul(z, z));
  // B_2k / 2k for k = 1..8, in powers of w = 1/z^2.
  int series = f.mul(w, f.polynomial({1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760,
                                      1.0 / 12, -3617.0 / 8160},
                                     w));
  int asymptotic = f.sub(f.sub(f.fn(Op::Log, z), f.div(f.c(0.5), z)), series);
  return f.sub(asymptotic, sum);
}

/// digamma(x): -inf at +0, inf at -0 (as eager), NaN at the negative integers.
int digamma(const F64 &f, int x) {
  int left = f.lt(x, f.c(0.5));
  int right = digamma_right(f, f.where(left, f.sub(f.c(1), x), x));
  // psi(1 - x) - psi(x) = pi cot(pi x).
  int reflected = f.sub(right, pi_cot_pi(f, x));
  int zero = f.where(f.lt(f.div(f.c(1), x), f.c(0)), f.c(kInf), f.c(-kInf));
  int value = f.where(left, reflected, right);
  value = f.where(f.both(f.lt(x, f.c(0)), f.eq(x, f.fn(Op::Floor, x))), f.c(kNaN), value);
  return f.where(f.eq(x, f.c(0)), zero, value);
}

/// The Hurwitz zeta function zeta(s, q) for an integer s >= 2 and q > 0: 16 terms of its sum,
/// then the Euler-Maclaurin formula at w = q + 16 with 8 Bernoulli terms.
int hurwitz_zeta(const F64 &f, int s, int q) {
  constexpr int kTerms = 16;
  int sum = f.c(0);
  for (int k = 0; k < kTerms; ++k) sum = f.add(sum, f.inverse_power(f.add(q, f.c(k)), s));
  int w = f.add(q, f.c(kTerms));
  int w_s = f.inverse_power(w, s);
  int tail = f.add(f.div(f.mul(w_s, w), f.c(s - 1)), f.mul(w_s, f.c(0.5)));
  // B_2j / (2j)! s (s+1) ... (s + 2j - 2) w^(-s-2j+1), in powers of 1/w^2 times w_s / w.
  static const double kBernoulli[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
                                      -3617.0 / 510};
  std::vector<double> coeffs;
  double rising = 1, factorial = 1;
  for (int j = 1; j <= 8; ++j) {
    rising *= j == 1 ? s : double(s + 2 * j - 3) * double(s + 2 * j - 2);
    factorial *= double(2 * j - 1) * double(2 * j);
    coeffs.push_back(kBernoulli[j - 1] / factorial * rising);
  }
  int inv_w = f.div(f.c(1), w);
  int series = f.mul(f.mul(w_s, inv_w), f.polynomial(coeffs, f.mul(inv_w, inv_w)));
  return f.add(f.add(sum, tail), series);
}

/// The polynomial P_n with d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)): P_0(c) = c,
/// P_(k+1)(c) = -(1 + c^2) P_k'(c).
std::vector<double> cot_derivative(int n) {
  std::vector<double> p = {0, 1};
  for (int k = 0; k < n; ++k) {
    std::vector<double> d(p.size() > 1 ? p.size() - 1 : 1, 0), next(d.size() + 2, 0);
    for (size_t i = 1; i < p.size(); ++i) d[i - 1] = double(i) * p[i];
    for (size_t i = 0; i < d.size(); ++i) {
      next[i] -= d[i];
      next[i + 2] -= d[i];
    }
    p = next;
  }
  return p;
}

/// polygamma(n, x) for n >= 1: psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for x > 0; below,
/// psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)). At the poles (0 and the
/// negative integers) the sign eager gives: inf for odd n, -inf for even n; at the
/// infinities what eager gives too (trigamma: 0 at inf, NaN at -inf; beyond: NaN at inf and
/// the poles' infinity at -inf).
int polygamma(const F64 &f, int n, int x) {
  double factorial = 1;
  for (int k = 2; k <= n; ++k) factorial *= k;
  double sign = n % 2 ? 1 : -1;
  int left = f.lt(x, f.c(0));
  int q = f.where(left, f.sub(f.c(1), x), x);
  int right = f.mul(f.c(sign * factorial), hurwitz_zeta(f, n + 1, q));
  int cot = f.div(f.c(1), f.fn(Op::Tan, f.mul(f.c(M_PI), f.fraction(x))));
  int derivative = f.mul(f.c(std::pow(M_PI, n + 1)), f.polynomial(cot_derivative(n), cot));
  int reflected = f.sub(f.mul(f.c(n % 2 ? -1 : 1), right), derivative);
  int value = f.where(left, reflected, right);
  value = f.where(f.is_nonpositive_integer(x), f.c(sign * kInf), value);
  if (n == 1) return f.where(f.eq(x, f.c(kInf)), f.c(0), f.where(f.eq(x, f.c(-kInf)), f.c(kNaN), value));
  return f.where(f.eq(x, f.c(-kInf)), f.c(sign * kInf), value);
}

/// The spherical Bessel function j0(x) = sin(x) / x: 1 at 0, 0 at the infinities.
int spherical_bessel_j0(const F64 &f, int x) {
  int value = f.div(f.fn(Op::Sin, x), x);
  return f.where(f.eq(x, f.c(0)), f.c(1), f.where(f.is(Op::IsInf, x), f.c(0), value));
}

/// The series sum' c_k T_k(t) (c_0 halved), by Clenshaw's recurrence.
template <size_t N>
int chebyshev(const F64 &f, const double (&c)[N], int t) {
  int b1 = f.c(0), b2 = f.c(0), two_t = f.add(t, t);
  for (size_t k = N - 1; k >= 1; --k) {
    int b0 = f.add(f.sub(f.mul(two_t, b1), b2), f.c(c[k]));
    b2 = b1;
    b1 = b0;
  }
  return f.add(f.sub(f.mul(t, b1), b2), f.c(c[0]));
}

/// erfcx(a) = exp(a^2) erfc(a) for a >= 0 (0 at infinity).
int erfcx_nonnegative(const F64 &f, int a) {
  int shifted = f.add(a, f.c(4));
  int value = f.div(chebyshev(f, kErfcx, f.div(f.sub(a, f.c(4)), shifted)), shifted);
  return f.where(f.eq(a, f.c(kInf)), f.c(0), value);
}

/// exp(-a^2) for a >= 0, with a^2 split as h^2 + (a - h)(a + h), h = a to 1/16: h^2 is exact,
/// so the rounding of a^2 (up to 27^2 ulps where erfc has not underflowed) is not lost.
int exp_minus_square(const F64 &f, int a) {
  int h = f.div(f.fn(Op::Floor, f.mul(a, f.c(16))), f.c(16));
  int rest = f.mul(f.sub(a, h), f.add(a, h));
  return f.mul(f.fn(Op::Exp, f.fn(Op::Neg, f.mul(h, h))), f.fn(Op::Exp, f.fn(Op::Neg, rest)));
}

/// erfc(a) for a >= 0.
int erfc_nonnegative(const F64 &f, int a) {
  return f.where(f.eq(a, f.c(kInf)), f.c(0), f.mul(exp_minus_square(f, a), erfcx_nonnegative(f, a)));
}

/// erfc(x) = 2 - erfc(-x) below 0.
int erfc(const F64 &f, int x) {
  int e = erfc_nonnegative(f, f.fn(Op::Abs, x));
  return f.where(f.lt(x, f.c(0)), f.sub(f.c(2), e), e);
}

/// erfcx(x) = 2 exp(x^2) - erfcx(-x) below 0.
int erfcx(const F64 &f, int x) {
  int e = erfcx_nonnegative(f, f.fn(Op::Abs, x));
  int negative = f.sub(f.mul(f.c(2), f.fn(Op::Exp, f.mul(x, x))), e);
  return f.where(f.lt(x, f.c(0)), negative, e);
}

/// log(ndtr(x)), ndtr(x) = erfc(-x / sqrt 2) / 2: log1p(-erfc(x / sqrt 2) / 2) from -1 up,
/// below log(erfcx(-x / sqrt 2) / 2) - x^2 / 2, which keeps its digits down to -inf.
int log_ndtr(const F64 &f, int x) {
  int z = f.mul(x, f.c(M_SQRT1_2));
  int upper = f.fn(Op::Log1p, f.mul(f.c(-0.5), erfc(f, z)));
  int lower = f.sub(f.fn(Op::Log, f.mul(f.c(0.5), erfcx_nonnegative(f, f.fn(Op::Neg, z)))),
                    f.mul(f.c(0.5), f.mul(x, x)));
  return f.where(f.lt(x, f.c(-1)), lower, upper);
}

/// erfinv(y) for |y| <= 0.9.
int erfinv_central(const F64 &f, int y) {
  return f.mul(y, chebyshev(f, kErfinvCentral, f.sub(f.div(f.mul(y, y), f.c(0.405)), f.c(1))));
}

/// erfc^-1(q) for 0 <= q <= 0.1 (inf at 0, NaN below).
int erfcinv_tail(const F64 &f, int q) {
  int u = f.fn(Op::Rsqrt, f.fn(Op::Neg, f.fn(Op::Log, q)));
  double lo = kErfcinvTailU[0], hi = kErfcinvTailU[1];
  int t = f.sub(f.mul(f.sub(u, f.c(lo)), f.c(2 / (hi - lo))), f.c(1));
  return f.div(chebyshev(f, kErfcinvTail, t), u);
}

/// erfinv(y): +-inf at +-1, NaN beyond.
int erfinv(const F64 &f, int y) {
  int a = f.fn(Op::Abs, y);
  int tail = f.op(Op::Copysign, erfcinv_tail(f, f.sub(f.c(1), a)), y);
  return f.where(f.le(a, f.c(0.9)), erfinv_central(f, y), tail);
}

/// ndtri(p) = -sqrt 2 erfc^-1(2p), erfc^-1 from its tails at both ends (q <= 0.1 and
/// 2 - q <= 0.1) and from erfinv(1 - q) between.
int ndtri(const F64 &f, int p) {
  int q = f.mul(p, f.c(2));
  int low = erfcinv_tail(f, q), high = f.fn(Op::Neg, erfcinv_tail(f, f.sub(f.c(2), q)));
  int middle = erfinv_central(f, f.sub(f.c(1), q));
  int value = f.where(f.le(q, f.c(0.1)), low,
                      f.where(f.ge(q, f.c(1.9)), high, middle));
  return f.mul(f.c(-M_SQRT2), value);
}

/// t = a / (hi / 2) - 1 for a in [0, hi].
int linear_in(const F64 &f, int a, double hi) { return f.sub(f.mul(a, f.c(2 / hi)), f.c(1)); }
/// t = 2 a^2 / hi^2 - 1 for a in [0, hi].
int square_in(const F64 &f, int a, double hi) { return f.sub(f.mul(f.mul(a, a), f.c(2 / (hi * hi))), f.c(1)); }
/// t = 2 lo / a - 1 for a >= lo.
int inverse_in(const F64 &f, int a, double lo) { return f.sub(f.div(f.c(2 * lo), a), f.c(1)); }

/// exp(-|x|) I_order(|x|) (order 0 or 1; odd I1 takes x's sign after).
int scaled_bessel_i(const F64 &f, int order, int a) {
  int small = order == 0 ? chebyshev(f, kI0Small, linear_in(f, a, 8)) : f.mul(a, chebyshev(f, kI1Small, linear_in(f, a, 8)));
  int large = f.div(order == 0 ? chebyshev(f, kI0Large, inverse_in(f, a, 8)) : chebyshev(f, kI1Large, inverse_in(f, a, 8)),
                    f.fn(Op::Sqrt, a));
  return f.where(f.le(a, f.c(8)), small, large);
}

/// I0(x), I1(x), or scaled by exp(-|x|) (i0e, i1e). Unscaled, exp(|x|) is applied in two
/// halves so that the result overflows only where I does.
int bessel_i(const F64 &f, int order, bool scaled, int x) {
  int a = f.fn(Op::Abs, x);
  int value = scaled_bessel_i(f, order, a);
  if (!scaled) {
    int half = f.fn(Op::Exp, f.mul(a, f.c(0.5)));
    value = f.mul(f.mul(value, half), half);
  }
  return order == 0 ? value : f.where(f.lt(x, f.c(0)), f.fn(Op::Neg, value), value);
}

/// K0(x), K1(x) for x >= 0 (NaN below), or scaled by exp(x): inf at 0.
int bessel_k(const F64 &f, int order, bool scaled, int x) {
  int log_half = f.fn(Op::Log, f.mul(x, f.c(0.5)));
  int i_small = f.mul(bessel_i(f, order, true, x), f.fn(Op::Exp, x));  // I(x) for x <= 2
  int small = order == 0 ? f.sub(chebyshev(f, kK0Small, square_in(f, x, 2)), f.mul(log_half, i_small))
                         : f.add(f.div(chebyshev(f, kK1Small, square_in(f, x, 2)), x), f.mul(log_half, i_small));
  if (scaled) small = f.mul(small, f.fn(Op::Exp, x));
  int large = f.div(order == 0 ? chebyshev(f, kK0Large, inverse_in(f, x, 2)) : chebyshev(f, kK1Large, inverse_in(f, x, 2)),
                    f.fn(Op::Sqrt, x));
  if (!scaled) large = f.mul(large, f.fn(Op::Exp, f.fn(Op::Neg, x)));
  int value = f.where(f.le(x, f.c(2)), small, large);
  return f.where(f.eq(x, f.c(0)), f.c(kInf), value);
}

/// J0, J1 (first kind) and Y0, Y1 (second kind): series on [0, 8]; beyond, from (P, Q) with
/// cos and sin of x - (2 order + 1) pi / 4 spelled through cos x and sin x (no rounding of
/// pi / 4 added to a large x). J1 odd, J0 even, Y NaN below 0 and -inf at 0.
int bessel_jy(const F64 &f, int order, bool second_kind, int x) {
  int a = second_kind ? x : f.fn(Op::Abs, x);
  int t = square_in(f, a, 8);
  int small;
  if (!second_kind) {
    small = order == 0 ? chebyshev(f, kJ0Small, t) : f.mul(a, chebyshev(f, kJ1Small, t));
  } else {
    int log = f.mul(f.c(2 / M_PI), f.fn(Op::Log, a));
    if (order == 0) {
      small = f.add(chebyshev(f, kY0Small, t), f.mul(log, chebyshev(f, kJ0Small, t)));
    } else {
      int j1 = f.mul(a, chebyshev(f, kJ1Small, t));
      small = f.add(f.mul(a, chebyshev(f, kY1Small, t)),
                    f.sub(f.mul(log, j1), f.div(f.c(2 / M_PI), a)));
    }
  }
  int u = inverse_in(f, a, 8);
  int p = chebyshev(f, order == 0 ? kP0 : kP1, u), q = f.div(chebyshev(f, order == 0 ? kQ0 : kQ1, u), a);
  int cos_x = f.fn(Op::Cos, a), sin_x = f.fn(Op::Sin, a);
  // order 0: c = x - pi/4; order 1: c = x - 3 pi/4; each times sqrt 2.
  int cos_c = order == 0 ? f.add(cos_x, sin_x) : f.sub(sin_x, cos_x);
  int sin_c = order == 0 ? f.sub(sin_x, cos_x) : f.fn(Op::Neg, f.add(sin_x, cos_x));
  int amplitude = f.fn(Op::Sqrt, f.div(f.c(1 / M_PI), a));  // sqrt(2 / (pi a)) / sqrt 2
  int large = second_kind ? f.mul(amplitude, f.add(f.mul(p, sin_c), f.mul(q, cos_c)))
                          : f.mul(amplitude, f.sub(f.mul(p, cos_c), f.mul(q, sin_c)));
  int value = f.where(f.le(a, f.c(8)), small, large);
  if (second_kind) return f.where(f.eq(a, f.c(0)), f.c(-kInf), value);
  return order == 1 ? f.where(f.lt(x, f.c(0)), f.fn(Op::Neg, value), value) : value;
}

/// Airy's Ai: the series on [-8, 2]; beyond 2, its decay exp(-zeta) / (2 sqrt(pi) x^(1/4))
/// times a series in 1 / zeta; below -8, |x|^(-1/4) / sqrt(pi) (sin(zeta + pi/4) P -
/// cos(zeta + pi/4) Q), P and zeta Q series in 1 / zeta, the phase's pi / 4 spelled through
/// sin and cos of zeta; zeta = (2/3) |x|^(3/2). NaN at both infinities, as eager's.
int airy_ai(const F64 &f, int x) {
  int a = f.fn(Op::Abs, x);
  int zeta = f.mul(f.c(2.0 / 3), f.mul(a, f.fn(Op::Sqrt, a)));
  int quarter = f.fn(Op::Sqrt, f.fn(Op::Sqrt, a));  // |x|^(1/4)
  int small = chebyshev(f, kAiryAiSmall, f.div(f.add(x, f.c(3)), f.c(5)));
  int decay = f.div(f.mul(f.fn(Op::Exp, f.fn(Op::Neg, zeta)), chebyshev(f, kAiryAiF, inverse_in(f, zeta, kAiryZeta[0]))),
                    f.mul(f.c(2 * std::sqrt(M_PI)), quarter));
  int u = inverse_in(f, zeta, kAiryZeta[1]);
  int p = chebyshev(f, kAiryAiP, u), q = f.div(chebyshev(f, kAiryAiQ, u), zeta);
  int sin_z = f.fn(Op::Sin, zeta), cos_z = f.fn(Op::Cos, zeta);
  // sqrt 2 sin(zeta + pi/4) = sin + cos, sqrt 2 cos(zeta + pi/4) = cos - sin.
  int wave = f.div(f.sub(f.mul(f.add(sin_z, cos_z), p), f.mul(f.sub(cos_z, sin_z), q)),
                   f.mul(f.c(std::sqrt(2 * M_PI)), quarter));
  int value = f.where(f.lt(x, f.c(-8)), wave, f.where(f.le(x, f.c(2)), small, decay));
  return f.where(f.is(Op::IsInf, x), f.c(kNaN), value);
}

/// P_n(y) of an orthogonal polynomial op, with what eager does around its recurrence: 0 for
/// n < 0 (and for a non-finite n, which eager's conversion to an integer makes negative).
/// The Chebyshev kinds: their values at y = +-1, and for n > 6 inside (-1, 1) their closed
/// forms in theta = acos y (T: cos(n theta); U: sin((n+1) theta) / sin theta; V, W: the same
/// with n + 1/2 over cos and sin of theta/2); the recurrence elsewhere.
int orthogonal_polynomial(const F64 &f, Op op, int y, int n_value) {
  int degree = f.where(f.is(Op::IsInf, n_value), f.c(-1),
                       f.where(f.is(Op::IsNan, n_value), f.c(-1), f.fn(Op::Trunc, n_value)));
  int value = f.op(op, y, f.where(f.lt(degree, f.c(0)), f.c(0), degree));
  if (op >= Op::ChebyshevT && op <= Op::ChebyshevW) {
    int sign = f.where(f.odd(degree), f.c(-1), f.c(1));
    int twice_plus_one = f.add(f.add(degree, degree), f.c(1)), plus_one = f.add(degree, f.c(1));
    int at_one = op == Op::ChebyshevU ? plus_one : op == Op::ChebyshevW ? twice_plus_one : f.c(1);
    int at_minus_one = f.mul(sign, op == Op::ChebyshevU ? plus_one : op == Op::ChebyshevV ? twice_plus_one : f.c(1));
    int theta = f.fn(Op::Acos, y);
    int half = f.add(degree, f.c(0.5));
    int closed = op == Op::ChebyshevT ? f.fn(Op::Cos, f.mul(degree, theta))
                 : op == Op::ChebyshevU
                     ? f.div(f.fn(Op::Sin, f.mul(plus_one, theta)), f.fn(Op::Sin, theta))
                 : op == Op::ChebyshevV
                     ? f.div(f.fn(Op::Cos, f.mul(half, theta)), f.fn(Op::Cos, f.mul(f.c(0.5), theta)))
                     : f.div(f.fn(Op::Sin, f.mul(half, theta)), f.fn(Op::Sin, f.mul(f.c(0.5), theta)));
    int inside = f.both(f.lt(f.fn(Op::Abs, y), f.c(1)), f.lt(f.c(6), degree));
    value = f.where(inside, closed, value);
    value = f.where(f.eq(y, f.c(1)), at_one, f.where(f.eq(y, f.c(-1)), at_minus_one, value));
  }
  if (op == Op::LegendreP) {
    value = f.where(f.eq(y, f.c(1)), f.c(1), f.where(f.eq(y, f.c(-1)), f.where(f.odd(degree), f.c(-1), f.c(1)), value));
  }
  return f.where(f.lt(degree, f.c(0)), f.c(0), value);
}

/// A polynomial op of x and n (tensors or numbers, converted to the result's dtype first as
/// eager converts them), in f64; the shifted Chebyshev kinds of 2x - 1.
/// Argument `name` (a tensor or a number) converted to the result's dtype, then to f64.
int as_f64(Lowering &l, BodyBuilder &b, const Node &n, const char *name, const std::vector<Expr> &index, DType out) {
  return b.cast(b.cast(load_argument(l, b, n, name, index), out), DType::F64);
}

LowerFn polynomial(Op op, bool shifted) {
  return [=](Lowering &l, const Node &n) {
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      F64 f{b};
      int x = as_f64(l, b, n, "x", index, out.dtype);
      if (shifted) x = f.sub(f.add(x, x), f.c(1));
      return b.cast(orthogonal_polynomial(f, op, x, as_f64(l, b, n, "n", index, out.dtype)), out.dtype);
    })};
  };
}

/// igamma, igammac, special_zeta: the op of coil/series.h on (self, other), in f64.
LowerFn series(Op op) {
  return [=](Lowering &l, const Node &n) {
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      int x = as_f64(l, b, n, "self", index, out.dtype), y = as_f64(l, b, n, "other", index, out.dtype);
      return b.cast(b.binary(op, x, y, DType::F64), out.dtype);
    })};
  };
}

/// |v| = m 2^e with 1/2 <= m < 1 for a finite nonzero v (`plain`; m = |v| and e = 0
/// elsewhere). e from log2 |v|, corrected by one where log2 rounded across a power of two;
/// m = ldexp(|v|, -e), exact.
struct Split {
  int m, e, plain;
};
Split split_exponent(const F64 &f, int v) {
  int a = f.fn(Op::Abs, v);
  int plain = f.both(f.lt(f.c(0), a), f.lt(a, f.c(kInf)));
  int safe = f.where(plain, a, f.c(1));
  int e = f.add(f.fn(Op::Floor, f.fn(Op::Log2, safe)), f.c(1));
  int m = f.op(Op::Ldexp, safe, f.fn(Op::Neg, e));
  int high = f.ge(m, f.c(1)), low = f.lt(m, f.c(0.5));
  e = f.where(high, f.add(e, f.c(1)), f.where(low, f.sub(e, f.c(1)), e));
  m = f.where(high, f.mul(m, f.c(0.5)), f.where(low, f.mul(m, f.c(2)), m));
  return {f.where(plain, m, a), f.where(plain, e, f.c(0)), plain};
}

/// frexp(x): (m, e) with x = m 2^e and 1/2 <= |m| < 1; (x, 0) for 0, the infinities and NaN.
std::vector<TensorRef> frexp(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  const TensorType &mantissa_type = l.graph().type(n.outputs[0]), &exponent_type = l.graph().type(n.outputs[1]);
  auto split = [&](BodyBuilder &b, const std::vector<Expr> &x) {
    F64 f{b};
    int v = b.cast(Lowering::load_broadcast(b, self, x), DType::F64);
    Split s = split_exponent(f, v);
    return std::pair{f.where(s.plain, f.op(Op::Copysign, s.m, v), v), s.e};
  };
  return {l.pointwise(mantissa_type, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
            return b.cast(split(b, x).first, mantissa_type.dtype);
          }),
          l.pointwise(exponent_type, n.name + " exponent", [&](BodyBuilder &b, const std::vector<Expr> &x) {
            return b.cast(split(b, x).second, exponent_type.dtype);
          })};
}

/// nextafter(x, y): the number of x's dtype next to x toward y (y where they are equal, NaN
/// where either is). The step is one unit in the last place of x's binade (2^(E - p + 1) for
/// x = 1.m 2^E and p significant bits), half of it toward zero from a power of two, and the
/// smallest denormal at least; x +- step is exact in f64 for every dtype. From an infinity,
/// the largest finite number.
std::vector<TensorRef> nextafter(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &other = tensor_arg(l, n, "other");
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType t = out.dtype;
  int bits = t == DType::F64 ? 53 : t == DType::F32 ? 24 : t == DType::F16 ? 11 : 8;
  int min_exponent = t == DType::F64 ? -1022 : t == DType::F16 ? -14 : -126;  // of the smallest normal
  int max_exponent = t == DType::F64 ? 1023 : t == DType::F16 ? 15 : 127;
  double largest = (2 - std::ldexp(1.0, 1 - bits)) * std::ldexp(1.0, max_exponent);  // the largest finite
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    F64 f{b};
    int x = b.cast(b.cast(Lowering::load_broadcast(b, self, index), t), DType::F64);
    int y = b.cast(b.cast(Lowering::load_broadcast(b, other, index), t), DType::F64);
    Split s = split_exponent(f, x);
    double smallest = std::ldexp(1.0, min_exponent - bits + 1);
    int binade_step = f.op(Op::Ldexp, f.c(1), f.sub(s.e, f.c(bits)));  // 2^(e - p)
    int step = f.op(Op::Maximum, binade_step, f.c(smallest));
    int toward_zero = f.lt(f.fn(Op::Abs, y), f.fn(Op::Abs, x));
    int same_sign = f.eq(f.op(Op::Copysign, f.c(1), x), f.op(Op::Copysign, f.c(1), y));
    toward_zero = f.either(toward_zero, f.b.unary(Op::LogicalNot, same_sign, DType::Bool));
    int power = f.both(f.eq(s.m, f.c(0.5)), f.lt(f.c(smallest), step));
    step = f.where(f.both(toward_zero, power), f.mul(step, f.c(0.5)), step);
    int up = f.lt(x, y);
    int value = f.where(up, f.add(x, step), f.sub(x, step));
    value = f.where(f.eq(x, f.c(0)), f.op(Op::Copysign, f.c(smallest), f.sub(y, x)), value);
    value = f.where(f.is(Op::IsInf, x), f.op(Op::Copysign, f.c(largest), x), value);  // back from infinity
    value = f.where(f.eq(x, y), y, value);
    value = f.where(f.either(f.is(Op::IsNan, x), f.is(Op::IsNan, y)), f.c(kNaN), value);
    return b.cast(value, t);
  })};
}

/// A special function of `self`, elementwise, in f64.
LowerFn special(std::function<int(const F64 &, int x, const Node &n)> fn) {
  return [=](Lowering &l, const Node &n) {
    // The operand is `self`, or `x` in the newer special functions' schemas.
    const TensorRef &self = l.ref(arg(n, n.op->schema.find_arg("self") >= 0 ? "self" : "x").as<ValueId>());
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      F64 f{b};
      return b.cast(fn(f, b.cast(Lowering::load_broadcast(b, self, index), DType::F64), n), out.dtype);
    })};
  };
}

}  // namespace

void add_special_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.lgamma.default"] = special([](const F64 &f, int x, const Node &) { return lgamma(f, x); });
  t["aten.digamma.default"] = special([](const F64 &f, int x, const Node &) { return digamma(f, x); });
  t["aten.polygamma.default"] = special([](const F64 &f, int x, const Node &n) {
    int64_t order = arg(n, "n").integer();
    return order == 0 ? digamma(f, x) : polygamma(f, int(order), x);
  });
  t["aten.erfc.default"] = special([](const F64 &f, int x, const Node &) { return erfc(f, x); });
  t["aten.special_erfcx.default"] = special([](const F64 &f, int x, const Node &) { return erfcx(f, x); });
  t["aten.special_log_ndtr.default"] = special([](const F64 &f, int x, const Node &) { return log_ndtr(f, x); });
  t["aten.erfinv.default"] = special([](const F64 &f, int x, const Node &) { return erfinv(f, x); });
  t["aten.special_ndtri.default"] = special([](const F64 &f, int x, const Node &) { return ndtri(f, x); });
  using Fn = std::function<int(const F64 &, int)>;
  std::vector<std::pair<const char *, Fn>> bessel = {
      {"aten.i0.default", [](const F64 &f, int x) { return bessel_i(f, 0, false, x); }},
      {"aten.special_modified_bessel_i0.default", [](const F64 &f, int x) { return bessel_i(f, 0, false, x); }},
      {"aten.special_i0e.default", [](const F64 &f, int x) { return bessel_i(f, 0, true, x); }},
      {"aten.special_i1.default", [](const F64 &f, int x) { return bessel_i(f, 1, false, x); }},
      {"aten.special_modified_bessel_i1.default", [](const F64 &f, int x) { return bessel_i(f, 1, false, x); }},
      {"aten.special_i1e.default", [](const F64 &f, int x) { return bessel_i(f, 1, true, x); }},
      {"aten.special_modified_bessel_k0.default", [](const F64 &f, int x) { return bessel_k(f, 0, false, x); }},
      {"aten.special_modified_bessel_k1.default", [](const F64 &f, int x) { return bessel_k(f, 1, false, x); }},
      {"aten.special_scaled_modified_bessel_k0.default", [](const F64 &f, int x) { return bessel_k(f, 0, true, x); }},
      {"aten.special_scaled_modified_bessel_k1.default", [](const F64 &f, int x) { return bessel_k(f, 1, true, x); }},
      {"aten.special_bessel_j0.default", [](const F64 &f, int x) { return bessel_jy(f, 0, false, x); }},
      {"aten.special_bessel_j1.default", [](const F64 &f, int x) { return bessel_jy(f, 1, false, x); }},
      {"aten.special_bessel_y0.default", [](const F64 &f, int x) { return bessel_jy(f, 0, true, x); }},
      {"aten.special_bessel_y1.default", [](const F64 &f, int x) { return bessel_jy(f, 1, true, x); }},
      {"aten.special_airy_ai.default", airy_ai},
  };
  for (const auto &entry : bessel) {
    Fn fn = entry.second;
    t[entry.first] = special([fn](const F64 &f, int x, const Node &) { return fn(f, x); });
  }
  const std::pair<const char *, Op> polynomials[] = {
      {"chebyshev_polynomial_t", Op::ChebyshevT}, {"chebyshev_polynomial_u", Op::ChebyshevU},
      {"chebyshev_polynomial_v", Op::ChebyshevV}, {"chebyshev_polynomial_w", Op::ChebyshevW},
      {"hermite_polynomial_h", Op::HermiteH},     {"hermite_polynomial_he", Op::HermiteHe},
      {"laguerre_polynomial_l", Op::LaguerreL},   {"legendre_polynomial_p", Op::LegendreP}};
  for (auto [name, op] : polynomials) {
    for (bool shifted : {false, true}) {
      if (shifted && op > Op::ChebyshevW) continue;
      for (const char *overload : {"default", "x_scalar", "n_scalar"})
        t[str_cat("aten.special_", shifted ? "shifted_" : "", name, ".", overload)] = polynomial(op, shifted);
    }
  }
  t["aten.igamma.default"] = series(Op::Igamma);
  t["aten.igammac.default"] = series(Op::Igammac);
  for (const char *overload : {"default", "self_scalar", "other_scalar"})
    t[str_cat("aten.special_zeta.", overload)] = series(Op::Zeta);
  t["aten.frexp.Tensor"] = frexp;
  t["aten.nextafter.default"] = nextafter;
  t["aten.special_spherical_bessel_j0.default"] =
      special([](const F64 &f, int x, const Node &) { return spherical_bessel_j0(f, x); });
}

}  // namespace coil::lowering
