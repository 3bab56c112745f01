// Special functions summed until their series converge: the regularized incomplete gamma
// functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac), and the Hurwitz zeta function
// zeta(s, q) = sum over k >= 0 of (q + k)^-s (special_zeta). Each computes in double; the
// special values are eager's.
//
// This header is the definition for C++: the reference interpreter (src/ir/scalar_math.cpp)
// and generated CPU kernels (prelude.h, vec.h lane by lane) both call these; the Triton
// dialect prints the same loops as the helpers `_gamma_inc` and `_zeta`
// (src/codegen/triton/triton_ops.cpp), one iteration for every lane until the last converges.
//
//   P and Q    below x = a + 1 the series of P, x^a e^-x / Gamma(a + 1) times
//              sum of x^k / ((a + 1) ... (a + k)), and Q = 1 - P; above, Q by its continued
//              fraction (modified Lentz), and P = 1 - Q. The prefactor is taken as one
//              exponential of a log x - x - lgamma(a), so it neither overflows nor underflows
//              before the product does. Terms shrink like exp(-k^2 / 2a) where x is near a,
//              so large a takes about 9 sqrt(a) steps; kMaxSteps bounds them (a up to about
//              10^8 converges).
//   zeta       the terms up to q + k >= 10 (at least 10 of them) summed directly, then the
//              Euler-Maclaurin remainder at w = q + k: w^(1-s) / (s - 1) + w^-s / 2 and eight
//              Bernoulli terms B_2j / (2j)! s (s + 1) ... (s + 2j - 2) w^(-s-2j+1).
#pragma once

#include <cmath>
#include <limits>

namespace coil_rt {

inline constexpr int kMaxSteps = 100000;
inline constexpr double kSeriesEpsilon = 1e-17;   // a term this small next to the sum ends it
inline constexpr double kFractionEpsilon = 4.5e-16;  // a factor this close to 1 ends the fraction

/// P(a, x) (upper = false) or Q(a, x) (upper = true) for finite a > 0 and x > 0.
inline double gamma_inc_core(double a, double x, bool upper) {
  double log_prefactor = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int k = 1; k < kMaxSteps; ++k) {
      term *= x / (a + k);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * kSeriesEpsilon) break;
    }
    double p = sum * std::exp(log_prefactor);
    return upper ? 1 - p : p;
  }
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int k = 1; k < kMaxSteps; ++k) {
    double an = -k * (k - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double step = d * c;
    h *= step;
    if (std::fabs(step - 1) <= kFractionEpsilon) break;
  }
  double q = std::exp(log_prefactor) * h;
  return upper ? q : 1 - q;
}

/// igamma (upper = false) and igammac (upper = true) of any a and x, eager's special values
/// first: NaN for a NaN, a negative a or x, or a = x = 0 and an infinite a with an infinite
/// x; at a = 0 (x > 0) P is 1; at x = 0 P is 0; an infinite a gives P = 0, an infinite x
/// P = 1.
template <typename T> inline T gamma_inc(T a_in, T x_in, bool upper) {
  double a = double(a_in), x = double(x_in), nan = std::numeric_limits<double>::quiet_NaN();
  double p;
  if (a != a || x != x || a < 0 || x < 0 || (a == 0 && x == 0) || (std::isinf(a) && std::isinf(x))) return T(nan);
  if (a == 0) p = 1;
  else if (x == 0 || std::isinf(a)) p = 0;
  else if (std::isinf(x)) p = 1;
  else return T(gamma_inc_core(a, x, upper));
  return T(upper ? 1 - p : p);
}
template <typename T> inline T igamma(T a, T x) { return gamma_inc(a, x, false); }
template <typename T> inline T igammac(T a, T x) { return gamma_inc(a, x, true); }

/// The Hurwitz zeta function as eager's special_zeta: inf at s = 1, NaN below and for a NaN;
/// at a non-positive whole q (a pole) inf; a negative q of another value needs a whole s
/// (NaN otherwise), whose terms are then summed from q as from any other.
template <typename T> inline T zeta(T s_in, T q_in) {
  double s = double(s_in), q = double(q_in), inf = std::numeric_limits<double>::infinity();
  if (s != s || q != q) return T(std::numeric_limits<double>::quiet_NaN());
  if (s == 1) return T(inf);
  if (s < 1) return T(std::numeric_limits<double>::quiet_NaN());
  if (q <= 0) {
    if (q == std::floor(q)) return T(inf);
    if (s != std::floor(s)) return T(std::numeric_limits<double>::quiet_NaN());
  }
  double sum = 0, w = q;
  for (int k = 0; k < kMaxSteps && (k < 10 || w < 10); ++k, w += 1) sum += std::pow(w, -s);
  // B_2j / (2j)! for j = 1..8.
  static constexpr double kB[] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                                  -691.0 / 1307674368000, 1.0 / 74724249600, -3617.0 / 10670622842880000};
  double w_s = std::pow(w, -s), tail = w * w_s / (s - 1) + 0.5 * w_s;
  double rising = s, power = w_s / w;  // s (s + 1) ... (s + 2j - 2), w^(-s-2j+1)
  for (int j = 0; j < 8; ++j) {
    tail += kB[j] * rising * power;
    rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
    power /= w * w;
  }
  return T(sum + tail);
}

}  // namespace coil_rt
