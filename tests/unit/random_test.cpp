// Random ops (rand, randn, randint, randperm, multinomial, bernoulli, native_dropout, the distributions of
// Tensor.uniform_, normal_, log_normal_, exponential_, cauchy_, geometric_, and rrelu's
// noise) through the public
// API: the generator is Philox4x32-10 (checked against the published test vector), each
// target draws the same numbers from the same state (bit for bit where no libm function is
// involved), the numbers have the distributions they should (bounds of five standard
// errors), and the state does what include/coil/coil.h says. Never compared with eager's
// numbers, which come from another generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <string>

#include "coil/coil.h"
#include "coil/philox.h"

namespace coil {
namespace {

const char *kGraph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[64, 128][128, 1]cpu", p: "f32[4][1]cpu"):
        rand: "f32[64, 128][128, 1]cpu" = torch.ops.aten.rand.default([64, 128], device = device(type='cpu'), pin_memory = False)
        randn: "f64[64, 128][128, 1]cpu" = torch.ops.aten.randn.default([64, 128], dtype = torch.float64, device = device(type='cpu'), pin_memory = False)
        native_dropout = torch.ops.aten.native_dropout.default(x, 0.3, True)
        getitem: "f32[64, 128][128, 1]cpu" = native_dropout[0]
        getitem_1: "b8[64, 128][128, 1]cpu" = native_dropout[1];  native_dropout = None
        bernoulli: "f32[64, 128][128, 1]cpu" = torch.ops.aten.bernoulli.p(x, 0.25)
        bernoulli_1: "f32[4][1]cpu" = torch.ops.aten.bernoulli.default(p)
        randint: "i64[64, 128][128, 1]cpu" = torch.ops.aten.randint.low(3, 8, [64, 128], device = device(type='cpu'), pin_memory = False)
        randperm: "i64[1000][1]cpu" = torch.ops.aten.randperm.default(1000, device = device(type='cpu'), pin_memory = False)
        rand_1: "bf16[64, 128][128, 1]cpu" = torch.ops.aten.rand.default([64, 128], dtype = torch.bfloat16, device = device(type='cpu'), pin_memory = False)
        mul: "bf16[64, 128][128, 1]cpu" = torch.ops.aten.mul.Tensor(rand_1, 2)
        randn_like: "f32[64, 128][128, 1]cpu" = torch.ops.aten.randn_like.default(x, pin_memory = False)
        return (rand, randn, getitem, getitem_1, bernoulli, bernoulli_1, randint, randperm, rand_1, mul, randn_like)
)";
enum Out { kRand, kRandn, kDropout, kMask, kBernoulli, kBernoulliOfP, kRandint, kRandperm, kRandBf16, kTwiceBf16, kRandnLike };

// Every output of one run, as doubles.
using Outputs = std::vector<std::vector<double>>;

double element(const std::byte *p, ScalarType t) {
  switch (t) {
    case ScalarType::Float64: return *reinterpret_cast<const double *>(p);
    case ScalarType::Float32: return *reinterpret_cast<const float *>(p);
    case ScalarType::BFloat16: {
      uint32_t bits = uint32_t(*reinterpret_cast<const uint16_t *>(p)) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case ScalarType::Int64: return double(*reinterpret_cast<const int64_t *>(p));
    case ScalarType::Bool: return double(*reinterpret_cast<const bool *>(p));
    default: ADD_FAILURE() << "no test conversion for " << scalar_type_name(t); return 0;
  }
}

int64_t numel(const std::vector<int64_t> &sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<>());
}

// The outputs of `g` given `in` and the random state (seed, offset).
Outputs run(const CompiledGraph &g, std::vector<TensorRef> in, int64_t seed, int64_t offset) {
  int64_t state[2] = {seed, offset};
  in.push_back({state, ScalarType::Int64, {2}});
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorRef> out;
  for (const TensorInfo &t : g.outputs()) storage.emplace_back(size_t(numel(t.sizes) * element_size(t.dtype)));
  for (size_t i = 0; i < storage.size(); ++i)
    out.push_back({storage[i].data(), g.outputs()[i].dtype, g.outputs()[i].sizes});
  g.run(in, out);
  Outputs values;
  for (size_t i = 0; i < storage.size(); ++i) {
    ScalarType t = g.outputs()[i].dtype;
    values.emplace_back();
    for (int64_t k = 0; k < numel(g.outputs()[i].sizes); ++k)
      values.back().push_back(element(storage[i].data() + k * element_size(t), t));
  }
  return values;
}

Outputs run(const CompiledGraph &g, int64_t seed, int64_t offset) {
  std::vector<float> x(64 * 128, 1.0f), p = {0, 1, 1, 0};
  return run(g, {{x.data(), ScalarType::Float32, {64, 128}}, {p.data(), ScalarType::Float32, {4}}}, seed, offset);
}

const CompiledGraph &compiled(Target target, const char *graph = kGraph) {
  static std::map<std::pair<Target, const char *>, CompiledGraph> graphs;
  auto it = graphs.find({target, graph});
  if (it == graphs.end()) it = graphs.emplace(std::pair{target, graph}, compile(graph, {target, {}, ""}, "random.py")).first;
  return it->second;
}

double mean(const std::vector<double> &v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double variance(const std::vector<double> &v) {
  double m = mean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}
double fraction(const std::vector<double> &v, const std::function<bool(double)> &f) {
  return double(std::count_if(v.begin(), v.end(), f)) / double(v.size());
}
// Five standard errors of a proportion q over n draws.
double five_sigma(double q, size_t n) { return 5 * std::sqrt(q * (1 - q) / double(n)); }

TEST(Random, PhiloxMatchesThePublishedTestVector) {
  // Random123's known answer for Philox4x32-10 with counter and key all zero.
  coil_rt::Philox4 r = coil_rt::philox(0, 0);
  EXPECT_EQ(r.w[0], 0x6627e8d5u);
  EXPECT_EQ(r.w[1], 0xe169c58du);
  EXPECT_EQ(r.w[2], 0xbc57ac4cu);
  EXPECT_EQ(r.w[3], 0x9b00dbd8u);
}

TEST(Random, TheStateIsTheLastInput) {
  const CompiledGraph &g = compiled(Target::Reference);
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_FALSE(g.inputs()[0].random_state);
  const TensorInfo &state = g.inputs().back();
  EXPECT_TRUE(state.random_state);
  EXPECT_EQ(state.name, "coil.random_state");
  EXPECT_EQ(state.dtype, ScalarType::Int64);
  EXPECT_EQ(state.sizes, (std::vector<int64_t>{2}));
}

TEST(Random, DistributionsAreTheirOwn) {
  Outputs o = run(compiled(Target::Cpu), 1234, 0);
  const std::vector<double> &u = o[kRand];
  size_t n = u.size();
  EXPECT_GE(*std::min_element(u.begin(), u.end()), 0.0);
  EXPECT_LT(*std::max_element(u.begin(), u.end()), 1.0);
  EXPECT_NEAR(mean(u), 0.5, 5 * std::sqrt(1.0 / 12 / double(n)));
  EXPECT_NEAR(variance(u), 1.0 / 12, 0.005);
  // Sixteen equal bins: a chi-square of 15 degrees of freedom beyond 50 has p < 1e-5.
  std::vector<double> bins(16, 0);
  for (double x : u) bins[size_t(x * 16)] += 1;
  double chi2 = 0, want = double(n) / 16;
  for (double b : bins) chi2 += (b - want) * (b - want) / want;
  EXPECT_LT(chi2, 50.0);

  for (Out k : {kRandn, kRandnLike}) {
    const std::vector<double> &z = o[k];
    EXPECT_NEAR(mean(z), 0.0, 5 / std::sqrt(double(z.size()))) << k;
    EXPECT_NEAR(variance(z), 1.0, 5 * std::sqrt(2.0 / double(z.size()))) << k;
    EXPECT_NEAR(fraction(z, [](double v) { return std::fabs(v) < 1; }), 0.6827, five_sigma(0.6827, z.size())) << k;
  }

  // dropout(p=0.3) of ones: 1 / 0.7 where kept (the mask), 0 elsewhere.
  const std::vector<double> &d = o[kDropout], &mask = o[kMask];
  EXPECT_NEAR(mean(mask), 0.7, five_sigma(0.7, mask.size()));
  for (size_t i = 0; i < d.size(); ++i) {
    ASSERT_EQ(d[i], mask[i] ? double(1.0f * float(1 / 0.7)) : 0.0) << i;
  }
  const std::vector<double> &b = o[kBernoulli];
  EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](double v) { return v == 0 || v == 1; }));
  EXPECT_NEAR(mean(b), 0.25, five_sigma(0.25, b.size()));
  EXPECT_EQ(o[kBernoulliOfP], (std::vector<double>{0, 1, 1, 0}));  // probabilities 0 and 1

  const std::vector<double> &r = o[kRandint];
  for (int v = 3; v < 8; ++v)
    EXPECT_NEAR(fraction(r, [v](double x) { return x == v; }), 0.2, five_sigma(0.2, r.size())) << v;
  EXPECT_TRUE(std::all_of(r.begin(), r.end(), [](double v) { return v >= 3 && v < 8; }));

  std::vector<double> perm = o[kRandperm];
  EXPECT_NE(perm[0] + perm[1] + perm[2], 0 + 1 + 2);  // not the identity
  std::sort(perm.begin(), perm.end());
  for (size_t i = 0; i < perm.size(); ++i) ASSERT_EQ(perm[i], double(i));

  // bf16 numbers stay below 1: multiples of 2^-8.
  for (size_t i = 0; i < o[kRandBf16].size(); ++i) {
    double v = o[kRandBf16][i];
    ASSERT_TRUE(v >= 0 && v < 1 && v * 256 == std::floor(v * 256)) << v;
    ASSERT_EQ(o[kTwiceBf16][i], 2 * v) << "the number a consumer sees is the number stored";
  }
  // Two ops draw independent numbers.
  double m1 = mean(o[kRand]), m2 = mean(o[kRandnLike]), cov = 0;
  for (size_t i = 0; i < n; ++i) cov += (o[kRand][i] - m1) * (o[kRandnLike][i] - m2);
  double corr = cov / double(n) / std::sqrt(variance(o[kRand]) * variance(o[kRandnLike]));
  EXPECT_LT(std::fabs(corr), 5 / std::sqrt(double(n)));
}

