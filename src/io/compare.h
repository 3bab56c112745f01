// Comparing outputs with references: the tolerances of the testing tiers (DESIGN.md)
// and torch.testing.assert_close's rule |actual - expected| <= atol + rtol * |expected|.
#pragma once

#include <string>

#include "coil/coil.h"
#include "io/host_tensor.h"

namespace coil {

/// coil::tolerance (include/coil/coil.h) on internal dtypes: assert_close's defaults by dtype
/// (f32 1.3e-6/1e-5, f16 1e-3/1e-5, bf16 1.6e-2/1e-5,
/// f64 1e-7/1e-7, integers and bools exact), both scaled by sqrt(n) for an output of a
/// reduction over n elements (`reduction_size`, 1 for none).
Tolerance default_tolerance(DType t, int64_t reduction_size = 1);

struct Comparison {
  bool pass = true;
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t mismatches = 0;
  std::string first_mismatch;  // `at [3, 1]: 0.5 vs 0.25`, empty when none
};

/// Compares element by element in double: NaN matches NaN, infinities match exactly.
/// Dtypes and sizes must agree (a mismatch fails with a message in first_mismatch).
Comparison compare(const HostTensor &actual, const HostTensor &expected, Tolerance tol);

}  // namespace coil
