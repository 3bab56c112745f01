// Data-dependent reads: gather, index_select, embedding and advanced indexing load an
// index tensor first and read the source at the index it holds (an indirect load).
#include <cmath>
#include <map>
#include <optional>

#include "coil/coil.h"
#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;


/// An index value as i64; negative indices count from the end of a dim of `size`
/// (advanced indexing allows them).
int load_index(BodyBuilder &b, const TensorRef &index, const std::vector<Expr> &at, std::optional<SymInt> wrap) {
  int v = b.cast(Lowering::load_broadcast(b, index, at), DType::I64);
  if (!wrap) return v;
  int negative = b.binary(Op::Lt, v, b.constant(0, DType::I64), DType::Bool);
  return b.where(negative, b.binary(Op::Add, v, size_value(b, *wrap, DType::I64), DType::I64), v, DType::I64);
}

/// Reads `src` at `index` where dim `dim` takes the indirect value `value`.
int read_at(BodyBuilder &b, const TensorRef &src, std::vector<Expr> index, size_t dim, int value) {
  index[dim] = Expr(ir::indirect_var(0));
  return b.indirect_load(src.buffer, Lowering::offset(src, index), src.dtype, {value});
}

std::vector<TensorRef> index_select(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &index = tensor_arg(l, n, "index");
  size_t dim = self.rank() == 0 ? 0 : size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  return {l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    if (self.rank() == 0) return b.load(self.buffer, self.offset.expr(), self.dtype);
    int i = load_index(b, index, {index.rank() == 0 ? Expr(0) : x[dim]}, std::nullopt);
    return read_at(b, self, x, dim, i);
  })};
}

std::vector<TensorRef> gather(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &index = tensor_arg(l, n, "index");
  size_t dim = self.rank() == 0 ? 0 : size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  return {l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    if (self.rank() == 0) return b.load(self.buffer, self.offset.expr(), self.dtype);
    return read_at(b, self, x, dim, load_index(b, index, x, std::nullopt));
  })};
}

// embedding(weight, indices)[i..., j] = weight[indices[i...], j]
std::vector<TensorRef> embedding(Lowering &l, const Node &n) {
  const TensorRef &weight = tensor_arg(l, n, "weight"), &indices = tensor_arg(l, n, "indices");
  return {l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    std::vector<Expr> at(x.begin(), x.end() - 1);
    int row = load_index(b, indices, at, std::nullopt);
    return read_at(b, weight, {Expr(0), x.back()}, 0, row);
  })};
}

/// Advanced indexing's layout: the index tensors broadcast to one shape B. When the
/// indexed dims are adjacent, B replaces them in place in the result; otherwise B comes
/// first, then the other dims. `index` and `index_put` share it.
struct AdvancedIndex {
  const TensorRef &self;
  std::vector<std::optional<TensorRef>> idx;  // per dim of self, the index tensor if any
  SymShape common;                            // B
  size_t b_first = 0;                         // where B's dims sit in the result

  AdvancedIndex(Lowering &l, const TensorRef &s, const ArgList &list) : self(s), idx(size_t(s.rank())) {
    std::vector<size_t> indexed;
    for (size_t d = 0; d < list.size(); ++d) {
      if (list[d].is_none()) continue;
      idx[d] = l.ref(list[d].as<ValueId>());
      indexed.push_back(d);
      common = broadcast_shapes(common, idx[d]->sizes);
    }
    bool adjacent = indexed.empty() || indexed.back() - indexed.front() + 1 == indexed.size();
    b_first = adjacent && !indexed.empty() ? indexed.front() : 0;
  }

  /// The shape of self[indices].
  SymShape result_shape() const {
    SymShape others;
    for (size_t d = 0; d < idx.size(); ++d)
      if (!idx[d]) others.push_back(self.sizes[d]);
    SymShape out(others.begin(), others.begin() + long(b_first));
    out.insert(out.end(), common.begin(), common.end());
    out.insert(out.end(), others.begin() + long(b_first), others.end());
    return out;
  }

  /// The index tensors' values at result point `x`, in dim order.
  std::vector<int> load_indices(BodyBuilder &b, const std::vector<Expr> &x) const {
    std::vector<Expr> bvars(x.begin() + long(b_first), x.begin() + long(b_first + common.size()));
    std::vector<int> values;
    for (size_t d = 0; d < idx.size(); ++d)
      if (idx[d]) values.push_back(load_index(b, *idx[d], bvars, self.sizes[d]));
    return values;
  }

