// SIMD vectors of generated kernels: Vec<T, N> is N lanes of T in one GCC/Clang vector
// (vector_size), so arithmetic, comparisons and selects are single vector instructions
// whatever the ISA; the code generator picks N from the ISA's register width and the
// kernel's dtypes (16 floats on AVX-512, 8 on AVX2). Bool lanes are 32-bit masks (all
// bits set or none), what a comparison of floats gives and a select of floats takes, so
// `where(x > y, x, y)` converts nothing; bools are bytes only in memory. Transcendental functions call glibc's libmvec variants
// explicitly, one native register at a time; ops without a vector instruction (integer
// division with its error flag, float-to-int with PyTorch's saturation) run lane by lane
// through the scalar helpers of prelude.h, so both paths compute the same values.
// Included by prelude.h. Tests: tests/unit/cpp_backend_test.cpp, tests/golden/.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

namespace coil_rt {

template <typename T> struct LaneOf { using type = T; };
template <> struct LaneOf<bool> { using type = int32_t; };

/// The signed integer of `Bytes` bytes: the lane type of a comparison's mask.
template <int Bytes> struct MaskLane;
template <> struct MaskLane<1> { using type = int8_t; };
template <> struct MaskLane<2> { using type = int16_t; };
template <> struct MaskLane<4> { using type = int32_t; };
template <> struct MaskLane<8> { using type = int64_t; };

template <typename T, int N>
struct Vec {
  using Lane = typename LaneOf<T>::type;
  typedef Lane V __attribute__((vector_size(sizeof(Lane) * N)));
  using MLane = typename MaskLane<int(sizeof(Lane))>::type;
  typedef MLane M __attribute__((vector_size(sizeof(Lane) * N)));
  /// Alignment that `load` and `store` assume: the vector's size, at most a cache line.
  static constexpr size_t kAlign = sizeof(V) < 64 ? sizeof(V) : 64;

  V v;

  Vec() = default;
  Vec(T x) {  // every lane x (not explicit: literals meet vectors); a loop, as 0 + -0.0 is +0.0
    for (int l = 0; l < N; ++l) v[l] = lane(x);
  }
  static Lane lane(T x) {
    if constexpr (std::is_same_v<T, bool>) return x ? -1 : 0;
    else return Lane(x);
  }
  static Vec of(V x) {
    Vec r;
    r.v = x;
    return r;
  }

  T operator[](int l) const { return T(v[l]); }

  typedef uint8_t Bytes __attribute__((vector_size(N)));  // bools in memory

  static Vec loadu(const T *p) {
    Vec r;
    if constexpr (std::is_same_v<T, bool>) {
      Bytes b;
      std::memcpy(&b, p, sizeof b);
      r.v = -__builtin_convertvector(b, V);
    } else {
      std::memcpy(&r.v, p, sizeof r.v);
    }
    return r;
  }
  static Vec load(const T *p) { return loadu(static_cast<const T *>(__builtin_assume_aligned(p, kAlign))); }
  void storeu(T *p) const {
    if constexpr (std::is_same_v<T, bool>) {
      Bytes b = __builtin_convertvector(v & 1, Bytes);
      std::memcpy(p, &b, sizeof b);
    } else {
      std::memcpy(p, &v, sizeof v);
    }
  }
  void store(T *p) const { storeu(static_cast<T *>(__builtin_assume_aligned(p, kAlign))); }

  /// Lane l is f(l): gathers, masked loads and anything without a vector form.
  template <typename F> static Vec generate(F f) {
    Vec r{};  // zeroed: lane writes into an indeterminate vector were miscompiled by GCC 12 at -O3
    for (int l = 0; l < N; ++l) r.v[l] = lane(T(f(l)));
    return r;
  }
  /// base, base + step, base + 2*step, ...
  static Vec iota(T base, T step) {
    return generate([&](int l) { return T(base + T(l) * step); });
  }

  // A mask (-1 or 0 in lanes of the compared type) as bools: a no-op for 32-bit lanes.
  template <typename Mask> static Vec<bool, N> as_bool(Mask m) {
    return Vec<bool, N>::of(__builtin_convertvector(m, typename Vec<bool, N>::V));
  }

