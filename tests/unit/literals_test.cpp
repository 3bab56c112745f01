// Constants as both dialects print them: every value comes back bit for bit (-0.0, nan,
// +-inf, subnormals, f32 and f64 extremes), and a Triton literal has the type of its dtype
// (Triton makes any constant equal to 0 a +0.0 and types a Python float outside f32's
// normal range f64). The generated kernels run in tests/fixtures/special_scalars_logical_mixed.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <regex>

#include "codegen/cpp/cpp_ops.h"
#include "codegen/triton/triton_ops.h"

namespace coil::codegen {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

// Values of an f32 constant (each exactly a float) and of an f64 one.
std::vector<double> f32_values() {
  return {0.0, -0.0, kNan, kInf, -kInf, 1.0, -2.5, double(0.1f), double(FLT_MIN), double(FLT_MAX), -double(FLT_MAX),
          double(std::nextafter(0.0f, 1.0f)), -double(std::nextafter(FLT_MIN, 0.0f)), double(1.0f / 3.0f)};
}
std::vector<double> f64_values() {
  return {0.0, -0.0, kNan, kInf, -kInf, 0.1, 1.0 / 3.0, DBL_MIN, DBL_MAX, -DBL_MAX, std::nextafter(0.0, 1.0),
          -std::nextafter(DBL_MIN, 0.0), 1e300, double(FLT_MAX) * 2};
}

bool same_bits(double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }

// The value of a C++ literal as the compiler reads it: decimal text with an f suffix for
// floats, or a numeric_limits expression.
double cpp_value(std::string s, bool single) {
  double sign = 1;
  if (!s.empty() && s[0] == '-' && s.find("numeric_limits") != std::string::npos) sign = -1, s = s.substr(1);
  if (s.find("quiet_NaN") != std::string::npos) return kNan;
  if (s.find("infinity") != std::string::npos) return sign * kInf;
  if (single) {
    EXPECT_EQ(s.back(), 'f') << s;
    return std::strtof(s.c_str(), nullptr);
  }
  return std::strtod(s.c_str(), nullptr);
}

TEST(Literals, CppConstantsRoundTripExactly) {
  for (double v : f32_values()) {
    std::string s = literal(v, DType::F32);
    EXPECT_TRUE(same_bits(float(cpp_value(s, true)), float(v))) << v << " printed " << s;
  }
  for (double v : f64_values()) {
    std::string s = literal(v, DType::F64);
    EXPECT_TRUE(same_bits(cpp_value(s, false), v)) << v << " printed " << s;
  }
}

// The value of a Triton literal: a Python float, tl.full([], FLOAT, type), or the bitcast
// of an integer for -0.0.
double triton_value(const std::string &s, DType t, std::string &type) {
  static const std::regex full(R"(tl\.full\(\[\], (.*), (tl\.float(32|64))\))");
  static const std::regex bits(R"(tl\.full\(\[\], (-?[0-9]+), tl\.int(32|64)\)\.to\((tl\.float(32|64)), bitcast=True\))");
  std::smatch m;
  std::string number = s;
  type = "python float";
  if (std::regex_match(s, m, bits)) {
    type = m[3].str();
    long long i = std::strtoll(m[1].str().c_str(), nullptr, 10);
    if (type == "tl.float32") {
      int32_t i32 = int32_t(i);
      float f;
      std::memcpy(&f, &i32, sizeof f);
      return f;
    }
    double d;
    std::memcpy(&d, &i, sizeof d);
    return d;
  }
  if (std::regex_match(s, m, full)) number = m[1].str(), type = m[2].str();
  if (number == "float('nan')") return kNan;
  if (number == "float('inf')") return kInf;
  if (number == "float('-inf')") return -kInf;
  (void)t;
  return std::strtod(number.c_str(), nullptr);
}

// Where Triton types a bare Python float f32: zero, inf, nan and the normal f32 range.
bool triton_types_as_f32(double v) {
  double a = std::fabs(v);
  return a == 0 || std::isinf(v) || std::isnan(v) || (a >= FLT_MIN && a <= FLT_MAX);
}

TEST(Literals, TritonConstantsRoundTripWithTheirType) {
  std::string type;
  for (double v : f32_values()) {
    std::string s = triton_literal(v, DType::F32);
    EXPECT_TRUE(same_bits(float(triton_value(s, DType::F32, type)), float(v))) << v << " printed " << s;
    // A bare Python float must be one Triton types f32 itself, and never a zero of sign -.
    if (type == "python float") EXPECT_TRUE(triton_types_as_f32(v) && !(v == 0 && std::signbit(v))) << s;
    else EXPECT_EQ(type, "tl.float32") << s;
  }
  for (double v : f64_values()) {
    std::string s = triton_literal(v, DType::F64);
    EXPECT_TRUE(same_bits(triton_value(s, DType::F64, type), v)) << v << " printed " << s;
    EXPECT_EQ(type, "tl.float64") << s;
  }
  EXPECT_EQ(triton_literal(-0.0, DType::F32), "tl.full([], -2147483648, tl.int32).to(tl.float32, bitcast=True)");
  EXPECT_EQ(triton_literal(0.0, DType::F32), "0.0");
  EXPECT_EQ(triton_literal(double(FLT_MIN) / 2, DType::F32), "tl.full([], 5.8774717541114375e-39, tl.float32)");
}

}  // namespace
}  // namespace coil::codegen
