// Random tensors: rand, randn, randint, bernoulli, dropout and the distributions (uniform,
// normal, log_normal, exponential, cauchy, geometric, rrelu's noise) draw from coil's counter-based
// generator (Philox, coil/philox.h). Each op reserves one counter per element it draws, so
// element i of an op is the same number in every kernel that computes it (fusion may
// recompute it) and on every target; the call's random state (seed, offset) is an input
// (Lowering::reserve_draws). randperm, a sort of random keys, is in indexing.cpp.
#include <cmath>

#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

/// The significant bits of a dtype's numbers in [0, 1) that rand draws: uniform on the
/// multiples of 2^-bits, so that none rounds up to 1 (as eager draws them).
int uniform_bits(DType t) { return t == DType::F64 ? 53 : t == DType::BF16 ? 8 : t == DType::F16 ? 11 : 24; }

/// One uniform number in [0, 1) per element of `t` (F64 for f64 tensors, else F32 holding
/// exactly what `t` holds).
int uniform(Lowering &l, BodyBuilder &b, const TensorType &t, int64_t first, const std::vector<Expr> &x,
            const TensorRef *state = nullptr) {
  DType wide = t.dtype == DType::F64 ? DType::F64 : DType::F32;
  int u = l.draw(b, Op::Rand, wide, first, x, t.sizes, state);
  int bits = uniform_bits(t.dtype);
  if (bits == 24 || bits == 53) return u;
  double scale = double(int64_t(1) << bits);
  int steps = b.unary(Op::Floor, b.binary(Op::Mul, u, b.constant(scale, wide), wide), wide);
  return b.binary(Op::Mul, steps, b.constant(1 / scale, wide), wide);
}

/// rand, randn and their _like forms: every element a draw.
LowerFn random_floats(Op op) {
  return [=](Lowering &l, const Node &n) {
    const TensorType &t = l.graph().type(n.outputs[0]);
    int64_t first = l.reserve_draws(checked_numel(t.sizes), t.device);
    return std::vector{l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      if (op == Op::Rand) return uniform(l, b, t, first, x);
      return l.draw(b, Op::Randn, t.dtype == DType::F64 ? DType::F64 : DType::F32, first, x, t.sizes);
    })};
  };
}

/// randint: low + (63 random bits mod (high - low)).
std::vector<TensorRef> randint(Lowering &l, const Node &n) {
  const TensorType &t = l.graph().type(n.outputs[0]);
  int low_arg = n.op->schema.find_arg("low");
  int64_t low = low_arg >= 0 ? n.args[size_t(low_arg)].integer() : 0, high = arg(n, "high").integer();
  int64_t first = l.reserve_draws(checked_numel(t.sizes), t.device);
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int bits = l.draw(b, Op::RandBits, DType::I64, first, x, t.sizes);
    int r = b.binary(Op::Remainder, bits, b.constant(double(high - low), DType::I64), DType::I64);
    return b.binary(Op::Add, r, b.constant(double(low), DType::I64), DType::I64);
  })};
}

/// bernoulli(self): 1 where a uniform draw is below self's element, else 0; bernoulli.p:
/// below p.
std::vector<TensorRef> bernoulli(Lowering &l, const Node &n) {
  const TensorRef &self = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &t = l.graph().type(n.outputs[0]);
  int p_arg = n.op->schema.find_arg("p");
  int64_t first = l.reserve_draws(checked_numel(t.sizes), t.device);
  DType wide = t.dtype == DType::F64 ? DType::F64 : DType::F32;
  TensorType drawn{wide, t.sizes, t.strides, t.device};
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int p = p_arg >= 0 ? b.constant(number(n.args[size_t(p_arg)]), wide)
                       : b.cast(Lowering::load_broadcast(b, self, x), wide);
    return b.cast(b.binary(Op::Lt, uniform(l, b, drawn, first, x), p, DType::Bool), t.dtype);
  })};
}

/// native_dropout(input, p, train): in training, each element kept where a uniform draw is
/// below 1 - p, as eager's bernoulli(1 - p) mask, and scaled by 1 / (1 - p) (0 when p is
/// 1): output (input * mask) * scale, and the mask. Not training (train=False): the input
/// and a mask of ones. Both outputs draw the same counters, so they agree wherever fusion
/// puts them.
std::vector<TensorRef> native_dropout(Lowering &l, const Node &n) {
  const TensorRef &input = l.ref(arg(n, "input").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]), &mask_type = l.graph().type(n.outputs[1]);
  double p = number(arg(n, "p"));
  const Arg &train = arg(n, "train");
  bool training = train.is_none() || train.as<bool>();
  if (!training) {
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
              return Lowering::load_broadcast(b, input, x);
            }),
            l.fill(mask_type, n.name + " mask", 1)};
  }
  int64_t first = l.reserve_draws(checked_numel(out.sizes), out.device);
  TensorType drawn{DType::F32, out.sizes, out.strides, out.device};
  auto kept = [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.binary(Op::Lt, uniform(l, b, drawn, first, x), b.constant(1 - p, DType::F32), DType::Bool);
  };
  DType compute = out.dtype == DType::F64 ? DType::F64 : is_floating(out.dtype) ? DType::F32 : out.dtype;
  double scale = p == 1 ? 0 : 1 / (1 - p);
  TensorRef output = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = b.cast(Lowering::load_broadcast(b, input, x), compute);
    int masked = b.cast(b.binary(Op::Mul, v, b.cast(kept(b, x), compute), compute), out.dtype);
    return b.binary(Op::Mul, b.cast(masked, compute), b.constant(scale, compute), compute);
  });
  return {output, l.pointwise(mask_type, n.name + " mask", kept)};
}

