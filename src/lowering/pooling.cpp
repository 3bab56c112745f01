// Pooling as reductions over each output's window (unrolled into a pointwise body when the
// window is small), with masked loads where a window reaches into padding; adaptive pooling
// reduces over the largest window and masks the rest. Group norm is here too: a Welford reduction per (batch, group).
#include <array>
#include <cmath>
#include <functional>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;
using ir::ReduceOp;

/// A pooling parameter as two values: [] gives `fallback`, one value is repeated.
std::array<int64_t, 2> pair(const Node &n, const char *name, std::array<int64_t, 2> fallback) {
  std::vector<int64_t> v;
  for (const Arg &a : arg(n, name).as<ArgList>()) v.push_back(a.as<int64_t>());
  if (v.empty()) return fallback;
  if (v.size() == 1) return {v[0], v[0]};
  return {v[0], v[1]};
}

struct Window {
  std::array<int64_t, 2> kernel, stride, padding, dilation;
};

Window window_of(const Node &n) {
  Window w;
  w.kernel = pair(n, "kernel_size", {1, 1});
  w.stride = pair(n, "stride", w.kernel);
  w.padding = pair(n, "padding", {0, 0});
  int d = n.op->schema.find_arg("dilation");
  w.dilation = d >= 0 ? pair(n, "dilation", {1, 1}) : std::array<int64_t, 2>{1, 1};
  return w;
}

/// The input position (h, w) that window element (r0, r1) of output (oh, ow) reads.
std::array<Expr, 2> window_pos(const Window &w, const Expr &oh, const Expr &ow, const Expr &r0, const Expr &r1) {
  return {oh * w.stride[0] - w.padding[0] + r0 * w.dilation[0], ow * w.stride[1] - w.padding[1] + r1 * w.dilation[1]};
}

/// 0 <= pos < size for both spatial positions.
int inside(BodyBuilder &b, const std::array<Expr, 2> &pos, const TensorRef &x) {
  int ok = -1;
  for (size_t k = 0; k < 2; ++k) {
    int p = b.index(pos[k], DType::I64);
    int in = b.binary(Op::LogicalAnd, b.binary(Op::Ge, p, b.constant(0, DType::I64), DType::Bool),
                      b.binary(Op::Lt, p, b.constant(double(x.sizes[x.sizes.size() - 2 + k]), DType::I64), DType::Bool),
                      DType::Bool);
    ok = ok < 0 ? in : b.binary(Op::LogicalAnd, ok, in, DType::Bool);
  }
  return ok;
}

/// Loads x at the leading output dims and spatial `pos`, `fill` outside the input.
int load_window(BodyBuilder &b, const TensorRef &x, const std::vector<Expr> &out, const std::array<Expr, 2> &pos,
                double fill, DType as) {
  std::vector<Expr> index(out.begin(), out.end() - 2);
  index.push_back(pos[0]);
  index.push_back(pos[1]);
  int ok = inside(b, pos, x);
  int v = b.cast(b.masked_load(x.buffer, Lowering::offset(x, index), x.dtype, ok, fill), as);
  return b.where(ok, v, b.constant(fill, as), as);
}

using WindowBody = std::function<int(BodyBuilder &, const std::vector<Expr> &out, const std::vector<Expr> &r)>;
using WindowTotal = std::function<int(BodyBuilder &, const std::vector<Expr> &out)>;

/// Windows of at most this many elements are unrolled into the pointwise body that
/// uses their sum (or maximum): no reduction loop, and the pooling fuses like an
/// elementwise op.
constexpr int64_t kUnrolledWindow = 25;

/// The sum (`op` Sum) or maximum (Max, NaN winning as in max_pool2d) over each output's
/// window of `body`, as a function the output's pointwise body calls: unrolled for small
/// windows, else a Reduction node whose result it loads.
WindowTotal window_fold(Lowering &l, const TensorType &type, const Shape &window, ReduceOp op, const std::string &origin,
                        const WindowBody &body) {
  int64_t size = window.empty() ? 1 : window[0] * window[1];
  if (size > kUnrolledWindow || size == 0) {
    TensorRef total = l.reduction(type, window, op, origin, body)[0];
    return [total](BodyBuilder &b, const std::vector<Expr> &o) {
      return b.load(total.buffer, Lowering::offset(total, o), total.dtype);
    };
  }
  Op combine = op == ReduceOp::Max ? Op::Maximum : Op::Add;
  return [window, body, combine, dtype = type.dtype](BodyBuilder &b, const std::vector<Expr> &o) {
    int total = -1;
    for (int64_t i = 0; i < window[0]; ++i)
      for (int64_t j = 0; j < window[1]; ++j) {
        int v = body(b, o, {Expr(i), Expr(j)});
        total = total < 0 ? v : b.binary(combine, total, v, dtype);
      }
    return total;
  };
}

