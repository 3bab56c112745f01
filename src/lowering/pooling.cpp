// Pooling as reductions over each output's window (unrolled into a pointwise body when the
// window is small), with masked loads where a window reaches into padding; adaptive pooling
// reduces over the largest window and masks the rest.
#include <array>
#include <cmath>
#include <functional>
#include <optional>

#include "graph/registry.h"
#include "lowering/lowering.h"
#include "support/int_math.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;
using ir::ReduceOp;

/// A pooling parameter as one value per spatial dim: [] gives `fallback`, one value is
/// repeated.
std::vector<int64_t> per_dim(const Node &n, const char *name, size_t dims, std::vector<int64_t> fallback) {
  std::vector<int64_t> v;
  for (const Arg &a : arg(n, name).as<ArgList>()) v.push_back(a.integer());
  if (v.empty()) return fallback;
  if (v.size() == 1) return std::vector<int64_t>(dims, v[0]);
  return v;
}

/// The window of a 2-d or 3-d pooling: one value per spatial dim.
struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
  size_t dims() const { return kernel.size(); }
};

Window window_of(const Node &n, size_t dims) {
  Window w;
  w.kernel = per_dim(n, "kernel_size", dims, std::vector<int64_t>(dims, 1));
  w.stride = per_dim(n, "stride", dims, w.kernel);
  w.padding = per_dim(n, "padding", dims, std::vector<int64_t>(dims, 0));
  int d = n.op->schema.find_arg("dilation");
  w.dilation = d >= 0 ? per_dim(n, "dilation", dims, std::vector<int64_t>(dims, 1)) : std::vector<int64_t>(dims, 1);
  return w;
}

/// The input position that window element `r` of output `o` (its trailing spatial dims) reads.
std::vector<Expr> window_pos(const Window &w, const std::vector<Expr> &o, const std::vector<Expr> &r) {
  std::vector<Expr> pos;
  size_t lead = o.size() - w.dims();
  for (size_t k = 0; k < w.dims(); ++k)
    pos.push_back(o[lead + k] * w.stride[k] - w.padding[k] + r[k] * w.dilation[k]);
  return pos;
}

/// 0 <= pos < size for every spatial position.
int inside(BodyBuilder &b, const std::vector<Expr> &pos, const TensorRef &x) {
  int ok = -1;
  for (size_t k = 0; k < pos.size(); ++k) {
    int p = b.index(pos[k], DType::I64);
    const SymInt &size = x.sizes[x.sizes.size() - pos.size() + k];
    int in = b.binary(Op::LogicalAnd, b.binary(Op::Ge, p, b.constant(0, DType::I64), DType::Bool),
                      b.binary(Op::Lt, p, size_value(b, size, DType::I64), DType::Bool), DType::Bool);
    ok = ok < 0 ? in : b.binary(Op::LogicalAnd, ok, in, DType::Bool);
  }
  return ok;
}