  /// self's index at result point `x`: the k-th indexed dim is indirect_var(k), the
  /// value load_indices returns k-th.
  std::vector<Expr> source_index(const std::vector<Expr> &x) const {
    std::vector<Expr> rest(x.begin(), x.begin() + long(b_first));
    rest.insert(rest.end(), x.begin() + long(b_first + common.size()), x.end());
    std::vector<Expr> at;
    size_t next = 0;
    int k = 0;
    for (size_t d = 0; d < idx.size(); ++d) at.push_back(idx[d] ? Expr(ir::indirect_var(k++)) : rest[next++]);
    return at;
  }
};

std::vector<TensorRef> advanced_index(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  AdvancedIndex ai(l, self, arg(n, "indices").as<ArgList>());
  return {l.pointwise(l.graph().type(n.outputs[0]), n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.indirect_load(self.buffer, Lowering::offset(self, ai.source_index(x)), self.dtype, ai.load_indices(b, x));
  })};
}

// scatter(self, dim, index, src|value): out[x with dim = index[x]] = src[x] | value;
// with `combine` (scatter_add, scatter_reduce): out[...] = combine(out[...], src[x]). The
// writes go onto `init` (self unless given); `value` replaces the graph's value argument.
struct ScatterWrites {
  bool from_src = true;
  std::optional<Op> combine;
  const TensorRef *init = nullptr;
  std::optional<double> value;
};

/// What a scatter writes: into self, along dim, src's elements (absent for scatter.value),
/// each at its place in index.
struct ScatterOperands {
  TensorRef self, index;
  std::optional<TensorRef> src;
  size_t dim;
};

ScatterOperands scatter_operands(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  size_t dim = self.rank() == 0 ? 0 : size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  int src = n.op->schema.find_arg("src");
  return {self, tensor_arg(l, n, "index"), src >= 0 ? std::optional(tensor_arg(l, n, "src")) : std::nullopt, dim};
}

/// Whether a scatter writes one element of each row along `dim` and nothing else: its index
/// has size 1 along dim and the output's size along every other dim (cross-entropy's
/// gradient, a one-hot row per token).
bool one_write_per_row(const TensorType &out, const TensorRef &index, size_t dim) {
  if (index.rank() != out.rank() || index.rank() == 0) return false;
  for (size_t d = 0; d < out.sizes.size(); ++d)
    if (index.sizes[d] != (d == dim ? SymInt(1) : out.sizes[d])) return false;
  return true;
}

TensorRef scatter_with(Lowering &l, const Node &n, const ScatterOperands &s, const ScatterWrites &w) {
  const TensorRef &index = s.index;
  const TensorType &out = l.graph().type(n.outputs[0]);
  // One write per row, over self: out[x] = x[dim] == index[x'] ? value[x'] : self[x], x' being
  // x at 0 along dim. A pointwise node, which fuses into its readers and needs no buffer of
  // its own, where the scatter kernel copies self whole and then writes. (An index outside
  // the dim writes nothing here; the scatter kernel would report it.)
  if (!w.combine && !w.init && one_write_per_row(out, index, s.dim))
    return l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      std::vector<Expr> row = x;
      row[s.dim] = Expr(0);
      int at = load_index(b, index, row, std::nullopt);
      int here = b.binary(Op::Eq, b.index(x[s.dim], DType::I64), at, DType::Bool);
      int value = w.from_src ? b.cast(Lowering::load_broadcast(b, *s.src, row), out.dtype)
                             : b.constant(w.value ? *w.value : number(arg(n, "value")), out.dtype);
      return b.where(here, value, b.cast(Lowering::load_broadcast(b, s.self, x), out.dtype), out.dtype);
    });
  TensorRef dense{-1, out.dtype, out.sizes, out.strides, 0};
  return l.scatter(
      n.name, out, w.init ? *w.init : s.self, index.sizes, w.combine.has_value(),
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int value = w.from_src ? Lowering::load_broadcast(b, *s.src, x)
                               : b.constant(w.value ? *w.value : number(arg(n, "value")), out.dtype);
        if (index.rank() == 0) return std::pair{value, std::vector<int>{}};
        return std::pair{value, std::vector<int>{load_index(b, index, x, std::nullopt)}};
      },
      [&](const std::vector<Expr> &x) {
        std::vector<Expr> at = x;
        if (index.rank() > 0) at[s.dim] = Expr(ir::indirect_var(0));
        return Lowering::offset(dense, at);
      },
      w.combine.value_or(Op::Add));
}

