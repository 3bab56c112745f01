#include "scheduler/reindex.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "support/error.h"

namespace coil::sched {

using ir::Expr;
using ir::VarId;

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

namespace {

// The stride of each variable of `store` (an affine map of v0..v{n-1} over `sizes`), and
// the variables of size above 1 by increasing stride, when no two of them overlap;
// nothing when `store` is not of that form or ignores one of them.
std::optional<std::pair<std::vector<int64_t>, std::vector<int>>> injective_strides(const Expr &store,
                                                                                     const Shape &sizes) {
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
  return std::pair{std::move(stride), std::move(dims)};
}

Expr term_expr(const ir::Term &t, int64_t coeff) {
  Expr e(coeff);
  for (const ir::Atom &a : t.factors) e = e * Expr(a);
  return e;
}

}  // namespace

std::optional<VarMap> solve_injective(const Expr &store, const Shape &sizes, const Expr &target,
                                      const ir::Ranges &target_ranges) {
  auto form = injective_strides(store, sizes);
  if (!form) return std::nullopt;
  const std::vector<int64_t> &stride = form->first;
  const std::vector<int> &dims = form->second;
  Expr shifted = target - Expr(store.constant());
  VarMap out(sizes.size(), Expr(0));
  for (int d : dims)
    out[size_t(d)] = ir::simplify(ir::mod(ir::floor_div(shifted, stride[size_t(d)]), sizes[size_t(d)]), target_ranges);
  return out;
}

std::vector<MaskFact> mask_facts(const ir::Body &body, int mask) {
  std::vector<MaskFact> facts;
  auto add = [&](const Expr &e, int64_t lo, int64_t hi) {
    for (MaskFact &f : facts)
      if (f.e == e) {
        f.lo = std::max(f.lo, lo);
        f.hi = std::min(f.hi, hi);
        return;
      }
    facts.push_back({e, lo, hi});
  };
  std::vector<int> todo = {mask};
  while (!todo.empty()) {
    const ir::Instr &i = body.at(todo.back());
    todo.pop_back();
    if (i.op == ir::Op::LogicalAnd) {
      todo.push_back(i.args[0]);
      todo.push_back(i.args[1]);
      continue;
    }
    if (i.op != ir::Op::Ge && i.op != ir::Op::Gt && i.op != ir::Op::Lt && i.op != ir::Op::Le) continue;
    const ir::Instr &a = body.at(i.args[0]), &c = body.at(i.args[1]);
    if (a.op != ir::Op::Index || c.op != ir::Op::Constant || c.value != std::floor(c.value) ||
        std::abs(c.value) > 1e15)
      continue;
    auto k = int64_t(c.value);
    constexpr int64_t lo = ir::Interval::kNoLower, hi = ir::Interval::kNoUpper;
    switch (i.op) {
      case ir::Op::Ge: add(a.index, k, hi); break;
      case ir::Op::Gt: add(a.index, k + 1, hi); break;
      case ir::Op::Lt: add(a.index, lo, k); break;
      default: add(a.index, lo, k + 1); break;  // Le
    }
  }
  return facts;
}

std::optional<VarMap> solve_under_mask(const Expr &store, const Shape &sizes, const Expr &target,
                                       const ir::Ranges &target_ranges, const std::vector<MaskFact> &facts) {
  auto form = injective_strides(store, sizes);
  if (!form) return std::nullopt;
  const std::vector<int64_t> &stride = form->first;
  const std::vector<int> &dims = form->second;
  // Each term goes to the dim of the largest stride that divides its coefficient.
  VarMap part(sizes.size(), Expr(0));
  for (const ir::Term &t : target.terms()) {
    auto d = std::find_if(dims.rbegin(), dims.rend(), [&](int d) { return t.coeff % stride[size_t(d)] == 0; });
    if (d == dims.rend()) return std::nullopt;
    part[size_t(*d)] = part[size_t(*d)] + term_expr(t, t.coeff / stride[size_t(*d)]);
  }
  // The constant: a dim whose part a fact bounds up to a constant takes that constant;
  // the rest goes to the other dims, largest stride first.
  int64_t rest = target.constant() - store.constant();
  std::vector<std::optional<ir::Interval>> fact_of(sizes.size());
  for (int d : dims) {
    if (part[size_t(d)].terms().empty()) continue;
    for (const MaskFact &f : facts) {
      auto k = (f.e - part[size_t(d)]).as_constant();
      if (!k) continue;
      part[size_t(d)] = f.e;
      rest -= *k * stride[size_t(d)];
      fact_of[size_t(d)] = ir::Interval{f.lo, f.hi == ir::Interval::kNoUpper ? f.hi : f.hi - 1};
      break;
    }
  }
  for (auto d = dims.rbegin(); d != dims.rend() && rest != 0; ++d) {
    if (fact_of[size_t(*d)]) continue;
    int64_t k = rest >= 0 ? rest / stride[size_t(*d)] : -((-rest + stride[size_t(*d)] - 1) / stride[size_t(*d)]);
    part[size_t(*d)] = part[size_t(*d)] + Expr(k);
    rest -= k * stride[size_t(*d)];
  }
  if (rest != 0) return std::nullopt;
  Expr stored(store.constant());
  for (int d : dims) {
    ir::Interval in = ir::bounds(part[size_t(d)], target_ranges);
    if (const auto &f = fact_of[size_t(d)]) in = {std::max(in.lo, f->lo), std::min(in.hi, f->hi)};
    if (in.lo < 0 || in.hi >= sizes[size_t(d)]) return std::nullopt;
    stored = stored + part[size_t(d)] * stride[size_t(d)];
  }
  if (!(stored == target)) return std::nullopt;
  for (int d : dims) part[size_t(d)] = ir::simplify(part[size_t(d)], target_ranges);
  return part;
}

ir::Node rewrite_node(const ir::Program &p, const ir::Node &n, const VarMap &map, Shape ranges,
                      Shape reduction_ranges) {
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
  // An empty index is x0, x1, ... over the output's dims: none for a 0-d output, whose
  // node may already have been moved into loops of [1] (a sum to 0-d beside a softmax).
  bool zero_dim = !n.outputs.empty() && n.outputs[0] >= 0 && p.buffer(n.outputs[0]).type.rank() == 0;
  if (out.output_index.empty() && !zero_dim)
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