/// Loads x at the leading output dims and spatial `pos`, `fill` outside the input.
int load_window(BodyBuilder &b, const TensorRef &x, const std::vector<Expr> &out, const std::vector<Expr> &pos,
                double fill, DType as) {
  std::vector<Expr> index(out.begin(), out.end() - long(pos.size()));
  index.insert(index.end(), pos.begin(), pos.end());
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

/// Window position `flat` of `window`, counted row-major over its dims.
std::vector<Expr> window_point(const Shape &window, int64_t flat) {
  std::vector<Expr> r(window.size(), Expr(0));
  for (size_t k = window.size(); k-- > 0; flat /= window[k]) r[k] = Expr(flat % window[k]);
  return r;
}

/// The sum (`op` Sum) or maximum (Max, NaN winning as in max_pool2d) over each output's
/// window of `body`, as a function the output's pointwise body calls: unrolled for small
/// windows, else a Reduction node whose result it loads.
WindowTotal window_fold(Lowering &l, const TensorType &type, const Shape &window, ReduceOp op, const std::string &origin,
                        const WindowBody &body) {
  int64_t size = 1;
  for (int64_t k : window) size *= k;
  if (size > kUnrolledWindow || size == 0) {
    TensorRef total = l.reduction(type, window, op, origin, body)[0];
    return [total](BodyBuilder &b, const std::vector<Expr> &o) {
      return b.load(total.buffer, Lowering::offset(total, o), total.dtype);
    };
  }
  Op combine = op == ReduceOp::Max ? Op::Maximum : Op::Add;
  return [window, body, combine, size, dtype = type.dtype](BodyBuilder &b, const std::vector<Expr> &o) {
    int total = -1;
    for (int64_t flat = 0; flat < size; ++flat) {
      int v = body(b, o, window_point(window, flat));
      total = total < 0 ? v : b.binary(combine, total, v, dtype);
    }
    return total;
  };
}

/// Where each output's window has its maximum, as eager's max pooling finds it, in
/// row-major order over the window: the last NaN if the window holds one, else the first of
/// the largest (the window's first position when every element is -inf). A function the
/// output's pointwise body calls: for small windows (window_fold's) a chain over the window
/// that takes each element above the best so far, or NaN; else loading an ArgMax and, for
/// floats, the largest position of a NaN (reductions of one window, which fuse).
WindowTotal window_argmax(Lowering &l, const TensorType &type, const Shape &window, DType element,
                          const std::string &origin, const WindowBody &body) {
  int64_t size = 1;
  for (int64_t k : window) size *= k;
  if (size > 0 && size <= kUnrolledWindow)
    return [window, body, size, element](BodyBuilder &b, const std::vector<Expr> &o) {
      int best = body(b, o, window_point(window, 0)), at = b.constant(0, DType::I64);
      for (int64_t flat = 1; flat < size; ++flat) {
        int v = body(b, o, window_point(window, flat));
        int take = b.binary(Op::Gt, v, best, DType::Bool);
        if (is_floating(element)) take = b.binary(Op::LogicalOr, take, b.unary(Op::IsNan, v, DType::Bool), DType::Bool);
        best = b.where(take, v, best, element);
        at = b.where(take, b.constant(double(flat), DType::I64), at, DType::I64);
      }
      return at;
    };
  TensorRef first = l.reduction(type, window, ReduceOp::ArgMax, origin + " argmax", body)[0];
  if (!is_floating(element))
    return [first](BodyBuilder &b, const std::vector<Expr> &o) {
      return b.load(first.buffer, Lowering::offset(first, o), DType::I64);
    };
  TensorRef last_nan = l.reduction(type, window, ReduceOp::Max, origin + " last NaN",
                                   [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                     Expr flat = 0;
                                     for (size_t k = 0; k < window.size(); ++k) flat = flat * window[k] + r[k];
                                     int nan = b.unary(Op::IsNan, body(b, o, r), DType::Bool);
                                     return b.where(nan, b.index(flat, DType::I64), b.constant(-1, DType::I64), DType::I64);
                                   })[0];
  return [first, last_nan](BodyBuilder &b, const std::vector<Expr> &o) {
    int p = b.load(first.buffer, Lowering::offset(first, o), DType::I64);
    int q = b.load(last_nan.buffer, Lowering::offset(last_nan, o), DType::I64);
    return b.where(b.binary(Op::Ge, q, b.constant(0, DType::I64), DType::Bool), q, p, DType::I64);
  };
}

/// Where window element `p` (row-major over `window`) lies in the input plane (volume) of
/// spatial sizes `plane`, row-major: along dim k, start(k) + the k-th digit of p times
/// `dilation[k]`; h * W + w in 2-d. What max pooling's indices output holds.
int plane_position(BodyBuilder &b, int p, const Shape &window, const SymShape &plane, const Shape &dilation,
                   const std::function<int(size_t)> &start) {
  auto c = [&](int64_t v) { return b.constant(double(v), DType::I64); };
  size_t dims = window.size();
  std::vector<int> along(dims);
  for (size_t k = dims; k-- > 0;) {
    int digit = b.binary(Op::Remainder, p, c(window[k]), DType::I64);
    p = b.binary(Op::FloorDiv, p, c(window[k]), DType::I64);
    along[k] = b.binary(Op::Add, start(k), b.binary(Op::Mul, digit, c(dilation[k]), DType::I64), DType::I64);
  }
  int flat = along[0];
  for (size_t k = 1; k < dims; ++k)
    flat = b.binary(Op::Add, b.binary(Op::Mul, flat, size_value(b, plane[k], DType::I64), DType::I64), along[k], DType::I64);
  return flat;
}

/// Max pooling's values; with_indices: and where each maximum lies, as PyTorch's i64 index
/// within the input plane, or (offsets: coil.max_pool2d_with_offsets) as its i8 offset
/// within the window, row-major.
std::vector<TensorRef> max_pool(Lowering &l, const Node &n, size_t dims, bool with_indices, bool offsets = false) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  Window w = window_of(n, dims);
  const TensorType &out = l.graph().type(n.outputs[0]);
  auto body = [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
    return load_window(b, x, o, window_pos(w, o, r), -INFINITY, x.dtype);
  };
  Shape reduced = w.kernel;
  WindowTotal maximum = window_fold(l, out, reduced, ReduceOp::Max, n.name, body);
  TensorRef values = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) { return maximum(b, o); });
  if (!with_indices) return {values};
  TensorType pos_type = l.graph().type(n.outputs[1]);
  WindowTotal position = window_argmax(l, pos_type, reduced, x.dtype, n.name, body);
  if (offsets)
    return {values, l.pointwise(pos_type, n.name + " offsets", [&](BodyBuilder &b, const std::vector<Expr> &o) {
              return b.cast(position(b, o), DType::I8);
            })};
  // The index of the maximum within its input plane (volume): row-major over the spatial
  // dims, h * W + w in 2-d. The position counts row-major over the window's dims.
  TensorRef indices = l.pointwise(pos_type, n.name + " indices", [&](BodyBuilder &b, const std::vector<Expr> &o) {
    std::vector<Expr> start = window_pos(w, o, std::vector<Expr>(dims, Expr(0)));
    return plane_position(b, position(b, o), w.kernel, SymShape(x.sizes.end() - long(dims), x.sizes.end()), w.dilation,
                          [&](size_t k) { return b.index(start[k], DType::I64); });
  });
  return {values, indices};
}

// avg_pool2d and avg_pool3d divide by the window clipped to the padded input
// (count_include_pad) or to the input itself, unless divisor_override says otherwise.
std::vector<TensorRef> avg_pool(Lowering &l, const Node &n, size_t dims) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  Window w = window_of(n, dims);
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, w.kernel, ReduceOp::Sum, n.name + " sum",
                               [&x, w, c](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                 return load_window(b, x, o, window_pos(w, o, r), 0, c);
                               });
  bool include_pad = arg(n, "count_include_pad").as<bool>();
  const Arg &override_arg = arg(n, "divisor_override");
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    int total = sum(b, o);
    if (!override_arg.is_none()) return b.binary(Op::TrueDiv, total, b.constant(double(override_arg.integer()), c), c);
    Expr count = 1;
    for (size_t k = 0; k < dims; ++k) {
      const SymInt &size = x.sizes[x.sizes.size() - dims + k];
      Expr start = o[o.size() - dims + k] * w.stride[k] - w.padding[k];
      Expr end = ir::min(start + w.kernel[k], (size + w.padding[k]).expr());
      if (!include_pad) {
        start = ir::max(start, Expr(0));
        end = ir::min(end, size.expr());
      }
      count = count * (end - start);
    }
    return b.binary(Op::TrueDiv, total, b.index(count, c), c);
  })};
}

// Adaptive pooling (2-d and 3-d): output o of a dim of input size I and output size O
// covers [floor(o*I/O), ceil((o+1)*I/O)), each window walked in a box of the largest
// window's size with the part past its end masked.
struct AdaptiveWindows {
  Shape in, outs, box;
  size_t rank, dims;