TensorRef scatter_with(Lowering &l, const Node &n, const ScatterWrites &w) {
  return scatter_with(l, n, scatter_operands(l, n), w);
}

// Every src element combined into the element scatter would write, by sum, prod, amax or
// amin, starting from self's value or (include_self false) from the scattered values alone:
// from 0 (1 for prod), or for amax and amin from one of them, written first. mean divides
// the sum by the count of values combined (self's among them when included), positions with
// none keeping self, as eager does (by floor division for integers).
std::vector<TensorRef> scatter_reduced(Lowering &l, const Node &n, const ScatterOperands &s, const std::string &reduce,
                                       bool include_self) {
  const TensorType &out = l.graph().type(n.outputs[0]);
  const std::map<std::string, Op> ops = {{"sum", Op::Add}, {"mean", Op::Add}, {"prod", Op::Mul},
                                         {"amax", Op::Maximum}, {"amin", Op::Minimum}};
  Op op = ops.at(reduce);
  bool extremum = op == Op::Maximum || op == Op::Minimum;
  std::optional<TensorRef> start;
  if (!include_self && extremum) {
    start = scatter_with(l, n, s, {});  // one of the values at each position they reach
  } else if (!include_self) {
    start = scatter_with(l, n, s, {false, std::nullopt, nullptr, op == Op::Mul ? 1.0 : 0.0});
  }
  TensorRef combined = scatter_with(l, n, s, {true, op, start ? &*start : nullptr, std::nullopt});
  if (reduce != "mean") return {combined};
  TensorRef zero_or_one = l.pointwise(out, n.name + " count", [&](BodyBuilder &b, const std::vector<Expr> &) {
    return b.constant(include_self ? 1 : 0, out.dtype);
  });
  TensorRef counts = scatter_with(l, n, s, {false, Op::Add, &zero_or_one, 1.0});
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int sum = b.load(combined.buffer, Lowering::offset(combined, x), out.dtype);
    int count = b.load(counts.buffer, Lowering::offset(counts, x), out.dtype);
    int none = b.binary(Op::Eq, count, b.constant(0, out.dtype), DType::Bool);
    count = b.where(none, b.constant(1, out.dtype), count, out.dtype);
    return b.binary(is_floating(out.dtype) ? Op::TrueDiv : Op::FloorDiv, sum, count, out.dtype);
  })};
}

bool include_self(const Node &n) {
  const Arg &a = arg(n, "include_self");
  return a.is_none() || a.as<bool>();
}

// scatter_reduce.two(self, dim, index, src, reduce, include_self).
std::vector<TensorRef> scatter_reduce(Lowering &l, const Node &n) {
  return scatter_reduced(l, n, scatter_operands(l, n), arg(n, "reduce").as<std::string>(), include_self(n));
}

// index_reduce(self, dim, index, source, reduce, include_self): source's slice j along dim
// reduced into self's slice index[j]: scatter_reduce with index[j] broadcast over source's
// other dims (a view of stride 0).
std::vector<TensorRef> index_reduce(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &index = tensor_arg(l, n, "index"), &source = tensor_arg(l, n, "source");
  size_t dim = self.rank() == 0 ? 0 : size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  TensorRef spread{index.buffer, index.dtype, source.sizes, Shape(source.sizes.size(), 0), index.offset};
  if (source.rank() > 0) spread.strides[dim] = index.rank() > 0 ? index.strides[0] : SymInt(0);
  return scatter_reduced(l, n, {self, spread, source, dim}, arg(n, "reduce").as<std::string>(), include_self(n));
}

bool is_mask(Lowering &l, const Arg &a) {
  return !a.is_none() && (l.graph().type(a.as<ValueId>()).dtype == DType::Bool ||
                          l.graph().type(a.as<ValueId>()).dtype == DType::U8);
}

