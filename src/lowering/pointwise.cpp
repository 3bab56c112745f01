// Elementwise ops: operands loaded with broadcasting, widened to the compute dtype
// (f16/bf16 compute in f32, decision 14), combined, and cast to the result dtype.
#include <algorithm>
#include <cmath>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

/// The operands of an elementwise node, loaded and cast to the compute dtype.
struct Operands {
  std::vector<int> values;
  DType compute;
  DType common;  // what eager converts operands to: compute is its opmath widening
};

/// Which dtype an op computes in.
enum class Compute {
  Promoted,  // the promoted type of the operands (comparisons compare in it)
  Result,    // the result's type (true division and math that makes floats of ints)
};

PromotionOperand promotion_of(Lowering &l, const Node &n, const std::string &name) {
  const Arg &a = n.args[size_t(n.op->schema.find_arg(name))];
  if (a.is<ValueId>()) return {l.graph().type(a.as<ValueId>()).dtype, l.graph().type(a.as<ValueId>()).rank(), false};
  return {a.is<double>() ? DType::F64 : a.is<bool>() ? DType::Bool : DType::I64, 0, true};
}

/// The dtype operands are converted to before the op (PyTorch's common dtype: a 0-dim
/// f32 operand of an f16 op is rounded to f16 first); the op then computes in its
/// opmath widening (f16 and bf16 in f32).
DType common_dtype(Lowering &l, const Node &n, const std::vector<std::string> &names, Compute rule) {
  if (rule == Compute::Result) return l.graph().type(n.outputs[0]).dtype;
  std::vector<PromotionOperand> promo;
  for (const auto &name : names) promo.push_back(promotion_of(l, n, name));
  return result_type(promo);
}

DType compute_dtype(Lowering &l, const Node &n, const std::vector<std::string> &names, Compute rule) {
  return opmath_dtype(common_dtype(l, n, names, rule));
}

using Combine = std::function<int(BodyBuilder &, const Operands &, const Node &)>;

/// An elementwise op over the named arguments (tensors or numbers).
LowerFn elementwise(std::vector<std::string> names, Compute rule, Combine combine) {
  return [=](Lowering &l, const Node &n) {
    DType common = common_dtype(l, n, names, rule), compute = opmath_dtype(common);
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector<TensorRef>{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      Operands ops{{}, compute, common};
      for (const auto &name : names)
        ops.values.push_back(b.cast(b.cast(load_argument(l, b, n, name, index), common), compute));
      return combine(b, ops, n);
    })};
  };
}

Combine apply(Op op) {
  return [=](BodyBuilder &b, const Operands &o, const Node &) {
    if (o.values.size() == 1) return b.unary(op, o.values[0], o.compute);
    return b.binary(op, o.values[0], o.values[1], o.compute);
  };
}

/// Ops whose result is bool whatever the compute dtype: comparisons, isnan, logical ops.
Combine predicate(Op op) {
  return [=](BodyBuilder &b, const Operands &o, const Node &) {
    if (o.values.size() == 1) return b.unary(op, o.values[0], DType::Bool);
    return b.binary(op, o.values[0], o.values[1], DType::Bool);
  };
}

double scalar_arg(const Node &n, const std::string &name) { return number(arg(n, name)); }

// add/sub: self ± other * alpha (alpha folded away when it is 1).
Combine add_sub(Op op) {
  return [=](BodyBuilder &b, const Operands &o, const Node &n) {
    int other = o.values[1];
    double alpha = scalar_arg(n, "alpha");
    if (alpha != 1) other = b.binary(Op::Mul, other, b.constant(alpha, o.compute), o.compute);
    return b.binary(op, o.values[0], other, o.compute);
  };
}

int constant(BodyBuilder &b, double v, DType t) { return b.constant(v, t); }

// gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))  or, approximate='tanh',
//           x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
int gelu(BodyBuilder &b, int x, DType t, bool tanh_form) {
  int inner;
  if (tanh_form) {
    int x3 = b.binary(Op::Mul, b.binary(Op::Mul, x, x, t), x, t);
    int poly = b.binary(Op::Add, x, b.binary(Op::Mul, x3, constant(b, 0.044715, t), t), t);
    inner = b.unary(Op::Tanh, b.binary(Op::Mul, poly, constant(b, std::sqrt(2.0 / M_PI), t), t), t);
  } else {
    inner = b.unary(Op::Erf, b.binary(Op::Mul, x, constant(b, M_SQRT1_2, t), t), t);
  }
  int half_x = b.binary(Op::Mul, x, constant(b, 0.5, t), t);
  return b.binary(Op::Mul, half_x, b.binary(Op::Add, inner, constant(b, 1, t), t), t);
}