  AdaptiveWindows(const TensorRef &x, const TensorType &out, size_t dims)
      : in(x.sizes.end() - long(dims), x.sizes.end()), outs(out.sizes.end() - long(dims), out.sizes.end()),
        rank(x.sizes.size()), dims(dims) {
    for (size_t k = 0; k < dims; ++k) box.push_back(outs[k] == 0 ? 0 : (in[k] + outs[k] - 1) / outs[k] + 1);
  }
  std::pair<Expr, Expr> bounds(const Expr &o, size_t k) const {
    return {ir::floor_div(o * in[k], outs[k]), ir::floor_div((o + 1) * in[k] + outs[k] - 1, outs[k])};
  }
  /// x at output o's window position r, `fill` past the window's end, in `as`.
  int load(BodyBuilder &b, const TensorRef &x, const std::vector<Expr> &o, const std::vector<Expr> &r, double fill,
           DType as) const {
    std::vector<Expr> index(o.begin(), o.end() - long(dims));
    int ok = -1;
    for (size_t k = 0; k < dims; ++k) {
      auto [start, end] = bounds(o[rank - dims + k], k);
      index.push_back(start + r[k]);
      int in_window = b.binary(Op::Lt, b.index(start + r[k], DType::I64), b.index(end, DType::I64), DType::Bool);
      ok = ok < 0 ? in_window : b.binary(Op::LogicalAnd, ok, in_window, DType::Bool);
    }
    int v = b.cast(b.masked_load(x.buffer, Lowering::offset(x, index), x.dtype, ok, fill), as);
    return b.where(ok, v, b.constant(fill, as), as);
  }
};

// Adaptive average pooling: each window's mean.
std::vector<TensorRef> adaptive_avg_pool(Lowering &l, const Node &n, size_t dims) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  AdaptiveWindows w(x, out, dims);
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, w.box, ReduceOp::Sum, n.name + " sum",
                                [&x, &w, c](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                  return w.load(b, x, o, r, 0, c);
                                });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    Expr count = 1;
    for (size_t k = 0; k < dims; ++k) {
      auto [start, end] = w.bounds(o[w.rank - dims + k], k);
      count = count * (end - start);
    }
    return b.binary(Op::TrueDiv, sum(b, o), b.index(count, c), c);
  })};
}

// Adaptive max pooling: each window's maximum (NaN winning, as max_pool2d) and where it is
// in its input plane (volume), row-major over the spatial dims: the argmax within the box,
// moved by the window's start.
std::vector<TensorRef> adaptive_max_pool(Lowering &l, const Node &n, size_t dims) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]), &pos_type = l.graph().type(n.outputs[1]);
  AdaptiveWindows w(x, out, dims);
  auto body = [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
    return w.load(b, x, o, r, -INFINITY, x.dtype);
  };
  WindowTotal maximum = window_fold(l, out, w.box, ReduceOp::Max, n.name, body);
  TensorRef values = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) { return maximum(b, o); });
  WindowTotal position = window_argmax(l, pos_type, w.box, x.dtype, n.name, body);
  TensorRef indices = l.pointwise(pos_type, n.name + " indices", [&](BodyBuilder &b, const std::vector<Expr> &o) {
    return plane_position(b, position(b, o), w.box, w.in, Shape(dims, 1),
                          [&](size_t k) { return b.index(w.bounds(o[w.rank - dims + k], k).first, DType::I64); });
  });
  return {values, indices};
}

// fractional_max_pool2d and 3d (Graham's fractional max pooling): along a spatial dim of
// input size I, output size O and window K, output o reads [s(o), s(o) + K), where
// s(O - 1) = I - K and otherwise s(o) = int((o + u) * a) - int(u * a), a = (I - K) / (O - 1),
// u the plane's sample for the dim (random_samples[n, c] holds W then H in 2-d; T, H, W in
// 3-d). The arithmetic is eager's: on the CPU in the input's dtype, each step rounded to it
// (bf16 and f16 too); on CUDA in opmath. The maximum and its position in the plane are max
// pooling's (NaN wins; the last NaN, else the first of the largest).
std::vector<TensorRef> fractional_max_pool(Lowering &l, const Node &n, size_t dims) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>()), &samples = l.ref(arg(n, "random_samples").as<ValueId>());
  Shape kernel = per_dim(n, "kernel_size", dims, {}), outs = per_dim(n, "output_size", dims, {});
  const TensorType &out = l.graph().type(n.outputs[0]), &pos_type = l.graph().type(n.outputs[1]);
  size_t lead = x.sizes.size() - dims;
  bool batched = lead == 2;
  DType t = out.device.kind == Device::Kind::CPU ? x.dtype : opmath_dtype(x.dtype);
  bool rounded = t == DType::BF16 || t == DType::F16;
  DType c = rounded ? DType::F32 : t;
  // A value of dtype t: bf16 and f16 computed in f32 and rounded after every step.
  auto as_t = [&](BodyBuilder &b, int v) { return rounded ? b.cast(b.cast(v, t), c) : v; };
  // The start of output o's window along spatial dim k.
  auto start = [&](BodyBuilder &b, const std::vector<Expr> &o, size_t k) {
    int64_t in = x.sizes[lead + k], last = in - kernel[k];
    Expr at = o[lead + k];
    if (outs[k] == 1) return b.constant(double(last), DType::I64);
    size_t which = dims == 2 ? 1 - k : k;
    std::vector<Expr> sample_at = {batched ? o[0] : Expr(0), o[lead - 1], Expr(int64_t(which))};
    int u = as_t(b, b.cast(b.load(samples.buffer, Lowering::offset(samples, sample_at), samples.dtype), c));
    int a = as_t(b, b.binary(Op::TrueDiv, as_t(b, b.constant(double(last), c)), as_t(b, b.constant(double(outs[k] - 1), c)), c));
    int moved = as_t(b, b.binary(Op::Mul, as_t(b, b.binary(Op::Add, as_t(b, b.index(at, c)), u, c)), a, c));
    int s = b.binary(Op::Sub, b.cast(moved, DType::I64), b.cast(as_t(b, b.binary(Op::Mul, u, a, c)), DType::I64), DType::I64);
    int is_last = b.binary(Op::Eq, b.index(at, DType::I64), b.constant(double(outs[k] - 1), DType::I64), DType::Bool);
    return b.where(is_last, b.constant(double(last), DType::I64), s, DType::I64);
  };
  auto body = [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
    std::vector<Expr> index(o.begin(), o.begin() + long(lead));
    std::vector<int> at;
    for (size_t k = 0; k < dims; ++k) {
      at.push_back(b.binary(Op::Add, start(b, o, k), b.index(r[k], DType::I64), DType::I64));
      index.push_back(Expr(ir::indirect_var(int(k))));
    }
    return b.indirect_load(x.buffer, Lowering::offset(x, index), x.dtype, at);
  };
  WindowTotal maximum = window_fold(l, out, kernel, ReduceOp::Max, n.name, body);
  TensorRef values = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) { return maximum(b, o); });
  WindowTotal position = window_argmax(l, pos_type, kernel, x.dtype, n.name, body);
  TensorRef indices = l.pointwise(pos_type, n.name + " indices", [&](BodyBuilder &b, const std::vector<Expr> &o) {
    return plane_position(b, position(b, o), kernel, Shape(x.sizes.begin() + long(lead), x.sizes.end()), Shape(dims, 1),
                          [&](size_t k) { return start(b, o, k); });
  });
  return {values, indices};
}

