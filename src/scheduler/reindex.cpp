#include "scheduler/reindex.h"

#include <algorithm>
#include <numeric>

#include "support/error.h"

namespace coil::sched {

using ir::Expr;
using ir::VarId;

ir::Ranges ranges_of(const Shape &ranges, const Shape &reduction_ranges) {
  ir::Ranges r;
  int v = 0;
  for (int64_t s : ranges) r.set(VarId{v++}, s);
  for (int64_t s : reduction_ranges) r.set(VarId{v++}, s);
  return r;
}

namespace {

// The row-major linear index of `vars` over `sizes`.
Expr linear_index(const Shape &sizes, int first) {
  Expr l(0);
  for (size_t d = 0; d < sizes.size(); ++d) l = l * sizes[d] + Expr(VarId{first + int(d)});
  return l;
}

}  // namespace

VarMap linearize(const Shape &from, const std::vector<int> &order, const Shape &to, int first,
                 const ir::Ranges &to_ranges) {
  COIL_ASSERT(order.size() == from.size(), "an order of ", order.size(), " dims for a space of ", from.size());
  Expr l = linear_index(to, first);
  VarMap out(from.size(), Expr(0));
  int64_t suffix = 1;
  for (size_t k = order.size(); k-- > 0;) {
    int64_t size = from[size_t(order[k])];
    if (size > 1) out[size_t(order[k])] = ir::simplify(ir::mod(ir::floor_div(l, suffix), size), to_ranges);
    suffix *= size;
  }
  return out;
}

std::optional<VarMap> solve_injective(const Expr &store, const Shape &sizes, const Expr &target,
                                      const ir::Ranges &target_ranges) {
  std::vector<int64_t> stride(sizes.size(), 0);
  for (const ir::Term &t : store.terms()) {
    if (t.factors.size() != 1 || t.factors[0].kind() != ir::AtomKind::Var || t.coeff <= 0) return std::nullopt;
    int v = t.factors[0].var().id;
    if (v < 0 || v >= int(sizes.size())) return std::nullopt;
    stride[size_t(v)] = t.coeff;
  }
  std::vector<int> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (stride[d] == 0) return std::nullopt;  // a variable the store ignores: not injective
    dims.push_back(int(d));
  }
  std::sort(dims.begin(), dims.end(), [&](int a, int b) { return stride[size_t(a)] < stride[size_t(b)]; });
  for (size_t k = 1; k < dims.size(); ++k)
    if (stride[size_t(dims[k])] < stride[size_t(dims[k - 1])] * sizes[size_t(dims[k - 1])]) return std::nullopt;
  Expr shifted = target - Expr(store.constant());
  VarMap out(sizes.size(), Expr(0));
  for (int d : dims)
    out[size_t(d)] = ir::simplify(ir::mod(ir::floor_div(shifted, stride[size_t(d)]), sizes[size_t(d)]), target_ranges);
  return out;
}

ir::Node rewrite_node(const ir::Node &n, const VarMap &map, Shape ranges, Shape reduction_ranges) {
  COIL_ASSERT(map.size() == size_t(n.num_vars()), "a map of ", map.size(), " variables for a node of ", n.num_vars());
  ir::Ranges r = ranges_of(ranges, reduction_ranges);
  auto reindex = [&](const Expr &e) {
    return ir::simplify(ir::substitute(e, [&](VarId v) -> std::optional<Expr> {
                          if (v.id >= 0 && v.id < int(map.size())) return map[size_t(v.id)];
                          return std::nullopt;
                        }),
                        r);
  };
  ir::Node out = n;
  if (out.output_index.empty())
    for (size_t d = 0; d < n.ranges.size(); ++d) out.output_index.push_back(Expr(VarId{int(d)}));
  for (Expr &e : out.output_index) e = reindex(e);
  if (n.kind == ir::NodeKind::Scatter) out.scatter_index = reindex(n.scatter_index);
  ir::BodyBuilder b;
  std::vector<int> values = ir::copy_body(n.body, b, reindex);
  for (int res : n.body.results) b.add_result(values[size_t(res)]);
  out.body = ir::prune_dead_values(b.finish());
  out.ranges = std::move(ranges);
  out.reduction_ranges = std::move(reduction_ranges);
  return out;
}

}  // namespace coil::sched
