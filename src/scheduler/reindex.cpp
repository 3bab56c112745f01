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
Expr linear_index(const SymShape &sizes, int first) {
  Expr l(0);
  for (size_t d = 0; d < sizes.size(); ++d) l = l * sizes[d] + Expr(VarId{first + int(d)});
  return l;
}

// The stride of each variable of `store` (an affine map of v0..v{n-1} over `sizes`, each
// term a positive multiple of one variable, by a number or by sizes: `x0*s1*64`), and the
// variables of size above 1 by increasing stride, when no two of them overlap under the
// symbols' ranges in `r`; nothing when `store` is not of that form or ignores one of them.
struct Strides {
  std::vector<Expr> stride;
  std::vector<int> dims;
};

// Whether an atom of a term is a size (`s0`, `s0 % 8`: no loop variable), which goes with a
// stride's coefficient, rather than a loop variable's atom.
bool size_atom(const ir::Atom &a) { return a.kind() == ir::AtomKind::Symbol || ir::vars_of(Expr(a)).empty(); }

std::optional<Strides> injective_strides(const Expr &store, const SymShape &sizes, const ir::Ranges &r) {
  Strides out{std::vector<Expr>(sizes.size(), Expr(0)), {}};
  for (const ir::Term &t : store.terms()) {
    int v = -1;
    Expr rest(t.coeff);
    for (const ir::Atom &a : t.factors) {
      if (a.kind() == ir::AtomKind::Var && v < 0) v = a.var().id;
      else if (size_atom(a)) rest = rest * Expr(a);
      else return std::nullopt;
    }
    if (v < 0 || v >= int(sizes.size())) return std::nullopt;
    // A stride of several terms (`x0*s1 - x0*(s1 % 8) + x0*8`) is positive as a whole.
    out.stride[size_t(v)] = out.stride[size_t(v)] + rest;
  }
  std::vector<int64_t> key(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (out.stride[d] == Expr(0)) return std::nullopt;  // a variable the store ignores: not injective
    // Positive: each term (sizes are not negative), or the whole at every size.
    const std::vector<ir::Term> &terms = out.stride[d].terms();
    bool positive_terms = out.stride[d].constant() >= 0 &&
                          std::all_of(terms.begin(), terms.end(), [](const ir::Term &t) { return t.coeff > 0; });
    if (!positive_terms && ir::bounds(out.stride[d], r).lo < 1) return std::nullopt;
    key[d] = ir::bounds(out.stride[d], r).lo;  // the stride itself, or its least over the symbols
    out.dims.push_back(int(d));
  }
  std::stable_sort(out.dims.begin(), out.dims.end(), [&](int a, int b) { return key[size_t(a)] < key[size_t(b)]; });
  for (size_t k = 1; k < out.dims.size(); ++k) {
    int inner = out.dims[k - 1];
    if (ir::bounds(out.stride[size_t(out.dims[k])] - out.stride[size_t(inner)] * sizes[size_t(inner)], r).lo < 0)
      return std::nullopt;
  }
  return out;
}

bool numeric(const Strides &form, const SymShape &sizes) {
  return !symbolic(sizes) && std::all_of(form.stride.begin(), form.stride.end(), [](const Expr &e) { return e.as_constant(); });
}

Expr term_expr(const ir::Term &t, int64_t coeff) {
  Expr e(coeff);
  for (const ir::Atom &a : t.factors) e = e * Expr(a);
  return e;
}

// Whether 0 <= part < size at every point of `r`, `in` the bounds of part (a mask's fact
// included) and `below` a size part stays under (a mask's `x3 - 1 < s0`): by numbers where
// they decide, else by part's upper_bound.
bool within(const Expr &part, const SymInt &size, const ir::Interval &in, const std::optional<Expr> &below,
            const ir::Ranges &r) {
  if (in.lo < 0) return false;
  if (!size.symbolic()) return in.hi < size.hint();
  if (in.hi != ir::Interval::kNoUpper) return ir::bounds(size.expr() - 1 - in.hi, r).lo >= 0;
  if (below && ir::bounds(size.expr() - *below, r).lo >= 0) return true;
  std::optional<Expr> upper = ir::upper_bound(part, r);
  return upper && ir::bounds(size.expr() - 1 - *upper, r).lo >= 0;
}

// q with q * d == c, for polynomials in sizes: `(s1 + 3)*2` by `s1 + 3` is 2.
std::optional<Expr> divide(const Expr &c, const Expr &d) {
  if (auto q = ir::exact_quotient(c, d)) return q;
  if (c.terms().empty() || d.terms().empty()) return std::nullopt;
  const ir::Term &ct = c.terms()[0], &dt = d.terms()[0];
  auto q = ir::exact_quotient(term_expr(ct, ct.coeff), term_expr(dt, dt.coeff));
  if (q && *q * d == c) return q;
  return std::nullopt;
}