// The outputs whose windows may cover an input position, along each window dim: at most
// ceil(k / s) of them, from floor((p + pad) / s) down (the gathers of the pools' backwards).
Shape window_reach(const Window &w) {
  Shape reach;
  for (size_t k = 0; k < 2; ++k) reach.push_back(ceil_div(w.kernel[k], w.stride[k]));
  return reach;
}

// Along window dim k, output o = floor((p + pad) / s) - r, the r-th that may cover input
// position p; true where o is an output (0 <= o < outs) whose window reaches p, an output
// o with o * s - pad <= p < o * s - pad + kernel.
int covers(BodyBuilder &b, const Window &w, size_t k, const Expr &p, const Expr &r, int64_t outs, Expr &o) {
  auto i64 = [&](int64_t v) { return b.constant(double(v), DType::I64); };
  o = ir::floor_div(p + w.padding[k], w.stride[k]) - r;
  int oi = b.index(o, DType::I64);
  int valid = b.binary(Op::LogicalAnd, b.binary(Op::Ge, oi, i64(0), DType::Bool), b.binary(Op::Lt, oi, i64(outs), DType::Bool),
                       DType::Bool);
  int reaches = b.binary(Op::Lt, b.index(p + w.padding[k] - o * w.stride[k], DType::I64), i64(w.kernel[k]), DType::Bool);
  return b.binary(Op::LogicalAnd, valid, reaches, DType::Bool);
}

// max_pool2d_with_indices_backward: each output's gradient added at the input position its
// index names within its (n, c) plane, in opmath, then the input's dtype; the maxima named
// by `names`: PyTorch's i64 indices, or (offsets, coil.max_pool2d_offsets_backward) i8
// offsets within each window, row-major. Without dilation, a gather: input position p sums
// the gradients of the outputs whose windows cover it (window_reach, covers) and whose
// maximum is p; ResNet-50's 3x3 pool at stride 2 reads 4 of them, one pointwise kernel where
// the scatter-add and the zeros it starts from took 0.77 ms of an H100's training step.
// With dilation, that scatter-add.
std::vector<TensorRef> max_pool_backward_of(Lowering &l, const Node &n, const TensorRef &names, bool offsets) {
  const TensorRef &dy = l.ref(arg(n, "grad_output").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  size_t lead = out.sizes.size() - 2;
  Window w = window_of(n, 2);
  if (std::all_of(w.dilation.begin(), w.dilation.end(), [](int64_t d) { return d == 1; })) {
    TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
    WindowTotal sum = window_fold(l, sum_type, window_reach(w), ReduceOp::Sum, n.name + " sum",
                                  [&](BodyBuilder &b, const std::vector<Expr> &p, const std::vector<Expr> &r) {
      std::vector<Expr> at(p.begin(), p.begin() + long(lead));
      int ok = -1;
      for (size_t k = 0; k < 2; ++k) {
        Expr o;
        int valid = covers(b, w, k, p[lead + k], r[k], dy.sizes[lead + k], o);
        at.push_back(o);
        ok = ok < 0 ? valid : b.binary(Op::LogicalAnd, ok, valid, DType::Bool);
      }
      // p as the names say it: its place in the plane, or in output `at`'s window.
      Expr name = offsets ? (p[lead] + w.padding[0] - at[lead] * w.stride[0]) * w.kernel[1] + p[lead + 1] +
                                w.padding[1] - at[lead + 1] * w.stride[1]
                          : p[lead] * out.sizes[lead + 1] + p[lead + 1];
      int named = b.cast(b.masked_load(names.buffer, Lowering::offset(names, at), names.dtype, ok, -1), DType::I64);
      int here = b.binary(Op::Eq, named, b.index(name, DType::I64), DType::Bool);
      int take = b.binary(Op::LogicalAnd, ok, here, DType::Bool);
      int g = b.cast(b.masked_load(dy.buffer, Lowering::offset(dy, at), dy.dtype, take, 0), c);
      return b.where(take, g, b.constant(0, c), c);
    });
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &p) { return sum(b, p); })};
  }
  Shape planes(out.sizes.begin(), out.sizes.begin() + long(lead));
  Shape flat = planes;
  flat.push_back(out.sizes[lead] * out.sizes[lead + 1]);
  // The sums in the result's layout where its two spatial dims are one (channels last, as
  // a channels-last network's gradients are): its readers then walk both alike. In NCHW
  // beside channels-last operands, the batch norm backward reading the tiny ResNet-18's
  // stem took 1.27 ms, its lanes of channels gathering 1024 elements apart.
  const Shape &os = out.strides;
  bool merged = os[lead] == os[lead + 1] * out.sizes[lead + 1] &&
                storage_extent(out) == checked_numel(out.sizes) && checked_numel(out.sizes) > 0;
  Shape acc_strides = contiguous_strides(flat);
  if (merged) {
    acc_strides.assign(os.begin(), os.begin() + long(lead));
    acc_strides.push_back(os[lead + 1]);
  }
  TensorType acc{c, flat, acc_strides, out.device};
  TensorRef zero = l.fill(acc, n.name + " zeros");
  TensorRef dense{-1, c, flat, acc.strides, 0};
  Shape plane(out.sizes.end() - 2, out.sizes.end());
  TensorRef sum = l.scatter(
      n.name, acc, zero, dy.sizes, true,
      [&](BodyBuilder &b, const std::vector<Expr> &o) {
        int at = b.cast(Lowering::load_broadcast(b, names, o), DType::I64);
        if (offsets) {
          std::vector<Expr> start = window_pos(w, o, {Expr(0), Expr(0)});
          at = plane_position(b, at, w.kernel, plane, w.dilation, [&](size_t k) { return b.index(start[k], DType::I64); });
        }
        return std::pair{b.cast(Lowering::load_broadcast(b, dy, o), c), std::vector<int>{at}};
      },
      [&](const std::vector<Expr> &o) {
        std::vector<Expr> at(o.begin(), o.begin() + long(lead));
        at.push_back(Expr(ir::indirect_var(0)));
        return Lowering::offset(dense, at);
      });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    std::vector<Expr> at(x.begin(), x.begin() + long(lead));
    at.push_back(x[lead] * out.sizes[lead + 1] + x[lead + 1]);
    return b.load(sum.buffer, Lowering::offset(sum, at), c);
  })};
}

