// Reduction kernels of the Triton dialect (triton_kernel.h): persistent (the row in the
// block) or looped (steps of RBLOCK into lanes of accumulators), identities, Welford, and
// split reductions (partials in scratch buffers, combined by a second kernel).
#include "codegen/triton/triton_kernel.h"

#include <algorithm>

#include "codegen/common/access.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "codegen/triton/triton_kernel_plan.h"
#include "codegen/triton/triton_ops.h"
#include "support/error.h"

namespace coil::codegen::detail {

// ---- reductions -------------------------------------------------------------------------

bool TritonEmitter::is_inner_member(const Node &n) {
  return n.kind == ir::NodeKind::Pointwise && !n.reduction_ranges.empty();
}

void TritonEmitter::emit_reduction() {
  set_index_bits();
  SymInt rows = checked_numel(k_.ranges), rn = checked_numel(k_.reduction_ranges);
  if (plan_.strategy == TritonStrategy::SplitRows || plan_.strategy == TritonStrategy::SplitColumns)
    return emit_split(plan_.strategy == TritonStrategy::SplitColumns);
  Layout l;
  l.two_d = true;
  l.n0 = rows;
  l.n1 = rn;
  int n = int(k_.ranges.size());
  for (int d = 0; d < n; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
  for (size_t d = 0; d < k_.reduction_ranges.size(); ++d) l.vars1.push_back({VarId{n + int(d)}, k_.reduction_ranges[d]});
  std::map<std::string, std::string> attrs;
  l.block0 = plan_.block0;
  l.block1 = plan_.block1;
  switch (plan_.strategy) {
    case TritonStrategy::Columns:
      l.looped = !known_le(rn, l.block1);
      attrs["layout"] = std::string(l.looped ? "looped" : "persistent") +
                        ": XBLOCK rows side by side (neighbouring rows are contiguous), RBLOCK reduced elements per step";
      break;
    case TritonStrategy::Persistent:
      // RBLOCK holds every row of the variant's size bucket (plan_variants), the row masked.
      COIL_ASSERT(l.block1 == next_pow2(l.block1) && (rn.symbolic() || rn.hint() <= l.block1),
                  "a persistent reduction's RBLOCK holds its row");
      attrs["layout"] = "persistent: a row in one program, RBLOCK the next power of two of " + str(rn);
      break;
    case TritonStrategy::Looped:
      l.looped = true;
      attrs["layout"] = "looped: a row per program in steps of RBLOCK";
      break;
    case TritonStrategy::Blocks:
    case TritonStrategy::Tiles:
    case TritonStrategy::SplitRows:
    case TritonStrategy::SplitColumns:
    case TritonStrategy::Scan:
    case TritonStrategy::Scatter: COIL_ASSERT(false, "reduction ", k_.name, " planned as ", strategy_name(plan_.strategy));
  }
  begin(kernel_name(), l);
  emit_prologue();
  if (l.looped) w_.line("rbase = tl.arange(0, RBLOCK)[None, :]");
  for (const ir::Step &step : k_.steps) {
    if (!step.inner) {
      for (int m : step.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
      continue;
    }
    emit_step(step);
  }
  end(buffer_params(), plan_.warps, {sym_max(triton_blocks(rows, l.block0), 1), 1, 1}, attrs);
}

std::string TritonEmitter::acc_type(const Acc &a) const {
  return triton_type(a.in);
}

std::string TritonEmitter::identity(ReduceOp op, DType t) {
  bool fl = is_floating(t);
  switch (op) {
    case ReduceOp::Sum: return fl ? "0.0" : "0";
    case ReduceOp::Prod: return fl ? "1.0" : "1";
    case ReduceOp::Max:
    case ReduceOp::ArgMax: return fl ? "float('-inf')" : lowest(t);
    case ReduceOp::Min:
    case ReduceOp::ArgMin: return fl ? "float('inf')" : highest(t);
    case ReduceOp::Any: return "0";
    case ReduceOp::All: return "1";
    case ReduceOp::Welford: return "0.0";
  }
  return "0";
}

std::string TritonEmitter::lowest(DType t) {
  switch (t) {
    case DType::I64: return "-9223372036854775808";
    case DType::I32: return "-2147483648";
    case DType::I16: return "-32768";
    case DType::I8: return "-128";
    default: return "0";
  }
}

std::string TritonEmitter::highest(DType t) {
  switch (t) {
    case DType::I64: return "9223372036854775807";
    case DType::I32: return "2147483647";
    case DType::I16: return "32767";
    case DType::I8: return "127";
    case DType::U8: return "255";
    default: return "1";
  }
}

std::string TritonEmitter::truth(const Value &x, DType t) {
  return "(" + (t == DType::Bool ? x.name : "(" + x.name + " != 0)") + ").to(tl.int8)";
}

void TritonEmitter::emit_step(const ir::Step &step) {
  std::vector<Acc> accs;
  for (int m : step.nodes) {
    const Node &node = p_.nodes[size_t(m)];
    if (node.kind == ir::NodeKind::Reduction) accs.push_back({&node, node.body.at(node.body.results[0]).dtype, {}});
  }
  std::string all = mask(kBoth);
  if (l_.looped) {
    for (Acc &a : accs) start_looped(a);
    w_.line("for roffset in range(0, " + size(l_.n1) + ", RBLOCK):");
    w_.indent();
    push();
    open_axis1("roffset");
    all = mask(kBoth);
  }
  size_t next = 0;
  inner_ = true;
  for (int m : step.nodes) {
    const Node &node = p_.nodes[size_t(m)];
    if (node.kind != ir::NodeKind::Reduction) {
      emit_pointwise_member(node);
      continue;
    }
    auto v = emit_body(node.body);
    Value x = v[size_t(node.body.results[0])];
    Acc &a = accs[next++];
    if (l_.looped) accumulate(a, x, all);
    else finish(a, reduce_block(a, x, all));
  }
  inner_ = false;
  if (!l_.looped) return;
  pop();
  w_.dedent();
  for (Acc &a : accs) finish(a, reduce_looped(a));
}

void TritonEmitter::start_looped(Acc &a) {
  std::string base = "acc" + std::to_string(next_acc_++), full = shape(kBoth);
  std::string T = acc_type(a);
  ReduceOp op = a.node->reduce_op;
  if (op == ReduceOp::Welford) {
    std::string W = a.in == DType::F64 ? "tl.float64" : "tl.float32";
    a.names = {base + "_mean", base + "_m2", base + "_weight"};
    for (const auto &nm : a.names) w_.line(nm + " = tl.zeros(" + full + ", " + W + ")");
    return;
  }
  if (op == ReduceOp::Any || op == ReduceOp::All) T = "tl.int8";
  a.names = {base};
  w_.line(base + " = tl.full(" + full + ", " + identity(op, a.in) + ", " + T + ")");
  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
    a.names.push_back(base + "_index");
    w_.line(base + "_index = tl.full(" + full + ", 9223372036854775807, tl.int64)");
  }
}

void TritonEmitter::accumulate(const Acc &a, const Value &x, const std::string &m) {
  std::string v = broadcast(x, kBoth, a.in), acc = a.names[0];
  auto masked = [&](const std::string &updated) { return m.empty() ? updated : "tl.where(" + m + ", " + updated + ", " + acc + ")"; };
  switch (a.node->reduce_op) {
    case ReduceOp::Sum: w_.line(acc + " = " + masked(acc + " + " + v)); return;
    case ReduceOp::Prod: w_.line(acc + " = " + masked(acc + " * " + v)); return;
    case ReduceOp::Max:
    case ReduceOp::Min: {
      std::string fn = a.node->reduce_op == ReduceOp::Max ? "tl.maximum(" : "tl.minimum(";
      std::string nan = is_floating(a.in) ? ", propagate_nan=tl.PropagateNan.ALL" : "";
      w_.line(acc + " = " + masked(fn + acc + ", " + v + nan + ")"));
      return;
    }
    case ReduceOp::Any: w_.line(acc + " = " + masked(acc + " | " + truth({v, kBoth, false}, a.in))); return;
    case ReduceOp::All: w_.line(acc + " = " + masked(acc + " & " + truth({v, kBoth, false}, a.in))); return;
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      std::string pick = arg_helper(a.node->reduce_op, "pick");
      std::string take = "take" + std::to_string(next_acc_++);
      std::string r = "tl.broadcast_to(rindex.to(tl.int64), " + shape(kBoth) + ")";
      w_.line(take + " = " + pick + "(" + v + ", " + r + ", " + acc + ", " + a.names[1] + ")" + (m.empty() ? "" : " & (" + m + ")"));
      w_.line(acc + " = tl.where(" + take + ", " + v + ", " + acc + ")");
      w_.line(a.names[1] + " = tl.where(" + take + ", " + r + ", " + a.names[1] + ")");
      return;
    }
    case ReduceOp::Welford: {
      // Welford's update in each lane; the lanes are combined after the loop.
      const std::string &mean = a.names[0], &m2 = a.names[1], &w = a.names[2];
      std::string d = "delta" + std::to_string(next_acc_++);
      std::string xv = a.in == DType::F64 ? v : "(" + v + ").to(tl.float32)";
      w_.line(w + " = " + (m.empty() ? w + " + 1" : "tl.where(" + m + ", " + w + " + 1, " + w + ")"));
      w_.line(d + " = " + xv + " - " + mean);
      w_.line(mean + " = " + (m.empty() ? mean + " + " + d + " / " + w : "tl.where(" + m + ", " + mean + " + " + d + " / " + w + ", " + mean + ")"));
      w_.line(m2 + " = " + (m.empty() ? m2 + " + " + d + " * (" + xv + " - " + mean + ")"
                                      : "tl.where(" + m + ", " + m2 + " + " + d + " * (" + xv + " - " + mean + "), " + m2 + ")"));
      return;
    }
  }
}

std::string TritonEmitter::arg_helper(ReduceOp op, const std::string &what) {
  std::string name = std::string(op == ReduceOp::ArgMax ? "argmax" : "argmin") + "_" + what;
  helpers_.insert(std::string(op == ReduceOp::ArgMax ? "argmax" : "argmin") + "_pick");
  if (what == "combine") helpers_.insert(name);
  return "_" + name;
}

std::vector<Value> TritonEmitter::reduce_looped(const Acc &a) {
  const std::string &acc = a.names[0];
  std::string T = acc_type(a);
  switch (a.node->reduce_op) {
    case ReduceOp::Sum: return {def(cast_sum("tl.sum(" + acc + ", 1)", a.in) + "[:, None]", kA0)};
    case ReduceOp::Prod: helpers_.insert("prod"); return {def("tl.reduce(" + acc + ", 1, _prod)[:, None]", kA0)};
    case ReduceOp::Max:
    case ReduceOp::Min: return {def(max_min(a.node->reduce_op, acc, a.in) + "[:, None]", kA0)};
    case ReduceOp::Any: return {def("(tl.max(" + acc + ", 1) > 0)[:, None]", kA0)};
    case ReduceOp::All: return {def("(tl.min(" + acc + ", 1) > 0)[:, None]", kA0)};
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      std::string pair = "pair" + std::to_string(next_acc_++);
      w_.line(pair + "_value, " + pair + "_index = tl.reduce((" + acc + ", " + a.names[1] + "), 1, " +
              arg_helper(a.node->reduce_op, "combine") + ")");
      return {def(pair + "_index[:, None]", kA0)};
    }
    case ReduceOp::Welford: return merge_welford(a.names[0], a.names[1], a.names[2]);
  }
  (void)T;
  return {};
}

