#include "ir/specialize.h"

#include <algorithm>

namespace coil::ir {
namespace {

/// Calls `expr` on every index expression of node `n` and `size` on every size, stride and
/// offset of its own (not its buffers'); the functions may replace what they are given.
template <class N, class ExprFn, class SizeFn>
void visit_node(N &n, const ExprFn &expr, const SizeFn &size) {
  auto shape = [&](auto &s) {
    for (auto &x : s) size(x);
  };
  for (auto &i : n.body.instrs)
    if (i.op == Op::Load || i.op == Op::Index) expr(i.index);
  expr(n.scatter_index);
  for (auto &e : n.output_index) expr(e);
  shape(n.ranges);
  shape(n.reduction_ranges);
  for (auto &v : n.operands) {
    shape(v.sizes);
    shape(v.strides);
    size(v.offset);
  }
}

/// The same over all of `p` (a Program, const or not): its buffers, nodes and output views.
template <class P, class ExprFn, class SizeFn>
void visit(P &p, const ExprFn &expr, const SizeFn &size) {
  auto shape = [&](auto &s) {
    for (auto &x : s) size(x);
  };
  for (auto &b : p.buffers) {
    shape(b.type.sizes);
    shape(b.type.strides);
  }
  for (auto &n : p.nodes) visit_node(n, expr, size);
  for (auto &v : p.output_views) {
    shape(v.sizes);
    shape(v.strides);
    size(v.offset);
  }
}

/// A size read as a value (lowering's size_value: `cast(index s0*12)`) is a constant once
/// its symbols have values: it becomes one, cast included, so that a program specialized
/// reads as the one lowered at these sizes would.
void fold_sizes(Body &body) {
  std::vector<bool> folded(body.instrs.size());
  for (size_t v = 0; v < body.instrs.size(); ++v) {
    Instr &i = body.instrs[v];
    std::optional<double> value;
    if (i.op == Op::Index && i.index.as_constant()) value = double(*i.index.as_constant());
    if (i.op == Op::Cast && folded[size_t(i.args[0])] && (is_floating(i.dtype) || is_integral(i.dtype)))
      value = body.at(i.args[0]).value;
    if (!value) continue;
    Instr c;
    c.dtype = i.dtype;
    c.value = *value;
    i = c;
    folded[v] = true;
  }
  if (std::find(folded.begin(), folded.end(), true) != folded.end()) body = prune_dead_values(body);
}

}  // namespace

std::set<std::string> symbols_of(const Program &p) {
  std::set<std::string> out;
  visit(
      p, [&](const Expr &e) { collect_symbols(e, out); },
      [&](const SymInt &s) {
        if (s.symbolic()) collect_symbols(s.expr(), out);
      });
  return out;
}

Program specialize(Program p, const std::map<std::string, int64_t> &values) {
  visit(p, [&](Expr &e) { e = substitute_symbols(e, values); }, [&](SymInt &s) { s = at_sizes(s, values); });
  for (Node &n : p.nodes) fold_sizes(n.body);
  return p;
}

std::set<std::string> symbols_of(const ScheduledProgram &s) {
  std::set<std::string> out = symbols_of(s.program);
  for (const Kernel &k : s.kernels)
    for (const SymShape *shape : {&k.ranges, &k.reduction_ranges})
      for (const SymInt &x : *shape)
        if (x.symbolic()) collect_symbols(x.expr(), out);
  return out;
}

std::shared_ptr<SizeGuards> guards_of(const Program &p) {
  std::shared_ptr<SizeGuards> out;
  visit(p, [](const Expr &) {}, [&](const SymInt &s) {
    if (!out && s.symbolic()) out = s.guards();
  });
  return out;
}

std::set<std::string> symbols_of(const Program &p, const Kernel &k) {
  std::set<std::string> out;
  auto size = [&](const SymInt &x) {
    if (x.symbolic()) collect_symbols(x.expr(), out);
  };
  auto buffer = [&](BufferId b) {
    for (const SymShape *shape : {&p.buffer(b).type.sizes, &p.buffer(b).type.strides})
      for (const SymInt &x : *shape) size(x);
  };
  for (const SymShape *shape : {&k.ranges, &k.reduction_ranges})
    for (const SymInt &x : *shape) size(x);
  for (int m : k.nodes) {
    const Node &n = p.nodes[size_t(m)];
    visit_node(n, [&](const Expr &e) { collect_symbols(e, out); }, size);
    for (const Instr &i : n.body.instrs)
      if (i.op == Op::Load) buffer(i.buffer);
    for (const View &v : n.operands)
      if (v.buffer >= 0) buffer(v.buffer);
    for (BufferId b : n.outputs) buffer(b);
  }
  return out;
}

ScheduledProgram specialize(ScheduledProgram s, const std::map<std::string, int64_t> &values) {
  s.program = specialize(std::move(s.program), values);
  for (Kernel &k : s.kernels)
    for (SymShape *shape : {&k.ranges, &k.reduction_ranges})
      for (SymInt &x : *shape) x = at_sizes(x, values);
  return s;
}

}  // namespace coil::ir