std::vector<TensorRef> max_pool_backward(Lowering &l, const Node &n) {
  return max_pool_backward_of(l, n, l.ref(arg(n, "indices").as<ValueId>()), false);
}

std::vector<TensorRef> max_pool_offsets_backward(Lowering &l, const Node &n) {
  return max_pool_backward_of(l, n, l.ref(arg(n, "offsets").as<ValueId>()), true);
}

// avg_pool2d_backward: input position p gets the gradient of every output whose window
// covers it (window_reach, covers), divided by that window's divisor (the forward's).
std::vector<TensorRef> avg_pool_backward(Lowering &l, const Node &n) {
  const TensorRef &dy = l.ref(arg(n, "grad_output").as<ValueId>()), &x = l.ref(arg(n, "self").as<ValueId>());
  Window w = window_of(n, 2);
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  bool include_pad = arg(n, "count_include_pad").as<bool>();
  const Arg &override_arg = arg(n, "divisor_override");
  size_t lead = out.sizes.size() - 2;
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, window_reach(w), ReduceOp::Sum, n.name + " sum",
                                [&](BodyBuilder &b, const std::vector<Expr> &p, const std::vector<Expr> &r) {
    std::vector<Expr> at(p.begin(), p.begin() + long(lead));
    int ok = -1, count = -1;
    auto i64 = [&](int64_t v) { return b.constant(double(v), DType::I64); };
    for (size_t k = 0; k < 2; ++k) {
      int64_t size = x.sizes[lead + k];
      Expr o;
      int valid = covers(b, w, k, p[lead + k], r[k], dy.sizes[lead + k], o);
      at.push_back(o);
      int oi = b.index(o, DType::I64);
      ok = ok < 0 ? valid : b.binary(Op::LogicalAnd, ok, valid, DType::Bool);
      // The forward's divisor along this dim, in integers: the window clipped to the padded
      // input, or (count_include_pad false) to the input.
      int start = b.binary(Op::Sub, b.binary(Op::Mul, oi, i64(w.stride[k]), DType::I64), i64(w.padding[k]), DType::I64);
      int end = b.binary(Op::Minimum, b.binary(Op::Add, start, i64(w.kernel[k]), DType::I64), i64(size + w.padding[k]),
                         DType::I64);
      if (!include_pad) {
        start = b.binary(Op::Maximum, start, i64(0), DType::I64);
        end = b.binary(Op::Minimum, end, i64(size), DType::I64);
      }
      int along = b.binary(Op::Sub, end, start, DType::I64);
      count = count < 0 ? along : b.binary(Op::Mul, count, along, DType::I64);
    }
    int g = b.cast(b.masked_load(dy.buffer, Lowering::offset(dy, at), dy.dtype, ok, 0), c);
    int divisor = override_arg.is_none() ? b.cast(count, c) : b.constant(double(override_arg.integer()), c);
    return b.where(ok, b.binary(Op::TrueDiv, g, divisor, c), b.constant(0, c), c);
  });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &p) { return sum(b, p); })};
}

// _adaptive_avg_pool2d_backward: input position p gets grad / area of every output whose
// window [floor(o I / O), ceil((o + 1) I / O)) covers it: along each dim the outputs from
// floor(p O / I) to ceil((p + 1) O / I) - 1, at most ceil(O / I) + 1 of them.
std::vector<TensorRef> adaptive_avg_pool_backward(Lowering &l, const Node &n) {
  const TensorRef &dy = l.ref(arg(n, "grad_output").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  DType c = opmath_dtype(out.dtype);
  size_t lead = out.sizes.size() - 2;
  Shape in(out.sizes.begin() + long(lead), out.sizes.end()), outs(dy.sizes.begin() + long(lead), dy.sizes.end());
  Shape reach;
  for (size_t k = 0; k < 2; ++k) reach.push_back(in[k] == 0 ? 0 : (outs[k] + in[k] - 1) / in[k] + 1);
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, reach, ReduceOp::Sum, n.name + " sum",
                                [&](BodyBuilder &b, const std::vector<Expr> &p, const std::vector<Expr> &r) {
    std::vector<Expr> at(p.begin(), p.begin() + long(lead));
    int ok = -1, area = -1;
    auto i64 = [&](int64_t v) { return b.constant(double(v), DType::I64); };
    for (size_t k = 0; k < 2; ++k) {
      Expr o = ir::floor_div(p[lead + k] * outs[k], in[k]) + r[k];
      at.push_back(o);
      Expr last = ir::floor_div((p[lead + k] + 1) * outs[k] + in[k] - 1, in[k]);  // one past the last output
      int oi = b.index(o, DType::I64);
      int valid = b.binary(Op::Lt, oi, b.index(ir::min(last, Expr(outs[k])), DType::I64), DType::Bool);
      ok = ok < 0 ? valid : b.binary(Op::LogicalAnd, ok, valid, DType::Bool);
      // Output o's window [floor(o I / O), ceil((o + 1) I / O)), in integers.
      int start = b.binary(Op::FloorDiv, b.binary(Op::Mul, oi, i64(in[k]), DType::I64), i64(outs[k]), DType::I64);
      int end = b.binary(Op::FloorDiv, b.binary(Op::Add, b.binary(Op::Mul, oi, i64(in[k]), DType::I64), i64(in[k] + outs[k] - 1), DType::I64),
                         i64(outs[k]), DType::I64);
      int along = b.binary(Op::Sub, end, start, DType::I64);
      area = area < 0 ? along : b.binary(Op::Mul, area, along, DType::I64);
    }
    int g = b.cast(b.masked_load(dy.buffer, Lowering::offset(dy, at), dy.dtype, ok, 0), c);
    // Outside the outputs the area may be 0: divided only where valid.
    int safe = b.where(ok, area, i64(1), DType::I64);
    return b.where(ok, b.binary(Op::TrueDiv, g, b.cast(safe, c), c), b.constant(0, c), c);
  });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &p) { return sum(b, p); })};
}