// index_put with one bool mask over leading dims and values that do not depend on the
// selected position: where(mask, values, self). A mask whose values differ per selected
// element needs the positions of the true elements, which depend on the data.
std::vector<TensorRef> masked_put(Lowering &l, const Node &n, const ArgList &list) {
  const TensorRef &self = tensor_arg(l, n, "self"), &values = tensor_arg(l, n, "values");
  size_t first = 0;
  while (list[first].is_none()) ++first;
  const TensorRef &mask = l.ref(list[first].as<ValueId>());
  size_t rest = size_t(self.rank()) - first - size_t(mask.rank());
  COIL_USER_CHECK(list.size() == first + 1 && values.rank() <= int64_t(rest + 1) &&
                      (values.rank() <= int64_t(rest) || values.sizes[0] == 1),
                  "index_put with a bool mask and values per selected element is not supported yet");
  bool accumulate = arg(n, "accumulate").as<bool>();
  const TensorType &out = l.graph().type(n.outputs[0]);
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    std::vector<Expr> at(x.begin() + long(first), x.begin() + long(first) + mask.rank());
    int selected = b.cast(Lowering::load_broadcast(b, mask, at), DType::Bool);
    std::vector<Expr> tail(x.end() - long(rest), x.end());
    int v = b.cast(Lowering::load_broadcast(b, values, tail), out.dtype);
    int old = b.cast(Lowering::load_broadcast(b, self, x), out.dtype);
    if (accumulate) v = b.binary(Op::Add, old, v, out.dtype);
    return b.where(selected, v, old, out.dtype);
  })};
}

// index_put(self, indices, values): self with self[indices] = values (or += values);
// the written positions are those advanced indexing would read.
std::vector<TensorRef> index_put(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &values = tensor_arg(l, n, "values");
  const ArgList &list = arg(n, "indices").as<ArgList>();
  for (const Arg &a : list)
    if (is_mask(l, a)) return masked_put(l, n, list);
  const TensorType &out = l.graph().type(n.outputs[0]);
  AdvancedIndex ai(l, self, list);
  TensorRef dense{-1, out.dtype, out.sizes, out.strides, 0};
  return {l.scatter(
      n.name, out, self, ai.result_shape(), arg(n, "accumulate").as<bool>(),
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        return std::pair{Lowering::load_broadcast(b, values, x), ai.load_indices(b, x)};
      },
      [&](const std::vector<Expr> &x) { return Lowering::offset(dense, ai.source_index(x)); })};
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
// each index's gradient row added into row `index` of a [num_weights, D] gradient (a
// scatter-add in opmath, then the gradient's dtype), rows of padding_idx left at zero;
// scale_grad_by_freq divides each row's contributions by how often its index occurs.
std::vector<TensorRef> embedding_backward(Lowering &l, const Node &n) {
  const TensorRef &dy = tensor_arg(l, n, "grad_output"), &indices = tensor_arg(l, n, "indices");
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t padding = arg(n, "padding_idx").integer();
  bool by_freq = arg(n, "scale_grad_by_freq").as<bool>();
  DType c = opmath_dtype(out.dtype);
  Shape positions = indices.sizes;  // grad_output is indices' shape then D
  std::optional<TensorRef> counts;
  if (by_freq) {
    TensorType count_type{DType::I64, {out.sizes[0]}, {1}, out.device};
    TensorRef dense{-1, DType::I64, count_type.sizes, count_type.strides, 0};
    counts = l.scatter(
        n.name + " counts", count_type, l.fill(count_type, n.name + " zeros"), positions, true,
        [&](BodyBuilder &b, const std::vector<Expr> &x) {
          return std::pair{b.constant(1, DType::I64), std::vector<int>{load_index(b, indices, x, std::nullopt)}};
        },
        [&](const std::vector<Expr> &) { return Lowering::offset(dense, {Expr(ir::indirect_var(0))}); });
  }
  TensorType acc{c, out.sizes, contiguous_strides(out.sizes), out.device};
  TensorRef dense{-1, c, acc.sizes, acc.strides, 0};
  Shape ranges = positions;
  ranges.push_back(out.sizes[1]);
  TensorRef sum = l.scatter(
      n.name, acc, l.fill(acc, n.name + " zeros"), ranges, true,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        std::vector<Expr> at(x.begin(), x.end() - 1);
        int row = load_index(b, indices, at, std::nullopt);
        int g = b.cast(Lowering::load_broadcast(b, dy, x), c);
        if (counts) g = b.binary(Op::TrueDiv, g, b.cast(read_at(b, *counts, {Expr(0)}, 0, row), c), c);
        int padded = b.binary(Op::Eq, row, b.constant(double(padding), DType::I64), DType::Bool);
        return std::pair{b.where(padded, b.constant(0, c), g, c), std::vector<int>{row}};
      },
      [&](const std::vector<Expr> &x) { return Lowering::offset(dense, {Expr(ir::indirect_var(0)), x.back()}); });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.load(sum.buffer, Lowering::offset(sum, x), c);
  })};
}