// The distributions: x is ones, neg is minus ones, std2 is twos.
const char *kDistributions = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[64, 128][128, 1]cpu", neg: "f32[64, 128][128, 1]cpu", std2: "f32[128][1]cpu"):
        uniform: "f32[64, 128][128, 1]cpu" = torch.ops.aten.uniform.default(x, -2.0, 3.0)
        normal: "f32[64, 128][128, 1]cpu" = torch.ops.aten.normal.Tensor_Tensor(x, std2)
        normal_1: "f64[64, 128][128, 1]cpu" = torch.ops.aten.normal.float_float(3.0, 0.5, [64, 128], dtype = torch.float64, device = device(type='cpu'), pin_memory = False)
        normal_functional: "f32[64, 128][128, 1]cpu" = torch.ops.aten.normal_functional.default(x, -1.0)
        log_normal: "f32[64, 128][128, 1]cpu" = torch.ops.aten.log_normal.default(x, 0.0, 0.5)
        exponential: "f32[64, 128][128, 1]cpu" = torch.ops.aten.exponential.default(x, 2.0)
        cauchy: "f32[64, 128][128, 1]cpu" = torch.ops.aten.cauchy.default(x, 1.0, 2.0)
        geometric: "f32[64, 128][128, 1]cpu" = torch.ops.aten.geometric.default(x, 0.3)
        randint_like: "f32[64, 128][128, 1]cpu" = torch.ops.aten.randint_like.low_dtype(x, -3, 2, pin_memory = False)
        rrelu_with_noise_functional = torch.ops.aten.rrelu_with_noise_functional.default(neg, x, 0.125, 0.3333333333333333, True)
        getitem: "f32[64, 128][128, 1]cpu" = rrelu_with_noise_functional[0]
        getitem_1: "f32[64, 128][128, 1]cpu" = rrelu_with_noise_functional[1];  rrelu_with_noise_functional = None
        return (uniform, normal, normal_1, normal_functional, log_normal, exponential, cauchy, geometric, randint_like, getitem, getitem_1)
)";
enum Dist { kUniform, kNormalTT, kNormalFF, kNormalFunctional, kLogNormal, kExponential, kCauchy, kGeometric,
            kRandintLike, kRrelu, kRreluNoise };