/// coil.dropout_keep(seed, size, p): dropout's mask as a function of a seed tensor (seed[0]
/// the key, seed[1] the first counter): true where the uniform draw is below 1 - p, as
/// native_dropout keeps an element. A training graph draws the seed in its forward and
/// computes the mask again in its backward (python/coil/ops.py, its eager form).
std::vector<TensorRef> dropout_keep(Lowering &l, const Node &n) {
  const TensorRef &seed = tensor_arg(l, n, "seed");
  const TensorType &t = l.graph().type(n.outputs[0]);
  double p = number(arg(n, "p"));
  TensorType drawn{DType::F32, t.sizes, t.strides, t.device};
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.binary(Op::Lt, uniform(l, b, drawn, 0, x, &seed), b.constant(1 - p, DType::F32), DType::Bool);
  })};
}

/// One number of a distribution from a uniform draw `u` in [0, 1) or a standard normal `z`
/// (F32, or F64 for f64 outputs), at output index `x`.
using Sample = std::function<int(BodyBuilder &b, int drawn, DType wide, const std::vector<Expr> &x)>;

/// A distribution's numbers, one draw of `source` (Rand or Randn) per element, transformed
/// by `sample` and cast to the output's dtype.
std::vector<TensorRef> distribution(Lowering &l, const Node &n, Op source, const Sample &sample) {
  const TensorType &t = l.graph().type(n.outputs[0]);
  int64_t first = l.reserve_draws(checked_numel(t.sizes), t.device);
  DType wide = t.dtype == DType::F64 ? DType::F64 : DType::F32;
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int drawn = source == Op::Rand ? uniform(l, b, TensorType{wide, t.sizes, t.strides, t.device}, first, x)
                                   : l.draw(b, Op::Randn, wide, first, x, t.sizes);
    return b.cast(sample(b, drawn, wide, x), t.dtype);
  })};
}

/// a + s * v in `t`.
int scaled(BodyBuilder &b, int a, int s, int v, DType t) { return b.binary(Op::Add, a, b.binary(Op::Mul, s, v, t), t); }

/// A number argument, or a tensor argument loaded at `x` with broadcasting, in `t`.
int parameter(Lowering &l, BodyBuilder &b, const Node &n, const char *name, const std::vector<Expr> &x, DType t) {
  return b.cast(load_argument(l, b, n, name, x), t);
}

/// uniform: from + (to - from) u.
std::vector<TensorRef> uniform_op(Lowering &l, const Node &n) {
  double from = number(arg(n, "from")), to = number(arg(n, "to"));
  return distribution(l, n, Op::Rand, [&](BodyBuilder &b, int u, DType t, const std::vector<Expr> &) {
    return scaled(b, b.constant(from, t), b.constant(to - from, t), u, t);
  });
}

/// normal in all its forms (mean and std numbers or tensors) and normal_functional:
/// mean + std z.
std::vector<TensorRef> normal(Lowering &l, const Node &n) {
  return distribution(l, n, Op::Randn, [&](BodyBuilder &b, int z, DType t, const std::vector<Expr> &x) {
    return scaled(b, parameter(l, b, n, "mean", x, t), parameter(l, b, n, "std", x, t), z, t);
  });
}

/// log_normal: exp(mean + std z).
std::vector<TensorRef> log_normal(Lowering &l, const Node &n) {
  return distribution(l, n, Op::Randn, [&](BodyBuilder &b, int z, DType t, const std::vector<Expr> &x) {
    return b.unary(Op::Exp, scaled(b, parameter(l, b, n, "mean", x, t), parameter(l, b, n, "std", x, t), z, t), t);
  });
}

/// exponential: -log(1 - u) / lambd, finite since 1 - u > 0.
std::vector<TensorRef> exponential(Lowering &l, const Node &n) {
  double lambd = number(arg(n, "lambd"));
  return distribution(l, n, Op::Rand, [&](BodyBuilder &b, int u, DType t, const std::vector<Expr> &) {
    int log = b.unary(Op::Log1p, b.unary(Op::Neg, u, t), t);
    return b.binary(Op::Mul, log, b.constant(-1 / lambd, t), t);
  });
}

