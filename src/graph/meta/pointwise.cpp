// Elementwise ops: broadcasting, type promotion, and TensorIterator's output strides.
#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::common_device;

/// An elementwise op over the tensor (or number) arguments `tensors`; the Scalar
/// arguments `scalars` take part in type promotion only, and the first `skip_promotion`
/// tensors (where's condition) take part in broadcasting only.
MetaFn elementwise(Promote kind, std::vector<std::string> tensors,
                   std::vector<std::string> scalars = {}, size_t skip_promotion = 0) {
  return [=](const MetaArgs &a) {
    std::vector<Operand> ops;
    std::vector<PromotionOperand> promo;
    for (const auto &name : tensors) {
      ops.push_back(a.operand(name));
      if (ops.size() > skip_promotion) promo.push_back(ops.back().promotion());
    }
    for (const auto &name : scalars) promo.push_back(a.scalar(name));
    DType dtype = elementwise_result_dtype(promo, kind);
    Shape shape;
    std::vector<const TensorType *> layout;
    for (const Operand &op : ops) {
      shape = broadcast_shapes(shape, op.type.sizes);
      if (!op.wrapped_number) layout.push_back(&op.type);
    }
    checked_numel(shape);
    Shape strides = elementwise_output_strides(shape, layout);
    return std::vector<TensorType>{{dtype, shape, strides, common_device(ops)}};
  };
}

MetaFn unary(Promote kind) { return elementwise(kind, {"self"}); }
MetaFn binary(Promote kind) { return elementwise(kind, {"self", "other"}); }
MetaFn binary_scalar(Promote kind) { return elementwise(kind, {"self"}, {"other"}); }

/// add/sub with alpha: PyTorch refuses a float alpha for integral results and
/// subtraction of bools.
MetaFn add_sub(bool is_sub, bool scalar_other) {
  MetaFn base = scalar_other ? binary_scalar(Promote::Default) : binary(Promote::Default);
  return [=](const MetaArgs &a) {
    auto out = base(a);
    DType t = out[0].dtype;
    COIL_USER_CHECK(is_floating(t) || a.arg("alpha").is<int64_t>() || a.arg("alpha").is<bool>(),
                    "for integral inputs, alpha must not be a floating point number");
    COIL_USER_CHECK(!(is_sub && t == DType::Bool),
                    "subtraction of bool tensors is not supported; use logical_xor");
    return out;
  };
}

MetaFn gelu() {
  MetaFn base = unary(Promote::Default);
  return [=](const MetaArgs &a) {
    std::string approximate = *a.optional_str("approximate");
    COIL_USER_CHECK(approximate == "none" || approximate == "tanh",
                    "approximate must be 'none' or 'tanh', got '", approximate, "'");
    auto out = base(a);
    COIL_USER_CHECK(is_floating(out[0].dtype), "gelu needs a floating point input, got ",
                    short_name(out[0].dtype));
    return out;
  };
}

}  // namespace

void register_pointwise_ops(Registry &r) {
  // Unary math: integer inputs give the default float.
  for (const char *name : {"exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "sin", "cos", "erf"})
    r.add(str_cat(name, "(Tensor self) -> Tensor"), unary(Promote::IntToFloat));
  r.add("neg(Tensor self) -> Tensor", unary(Promote::Default));
  r.add("abs(Tensor self) -> Tensor", unary(Promote::Default));
  r.add("relu(Tensor self) -> Tensor", unary(Promote::Default));
  r.add("gelu(Tensor self, *, str approximate='none') -> Tensor", gelu());

  r.add("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add_sub(false, false));
  r.add("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", add_sub(false, true));
  r.add("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add_sub(true, false));
  r.add("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", add_sub(true, true));
  r.add("mul.Tensor(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("mul.Scalar(Tensor self, Scalar other) -> Tensor", binary_scalar(Promote::Default));
  r.add("div.Tensor(Tensor self, Tensor other) -> Tensor", binary(Promote::IntToFloat));
  r.add("div.Scalar(Tensor self, Scalar other) -> Tensor", binary_scalar(Promote::IntToFloat));
  r.add("maximum(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("minimum(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
        elementwise(Promote::Default, {"self"}, {"exponent"}));
  r.add("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
        elementwise(Promote::Default, {"self", "exponent"}));

  for (const char *name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    r.add(str_cat(name, ".Tensor(Tensor self, Tensor other) -> Tensor"), binary(Promote::AlwaysBool));
    r.add(str_cat(name, ".Scalar(Tensor self, Scalar other) -> Tensor"),
          binary_scalar(Promote::AlwaysBool));
  }
  MetaFn where = elementwise(Promote::Default, {"condition", "self", "other"}, {}, 1);
  r.add("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
        [where](const MetaArgs &a) {
          DType cond = a.operand("condition").type.dtype;
          COIL_USER_CHECK(cond == DType::Bool, "where expects a bool condition, got ", short_name(cond));
          return where(a);
        });
}

}  // namespace coil
