#include "graph/type_promotion.h"

#include <optional>

namespace coil {
namespace {

enum class Category { Bool, Integral, Floating };

Category category(DType t) {
  if (t == DType::Bool) return Category::Bool;
  return is_floating(t) ? Category::Floating : Category::Integral;
}

using Tier = std::optional<DType>;

Tier promote(Tier acc, DType t) { return acc ? promote_types(*acc, t) : t; }

// A lower tier changes the result only when it is of a higher category:
//   f16 tensor + f64 0-dim -> f16;  i32 tensor + 0-dim f64 -> f64 promoted with i32
Tier combine(Tier higher, Tier lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*higher) == Category::Floating) return higher;
  if (*higher == DType::Bool || category(*lower) == Category::Floating)
    return promote_types(*higher, *lower);
  return higher;
}

// Python numbers take the type of their kind, floats the default float dtype.
DType wrapped_type(DType t) { return is_floating(t) ? kDefaultFloat : t; }

}  // namespace

DType result_type(std::span<const PromotionOperand> operands) {
  Tier dims, zero_dims, wrapped;
  for (const auto &op : operands) {
    if (op.wrapped_number) {
      wrapped = promote(wrapped, wrapped_type(op.dtype));
    } else if (op.rank == 0) {
      zero_dims = promote(zero_dims, op.dtype);
    } else {
      dims = promote(dims, op.dtype);
    }
  }
  Tier r = combine(dims, combine(zero_dims, wrapped));
  return r ? *r : kDefaultFloat;
}

DType elementwise_result_dtype(std::span<const PromotionOperand> operands, Promote kind) {
  DType t = result_type(operands);
  switch (kind) {
    case Promote::Default:
    case Promote::NoOpMath: return t;
    case Promote::IntToFloat: return is_floating(t) ? t : kDefaultFloat;
    case Promote::AlwaysBool: return DType::Bool;
    case Promote::BoolToLong: return t == DType::Bool ? DType::I64 : t;
  }
  return t;
}

DType opmath_dtype(DType t) {
  return t == DType::F16 || t == DType::BF16 ? DType::F32 : t;
}

}  // namespace coil
