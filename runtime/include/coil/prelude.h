// The prelude of every generated C++ kernel file: scalar helpers with PyTorch's
// semantics (integer division and remainder signs, wrapping integer arithmetic, NaN-
// propagating max/min, bf16/f16 storage), the thread count and the error flag. The
// reference for every function here is src/ir/scalar_math.cpp: the generated code must
// compute what the reference interpreter computes.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include <omp.h>

#include "coil/combines.h"  // NOLINT: max_nan, min_nan, log_add_exp, in namespace coil_rt
#include "coil/philox.h"  // NOLINT: random numbers (rand, randn, dropout), in namespace coil_rt
#include "coil/polynomials.h"  // NOLINT: orthogonal polynomials, in namespace coil_rt
#include "coil/series.h"  // NOLINT: igamma, igammac, zeta, in namespace coil_rt
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

// Vector variants of libm's functions from glibc's libmvec (linked with -lmvec): with
// these declarations a loop marked `omp simd` calls _ZGVeN16v_expf and its kin, 16 floats
// at a time on AVX-512, instead of expf once per element. glibc declares them only under
// -ffast-math, whose other effects (no NaN, no inf) would break PyTorch's semantics.
#if defined(__GLIBC__) && defined(__x86_64__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
#define COIL_VECTOR_MATH(name) \
  __attribute__((simd("notinbranch"))) float name##f(float) noexcept; \
  __attribute__((simd("notinbranch"))) double name(double) noexcept;
#define COIL_VECTOR_MATH2(name) \
  __attribute__((simd("notinbranch"))) float name##f(float, float) noexcept; \
  __attribute__((simd("notinbranch"))) double name(double, double) noexcept;
extern "C" {
COIL_VECTOR_MATH(exp) COIL_VECTOR_MATH(exp2) COIL_VECTOR_MATH(expm1) COIL_VECTOR_MATH(log)
COIL_VECTOR_MATH(log1p) COIL_VECTOR_MATH(log2) COIL_VECTOR_MATH(sin) COIL_VECTOR_MATH(cos)
COIL_VECTOR_MATH(tan) COIL_VECTOR_MATH(tanh) COIL_VECTOR_MATH(erf)
COIL_VECTOR_MATH(acos) COIL_VECTOR_MATH(asin) COIL_VECTOR_MATH(atan) COIL_VECTOR_MATH(acosh)
COIL_VECTOR_MATH(asinh) COIL_VECTOR_MATH(atanh) COIL_VECTOR_MATH(cosh) COIL_VECTOR_MATH(sinh)
COIL_VECTOR_MATH(log10)
COIL_VECTOR_MATH2(pow) COIL_VECTOR_MATH2(atan2) COIL_VECTOR_MATH2(hypot)
}
#undef COIL_VECTOR_MATH
#undef COIL_VECTOR_MATH2
#endif

