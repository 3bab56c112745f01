// Softmax and the normalizations, decomposed into reductions over the normalized dims
// and pointwise epilogues, all over the same rows so that the scheduler can make one
// pass per row of them.
#include <cmath>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;
using ir::ReduceOp;

std::optional<TensorRef> optional_tensor(Lowering &l, const Node &n, const char *name) {
  const Arg &a = n.args[size_t(n.op->schema.find_arg(name))];
  if (a.is_none()) return std::nullopt;
  return l.ref(a.as<ValueId>());
}

/// A statistic over the trailing dims from `axis` on, kept as size-1 dims.
struct RowStats {
  size_t axis;
  TensorType type;  // the input's leading sizes then 1s, contiguous, in dtype `acc`
  SymShape reduced;
};

RowStats row_stats(const TensorRef &in, size_t axis, DType acc, Device device) {
  RowStats s{axis, {}, {}};
  SymShape sizes = in.sizes;
  for (size_t d = axis; d < sizes.size(); ++d) {
    s.reduced.push_back(sizes[d]);
    sizes[d] = 1;
  }
  s.type = TensorType{acc, sizes, contiguous_strides(sizes), device};
  return s;
}

/// The input index of (row index x, position r in the row).
std::vector<Expr> row_index(const RowStats &s, const std::vector<Expr> &x, const std::vector<Expr> &r) {
  std::vector<Expr> index(x.begin(), x.begin() + long(s.axis));
  index.insert(index.end(), r.begin(), r.end());
  return index;
}

/// Loads the row statistic `stat` for element `index` of the input.
int load_stat(BodyBuilder &b, const TensorRef &stat, const std::vector<Expr> &index) {
  return Lowering::load_broadcast(b, stat, index);
}

int load_as(BodyBuilder &b, const TensorRef &r, const std::vector<Expr> &index, DType t) {
  return b.cast(Lowering::load_broadcast(b, r, index), t);
}

// softmax(x) = exp(x - max) / sum(exp(x - max)), log_softmax(x) = x - max - log(sum(...)).
// Softmax over dim d of any rank: the reduced dim is moved last by a permuted view.
std::vector<TensorRef> softmax(Lowering &l, const Node &n, bool log) {
  const TensorRef &x = tensor_arg(l, n, "self");
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  size_t dim = x.rank() == 0 ? 0 : size_t(wrap_dim(n.args[1].integer(), x.rank()));
  // A 0-d input is a row of one: x - max is x - x, 0 for a finite x and NaN for an infinite
  // or NaN one, and so are log_softmax (0 - log(exp(0))) and softmax - 1 (exp(0) / exp(0)).
  if (x.rank() == 0)
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      int v = load_as(b, x, index, c);
      int shifted = b.binary(Op::Sub, v, v, c);
      return log ? shifted : b.unary(Op::Exp, shifted, c);
    })};
  // Stats keep every dim, with dim `dim` of size 1.
  SymShape stat_sizes = x.sizes;
  stat_sizes[dim] = 1;
  TensorType stat{c, stat_sizes, contiguous_strides(stat_sizes), out.device};
  auto in_index = [&](const std::vector<Expr> &xs, const std::vector<Expr> &r) {
    std::vector<Expr> index = xs;
    index[dim] = r[0];
    return index;
  };
  TensorRef max = l.reduction(stat, {x.sizes[dim]}, ReduceOp::Max, n.name + " max",
                              [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                                return load_as(b, x, in_index(xs, r), c);
                              })[0];
  TensorRef sum = l.reduction(stat, {x.sizes[dim]}, ReduceOp::Sum, n.name + " sum",
                              [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                                auto index = in_index(xs, r);
                                int shifted = b.binary(Op::Sub, load_as(b, x, index, c), load_stat(b, max, index), c);
                                return b.unary(Op::Exp, shifted, c);
                              })[0];
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int shifted = b.binary(Op::Sub, load_as(b, x, index, c), load_stat(b, max, index), c);
    int total = load_stat(b, sum, index);
    if (log) return b.binary(Op::Sub, shifted, b.unary(Op::Log, total, c), c);
    return b.binary(Op::TrueDiv, b.unary(Op::Exp, shifted, c), total, c);
  })};
}

