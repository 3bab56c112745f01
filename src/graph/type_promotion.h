// PyTorch's type promotion: result_type over tensors, 0-dim tensors and Python numbers,
// and the result and compute dtypes of elementwise ops by promotion kind.
#pragma once

#include <span>

#include "graph/dtype.h"

namespace coil {

struct PromotionOperand {
  DType dtype;
  int64_t rank = 0;
  bool wrapped_number = false;  // a Python int/float/bool: I64/F32(default)/Bool
};

/// torch.result_type: dimensioned tensors outrank 0-dim tensors, which outrank Python
/// numbers; a lower tier only matters when it is of a higher category
/// (bool < integral < floating).
DType result_type(std::span<const PromotionOperand> operands);

/// How an elementwise op turns the promoted type into its result type.
enum class Promote : uint8_t {
  Default,     // the promoted type
  IntToFloat,  // integral and bool results become the default float (sin, exp, true div)
  AlwaysBool,  // comparisons
  BoolToLong,  // bool results become i64
  NoOpMath,    // the promoted type, computed in it (no f32 widening)
};

/// The result dtype of an elementwise op.
DType elementwise_result_dtype(std::span<const PromotionOperand> operands, Promote kind);

/// The dtype eager computes in: f16/bf16 widen to f32 ("opmath").
DType opmath_dtype(DType t);

}  // namespace coil