namespace coil_rt {

// Kernels call libm through these: a call of std::exp goes through a compiler builtin
// that ignores the vector variants declared above; a call of ::expf does not.
#define COIL_MATH(name) \
  inline float name(float x) { return ::name##f(x); } \
  inline double name(double x) { return ::name(x); }
COIL_MATH(exp) COIL_MATH(exp2) COIL_MATH(expm1) COIL_MATH(log) COIL_MATH(log1p) COIL_MATH(log2)
COIL_MATH(sin) COIL_MATH(cos) COIL_MATH(tan) COIL_MATH(tanh) COIL_MATH(erf)
COIL_MATH(acos) COIL_MATH(asin) COIL_MATH(atan) COIL_MATH(acosh) COIL_MATH(asinh) COIL_MATH(atanh)
COIL_MATH(cosh) COIL_MATH(sinh) COIL_MATH(log10)
#undef COIL_MATH
inline float pow(float a, float b) { return ::powf(a, b); }
inline double pow(double a, double b) { return ::pow(a, b); }
inline float atan2(float a, float b) { return ::atan2f(a, b); }
inline double atan2(double a, double b) { return ::atan2(a, b); }
inline float hypot(float a, float b) { return ::hypotf(a, b); }
inline double hypot(double a, double b) { return ::hypot(a, b); }
// a 2^b for a whole number b held as a float (clamped far past every exponent's range).
template <typename T> inline T ldexp(T a, T b) { return std::ldexp(a, int(b < -2200 ? -2200 : b > 2200 ? 2200 : b)); }

// ---- errors raised inside kernels -------------------------------------------------------
// Each call of the graph has its own error slot, passed to every kernel: a status of
// coil/artifact.h (COIL_ERROR_DIVISION_BY_ZERO, COIL_ERROR_INDEX_OUT_OF_RANGE).

using Error = std::atomic<int>;
inline void raise(Error &err, int status) { err.store(status, std::memory_order_relaxed); }

/// An index read from data, checked against the extent it addresses.
inline int64_t checked_index(int64_t i, int64_t extent, Error &err) {
  if (i >= 0 && i < extent) return i;
  raise(err, 4);
  return 0;
}

// ---- threads ---------------------------------------------------------------------------

/// The most threads a kernel uses (partial results of split reductions live in arrays
/// of this size on the stack).
inline constexpr int kMaxThreads = 256;

/// The thread count an environment variable asks for: its number when it is a whole
/// number from 1 up (at most kMaxThreads), 0 when it is unset, empty or 0, and -1 when it
/// is malformed. OMP_NUM_THREADS may list a count per nesting level ("4,2"): the first
/// is the one for kernels, which do not nest.
inline int threads_of_variable(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v) return 0;
  const char *c = *v == '+' ? v + 1 : v;
  if (*c < '0' || *c > '9') return -1;
  int n = 0;
  for (; *c >= '0' && *c <= '9'; ++c) {
    n = n * 10 + (*c - '0');
    if (n > kMaxThreads) n = kMaxThreads;
  }
  bool nested_list = *c == ',' && std::strcmp(name, "OMP_NUM_THREADS") == 0;
  return *c == '\0' || nested_list ? n : -1;
}

/// COIL_NUM_THREADS, else OMP_NUM_THREADS, else the machine's processors; at most
/// kMaxThreads. A malformed variable is not used, and said on stderr once: a library has
/// no other voice at load time. (coil's own commands refuse it before any kernel runs:
/// it is the option num_threads.)
inline int threads_from_environment() {
  static const int n = [] {
    for (const char *name : {"COIL_NUM_THREADS", "OMP_NUM_THREADS"}) {
      int t = threads_of_variable(name);
      if (t > 0) return t;
      if (t < 0) std::fprintf(stderr, "coil: %s='%s' is not a whole number of threads; not used\n", name, std::getenv(name));
    }
    int procs = omp_get_num_procs();
    return procs < 1 ? 1 : procs < kMaxThreads ? procs : kMaxThreads;
  }();
  return n;
}

/// The threads set by coil_set_num_threads, for this library only; 0: none set.
static std::atomic<int> threads_set{0};

/// The most threads a kernel of this library runs on: coil_set_num_threads's, else the
/// environment's.
inline int num_threads() {
  int n = threads_set.load(std::memory_order_relaxed);
  return n > 0 ? n : threads_from_environment();
}

/// Threads for a loop of `work` element-operations: none for tiny loops, and at least
/// kMinWorkPerThread per thread.
inline constexpr int64_t kMinWorkPerThread = 16384;
inline int threads_for(int64_t work) {
  int64_t t = work / kMinWorkPerThread;
  int n = num_threads();
  return t < 1 ? 1 : t > n ? n : int(t);
}

// ---- first touch of the caller's output pages -----------------------------------------

/// Faults in the pages of a large output ahead of one thread's writes: a batch of 256 KiB
/// per system call (madvise MADV_POPULATE_WRITE, Linux 5.14) instead of one page fault per
/// 4 KiB page. Outputs the caller allocated afresh (as PyTorch allocates every result) are
/// mapped but not yet backed, and on a streaming kernel those faults cost as much as the
/// writes. Pages already backed (an output kept from call to call) are seen at the first
/// reach, with mincore, and nothing more is done. It changes no byte and no setting of the
/// memory: the pages are what the writes would have faulted in. A thread calls reach()
/// with the span it is about to write; its writes should move forwards through memory.
class Prefault {
 public:
  Prefault(const void *base, int64_t bytes) : end_(uintptr_t(base) + uintptr_t(bytes)) {}