// masked_scatter(self, mask, source): self where the mask (broadcast to self) is false; the
// k-th true element in row-major order takes source's k-th element (in its row-major order).
// k is an inclusive prefix count of the mask over the flattened elements (a Scan), minus one.
std::vector<TensorRef> masked_scatter(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &mask = tensor_arg(l, n, "mask"), &source = tensor_arg(l, n, "source");
  const TensorType &out = l.graph().type(n.outputs[0]);
  SymInt count = checked_numel(out.sizes), available = checked_numel(source.sizes);
  // The flat position f of self's element, and back.
  TensorType prefix_type{DType::I64, {count}, {1}, out.device};
  TensorRef prefix = l.scan(prefix_type, 0, ir::ScanOp::Sum, n.name + " prefix",
                            [&](BodyBuilder &b, const std::vector<Expr> &x) {
                              return b.cast(Lowering::load_broadcast(b, mask, unravel(x[0], out.sizes)), DType::I64);
                            });
  SymShape contiguous = contiguous_strides(out.sizes);
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int selected = b.cast(Lowering::load_broadcast(b, mask, x), DType::Bool);
    int old = Lowering::load_broadcast(b, self, x);
    if (available == 0) return old;
    Expr flat = ir::offset_of(x, contiguous);
    int k = b.binary(Op::Sub, b.load(prefix.buffer, flat, DType::I64), b.constant(1, DType::I64), DType::I64);
    // Within source whatever the mask (eager refuses a mask with more true elements than
    // source has; coil reads source's last one there).
    k = b.binary(Op::Minimum, b.binary(Op::Maximum, k, b.constant(0, DType::I64), DType::I64),
                 size_value(b, available - 1, DType::I64), DType::I64);
    std::vector<Expr> at = unravel(Expr(ir::indirect_var(0)), source.sizes);
    int taken = b.indirect_load(source.buffer, Lowering::offset(source, at), source.dtype, {k});
    return b.where(selected, taken, old, out.dtype);
  })};
}

// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights, include_last_offset, padding_idx): bag b holds indices
// [offsets[b], offsets[b + 1]) (the last to the end, unless include_last_offset makes the
// last offset that end). Each index's bag is the count of bags after the first that start at
// or before it (a reduction over the offsets); its weight row (times its per-sample weight)
// is then added (sum, mean) or maxed (max) into its bag's row, a scatter; padding_idx rows
// are skipped. mean divides by the bag's count of indices, and an empty bag is zeros.
// Outputs: the bags; offset2bag (each index's bag, where the meta gives it a size);
// bag_size (each bag's count of indices); max_indices (max mode: the index of the row that
// gave each maximum, the last of equal ones; else zeros).
std::vector<TensorRef> embedding_bag(Lowering &l, const Node &n) {
  const TensorRef &weight = tensor_arg(l, n, "weight"), &indices = tensor_arg(l, n, "indices"), &offsets = tensor_arg(l, n, "offsets");
  int64_t mode = arg(n, "mode").integer(), padding = arg(n, "padding_idx").integer();
  const Arg &psw_arg = arg(n, "per_sample_weights");
  std::optional<TensorRef> psw;
  if (!psw_arg.is_none()) psw = l.ref(psw_arg.as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t bags = out.sizes[0], dim = out.sizes[1], count = indices.sizes[0];
  Device device = out.device;
  DType c = opmath_dtype(out.dtype);
  auto i64 = [](BodyBuilder &b, double v) { return b.constant(v, DType::I64); };
  auto index_at = [&](BodyBuilder &b, const Expr &i) { return load_index(b, indices, {i}, std::nullopt); };
  // Each index's bag.
  TensorType bag_type{DType::I64, {count}, {1}, device};
  TensorRef bag = l.reduction(bag_type, {std::max<int64_t>(bags - 1, 1)}, ir::ReduceOp::Sum, n.name + " bags",
                              [&](BodyBuilder &b, const std::vector<Expr> &i, const std::vector<Expr> &r) {
                                if (bags <= 1) return i64(b, 0);
                                int start = load_index(b, offsets, {r[0] + 1}, std::nullopt);
                                return b.cast(b.binary(Op::Le, start, b.index(i[0], DType::I64), DType::Bool), DType::I64);
                              })[0];
  auto skipped = [&](BodyBuilder &b, int row) { return b.binary(Op::Eq, row, i64(b, double(padding)), DType::Bool); };
  // Each bag's count of indices (padding_idx's not counted).
  TensorType size_type{DType::I64, {bags}, {1}, device};
  TensorRef dense_sizes{-1, DType::I64, {bags}, {1}, 0};
  TensorRef sizes = l.scatter(
      n.name + " sizes", size_type, l.fill(size_type, n.name + " zeros"), {count}, true,
      [&](BodyBuilder &b, const std::vector<Expr> &i) {
        int row = index_at(b, i[0]);
        int one = b.where(skipped(b, row), i64(b, 0), i64(b, 1), DType::I64);
        return std::pair{one, std::vector<int>{b.load(bag.buffer, i[0], DType::I64)}};
      },
      [&](const std::vector<Expr> &) { return Lowering::offset(dense_sizes, {Expr(ir::indirect_var(0))}); });
  // The bags' rows, combined in opmath.
  bool max = mode == 2;
  TensorType acc{c, out.sizes, contiguous_strides(out.sizes), device};
  TensorRef dense{-1, c, acc.sizes, acc.strides, 0};
  auto row_value = [&](BodyBuilder &b, const std::vector<Expr> &x, int row) {
    std::vector<Expr> at = {Expr(ir::indirect_var(0)), x[1]};
    int v = b.cast(b.indirect_load(weight.buffer, Lowering::offset(weight, at), weight.dtype, {row}), c);
    if (psw) v = b.binary(Op::Mul, v, b.cast(Lowering::load_broadcast(b, *psw, {x[0]}), c), c);
    return v;
  };
  TensorRef combined = l.scatter(
      n.name + " combine", acc, l.fill(acc, n.name + " start", max ? -INFINITY : 0), {count, dim}, true,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int row = index_at(b, x[0]);
        int v = b.where(skipped(b, row), b.constant(max ? -INFINITY : 0, c), row_value(b, x, row), c);
        return std::pair{v, std::vector<int>{b.load(bag.buffer, x[0], DType::I64)}};
      },
      [&](const std::vector<Expr> &x) { return Lowering::offset(dense, {Expr(ir::indirect_var(0)), x[1]}); },
      max ? Op::Maximum : Op::Add);
  TensorRef result = l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = b.load(combined.buffer, Lowering::offset(combined, x), c);
    int size = b.load(sizes.buffer, x[0], DType::I64);
    int empty = b.binary(Op::Eq, size, i64(b, 0), DType::Bool);
    if (mode == 1) v = b.binary(Op::TrueDiv, v, b.cast(b.where(empty, i64(b, 1), size, DType::I64), c), c);
    return b.where(empty, b.constant(0, c), v, c);
  });
  std::vector<TensorRef> outs = {result};
  const TensorType &offset2bag = l.graph().type(n.outputs[1]);
  COIL_USER_CHECK(offset2bag.sizes[0] == count || offset2bag.sizes[0] == 0, n.name, ": offset2bag has ",
                  offset2bag.sizes[0], " entries; expected one per index (", count, ") or none");
  outs.push_back(offset2bag.sizes[0] == count ? l.pointwise(offset2bag, n.name + " offset2bag",
                                                            [&](BodyBuilder &b, const std::vector<Expr> &i) {
                                                              return b.load(bag.buffer, i[0], DType::I64);
                                                            })
                                              : l.fill(offset2bag, n.name + " offset2bag"));
  const TensorType &bag_size = l.graph().type(n.outputs[2]);
  // bag_size has a slot per offset on CUDA (one more than the bags with include_last_offset).
  outs.push_back(l.pointwise(bag_size, n.name + " bag_size", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    if (bags == 0) return i64(b, 0);
    int inside = b.binary(Op::Lt, b.index(x[0], DType::I64), i64(b, double(bags)), DType::Bool);
    int v = b.masked_load(sizes.buffer, x[0], DType::I64, inside, 0);
    return b.where(inside, v, i64(b, 0), DType::I64);
  }));
  const TensorType &max_type = l.graph().type(n.outputs[3]);
  if (!max) {
    outs.push_back(l.fill(max_type, n.name + " max_indices"));
    return outs;
  }
  // Which row gave each maximum: the largest index whose row equals it (a scatter of maxima).
  TensorType which_type{DType::I64, out.sizes, contiguous_strides(out.sizes), device};
  TensorRef which_dense{-1, DType::I64, which_type.sizes, which_type.strides, 0};
  TensorRef which = l.scatter(
      n.name + " max_indices", which_type, l.fill(which_type, n.name + " none", -1), {count, dim}, true,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int row = index_at(b, x[0]);
        int at_bag = b.load(bag.buffer, x[0], DType::I64);
        int best = b.indirect_load(combined.buffer, Lowering::offset(combined, {Expr(ir::indirect_var(0)), x[1]}), c, {at_bag});
        int hit = b.binary(Op::LogicalAnd, b.binary(Op::Eq, row_value(b, x, row), best, DType::Bool),
                           b.unary(Op::LogicalNot, skipped(b, row), DType::Bool), DType::Bool);
        return std::pair{b.where(hit, row, i64(b, -1), DType::I64), std::vector<int>{at_bag}};
      },
      [&](const std::vector<Expr> &x) { return Lowering::offset(which_dense, {Expr(ir::indirect_var(0)), x[1]}); },
      Op::Maximum);
  outs.push_back(l.pointwise(max_type, n.name + " max_indices", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = b.load(which.buffer, Lowering::offset(which, x), DType::I64);
    return b.binary(Op::Maximum, v, i64(b, 0), DType::I64);
  }));
  return outs;
}

