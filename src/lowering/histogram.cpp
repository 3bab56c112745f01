// Histograms: histc, histogram (by bin count or by edges) and histogramdd's parts (its
// edges, its counts by bin counts or by edge tensors). Each is a scatter-add into the bins
// of each element's bin, found per coordinate: by interpolation between evenly spaced edges
// and a step to a neighbour where rounding put it off by one (as eager's linear search with
// local correction), or by counting the edges at or below it (eager's binary search).
#include <cmath>
#include <optional>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

// histc(self, bins, min, max): counts of self's elements in `bins` equal bins over
// [min, max] (the data's own range when min == max, widened by 1 each way when that is one
// number), the last bin closed; elements outside (and NaN) are not counted. A scatter-add of
// ones (of zeros, for the elements left out).
std::vector<TensorRef> histc(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t bins = arg(n, "bins").integer(), numel = checked_numel(self.sizes);
  double lo = number(arg(n, "min")), hi = number(arg(n, "max"));
  DType c = opmath_dtype(out.dtype);
  TensorType bound{c, {}, {}, out.device};
  Shape all = {numel};
  auto element = [&](BodyBuilder &b, const Expr &flat) {
    if (numel == 0) return b.constant(0, c);  // never read
    return b.cast(Lowering::load_broadcast(b, self, unravel(flat, self.sizes)), c);
  };
  std::optional<TensorRef> data_lo, data_hi;
  if (lo == hi && numel > 0) {
    data_lo = l.reduction(bound, all, ir::ReduceOp::Min, n.name + " min",
                          [&](BodyBuilder &b, const std::vector<Expr> &, const std::vector<Expr> &r) { return element(b, r[0]); })[0];
    data_hi = l.reduction(bound, all, ir::ReduceOp::Max, n.name + " max",
                          [&](BodyBuilder &b, const std::vector<Expr> &, const std::vector<Expr> &r) { return element(b, r[0]); })[0];
  }
  TensorRef dense{-1, out.dtype, out.sizes, out.strides, 0};
  return {l.scatter(
      n.name, out, l.fill(out, n.name + " zeros"), {numel}, true,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int left = data_lo ? b.load(data_lo->buffer, Expr(0), c) : b.constant(lo, c);
        int right = data_hi ? b.load(data_hi->buffer, Expr(0), c) : b.constant(hi, c);
        if (data_lo) {
          int same = b.binary(Op::Eq, left, right, DType::Bool);
          left = b.where(same, b.binary(Op::Sub, left, b.constant(1, c), c), left, c);
          right = b.where(same, b.binary(Op::Add, right, b.constant(1, c), c), right, c);
        }
        int v = element(b, x[0]);
        int inside = b.binary(Op::LogicalAnd, b.binary(Op::Ge, v, left, DType::Bool), b.binary(Op::Le, v, right, DType::Bool),
                              DType::Bool);
        int scaled = b.binary(Op::Mul, b.binary(Op::TrueDiv, b.binary(Op::Sub, v, left, c), b.binary(Op::Sub, right, left, c), c),
                              b.constant(double(bins), c), c);
        int bin = b.binary(Op::Minimum, b.cast(b.unary(Op::Floor, scaled, c), DType::I64), b.constant(double(bins - 1), DType::I64),
                           DType::I64);
        bin = b.where(inside, bin, b.constant(0, DType::I64), DType::I64);
        return std::pair{b.where(inside, b.constant(1, c), b.constant(0, c), c), std::vector<int>{bin}};
      },
      [&](const std::vector<Expr> &) { return Lowering::offset(dense, {Expr(ir::indirect_var(0))}); })};
}

/// A histogram of D-coordinate points: self's last dim holds each point's coordinates
/// (histogramdd), or each element of self is a point of one (histogram).
struct Points {
  const TensorRef &self;
  int64_t dims;
  int64_t count;
};

/// Coordinate `d` of point `p`, in self's dtype (of no points: never read).
int coordinate(BodyBuilder &b, const Points &pts, const Expr &p, int64_t d) {
  if (pts.count == 0) return b.constant(0, pts.self.dtype);
  return Lowering::load_broadcast(b, pts.self, unravel(p * pts.dims + d, pts.self.sizes));
}

