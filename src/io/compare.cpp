#include "io/compare.h"

#include <algorithm>
#include <cmath>

#include "graph/tensor_type.h"
#include "support/error.h"

namespace coil {

Tolerance default_tolerance(DType t, int64_t reduction_size) {
  Tolerance tol;
  switch (t) {
    case DType::F32: tol = {1.3e-6, 1e-5}; break;
    case DType::F16: tol = {1e-3, 1e-5}; break;
    case DType::BF16: tol = {1.6e-2, 1e-5}; break;
    case DType::F64: tol = {1e-7, 1e-7}; break;
    case DType::Bool:
    case DType::U8:
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: return {0, 0};
  }
  double scale = std::sqrt(double(std::max<int64_t>(reduction_size, 1)));
  return {tol.rtol * scale, tol.atol * scale};
}

namespace {

std::string index_str(int64_t flat, const Shape &sizes) {
  Shape index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return shape_str(index);
}

/// The larger error, NaN when either is: a NaN against a number is the worst error.
double worse(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }

}  // namespace

Comparison compare(const HostTensor &actual, const HostTensor &expected, Tolerance tol) {
  Comparison c;
  if (actual.dtype != expected.dtype || actual.sizes != expected.sizes) {
    c.pass = false;
    c.first_mismatch = "got " + actual.describe() + ", expected " + expected.describe();
    return c;
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.element_as_double(i), e = expected.element_as_double(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    double err = a == e ? 0 : std::fabs(a - e);  // equal infinities differ by 0, not by inf - inf
    bool ok = std::isinf(e) || std::isinf(a) ? a == e : err <= tol.atol + tol.rtol * std::fabs(e);
    if (std::isnan(a) || std::isnan(e)) ok = false;
    // A NaN or an infinity against a number is an error of NaN or inf, which the FAIL line
    // must show rather than the largest finite error.
    c.max_abs_error = worse(c.max_abs_error, err);
    if (e != 0) c.max_rel_error = worse(c.max_rel_error, err / std::fabs(e));
    if (ok) continue;
    if (c.mismatches++ == 0) c.first_mismatch = str_cat("at ", index_str(i, actual.sizes), ": ", a, " vs ", e);
    c.pass = false;
  }
  return c;
}

}  // namespace coil
