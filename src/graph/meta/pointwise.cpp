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
    SymShape shape;
    std::vector<const TensorType *> layout;
    for (const Operand &op : ops) {
      shape = broadcast_shapes(shape, op.type.sizes);
      if (!op.wrapped_number) layout.push_back(&op.type);
    }
    checked_numel(shape);
    SymShape strides = elementwise_output_strides(shape, layout);
    return std::vector<TensorType>{{dtype, shape, strides, common_device(ops)}};
  };
}

/// What an op accepts, checked on the promoted dtype, with PyTorch's wording.
enum class Accepts { Any, Floating, Integral, NotBool };

MetaFn checked(MetaFn base, Accepts accepts, std::string op) {
  if (accepts == Accepts::Any) return base;
  return [=](const MetaArgs &a) {
    auto out = base(a);
    DType t = out[0].dtype;
    switch (accepts) {
      case Accepts::Any: break;
      case Accepts::Floating:
        COIL_USER_CHECK(is_floating(t), op, " needs floating point inputs, got ", short_name(t));
        break;
      case Accepts::Integral:
        COIL_USER_CHECK(is_integral(t, true), op, " needs integral or bool inputs, got ", short_name(t));
        break;
      case Accepts::NotBool:
        COIL_USER_CHECK(t != DType::Bool, op, " does not accept bool inputs");
        break;
    }
    return out;
  };
}

MetaFn unary(Promote kind, Accepts accepts = Accepts::Any, std::string op = "") {
  return checked(elementwise(kind, {"self"}), accepts, op);
}
MetaFn binary(Promote kind, Accepts accepts = Accepts::Any, std::string op = "") {
  return checked(elementwise(kind, {"self", "other"}), accepts, op);
}
MetaFn binary_scalar(Promote kind, Accepts accepts = Accepts::Any, std::string op = "") {
  return checked(elementwise(kind, {"self"}, {"other"}), accepts, op);
}

/// pow.Tensor_Scalar: PyTorch refuses an integral tensor to a negative integral power
/// (pow.Tensor_Tensor computes it, as 1 / self**-exponent in integer arithmetic).
MetaFn pow_tensor_scalar() {
  MetaFn base = elementwise(Promote::BoolToLong, {"self"}, {"exponent"});
  return [=](const MetaArgs &a) {
    auto out = base(a);
    const Arg &e = a.arg("exponent");
    COIL_USER_CHECK(!(is_integral(out[0].dtype, true) && e.is_int() && e.integer() < 0),
                    "Integers to negative integer powers are not allowed.");
    return out;
  };
}

/// add/sub with alpha: PyTorch refuses a float alpha for integral results and
/// subtraction of bools.
MetaFn add_sub(bool is_sub, bool scalar_other) {
  MetaFn base = scalar_other ? binary_scalar(Promote::Default) : binary(Promote::Default);
  return [=](const MetaArgs &a) {
    auto out = base(a);
    DType t = out[0].dtype;
    COIL_USER_CHECK(is_floating(t) || a.arg("alpha").is_int() || a.arg("alpha").is<bool>(),
                    "for integral inputs, alpha must not be a floating point number");
    COIL_USER_CHECK(!(is_sub && t == DType::Bool),
                    "subtraction of bool tensors is not supported; use logical_xor");
    return out;
  };
}

MetaFn gelu() {
  MetaFn base = unary(Promote::Default, Accepts::Floating, "gelu");
  return [=](const MetaArgs &a) {
    std::string approximate = *a.optional_str("approximate");
    COIL_USER_CHECK(approximate == "none" || approximate == "tanh",
                    "approximate must be 'none' or 'tanh', got '", approximate, "'");
    return base(a);
  };
}

/// The layout PyTorch's references give floating floor division and copysign (which end
/// with a `where` on a predicate of `other`: `ne(other, 0)`, `signbit(other)`), and so
/// what torch.export prints: `other`'s layout, broadcast to the result, so a broadcast or
/// 0-dim `other` gives a contiguous result even when `self` is transposed.
std::vector<TensorType> layout_of_other(const MetaArgs &a, std::vector<TensorType> out) {
  Operand other = a.operand("other");
  if (other.wrapped_number) return out;
  const TensorType *ops[] = {&other.type};
  out[0].strides = elementwise_output_strides(out[0].sizes, ops);
  return out;
}

