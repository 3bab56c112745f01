#include "codegen/common/access.h"

#include <algorithm>
#include <cstdlib>


namespace coil::codegen {

namespace {

// Calls `fn` on every load of the kernel's members that reads memory by its own index
// (not a value a member computed, not an index read from data); stops when it says true.
bool any_direct_load(const ir::Program &p, const ir::Kernel &k, const std::function<bool(const ir::Instr &)> &fn) {
  for (int m : k.nodes)
    for (const ir::Instr &i : p.nodes[size_t(m)].body.instrs) {
      if (i.op != ir::Op::Load || !i.indirect.empty()) continue;
      if (std::find(k.internal.begin(), k.internal.end(), i.buffer) != k.internal.end()) continue;
      if (fn(i)) return true;
    }
  return false;
}

}  // namespace

std::string element_key(const ir::Program &p, ir::BufferId b, const ir::Expr &at, const ir::Ranges &ranges) {
  return p.buffer(b).name + "[" + ir::str(ir::simplify(at, ranges)) + "]";
}

bool loads_transposed_in_last_two_dims(const ir::Program &p, const ir::Kernel &k) {
  int n = int(k.ranges.size());
  if (n < 2 || k.ranges[size_t(n - 1)].hint() < 16 || k.ranges[size_t(n - 2)].hint() < 16) return false;
  ir::Ranges ranges = ir::ranges_of(k.ranges, k.reduction_ranges);
  return any_direct_load(p, k, [&](const ir::Instr &i) {
    ir::AccessFact last = ir::access_of(i.index, ir::VarId{n - 1}, ranges), prev = ir::access_of(i.index, ir::VarId{n - 2}, ranges);
    return last.kind != ir::Access::Contiguous && last.kind != ir::Access::Broadcast && prev.kind == ir::Access::Contiguous;
  });
}

bool rows_contiguous_across_reduction(const ir::Program &p, const ir::Kernel &k) {
  std::vector<const ir::Node *> members;
  for (int m : k.nodes) members.push_back(&p.nodes[size_t(m)]);
  return ir::reads_rows_side_by_side(members, k.ranges, k.reduction_ranges, [&](ir::BufferId b) {
    return std::find(k.internal.begin(), k.internal.end(), b) == k.internal.end();
  });
}

KernelParams kernel_params(const ir::Program &p, const ir::Kernel &k) {
  auto in = [](const std::vector<ir::BufferId> &v, ir::BufferId b) { return std::find(v.begin(), v.end(), b) != v.end(); };
  KernelParams out;
  auto add = [&](ir::BufferId b) {
    if (b >= 0 && !in(k.internal, b) && !in(out.order, b)) out.order.push_back(b);
  };
  for (int n : k.nodes) {
    for (ir::BufferId b : p.nodes[size_t(n)].reads()) add(b);
    for (ir::BufferId b : p.nodes[size_t(n)].outputs) add(b);
  }
  int ins = 0, outs = 0;
  for (ir::BufferId b : out.order)
    out.names[b] = in(k.stores, b) ? "out_ptr" + std::to_string(outs++) : "in_ptr" + std::to_string(ins++);
  return out;
}

std::string sum_of_terms(const ir::Expr &index, const std::function<std::string(const ir::Atom &)> &atom) {
  std::string out;
  for (const ir::Term &t : index.terms()) {
    std::string term;
    for (const ir::Atom &a : t.factors) {
      // A quotient or remainder after another factor is one operand: `s1*((s0) / 4)`, not
      // `s1*(s0) / 4`, which both dialects read as (s1*s0) / 4.
      bool divides = a.kind() == ir::AtomKind::FloorDiv || a.kind() == ir::AtomKind::Mod ||
                     a.kind() == ir::AtomKind::SizeDiv || a.kind() == ir::AtomKind::SizeMod;
      std::string text = atom(a);
      term += term.empty() ? text : "*" + (divides ? "(" + text + ")" : text);
    }
    if (t.coeff != 1) term = term + "*" + std::to_string(t.coeff);
    out += (out.empty() ? "" : " + ") + term;
  }
  if (index.constant() != 0 || out.empty())
    out += (out.empty() ? "" : index.constant() < 0 ? " - " : " + ") +
           std::to_string(out.empty() ? index.constant() : std::llabs(index.constant()));
  return out;
}

}  // namespace coil::codegen