// pow(x, e) for a number e as eager's kernels compute it (both devices special-case these
// exponents): x*x, x*x*x, sqrt, rsqrt, 1/x and 1/(x*x), exact to the bit on the CPU and no
// call of pow, which libm's vector forms run lane by lane for negative x; any other
// exponent, and integer tensors, through pow.
int power(BodyBuilder &b, const Operands &o, const Node &n) {
  int x = o.values[0];
  DType t = o.compute;
  double e = scalar_arg(n, "exponent");
  if (is_floating(t)) {
    if (e == 2) return b.binary(Op::Mul, x, x, t);
    if (e == 3) return b.binary(Op::Mul, b.binary(Op::Mul, x, x, t), x, t);
    if (e == 0.5) return b.unary(Op::Sqrt, x, t);
    if (e == -0.5) return b.unary(Op::Rsqrt, x, t);
    if (e == -1) return b.unary(Op::Reciprocal, x, t);
    if (e == -2) return b.unary(Op::Reciprocal, b.binary(Op::Mul, x, x, t), t);
  }
  return b.binary(Op::Pow, x, o.values[1], t);
}

int clamp(BodyBuilder &b, int x, std::optional<int> lo, std::optional<int> hi, DType t) {
  if (lo) x = b.binary(Op::Maximum, x, *lo, t);
  if (hi) x = b.binary(Op::Minimum, x, *hi, t);
  return x;
}

// hardsigmoid(x) = clamp(x + 3, 0, 6) / 6
int hardsigmoid(BodyBuilder &b, int x, DType t) {
  int shifted = b.binary(Op::Add, x, constant(b, 3, t), t);
  return b.binary(Op::TrueDiv, clamp(b, shifted, constant(b, 0, t), constant(b, 6, t), t), constant(b, 6, t), t);
}

