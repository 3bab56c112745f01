// order_loops: the outer loops of a pointwise or reduction node in its output's memory order.
//
// Lowering gives a node the logical dims of its output as loops (x0 over N, x1 over C,
// ...). When the output is laid out in another order (channels-last, a transpose kept by
// eager's stride rules), the innermost loop then strides through memory: C++ vector lanes
// gather and Triton's blocks stop coalescing. This pass permutes such a node's loops so that
// the largest stride is outermost and the smallest innermost, and states where it stores:
//
//   buf3 = relu(buf2)  f32[8, 64, 56, 56] channels-last      ranges [8, 64, 56, 56]
//     ->  ranges [8, 56, 56, 64], output_index [x0, x3, x1, x2]
//
// Operands laid out as the output (the values of a channels-last model) are then read
// contiguously too. A reduction's outer loops are ordered the same way (a max pool over
// channels-last windows reads and writes C innermost); its reduction loops are its own.
// Dims of size 1 have no order and keep theirs, ahead of the others.
#include <algorithm>
#include <numeric>

#include "graph/strides.h"
#include "scheduler/reindex.h"
#include "scheduler/scheduler.h"

namespace coil::sched {
namespace {

// The dims of `t` from the outermost in memory to the innermost, or nothing when
// the logical order is already that (or the layout has no single order).
std::optional<Shape> memory_order(const TensorType &t) {
  if (t.rank() < 2 || !is_non_overlapping_and_dense(t.sizes, t.strides)) return std::nullopt;
  Shape unit, order;
  for (int64_t d = 0; d < t.rank(); ++d) (t.sizes[size_t(d)] == 1 ? unit : order).push_back(d);
  auto outer = [&](int64_t a, int64_t b) { return t.strides[size_t(a)] > t.strides[size_t(b)]; };
  if (std::is_sorted(order.begin(), order.end(), outer)) return std::nullopt;
  std::stable_sort(order.begin(), order.end(), outer);
  unit.insert(unit.end(), order.begin(), order.end());
  return unit;
}

// Whether every output of `n` is one layout: the order of the loops is the order of all.
bool one_layout(const ir::Program &p, const ir::Node &n) {
  const TensorType &first = p.buffer(n.outputs[0]).type;
  return std::all_of(n.outputs.begin(), n.outputs.end(), [&](ir::BufferId b) {
    const TensorType &t = p.buffer(b).type;
    return same(t.sizes, first.sizes) && same(t.strides, first.strides);
  });
}

}  // namespace

std::vector<std::string> order_loops(ir::Program &p, const ScheduleOptions &o) {
  std::vector<std::string> log;
  if (!o.memory_order_loops) return log;
  for (ir::Node &n : p.nodes) {
    bool loops = n.kind == ir::NodeKind::Pointwise || n.kind == ir::NodeKind::Reduction;
    if (!loops || n.outputs.empty() || !n.output_index.empty() || !one_layout(p, n)) continue;
    const TensorType &t = p.buffer(n.outputs[0]).type;
    if (!same(t.sizes, n.ranges)) continue;
    auto order = memory_order(t);
    if (!order) continue;
    // Loop k runs over dim order[k]: dim d is the variable at its position. Reduction
    // variables follow the outer ones and keep their numbers.
    VarMap map(size_t(n.num_vars()));
    SymShape ranges;
    for (size_t k = 0; k < order->size(); ++k) {
      map[size_t((*order)[k])] = ir::Expr(ir::VarId{int(k)});
      ranges.push_back(t.sizes[size_t((*order)[k])]);
    }
    for (size_t r = n.ranges.size(); r < map.size(); ++r) map[r] = ir::Expr(ir::VarId{int(r)});
    n = rewrite_node(p, n, map, ranges, n.reduction_ranges);
    log.push_back(str_cat(p.buffer(n.outputs[0]).name, " (", n.origin, "): loops over dims ", shape_str(*order),
                          " of strides ", shape_str(t.strides)));
  }
  return log;
}

}  // namespace coil::sched