/// div with a rounding mode: true division promotes integers to float, trunc and
/// floor keep the promoted type.
MetaFn div_mode(bool scalar_other) {
  MetaFn true_div = scalar_other ? binary_scalar(Promote::IntToFloat) : binary(Promote::IntToFloat);
  MetaFn rounded = scalar_other ? binary_scalar(Promote::Default) : binary(Promote::Default);
  return [=](const MetaArgs &a) {
    auto mode = a.optional_str("rounding_mode");
    if (!mode) return true_div(a);
    COIL_USER_CHECK(*mode == "trunc" || *mode == "floor",
                    "rounding_mode must be None, 'trunc' or 'floor', got '", *mode, "'");
    auto out = rounded(a);
    COIL_USER_CHECK(out[0].dtype != DType::Bool, "div with a rounding mode does not accept bool inputs");
    if (*mode == "floor" && !scalar_other && is_floating(out[0].dtype)) return layout_of_other(a, out);
    return out;
  };
}

/// polygamma(n, self): as the other math that turns integers into floats, for n >= 0.
std::vector<TensorType> polygamma(const MetaArgs &a) {
  COIL_USER_CHECK(a.integer("n") >= 0, "polygamma(n, x) does not support negative n, got n=", a.integer("n"));
  return unary(Promote::IntToFloat)(a);
}