/// Edge `i` (a value, i64) of an edges tensor.
int edge_at(BodyBuilder &b, const TensorRef &edges, int i) {
  return b.indirect_load(edges.buffer, Lowering::offset(edges, {Expr(ir::indirect_var(0))}), edges.dtype, {i});
}

/// The `bins + 1` evenly spaced edges of dim `d` over `range` (lo, hi), or else over the
/// points' own range (0 to 1 when there are none); a range of one number is widened by 0.5
/// each way. Spaced as eager's linspace: from the left up to the middle, from the right after.
TensorRef uniform_edges(Lowering &l, const Node &n, const Points &pts, int64_t d, int64_t bins,
                        std::optional<std::pair<double, double>> range, const TensorType &type) {
  std::optional<TensorRef> lo, hi;
  if (!range && pts.count > 0) {
    TensorType scalar{type.dtype, {}, {}, type.device};
    auto extreme = [&](ir::ReduceOp op, const char *what) {
      return l.reduction(scalar, {pts.count}, op, str_cat(n.name, " ", what, " ", d),
                         [&](BodyBuilder &b, const std::vector<Expr> &, const std::vector<Expr> &r) {
                           return coordinate(b, pts, r[0], d);
                         })[0];
    };
    lo = extreme(ir::ReduceOp::Min, "min");
    hi = extreme(ir::ReduceOp::Max, "max");
  }
  std::pair<double, double> bounds = range.value_or(std::pair{0.0, 1.0});
  double first = bounds.first, last = bounds.second;  // a lambda captures variables, not bindings
  DType t = type.dtype;
  return l.pointwise(type, str_cat(n.name, " edges ", d), [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int left = lo ? b.load(lo->buffer, Expr(0), t) : b.constant(first, t);
    int right = hi ? b.load(hi->buffer, Expr(0), t) : b.constant(last, t);
    int same = b.binary(Op::Eq, left, right, DType::Bool);
    left = b.where(same, b.binary(Op::Sub, left, b.constant(0.5, t), t), left, t);
    right = b.where(same, b.binary(Op::Add, right, b.constant(0.5, t), t), right, t);
    int step = b.binary(Op::TrueDiv, b.binary(Op::Sub, right, left, t), b.constant(double(bins), t), t);
    int i = b.index(x[0], DType::I64);
    int from_left = b.binary(Op::Add, left, b.binary(Op::Mul, step, b.cast(i, t), t), t);
    int back = b.cast(b.binary(Op::Sub, b.constant(double(bins), DType::I64), i, DType::I64), t);
    int from_right = b.binary(Op::Sub, right, b.binary(Op::Mul, step, back, t), t);
    int lower_half = b.binary(Op::Lt, i, b.constant(double((bins + 1) / 2), DType::I64), DType::Bool);
    return b.where(lower_half, from_left, from_right, t);
  });
}

/// Each point's bin along dim `d` (edges `edges`, `bins` of them), -1 for a point outside
/// the edges (or NaN there).
TensorRef bin_of(Lowering &l, const Node &n, const Points &pts, int64_t d, const TensorRef &edges, int64_t bins,
                 bool uniform) {
  DType t = edges.dtype;
  TensorType positions{DType::I64, {pts.count}, {1}, l.graph().type(n.outputs[0]).device};
  auto i64 = [](BodyBuilder &b, double v) { return b.constant(v, DType::I64); };
  auto clamp = [&](BodyBuilder &b, int p) {
    return b.binary(Op::Minimum, b.binary(Op::Maximum, p, i64(b, 0), DType::I64), i64(b, double(bins - 1)), DType::I64);
  };
  std::optional<TensorRef> at_or_below;
  if (!uniform)
    at_or_below = l.reduction(positions, {bins + 1}, ir::ReduceOp::Sum, str_cat(n.name, " edges below ", d),
                              [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                int edge = b.load(edges.buffer, Lowering::offset(edges, {r[0]}), t);
                                int v = coordinate(b, pts, x[0], d);
                                return b.cast(b.binary(Op::Le, edge, v, DType::Bool), DType::I64);
                              })[0];
  return l.pointwise(positions, str_cat(n.name, " bins ", d), [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = coordinate(b, pts, x[0], d);
    int left = b.load(edges.buffer, Lowering::offset(edges, {Expr(0)}), t);
    int right = b.load(edges.buffer, Lowering::offset(edges, {Expr(bins)}), t);
    int inside = b.binary(Op::LogicalAnd, b.binary(Op::Ge, v, left, DType::Bool), b.binary(Op::Le, v, right, DType::Bool),
                          DType::Bool);
    int p;
    if (uniform) {
      int scaled = b.binary(Op::TrueDiv, b.binary(Op::Mul, b.binary(Op::Sub, v, left, t), b.constant(double(bins), t), t),
                            b.binary(Op::Sub, right, left, t), t);
      p = clamp(b, b.cast(b.where(inside, scaled, b.constant(0, t), t), DType::I64));
      int below = b.cast(b.binary(Op::Lt, v, edge_at(b, edges, p), DType::Bool), DType::I64);
      int above = b.cast(b.binary(Op::Ge, v, edge_at(b, edges, b.binary(Op::Add, p, i64(b, 1), DType::I64)), DType::Bool),
                         DType::I64);
      p = clamp(b, b.binary(Op::Add, b.binary(Op::Sub, p, below, DType::I64), above, DType::I64));
    } else {
      p = clamp(b, b.binary(Op::Sub, b.load(at_or_below->buffer, x[0], DType::I64), i64(b, 1), DType::I64));
    }
    return b.where(inside, p, i64(b, -1), DType::I64);
  });
}

