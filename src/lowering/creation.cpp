// Tensors made from nothing (full, zeros, arange, iota, ...) and data movement that
// needs no data-dependent index: cat and constant_pad_nd (masked loads), flip,
// slice_scatter, select_scatter and diagonal_scatter; pad's other modes (a gather at a computed index).
// Empty tensors are filled with zeros so that every run gives the same bytes.
#include <algorithm>

#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

const TensorType &out_type(Lowering &l, const Node &n) { return l.graph().type(n.outputs[0]); }

/// Every element the same value.
LowerFn constant_fill(std::function<double(const Node &)> value) {
  return [=](Lowering &l, const Node &n) {
    const TensorType &t = out_type(l, n);
    double v = value(n);
    return std::vector<TensorRef>{
        l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &) { return b.constant(v, t.dtype); })};
  };
}

/// arange and iota: start + i * step, computed in f64 for floats and i64 for integers.
std::vector<TensorRef> ramp(Lowering &l, const Node &n, double start, double step) {
  const TensorType &t = out_type(l, n);
  DType c = is_floating(t.dtype) ? DType::F64 : DType::I64;
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int i = b.index(index[0], c);
    return b.binary(Op::Add, b.constant(start, c), b.binary(Op::Mul, i, b.constant(step, c), c), c);
  })};
}

std::vector<TensorRef> arange(Lowering &l, const Node &n) {
  int s = n.op->schema.find_arg("start"), st = n.op->schema.find_arg("step");
  double start = s >= 0 ? number(n.args[size_t(s)]) : 0;
  double step = st >= 0 ? number(n.args[size_t(st)]) : 1;
  return ramp(l, n, start, step);
}

// The most inputs one cat node loads. A wider cat concatenates groups of this many into
// intermediates first, so that no kernel's body grows with the number of inputs (a cat of
// 20,000 inputs as one node was a kernel the C++ compiler could not build).
constexpr size_t kCatInputsPerNode = 64;

/// `parts` concatenated along `dim` into a tensor of type `t`: each part a masked load
/// over its slice of the dim, the loads combined by where() in order.
TensorRef cat_parts(Lowering &l, const TensorType &t, const std::vector<TensorRef> &parts, size_t dim,
                    const std::string &origin) {
  if (parts.size() > kCatInputsPerNode) {
    std::vector<TensorRef> groups;
    for (size_t first = 0; first < parts.size(); first += kCatInputsPerNode) {
      std::vector<TensorRef> group(parts.begin() + std::ptrdiff_t(first),
                                   parts.begin() + std::ptrdiff_t(std::min(first + kCatInputsPerNode, parts.size())));
      TensorType gt = t;
      gt.sizes[dim] = 0;
      for (const TensorRef &p : group) gt.sizes[dim] += p.sizes[dim];
      gt.strides = contiguous_strides(gt.sizes);
      groups.push_back(cat_parts(l, gt, group, dim, origin));
    }
    return cat_parts(l, t, groups, dim, origin);
  }
  return l.pointwise(t, origin, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int value = b.constant(0, t.dtype);
    SymInt start = 0;
    // Later parts first, so that each where() picks the part the index falls in.
    std::vector<std::pair<SymInt, const TensorRef *>> spans;
    for (const TensorRef &p : parts) {
      spans.emplace_back(start, &p);
      start += p.sizes[dim];
    }
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
      auto [begin, part] = *it;
      if (part->sizes[dim] == 0) continue;
      std::vector<Expr> in = index;
      in[dim] = index[dim] - begin;
      int pos = b.index(index[dim], DType::I64);
      int inside = b.binary(Op::LogicalAnd, b.binary(Op::Ge, pos, size_value(b, begin, DType::I64), DType::Bool),
                            b.binary(Op::Lt, pos, size_value(b, begin + part->sizes[dim], DType::I64), DType::Bool),
                            DType::Bool);
      int v = b.cast(b.masked_load(part->buffer, Lowering::offset(*part, in), part->dtype, inside, 0), t.dtype);
      value = b.where(inside, v, value, t.dtype);
    }
    return value;
  });
}

/// cat of the node's inputs, empty legacy inputs left out.
std::vector<TensorRef> cat(Lowering &l, const Node &n) {
  const TensorType &t = out_type(l, n);
  std::vector<TensorRef> parts;
  for (const Arg &a : arg(n, "tensors").as<ArgList>()) {
    const TensorRef &r = l.ref(a.as<ValueId>());
    if (r.rank() == 1 && r.sizes[0] == 0 && t.rank() != 1) continue;  // legacy empty inputs are skipped
    parts.push_back(r);
  }
  size_t dim = size_t(wrap_dim(arg(n, "dim").integer(), t.rank()));
  return {cat_parts(l, t, parts, dim, n.name)};
}