void register_unary_ops(Registry &r) {
  // Math that turns integers into the default float.
  for (const char *name : {"exp", "exp2", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "reciprocal",
                           "sin", "cos", "tan", "tanh", "sigmoid", "erf", "acos", "asin", "atan", "acosh",
                           "asinh", "atanh", "cosh", "sinh", "log10", "lgamma", "digamma",
                           "erfc", "erfinv", "special_erfcx", "special_log_ndtr", "special_ndtri",
                           "special_spherical_bessel_j0", "i0", "special_i0e", "special_i1", "special_i1e",
                           "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
                           "special_modified_bessel_k1", "special_scaled_modified_bessel_k0",
                           "special_scaled_modified_bessel_k1", "special_bessel_j0", "special_bessel_j1",
                           "special_bessel_y0", "special_bessel_y1"})
    r.add(str_cat(name, "(Tensor self) -> Tensor"), unary(Promote::IntToFloat));
  r.add("special_airy_ai(Tensor x) -> Tensor", checked(elementwise(Promote::IntToFloat, {"x"}), Accepts::Any, "special_airy_ai"));
  r.add("polygamma(int n, Tensor self) -> Tensor", polygamma);
  // frexp: the mantissa like self (floating only) and the i32 exponent laid out alike.
  r.add("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", [](const MetaArgs &a) {
    std::vector<TensorType> out = unary(Promote::Default, Accepts::Floating, "frexp")(a);
    TensorType exponent = out[0];
    exponent.dtype = DType::I32;
    return std::vector<TensorType>{out[0], exponent};
  });
  // The orthogonal polynomials P_n(x): float results of x and n promoted together.
  for (const char *name : {"chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                           "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"}) {
    r.add(str_cat("special_", name, "(Tensor x, Tensor n) -> Tensor"), checked(elementwise(Promote::IntToFloat, {"x", "n"}), Accepts::Any, name));
    r.add(str_cat("special_", name, ".x_scalar(Scalar x, Tensor n) -> Tensor"),
          checked(elementwise(Promote::IntToFloat, {"n"}, {"x"}), Accepts::Any, name));
    r.add(str_cat("special_", name, ".n_scalar(Tensor x, Scalar n) -> Tensor"),
          checked(elementwise(Promote::IntToFloat, {"x"}, {"n"}), Accepts::Any, name));
  }
  r.add("abs(Tensor self) -> Tensor", unary(Promote::Default, Accepts::NotBool, "abs"));
  r.add("neg(Tensor self) -> Tensor", unary(Promote::Default, Accepts::NotBool, "neg"));
  r.add("sign(Tensor self) -> Tensor", unary(Promote::Default));
  for (const char *name : {"floor", "ceil", "round", "trunc"})
    r.add(str_cat(name, "(Tensor self) -> Tensor"), unary(Promote::Default, Accepts::NotBool, name));
  r.add("round.decimals(Tensor self, *, int decimals) -> Tensor",
        unary(Promote::Default, Accepts::Floating, "round with decimals"));
  r.add("relu(Tensor self) -> Tensor", unary(Promote::Default, Accepts::NotBool, "relu"));
  r.add("gelu(Tensor self, *, str approximate='none') -> Tensor", gelu());
  for (const char *name : {"silu", "hardswish", "hardsigmoid"})
    r.add(str_cat(name, "(Tensor self) -> Tensor"), unary(Promote::Default, Accepts::Floating, name));
  r.add("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
        unary(Promote::Default, Accepts::NotBool, "hardtanh"));
  r.add("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
        unary(Promote::Default, Accepts::Floating, "leaky_relu"));
  r.add("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
        unary(Promote::Default, Accepts::Floating, "elu"));
  r.add("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
        unary(Promote::Default, Accepts::Floating, "softplus"));
  r.add("logical_not(Tensor self) -> Tensor", unary(Promote::AlwaysBool));
  r.add("bitwise_not(Tensor self) -> Tensor", unary(Promote::Default, Accepts::Integral, "bitwise_not"));
  r.add("isnan(Tensor self) -> Tensor", unary(Promote::AlwaysBool));
  r.add("isinf(Tensor self) -> Tensor", unary(Promote::AlwaysBool));
  r.add("isfinite(Tensor self) -> Tensor", unary(Promote::AlwaysBool));
  r.add("signbit(Tensor self) -> Tensor", unary(Promote::AlwaysBool));
  r.add("angle(Tensor self) -> Tensor", unary(Promote::IntToFloat));
}

void register_binary_ops(Registry &r) {
  r.add("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add_sub(false, false));
  r.add("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", add_sub(false, true));
  r.add("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add_sub(true, false));
  r.add("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", add_sub(true, true));
  r.add("mul.Tensor(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("mul.Scalar(Tensor self, Scalar other) -> Tensor", binary_scalar(Promote::Default));
  r.add("div.Tensor(Tensor self, Tensor other) -> Tensor", binary(Promote::IntToFloat));
  r.add("div.Scalar(Tensor self, Scalar other) -> Tensor", binary_scalar(Promote::IntToFloat));
  r.add("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor", div_mode(false));
  r.add("div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor", div_mode(true));
  for (const char *name : {"remainder", "fmod"}) {
    r.add(str_cat(name, ".Tensor(Tensor self, Tensor other) -> Tensor"),
          binary(Promote::Default, Accepts::NotBool, name));
    r.add(str_cat(name, ".Scalar(Tensor self, Scalar other) -> Tensor"),
          binary_scalar(Promote::Default, Accepts::NotBool, name));
  }
  r.add("remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
        checked(elementwise(Promote::Default, {"other"}, {"self"}), Accepts::NotBool, "remainder"));
  // pow turns bool results into i64: True ** 2 is 1.
  r.add("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", pow_tensor_scalar());
  r.add("square(Tensor self) -> Tensor", unary(Promote::BoolToLong));
  r.add("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
        elementwise(Promote::BoolToLong, {"self", "exponent"}));
  r.add("pow.Scalar(Scalar self, Tensor exponent) -> Tensor",
        elementwise(Promote::BoolToLong, {"exponent"}, {"self"}));
  r.add("maximum(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("minimum(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("atan2(Tensor self, Tensor other) -> Tensor", binary(Promote::IntToFloat));
  r.add("copysign.Tensor(Tensor self, Tensor other) -> Tensor",
        [base = binary(Promote::IntToFloat)](const MetaArgs &a) { return layout_of_other(a, base(a)); });
  r.add("copysign.Scalar(Tensor self, Scalar other) -> Tensor", binary_scalar(Promote::IntToFloat));
  // fmax/fmin skip NaN where maximum/minimum propagate it; both take bools and integers.
  r.add("fmax(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("fmin(Tensor self, Tensor other) -> Tensor", binary(Promote::Default));
  r.add("hypot(Tensor self, Tensor other) -> Tensor", binary(Promote::Default, Accepts::Floating, "hypot"));
  // The regularized incomplete gamma functions of floats; the Hurwitz zeta of any numbers.
  for (const char *name : {"igamma", "igammac"})
    r.add(str_cat(name, "(Tensor self, Tensor other) -> Tensor"), binary(Promote::Default, Accepts::Floating, name));
  r.add("special_zeta(Tensor self, Tensor other) -> Tensor", binary(Promote::IntToFloat));
  r.add("special_zeta.self_scalar(Scalar self, Tensor other) -> Tensor", elementwise(Promote::IntToFloat, {"other"}, {"self"}));
  r.add("special_zeta.other_scalar(Tensor self, Scalar other) -> Tensor", elementwise(Promote::IntToFloat, {"self"}, {"other"}));

  for (const char *name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    r.add(str_cat(name, ".Tensor(Tensor self, Tensor other) -> Tensor"), binary(Promote::AlwaysBool));
    r.add(str_cat(name, ".Scalar(Tensor self, Scalar other) -> Tensor"), binary_scalar(Promote::AlwaysBool));
  }
  for (const char *name : {"logical_and", "logical_or", "logical_xor"})
    r.add(str_cat(name, "(Tensor self, Tensor other) -> Tensor"), binary(Promote::AlwaysBool));
  r.add("nextafter(Tensor self, Tensor other) -> Tensor", binary(Promote::Default, Accepts::Floating, "nextafter"));
  for (const char *name : {"gcd", "lcm"})
    r.add(str_cat(name, "(Tensor self, Tensor other) -> Tensor"), binary(Promote::Default, Accepts::Integral, name));
  for (const char *name : {"bitwise_left_shift", "bitwise_right_shift"}) {
    r.add(str_cat(name, ".Tensor(Tensor self, Tensor other) -> Tensor"),
          binary(Promote::Default, Accepts::Integral, name));
    r.add(str_cat(name, ".Tensor_Scalar(Tensor self, Scalar other) -> Tensor"),
          binary_scalar(Promote::Default, Accepts::Integral, name));
    r.add(str_cat(name, ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor"),
          checked(elementwise(Promote::Default, {"other"}, {"self"}), Accepts::Integral, name));
  }
  for (const char *name : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    r.add(str_cat(name, ".Tensor(Tensor self, Tensor other) -> Tensor"),
          binary(Promote::Default, Accepts::Integral, name));
    r.add(str_cat(name, ".Scalar(Tensor self, Scalar other) -> Tensor"),
          binary_scalar(Promote::Default, Accepts::Integral, name));
  }
}

/// triu/tril: the diagonal mask keeps the input's dtype and gives a fresh contiguous
/// tensor.
std::vector<TensorType> triangle(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(self.rank() >= 2, "triu/tril need a tensor of rank >= 2, got ", shape_str(self.sizes));
  return {meta::contiguous(self.dtype, self.sizes, self.device)};
}

void register_selection_ops(Registry &r) {
  MetaFn where = elementwise(Promote::Default, {"condition", "self", "other"}, {}, 1);
  auto with_bool_condition = [](MetaFn base) {
    return [base](const MetaArgs &a) {
      DType cond = a.operand("condition").type.dtype;
      COIL_USER_CHECK(cond == DType::Bool, "where expects a bool condition, got ", short_name(cond));
      return base(a);
    };
  };
  r.add("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", with_bool_condition(where));
  r.add("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
        with_bool_condition(elementwise(Promote::Default, {"condition", "self"}, {"other"}, 1)));
  r.add("where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",
        with_bool_condition(elementwise(Promote::Default, {"condition", "other"}, {"self"}, 1)));
  // masked_fill keeps self's dtype; self and the mask broadcast together.
  auto masked_fill = [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self"), &mask = a.operand("mask").type;
    COIL_USER_CHECK(mask.dtype == DType::Bool, "masked_fill only supports boolean masks, but got mask with dtype ",
                    short_name(mask.dtype));
    SymShape shape = broadcast_shapes(self.sizes, mask.sizes);
    checked_numel(shape);
    std::vector<const TensorType *> layout = {&self, &mask};
    return std::vector<TensorType>{{self.dtype, shape, elementwise_output_strides(shape, layout), self.device}};
  };
  r.add("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", masked_fill);
  r.add("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", [masked_fill](const MetaArgs &a) {
    COIL_USER_CHECK(a.operand("value").type.rank() == 0,
                    "masked_fill only supports a 0-dimensional value tensor, but got tensor with ",
                    a.operand("value").type.rank(), " dimension(s).");
    return masked_fill(a);
  });
  // clamp's bounds take part in type promotion: clamp(int_tensor, 0.5) is float.
  r.add("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", [](const MetaArgs &a) {
    COIL_USER_CHECK(!a.is_none("min") || !a.is_none("max"), "clamp needs at least one of min and max");
    std::vector<std::string> bounds;
    for (const char *b : {"min", "max"})
      if (!a.is_none(b)) bounds.push_back(b);
    return checked(elementwise(Promote::Default, {"self"}, bounds), Accepts::NotBool, "clamp")(a);
  });
  r.add("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", [](const MetaArgs &a) {
    COIL_USER_CHECK(!a.is_none("min") || !a.is_none("max"), "clamp needs at least one of min and max");
    std::vector<std::string> operands = {"self"};
    for (const char *b : {"min", "max"})
      if (!a.is_none(b)) operands.push_back(b);
    return checked(elementwise(Promote::Default, operands), Accepts::NotBool, "clamp")(a);
  });
  r.add("clamp_min(Tensor self, Scalar min) -> Tensor",
        checked(elementwise(Promote::Default, {"self"}, {"min"}), Accepts::NotBool, "clamp_min"));
  r.add("clamp_max(Tensor self, Scalar max) -> Tensor",
        checked(elementwise(Promote::Default, {"self"}, {"max"}), Accepts::NotBool, "clamp_max"));
  // The Tensor overloads are maximum/minimum in eager and accept bools.
  r.add("clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", elementwise(Promote::Default, {"self", "min"}));
  r.add("clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", elementwise(Promote::Default, {"self", "max"}));
  r.add("triu(Tensor self, int diagonal=0) -> Tensor", triangle);
  r.add("tril(Tensor self, int diagonal=0) -> Tensor", triangle);
}

}  // namespace

void register_pointwise_ops(Registry &r) {
  register_unary_ops(r);
  register_binary_ops(r);
  register_selection_ops(r);
}

}  // namespace coil