  friend Vec operator+(Vec a, Vec b) { return of(a.v + b.v); }
  friend Vec operator-(Vec a, Vec b) { return of(a.v - b.v); }
  friend Vec operator*(Vec a, Vec b) { return of(a.v * b.v); }
  friend Vec operator/(Vec a, Vec b) { return of(a.v / b.v); }
  friend Vec operator-(Vec a) { return of(-a.v); }
  friend Vec operator&(Vec a, Vec b) { return of(a.v & b.v); }
  friend Vec operator|(Vec a, Vec b) { return of(a.v | b.v); }
  friend Vec operator^(Vec a, Vec b) { return of(a.v ^ b.v); }
  friend Vec operator~(Vec a) { return of(~a.v); }
  friend Vec<bool, N> operator==(Vec a, Vec b) { return as_bool(a.v == b.v); }
  friend Vec<bool, N> operator!=(Vec a, Vec b) { return as_bool(a.v != b.v); }
  // Ordering of bools is of 0 and 1, not of their masks (-1 and 0).
  static V ordered(V x) {
    if constexpr (std::is_same_v<T, bool>) return x & 1;
    else return x;
  }
  friend Vec<bool, N> operator<(Vec a, Vec b) { return as_bool(ordered(a.v) < ordered(b.v)); }
  friend Vec<bool, N> operator<=(Vec a, Vec b) { return as_bool(ordered(a.v) <= ordered(b.v)); }
  friend Vec<bool, N> operator>(Vec a, Vec b) { return as_bool(ordered(a.v) > ordered(b.v)); }
  friend Vec<bool, N> operator>=(Vec a, Vec b) { return as_bool(ordered(a.v) >= ordered(b.v)); }
  // On bool lanes (masks).
  friend Vec operator!(Vec a) { return of(~a.v); }
  friend Vec operator&&(Vec a, Vec b) { return of(a.v & b.v); }
  friend Vec operator||(Vec a, Vec b) { return of(a.v | b.v); }
};

/// c ? a : b in every lane.
template <typename T, int N> inline Vec<T, N> where(Vec<bool, N> c, Vec<T, N> a, Vec<T, N> b) {
  using W = Vec<T, N>;
  typename W::M m = __builtin_convertvector(c.v, typename W::M);  // 0 or all bits set
  typename W::M r = ((typename W::M)a.v & m) | ((typename W::M)b.v & ~m);  // vector casts keep the bits
  return W::of((typename W::V)r);
}

/// f applied lane by lane (f returns the result's lane type R).
template <typename R, typename T, int N, typename F> inline Vec<R, N> lanewise(Vec<T, N> a, F f) {
  if constexpr (std::is_same_v<R, T> && !std::is_same_v<T, bool>) {
    Vec<R, N> r{};
    for (int l = 0; l < N; ++l) r.v[l] = f(a.v[l]);  // this form vectorizes (sqrt: vsqrtps)
    return r;
  } else {
    return Vec<R, N>::generate([&](int l) { return f(a[l]); });
  }
}
template <typename R, typename T, typename U, int N, typename F> inline Vec<R, N> lanewise(Vec<T, N> a, Vec<U, N> b, F f) {
  return Vec<R, N>::generate([&](int l) { return f(a[l], b[l]); });
}

/// Conversion of every lane as the scalar code converts (float to integer as
/// coil_rt::to_int: truncation, NaN and out-of-range values as PyTorch's CPU kernels give them).
template <typename To, typename From, int N> inline Vec<To, N> cast(Vec<From, N> x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != Vec<From, N>(From(0));
  } else if constexpr (std::is_same_v<From, bool>) {
    return Vec<To, N>::of(__builtin_convertvector(-x.v, typename Vec<To, N>::V));  // masks to 0 or 1
  } else if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>) {
    return lanewise<To>(x, [](From v) { return to_int<To>(double(v)); });
  } else {
    return Vec<To, N>::of(__builtin_convertvector(x.v, typename Vec<To, N>::V));
  }
}

// ---- horizontal reductions, lanes in order ---------------------------------------------

template <typename T, int N> inline T hsum(Vec<T, N> x) {
  T s = x[0];
  for (int l = 1; l < N; ++l) {
    if constexpr (std::is_floating_point_v<T>) s += x[l];
    else s = add_w<T>(s, x[l]);
  }
  return s;
}
template <typename T, int N> inline T hprod(Vec<T, N> x) {
  T s = x[0];
  for (int l = 1; l < N; ++l) {
    if constexpr (std::is_floating_point_v<T>) s *= x[l];
    else s = mul_w<T>(s, x[l]);
  }
  return s;
}