void add_unary(std::map<std::string, LowerFn, std::less<>> &t) {
  struct Entry {
    const char *target;
    Op op;
    Compute rule;
  };
  const Entry unary[] = {
      {"aten.abs.default", Op::Abs, Compute::Result},       {"aten.neg.default", Op::Neg, Compute::Result},
      {"aten.exp.default", Op::Exp, Compute::Result},       {"aten.exp2.default", Op::Exp2, Compute::Result},
      {"aten.expm1.default", Op::Expm1, Compute::Result},   {"aten.log.default", Op::Log, Compute::Result},
      {"aten.log1p.default", Op::Log1p, Compute::Result},   {"aten.log2.default", Op::Log2, Compute::Result},
      {"aten.sqrt.default", Op::Sqrt, Compute::Result},     {"aten.rsqrt.default", Op::Rsqrt, Compute::Result},
      {"aten.reciprocal.default", Op::Reciprocal, Compute::Result},
      {"aten.sin.default", Op::Sin, Compute::Result},       {"aten.cos.default", Op::Cos, Compute::Result},
      {"aten.tan.default", Op::Tan, Compute::Result},       {"aten.tanh.default", Op::Tanh, Compute::Result},
      {"aten.sigmoid.default", Op::Sigmoid, Compute::Result}, {"aten.erf.default", Op::Erf, Compute::Result},
      {"aten.floor.default", Op::Floor, Compute::Result},   {"aten.ceil.default", Op::Ceil, Compute::Result},
      {"aten.round.default", Op::Round, Compute::Result},   {"aten.trunc.default", Op::Trunc, Compute::Result},
      {"aten.sign.default", Op::Sign, Compute::Result},     {"aten.bitwise_not.default", Op::BitwiseNot, Compute::Result},
      {"aten.acos.default", Op::Acos, Compute::Result},     {"aten.asin.default", Op::Asin, Compute::Result},
      {"aten.atan.default", Op::Atan, Compute::Result},     {"aten.acosh.default", Op::Acosh, Compute::Result},
      {"aten.asinh.default", Op::Asinh, Compute::Result},   {"aten.atanh.default", Op::Atanh, Compute::Result},
      {"aten.cosh.default", Op::Cosh, Compute::Result},     {"aten.sinh.default", Op::Sinh, Compute::Result},
      {"aten.log10.default", Op::Log10, Compute::Result},
  };
  for (const Entry &e : unary) t[e.target] = elementwise({"self"}, e.rule, apply(e.op));
  for (auto [target, op] : {std::pair{"aten.logical_not.default", Op::LogicalNot},
                            std::pair{"aten.isnan.default", Op::IsNan}, std::pair{"aten.isinf.default", Op::IsInf}})
    t[target] = elementwise({"self"}, Compute::Promoted, predicate(op));
  t["aten.isfinite.default"] = elementwise({"self"}, Compute::Promoted, [](BodyBuilder &b, const Operands &o, const Node &) {
    if (!is_floating(o.compute)) return b.constant(1, DType::Bool);
    int nan = b.unary(Op::IsNan, o.values[0], DType::Bool), inf = b.unary(Op::IsInf, o.values[0], DType::Bool);
    return b.unary(Op::LogicalNot, b.binary(Op::LogicalOr, nan, inf, DType::Bool), DType::Bool);
  });

  // signbit(x): the sign bit, -0.0 and -nan included: copysign(1, x) < 0.
  t["aten.signbit.default"] = elementwise({"self"}, Compute::Promoted, [](BodyBuilder &b, const Operands &o, const Node &) {
    DType c = o.compute;
    if (c == DType::Bool) return b.constant(0, DType::Bool);
    if (!is_floating(c)) return b.binary(Op::Lt, o.values[0], b.constant(0, c), DType::Bool);
    return b.binary(Op::Lt, b.binary(Op::Copysign, b.constant(1, c), o.values[0], c), b.constant(0, c), DType::Bool);
  });
  // angle of a real x: pi for x < 0, else 0; nan stays nan.
  t["aten.angle.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &) {
    DType c = o.compute;
    int x = o.values[0];
    int angle = b.where(b.binary(Op::Lt, x, b.constant(0, c), DType::Bool), b.constant(M_PI, c), b.constant(0, c), c);
    return b.where(b.unary(Op::IsNan, x, DType::Bool), x, angle, c);
  });

  // round(x, decimals=d) = round(x * 10^d) / 10^d, or for d < 0 round(x / 10^-d) * 10^-d
  t["aten.round.decimals"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    int64_t d = n.args[1].integer();
    DType c = o.compute;
    int scale = b.constant(std::pow(10.0, double(d < 0 ? -d : d)), c);
    Op in = d >= 0 ? Op::Mul : Op::TrueDiv, back = d >= 0 ? Op::TrueDiv : Op::Mul;
    return b.binary(back, b.unary(Op::Round, b.binary(in, o.values[0], scale, c), c), scale, c);
  });
  t["aten.relu.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &) {
    return b.binary(Op::Maximum, o.values[0], constant(b, 0, o.compute), o.compute);
  });
  t["aten.gelu.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    return gelu(b, o.values[0], o.compute, n.args[1].as<std::string>() == "tanh");
  });
  t["aten.silu.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &) {
    return b.binary(Op::Mul, o.values[0], b.unary(Op::Sigmoid, o.values[0], o.compute), o.compute);
  });
  t["aten.hardsigmoid.default"] = elementwise({"self"}, Compute::Result,
                                              [](BodyBuilder &b, const Operands &o, const Node &) {
                                                return hardsigmoid(b, o.values[0], o.compute);
                                              });
  t["aten.hardswish.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &) {
    return b.binary(Op::Mul, o.values[0], hardsigmoid(b, o.values[0], o.compute), o.compute);
  });
  t["aten.hardtanh.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    DType c = o.compute;
    return clamp(b, o.values[0], constant(b, scalar_arg(n, "min_val"), c), constant(b, scalar_arg(n, "max_val"), c), c);
  });
  // leaky_relu(x) = x > 0 ? x : x * slope
  t["aten.leaky_relu.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    DType c = o.compute;
    int x = o.values[0];
    int positive = b.binary(Op::Gt, x, constant(b, 0, c), DType::Bool);
    return b.where(positive, x, b.binary(Op::Mul, x, constant(b, scalar_arg(n, "negative_slope"), c), c), c);
  });
  // elu(x) = x > 0 ? x * scale : (exp(x * input_scale) - 1) * alpha * scale
  t["aten.elu.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    DType c = o.compute;
    int x = o.values[0];
    double alpha = scalar_arg(n, "alpha"), scale = scalar_arg(n, "scale"), in_scale = scalar_arg(n, "input_scale");
    int neg = b.unary(Op::Expm1, b.binary(Op::Mul, x, constant(b, in_scale, c), c), c);
    neg = b.binary(Op::Mul, neg, constant(b, alpha * scale, c), c);
    int pos = b.binary(Op::Mul, x, constant(b, scale, c), c);
    return b.where(b.binary(Op::Gt, x, constant(b, 0, c), DType::Bool), pos, neg, c);
  });
  // softplus(x) = x * beta > threshold ? x : log1p(exp(x * beta)) / beta
  t["aten.softplus.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    DType c = o.compute;
    int x = o.values[0];
    int beta = constant(b, scalar_arg(n, "beta"), c);
    int scaled = b.binary(Op::Mul, x, beta, c);
    int soft = b.binary(Op::TrueDiv, b.unary(Op::Log1p, b.unary(Op::Exp, scaled, c), c), beta, c);
    int linear = b.binary(Op::Gt, scaled, constant(b, scalar_arg(n, "threshold"), c), DType::Bool);
    return b.where(linear, x, soft, c);
  });
}