// nonzero_static(self, size, fill_value): the coordinates of self's first `size` nonzero
// elements in row-major order, rows past them fill_value. Each nonzero element's row is the
// count of nonzero elements up to it (a scan over the flat input); it writes its coordinates
// there, or into a spare row past `size` that the output leaves out.
std::vector<TensorRef> nonzero_static(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t size = out.sizes[0], rank = self.rank(), numel = checked_numel(self.sizes);
  double fill = double(arg(n, "fill_value").integer());
  if (numel == 0 || rank == 0 || size == 0) {
    // A 0-d input gives [size, 0]; nothing nonzero leaves every row filled.
    return {l.fill(out, n.name, fill)};
  }
  auto nonzero = [&](BodyBuilder &b, const Expr &flat) {
    int v = Lowering::load_broadcast(b, self, unravel(flat, self.sizes));
    return b.binary(Op::Ne, v, b.constant(0, self.dtype), DType::Bool);
  };
  TensorType count_type{DType::I64, {numel}, {1}, out.device};
  TensorRef counts = l.scan(count_type, 0, ir::ScanOp::Sum, n.name + " counts", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.cast(nonzero(b, x[0]), DType::I64);
  });
  TensorType spare{DType::I64, Shape{size + 1, rank}, contiguous_strides(Shape{size + 1, rank}), out.device};
  TensorRef rows = l.scatter(
      n.name + " rows", spare, l.fill(spare, n.name + " fill", fill), {numel, rank}, false,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int row = b.binary(Op::Sub, b.load(counts.buffer, x[0], DType::I64), b.constant(1, DType::I64), DType::I64);
        int kept = b.binary(Op::LogicalAnd, nonzero(b, x[0]), b.binary(Op::Lt, row, b.constant(double(size), DType::I64), DType::Bool),
                            DType::Bool);
        row = b.where(kept, row, b.constant(double(size), DType::I64), DType::I64);
        // Coordinate x[1] of the element: a choice among the unravelled coordinates.
        std::vector<Expr> coords = unravel(x[0], self.sizes);
        int coord = b.index(coords[0], DType::I64);
        for (int64_t d = 1; d < rank; ++d) {
          int here = b.binary(Op::Eq, b.index(x[1], DType::I64), b.constant(double(d), DType::I64), DType::Bool);
          coord = b.where(here, b.index(coords[size_t(d)], DType::I64), coord, DType::I64);
        }
        return std::pair{coord, std::vector<int>{row}};
      },
      [&](const std::vector<Expr> &x) { return Expr(ir::indirect_var(0)) * rank + x[1]; });
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.load(rows.buffer, x[0] * rank + x[1], DType::I64);
  })};
}