// ---- math ------------------------------------------------------------------------------

// Applies a native-width function to each register-sized piece of x (and y).
template <typename Native, typename T, int N, typename F> inline Vec<T, N> by_pieces(Vec<T, N> x, F f) {
  static_assert(sizeof(Vec<T, N>) % sizeof(Native) == 0, "a vector is whole native registers");
  Vec<T, N> r;
  for (size_t i = 0; i < sizeof(r.v); i += sizeof(Native)) {
    Native p;
    std::memcpy(&p, reinterpret_cast<const char *>(&x.v) + i, sizeof p);
    p = f(p);
    std::memcpy(reinterpret_cast<char *>(&r.v) + i, &p, sizeof p);
  }
  return r;
}
template <typename Native, typename T, int N, typename F> inline Vec<T, N> by_pieces(Vec<T, N> x, Vec<T, N> y, F f) {
  static_assert(sizeof(Vec<T, N>) % sizeof(Native) == 0, "a vector is whole native registers");
  Vec<T, N> r;
  for (size_t i = 0; i < sizeof(r.v); i += sizeof(Native)) {
    Native p, q;
    std::memcpy(&p, reinterpret_cast<const char *>(&x.v) + i, sizeof p);
    std::memcpy(&q, reinterpret_cast<const char *>(&y.v) + i, sizeof q);
    p = f(p, q);
    std::memcpy(reinterpret_cast<char *>(&r.v) + i, &p, sizeof p);
  }
  return r;
}


#define COIL_LANEWISE1(name, expr)                                              \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> a) {             \
    return lanewise<T>(a, [](T x) { return T(expr); });                       \
  }
COIL_LANEWISE1(sqrt, std::sqrt(x))
COIL_LANEWISE1(sign_f, sign_f(x))
#undef COIL_LANEWISE1

/// Comparing an index that moves by `step` per lane (lane l holds base + l*step) with a
/// value c the same in every lane: l*step against c - base, in 32-bit lanes (one compare
/// that gives the bool lanes as they are, not two of 64-bit lanes and their narrowing).
/// c - base is saturated to 32 bits, which l*step (|l*step| < 2^30) never reaches.
template <int N> inline Vec<int32_t, N> lane_steps(int32_t step) { return Vec<int32_t, N>::iota(0, step); }
inline int32_t offset32(int64_t c, int64_t base) {
  int64_t d;
  if (__builtin_sub_overflow(c, base, &d)) return c < base ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max();
  return d < std::numeric_limits<int32_t>::min() ? std::numeric_limits<int32_t>::min()
         : d > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::max() : int32_t(d);
}

/// Lane l is p[l * stride]: a strided load (a column of a row-major matrix), lane by
/// lane: AVX-512's gather instruction measured slower than these loads (a layer norm
/// whose rows are columns of its input, 16 floats at stride 64 from L1: 141 us against 122).
template <int N, typename T> inline Vec<T, N> strided(const T *p, int64_t stride) {
  return Vec<T, N>::generate([&](int l) { return p[int64_t(l) * stride]; });
}

/// |x|: the sign bit cleared.
template <typename T, int N> inline Vec<T, N> abs(Vec<T, N> x) {
  using M = typename Vec<T, N>::M;
  return Vec<T, N>::of((typename Vec<T, N>::V)((M)x.v & ~(M)Vec<T, N>(T(-0.0)).v));
}