void add_binary(std::map<std::string, LowerFn, std::less<>> &t) {
  for (const char *o : {"Tensor", "Scalar"}) {
    std::string other = "other";
    t[str_cat("aten.add.", o)] = elementwise({"self", other}, Compute::Result, add_sub(Op::Add));
    t[str_cat("aten.sub.", o)] = elementwise({"self", other}, Compute::Result, add_sub(Op::Sub));
    t[str_cat("aten.mul.", o)] = elementwise({"self", other}, Compute::Result, apply(Op::Mul));
    t[str_cat("aten.div.", o)] = elementwise({"self", other}, Compute::Result, apply(Op::TrueDiv));
    t[str_cat("aten.div.", o, "_mode")] =
        elementwise({"self", other}, Compute::Result, [](BodyBuilder &b, const Operands &ops, const Node &n) {
          auto mode = n.args[2].is_none() ? std::string() : n.args[2].as<std::string>();
          if (mode == "trunc" && ops.common != ops.compute) {
            // Eager's f16/bf16 kernel rounds the quotient to f16/bf16 before truncating.
            int q = b.binary(Op::TrueDiv, ops.values[0], ops.values[1], ops.compute);
            return b.unary(Op::Trunc, b.cast(b.cast(q, ops.common), ops.compute), ops.compute);
          }
          Op op = mode.empty() ? Op::TrueDiv : mode == "floor" ? Op::FloorDiv : Op::TruncDiv;
          return b.binary(op, ops.values[0], ops.values[1], ops.compute);
        });
    t[str_cat("aten.remainder.", o)] = elementwise({"self", other}, Compute::Result, apply(Op::Remainder));
    t[str_cat("aten.fmod.", o)] = elementwise({"self", other}, Compute::Result, apply(Op::Fmod));
    for (auto [name, op] : {std::pair{"eq", Op::Eq}, std::pair{"ne", Op::Ne}, std::pair{"lt", Op::Lt},
                            std::pair{"le", Op::Le}, std::pair{"gt", Op::Gt}, std::pair{"ge", Op::Ge}})
      t[str_cat("aten.", name, ".", o)] = elementwise({"self", other}, Compute::Promoted, predicate(op));
    for (auto [name, op] : {std::pair{"bitwise_and", Op::BitwiseAnd}, std::pair{"bitwise_or", Op::BitwiseOr},
                            std::pair{"bitwise_xor", Op::BitwiseXor}})
      t[str_cat("aten.", name, ".", o)] = elementwise({"self", other}, Compute::Result, apply(op));
  }
  t["aten.remainder.Scalar_Tensor"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Remainder));
  t["aten.pow.Tensor_Scalar"] = elementwise({"self", "exponent"}, Compute::Result, power);
  t["aten.square.default"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &) {
    return b.binary(Op::Mul, o.values[0], o.values[0], o.compute);
  });
  t["aten.pow.Tensor_Tensor"] = elementwise({"self", "exponent"}, Compute::Result, apply(Op::Pow));
  t["aten.pow.Scalar"] = elementwise({"self", "exponent"}, Compute::Result, apply(Op::Pow));
  t["aten.maximum.default"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Maximum));
  t["aten.minimum.default"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Minimum));
  t["aten.atan2.default"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Atan2));
  t["aten.copysign.Tensor"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Copysign));
  // copysign(x, c) of a number c: |x|, negated by a multiplication when c's sign bit is set
  // (a -0.0 written as a constant in a Triton kernel reaches it as +0.0).
  t["aten.copysign.Scalar"] = elementwise({"self"}, Compute::Result, [](BodyBuilder &b, const Operands &o, const Node &n) {
    int magnitude = b.unary(Op::Abs, o.values[0], o.compute);
    if (!std::signbit(scalar_arg(n, "other"))) return magnitude;
    return b.binary(Op::Mul, magnitude, b.constant(-1, o.compute), o.compute);
  });
  t["aten.fmax.default"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Fmax));
  t["aten.fmin.default"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Fmin));
  t["aten.hypot.default"] = elementwise({"self", "other"}, Compute::Result, apply(Op::Hypot));
  for (auto [name, op] : {std::pair{"logical_and", Op::LogicalAnd}, std::pair{"logical_or", Op::LogicalOr},
                          std::pair{"logical_xor", Op::LogicalXor}})
    t[str_cat("aten.", name, ".default")] = elementwise({"self", "other"}, Compute::Promoted, predicate(op));
}