std::vector<TensorRef> max_pool(Lowering &l, const Node &n, bool with_indices) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  Window w = window_of(n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  auto body = [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
    auto pos = window_pos(w, o[o.size() - 2], o[o.size() - 1], r[0], r[1]);
    return load_window(b, x, o, pos, -INFINITY, x.dtype);
  };
  Shape reduced = {w.kernel[0], w.kernel[1]};
  WindowTotal maximum = window_fold(l, out, reduced, ReduceOp::Max, n.name, body);
  TensorRef values = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) { return maximum(b, o); });
  if (!with_indices) return {values};
  TensorType pos_type = l.graph().type(n.outputs[1]);
  TensorRef position = l.reduction(pos_type, reduced, ReduceOp::ArgMax, n.name + " argmax", body)[0];
  // The index of the maximum within its input plane: h * W + w.
  int64_t width = x.sizes.back();
  TensorRef indices = l.pointwise(pos_type, n.name + " indices", [&](BodyBuilder &b, const std::vector<Expr> &o) {
    int p = b.load(position.buffer, Lowering::offset(position, o), DType::I64);
    int kh = b.binary(Op::FloorDiv, p, b.constant(double(w.kernel[1]), DType::I64), DType::I64);
    int kw = b.binary(Op::Remainder, p, b.constant(double(w.kernel[1]), DType::I64), DType::I64);
    auto start = window_pos(w, o[o.size() - 2], o[o.size() - 1], Expr(0), Expr(0));
    auto along = [&](int k, int idx) {
      int scaled = b.binary(Op::Mul, k, b.constant(double(w.dilation[size_t(idx)]), DType::I64), DType::I64);
      return b.binary(Op::Add, b.index(start[size_t(idx)], DType::I64), scaled, DType::I64);
    };
    int h = along(kh, 0), wpos = along(kw, 1);
    return b.binary(Op::Add, b.binary(Op::Mul, h, b.constant(double(width), DType::I64), DType::I64), wpos, DType::I64);
  });
  return {values, indices};
}

// avg_pool2d divides by the window clipped to the padded input (count_include_pad) or
// to the input itself, unless divisor_override says otherwise.
std::vector<TensorRef> avg_pool(Lowering &l, const Node &n) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  Window w = window_of(n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, {w.kernel[0], w.kernel[1]}, ReduceOp::Sum, n.name + " sum",
                               [&x, w, c](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                 return load_window(b, x, o, window_pos(w, o[o.size() - 2], o[o.size() - 1], r[0], r[1]),
                                                    0, c);
                               });
  bool include_pad = arg(n, "count_include_pad").as<bool>();
  const Arg &override_arg = arg(n, "divisor_override");
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    int total = sum(b, o);
    if (!override_arg.is_none()) return b.binary(Op::TrueDiv, total, b.constant(double(override_arg.as<int64_t>()), c), c);
    Expr count = 1;
    for (size_t k = 0; k < 2; ++k) {
      int64_t size = x.sizes[x.sizes.size() - 2 + k];
      Expr start = o[o.size() - 2 + k] * w.stride[k] - w.padding[k];
      Expr end = ir::min(start + w.kernel[k], Expr(size + w.padding[k]));
      if (!include_pad) {
        start = ir::max(start, Expr(0));
        end = ir::min(end, Expr(size));
      }
      count = count * (end - start);
    }
    return b.binary(Op::TrueDiv, total, b.index(count, c), c);
  })};
}