// Rounding: one instruction per register where the ISA has it (rounding mode as the
// immediate), else lane by lane.
#if defined(__AVX512F__) || defined(__AVX__)
#if defined(__AVX512F__)
#define COIL_ROUND_BYTES 64
typedef float RoundF __attribute__((vector_size(64)));  // __m512 without its attributes
typedef double RoundD __attribute__((vector_size(64)));
template <int Mode> inline RoundF coil_round(RoundF x) { return (RoundF)_mm512_roundscale_ps((__m512)x, Mode | _MM_FROUND_NO_EXC); }
template <int Mode> inline RoundD coil_round(RoundD x) { return (RoundD)_mm512_roundscale_pd((__m512d)x, Mode | _MM_FROUND_NO_EXC); }
#else
#define COIL_ROUND_BYTES 32
typedef float RoundF __attribute__((vector_size(32)));  // __m256 without its attributes
typedef double RoundD __attribute__((vector_size(32)));
template <int Mode> inline RoundF coil_round(RoundF x) { return (RoundF)_mm256_round_ps((__m256)x, Mode | _MM_FROUND_NO_EXC); }
template <int Mode> inline RoundD coil_round(RoundD x) { return (RoundD)_mm256_round_pd((__m256d)x, Mode | _MM_FROUND_NO_EXC); }
#endif
template <typename T, int N, typename F> inline Vec<T, N> by_register(Vec<T, N> x, F f) {
  return by_pieces<std::conditional_t<std::is_same_v<T, float>, RoundF, RoundD>>(x, f);
}
#define COIL_ROUND(name, fallback, mode)                                                                     \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> x) {                                         \
    if constexpr (sizeof(Vec<T, N>) % COIL_ROUND_BYTES == 0 && std::is_floating_point_v<T>)               \
      return by_register(x, [](auto r) { return coil_round<mode>(r); });                                    \
    else return lanewise<T>(x, [](T v) { return T(fallback(v)); });                                        \
  }
#else
#define COIL_ROUND(name, fallback, mode)                                                   \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> x) {                       \
    return lanewise<T>(x, [](T v) { return T(fallback(v)); });                            \
  }
#endif
COIL_ROUND(floor, std::floor, _MM_FROUND_TO_NEG_INF)
COIL_ROUND(ceil, std::ceil, _MM_FROUND_TO_POS_INF)
COIL_ROUND(trunc, std::trunc, _MM_FROUND_TO_ZERO)
COIL_ROUND(nearbyint, std::nearbyint, _MM_FROUND_TO_NEAREST_INT)
#undef COIL_ROUND

template <typename T, int N> inline Vec<bool, N> isnan(Vec<T, N> x) { return x != x; }
template <typename T, int N> inline Vec<bool, N> isinf(Vec<T, N> x) {
  return abs(x) == Vec<T, N>(std::numeric_limits<T>::infinity());
}
template <typename T, int N> inline Vec<T, N> fmod(Vec<T, N> a, Vec<T, N> b) {
  return lanewise<T>(a, b, [](T x, T y) { return std::fmod(x, y); });
}
template <typename T, int N> inline Vec<T, N> floor_div_f(Vec<T, N> a, Vec<T, N> b) {
  return lanewise<T>(a, b, [](T x, T y) { return floor_div_f(x, y); });
}
template <typename T, int N> inline Vec<T, N> remainder_f(Vec<T, N> a, Vec<T, N> b) {
  return lanewise<T>(a, b, [](T x, T y) { return remainder_f(x, y); });
}
template <typename T, int N> inline Vec<T, N> max_nan(Vec<T, N> a, Vec<T, N> b) {
  Vec<T, N> nan(std::numeric_limits<T>::quiet_NaN());
  return where(isnan(a) || isnan(b), nan, where(a > b, a, b));
}
template <typename T, int N> inline Vec<T, N> min_nan(Vec<T, N> a, Vec<T, N> b) {
  Vec<T, N> nan(std::numeric_limits<T>::quiet_NaN());
  return where(isnan(a) || isnan(b), nan, where(a < b, a, b));
}
template <typename T, int N> inline Vec<T, N> fmax_f(Vec<T, N> a, Vec<T, N> b) {
  return where(isnan(a), b, where(isnan(b), a, where(a < b, b, a)));
}
template <typename T, int N> inline Vec<T, N> fmin_f(Vec<T, N> a, Vec<T, N> b) {
  return where(isnan(a), b, where(isnan(b), a, where(b < a, b, a)));
}
/// a's magnitude with b's sign bit (NaN's included).
template <typename T, int N> inline Vec<T, N> copysign(Vec<T, N> a, Vec<T, N> b) {
  using M = typename Vec<T, N>::M;
  M sign = (M)Vec<T, N>(T(-0.0)).v;
  return Vec<T, N>::of((typename Vec<T, N>::V)(((M)a.v & ~sign) | ((M)b.v & sign)));
}
/// Integer max/min (no NaN).
template <typename T, int N> inline Vec<T, N> maximum(Vec<T, N> a, Vec<T, N> b) { return where(a > b, a, b); }
template <typename T, int N> inline Vec<T, N> minimum(Vec<T, N> a, Vec<T, N> b) { return where(a < b, a, b); }