// native_layer_norm: Welford over the normalized dims, then
// out = (x - mean) * rsqrt(var + eps) * weight + bias, with mean and rstd as outputs.
std::vector<TensorRef> layer_norm(Lowering &l, const Node &n, bool with_stats) {
  const TensorRef &x = tensor_arg(l, n, "input");
  auto weight = optional_tensor(l, n, "weight"), bias = optional_tensor(l, n, "bias");
  double eps = n.args[4].as<double>();
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  size_t axis = x.sizes.size() - n.args[1].as<ArgList>().size();
  RowStats s = row_stats(x, axis, c, out.device);
  auto w = l.reduction(s.type, s.reduced, ReduceOp::Welford, n.name + " stats",
                       [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                         return load_as(b, x, row_index(s, xs, r), c);
                       });
  // rstd = rsqrt(m2 / count + eps), the biased variance.
  auto rstd_of = [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int var = b.binary(Op::TrueDiv, load_stat(b, w[1], index), load_stat(b, w[2], index), c);
    return b.unary(Op::Rsqrt, b.binary(Op::Add, var, b.constant(eps, c), c), c);
  };
  TensorRef y = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int v = b.binary(Op::Sub, load_as(b, x, index, c), load_stat(b, w[0], index), c);
    v = b.binary(Op::Mul, v, rstd_of(b, index), c);
    if (weight) v = b.binary(Op::Mul, v, load_as(b, *weight, index, c), c);
    if (bias) v = b.binary(Op::Add, v, load_as(b, *bias, index, c), c);
    return v;
  });
  if (!with_stats) return {y};
  TensorRef mean = l.pointwise(l.graph().type(n.outputs[1]), n.name + " mean",
                               [&](BodyBuilder &b, const std::vector<Expr> &index) { return load_stat(b, w[0], index); });
  TensorRef rstd = l.pointwise(l.graph().type(n.outputs[2]), n.name + " rstd", rstd_of);
  return {y, mean, rstd};
}