// Solves store(v) = target for v (sizes `sizes`, `store` of injective strides `form`) by
// splitting target into one part per dim (target = c + sum stride_k * part_k): each term,
// its coefficient in sizes taken together (`x0*s1 + x0*3` is x0 times `s1 + 3`, and
// `x0*s1 - x0*(s1 % 8)` x0 times `s1 - s1 % 8`), goes to
// the dim of the largest stride that divides it, and v_k = part_k. There is no division,
// so strides may be sizes of symbols. Nothing unless every part lies in [0, size_k)
// under `r` or a fact of `facts`, which makes the split the only one; where strides are
// sizes, a part past a dim of a number of elements carries into the next dim out, as a
// flat offset's digits do (`x0` over [s0*2] reads a [s0, 2] producer at x0 // 2, x0 % 2).
std::optional<VarMap> solve_by_parts(const Expr &store, const Strides &form, const SymShape &sizes, const Expr &target,
                                     const ir::Ranges &r, const std::vector<MaskFact> &facts) {
  const std::vector<Expr> &stride = form.stride;
  const std::vector<int> &dims = form.dims;
  std::vector<std::pair<Expr, Expr>> terms;  // (what a term multiplies, its coefficient in sizes)
  for (const ir::Term &t : target.terms()) {
    Expr key(1), coeff(t.coeff);
    for (const ir::Atom &a : t.factors) {
      if (size_atom(a)) coeff = coeff * Expr(a);
      else key = key * Expr(a);
    }
    auto same = std::find_if(terms.begin(), terms.end(), [&](const auto &k) { return k.first == key; });
    if (same == terms.end()) terms.emplace_back(key, coeff);
    else same->second = same->second + coeff;
  }
  VarMap part(sizes.size(), Expr(0));
  for (const auto &[key, coeff] : terms) {
    bool placed = false;
    for (auto d = dims.rbegin(); d != dims.rend() && !placed; ++d)
      if (auto q = divide(coeff, stride[size_t(*d)])) {
        part[size_t(*d)] = part[size_t(*d)] + *q * key;
        placed = true;
      }
    if (!placed) return std::nullopt;
  }
  // The constant: a dim whose part a fact bounds up to a constant takes that constant;
  // the rest goes to the other dims of constant strides, largest stride first.
  int64_t rest = target.constant() - store.constant();
  std::vector<const MaskFact *> fact_of(sizes.size(), nullptr);
  for (int d : dims) {
    if (part[size_t(d)].terms().empty() || !stride[size_t(d)].as_constant()) continue;
    for (const MaskFact &f : facts) {
      auto k = (f.e - part[size_t(d)]).as_constant();
      if (!k) continue;
      part[size_t(d)] = f.e;
      rest -= *k * *stride[size_t(d)].as_constant();
      fact_of[size_t(d)] = &f;
      break;
    }
  }
  for (auto d = dims.rbegin(); d != dims.rend() && rest != 0; ++d) {
    std::optional<int64_t> sd = stride[size_t(*d)].as_constant();
    if (fact_of[size_t(*d)] || !sd) continue;
    int64_t k = rest >= 0 ? rest / *sd : -((-rest + *sd - 1) / *sd);
    part[size_t(*d)] = part[size_t(*d)] + Expr(k);
    rest -= k * *sd;
  }
  if (rest != 0) return std::nullopt;
  Expr stored(store.constant());
  for (int d : dims) stored = stored + part[size_t(d)] * stride[size_t(d)];
  if (!(stored == target)) return std::nullopt;
  bool carry = !numeric(form, sizes);
  for (size_t k = 0; k < dims.size(); ++k) {
    int d = dims[k];
    ir::Interval in = ir::bounds(part[size_t(d)], r);
    std::optional<Expr> below;
    if (const MaskFact *f = fact_of[size_t(d)]) {
      in = {std::max(in.lo, f->lo), std::min(in.hi, f->hi == ir::Interval::kNoUpper ? f->hi : f->hi - 1)};
      below = f->below;
    }
    if (within(part[size_t(d)], sizes[size_t(d)], in, below, r)) continue;
    std::optional<int64_t> n = sizes[size_t(d)].symbolic() ? std::nullopt : std::optional(sizes[size_t(d)].hint());
    if (!carry || !n || in.lo < 0 || k + 1 == dims.size() || !(stride[size_t(dims[k + 1])] == stride[size_t(d)] * *n))
      return std::nullopt;
    part[size_t(dims[k + 1])] = part[size_t(dims[k + 1])] + ir::floor_div(part[size_t(d)], *n);
    part[size_t(d)] = ir::mod(part[size_t(d)], *n);
  }
  for (int d : dims) part[size_t(d)] = ir::simplify(part[size_t(d)], r);
  return part;
}