// libmvec, one register at a time: its AVX-512 variants ('e') for vectors of whole
// 64-byte registers, its AVX2 variants ('d') for 32-byte ones (8 floats on an AVX-512
// machine, cpp.vector_lanes=8), lane by lane otherwise.
#if defined(__GLIBC__) && defined(__x86_64__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35) && defined(__AVX2__)
typedef float MvecF32 __attribute__((vector_size(32)));
typedef double MvecD32 __attribute__((vector_size(32)));
#define COIL_MVEC_DECL_D(name)                                                  \
  extern "C" MvecF32 _ZGVdN8v_##name##f(MvecF32) noexcept;                     \
  extern "C" MvecD32 _ZGVdN4v_##name(MvecD32) noexcept;                        \
  extern "C" MvecF32 _ZGVdN8vv_##name##f(MvecF32, MvecF32) noexcept;           \
  extern "C" MvecD32 _ZGVdN4vv_##name(MvecD32, MvecD32) noexcept;
#if defined(__AVX512F__)
typedef float MvecF64 __attribute__((vector_size(64)));
typedef double MvecD64 __attribute__((vector_size(64)));
#define COIL_MVEC_DECL_E(name)                                                  \
  extern "C" MvecF64 _ZGVeN16v_##name##f(MvecF64) noexcept;                    \
  extern "C" MvecD64 _ZGVeN8v_##name(MvecD64) noexcept;                        \
  extern "C" MvecF64 _ZGVeN16vv_##name##f(MvecF64, MvecF64) noexcept;         \
  extern "C" MvecD64 _ZGVeN8vv_##name(MvecD64, MvecD64) noexcept;