// Batch norm over dim 1: (x - mean) * invstd * weight + bias, per channel. In inference
// the running statistics, invstd = rsqrt(running_var + eps); in training the batch's, by
// Welford over every dim but 1. The functional form also returns the running statistics
// moved towards the batch's by momentum (the variance unbiased, as eager updates it).
std::vector<TensorRef> batch_norm(Lowering &l, const Node &n, std::optional<bool> fixed_training, bool functional) {
  const TensorRef &x = tensor_arg(l, n, "input");
  auto weight = optional_tensor(l, n, "weight"), bias = optional_tensor(l, n, "bias");
  std::optional<TensorRef> running_mean, running_var;
  if (n.op->schema.find_arg("running_mean") >= 0) running_mean = tensor_arg(l, n, "running_mean"), running_var = tensor_arg(l, n, "running_var");
  bool training = fixed_training ? *fixed_training : arg(n, "training").as<bool>();
  double eps = arg(n, "eps").as<double>();
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  auto channel = [](const TensorRef &p, const std::vector<Expr> &index, BodyBuilder &b, DType t) {
    return b.cast(b.load(p.buffer, Lowering::offset(p, {index[1]}), p.dtype), t);
  };
  Shape channels = {x.sizes[1]};
  TensorType per_channel{c, channels, contiguous_strides(channels), out.device};
  auto at_channel = [](const std::vector<Expr> &index) { return std::vector<Expr>{Expr(0), index[0]}; };
  // The mean and variance normalized with, per channel, in c.
  TensorRef mean, var;
  int64_t count = 1;
  if (training) {
    Shape reduced;
    for (size_t d = 0; d < x.sizes.size(); ++d)
      if (d != 1) reduced.push_back(x.sizes[d]), count *= x.sizes[d];
    auto w = l.reduction(per_channel, reduced, ReduceOp::Welford, n.name + " stats",
                         [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                           std::vector<Expr> index = r;
                           index.insert(index.begin() + 1, xs[0]);
                           return load_as(b, x, index, c);
                         });
    mean = w[0];
    var = l.pointwise(per_channel, n.name + " var", [&](BodyBuilder &b, const std::vector<Expr> &index) {
      return b.binary(Op::TrueDiv, load_stat(b, w[1], index), load_stat(b, w[2], index), c);
    });
  } else {
    mean = *running_mean;
    var = *running_var;
  }
  // 1/sqrt(var + eps) once per channel, as eager computes invstd apart: a value of its own
  // that the inliner keeps (scheduler/inline.cpp), not a square root and a division per element.
  TensorRef invstd = l.pointwise(per_channel, n.name + " invstd", [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int v = b.binary(Op::Add, channel(var, at_channel(index), b, c), b.constant(eps, c), c);
    return b.unary(Op::Rsqrt, v, c);
  });
  TensorRef y = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int v = b.binary(Op::Sub, load_as(b, x, index, c), channel(mean, index, b, c), c);
    v = b.binary(Op::Mul, v, channel(invstd, index, b, c), c);
    if (weight) v = b.binary(Op::Mul, v, channel(*weight, index, b, c), c);
    if (bias) v = b.binary(Op::Add, v, channel(*bias, index, b, c), c);
    return v;
  });
  // The saved statistics: mean and invstd, or empty (inference on the CPU).
  std::vector<TensorRef> outs = {y};
  for (size_t i = 1; i < 3; ++i) {
    const TensorType &type = l.graph().type(n.outputs[i]);
    const TensorRef &stat = i == 1 ? mean : invstd;
    outs.push_back(l.pointwise(type, n.name + (i == 1 ? " save_mean" : " save_invstd"),
                               [&](BodyBuilder &b, const std::vector<Expr> &index) {
                                 return checked_numel(type.sizes) == 0 ? b.constant(0, type.dtype)
                                                                       : channel(stat, at_channel(index), b, type.dtype);
                               }));
  }
  if (!functional) return outs;
  // _batch_norm_with_update_functional has a fourth output before the running statistics: the
  // reserve a cuDNN kernel keeps for its backward, empty (coil's backward needs none).
  size_t first_running = n.outputs.size() == 6 ? 4 : 3;
  if (first_running == 4) outs.push_back(l.fill(l.graph().type(n.outputs[3]), n.name + " reserve"));
  double momentum = arg(n, "momentum").as<double>();
  double unbiased = double(count) / double(count - 1);  // inf for one value: 0 * inf, NaN, as eager's 0 / 0
  for (size_t i = first_running; i < first_running + 2; ++i) {
    const TensorType &type = l.graph().type(n.outputs[i]);
    bool is_mean = i == first_running;
    const TensorRef &old = is_mean ? *running_mean : *running_var;
    outs.push_back(l.pointwise(type, n.name + (is_mean ? " running_mean" : " running_var"),
                               [&](BodyBuilder &b, const std::vector<Expr> &index) {
                                 int before = channel(old, at_channel(index), b, c);
                                 if (!training) return before;
                                 int batch = channel(is_mean ? mean : var, at_channel(index), b, c);
                                 if (!is_mean) batch = b.binary(Op::Mul, batch, b.constant(unbiased, c), c);
                                 int kept = b.binary(Op::Mul, before, b.constant(1 - momentum, c), c);
                                 return b.binary(Op::Add, kept, b.binary(Op::Mul, batch, b.constant(momentum, c), c), c);
                               }));
  }
  return outs;
}

bool asked(const Node &n, size_t i) { return arg(n, "output_mask").as<ArgList>().at(i).as<bool>(); }