/// constant_pad_nd (and pad in mode constant): pad = [last_lo, last_hi, prev_lo, prev_hi, ...];
/// negative pads crop.
std::vector<TensorRef> constant_pad(Lowering &l, const Node &n) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &t = out_type(l, n);
  const SymShape pad = arg(n, "pad").sym_ints();
  double fill = arg(n, "value").is_none() ? 0 : number(arg(n, "value"));  // pad's value=None is 0
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    std::vector<Expr> in = index;
    int inside = -1;
    for (size_t k = 0; k < pad.size() / 2; ++k) {
      size_t d = t.sizes.size() - 1 - k;
      in[d] = index[d] - pad[2 * k];
      int pos = b.index(in[d], DType::I64);
      int ok = b.binary(Op::LogicalAnd, b.binary(Op::Ge, pos, b.constant(0, DType::I64), DType::Bool),
                        b.binary(Op::Lt, pos, size_value(b, x.sizes[d], DType::I64), DType::Bool), DType::Bool);
      inside = inside < 0 ? ok : b.binary(Op::LogicalAnd, inside, ok, DType::Bool);
    }
    if (inside < 0) return b.load(x.buffer, Lowering::offset(x, in), x.dtype);
    int v = b.masked_load(x.buffer, Lowering::offset(x, in), x.dtype, inside, fill);
    return b.where(inside, v, b.constant(fill, x.dtype), x.dtype);
  })};
}

/// pad in mode reflect, replicate or circular: each padded dim reads the input at an index
/// the body computes from the output's (a gather), pad = [last_lo, last_hi, prev_lo, ...]:
///   reflect   j = (n-1) - |(n-1) - |i - lo||   (mirrored without repeating the edge)
///   replicate j = min(max(i - lo, 0), n-1)
///   circular  j = c + (i - max(lo, 0)) mod m, over the input cropped by the negative pads
///             first (from c = max(-lo, 0), m elements), as eager crops before it wraps
std::vector<TensorRef> mode_pad(Lowering &l, const Node &n, const std::string &mode, const std::vector<int64_t> &pad) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  const TensorType &t = out_type(l, n);
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    std::vector<Expr> in = index;
    std::vector<int> at;
    for (size_t k = 0; k < pad.size() / 2; ++k) {
      size_t d = t.sizes.size() - 1 - k;
      auto c = [&](int64_t v) { return b.constant(double(v), DType::I64); };
      int64_t lo = pad[2 * k], hi = pad[2 * k + 1];
      int j;
      if (mode == "circular") {
        int64_t start = std::max<int64_t>(-lo, 0), kept = x.sizes[d] - start - std::max<int64_t>(-hi, 0);
        j = b.index(index[d] - std::max<int64_t>(lo, 0), DType::I64);
        j = b.binary(Op::Add, b.binary(Op::Remainder, j, c(kept), DType::I64), c(start), DType::I64);
      } else {
        int last = c(x.sizes[d] - 1);
        j = b.index(index[d] - lo, DType::I64);
        if (mode == "reflect") {
          j = b.unary(Op::Abs, j, DType::I64);
          int mirrored = b.unary(Op::Abs, b.binary(Op::Sub, last, j, DType::I64), DType::I64);
          j = b.binary(Op::Sub, last, mirrored, DType::I64);
        } else {
          j = b.binary(Op::Minimum, b.binary(Op::Maximum, j, c(0), DType::I64), last, DType::I64);
        }
      }
      in[d] = Expr(ir::indirect_var(int(at.size())));
      at.push_back(j);
    }
    return b.indirect_load(x.buffer, Lowering::offset(x, in), x.dtype, at);
  })};
}

std::vector<TensorRef> flip(Lowering &l, const Node &n) {
  const TensorRef &x = l.ref(arg(n, "self").as<ValueId>());
  std::vector<bool> flipped(size_t(x.rank()), false);
  for (const Arg &a : arg(n, "dims").as<ArgList>()) flipped[size_t(wrap_dim(a.integer(), x.rank()))] = true;
  return {l.pointwise(out_type(l, n), n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    std::vector<Expr> in = index;
    for (size_t d = 0; d < in.size(); ++d)
      if (flipped[d]) in[d] = (x.sizes[d] - 1).expr() - index[d];
    return b.load(x.buffer, Lowering::offset(x, in), x.dtype);
  })};
}

