// The classical orthogonal polynomials P_n(x) by their three-term recurrences:
//
//   P_0 = 1,  P_1 = p1 x + p0,
//   P_(k+1) = (((a1 k + a0) x + (b1 k + b0)) P_k - (c1 k + c0) P_(k-1)) / (d1 k + d0).
//
// This header is the definition for C++: the reference interpreter (src/ir/scalar_math.cpp)
// and generated CPU kernels (prelude.h) both call `polynomial`; the Triton dialect prints the
// same loop from the same table (src/codegen/triton/triton_ops.cpp, helper `_polynomial`).
// The degree n is data (a tensor), so the loop runs n - 1 steps per element, as eager's. The
// lowering (src/lowering/special.cpp) handles what eager does around the loop: negative n,
// the ends of the interval, the closed forms of high-degree Chebyshev polynomials.
#pragma once

#include <cstdint>

namespace coil_rt {

// In the order of ir::Op's ChebyshevT .. LegendreP.
enum class Polynomial : int { ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP };

struct Recurrence {
  double p1, p0;  // P_1 = p1 x + p0
  double a1, a0, b1, b0, c1, c0, d1, d0;
};

inline constexpr Recurrence kRecurrences[] = {
    {1, 0, 0, 2, 0, 0, 0, 1, 0, 1},    // Chebyshev T: 2x T_k - T_(k-1)
    {2, 0, 0, 2, 0, 0, 0, 1, 0, 1},    // Chebyshev U
    {2, -1, 0, 2, 0, 0, 0, 1, 0, 1},   // Chebyshev V
    {2, 1, 0, 2, 0, 0, 0, 1, 0, 1},    // Chebyshev W
    {2, 0, 0, 2, 0, 0, 2, 0, 0, 1},    // Hermite H (physicists'): 2x H_k - 2k H_(k-1)
    {1, 0, 0, 1, 0, 0, 1, 0, 0, 1},    // Hermite He (probabilists'): x He_k - k He_(k-1)
    {-1, 1, 0, -1, 2, 1, 1, 0, 1, 1},  // Laguerre: ((2k + 1 - x) L_k - k L_(k-1)) / (k + 1)
    {1, 0, 2, 1, 0, 0, 1, 0, 1, 1},    // Legendre: ((2k + 1) x P_k - k P_(k-1)) / (k + 1)
};

/// P_n(x) of `family` for the degree n (a whole number held as T); 1 for n <= 0.
template <typename T>
inline T polynomial(Polynomial family, T x, T n) {
  const Recurrence &r = kRecurrences[int(family)];
  if (!(n >= 1)) return T(1);
  int64_t degree = n < T(9.2e18) ? int64_t(n) : INT64_MAX;
  T p = T(1), q = T(r.p1) * x + T(r.p0);
  for (int64_t k = 1; k < degree; ++k) {
    T kk = T(k);
    T next = (((T(r.a1) * kk + T(r.a0)) * x + (T(r.b1) * kk + T(r.b0))) * q - (T(r.c1) * kk + T(r.c0)) * p) /
             (T(r.d1) * kk + T(r.d0));
    p = q;
    q = next;
  }
  return q;
}

}  // namespace coil_rt
