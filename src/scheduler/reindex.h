// Moving a node into another iteration space: the variable maps the scheduler tries
// when it fuses nodes whose loops are shaped differently, and the rewrite itself.
// Tests: tests/unit/scheduler_test.cpp (Reindex*).
#pragma once

#include <optional>
#include <vector>

#include "ir/loop_ir.h"

namespace coil::sched {

/// A variable map: entry i is node variable i as an expression of the target's variables.
using VarMap = std::vector<ir::Expr>;

using ir::ranges_of;

/// The variables of the row-major space `from`, visited in the dim order `order` (a
/// permutation), as functions of the row-major space `to` with the same number of
/// points, whose variables start at `first`: point k of one is point k of the other.
/// Spaces of symbolic sizes are matched term by term, as solve_under_mask does: nothing
/// where that takes a division by a symbolic size (a flat [s0*s1] onto [s0, s1]).
std::optional<VarMap> linearize(const SymShape &from, const std::vector<int> &order, const SymShape &to, int first,
                                const ir::Ranges &to_ranges);

/// Solves store(v) = target for the variables v0..v{n-1} (sizes `sizes`) when `store` is
/// an injective affine map of them (positive strides that never overlap): then
/// v_k = ((target - c) // stride_k) % size_k. Strides and sizes of symbols (a stride of
/// `s1*64`) are solved without division by them, as solve_under_mask does (with no fact).
/// Nothing when `store` is not of that form, or its sizes would need such a division.
std::optional<VarMap> solve_injective(const ir::Expr &store, const SymShape &sizes, const ir::Expr &target,
                                      const ir::Ranges &target_ranges);

/// lo <= e < hi wherever a load's mask is true: what a padded window or a cat tests; and
/// e < below, a size of symbols, where the window's bound is one (`x3 - 1 < s0`).
struct MaskFact {
  ir::Expr e;
  int64_t lo, hi;
  std::optional<ir::Expr> below = std::nullopt;
};

/// The facts a mask value of `body` states: the bounds its comparisons of index values
/// with constants or sizes put on them, through logical ands (a mask of another form
/// states none).
std::vector<MaskFact> mask_facts(const ir::Body &body, int mask);

/// Solves store(v) = target like solve_injective, for a load that reads only where
/// `facts` hold: target is split into one part per dim by its terms' coefficients
/// (target = c + sum stride_k * part_k) and v_k = part_k, with no division, when every
/// part lies in [0, size_k) under the ranges or a fact, so that the split is the only
/// one. A padded window read from a fused producer indexes it by the window's position
/// and not by the remainders of a flat offset. Nothing when a part cannot be shown in
/// range.
std::optional<VarMap> solve_under_mask(const ir::Expr &store, const SymShape &sizes, const ir::Expr &target,
                                       const ir::Ranges &target_ranges, const std::vector<MaskFact> &facts);

/// `n` (a node of `p`) with every variable replaced through `map` and the new iteration
/// space; indices are simplified under it, and the output index is kept explicit (empty
/// for a 0-d output, which is stored at its one element whatever the loops).
ir::Node rewrite_node(const ir::Program &p, const ir::Node &n, const VarMap &map, SymShape ranges,
                      SymShape reduction_ranges);

}  // namespace coil::sched