void add_selection(std::map<std::string, LowerFn, std::less<>> &t) {
  // self and other are tensors or numbers (where.ScalarOther, where.ScalarSelf).
  auto where = [](Lowering &l, const Node &n) {
    DType compute = compute_dtype(l, n, {"self", "other"}, Compute::Result);
    return std::vector<TensorRef>{
        l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
          int cond = b.cast(load_argument(l, b, n, "condition", index), DType::Bool);
          int x = b.cast(load_argument(l, b, n, "self", index), compute);
          int y = b.cast(load_argument(l, b, n, "other", index), compute);
          return b.where(cond, x, y, compute);
        })};
  };
  t["aten.where.self"] = where;
  t["aten.where.ScalarOther"] = where;
  t["aten.where.ScalarSelf"] = where;
  // masked_fill: the value converted to self's dtype where the mask is set.
  t["aten.masked_fill.Scalar"] = t["aten.masked_fill.Tensor"] = [](Lowering &l, const Node &n) {
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector<TensorRef>{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      int mask = b.cast(load_argument(l, b, n, "mask", index), DType::Bool);
      int value = b.cast(load_argument(l, b, n, "value", index), out.dtype);
      return b.where(mask, value, b.cast(load_argument(l, b, n, "self", index), out.dtype), out.dtype);
    })};
  };
  auto clamp_scalars = [](BodyBuilder &b, const Operands &o, const Node &n) {
    auto bound = [&](const char *name) -> std::optional<int> {
      int i = n.op->schema.find_arg(name);
      if (i < 0 || n.args[size_t(i)].is_none()) return std::nullopt;
      return b.constant(scalar_arg(n, name), o.compute);
    };
    return clamp(b, o.values[0], bound("min"), bound("max"), o.compute);
  };
  t["aten.clamp.default"] = elementwise({"self"}, Compute::Result, clamp_scalars);
  t["aten.clamp_min.default"] = elementwise({"self"}, Compute::Result, clamp_scalars);
  t["aten.clamp_max.default"] = elementwise({"self"}, Compute::Result, clamp_scalars);
  t["aten.clamp.Tensor"] = [](Lowering &l, const Node &n) {
    std::vector<std::string> names = {"self"};
    for (const char *b : {"min", "max"})
      if (!n.args[size_t(n.op->schema.find_arg(b))].is_none()) names.push_back(b);
    return elementwise(names, Compute::Result, [names](BodyBuilder &b, const Operands &o, const Node &) {
      std::optional<int> lo, hi;
      for (size_t i = 1; i < names.size(); ++i) (names[i] == "min" ? lo : hi) = o.values[i];
      return clamp(b, o.values[0], lo, hi, o.compute);
    })(l, n);
  };
  t["aten.clamp_min.Tensor"] = elementwise({"self", "min"}, Compute::Result, apply(Op::Maximum));
  t["aten.clamp_max.Tensor"] = elementwise({"self", "max"}, Compute::Result, apply(Op::Minimum));
  // triu keeps x[..., i, j] where j - i >= diagonal; tril where j - i <= diagonal.
  for (auto [name, keep] : {std::pair{"aten.triu.default", Op::Ge}, std::pair{"aten.tril.default", Op::Le}}) {
    t[name] = [keep = keep](Lowering &l, const Node &n) {
      const TensorRef &x = l.ref(n.args[0].as<ValueId>());
      int64_t diagonal = n.args[1].integer();
      const TensorType &out = l.graph().type(n.outputs[0]);
      return std::vector<TensorRef>{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
        size_t r = index.size();
        int offset = b.index(index[r - 1] - index[r - 2], DType::I64);
        int inside = b.binary(keep, offset, b.constant(double(diagonal), DType::I64), DType::Bool);
        return b.where(inside, Lowering::load_broadcast(b, x, index), b.constant(0, x.dtype), x.dtype);
      })};
    };
  }
}