Outputs run_distributions(Target t, int64_t seed) {
  std::vector<float> x(64 * 128, 1.0f), neg(64 * 128, -1.0f), std2(128, 2.0f);
  return run(compiled(t, kDistributions),
             {{x.data(), ScalarType::Float32, {64, 128}}, {neg.data(), ScalarType::Float32, {64, 128}},
              {std2.data(), ScalarType::Float32, {128}}},
             seed, 0);
}

// The mean and variance of `v` are m and var within five standard errors (the variance's
// from the fourth moment `kurtosis` times var^2).
void expect_moments(const std::vector<double> &v, double m, double var, double kurtosis, const char *what) {
  double n = double(v.size());
  EXPECT_NEAR(mean(v), m, 5 * std::sqrt(var / n)) << what;
  EXPECT_NEAR(variance(v), var, 5 * var * std::sqrt((kurtosis - 1) / n)) << what;
}

TEST(Random, DistributionsOfTheInPlaceSamplers) {
  Outputs o = run_distributions(Target::Cpu, 99);
  const std::vector<double> &u = o[kUniform];
  EXPECT_TRUE(std::all_of(u.begin(), u.end(), [](double v) { return v >= -2 && v < 3; }));
  expect_moments(u, 0.5, 25.0 / 12, 1.8, "uniform(-2, 3)");
  expect_moments(o[kNormalTT], 1, 4, 3, "normal(mean=ones, std=twos)");
  expect_moments(o[kNormalFF], 3, 0.25, 3, "normal(3, 0.5)");
  expect_moments(o[kNormalFunctional], -1, 1, 3, "normal_(-1, 1)");
  std::vector<double> logs;
  for (double v : o[kLogNormal]) logs.push_back(std::log(v));
  expect_moments(logs, 0, 0.25, 3, "log of log_normal(0, 0.5)");
  const std::vector<double> &e = o[kExponential];
  EXPECT_TRUE(std::all_of(e.begin(), e.end(), [](double v) { return v >= 0 && std::isfinite(v); }));
  expect_moments(e, 0.5, 0.25, 9, "exponential(2)");
  EXPECT_NEAR(fraction(e, [](double v) { return v > 1; }), std::exp(-2.0), five_sigma(std::exp(-2.0), e.size()));
  // Cauchy(1, 2): half below the median, half within a scale of it.
  const std::vector<double> &c = o[kCauchy];
  EXPECT_NEAR(fraction(c, [](double v) { return v < 1; }), 0.5, five_sigma(0.5, c.size()));
  EXPECT_NEAR(fraction(c, [](double v) { return std::fabs(v - 1) < 2; }), 0.5, five_sigma(0.5, c.size()));
  // Geometric(0.3): trials to the first success, 1 with probability p.
  const std::vector<double> &g = o[kGeometric];
  EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](double v) { return v >= 1 && v == std::floor(v); }));
  EXPECT_NEAR(fraction(g, [](double v) { return v == 1; }), 0.3, five_sigma(0.3, g.size()));
  EXPECT_NEAR(mean(g), 1 / 0.3, 5 * std::sqrt(0.7 / 0.09 / double(g.size())));
  const std::vector<double> &r = o[kRandintLike];
  for (int v = -3; v < 2; ++v)
    EXPECT_NEAR(fraction(r, [v](double x) { return x == v; }), 0.2, five_sigma(0.2, r.size())) << v;
  // rrelu in training of minus ones: each scaled by its noise, uniform in [1/8, 1/3).
  const std::vector<double> &noise = o[kRreluNoise];
  for (size_t i = 0; i < noise.size(); ++i) {
    ASSERT_TRUE(noise[i] >= 0.125 && noise[i] < 1.0 / 3) << noise[i];
    ASSERT_EQ(o[kRrelu][i], -noise[i]) << i;
  }
  expect_moments(noise, (0.125 + 1.0 / 3) / 2, std::pow(1.0 / 3 - 0.125, 2) / 12, 1.8, "rrelu noise");
  // Each op draws its own numbers.
  EXPECT_NE(o[kUniform][0], o[kExponential][0]);
}