// native_layer_norm_backward (as every backward op here: an output output_mask leaves out
// is a fill no getitem reads, which dead-code elimination drops): with x^ = (x - mean) * rstd and g = grad_out * weight over
// rows of N elements, grad_input = rstd / N * (N g - sum(g) - x^ sum(g x^)); grad_weight and
// grad_bias sum grad_out x^ and grad_out over the leading dims, in opmath.
std::vector<TensorRef> layer_norm_backward(Lowering &l, const Node &n) {
  const TensorRef &dy = tensor_arg(l, n, "grad_out"), &x = tensor_arg(l, n, "input");
  const TensorRef &mean = tensor_arg(l, n, "mean"), &rstd = tensor_arg(l, n, "rstd");
  auto weight = optional_tensor(l, n, "weight");
  const TensorType &dx_type = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(x.dtype);
  size_t axis = x.sizes.size() - arg(n, "normalized_shape").as<ArgList>().size();
  RowStats s = row_stats(x, axis, c, dx_type.device);
  SymInt count = 1;
  for (const SymInt &d : s.reduced) count *= d;
  auto xhat = [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int centered = b.binary(Op::Sub, load_as(b, x, index, c), load_as(b, mean, index, c), c);
    return b.binary(Op::Mul, centered, load_as(b, rstd, index, c), c);
  };
  auto g = [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int v = load_as(b, dy, index, c);
    return weight ? b.binary(Op::Mul, v, load_as(b, *weight, index, c), c) : v;
  };
  std::vector<TensorRef> outs;
  if (asked(n, 0)) {
    TensorRef sum_g = l.reduction(s.type, s.reduced, ReduceOp::Sum, n.name + " sum",
                                  [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                                    return g(b, row_index(s, xs, r));
                                  })[0];
    TensorRef sum_gx = l.reduction(s.type, s.reduced, ReduceOp::Sum, n.name + " sum x",
                                   [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                                     auto index = row_index(s, xs, r);
                                     return b.binary(Op::Mul, g(b, index), xhat(b, index), c);
                                   })[0];
    outs.push_back(l.pointwise(dx_type, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      int v = b.binary(Op::Mul, g(b, index), size_value(b, count, c), c);
      v = b.binary(Op::Sub, v, load_stat(b, sum_g, index), c);
      v = b.binary(Op::Sub, v, b.binary(Op::Mul, xhat(b, index), load_stat(b, sum_gx, index), c), c);
      return b.binary(Op::Mul, v, b.binary(Op::TrueDiv, load_as(b, rstd, index, c), size_value(b, count, c), c), c);
    }));
  } else {
    outs.push_back(l.fill(l.graph().type(n.outputs[0]), n.name + " (not asked)"));
  }
  // grad_weight, grad_bias: over the leading dims, for each element of the normalized shape.
  SymShape leading(x.sizes.begin(), x.sizes.begin() + long(axis));
  bool whole = leading.empty();  // every dim normalized: one row, a reduction over one element
  if (whole) leading = {1};
  for (size_t i = 1; i < 3; ++i) {
    if (!asked(n, i)) {
      outs.push_back(l.fill(l.graph().type(n.outputs[i]), n.name + " (not asked)"));
      continue;
    }
    outs.push_back(l.reduction(l.graph().type(n.outputs[i]), leading, ReduceOp::Sum, n.name + (i == 1 ? " weight" : " bias"),
                               [&](BodyBuilder &b, const std::vector<Expr> &xs, const std::vector<Expr> &r) {
                                 std::vector<Expr> index = whole ? std::vector<Expr>{} : r;
                                 index.insert(index.end(), xs.begin(), xs.end());
                                 int v = load_as(b, dy, index, c);
                                 return i == 1 ? b.binary(Op::Mul, v, xhat(b, index), c) : v;
                               })[0]);
  }
  return outs;
}