void add_copies(std::map<std::string, LowerFn, std::less<>> &t) {
  // Conversions and copies: load, cast, store in the layout the meta function chose.
  auto copy_of = [](const char *source) {
    return [=](Lowering &l, const Node &n) {
      const TensorRef &src = l.ref(n.args[size_t(n.op->schema.find_arg(source))].as<ValueId>());
      auto out = l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
        return Lowering::load_broadcast(b, src, index);
      });
      l.program().nodes.back().semantic_cast = true;
      return std::vector<TensorRef>{out};
    };
  };
  for (const char *target : {"aten._to_copy.default", "aten.clone.default", "aten.lift_fresh_copy.default"})
    t[target] = copy_of("self");
  t["aten.copy.default"] = copy_of("src");
  // resize: the element at storage position p of the new layout is the one at p in self's
  // storage (self's dims ordered by stride, largest first); past self's end, resize_ leaves
  // memory uninitialized, and coil zeros.
  t["aten.resize.default"] = [](Lowering &l, const Node &n) {
    ValueId self_id = arg(n, "self").as<ValueId>();
    const TensorRef &self = l.ref(self_id);
    const TensorType &in = l.graph().type(self_id), &out = l.graph().type(n.outputs[0]);
    std::vector<size_t> order(in.sizes.size());
    for (size_t d = 0; d < order.size(); ++d) order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return in.strides[a] > in.strides[b]; });
    Shape ordered;
    for (size_t d : order) ordered.push_back(in.sizes[d]);
    return std::vector<TensorRef>{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      Expr p(0);
      for (size_t d = 0; d < x.size(); ++d) p = p + x[d] * out.strides[d];
      std::vector<Expr> at = unravel(p, ordered), index(at.size(), Expr(0));
      for (size_t k = 0; k < order.size(); ++k) index[order[k]] = at[k];
      if (out.numel() <= in.numel()) return b.load(self.buffer, Lowering::offset(self, index), self.dtype);
      int inside = b.binary(Op::Lt, b.index(p, DType::I64), b.constant(double(in.numel()), DType::I64), DType::Bool);
      return b.masked_load(self.buffer, Lowering::offset(self, index), self.dtype, inside, 0);
    })};
  };
  t["prims.convert_element_type.default"] = copy_of("a");
  t["aten.fill.Scalar"] = [](Lowering &l, const Node &n) {
    double v = scalar_arg(n, "value");
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector<TensorRef>{
        l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &) { return b.constant(v, out.dtype); })};
  };
  t["aten.fill.Tensor"] = [](Lowering &l, const Node &n) {
    const TensorRef &value = l.ref(arg(n, "value").as<ValueId>());
    const TensorType &out = l.graph().type(n.outputs[0]);
    return std::vector<TensorRef>{l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &) {
      return b.load(value.buffer, value.offset.expr(), value.dtype);
    })};
  };
  for (const char *target : {"aten._assert_tensor_metadata.default", "aten._assert_async.default",
                             "aten._assert_async.msg"})
    t[target] = [](Lowering &, const Node &) { return std::vector<TensorRef>{}; };
}

}  // namespace

void add_pointwise_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  add_unary(t);
  add_binary(t);
  add_selection(t);
  add_copies(t);
}

}  // namespace coil::lowering