TEST(Random, EveryTargetDrawsTheSameNumbers) {
  Outputs ref = run(compiled(Target::Reference), 77, 5);
  for (Target t : {Target::Cpu, Target::CudaInterpreter}) {
    Outputs got = run(compiled(t), 77, 5);
    for (size_t k = 0; k < ref.size(); ++k) {
      bool libm = k == kRandn || k == kRandnLike;  // log, cos and sqrt may differ in the last bit
      for (size_t i = 0; i < ref[k].size(); ++i) {
        if (libm) {
          ASSERT_NEAR(got[k][i], ref[k][i], 1e-5 * (1 + std::fabs(ref[k][i]))) << target_name(t) << " out" << k << "[" << i << "]";
        } else {
          ASSERT_EQ(got[k][i], ref[k][i]) << target_name(t) << " out" << k << "[" << i << "]";
        }
      }
    }
  }
  // The distributions go through log, exp and tan: within float rounding on every target.
  Outputs dist = run_distributions(Target::Reference, 5);
  for (Target t : {Target::Cpu, Target::CudaInterpreter}) {
    Outputs got = run_distributions(t, 5);
    for (size_t k = 0; k < dist.size(); ++k)
      for (size_t i = 0; i < dist[k].size(); ++i)
        ASSERT_NEAR(got[k][i], dist[k][i], 1e-5 * (1 + std::fabs(dist[k][i])))
            << target_name(t) << " distribution " << k << "[" << i << "]";
  }
}