/// The counts (or weights) of the points in each bin of `out` ([bins...]), divided by the
/// total and each bin's volume with `density`.
TensorRef histogram_counts(Lowering &l, const Node &n, const Points &pts, const std::vector<TensorRef> &edges,
                           const std::vector<TensorRef> &bins, const TensorType &out) {
  DType t = out.dtype;
  const Arg &weight_arg = arg(n, "weight");
  std::optional<TensorRef> weight;
  if (!weight_arg.is_none()) weight = l.ref(weight_arg.as<ValueId>());
  bool density = arg(n, "density").as<bool>();
  TensorType counts_type{t, out.sizes, contiguous_strides(out.sizes), out.device};
  TensorRef flat{-1, t, {checked_numel(out.sizes)}, {1}, 0};
  TensorRef counts = l.scatter(
      density ? n.name + " counts" : n.name, density ? counts_type : out, l.fill(counts_type, n.name + " zeros"),
      {pts.count}, true,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int valid = b.constant(1, DType::Bool), cell = b.constant(0, DType::I64);
        for (size_t d = 0; d < bins.size(); ++d) {
          int p = b.load(bins[d].buffer, x[0], DType::I64);
          valid = b.binary(Op::LogicalAnd, valid, b.binary(Op::Ge, p, b.constant(0, DType::I64), DType::Bool), DType::Bool);
          cell = b.binary(Op::Add, cell, b.binary(Op::Mul, p, b.constant(double(counts_type.strides[d]), DType::I64), DType::I64),
                          DType::I64);
        }
        int w = weight && pts.count > 0 ? Lowering::load_broadcast(b, *weight, unravel(x[0], weight->sizes)) : b.constant(1, t);
        return std::pair{b.where(valid, w, b.constant(0, t), t),
                         std::vector<int>{b.where(valid, cell, b.constant(0, DType::I64), DType::I64)}};
      },
      [&](const std::vector<Expr> &) { return Lowering::offset(flat, {Expr(ir::indirect_var(0))}); });
  if (!density) return counts;
  TensorRef total = l.reduction(TensorType{t, {}, {}, out.device}, {flat.sizes[0]}, ir::ReduceOp::Sum, n.name + " total",
                                [&](BodyBuilder &b, const std::vector<Expr> &, const std::vector<Expr> &r) {
                                  return b.load(counts.buffer, r[0], t);
                                })[0];
  return l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int scale = b.load(total.buffer, Expr(0), t);
    for (size_t d = 0; d < edges.size(); ++d) {
      int width = b.binary(Op::Sub, b.load(edges[d].buffer, Lowering::offset(edges[d], {x[d] + 1}), t),
                           b.load(edges[d].buffer, Lowering::offset(edges[d], {x[d]}), t), t);
      scale = b.binary(Op::Mul, scale, width, t);
    }
    return b.binary(Op::TrueDiv, b.load(counts.buffer, Lowering::offset(counts, x), t), scale, t);
  });
}