/// cauchy: median + sigma tan(pi (u - 1/2)).
std::vector<TensorRef> cauchy(Lowering &l, const Node &n) {
  double median = number(arg(n, "median")), sigma = number(arg(n, "sigma"));
  return distribution(l, n, Op::Rand, [&](BodyBuilder &b, int u, DType t, const std::vector<Expr> &) {
    int angle = b.binary(Op::Mul, b.binary(Op::Sub, u, b.constant(0.5, t), t), b.constant(M_PI, t), t);
    return scaled(b, b.constant(median, t), b.constant(sigma, t), b.unary(Op::Tan, angle, t), t);
  });
}

/// geometric: the number of trials up to the first success, ceil(log(1 - u) / log(1 - p)),
/// at least 1.
std::vector<TensorRef> geometric(Lowering &l, const Node &n) {
  double p = number(arg(n, "p"));
  return distribution(l, n, Op::Rand, [&](BodyBuilder &b, int u, DType t, const std::vector<Expr> &) {
    int log = b.unary(Op::Log1p, b.unary(Op::Neg, u, t), t);
    int trials = b.unary(Op::Ceil, b.binary(Op::Mul, log, b.constant(1 / std::log1p(-p), t), t), t);
    return b.binary(Op::Maximum, trials, b.constant(1, t), t);
  });
}

/// rrelu_with_noise_functional: in training, each negative (or zero) element of self scaled
/// by a uniform draw in [lower, upper), which the noise output records (1 elsewhere);
/// otherwise leaky_relu with the slope (lower + upper) / 2 and the noise unchanged.
std::vector<TensorRef> rrelu_with_noise(Lowering &l, const Node &n) {
  const TensorRef &self = l.ref(arg(n, "self").as<ValueId>());
  const TensorRef &noise = l.ref(arg(n, "noise").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]), &noise_out = l.graph().type(n.outputs[1]);
  double lower = number(arg(n, "lower")), upper = number(arg(n, "upper"));
  DType compute = opmath_dtype(out.dtype);
  if (!arg(n, "training").as<bool>()) {
    TensorRef y = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      int v = b.cast(Lowering::load_broadcast(b, self, x), compute);
      int negative = b.binary(Op::Le, v, b.constant(0, compute), DType::Bool);
      return b.where(negative, b.binary(Op::Mul, v, b.constant((lower + upper) / 2, compute), compute), v, compute);
    });
    return {y, l.pointwise(noise_out, n.name + " noise", [&](BodyBuilder &b, const std::vector<Expr> &x) {
              return Lowering::load_broadcast(b, noise, x);
            })};
  }
  int64_t first = l.reserve_draws(checked_numel(out.sizes), out.device);
  TensorType drawn{compute, out.sizes, out.strides, out.device};
  auto slope = [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = b.cast(Lowering::load_broadcast(b, self, x), compute);
    int r = scaled(b, b.constant(lower, compute), b.constant(upper - lower, compute), uniform(l, b, drawn, first, x),
                   compute);
    return std::pair{v, b.where(b.binary(Op::Le, v, b.constant(0, compute), DType::Bool), r,
                                b.constant(1, compute), compute)};
  };
  TensorRef y = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    auto [v, r] = slope(b, x);
    return b.binary(Op::Mul, v, r, compute);
  });
  return {y, l.pointwise(noise_out, n.name + " noise", [&](BodyBuilder &b, const std::vector<Expr> &x) {
            return b.cast(slope(b, x).second, noise_out.dtype);
          })};
}

}  // namespace

void add_random_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  for (const char *op : {"aten.rand.default", "aten.rand_like.default"}) t[op] = random_floats(Op::Rand);
  for (const char *op : {"aten.randn.default", "aten.randn_like.default"}) t[op] = random_floats(Op::Randn);
  for (const char *op : {"aten.randint.default", "aten.randint.low"}) t[op] = randint;
  for (const char *op : {"aten.bernoulli.default", "aten.bernoulli.p"}) t[op] = bernoulli;
  t["aten.native_dropout.default"] = native_dropout;
  t["coil.dropout_keep.default"] = dropout_keep;
  t["aten.uniform.default"] = uniform_op;
  for (const char *op : {"aten.normal.Tensor_float", "aten.normal.float_Tensor", "aten.normal.Tensor_Tensor",
                         "aten.normal.float_float", "aten.normal_functional.default"})
    t[op] = normal;
  t["aten.log_normal.default"] = log_normal;
  t["aten.exponential.default"] = exponential;
  t["aten.cauchy.default"] = cauchy;
  t["aten.geometric.default"] = geometric;
  for (const char *op : {"aten.randint_like.default", "aten.randint_like.low_dtype"}) t[op] = randint;
  t["aten.rrelu_with_noise_functional.default"] = rrelu_with_noise;
}

}  // namespace coil::lowering