// native_group_norm: per (n, g), Welford over the group's channels and spatial
// positions; out = (x - mean) * rstd * weight[c] + bias[c].
std::vector<TensorRef> group_norm(Lowering &l, const Node &n) {
  const TensorRef &x = l.ref(arg(n, "input").as<ValueId>());
  auto opt = [&](const char *name) -> std::optional<TensorRef> {
    const Arg &a = arg(n, name);
    if (a.is_none()) return std::nullopt;
    return l.ref(a.as<ValueId>());
  };
  auto weight = opt("weight"), bias = opt("bias");
  int64_t groups = arg(n, "group").integer();
  double eps = arg(n, "eps").as<double>();
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  int64_t batch = x.sizes[0], channels = x.sizes[1], per_group = channels / groups;
  Shape spatial(x.sizes.begin() + 2, x.sizes.end());
  Shape reduced = {per_group};
  reduced.insert(reduced.end(), spatial.begin(), spatial.end());
  TensorType stat{c, Shape{batch, groups}, contiguous_strides(Shape{batch, groups}), out.device};
  auto w = l.reduction(stat, reduced, ReduceOp::Welford, n.name + " stats",
                       [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                         std::vector<Expr> index = {o[0], o[1] * per_group + r[0]};
                         index.insert(index.end(), r.begin() + 1, r.end());
                         return b.cast(b.load(x.buffer, Lowering::offset(x, index), x.dtype), c);
                       });
  auto stat_at = [&](BodyBuilder &b, const TensorRef &s, const Expr &nb, const Expr &g) {
    return b.load(s.buffer, Lowering::offset(s, {nb, g}), c);
  };
  // rstd once per (n, g), a value of its own that y reads (the inliner keeps it: a square
  // root and a division per group, not per element).
  TensorRef mean = l.pointwise(l.graph().type(n.outputs[1]), n.name + " mean",
                               [&](BodyBuilder &b, const std::vector<Expr> &o) { return stat_at(b, w[0], o[0], o[1]); });
  TensorRef rstd_c = l.pointwise(stat, n.name + " rstd", [&](BodyBuilder &b, const std::vector<Expr> &o) {
    int var = b.binary(Op::TrueDiv, stat_at(b, w[1], o[0], o[1]), stat_at(b, w[2], o[0], o[1]), c);
    return b.unary(Op::Rsqrt, b.binary(Op::Add, var, b.constant(eps, c), c), c);
  });
  TensorRef rstd = l.pointwise(l.graph().type(n.outputs[2]), n.name + " rstd",
                               [&](BodyBuilder &b, const std::vector<Expr> &o) { return stat_at(b, rstd_c, o[0], o[1]); });
  TensorRef y = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    Expr g = ir::floor_div(index[1], per_group);
    int v = b.binary(Op::Sub, b.cast(b.load(x.buffer, Lowering::offset(x, index), x.dtype), c),
                     stat_at(b, w[0], index[0], g), c);
    v = b.binary(Op::Mul, v, stat_at(b, rstd_c, index[0], g), c);
    auto channel = [&](const TensorRef &p) { return b.cast(b.load(p.buffer, Lowering::offset(p, {index[1]}), p.dtype), c); };
    if (weight) v = b.binary(Op::Mul, v, channel(*weight), c);
    if (bias) v = b.binary(Op::Add, v, channel(*bias), c);
    return v;
  });
  return {y, mean, rstd};
}