// col2im (fold): the sum, at each output position, of the columns whose patches cover it.
// Patch element (ki, kj) of block (by, bx) lands at (by*sh - ph + ki*dh, bx*sw - pw + kj*dw),
// so output (y, x) reads, for each (ki, kj), block ((y + ph - ki*dh) / sh, ...) when that
// divides exactly and falls among the blocks.
std::vector<TensorRef> col2im(Lowering &l, const Node &n) {
  const TensorRef &cols = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  auto pair = [&](const char *name) { return per_dim(n, name, 2, {1, 1}); };
  std::vector<int64_t> kernel = pair("kernel_size"), dilation = pair("dilation"), padding = per_dim(n, "padding", 2, {0, 0}),
                       stride = pair("stride");
  size_t lead = out.sizes.size() - 3;  // 1 with a batch dim
  std::vector<int64_t> blocks(2);
  for (size_t k = 0; k < 2; ++k)
    blocks[k] = (out.sizes[lead + 1 + k] + 2 * padding[k] - dilation[k] * (kernel[k] - 1) - 1) / stride[k] + 1;
  DType c = opmath_dtype(out.dtype);
  TensorType sum_type{c, out.sizes, contiguous_strides(out.sizes), out.device};
  WindowTotal sum = window_fold(l, sum_type, {kernel[0], kernel[1]}, ReduceOp::Sum, n.name + " sum",
                                [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
    std::vector<Expr> at(o.begin(), o.begin() + long(lead));
    at.push_back(o[lead] * (kernel[0] * kernel[1]) + r[0] * kernel[1] + r[1]);
    auto i64 = [&](int64_t v) { return b.constant(double(v), DType::I64); };
    int ok = -1;
    Expr block = 0;
    for (size_t k = 0; k < 2; ++k) {
      Expr shifted = o[lead + 1 + k] + padding[k] - r[k] * dilation[k];
      Expr q = ir::floor_div(shifted, stride[k]);
      int v = b.binary(Op::LogicalAnd, b.binary(Op::Ge, b.index(shifted, DType::I64), i64(0), DType::Bool),
                       b.binary(Op::Eq, b.index(ir::mod(shifted, stride[k]), DType::I64), i64(0), DType::Bool), DType::Bool);
      v = b.binary(Op::LogicalAnd, v, b.binary(Op::Lt, b.index(q, DType::I64), i64(blocks[k]), DType::Bool), DType::Bool);
      ok = ok < 0 ? v : b.binary(Op::LogicalAnd, ok, v, DType::Bool);
      block = k == 0 ? q * blocks[1] : block + q;
    }
    at.push_back(block);
    int value = b.cast(b.masked_load(cols.buffer, Lowering::offset(cols, at), cols.dtype, ok, 0), c);
    return b.where(ok, value, b.constant(0, c), c);
  });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) { return sum(b, o); })};
}

}  // namespace

/// The scale from output to input positions of upsampling, as c10's
/// compute_scales_value and area_pixel_compute_scale give it in `t` (f32, or f64 for f64):
/// 1 / scale_factor when one is given, else in / out; with align_corners,
/// (in - 1) / (out - 1) (0 for one output).
double upsample_scale(int64_t in, int64_t out, std::optional<double> factor, bool align_corners, DType t) {
  auto as_t = [t](double v) { return t == DType::F64 ? v : double(float(v)); };
  if (align_corners) return out > 1 ? as_t(as_t(double(in - 1)) / as_t(double(out - 1))) : 0.0;
  if (factor && *factor > 0) return as_t(1.0 / *factor);
  return as_t(as_t(double(in)) / as_t(double(out)));
}

/// The scale factor of spatial dim `d` an upsampling node was given: scale_factors[d] (.vec)
/// or scales_h / scales_w (.default), if any.
std::optional<double> scale_factor(const Node &n, size_t d) {
  bool vec = n.op->schema.find_arg("scale_factors") >= 0;
  const Arg &a = vec ? arg(n, "scale_factors") : arg(n, d == 0 ? "scales_h" : "scales_w");
  if (a.is_none()) return std::nullopt;
  return vec ? number(a.as<ArgList>()[d]) : number(a);
}

/// The input of an upsampling node (`input` of .vec, `self` of .default).
const TensorRef &upsample_input(Lowering &l, const Node &n) {
  return l.ref(arg(n, n.op->schema.find_arg("scale_factors") >= 0 ? "input" : "self").as<ValueId>());
}

