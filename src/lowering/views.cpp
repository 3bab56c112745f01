// Views are index maps, never copies: the result reads the same buffer with the sizes
// and strides the meta function computed and, for slices and selects, a new offset.
// Only reshape of a layout no view can express copies, as PyTorch does; repeat, a copy,
// is here as the index map it is.
#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::Expr;

const TensorRef &input(Lowering &l, const Node &n) { return l.ref(n.args[0].as<ValueId>()); }

/// The same buffer seen with output `i`'s sizes and strides, `offset` elements further.
TensorRef view_of(Lowering &l, const Node &n, size_t i, const SymInt &extra_offset = 0) {
  const TensorRef &base = input(l, n);
  const TensorType &t = l.graph().type(n.outputs[i]);
  return TensorRef{base.buffer, base.dtype, t.sizes, t.strides, base.offset + extra_offset};
}

std::vector<TensorRef> same_offset(Lowering &l, const Node &n) {
  std::vector<TensorRef> out;
  for (size_t i = 0; i < n.outputs.size(); ++i) out.push_back(view_of(l, n, i));
  return out;
}

int64_t int_arg(const Node &n, const char *name) { return n.args[size_t(n.op->schema.find_arg(name))].integer(); }

std::optional<SymInt> optional_int_arg(const Node &n, const char *name) {
  const Arg &a = n.args[size_t(n.op->schema.find_arg(name))];
  if (a.is_none()) return std::nullopt;
  return a.as<SymInt>();
}

std::vector<TensorRef> slice(Lowering &l, const Node &n) {
  const TensorRef &base = input(l, n);
  size_t d = size_t(wrap_dim(int_arg(n, "dim"), base.rank()));
  auto bounds = slice_bounds(base.sizes[d], optional_int_arg(n, "start"), optional_int_arg(n, "end"), int_arg(n, "step"));
  return {view_of(l, n, 0, bounds.start * base.strides[d])};
}

std::vector<TensorRef> select(Lowering &l, const Node &n) {
  const TensorRef &base = input(l, n);
  size_t d = size_t(wrap_dim(int_arg(n, "dim"), base.rank()));
  int64_t index = int_arg(n, "index");
  SymInt at = index < 0 ? index + base.sizes[d] : SymInt(index);
  return {view_of(l, n, 0, at * base.strides[d])};
}

/// Consecutive chunks along `dim`, each a view at the offset of its first element.
std::vector<TensorRef> chunks(Lowering &l, const Node &n) {
  const TensorRef &base = input(l, n);
  size_t d = size_t(wrap_dim(int_arg(n, "dim"), base.rank()));
  std::vector<TensorRef> out;
  SymInt start = 0;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    out.push_back(view_of(l, n, i, start * base.strides[d]));
    start += l.graph().type(n.outputs[i]).sizes[d];
  }
  return out;
}

std::vector<TensorRef> unbind(Lowering &l, const Node &n) {
  const TensorRef &base = input(l, n);
  size_t d = size_t(wrap_dim(int_arg(n, "dim"), base.rank()));
  std::vector<TensorRef> out;
  for (size_t i = 0; i < n.outputs.size(); ++i) out.push_back(view_of(l, n, i, int64_t(i) * base.strides[d]));
  return out;
}

/// as_strided addresses the base's storage directly: storage_offset is absolute.
std::vector<TensorRef> as_strided(Lowering &l, const Node &n) {
  TensorRef r = view_of(l, n, 0);
  if (auto offset = optional_int_arg(n, "storage_offset")) r.offset = *offset;
  return {r};
}

std::vector<TensorRef> diagonal(Lowering &l, const Node &n) {
  const TensorRef &base = input(l, n);
  DiagonalView v = diagonal_view(base.sizes, base.strides, int_arg(n, "offset"), int_arg(n, "dim1"), int_arg(n, "dim2"));
  return {view_of(l, n, 0, v.start)};
}

/// The element of `in` at row-major position `flat` (both of the same numel).
Expr unflatten_offset(const TensorRef &in, const Expr &flat) { return Lowering::offset(in, unravel(flat, in.sizes)); }

/// reshape: a view when the strides allow one, else a copy in row-major order.
std::vector<TensorRef> reshape(Lowering &l, const Node &n) {
  const TensorRef &in = input(l, n);
  const TensorType &t = l.graph().type(n.outputs[0]);
  if (view_strides(in.sizes, in.strides, t.sizes)) return same_offset(l, n);
  Shape out_contiguous = contiguous_strides(t.sizes);
  return {l.pointwise(t, n.name, [&](ir::BodyBuilder &b, const std::vector<Expr> &index) {
    return b.load(in.buffer, unflatten_offset(in, ir::offset_of(index, out_contiguous)), in.dtype);
  })};
}

/// repeat: out[..., i_d, ...] = in[..., i_d mod size_d, ...] over the input's dims, which
/// are the output's last ones.
std::vector<TensorRef> repeat(Lowering &l, const Node &n) {
  const TensorRef &in = input(l, n);
  const TensorType &t = l.graph().type(n.outputs[0]);
  size_t pad = t.sizes.size() - in.sizes.size();
  return {l.pointwise(t, n.name, [&](ir::BodyBuilder &b, const std::vector<Expr> &index) {
    std::vector<Expr> source;
    for (size_t d = 0; d < in.sizes.size(); ++d)
      source.push_back(in.sizes[d] <= 1 ? Expr(0) : ir::mod(index[pad + d], in.sizes[d].expr()));  // 0: nothing is read
    return b.load(in.buffer, Lowering::offset(in, source), in.dtype);
  })};
}

}  // namespace

void add_view_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  for (const char *target : {"aten.permute.default", "aten.transpose.int", "aten.t.default", "aten.view.default",
                             "aten._unsafe_view.default", "aten.expand.default", "aten.unsqueeze.default",
                             "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.alias.default",
                             "aten.unfold.default"})
    t[target] = same_offset;
  t["aten.slice.Tensor"] = slice;
  t["aten.select.int"] = select;
  t["aten.split.Tensor"] = chunks;
  t["aten.split_with_sizes.default"] = chunks;
  t["aten.unbind.int"] = unbind;
  t["aten.as_strided.default"] = as_strided;
  t["aten.reshape.default"] = reshape;
  t["aten.diagonal.default"] = diagonal;
  t["aten.repeat.default"] = repeat;
}

}  // namespace coil::lowering
