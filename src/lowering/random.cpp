// Random tensors: rand, randn, randint, bernoulli and dropout draw from coil's counter-based
// generator (Philox, coil/philox.h). Each op reserves one counter per element it draws, so
// element i of an op is the same number in every kernel that computes it (fusion may
// recompute it) and on every target; the call's random state (seed, offset) is an input
// (Lowering::reserve_draws). randperm, a sort of random keys, is in indexing.cpp.
#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

/// The element's number in row-major order over `sizes`: its place in the op's draws.
Expr linear(const std::vector<Expr> &x, const Shape &sizes) { return ir::offset_of(x, contiguous_strides(sizes)); }

/// The significant bits of a dtype's numbers in [0, 1) that rand draws: uniform on the
/// multiples of 2^-bits, so that none rounds up to 1 (as eager draws them).
int uniform_bits(DType t) { return t == DType::F64 ? 53 : t == DType::BF16 ? 8 : t == DType::F16 ? 11 : 24; }

/// One uniform number in [0, 1) per element of `t` (F64 for f64 tensors, else F32 holding
/// exactly what `t` holds).
int uniform(Lowering &l, BodyBuilder &b, const TensorType &t, int64_t first, const std::vector<Expr> &x) {
  DType wide = t.dtype == DType::F64 ? DType::F64 : DType::F32;
  int u = l.draw(b, Op::Rand, wide, first, linear(x, t.sizes));
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
      return l.draw(b, Op::Randn, t.dtype == DType::F64 ? DType::F64 : DType::F32, first, linear(x, t.sizes));
    })};
  };
}

/// randint: low + (63 random bits mod (high - low)).
std::vector<TensorRef> randint(Lowering &l, const Node &n) {
  const TensorType &t = l.graph().type(n.outputs[0]);
  int low_arg = n.op->schema.find_arg("low");
  int64_t low = low_arg >= 0 ? n.args[size_t(low_arg)].as<int64_t>() : 0, high = arg(n, "high").as<int64_t>();
  int64_t first = l.reserve_draws(checked_numel(t.sizes), t.device);
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int bits = l.draw(b, Op::RandBits, DType::I64, first, linear(x, t.sizes));
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

}  // namespace

void add_random_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  for (const char *op : {"aten.rand.default", "aten.rand_like.default"}) t[op] = random_floats(Op::Rand);
  for (const char *op : {"aten.randn.default", "aten.randn_like.default"}) t[op] = random_floats(Op::Randn);
  for (const char *op : {"aten.randint.default", "aten.randint.low"}) t[op] = randint;
  for (const char *op : {"aten.bernoulli.default", "aten.bernoulli.p"}) t[op] = bernoulli;
  t["aten.native_dropout.default"] = native_dropout;
}

}  // namespace coil::lowering