#define COIL_MVEC_IF_E(bytes, call) if constexpr ((bytes) % 64 == 0) return call; else
#else
#define COIL_MVEC_DECL_E(name)
#define COIL_MVEC_IF_E(bytes, call)
#endif
// Only the one- or two-argument forms that glibc has are ever called.
#define COIL_VEC_MATH(name)                                                                              \
  COIL_MVEC_DECL_D(name) COIL_MVEC_DECL_E(name)                                                          \
  template <int N> inline Vec<float, N> name(Vec<float, N> x) {                                          \
    COIL_MVEC_IF_E(sizeof(x), (by_pieces<MvecF64>(x, _ZGVeN16v_##name##f)))                               \
    if constexpr (sizeof(x) % 32 == 0) return by_pieces<MvecF32>(x, _ZGVdN8v_##name##f);                 \
    else return lanewise<float>(x, [](float v) { return ::name##f(v); });                                \
  }                                                                                                      \
  template <int N> inline Vec<double, N> name(Vec<double, N> x) {                                        \
    COIL_MVEC_IF_E(sizeof(x), (by_pieces<MvecD64>(x, _ZGVeN8v_##name)))                                   \
    if constexpr (sizeof(x) % 32 == 0) return by_pieces<MvecD32>(x, _ZGVdN4v_##name);                    \
    else return lanewise<double>(x, [](double v) { return ::name(v); });                                 \
  }
#define COIL_VEC_MATH2(name)                                                                             \
  COIL_MVEC_DECL_D(name) COIL_MVEC_DECL_E(name)                                                          \
  template <int N> inline Vec<float, N> name(Vec<float, N> x, Vec<float, N> y) {                         \
    COIL_MVEC_IF_E(sizeof(x), (by_pieces<MvecF64>(x, y, _ZGVeN16vv_##name##f)))                           \
    if constexpr (sizeof(x) % 32 == 0) return by_pieces<MvecF32>(x, y, _ZGVdN8vv_##name##f);             \
    else return lanewise<float>(x, y, [](float a, float b) { return ::name##f(a, b); });                 \
  }                                                                                                      \
  template <int N> inline Vec<double, N> name(Vec<double, N> x, Vec<double, N> y) {                      \
    COIL_MVEC_IF_E(sizeof(x), (by_pieces<MvecD64>(x, y, _ZGVeN8vv_##name)))                               \
    if constexpr (sizeof(x) % 32 == 0) return by_pieces<MvecD32>(x, y, _ZGVdN4vv_##name);                \
    else return lanewise<double>(x, y, [](double a, double b) { return ::name(a, b); });                 \
  }
#else
#define COIL_VEC_MATH(name)                                                                              \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> x) {                                      \
    return lanewise<T>(x, [](T v) { return coil_rt::name(v); });                                         \
  }
#define COIL_VEC_MATH2(name)                                                                             \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> x, Vec<T, N> y) {                         \
    return lanewise<T>(x, y, [](T a, T b) { return coil_rt::name(a, b); });                              \
  }
#endif
namespace mvec {
COIL_VEC_MATH(exp)
}  // namespace mvec
COIL_VEC_MATH(exp2) COIL_VEC_MATH(expm1) COIL_VEC_MATH(log) COIL_VEC_MATH(log1p)
COIL_VEC_MATH(log2) COIL_VEC_MATH(sin) COIL_VEC_MATH(cos) COIL_VEC_MATH(tan) COIL_VEC_MATH(tanh)
COIL_VEC_MATH(erf) COIL_VEC_MATH2(pow) COIL_VEC_MATH2(atan2) COIL_VEC_MATH2(hypot)
COIL_VEC_MATH(acos) COIL_VEC_MATH(asin) COIL_VEC_MATH(atan) COIL_VEC_MATH(acosh) COIL_VEC_MATH(asinh)
COIL_VEC_MATH(atanh) COIL_VEC_MATH(cosh) COIL_VEC_MATH(sinh) COIL_VEC_MATH(log10)
#undef COIL_VEC_MATH
#undef COIL_VEC_MATH2

template <typename T, int N> inline Vec<T, N> ldexp(Vec<T, N> a, Vec<T, N> b) {
  return lanewise<T>(a, b, [](T x, T k) { return ldexp(x, k); });
}

/// The series of coil/series.h lane by lane (each lane loops until its own converges).
template <typename T, int N> inline Vec<T, N> igamma(Vec<T, N> a, Vec<T, N> x) {
  return lanewise<T>(a, x, [](T p, T q) { return igamma(p, q); });
}
template <typename T, int N> inline Vec<T, N> igammac(Vec<T, N> a, Vec<T, N> x) {
  return lanewise<T>(a, x, [](T p, T q) { return igammac(p, q); });
}
template <typename T, int N> inline Vec<T, N> zeta(Vec<T, N> s, Vec<T, N> q) {
  return lanewise<T>(s, q, [](T p, T r) { return zeta(p, r); });
}

/// An orthogonal polynomial lane by lane (its loop runs each lane's own degree).
template <typename T, int N> inline Vec<T, N> polynomial(Polynomial family, Vec<T, N> x, Vec<T, N> n) {
  return lanewise<T>(x, n, [family](T a, T b) { return polynomial(family, a, b); });
}

template <int N> inline bool any_lane(Vec<bool, N> m) {
  bool r = false;
  for (int l = 0; l < N; ++l) r = r || m.v[l];
  return r;
}

/// exp with the lanes where it is +0 (below -104 for floats, -746 for doubles; -inf, as a
/// causal mask's fill, included) set here: glibc's vector exp takes a vector with any lane
/// below about -87.3 down a scalar path, measured 3 to 5 times slower per vector, which
/// half the rows of a masked softmax would take.
template <typename T, int N> inline Vec<T, N> exp(Vec<T, N> x) {
  Vec<bool, N> zero = x < Vec<T, N>(std::is_same_v<T, float> ? T(-104) : T(-746));
  if (!any_lane(zero)) return mvec::exp(x);
  return where(zero, Vec<T, N>(T(0)), mvec::exp(where(zero, Vec<T, N>(T(0)), x)));
}

// ---- integers: wrapping arithmetic and Python's division, lane by lane -----------------

#define COIL_INT_LANEWISE2(name)                                                              \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> a, Vec<T, N> b) {              \
    return lanewise<T>(a, b, [](T x, T y) { return name<T>(x, y); });                         \
  }
COIL_INT_LANEWISE2(add_w) COIL_INT_LANEWISE2(sub_w) COIL_INT_LANEWISE2(mul_w)
#undef COIL_INT_LANEWISE2
#define COIL_INT_ERR2(name)                                                                   \
  template <typename T, int N> inline Vec<T, N> name(Vec<T, N> a, Vec<T, N> b, Error &err) {  \
    return lanewise<T>(a, b, [&](T x, T y) { return name<T>(x, y, err); });                   \
  }
COIL_INT_ERR2(floor_div_i) COIL_INT_ERR2(trunc_div_i) COIL_INT_ERR2(remainder_i) COIL_INT_ERR2(fmod_i) COIL_INT_ERR2(pow_i)
#undef COIL_INT_ERR2
template <typename T, int N> inline Vec<T, N> neg_w(Vec<T, N> a) { return lanewise<T>(a, [](T x) { return neg_w<T>(x); }); }
template <typename T, int N> inline Vec<T, N> abs_w(Vec<T, N> a) { return lanewise<T>(a, [](T x) { return abs_w<T>(x); }); }
// In vector compares: GCC 12 at -O3 miscompiled the lane-by-lane form for uint8 (255, not 1).
template <typename T, int N> inline Vec<T, N> sign_i(Vec<T, N> a) {
  using W = Vec<T, N>;
  return where(a > W(T(0)), W(T(1)), where(a < W(T(0)), W(T(-1)), W(T(0))));
}

// ---- tiles of a transposed load ----------------------------------------------------------

/// dst[a*N + b] = src[a + b*stride] for a, b < N: the N x N tile of a load that walks a
/// kernel's last two dims the other way round (`x + y.t()`), read as N runs of N
/// contiguous elements and written transposed, so that the kernel then reads it row by row
/// in vectors. Floats go through registers, 8 x 8 at a time, where the ISA has AVX.
template <typename T, int N> inline void transpose_tile(const T *src, int64_t stride, T *dst) {
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, float> && N % 8 == 0) {
    for (int a = 0; a < N; a += 8)
      for (int b = 0; b < N; b += 8) {
        const float *s = src + a + b * stride;
        __m256 r[8], t[8];
        for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * stride);  // r[k][j] = tile(a + j, b + k)
        for (int k = 0; k < 8; k += 2) {
          t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
          t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
        }
        for (int k = 0; k < 8; k += 4) {  // r[k + j]: lanes j and j + 4 of rows k..k+3
          r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
          r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
          r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
          r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
        }
        for (int j = 0; j < 4; ++j) {
          _mm256_storeu_ps(dst + (a + j) * N + b, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
          _mm256_storeu_ps(dst + (a + j + 4) * N + b, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
        }
      }
    return;
  }
#endif
  for (int b = 0; b < N; ++b)
    for (int a = 0; a < N; ++a) dst[a * N + b] = src[a + b * stride];
}

// ---- bf16 / f16 -------------------------------------------------------------------------

template <int N> using U32s = Vec<uint32_t, N>;

/// The bits of f32_to_bf16 (in the high half of each lane).
template <int N> inline U32s<N> bf16_bits(Vec<float, N> x) {
  using U = typename U32s<N>::V;
  U b = (U)x.v;
  U nan = (U)((b & 0x7fffffffu) > 0x7f800000u);  // all bits or none
  U rounded = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  U quiet = (b | 0x400000u) & 0xffff0000u;
  return U32s<N>::of((quiet & nan) | (rounded & ~nan));
}
template <int N> inline Vec<float, N> round_bf16(Vec<float, N> x) {
  return Vec<float, N>::of((typename Vec<float, N>::V)bf16_bits(x).v);
}
template <int N> inline Vec<float, N> load_bf16(const uint16_t *p) {
  typedef uint16_t H __attribute__((vector_size(2 * N)));
  H h;
  std::memcpy(&h, p, sizeof h);
  typename U32s<N>::V b = __builtin_convertvector(h, typename U32s<N>::V) << 16;
  return Vec<float, N>::of((typename Vec<float, N>::V)b);
}
template <int N> inline void store_bf16(uint16_t *p, Vec<float, N> x) {
  typedef uint16_t H __attribute__((vector_size(2 * N)));
  H h = __builtin_convertvector(bf16_bits(x).v >> 16, H);
  std::memcpy(p, &h, sizeof h);
}
template <int N> inline Vec<float, N> round_f16(Vec<float, N> x) { return lanewise<float>(x, [](float v) { return round_f16(v); }); }
template <int N> inline Vec<float, N> load_f16(const uint16_t *p) {
  return Vec<float, N>::generate([&](int l) { return f16_to_f32(p[l]); });
}
template <int N> inline void store_f16(uint16_t *p, Vec<float, N> x) {
  for (int l = 0; l < N; ++l) p[l] = f32_to_f16(x[l]);
}

// ---- random numbers: Philox of N counters at once (coil/philox.h) ------------------------

/// The four words of Philox4x32-10 for each lane's (seed, counter), in 64-bit lanes whose
/// low halves hold them: each round's 32x32->64 products are one vector multiply.
template <int N> struct PhiloxLanes {
  using U = typename Vec<uint64_t, N>::V;
  U w[4];
};
template <int N> inline PhiloxLanes<N> philox(Vec<int64_t, N> seed, Vec<int64_t, N> counter) {
  using U = typename Vec<uint64_t, N>::V;
  const U low = U{} + 0xffffffffu;
  U s = (U)seed.v, c = (U)counter.v;
  U c0 = c & low, c1 = c >> 32, c2 = U{}, c3 = U{}, k0 = s & low, k1 = s >> 32;
  for (int round = 0; round < 10; ++round) {
    U p0 = c0 * (U{} + 0xD2511F53u), p1 = c2 * (U{} + 0xCD9E8D57u);
    U n0 = (p1 >> 32) ^ c1 ^ k0, n2 = (p0 >> 32) ^ c3 ^ k1;
    c1 = p1 & low;
    c3 = p0 & low;
    c0 = n0;
    c2 = n2;
    k0 = (k0 + 0x9E3779B9u) & low;
    k1 = (k1 + 0xBB67AE85u) & low;
  }
  return {{c0, c1, c2, c3}};
}
template <typename T, int N> inline Vec<T, N> philox_unit(typename Vec<uint64_t, N>::V hi, typename Vec<uint64_t, N>::V lo) {
  if constexpr (sizeof(T) == 8)
    return Vec<double, N>::of(__builtin_convertvector((hi << 21) | (lo >> 11), typename Vec<double, N>::V) * 0x1p-53);
  else
    return Vec<float, N>::of(__builtin_convertvector(hi >> 8, typename Vec<float, N>::V) * 0x1p-24f);
}
template <typename T, int N> inline Vec<T, N> philox_uniform(Vec<int64_t, N> seed, Vec<int64_t, N> counter) {
  PhiloxLanes<N> r = philox(seed, counter);
  return philox_unit<T, N>(r.w[0], r.w[1]);
}
template <typename T, int N> inline Vec<T, N> philox_normal(Vec<int64_t, N> seed, Vec<int64_t, N> counter) {
  PhiloxLanes<N> r = philox(seed, counter);
  Vec<T, N> u1 = Vec<T, N>(T(1)) - philox_unit<T, N>(r.w[0], r.w[1]);
  Vec<T, N> u2 = sizeof(T) == 8 ? philox_unit<T, N>(r.w[2], r.w[3]) : philox_unit<T, N>(r.w[1], r.w[0]);
  return sqrt(Vec<T, N>(T(-2)) * log(u1)) * cos(Vec<T, N>(sizeof(T) == 8 ? T(6.283185307179586) : T(6.2831855f)) * u2);
}
template <int N> inline Vec<int64_t, N> philox_bits(Vec<int64_t, N> seed, Vec<int64_t, N> counter) {
  PhiloxLanes<N> r = philox(seed, counter);
  return Vec<int64_t, N>::of((typename Vec<int64_t, N>::V)(((r.w[0] << 32) | r.w[1]) >> 1));
}
// A seed the same in every lane (a load of the call's state) meets a vector of counters.
template <typename T, int N> inline Vec<T, N> philox_uniform(int64_t seed, Vec<int64_t, N> counter) {
  return philox_uniform<T, N>(Vec<int64_t, N>(seed), counter);
}
template <typename T, int N> inline Vec<T, N> philox_normal(int64_t seed, Vec<int64_t, N> counter) {
  return philox_normal<T, N>(Vec<int64_t, N>(seed), counter);
}
template <int N> inline Vec<int64_t, N> philox_bits(int64_t seed, Vec<int64_t, N> counter) {
  return philox_bits<N>(Vec<int64_t, N>(seed), counter);
}

}  // namespace coil_rt