/// upsample_nearest2d: out[.., h, w] = x[.., min(floor(h * scale_h), H - 1), ...], the
/// product in f32 as eager computes it (nearest_neighbor_compute_source_index).
std::vector<TensorRef> upsample_nearest(Lowering &l, const Node &n) {
  const TensorRef &x = upsample_input(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    std::vector<Expr> in = o;
    std::vector<int> at;
    for (size_t d = 2; d < 4; ++d) {
      double scale = upsample_scale(x.sizes[d], out.sizes[d], scale_factor(n, d - 2), false, DType::F32);
      int pos = b.cast(b.index(o[d], DType::I64), DType::F32);
      pos = b.unary(Op::Floor, b.binary(Op::Mul, pos, b.constant(scale, DType::F32), DType::F32), DType::F32);
      pos = b.binary(Op::Minimum, b.cast(pos, DType::I64), b.constant(double(x.sizes[d] - 1), DType::I64), DType::I64);
      in[d] = Expr(ir::indirect_var(int(at.size())));
      at.push_back(pos);
    }
    return b.indirect_load(x.buffer, Lowering::offset(x, in), x.dtype, at);
  })};
}

/// upsample_bilinear2d, as eager's CUDA kernel computes it in the op math type: the source
/// position s = scale * h (align_corners) or max(scale * (h + 0.5) - 0.5, 0), its rows
/// h0 = int(s) and h0 + 1 (h0 at the last row), weights 1 - (s - h0) and s - h0; the same
/// along w; out = l0h (l0w x[h0, w0] + l1w x[h0, w1]) + l1h (l0w x[h1, w0] + l1w x[h1, w1]).
std::vector<TensorRef> upsample_bilinear(Lowering &l, const Node &n) {
  const TensorRef &x = upsample_input(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  bool align = arg(n, "align_corners").as<bool>();
  DType c = opmath_dtype(out.dtype);
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    std::array<std::array<int, 2>, 2> rows, weights;  // per spatial dim: the two positions and weights
    for (size_t d = 0; d < 2; ++d) {
      int64_t size = x.sizes[d + 2];
      double scale = upsample_scale(size, out.sizes[d + 2], scale_factor(n, d), align, c);
      int s = b.cast(b.index(o[d + 2], DType::I64), c);
      if (align) {
        s = b.binary(Op::Mul, b.constant(scale, c), s, c);
      } else {
        s = b.binary(Op::Mul, b.constant(scale, c), b.binary(Op::Add, s, b.constant(0.5, c), c), c);
        s = b.binary(Op::Maximum, b.binary(Op::Sub, s, b.constant(0.5, c), c), b.constant(0, c), c);
      }
      int first = b.cast(s, DType::I64);
      int step = b.where(b.binary(Op::Lt, first, b.constant(double(size - 1), DType::I64), DType::Bool),
                         b.constant(1, DType::I64), b.constant(0, DType::I64), DType::I64);
      rows[d] = {first, b.binary(Op::Add, first, step, DType::I64)};
      int lambda = b.binary(Op::Sub, s, b.cast(first, c), c);
      weights[d] = {b.binary(Op::Sub, b.constant(1, c), lambda, c), lambda};
    }
    auto at = [&](int i, int j) {
      std::vector<Expr> in = o;
      in[2] = Expr(ir::indirect_var(0));
      in[3] = Expr(ir::indirect_var(1));
      return b.cast(b.indirect_load(x.buffer, Lowering::offset(x, in), x.dtype, {rows[0][size_t(i)], rows[1][size_t(j)]}), c);
    };
    auto row = [&](int i) {
      return b.binary(Op::Add, b.binary(Op::Mul, weights[1][0], at(i, 0), c), b.binary(Op::Mul, weights[1][1], at(i, 1), c), c);
    };
    return b.binary(Op::Add, b.binary(Op::Mul, weights[0][0], row(0), c), b.binary(Op::Mul, weights[0][1], row(1), c), c);
  })};
}