// multinomial: w's three rows drawn from `draws` times with replacement; `rows` rows of the
// same weights drawn from three times without; a 1-d f64 row of weights 200 times.
std::string multinomial_graph(int draws, int rows) {
  std::string d = std::to_string(draws), r = std::to_string(rows);
  return R"(class GraphModule(torch.nn.Module):
    def forward(self, w: "f32[3, 5][5, 1]cpu", many: "f32[)" + r + R"(, 6][6, 1]cpu", v: "f64[4][1]cpu"):
        multinomial: "i64[3, )" + d + "][" + d + R"(, 1]cpu" = torch.ops.aten.multinomial.default(w, )" + d + R"(, True)
        multinomial_1: "i64[)" + r + R"(, 3][3, 1]cpu" = torch.ops.aten.multinomial.default(many, 3)
        multinomial_2: "i64[200][1]cpu" = torch.ops.aten.multinomial.default(v, 200, True)
        return (multinomial, multinomial_1, multinomial_2)
)";
}
// Enough draws for the statistics; few enough for every target (Triton's interpreter).
const std::string kMultinomial = multinomial_graph(4000, 2000), kMultinomialSmall = multinomial_graph(300, 100);

Outputs run_multinomial(Target t, const std::string &graph, int rows, int64_t seed) {
  std::vector<float> w = {1, 2, 3, 4, 0, 0, 0, 1, 0, 0, 5, 5, 5, 5, 5}, many;
  for (int i = 0; i < rows; ++i) many.insert(many.end(), {1, 2, 3, 0, 4, 6});
  std::vector<double> v = {0, 0, 0, 2.5};
  return run(compiled(t, graph.c_str()),
             {{w.data(), ScalarType::Float32, {3, 5}, {}, {}}, {many.data(), ScalarType::Float32, {rows, 6}, {}, {}},
              {v.data(), ScalarType::Float64, {4}, {}, {}}},
             seed, 0);
}