// native_group_norm_backward: per (n, group) of D elements, with x^ = (x - mean) * rstd and
// g = grad_out * weight[c], grad_input = rstd / D * (D g - sum(g) - x^ sum(g x^)); grad_weight
// and grad_bias sum grad_out x^ and grad_out per channel over the batch and positions.
std::vector<TensorRef> group_norm_backward(Lowering &l, const Node &n) {
  const TensorRef &dy = l.ref(arg(n, "grad_out").as<ValueId>()), &x = l.ref(arg(n, "input").as<ValueId>());
  const TensorRef &mean = l.ref(arg(n, "mean").as<ValueId>()), &rstd = l.ref(arg(n, "rstd").as<ValueId>());
  const Arg &weight_arg = arg(n, "weight");
  std::optional<TensorRef> weight;
  if (!weight_arg.is_none()) weight = l.ref(weight_arg.as<ValueId>());
  int64_t groups = arg(n, "group").integer();
  const ArgList &mask = arg(n, "output_mask").as<ArgList>();
  DType c = opmath_dtype(x.dtype);
  int64_t batch = x.sizes[0], channels = x.sizes[1], per_group = channels / groups;
  Shape spatial(x.sizes.begin() + 2, x.sizes.end());
  int64_t count = per_group;
  for (int64_t d : spatial) count *= d;
  Device device = l.graph().type(n.outputs[0]).device;
  auto load = [&](BodyBuilder &b, const TensorRef &t, const std::vector<Expr> &index) {
    return b.cast(b.load(t.buffer, Lowering::offset(t, index), t.dtype), c);
  };
  // The element of x at (n, c, spatial...) and its group's statistics.
  auto xhat = [&](BodyBuilder &b, const std::vector<Expr> &index) {
    std::vector<Expr> stat = {index[0], ir::floor_div(index[1], per_group)};
    int centered = b.binary(Op::Sub, load(b, x, index), load(b, mean, stat), c);
    return b.binary(Op::Mul, centered, load(b, rstd, stat), c);
  };
  auto g = [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int v = load(b, dy, index);
    return weight ? b.binary(Op::Mul, v, load(b, *weight, {index[1]}), c) : v;
  };
  std::vector<TensorRef> outs;
  if (mask[0].as<bool>()) {
    TensorType stat{c, Shape{batch, groups}, contiguous_strides(Shape{batch, groups}), device};
    Shape reduced = {per_group};
    reduced.insert(reduced.end(), spatial.begin(), spatial.end());
    auto group_sum = [&](const std::string &origin, bool times_xhat) {
      return l.reduction(stat, reduced, ReduceOp::Sum, origin,
                         [&, times_xhat](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                           std::vector<Expr> index = {o[0], o[1] * per_group + r[0]};
                           index.insert(index.end(), r.begin() + 1, r.end());
                           int v = g(b, index);
                           return times_xhat ? b.binary(Op::Mul, v, xhat(b, index), c) : v;
                         })[0];
    };
    TensorRef sum_g = group_sum(n.name + " sum", false), sum_gx = group_sum(n.name + " sum x", true);
    outs.push_back(l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      std::vector<Expr> stat_at = {index[0], ir::floor_div(index[1], per_group)};
      int v = b.binary(Op::Mul, g(b, index), size_value(b, count, c), c);
      v = b.binary(Op::Sub, v, load(b, sum_g, stat_at), c);
      v = b.binary(Op::Sub, v, b.binary(Op::Mul, xhat(b, index), load(b, sum_gx, stat_at), c), c);
      return b.binary(Op::Mul, v, b.binary(Op::TrueDiv, load(b, rstd, stat_at), b.constant(double(count), c), c), c);
    }));
  } else {
    outs.push_back(l.fill(l.graph().type(n.outputs[0]), n.name + " (not asked)"));
  }
  Shape reduced = {batch};
  reduced.insert(reduced.end(), spatial.begin(), spatial.end());
  for (size_t i = 1; i < 3; ++i) {
    if (!mask[i].as<bool>()) {
      outs.push_back(l.fill(l.graph().type(n.outputs[i]), n.name + " (not asked)"));
      continue;
    }
    outs.push_back(l.reduction(l.graph().type(n.outputs[i]), reduced, ReduceOp::Sum, n.name + (i == 1 ? " weight" : " bias"),
                               [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                 std::vector<Expr> index = {r[0], o[0]};
                                 index.insert(index.end(), r.begin() + 1, r.end());
                                 int v = load(b, dy, index);
                                 return i == 1 ? b.binary(Op::Mul, v, xhat(b, index), c) : v;
                               })[0]);
  }
  return outs;
}

}  // namespace

void add_norm_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten._softmax.default"] = [](Lowering &l, const Node &n) { return softmax(l, n, false); };
  t["aten._log_softmax.default"] = [](Lowering &l, const Node &n) { return softmax(l, n, true); };
  t["aten.softmax.int"] = [](Lowering &l, const Node &n) { return softmax(l, n, false); };
  t["aten.log_softmax.int"] = [](Lowering &l, const Node &n) { return softmax(l, n, true); };
  t["aten.native_layer_norm.default"] = [](Lowering &l, const Node &n) { return layer_norm(l, n, true); };
  // layer_norm as torch.export keeps it: native_layer_norm's normalized output alone.
  t["aten.layer_norm.default"] = [](Lowering &l, const Node &n) { return layer_norm(l, n, false); };
  t["aten._native_batch_norm_legit_no_training.default"] = [](Lowering &l, const Node &n) {
    return batch_norm(l, n, false, false);
  };
  t["aten._native_batch_norm_legit.no_stats"] = [](Lowering &l, const Node &n) {
    return batch_norm(l, n, std::nullopt, false);
  };
  t["aten._native_batch_norm_legit_functional.default"] = [](Lowering &l, const Node &n) {
    return batch_norm(l, n, std::nullopt, true);
  };
  t["aten._batch_norm_with_update_functional.default"] = [](Lowering &l, const Node &n) {
    return batch_norm(l, n, true, true);
  };
  t["aten.native_layer_norm_backward.default"] = layer_norm_backward;
  t["aten.native_group_norm.default"] = group_norm;
  t["aten.native_group_norm_backward.default"] = group_norm_backward;
}

}  // namespace coil::lowering