/// _upsample_bilinear2d_aa (antialiased): along each spatial dim, output position o reads
/// the inputs within `support` (the scale, at least 1) of its centre scale (o + 0.5), from
/// max(int(centre - support + 0.5), 0) to min(int(centre + support + 0.5), size), weighted by
/// the triangle filter 1 - |(i - centre + 0.5) / max(scale, 1)| and normalized to sum to 1:
/// one reduction along W into the op math type, then one along H, as eager's separable
/// passes. Each dim's weights [out, taps] and first inputs [out] are small tables made first.
std::vector<TensorRef> upsample_bilinear_aa(Lowering &l, const Node &n) {
  const TensorRef &x = upsample_input(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  bool align = arg(n, "align_corners").as<bool>();
  DType c = opmath_dtype(out.dtype);
  struct Axis {
    int64_t in, out, taps;
    double scale, support;
    TensorRef weights;  // [out, taps], normalized
    TensorRef firsts;   // [out], the first input each output reads
  };
  auto i64 = [](BodyBuilder &b, double v) { return b.constant(v, DType::I64); };
  std::array<Axis, 2> axes;
  // The first input position o reads, and o's centre.
  auto first_of = [&](BodyBuilder &b, const Axis &a, const Expr &o) {
    int centre = b.binary(Op::Mul, b.constant(a.scale, c),
                          b.binary(Op::Add, b.cast(b.index(o, DType::I64), c), b.constant(0.5, c), c), c);
    int lo = b.cast(b.binary(Op::Add, b.binary(Op::Sub, centre, b.constant(a.support, c), c), b.constant(0.5, c), c),
                    DType::I64);
    return std::pair{b.binary(Op::Maximum, lo, i64(b, 0), DType::I64), centre};
  };
  for (size_t d = 0; d < 2; ++d) {
    Axis &a = axes[d];
    a.in = x.sizes[d + 2];
    a.out = out.sizes[d + 2];
    a.scale = upsample_scale(a.in, a.out, scale_factor(n, d), align, c);
    a.support = a.scale >= 1 ? a.scale : 1.0;
    a.taps = int64_t(std::ceil(2 * a.support)) + 1;
    TensorType table{c, {a.out, a.taps}, {a.taps, 1}, out.device};
    // The filter's weight of tap k of output o (zero past the window).
    auto raw = [&, d](BodyBuilder &b, const Expr &o, const Expr &k) {
      const Axis &ax = axes[d];
      auto [first, centre] = first_of(b, ax, o);
      int hi = b.cast(b.binary(Op::Add, b.binary(Op::Add, centre, b.constant(ax.support, c), c), b.constant(0.5, c), c),
                      DType::I64);
      int end = b.binary(Op::Minimum, hi, i64(b, double(ax.in)), DType::I64);
      int at = b.binary(Op::Add, first, b.index(k, DType::I64), DType::I64);
      int u = b.binary(Op::Mul, b.binary(Op::Add, b.binary(Op::Sub, b.cast(at, c), centre, c), b.constant(0.5, c), c),
                       b.constant(ax.scale >= 1 ? 1 / ax.scale : 1.0, c), c);
      int w = b.binary(Op::Maximum, b.binary(Op::Sub, b.constant(1, c), b.unary(Op::Abs, u, c), c), b.constant(0, c), c);
      return b.where(b.binary(Op::Lt, at, end, DType::Bool), w, b.constant(0, c), c);
    };
    TensorRef totals = l.reduction(TensorType{c, {a.out}, {1}, out.device}, {a.taps}, ReduceOp::Sum,
                                   str_cat(n.name, " weight totals ", d),
                                   [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &k) {
                                     return raw(b, o[0], k[0]);
                                   })[0];
    a.weights = l.pointwise(table, str_cat(n.name, " weights ", d), [&](BodyBuilder &b, const std::vector<Expr> &i) {
      int total = b.load(totals.buffer, i[0], c);
      return b.binary(Op::TrueDiv, raw(b, i[0], i[1]), total, c);
    });
    a.firsts = l.pointwise(TensorType{DType::I64, {a.out}, {1}, out.device}, str_cat(n.name, " firsts ", d),
                           [&](BodyBuilder &b, const std::vector<Expr> &i) { return first_of(b, axes[d], i[0]).first; });
  }
  // One pass along spatial dim d (2 or 3) of `src` into `type`.
  auto pass = [&](const TensorRef &src, size_t d, const TensorType &type) {
    const Axis &a = axes[d - 2];
    return l.reduction(type, {a.taps}, ReduceOp::Sum, str_cat(n.name, d == 3 ? " along w" : " along h"),
                       [&](BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &k) {
                         int first = b.load(a.firsts.buffer, o[d], DType::I64);
                         int at = b.binary(Op::Add, first, b.index(k[0], DType::I64), DType::I64);
                         int inside = b.binary(Op::Lt, at, i64(b, double(a.in)), DType::Bool);
                         int safe = b.where(inside, at, i64(b, 0), DType::I64);
                         std::vector<Expr> in = o;
                         in[d] = Expr(ir::indirect_var(0));
                         int v = b.cast(b.indirect_load(src.buffer, Lowering::offset(src, in), src.dtype, {safe}), c);
                         int w = b.load(a.weights.buffer, Lowering::offset(a.weights, {o[d], k[0]}), c);
                         return b.where(inside, b.binary(Op::Mul, w, v, c), b.constant(0, c), c);
                       })[0];
  };
  Shape rows = {out.sizes[0], out.sizes[1], axes[0].in, axes[1].out};
  TensorRef along_w = pass(x, 3, TensorType{c, rows, contiguous_strides(rows), out.device});
  TensorType acc{c, out.sizes, contiguous_strides(out.sizes), out.device};
  TensorRef along_h = pass(along_w, 2, acc);
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    return b.load(along_h.buffer, Lowering::offset(along_h, o), c);
  })};
}

void add_pooling_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.max_pool2d_with_indices.default"] = [](Lowering &l, const Node &n) { return max_pool(l, n, 2, true); };
  t["aten.max_pool2d.default"] = [](Lowering &l, const Node &n) { return max_pool(l, n, 2, false); };
  t["aten.max_pool3d_with_indices.default"] = [](Lowering &l, const Node &n) { return max_pool(l, n, 3, true); };
  t["aten.avg_pool2d.default"] = [](Lowering &l, const Node &n) { return avg_pool(l, n, 2); };
  t["aten.avg_pool3d.default"] = [](Lowering &l, const Node &n) { return avg_pool(l, n, 3); };
  t["aten._adaptive_avg_pool2d.default"] = [](Lowering &l, const Node &n) { return adaptive_avg_pool(l, n, 2); };
  t["aten.adaptive_avg_pool2d.default"] = [](Lowering &l, const Node &n) { return adaptive_avg_pool(l, n, 2); };
  t["aten._adaptive_avg_pool3d.default"] = [](Lowering &l, const Node &n) { return adaptive_avg_pool(l, n, 3); };
  t["aten.adaptive_max_pool2d.default"] = [](Lowering &l, const Node &n) { return adaptive_max_pool(l, n, 2); };
  t["aten.fractional_max_pool2d.default"] = [](Lowering &l, const Node &n) { return fractional_max_pool(l, n, 2); };
  t["aten.fractional_max_pool3d.default"] = [](Lowering &l, const Node &n) { return fractional_max_pool(l, n, 3); };
  t["aten.adaptive_max_pool3d.default"] = [](Lowering &l, const Node &n) { return adaptive_max_pool(l, n, 3); };
  t["aten.max_pool2d_with_indices_backward.default"] = max_pool_backward;
  t["coil.max_pool2d_with_offsets.default"] = [](Lowering &l, const Node &n) { return max_pool(l, n, 2, true, true); };
  t["coil.max_pool2d_offsets_backward.default"] = max_pool_offsets_backward;
  t["aten.avg_pool2d_backward.default"] = avg_pool_backward;
  t["aten._adaptive_avg_pool2d_backward.default"] = adaptive_avg_pool_backward;
  t["aten.upsample_nearest2d.vec"] = upsample_nearest;
  t["aten.col2im.default"] = col2im;
  t["aten.upsample_bilinear2d.vec"] = upsample_bilinear;
  t["aten.upsample_nearest2d.default"] = upsample_nearest;
  t["aten.upsample_bilinear2d.default"] = upsample_bilinear;
  t["aten._upsample_bilinear2d_aa.vec"] = upsample_bilinear_aa;
  t["aten._upsample_bilinear2d_aa.default"] = upsample_bilinear_aa;
}

}  // namespace coil::lowering