// Adaptive average pooling: output o of a dim of input size I and output size O
// averages [floor(o*I/O), ceil((o+1)*I/O)).
std::vector<TensorRef> adaptive_avg_pool(Lowering &l, const Node &n) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  size_t rank = x.sizes.size();
  std::array<int64_t, 2> in = {x.sizes[rank - 2], x.sizes[rank - 1]}, outs = {out.sizes[rank - 2], out.sizes[rank - 1]};
  auto bounds = [&](const Expr &o, size_t k) {
    Expr start = ir::floor_div(o * in[k], outs[k]);
    Expr end = ir::floor_div((o + 1) * in[k] + outs[k] - 1, outs[k]);
    return std::pair{start, end};
  };
  Shape reduced;
  for (size_t k = 0; k < 2; ++k) reduced.push_back(outs[k] == 0 ? 0 : (in[k] + outs[k] - 1) / outs[k] + 1);
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, reduced, ReduceOp::Sum, n.name + " sum",
                              [&x, bounds, rank, c](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                std::vector<Expr> index(o.begin(), o.end() - 2);
                                int ok = -1;
                                for (size_t k = 0; k < 2; ++k) {
                                  auto [start, end] = bounds(o[rank - 2 + k], k);
                                  index.push_back(start + r[k]);
                                  int p = b.index(start + r[k], DType::I64);
                                  int in_window = b.binary(Op::Lt, p, b.index(end, DType::I64), DType::Bool);
                                  ok = ok < 0 ? in_window : b.binary(Op::LogicalAnd, ok, in_window, DType::Bool);
                                }
                                int v = b.cast(b.masked_load(x.buffer, Lowering::offset(x, index), x.dtype, ok, 0), c);
                                return b.where(ok, v, b.constant(0, c), c);
                              });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    Expr count = 1;
    for (size_t k = 0; k < 2; ++k) {
      auto [start, end] = bounds(o[rank - 2 + k], k);
      count = count * (end - start);
    }
    return b.binary(Op::TrueDiv, sum(b, o), b.index(count, c), c);
  })};
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
  int64_t groups = arg(n, "group").as<int64_t>();
  double eps = arg(n, "eps").as<double>();
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  int64_t batch = x.sizes[0], channels = x.sizes[1], per_group = channels / groups;
  Shape spatial(x.sizes.begin() + 2, x.sizes.end());
  Shape reduced = {per_group};
  reduced.insert(reduced.end(), spatial.begin(), spatial.end());
  TensorType stat{c, {batch, groups}, contiguous_strides({batch, groups}), out.device};
  auto w = l.reduction(stat, reduced, ReduceOp::Welford, n.name + " stats",
                       [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                         std::vector<Expr> index = {o[0], o[1] * per_group + r[0]};
                         index.insert(index.end(), r.begin() + 1, r.end());
                         return b.cast(b.load(x.buffer, Lowering::offset(x, index), x.dtype), c);
                       });
  auto stat_at = [&](BodyBuilder &b, const TensorRef &s, const Expr &nb, const Expr &g) {
    return b.load(s.buffer, Lowering::offset(s, {nb, g}), c);
  };
  auto rstd_at = [&](BodyBuilder &b, const Expr &nb, const Expr &g) {
    int var = b.binary(Op::TrueDiv, stat_at(b, w[1], nb, g), stat_at(b, w[2], nb, g), c);
    return b.unary(Op::Rsqrt, b.binary(Op::Add, var, b.constant(eps, c), c), c);
  };
  TensorRef y = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    Expr g = ir::floor_div(index[1], per_group);
    int v = b.binary(Op::Sub, b.cast(b.load(x.buffer, Lowering::offset(x, index), x.dtype), c),
                     stat_at(b, w[0], index[0], g), c);
    v = b.binary(Op::Mul, v, rstd_at(b, index[0], g), c);
    auto channel = [&](const TensorRef &p) { return b.cast(b.load(p.buffer, Lowering::offset(p, {index[1]}), p.dtype), c); };
    if (weight) v = b.binary(Op::Mul, v, channel(*weight), c);
    if (bias) v = b.binary(Op::Add, v, channel(*bias), c);
    return v;
  });
  TensorRef mean = l.pointwise(l.graph().type(n.outputs[1]), n.name + " mean",
                               [&](BodyBuilder &b, const std::vector<Expr> &o) { return stat_at(b, w[0], o[0], o[1]); });
  TensorRef rstd = l.pointwise(l.graph().type(n.outputs[2]), n.name + " rstd",
                               [&](BodyBuilder &b, const std::vector<Expr> &o) { return rstd_at(b, o[0], o[1]); });
  return {y, mean, rstd};
}

}  // namespace

void add_pooling_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.max_pool2d_with_indices.default"] = [](Lowering &l, const Node &n) { return max_pool(l, n, true); };
  t["aten.max_pool2d.default"] = [](Lowering &l, const Node &n) { return max_pool(l, n, false); };
  t["aten.avg_pool2d.default"] = avg_pool;
  t["aten._adaptive_avg_pool2d.default"] = adaptive_avg_pool;
  t["aten.adaptive_avg_pool2d.default"] = adaptive_avg_pool;
  t["aten.native_group_norm.default"] = group_norm;
}

}  // namespace coil::lowering