TEST(Random, MultinomialDrawsByTheWeights) {
  Outputs o = run_multinomial(Target::Cpu, kMultinomial, 2000, 11);
  const std::vector<std::vector<double>> weights = {{1, 2, 3, 4, 0}, {0, 0, 1, 0, 0}, {5, 5, 5, 5, 5}};
  for (size_t row = 0; row < 3; ++row) {
    std::vector<double> drawn(o[0].begin() + long(row * 4000), o[0].begin() + long((row + 1) * 4000));
    double total = std::accumulate(weights[row].begin(), weights[row].end(), 0.0);
    for (size_t c = 0; c < 5; ++c) {
      double q = weights[row][c] / total;
      double got = fraction(drawn, [c](double x) { return x == double(c); });
      if (q == 0) {
        EXPECT_EQ(got, 0.0) << "row " << row << " drew category " << c << " of weight 0";
      } else {
        EXPECT_NEAR(got, q, five_sigma(q, drawn.size())) << "row " << row << " category " << c;
      }
    }
  }
  // Without replacement: three distinct categories of positive weight per row; the first is
  // drawn by the weights, and the heaviest is among the three more often than the lightest.
  const std::vector<double> &rows = o[1];
  std::vector<double> first, has_heaviest, has_lightest;
  for (size_t r = 0; r < 2000; ++r) {
    std::set<double> picked(rows.begin() + long(3 * r), rows.begin() + long(3 * r + 3));
    ASSERT_EQ(picked.size(), 3u) << "row " << r << " repeats a category";
    ASSERT_EQ(picked.count(3), 0u) << "row " << r << " drew category 3 of weight 0";
    for (double c : picked) ASSERT_TRUE(c >= 0 && c < 6) << c;
    first.push_back(rows[3 * r]);
    has_heaviest.push_back(double(picked.count(5)));
    has_lightest.push_back(double(picked.count(0)));
  }
  const double many_weights[6] = {1, 2, 3, 0, 4, 6};
  for (int c = 0; c < 6; ++c) {
    double q = many_weights[c] / 16;
    EXPECT_NEAR(fraction(first, [c](double x) { return x == c; }), q, std::max(five_sigma(q, 2000), 1e-12)) << c;
  }
  EXPECT_GT(mean(has_heaviest), mean(has_lightest) + 0.2);
  // 1-d weights: only the one category of positive weight.
  EXPECT_TRUE(std::all_of(o[2].begin(), o[2].end(), [](double x) { return x == 3; }));
}

TEST(Random, MultinomialIsTheSameOnEveryTarget) {
  Outputs ref = run_multinomial(Target::Reference, kMultinomialSmall, 100, 3);
  for (Target t : {Target::Cpu, Target::CudaInterpreter}) {
    Outputs got = run_multinomial(t, kMultinomialSmall, 100, 3);
    // The cumulative sums of small integer weights are exact in any order: the same draws.
    EXPECT_EQ(got[0], ref[0]) << target_name(t);
    EXPECT_EQ(got[2], ref[2]) << target_name(t);
    // The keys without replacement go through log1p, whose last bit may differ between
    // libms: at most a few rows of 100 may order two near-equal keys apart.
    size_t differ = 0;
    for (size_t i = 0; i < ref[1].size(); i += 3)
      differ += !std::equal(ref[1].begin() + long(i), ref[1].begin() + long(i + 3), got[1].begin() + long(i));
    EXPECT_LE(differ, 2u) << target_name(t);
  }
}

TEST(Random, TheStateChoosesTheNumbers) {
  const CompiledGraph &g = compiled(Target::Cpu);
  Outputs a = run(g, 42, 0), again = run(g, 42, 0), other = run(g, 43, 0), shifted = run(g, 42, 1);
  EXPECT_EQ(a, again);
  EXPECT_LT(fraction(a[kRand], [&, i = size_t(0)](double v) mutable { return v == other[kRand][i++]; }), 0.01);
  // The offset counts draws: one more shifts the first op's numbers by one element.
  for (size_t i = 0; i + 1 < a[kRand].size(); ++i) ASSERT_EQ(shifted[kRand][i], a[kRand][i + 1]) << i;
}

}  // namespace
}  // namespace coil