std::vector<Value> TritonEmitter::merge_welford(const std::string &mean, const std::string &m2, const std::string &weight) {
  helpers_.insert("welford_combine");
  std::string t = "wf" + std::to_string(next_acc_++);
  w_.line(t + "_mean, " + t + "_m2, " + t + "_weight = tl.reduce((" + mean + ", " + m2 + ", " + weight + "), 1, _welford_combine)");
  return {def(t + "_mean[:, None]", kA0), def(t + "_m2[:, None]", kA0), def(t + "_weight[:, None]", kA0)};
}

std::string TritonEmitter::cast_sum(const std::string &e, DType t) {
  // tl.sum widens small integers; the reference sums in the value's own dtype.
  return is_floating(t) || t == DType::I64 ? e : "(" + e + ").to(" + triton_type(t) + ")";
}

std::string TritonEmitter::max_min(ReduceOp op, const std::string &x, DType t) {
  bool max = op == ReduceOp::Max;
  if (!is_floating(t)) return std::string(max ? "tl.max(" : "tl.min(") + x + ", 1)";
  helpers_.insert(max ? "max_nan" : "min_nan");
  return "tl.reduce(" + x + ", 1, " + (max ? "_max_nan" : "_min_nan") + ")";
}

std::vector<Value> TritonEmitter::reduce_block(const Acc &a, const Value &x, const std::string &m) {
  std::string v = broadcast(x, kBoth, a.in);
  auto masked = [&](const std::string &fill) { return m.empty() ? v : "tl.where(" + m + ", " + v + ", " + fill + ")"; };
  ReduceOp op = a.node->reduce_op;
  switch (op) {
    case ReduceOp::Sum: return {def(cast_sum("tl.sum(" + masked(identity(op, a.in)) + ", 1)", a.in) + "[:, None]", kA0)};
    case ReduceOp::Prod: helpers_.insert("prod"); return {def("tl.reduce(" + masked(identity(op, a.in)) + ", 1, _prod)[:, None]", kA0)};
    case ReduceOp::Max:
    case ReduceOp::Min: return {def(max_min(op, masked(identity(op, a.in)), a.in) + "[:, None]", kA0)};
    case ReduceOp::Any:
    case ReduceOp::All: {
      std::string t = truth({v, kBoth, false}, a.in);
      std::string filled = m.empty() ? t : "tl.where(" + m + ", " + t + ", " + identity(op, a.in) + ")";
      return {def(std::string(op == ReduceOp::Any ? "(tl.max(" : "(tl.min(") + filled + ", 1) > 0)[:, None]", kA0)};
    }
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      std::string pair = "pair" + std::to_string(next_acc_++);
      std::string r = "tl.broadcast_to(rindex.to(tl.int64), " + shape(kBoth) + ")";
      w_.line(pair + "_value, " + pair + "_index = tl.reduce((" + masked(identity(op, a.in)) + ", " + r + "), 1, " +
              arg_helper(op, "combine") + ")");
      return {def(pair + "_index[:, None]", kA0)};
    }
    case ReduceOp::Welford: {
      // The whole row at hand: its mean, then the sum of squared deviations from it.
      std::string W = a.in == DType::F64 ? "tl.float64" : "tl.float32";
      std::string xv = "(" + v + ").to(" + W + ")";
      // The count as a float: a literal, or the size's integer converted.
      std::string count = l_.n1.symbolic() ? "(" + size(l_.n1) + " * 1.0)" : std::to_string(l_.n1.hint()) + ".0";
      Value mean = def("tl.sum(" + (m.empty() ? xv : "tl.where(" + m + ", " + xv + ", 0.0)") + ", 1)[:, None] / " + count, kA0);
      std::string dev = "(" + xv + " - " + mean.name + ")";
      Value m2 = def("tl.sum(" + (m.empty() ? dev + " * " + dev : "tl.where(" + m + ", " + dev + " * " + dev + ", 0.0)") + ", 1)[:, None]", kA0);
      Value weight = def("tl.full(" + shape(kA0) + ", " + count + ", " + W + ")", kA0);
      return {mean, m2, weight};
    }
  }
  return {};
}

