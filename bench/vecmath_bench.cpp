// The vector math of generated kernels (coil/vec.h: libmvec one register at a time, or
// lane by lane) against a scalar loop calling libm, per function, on 64 Ki floats (in L2),
// median of 51 runs. Run by bench/vecmath.sh; the table goes into bench/README.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "coil/prelude.h"

namespace {

constexpr int kN = 1 << 16;
constexpr int kLanes = COIL_BENCH_LANES;
using V = coil_rt::Vec<float, kLanes>;

double median_ns_per_element(const std::function<void()> &f) {
  std::vector<double> t;
  for (int r = 0; r < 51; ++r) {
    auto s = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - s).count() / kN);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The scalar loop is kept scalar (an empty asm with a memory clobber stops the vectorizer) so
// that it is the baseline a kernel without vectors would run.
#define SCALAR_LOOP(expr)                                                              \
  [&] {                                                                                \
    for (int i = 0; i < kN; ++i) { asm volatile("" ::: "memory"); float x = in[i], y = in2[i]; \
      (void)y;                                                                         \
      out[i] = (expr);                                                                 \
    }                                                                                  \
  }
#define VECTOR_LOOP(expr)                                       \
  [&] {                                                         \
    for (int i = 0; i < kN; i += kLanes) {                      \
      V x = V::loadu(&in[i]), y = V::loadu(&in2[i]);            \
      (void)y;                                                  \
      (expr).storeu(&out[i]);                                   \
    }                                                           \
  }

}  // namespace

int main() {
  std::vector<float> in(kN), in2(kN), out(kN);
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f), p(0.1f, 3.0f);
  for (int i = 0; i < kN; ++i) in[i] = d(rng), in2[i] = p(rng);
  struct Row {
    const char *name;
    std::function<void()> scalar, vector;
  };
  std::vector<Row> rows = {
      {"exp", SCALAR_LOOP(::expf(x)), VECTOR_LOOP(coil_rt::exp(x))},
      {"log", SCALAR_LOOP(::logf(y)), VECTOR_LOOP(coil_rt::log(y))},
      {"tanh", SCALAR_LOOP(::tanhf(x)), VECTOR_LOOP(coil_rt::tanh(x))},
      {"erf", SCALAR_LOOP(::erff(x)), VECTOR_LOOP(coil_rt::erf(x))},
      {"sigmoid", SCALAR_LOOP(1.0f / (1.0f + ::expf(-x))), VECTOR_LOOP(coil_rt::sigmoid(x))},
      {"pow", SCALAR_LOOP(::powf(y, x)), VECTOR_LOOP(coil_rt::pow(y, x))},
      {"sin", SCALAR_LOOP(::sinf(x)), VECTOR_LOOP(coil_rt::sin(x))},
      {"log1p", SCALAR_LOOP(::log1pf(y)), VECTOR_LOOP(coil_rt::log1p(y))},
      {"expm1", SCALAR_LOOP(::expm1f(x)), VECTOR_LOOP(coil_rt::expm1(x))},
      {"sqrt", SCALAR_LOOP(std::sqrt(y)), VECTOR_LOOP(coil_rt::sqrt(y))},
      {"max_nan", SCALAR_LOOP(coil_rt::max_nan(x, y)), VECTOR_LOOP(coil_rt::max_nan(x, y))},
  };
  std::printf("| function | scalar libm ns/elem | coil vector ns/elem | speed-up |\n|---|---|---|---|\n");
  for (const Row &r : rows) {
    double s = median_ns_per_element(r.scalar), v = median_ns_per_element(r.vector);
    std::printf("| %s | %.2f | %.2f | %.1fx |\n", r.name, s, v, s / v);
  }
  return 0;
}