  void reach(const void *lo, const void *hi) {
    if (uintptr_t(hi) < frontier_ || off_) return;
#if defined(__linux__)
    const uintptr_t page = 4096, batch = uintptr_t(256) << 10, last = (end_ + page - 1) & ~(page - 1);
    uintptr_t from = uintptr_t(lo) & ~(page - 1);
    if (frontier_ == 0) {  // the first reach: is the memory backed already?
      unsigned char resident = 0;
      if (mincore(reinterpret_cast<void *>(from), page, &resident) != 0 || (resident & 1)) {
        off_ = true;
        return;
      }
    }
    if (frontier_ > from) from = frontier_;  // continue the batch before
    uintptr_t want = uintptr_t(lo) + batch > uintptr_t(hi) ? uintptr_t(lo) + batch : uintptr_t(hi);
    uintptr_t to = (want + page - 1) & ~(page - 1);
    if (to > last) to = last;
    if (to <= from) return;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (madvise(reinterpret_cast<void *>(from), to - from, MADV_POPULATE_WRITE) != 0) off_ = true;  // an older kernel
    frontier_ = to;
#else
    (void)lo;
    off_ = true;
#endif
  }

 private:
  uintptr_t end_, frontier_ = 0;
  bool off_ = false;
};

// ---- bf16 / f16 storage: values live as float, rounded at casts and stores -----------

inline float bits_to_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }
inline uint16_t f32_to_bf16(float f) {
  uint32_t b = f32_to_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40);  // NaN stays NaN
  b += 0x7fffu + ((b >> 16) & 1u);                                          // nearest, ties to even
  return uint16_t(b >> 16);
}
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_to_f32(sign);
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}
inline uint16_t f32_to_f16(float f) {
  uint32_t b = f32_to_bits(f), sign = (b >> 16) & 0x8000u;
  uint32_t abs = b & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {                                  // subnormal or zero in f16
    float v = bits_to_f32(abs) * 16777216.0f;                // scale by 2^24: exact
    return uint16_t(sign | uint32_t(std::nearbyint(v)));
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}
inline float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

// ---- integers: wrapping arithmetic and Python's division ------------------------------

template <typename T>
using U = std::make_unsigned_t<T>;

template <typename T> inline T add_w(T a, T b) { return T(U<T>(a) + U<T>(b)); }
template <typename T> inline T sub_w(T a, T b) { return T(U<T>(a) - U<T>(b)); }
template <typename T> inline T mul_w(T a, T b) { return T(U<T>(a) * U<T>(b)); }
template <typename T> inline T neg_w(T a) { return T(U<T>(0) - U<T>(a)); }
template <typename T> inline T abs_w(T a) { return a < 0 ? neg_w(a) : a; }

template <typename T> inline T floor_div_i(T a, T b, Error &err) {
  if (b == 0) { raise(err, 3); return 0; }
  if (std::is_signed_v<T> && b == T(-1)) return neg_w(a);
  T q = T(a / b);
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
template <typename T> inline T trunc_div_i(T a, T b, Error &err) {
  if (b == 0) { raise(err, 3); return 0; }
  if (std::is_signed_v<T> && b == T(-1)) return neg_w(a);
  return T(a / b);
}
template <typename T> inline T remainder_i(T a, T b, Error &err) {
  if (b == 0) { raise(err, 3); return 0; }
  if (std::is_signed_v<T> && b == T(-1)) return 0;
  T r = T(a % b);
  if (r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
  return r;
}
template <typename T> inline T fmod_i(T a, T b, Error &err) {
  if (b == 0) { raise(err, 3); return 0; }
  if (std::is_signed_v<T> && b == T(-1)) return 0;
  return T(a % b);
}
template <typename T> inline T pow_i(T base, T exp, Error &) {
  if (exp < 0) {  // 1 / base^-exp in integer arithmetic, as PyTorch's powi
    if (base == 1) return 1;
    if (base == T(-1)) return (exp % 2 == 0) ? 1 : T(-1);
    return 0;
  }
  T r = 1;
  while (exp) {
    if (exp & 1) r = mul_w(r, base);
    base = mul_w(base, base);
    exp = T(exp >> 1);
  }
  return r;
}
template <typename T> inline T sign_i(T a) { return a > 0 ? T(1) : a < 0 ? T(-1) : T(0); }

/// Float to integer as PyTorch's CPU kernels convert on x86: truncation, where a value
/// out of the range of the conversion (NaN and infinities included) gives that range's
/// lowest integer, as cvttss2si/cvttsd2si do. int64 converts directly; uint8 through
/// int64 (c10's static_cast_with_inter_type); int32, int16 and int8 through int32, then
/// wrap. The reference interpreter converts the same way (scalar_math.cpp).
template <typename I> inline I trunc_or_lowest(double v) {
  constexpr double lo = -double(std::numeric_limits<I>::max()) - 1, hi = double(std::numeric_limits<I>::max()) + 1;
  return v > lo - 1 && v < hi ? I(v) : std::numeric_limits<I>::min();
}
template <typename T> inline T to_int(double v) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>) return T(trunc_or_lowest<int64_t>(v));
  else return T(trunc_or_lowest<int32_t>(v));
}

/// Python's floor division and modulo of index arithmetic (divisor > 0), for indices
/// that may be negative (under a mask).
inline int64_t floordiv_idx(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }
inline int64_t mod_idx(int64_t a, int64_t d) {
  int64_t m = a % d;
  return m < 0 ? m + d : m;
}

// ---- floats ---------------------------------------------------------------------------

template <typename T> inline T floor_div_f(T a, T b) {
  if (b == 0) return a / b;
  T m = std::fmod(a, b);
  T div = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) div -= 1;
  if (div == 0) return std::copysign(T(0), a / b);
  T f = std::floor(div);
  if (div - f > T(0.5)) f += 1;
  return f;
}
template <typename T> inline T remainder_f(T a, T b) {
  T m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
// fmax/fmin: a NaN operand gives the other; equal operands (0 and -0) give the first.
template <typename T> inline T fmax_f(T a, T b) { return a != a ? b : b != b ? a : (a < b ? b : a); }
template <typename T> inline T fmin_f(T a, T b) { return a != a ? b : b != b ? a : (b < a ? b : a); }
// (0 < v) - (v < 0), as PyTorch: NaN and -0 give 0.
template <typename T> inline T sign_f(T v) { return T(v > 0) - T(v < 0); }
template <typename T> inline T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }

}  // namespace coil_rt

// The threads of this library's kernels as the caller sets them (coil/artifact.h): coil's
// commands pass the option num_threads this way. Defined here, next to the count they
// set, in the one translation unit of a kernel library; coil itself includes the prelude
// for its plain extern loops (src/runtime/cuda_extern_host.cpp), without OpenMP, and so
// without these.
#if defined(_OPENMP)
extern "C" int32_t coil_set_num_threads(int32_t n) {
  int threads = n < 1 ? 0 : n < coil_rt::kMaxThreads ? n : coil_rt::kMaxThreads;
  coil_rt::threads_set.store(threads, std::memory_order_relaxed);
  return coil_rt::num_threads();
}
extern "C" int32_t coil_num_threads(void) { return coil_rt::num_threads(); }
#endif

#include "coil/vec.h"  // NOLINT: the vector forms of the helpers above