/// histogram.bin_ct / .bins_tensor (dd false) and histogramdd's parts (dd true): the points,
/// each dim's edges (made, or the tensors given) and whether they are evenly spaced.
struct Binned {
  Points pts;
  std::vector<TensorRef> edges;
  bool uniform;
};

Binned binned(Lowering &l, const Node &n, bool dd, const std::vector<TensorType> &edge_types) {
  const TensorRef &self = tensor_arg(l, n, "self");
  int64_t dims = dd ? int64_t(self.sizes.back()) : 1;
  Points pts{self, dims, checked_numel(self.sizes) / std::max<int64_t>(dims, 1)};
  if (dims == 0) pts.count = 0;
  const Arg &bins = arg(n, "bins");
  Binned out{pts, {}, true};
  if (bins.is<ValueId>() || (bins.is<ArgList>() && !bins.as<ArgList>().empty() && bins.as<ArgList>()[0].is<ValueId>())) {
    out.uniform = false;
    if (bins.is<ValueId>()) out.edges.push_back(l.ref(bins.as<ValueId>()));
    else
      for (const Arg &e : bins.as<ArgList>()) out.edges.push_back(l.ref(e.as<ValueId>()));
    return out;
  }
  std::vector<int64_t> counts = dd ? ints_of(bins) : std::vector<int64_t>{bins.integer()};
  const Arg &range = arg(n, "range");
  for (int64_t d = 0; d < dims; ++d) {
    std::optional<std::pair<double, double>> r;
    if (!range.is_none()) r = std::pair{number(range.as<ArgList>()[size_t(2 * d)]), number(range.as<ArgList>()[size_t(2 * d + 1)])};
    out.edges.push_back(uniform_edges(l, n, pts, d, counts[size_t(d)], r, edge_types[size_t(d)]));
  }
  return out;
}

/// The hist of `b` into `out`.
TensorRef counts_of(Lowering &l, const Node &n, const Binned &b, const TensorType &out) {
  std::vector<TensorRef> bins;
  for (size_t d = 0; d < b.edges.size(); ++d)
    bins.push_back(bin_of(l, n, b.pts, int64_t(d), b.edges[d], out.sizes[d], b.uniform));
  return histogram_counts(l, n, b.pts, b.edges, bins, out);
}

/// The types of the edges a histogramdd of `self` with bin counts `bins` makes.
std::vector<TensorType> edge_types(const TensorType &self, const std::vector<int64_t> &bins) {
  std::vector<TensorType> types;
  for (int64_t b : bins) types.push_back(TensorType{self.dtype, {b + 1}, {1}, self.device});
  return types;
}

std::vector<TensorRef> histogram(Lowering &l, const Node &n) {
  const TensorType &hist = l.graph().type(n.outputs[0]), &edges = l.graph().type(n.outputs[1]);
  Binned b = binned(l, n, false, {edges});
  TensorRef counts = counts_of(l, n, b, hist);
  if (!b.uniform) {  // the edges given, copied out
    const TensorRef &given = b.edges[0];
    return {counts, l.pointwise(edges, n.name + " edges", [&](BodyBuilder &bb, const std::vector<Expr> &x) {
              return Lowering::load_broadcast(bb, given, x);
            })};
  }
  return {counts, b.edges[0]};
}

std::vector<TensorRef> histogramdd(Lowering &l, const Node &n) {
  const TensorType &hist = l.graph().type(n.outputs[0]);
  ValueId self = arg(n, "self").as<ValueId>();
  std::vector<int64_t> counts(hist.sizes.begin(), hist.sizes.end());
  return {counts_of(l, n, binned(l, n, true, edge_types(l.graph().type(self), counts)), hist)};
}

std::vector<TensorRef> histogramdd_edges(Lowering &l, const Node &n) {
  std::vector<TensorType> types;
  for (ValueId v : n.outputs) types.push_back(l.graph().type(v));
  return binned(l, n, true, types).edges;
}

}  // namespace

void add_histogram_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.histc.default"] = histc;
  t["aten.histogram.bin_ct"] = histogram;
  t["aten.histogram.bins_tensor"] = histogram;
  t["aten._histogramdd_bin_edges.default"] = histogramdd_edges;
  t["aten._histogramdd_from_bin_cts.default"] = histogramdd;
  t["aten._histogramdd_from_bin_tensors.default"] = histogramdd;
}

}  // namespace coil::lowering