// v_k = ((target - c) // stride_k) % size_k: any target (strides and sizes of symbols
// divide as SizeDiv and SizeMod).
VarMap solve_by_division(const Expr &store, const Strides &form, const SymShape &sizes, const Expr &target,
                         const ir::Ranges &r) {
  Expr shifted = target - Expr(store.constant());
  VarMap out(sizes.size(), Expr(0));
  for (int d : form.dims)
    out[size_t(d)] = ir::simplify(ir::mod(ir::floor_div(shifted, form.stride[size_t(d)]), sizes[size_t(d)].expr()), r);
  return out;
}

// With numbers, by division; with sizes of symbols, by parts where they place the target
// (no division at all), else by division by the sizes.
VarMap solve(const Expr &store, const Strides &form, const SymShape &sizes, const Expr &target, const ir::Ranges &r) {
  if (!numeric(form, sizes))
    if (auto map = solve_by_parts(store, form, sizes, target, r, {})) return *map;
  return solve_by_division(store, form, sizes, target, r);
}

}  // namespace

std::optional<VarMap> linearize(const SymShape &from, const std::vector<int> &order, const SymShape &to, int first,
                                const ir::Ranges &to_ranges) {
  COIL_ASSERT(order.size() == from.size(), "an order of ", order.size(), " dims for a space of ", from.size());
  Expr l = linear_index(to, first);
  if (!symbolic(from) && !symbolic(to)) {
    VarMap out(from.size(), Expr(0));
    int64_t suffix = 1;
    for (size_t k = order.size(); k-- > 0;) {
      int64_t size = from[size_t(order[k])].hint();
      if (size > 1) out[size_t(order[k])] = ir::simplify(ir::mod(ir::floor_div(l, suffix), size), to_ranges);
      suffix *= size;
    }
    return out;
  }
  // Point k of `from` is the one whose linear index (in `order`) is k.
  Expr store(0);
  SymInt suffix = 1;
  for (size_t k = order.size(); k-- > 0;) {
    if (from[size_t(order[k])] != 1) store = store + Expr(VarId{order[k]}) * suffix;
    suffix = suffix * from[size_t(order[k])];
  }
  auto form = injective_strides(store, from, to_ranges);
  if (!form) return std::nullopt;
  return solve(store, *form, from, l, to_ranges);
}

std::optional<VarMap> solve_injective(const Expr &store, const SymShape &sizes, const Expr &target,
                                      const ir::Ranges &target_ranges) {
  auto form = injective_strides(store, sizes, target_ranges);
  if (!form) return std::nullopt;
  return solve(store, *form, sizes, target, target_ranges);
}

std::vector<MaskFact> mask_facts(const ir::Body &body, int mask) {
  std::vector<MaskFact> facts;
  auto add = [&](const Expr &e, int64_t lo, int64_t hi, std::optional<Expr> below = std::nullopt) {
    for (MaskFact &f : facts)
      if (f.e == e) {
        f.lo = std::max(f.lo, lo);
        f.hi = std::min(f.hi, hi);
        if (below) f.below = below;
        return;
      }
    facts.push_back({e, lo, hi, below});
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
    if (a.op != ir::Op::Index) continue;
    if (c.op == ir::Op::Index && ir::vars_of(c.index).empty() && (i.op == ir::Op::Lt || i.op == ir::Op::Le)) {
      // Below a size of symbols: `x3 - 1 < s0`.
      add(a.index, ir::Interval::kNoLower, ir::Interval::kNoUpper, i.op == ir::Op::Lt ? c.index : c.index + 1);
      continue;
    }
    if (c.op != ir::Op::Constant || c.value != std::floor(c.value) || std::abs(c.value) > 1e15) continue;
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

std::optional<VarMap> solve_under_mask(const Expr &store, const SymShape &sizes, const Expr &target,
                                       const ir::Ranges &target_ranges, const std::vector<MaskFact> &facts) {
  auto form = injective_strides(store, sizes, target_ranges);
  if (!form) return std::nullopt;
  return solve_by_parts(store, *form, sizes, target, target_ranges, facts);
}

ir::Node rewrite_node(const ir::Program &p, const ir::Node &n, const VarMap &map, SymShape ranges,
                      SymShape reduction_ranges) {
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