void TritonEmitter::finish(const Acc &a, const std::vector<Value> &r) {
  const Node &n = *a.node;
  switch (n.reduce_op) {
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: store(n, n.outputs[0], r[0], DType::I64); return;
    case ReduceOp::Welford: {
      DType W = a.in == DType::F64 ? DType::F64 : DType::F32;
      // No element: the mean is NaN, as the reference's.
      Value mean = known_eq(l_.n1, 0) ? def("tl.full(" + shape(kA0) + ", float('nan'), " + triton_type(W) + ")", kA0) : r[0];
      store(n, n.outputs[0], mean, W);
      store(n, n.outputs[1], r[1], W);
      store(n, n.outputs[2], r[2], W);
      return;
    }
    case ReduceOp::Any:
    case ReduceOp::All: store(n, n.outputs[0], r[0], DType::Bool); return;
    default: store(n, n.outputs[0], r[0], a.in); return;
  }
}

// ---- split reductions ---------------------------------------------------------------------

void TritonEmitter::emit_split(bool columns) {
  const int64_t split = plan_.split;
  SymInt rows = checked_numel(k_.ranges), rn = checked_numel(k_.reduction_ranges);
  int n = int(k_.ranges.size());
  const size_t pass = pass_step();
  const ir::Step &step = k_.steps[pass];
  // The row members before the pass, computed where the pass reads them; only kernel 2
  // stores them (each row once).
  auto emit_leading = [&](bool stored) {
    forward_only_ = !stored;
    for (size_t s = 0; s < pass; ++s)
      for (int m : k_.steps[s].nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
    forward_only_ = false;
  };
  // Kernel 1: the partials.
  Layout l;
  l.two_d = true;
  l.looped = true;
  l.block0 = plan_.block0;
  l.block1 = plan_.block1;
  SymInt chunk = triton_blocks(triton_blocks(rn, split), l.block1) * l.block1;
  l.n0 = rows;
  l.n1 = rn;
  for (int d = 0; d < n; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
  for (size_t d = 0; d < k_.reduction_ranges.size(); ++d) l.vars1.push_back({VarId{n + int(d)}, k_.reduction_ranges[d]});
  begin(kernel_name("partials"), l);
  emit_prologue();
  emit_leading(false);
  w_.line(std::string("split = tl.program_id(1)") + (index_bits_ > 31 ? ".to(tl.int64)" : ""));
  w_.line("rbase = tl.arange(0, RBLOCK)[None, :]");
  std::vector<Acc> accs;
  for (int m : step.nodes) {
    const Node &node = p_.nodes[size_t(m)];
    if (node.kind == ir::NodeKind::Reduction) accs.push_back({&node, node.body.at(node.body.results[0]).dtype, {}});
  }
  for (Acc &a : accs) start_looped(a);
  w_.line("for roffset in range(0, " + size(chunk) + ", RBLOCK):");
  w_.indent();
  push();
  // The last chunk may run past the row (known only at the sizes of a call when symbolic).
  if (chunk.symbolic() || rn.symbolic() || chunk.hint() * split > rn.hint()) r_limit_ = rn;
  open_axis1("split * " + size(chunk) + " + roffset");
  r_limit_.reset();
  std::string all = mask(kBoth);
  size_t next = 0;
  inner_ = true;
  for (int m : step.nodes) {
    const Node &node = p_.nodes[size_t(m)];
    if (node.kind != ir::NodeKind::Reduction) {
      // Each element is in one program's chunk: a member stored at every point is stored here.
      emit_pointwise_member(node);
      continue;
    }
    auto v = emit_body(node.body);
    accumulate(accs[next++], v[size_t(node.body.results[0])], all);
  }
  inner_ = false;
  pop();
  w_.dedent();
  std::vector<std::pair<int, std::string>> params = buffer_params();
  std::vector<std::pair<int, std::string>> partial_params;
  std::vector<int> scratch_ids;
  std::string row_mask = mask(kA0).empty() ? "" : ", " + mask(kA0);
  // One partial per accumulator and program; a Welford's three (mean, m2, weight).
  for (const Acc &a : accs) {
    ReduceOp op = a.node->reduce_op;
    DType t = op == ReduceOp::Any || op == ReduceOp::All ? DType::Bool
              : op == ReduceOp::Welford                 ? (a.in == DType::F64 ? DType::F64 : DType::F32)
                                                        : a.in;
    for (const Value &r : reduce_looped(a)) {
      int id = (*next_scratch_)++;
      (*scratch_)[id] = {t, rows * split};
      std::string name = "partial_ptr" + std::to_string(scratch_ids.size());
      std::string at = known_eq(rows, 1) ? "split + xindex" : "split * " + size(rows) + " + xindex";
      w_.line("tl.store(" + name + " + " + at + ", " + r.name + row_mask + ")");
      scratch_ids.push_back(id);
      partial_params.push_back({id, name});
    }
  }
  // Kernel 1 reads what the pass reads and writes the pass's members and the partials;
  // kernel 2 writes the rest.
  auto stored_in_pass = [&](BufferId b) {
    for (int m : step.nodes)
      if (p_.nodes[size_t(m)].kind != ir::NodeKind::Reduction && contains(p_.nodes[size_t(m)].outputs, b)) return true;
    return false;
  };
  std::vector<std::pair<int, std::string>> first;
  for (const auto &pr : params)
    if (!contains(k_.stores, pr.first) || stored_in_pass(pr.first)) first.push_back(pr);
  first.insert(first.end(), partial_params.begin(), partial_params.end());
  std::map<std::string, std::string> attrs = {
      {"layout", "split: " + std::to_string(split) + " programs per " + (columns ? "block of XBLOCK rows side by side" : "row") +
                     " each reduce a chunk of " + str(chunk) + " in steps of RBLOCK; " + kernel_name() +
                     " combines the partials"}};
  end(first, plan_.warps, {triton_blocks(rows, l.block0), split, 1}, attrs);

  // Kernel 2: combine the partials, then the row's members.
  Layout c;
  c.two_d = true;
  // At most 4,096 partials of a kind in one program's registers.
  c.block0 = columns ? std::clamp<int64_t>(4096 / split, 1, std::min<int64_t>(64, next_pow2(rows.hint()))) : 1;
  c.block1 = split;
  c.n0 = rows;
  c.n1 = split;
  for (int d = 0; d < n; ++d) c.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
  begin(kernel_name(), c);
  emit_prologue();
  emit_leading(true);
  std::string all_rows = mask(kBoth).empty() ? "" : ", " + mask(kBoth);
  size_t next_partial = 0;
  for (const Acc &a : accs) {
    std::string at = known_eq(rows, 1) ? "rindex + xindex" : "rindex * " + size(rows) + " + xindex";
    auto load_partial = [&] { return def("tl.load(" + partial_params[next_partial++].second + " + " + at + all_rows + ")", kBoth); };
    ReduceOp op = a.node->reduce_op;
    if (op == ReduceOp::Welford) {
      Value mean = load_partial(), m2 = load_partial(), weight = load_partial();
      finish(a, merge_welford(mean.name, m2.name, weight.name));
      continue;
    }
    Value part = load_partial();
    std::string e;
    if (op == ReduceOp::Sum) e = cast_sum("tl.sum(" + part.name + ", 1)", a.in);
    else if (op == ReduceOp::Prod) { helpers_.insert("prod"); e = "tl.reduce(" + part.name + ", 1, _prod)"; }
    else if (op == ReduceOp::Max || op == ReduceOp::Min) e = max_min(op, part.name, a.in);
    else if (op == ReduceOp::Any) e = "tl.max(" + part.name + ".to(tl.int8), 1) > 0";
    else e = "tl.min(" + part.name + ".to(tl.int8), 1) > 0";
    finish(a, {def("(" + e + ")[:, None]", kA0)});
  }
  for (size_t s = pass + 1; s < k_.steps.size(); ++s)
    for (int m : k_.steps[s].nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
  std::vector<std::pair<int, std::string>> second;
  for (const auto &pr : params)
    if ((contains(k_.stores, pr.first) && !stored_in_pass(pr.first)) || used_outside_pass(pr.first)) second.push_back(pr);
  second.insert(second.end(), partial_params.begin(), partial_params.end());
  end(second, int(std::clamp<int64_t>(c.block0 * split / 256, 1, 4)), {triton_blocks(rows, c.block0), 1, 1},
      {{"layout", "combines " + std::to_string(split) + " partials per row, then the row's members"}});
}

size_t TritonEmitter::pass_step() const {
  std::optional<size_t> pass = k_.only_pass();
  COIL_ASSERT(pass, "split reduction ", k_.name, " has not one pass over its reduced elements");
  return *pass;
}

bool TritonEmitter::used_outside_pass(BufferId b) const {
  size_t pass = pass_step();
  for (size_t s = 0; s < k_.steps.size(); ++s)
    for (int m : k_.steps[s].nodes)
      if (s != pass && contains(p_.nodes[size_t(m)].reads(), b)) return true;
  return false;
}

}  // namespace coil::codegen::detail