/// slice_scatter / select_scatter: self everywhere, src where the slice (or the
/// selected index) covers the element.
std::vector<TensorRef> scatter_into(Lowering &l, const Node &n, bool select) {
  const TensorRef &self = l.ref(arg(n, "self").as<ValueId>());
  const TensorRef &src = l.ref(arg(n, "src").as<ValueId>());
  const TensorType &t = out_type(l, n);
  size_t dim = size_t(wrap_dim(arg(n, "dim").integer(), t.rank()));
  SymInt start = 0, length = 1;
  int64_t step = 1;
  if (select) {
    start = arg(n, "index").as<SymInt>();
    if (start < 0) start = start + t.sizes[dim];
  } else {
    auto opt = [&](const char *name) -> std::optional<SymInt> {
      const Arg &a = arg(n, name);
      return a.is_none() ? std::nullopt : std::optional<SymInt>(a.as<SymInt>());
    };
    step = arg(n, "step").integer();
    auto bounds = slice_bounds(t.sizes[dim], opt("start"), opt("end"), step);
    start = bounds.start;
    length = bounds.length;
  }
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int pos = b.index(index[dim] - start, DType::I64);
    int in_range = b.binary(Op::LogicalAnd, b.binary(Op::Ge, pos, b.constant(0, DType::I64), DType::Bool),
                            b.binary(Op::Lt, pos, size_value(b, (length - 1) * step + 1, DType::I64), DType::Bool),
                            DType::Bool);
    int on_step = b.binary(Op::Eq, b.binary(Op::Remainder, pos, b.constant(double(step), DType::I64), DType::I64),
                           b.constant(0, DType::I64), DType::Bool);
    int covered = b.binary(Op::LogicalAnd, in_range, on_step, DType::Bool);
    std::vector<Expr> src_index = index;
    if (select) {
      src_index.erase(src_index.begin() + long(dim));
    } else {
      src_index[dim] = ir::floor_div(index[dim] - start, step);
    }
    int from_src = b.cast(b.masked_load(src.buffer, Lowering::offset(src, src_index), src.dtype, covered, 0), t.dtype);
    int from_self = b.cast(b.load(self.buffer, Lowering::offset(self, index), self.dtype), t.dtype);
    return b.where(covered, from_src, from_self, t.dtype);
  })};
}

/// diagonal_scatter: self everywhere, src[.., k] on the diagonal (x[dim2] - x[dim1] ==
/// offset), k its position along the diagonal.
std::vector<TensorRef> diagonal_scatter(Lowering &l, const Node &n) {
  const TensorRef &self = l.ref(arg(n, "self").as<ValueId>());
  const TensorRef &src = l.ref(arg(n, "src").as<ValueId>());
  const TensorType &t = out_type(l, n);
  size_t d1 = size_t(wrap_dim(arg(n, "dim1").integer(), t.rank())), d2 = size_t(wrap_dim(arg(n, "dim2").integer(), t.rank()));
  int64_t offset = arg(n, "offset").integer();
  return {l.pointwise(t, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    int on = b.binary(Op::Eq, b.index(index[d2] - index[d1], DType::I64), b.constant(double(offset), DType::I64), DType::Bool);
    std::vector<Expr> src_index;
    for (size_t d = 0; d < index.size(); ++d)
      if (d != d1 && d != d2) src_index.push_back(index[d]);
    src_index.push_back(offset >= 0 ? index[d1] : index[d2]);
    int from_src = b.cast(b.masked_load(src.buffer, Lowering::offset(src, src_index), src.dtype, on, 0), t.dtype);
    int from_self = b.cast(b.load(self.buffer, Lowering::offset(self, index), self.dtype), t.dtype);
    return b.where(on, from_src, from_self, t.dtype);
  })};
}

}  // namespace

void add_creation_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  auto zero = [](const Node &) { return 0.0; };
  auto one = [](const Node &) { return 1.0; };
  for (const char *target : {"aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default",
                             "aten.empty.memory_format", "aten.empty_strided.default", "aten.empty_permuted.default",
                             "aten.empty_like.default",
                             "aten.new_empty.default", "aten.new_empty_strided.default"})
    t[target] = constant_fill(zero);
  for (const char *target : {"aten.ones.default", "aten.ones_like.default", "aten.new_ones.default"})
    t[target] = constant_fill(one);
  for (const char *target : {"aten.full.default", "aten.full_like.default", "aten.new_full.default"})
    t[target] = constant_fill([](const Node &n) { return number(arg(n, "fill_value")); });
  t["aten.scalar_tensor.default"] = constant_fill([](const Node &n) { return number(arg(n, "s")); });
  t["aten.arange.default"] = arange;
  t["aten.arange.start"] = arange;
  t["aten.arange.start_step"] = arange;
  t["prims.iota.default"] = [](Lowering &l, const Node &n) {
    return ramp(l, n, double(arg(n, "start").integer()), double(arg(n, "step").integer()));
  };
  t["aten.cat.default"] = cat;
  t["aten.constant_pad_nd.default"] = constant_pad;
  t["aten.pad.default"] = [](Lowering &l, const Node &n) {
    const Arg &mode = arg(n, "mode");
    if (mode.is_none() || mode.as<std::string>() == "constant") return constant_pad(l, n);
    return mode_pad(l, n, mode.as<std::string>(), ints_of(arg(n, "pad")));
  };
  for (const char *d : {"1", "2", "3"}) {
    t[str_cat("aten.reflection_pad", d, "d.default")] = [](Lowering &l, const Node &n) {
      return mode_pad(l, n, "reflect", ints_of(arg(n, "padding")));
    };
    t[str_cat("aten.replication_pad", d, "d.default")] = [](Lowering &l, const Node &n) {
      return mode_pad(l, n, "replicate", ints_of(arg(n, "padding")));
    };
  }
  t["aten.flip.default"] = flip;
  t["aten.slice_scatter.default"] = [](Lowering &l, const Node &n) { return scatter_into(l, n, false); };
  t["aten.select_scatter.default"] = [](Lowering &l, const Node &n) { return scatter_into(l, n, true); };
  t["aten.diagonal_scatter.default"] = diagonal_scatter;
}

}  // namespace coil::lowering