// put(self, index, source, accumulate): self with the elements at the row-major positions
// `index` (negative from the end) set to (or increased by) source's, both read in row-major
// order.
std::vector<TensorRef> put(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &index = tensor_arg(l, n, "index"), &source = tensor_arg(l, n, "source");
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t count = checked_numel(index.sizes), numel = checked_numel(self.sizes);
  size_t rank = self.sizes.size();
  TensorRef dense{-1, out.dtype, out.sizes, out.strides, 0};
  return {l.scatter(
      n.name, out, self, {count}, arg(n, "accumulate").as<bool>(),
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int at = load_index(b, index, unravel(x[0], index.sizes), numel);
        std::vector<int> coords(rank);
        for (size_t d = rank; d-- > 0;) {
          int size = b.constant(double(self.sizes[d]), DType::I64);
          coords[d] = b.binary(Op::Remainder, at, size, DType::I64);
          at = b.binary(Op::FloorDiv, at, size, DType::I64);
        }
        return std::pair{Lowering::load_broadcast(b, source, unravel(x[0], source.sizes)), coords};
      },
      [&](const std::vector<Expr> &) {
        std::vector<Expr> at;
        for (size_t d = 0; d < rank; ++d) at.push_back(Expr(ir::indirect_var(int(d))));
        return Lowering::offset(dense, at);
      })};
}

// as_strided_scatter(self, src, size, stride, storage_offset): a copy of self (its layout
// kept) whose storage, seen through as_strided(size, stride, storage_offset), takes src.
std::vector<TensorRef> as_strided_scatter(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self"), &src = tensor_arg(l, n, "src");
  const TensorType &out = l.graph().type(n.outputs[0]);
  Shape size = ints_of(arg(n, "size")), stride = ints_of(arg(n, "stride"));
  const Arg &offset_arg = arg(n, "storage_offset");
  int64_t offset = offset_arg.is_none() ? 0 : offset_arg.integer();
  return {l.scatter(
      n.name, out, self, size, false,
      [&](BodyBuilder &b, const std::vector<Expr> &x) { return std::pair{Lowering::load_broadcast(b, src, x), std::vector<int>{}}; },
      [&](const std::vector<Expr> &x) {
        Expr at = offset;
        for (size_t d = 0; d < x.size(); ++d) at = at + x[d] * stride[d];
        return at;
      })};
}

}  // namespace

void add_indexing_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.index_select.default"] = index_select;
  t["aten.gather.default"] = gather;
  t["aten.embedding.default"] = embedding;
  t["aten.embedding_dense_backward.default"] = embedding_backward;
  t["aten.index.Tensor"] = advanced_index;
  t["aten.scatter.src"] = [](Lowering &l, const Node &n) { return std::vector{scatter_with(l, n, {})}; };
  t["aten.scatter.value"] = [](Lowering &l, const Node &n) {
    return std::vector{scatter_with(l, n, {false, std::nullopt, nullptr, std::nullopt})};
  };
  t["aten.scatter_add.default"] = [](Lowering &l, const Node &n) {
    return std::vector{scatter_with(l, n, {true, Op::Add, nullptr, std::nullopt})};
  };
  t["aten.scatter_reduce.two"] = scatter_reduce;
  t["aten.index_reduce.default"] = index_reduce;
  t["aten.nonzero_static.default"] = nonzero_static;
  t["aten.put.default"] = put;
  t["aten.as_strided_scatter.default"] = as_strided_scatter;
  // scatter.reduce and scatter.value_reduce: reduce 'add' or 'multiply' onto self.
  for (const char *op : {"aten.scatter.reduce", "aten.scatter.value_reduce"})
    t[op] = [](Lowering &l, const Node &n) {
      std::string reduce = arg(n, "reduce").as<std::string>();
      COIL_USER_CHECK(reduce == "add" || reduce == "multiply", n.name,
                      ": scatter's reduce must be 'add' or 'multiply', got '", reduce, "'");
      bool src = n.op->schema.find_arg("src") >= 0;
      return std::vector{scatter_with(l, n, {src, reduce == "add" ? Op::Add : Op::Mul, nullptr, std::nullopt})};
    };
  t["aten.index_put.default"] = index_put;
  t["aten.masked_scatter.default"] = masked_scatter;
  t["aten._embedding_bag.default"] = embedding_bag;
  t["aten._embedding_bag_forward_only.default"] = embedding_bag;
}

}  // namespace coil::lowering
