// Reduction kernels of the C++ dialect (cpp_kernel.h): accumulators and their vector
// forms, Welford's shift, the merge of partials, rows on threads, rows tiled over lanes
// of the last kept dim, and a reduction to one row split across threads.
#include "codegen/cpp/cpp_kernel.h"

#include <algorithm>
#include <array>

#include "codegen/common/access.h"
#include "support/error.h"
#include "support/int_math.h"

namespace coil::codegen::detail {

// ---- reductions -------------------------------------------------------------------------

KernelEmitter::Acc KernelEmitter::start(const Node &n) {
  std::string base = "acc" + std::to_string(next_acc_++);
  DType in = n.body.at(n.body.results[0]).dtype;
  std::string T = value_type(in);
  bool fl = is_floating(in);
  auto lowest = fl ? "-std::numeric_limits<" + T + ">::infinity()" : "std::numeric_limits<" + T + ">::lowest()";
  auto highest = fl ? "std::numeric_limits<" + T + ">::infinity()" : "std::numeric_limits<" + T + ">::max()";
  std::vector<std::array<std::string, 3>> vars;  // type, name, initial value
  switch (n.reduce_op) {
    case ir::ReduceOp::Sum: vars = {{T, base, "0"}}; break;
    case ir::ReduceOp::Prod: vars = {{T, base, "1"}}; break;
    case ir::ReduceOp::Max:
    case ir::ReduceOp::Min:
      vars = {{T, base, n.reduce_op == ir::ReduceOp::Max ? lowest : highest}};
      if (fl) vars.push_back({"int", base + "_n", "0"});  // a NaN was seen: the result is NaN
      break;
    case ir::ReduceOp::Any: vars = {{"bool", base, "false"}}; break;
    case ir::ReduceOp::All: vars = {{"bool", base, "true"}}; break;
    case ir::ReduceOp::ArgMax:
    case ir::ReduceOp::ArgMin: vars = {{T, base, "0"}, {"int64_t", base + "_i", "-1"}}; break;
    case ir::ReduceOp::Welford: vars = {{"double", base, "0"}, {"double", base + "_i", "0"}, {"int64_t", base + "_n", "0"}}; break;
  }
  // In a kernel tiled over lanes of the last kept dim, each lane has its accumulator.
  std::string lane = lanes_ ? "[l]" : "";
  for (const auto &[type, name, init] : vars)
    w_.line(type + " " + name + (lanes_ ? "[" + std::to_string(lanes_) + "]" : " = " + init) + ";");
  if (lanes_) {
    w_.open("for (int64_t l = 0; l < " + std::to_string(lanes_) + "; ++l)");
    for (const auto &[type, name, init] : vars) w_.line(name + "[l] = " + init + ";");
    w_.close();
  }
  return Acc{&n, base + lane, base + "_i" + lane, base + "_n" + lane, in, "", "", "", "", 0};
}

void KernelEmitter::accumulate(const Acc &acc, const std::string &x) {
  if (vlanes_) return accumulate_vector(acc, x);
  std::string T = value_type(acc.in);
  bool fl = is_floating(acc.in);
  switch (acc.node->reduce_op) {
    case ir::ReduceOp::Sum:
      w_.line(acc.a + " = " + (fl ? acc.a + " + " + x : "coil_rt::add_w<" + T + ">(" + acc.a + ", " + x + ")") + ";");
      return;
    case ir::ReduceOp::Prod:
      w_.line(acc.a + " = " + (fl ? acc.a + " * " + x : "coil_rt::mul_w<" + T + ">(" + acc.a + ", " + x + ")") + ";");
      return;
    case ir::ReduceOp::Max:
    case ir::ReduceOp::Min: {
      // max/min without NaN, and NaN on the side: both are reductions OpenMP vectorizes.
      std::string cmp = acc.node->reduce_op == ir::ReduceOp::Max ? " > " : " < ";
      w_.line(acc.a + " = " + x + cmp + acc.a + " ? " + x + " : " + acc.a + ";");
      if (fl) w_.line(acc.c + " = " + acc.c + " | int(" + x + " != " + x + ");");
      return;
    }
    case ir::ReduceOp::Any: w_.line(acc.a + " = " + acc.a + " || " + "(" + x + " != 0);"); return;
    case ir::ReduceOp::All: w_.line(acc.a + " = " + acc.a + " && " + "(" + x + " != 0);"); return;
    case ir::ReduceOp::ArgMax:
    case ir::ReduceOp::ArgMin: {
      // PyTorch's rule: the first extreme wins, and NaN counts as the extreme.
      std::string cmp = acc.node->reduce_op == ir::ReduceOp::ArgMax ? " > " : " < ";
      std::string better = fl ? "(" + x + " != " + x + " || " + x + cmp + acc.a + ")" : "(" + x + cmp + acc.a + ")";
      std::string stuck = fl ? acc.a + " != " + acc.a : "false";
      w_.line("if (" + acc.b + " < 0 || (!(" + stuck + ") && " + better + ")) { " + acc.a + " = " + x + "; " + acc.b +
              " = " + position() + "; }");
      return;
    }
    case ir::ReduceOp::Welford:
      if (!acc.shift.empty()) {
        // Sums of (x - K) and (x - K)^2 in double, K the row's first element: plain
        // sums vectorize, and with K within the data's spread nothing cancels.
        w_.line("{ const double d_ = double(" + x + ") - " + acc.shift + "; " + acc.a + " += d_; " + acc.b + " += d_ * d_; ++" +
                acc.c + "; }");
        return;
      }
      w_.line("{ double x_ = double(" + x + "); ++" + acc.c + "; double d_ = x_ - " + acc.a + "; " + acc.a +
              " += d_ / double(" + acc.c + "); " + acc.b + " += d_ * (x_ - " + acc.a + "); }");
      return;
  }
}

// ---- vector accumulators ------------------------------------------------------------------

bool KernelEmitter::vector_forms(const std::vector<Acc> &accs) {
  for (const Acc &acc : accs) {
    ir::ReduceOp op = acc.node->reduce_op;
    if (op == ir::ReduceOp::ArgMax || op == ir::ReduceOp::ArgMin) return false;
    if (op == ir::ReduceOp::Welford && acc.shift.empty()) return false;
  }
  return true;
}

void KernelEmitter::start_vector(Acc &acc, int lanes) {
  acc.vlanes = lanes;
  acc.va = acc.a + "_v";
  std::string T = value_type(acc.in), V = vector_type(acc.in, lanes), B = vector_type(DType::Bool, lanes);
  bool fl = is_floating(acc.in);
  switch (acc.node->reduce_op) {
    case ir::ReduceOp::Sum: w_.line(V + " " + acc.va + "(0);"); return;
    case ir::ReduceOp::Prod: w_.line(V + " " + acc.va + "(1);"); return;
    case ir::ReduceOp::Max:
    case ir::ReduceOp::Min: {
      bool max = acc.node->reduce_op == ir::ReduceOp::Max;
      std::string init = fl ? std::string(max ? "-" : "") + "std::numeric_limits<" + T + ">::infinity()"
                            : "std::numeric_limits<" + T + ">::" + (max ? "lowest()" : "max()");
      w_.line(V + " " + acc.va + "(" + init + ");");
      if (fl) {
        acc.vc = acc.a + "_nv";
        w_.line(B + " " + acc.vc + "(false);");
      }
      return;
    }
    case ir::ReduceOp::Any: w_.line(B + " " + acc.va + "(false);"); return;
    case ir::ReduceOp::All: w_.line(B + " " + acc.va + "(true);"); return;
    case ir::ReduceOp::Welford:
      acc.vb = acc.a + "_v2";
      w_.line(vector_type(DType::F64, lanes) + " " + acc.va + "(0.0), " + acc.vb + "(0.0);");
      return;
    case ir::ReduceOp::ArgMax:
    case ir::ReduceOp::ArgMin: break;
  }
  COIL_ASSERT(false, "no vector form for ", acc.node->origin);
}

void KernelEmitter::accumulate_vector(const Acc &acc, const std::string &x) {
  std::string T = value_type(acc.in), V = vector_type(acc.in, vlanes_);
  bool fl = is_floating(acc.in);
  switch (acc.node->reduce_op) {
    case ir::ReduceOp::Sum:
      w_.line(acc.va + " = " + (fl ? acc.va + " + " + x : "coil_rt::add_w<" + T + ">(" + acc.va + ", " + x + ")") + ";");
      return;
    case ir::ReduceOp::Prod:
      w_.line(acc.va + " = " + (fl ? acc.va + " * " + x : "coil_rt::mul_w<" + T + ">(" + acc.va + ", " + x + ")") + ";");
      return;
    case ir::ReduceOp::Max:
    case ir::ReduceOp::Min: {
      std::string cmp = acc.node->reduce_op == ir::ReduceOp::Max ? " > " : " < ";
      w_.line(acc.va + " = coil_rt::where(" + x + cmp + acc.va + ", " + x + ", " + acc.va + ");");
      if (fl) w_.line(acc.vc + " = " + acc.vc + " || coil_rt::isnan(" + x + ");");
      return;
    }
    case ir::ReduceOp::Any:
    case ir::ReduceOp::All: {
      std::string truth = acc.in == DType::Bool ? x : "(" + x + " != " + V + "(0))";
      w_.line(acc.va + " = " + acc.va + (acc.node->reduce_op == ir::ReduceOp::Any ? " || " : " && ") + truth + ";");
      return;
    }
    case ir::ReduceOp::Welford: {
      std::string D = vector_type(DType::F64, vlanes_);
      w_.line("{ const " + D + " d_ = coil_rt::cast<double>(" + x + ") - " + D + "(" + acc.shift + "); " + acc.va + " = " +
              acc.va + " + d_; " + acc.vb + " = " + acc.vb + " + d_ * d_; " + acc.c + " += " + std::to_string(vlanes_) +
              "; }");
      return;
    }
    case ir::ReduceOp::ArgMax:
    case ir::ReduceOp::ArgMin: break;
  }
  COIL_ASSERT(false, "no vector form for ", acc.node->origin);
}

void KernelEmitter::fold_vector(const Acc &acc) {
  if (!acc.vlanes) return;
  std::string T = value_type(acc.in), lanes = std::to_string(acc.vlanes);
  bool fl = is_floating(acc.in);
  switch (acc.node->reduce_op) {
    case ir::ReduceOp::Sum:
      w_.line(acc.a + " = " + (fl ? acc.a + " + coil_rt::hsum(" + acc.va + ")" : "coil_rt::add_w<" + T + ">(" + acc.a + ", coil_rt::hsum(" + acc.va + "))") + ";");
      return;
    case ir::ReduceOp::Prod:
      w_.line(acc.a + " = " + (fl ? acc.a + " * coil_rt::hprod(" + acc.va + ")" : "coil_rt::mul_w<" + T + ">(" + acc.a + ", coil_rt::hprod(" + acc.va + "))") + ";");
      return;
    case ir::ReduceOp::Welford:
      w_.line(acc.a + " += coil_rt::hsum(" + acc.va + "); " + acc.b + " += coil_rt::hsum(" + acc.vb + ");");
      return;
    default: break;
  }
  // max, min, any, all: the scalar merge, lane by lane.
  Acc lane = acc;
  lane.a = acc.va + "[l]";
  lane.c = acc.vc.empty() ? "" : "int(" + acc.vc + "[l])";
  w_.open("for (int l = 0; l < " + lanes + "; ++l)");
  merge(acc, lane);
  w_.close();
}

std::string KernelEmitter::emit_shift(const ir::Step &step, const Node &welford, const std::string &name) {
  w_.line("double " + name + " = 0;");
  if (const SymInt n = checked_numel(k_.reduction_ranges); !n.symbolic() && n.hint() == 0) return name;
  w_.open("");
  for (size_t d = 0; d < k_.reduction_ranges.size(); ++d)
    w_.line("const int64_t " + var(VarId{int(k_.ranges.size() + d)}) + " = 0;");
  push();
  for (int n : step.nodes) {
    const Node &node = p_.nodes[size_t(n)];
    if (&node == &welford) {
      auto v = emit_body(node.body);
      w_.line(name + " = double(" + v[size_t(node.body.results[0])] + ");");
      break;
    }
    if (node.kind != ir::NodeKind::Reduction) emit_pointwise_member(node);
  }
  pop();
  w_.close();
  return name;
}

std::string KernelEmitter::position() const {
  Expr linear(0);
  int n = int(k_.ranges.size());
  for (size_t d = 0; d < k_.reduction_ranges.size(); ++d)
    linear = linear * k_.reduction_ranges[d] + Expr(VarId{n + int(d)});
  return index(linear);
}

void KernelEmitter::finish(const Acc &acc) {
  const Node &n = *acc.node;
  switch (n.reduce_op) {
    case ir::ReduceOp::ArgMax:
    case ir::ReduceOp::ArgMin: store(n, n.outputs[0], acc.b, DType::I64); return;
    case ir::ReduceOp::Welford:
      if (!acc.shift.empty()) {
        std::string count = "double(" + acc.c + ")";
        store(n, n.outputs[0],
              def("double", acc.c + " ? " + acc.shift + " + " + acc.a + " / " + count + " : std::numeric_limits<double>::quiet_NaN()"),
              DType::F64);
        // m2 = sum d^2 - (sum d)^2 / n, at least 0 against cancellation; a NaN or an
        // infinity in the row leaves NaN here (inf - inf), which stays NaN as eager's.
        store(n, n.outputs[1],
              def("double", acc.c + " ? coil_rt::max_nan(0.0, " + acc.b + " - " + acc.a + " * " + acc.a + " / " + count + ") : 0.0"),
              DType::F64);
        store(n, n.outputs[2], def("double", count), DType::F64);
        return;
      }
      store(n, n.outputs[0], def("double", acc.c + " ? " + acc.a + " : std::numeric_limits<double>::quiet_NaN()"), DType::F64);
      store(n, n.outputs[1], acc.b, DType::F64);
      store(n, n.outputs[2], def("double", "double(" + acc.c + ")"), DType::F64);
      return;
    case ir::ReduceOp::Any:
    case ir::ReduceOp::All: store(n, n.outputs[0], acc.a, DType::Bool); return;
    case ir::ReduceOp::Max:
    case ir::ReduceOp::Min:
      if (is_floating(acc.in)) {
        store(n, n.outputs[0],
              def(value_type(acc.in),
                  acc.c + " ? std::numeric_limits<" + value_type(acc.in) + ">::quiet_NaN() : " + acc.a),
              acc.in);
        return;
      }
      store(n, n.outputs[0], acc.a, acc.in);
      return;
    case ir::ReduceOp::Sum:
    case ir::ReduceOp::Prod: store(n, n.outputs[0], acc.a, acc.in); return;
  }
}

std::optional<std::string> KernelEmitter::simd_clauses(const std::vector<Acc> &accs) {
  std::string out;
  for (const Acc &acc : accs) {
    bool fl = is_floating(acc.in);
    switch (acc.node->reduce_op) {
      case ir::ReduceOp::Sum: out += " reduction(+:" + acc.a + ")"; break;
      case ir::ReduceOp::Prod: out += " reduction(*:" + acc.a + ")"; break;
      case ir::ReduceOp::Any: out += " reduction(||:" + acc.a + ")"; break;
      case ir::ReduceOp::All: out += " reduction(&&:" + acc.a + ")"; break;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min:
        out += std::string(" reduction(") + (acc.node->reduce_op == ir::ReduceOp::Max ? "max:" : "min:") + acc.a + ")";
        if (fl) out += " reduction(|:" + acc.c + ")";
        break;
      case ir::ReduceOp::Welford:
        if (acc.shift.empty()) return std::nullopt;
        out += " reduction(+:" + acc.a + ") reduction(+:" + acc.b + ") reduction(+:" + acc.c + ")";
        break;
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: return std::nullopt;
    }
  }
  return out;
}

bool KernelEmitter::is_inner_member(const Node &n) {
  return n.kind == ir::NodeKind::Pointwise && !n.reduction_ranges.empty();
}

void KernelEmitter::open_lanes(int64_t block) {
  w_.line("#pragma omp simd");
  w_.open("for (int64_t l = 0; l < lanes; ++l)");
  std::string x = var(VarId{int(k_.ranges.size()) - 1});
  w_.line("const int64_t " + x + " = " + x + "b * " + std::to_string(block) + " + l;");
  push();
}

void KernelEmitter::close_lanes() {
  pop();
  w_.close();
}

void KernelEmitter::emit_tiled_reduction() {
  const int64_t block = plan_.tile;
  int n = int(k_.ranges.size());
  const SymInt &last = k_.ranges.back();
  SymInt blocks = sym_floor_div(last + (block - 1), block);
  SymInt work = reduction_work();
  push();
  SymShape outer(k_.ranges.begin(), k_.ranges.end() - 1);
  outer.push_back(blocks);
  int loops = 0;
  std::vector<int> dims;
  for (size_t d = 0; d < outer.size(); ++d)
    if (outer[d].symbolic() || outer[d].hint() > 1 || d + 1 == outer.size()) dims.push_back(int(d));
  w_.line("#pragma omp parallel for" + (dims.size() > 1 ? " collapse(" + std::to_string(dims.size()) + ")" : std::string()) +
          " num_threads(coil_rt::threads_for(" + cpp_size(work) + "))");
  for (int d : dims) {
    std::string x = var(VarId{d}) + (d == n - 1 ? "b" : "");
    w_.open("for (int64_t " + x + " = 0; " + x + " < " + cpp_size(outer[size_t(d)]) + "; ++" + x + ")");
    ++loops;
  }
  std::string xb = var(VarId{n - 1}) + "b";
  w_.line("const int64_t lanes = std::min<int64_t>(" + std::to_string(block) + ", " + cpp_size(last) + " - " + xb +
          " * " + std::to_string(block) + ");");
  lanes_ = block;
  for (int m : k_.nodes) {
    const Node &node = p_.nodes[size_t(m)];
    if (is_inner_member(node)) continue;
    for (BufferId b : node.outputs)
      w_.line(value_type(p_.buffer(b).type.dtype) + " row_" + p_.buffer(b).name + "[" + std::to_string(block) + "];");
  }
  push();
  row_scope_ = int(scopes_.innermost());
  for (const ir::Step &step : k_.steps) {
    if (!step.inner) {
      open_lanes(block);
      for (int m : step.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
      close_lanes();
      continue;
    }
    std::vector<Acc> accs;
    for (int m : step.nodes)
      if (p_.nodes[size_t(m)].kind == ir::NodeKind::Reduction) accs.push_back(start(p_.nodes[size_t(m)]));
    int inner = open_loops(k_.reduction_ranges, n, false, false, 0);
    open_lanes(block);
    size_t next = 0;
    for (int m : step.nodes) {
      const Node &node = p_.nodes[size_t(m)];
      if (node.kind != ir::NodeKind::Reduction) {
        emit_pointwise_member(node);
        continue;
      }
      auto v = emit_body(node.body);
      accumulate(accs[next++], v[size_t(node.body.results[0])]);
    }
    close_lanes();
    close_loops(inner);
    if (accs.empty()) continue;
    w_.open("for (int64_t l = 0; l < lanes; ++l)");
    w_.line("const int64_t " + var(VarId{n - 1}) + " = " + xb + " * " + std::to_string(block) + " + l;");
    push();
    for (const Acc &acc : accs) finish(acc);
    pop();
    w_.close();
  }
  pop();
  row_scope_ = -1;
  lanes_ = 0;
  close_loops(loops);
  pop();
}

void KernelEmitter::merge(const Acc &into, const Acc &from) {
  std::string T = value_type(into.in);
  bool fl = is_floating(into.in);
  switch (into.node->reduce_op) {
    case ir::ReduceOp::Welford:
      w_.line("{ const int64_t nb = " + from.c + "; if (nb > 0) { const double na = double(" + into.c +
              "), n = na + double(nb), d = " + from.a + " - " + into.a + "; " + into.b + " = " + into.b + " + " + from.b +
              " + d * d * na * double(nb) / n; " + into.a + " = " + into.a + " + d * double(nb) / n; " + into.c + " += nb; } }");
      return;
    case ir::ReduceOp::Sum: w_.line(into.a + " = " + (fl ? into.a + " + " + from.a : "coil_rt::add_w<" + T + ">(" + into.a + ", " + from.a + ")") + ";"); return;
    case ir::ReduceOp::Prod: w_.line(into.a + " = " + (fl ? into.a + " * " + from.a : "coil_rt::mul_w<" + T + ">(" + into.a + ", " + from.a + ")") + ";"); return;
    case ir::ReduceOp::Any: w_.line(into.a + " = " + into.a + " || " + from.a + ";"); return;
    case ir::ReduceOp::All: w_.line(into.a + " = " + into.a + " && " + from.a + ";"); return;
    case ir::ReduceOp::Max:
    case ir::ReduceOp::Min: {
      std::string cmp = into.node->reduce_op == ir::ReduceOp::Max ? " > " : " < ";
      w_.line(into.a + " = " + from.a + cmp + into.a + " ? " + from.a + " : " + into.a + ";");
      if (fl) w_.line(into.c + " = " + into.c + " | " + from.c + ";");
      return;
    }
    case ir::ReduceOp::ArgMax:
    case ir::ReduceOp::ArgMin: COIL_ASSERT(false, "argmax partials are not merged");
  }
}

SymInt KernelEmitter::reduction_work() const {
  SymInt reduced = checked_numel(k_.reduction_ranges);
  if (!reduced.symbolic()) reduced = std::max<int64_t>(reduced.hint(), 1);
  return checked_numel(k_.ranges) * reduced * body_work();
}

void KernelEmitter::emit_reduction() {
  if (plan_.strategy == CppStrategy::LanesOverKeptDim) return emit_tiled_reduction();
  push();
  SymInt work = reduction_work();
  int outer = open_loops(k_.ranges, 0, true, false, work);
  if (outer == 0) w_.open("");
  // A row per thread: its buffers on the thread's stack. Buffers of a symbolic row serve
  // the rows that fit them; longer ones run the passes computing each value again.
  std::optional<int64_t> fits;  // the longest row every buffer holds
  for (const CppRowCache &c : plan_.row_cache)
    if (c.row) fits = std::min(fits.value_or(c.size), c.size);
  if (fits) {
    w_.open("if (" + cpp_size(checked_numel(k_.reduction_ranges)) + " <= " + std::to_string(*fits) + ")");
    emit_row_passes(outer, work, true);
    w_.close();
    w_.open("else");
    emit_row_passes(outer, work, false);
    w_.close();
  } else {
    emit_row_passes(outer, work, true);
  }
  if (outer == 0) w_.close();
  close_loops(outer);
  pop();
}

void KernelEmitter::emit_row_passes(int outer, const SymInt &work, bool cached) {
  push();
  if (cached) declare_row_cache();
  step_index_ = 0;
  auto pass = plan_.passes.begin();
  for (const ir::Step &step : k_.steps) {
    ++step_index_;
    if (!step.inner) {
      for (int n : step.nodes) emit_pointwise_member(p_.nodes[size_t(n)]);
      continue;
    }
    COIL_ASSERT(pass != plan_.passes.end() && pass->step == step_index_ - 1, "the plan of ", k_.name,
                " has no pass for step ", step_index_);
    const CppPassPlan &plan = *pass++;
    if (plan.split) {
      COIL_ASSERT(outer == 0, "the plan of ", k_.name, " splits a pass of a kernel with several rows");
      emit_split_step(step, plan, work);
      continue;
    }
    std::vector<Acc> accs;
    for (int n : step.nodes)
      if (p_.nodes[size_t(n)].kind == ir::NodeKind::Reduction) accs.push_back(start(p_.nodes[size_t(n)]));
    for (Acc &acc : accs)
      if (acc.node->reduce_op == ir::ReduceOp::Welford) acc.shift = emit_shift(step, *acc.node, acc.a + "_k");
    int lanes = plan.lanes;
    COIL_ASSERT(lanes == 0 || vector_forms(accs), "the plan of ", k_.name, " runs a pass without a vector form in vectors");
    for (Acc &acc : accs)
      if (lanes) start_vector(acc, lanes);
    emit_nest(k_.reduction_ranges, int(k_.ranges.size()), false, 0, simd_clauses(accs), lanes, [&] { emit_pass(step, accs); });
    for (const Acc &acc : accs) fold_vector(acc);
    for (const Acc &acc : accs) finish(acc);
  }
  row_cache_.clear();
  pop();
}

void KernelEmitter::emit_pass(const ir::Step &step, const std::vector<Acc> &accs) {
  size_t next = 0;
  for (int n : step.nodes) {
    const Node &node = p_.nodes[size_t(n)];
    if (node.kind != ir::NodeKind::Reduction) {
      emit_pointwise_member(node);
      continue;
    }
    auto v = emit_body(node.body);
    accumulate(accs[next++], v[size_t(node.body.results[0])]);
  }
}

void KernelEmitter::emit_split_step(const ir::Step &step, const CppPassPlan &pass, const SymInt &work) {
  std::string nt = "nt" + std::to_string(next_acc_);
  w_.line("const int " + nt + " = coil_rt::threads_for(" + cpp_size(work) + ");");
  std::vector<const Node *> reductions;
  for (int n : step.nodes)
    if (p_.nodes[size_t(n)].kind == ir::NodeKind::Reduction) reductions.push_back(&p_.nodes[size_t(n)]);
  // Partials are named after the per-thread accumulators, which start() numbers next.
  int first = next_acc_;
  for (size_t i = 0; i < reductions.size(); ++i) {
    std::string a = "acc" + std::to_string(first + int(i));
    DType in = reductions[i]->body.at(reductions[i]->body.results[0]).dtype;
    std::string T = reductions[i]->reduce_op == ir::ReduceOp::Any || reductions[i]->reduce_op == ir::ReduceOp::All ? "char" : value_type(in);
    w_.line(T + " " + a + "_part[coil_rt::kMaxThreads];");
    if (is_floating(in) && (reductions[i]->reduce_op == ir::ReduceOp::Max || reductions[i]->reduce_op == ir::ReduceOp::Min))
      w_.line("int " + a + "_n_part[coil_rt::kMaxThreads];");
  }
  w_.line("#pragma omp parallel for schedule(static, 1) num_threads(" + nt + ")");
  w_.open("for (int t = 0; t < " + nt + "; ++t)");
  push();
  std::vector<Acc> accs;
  for (const Node *n : reductions) accs.push_back(start(*n));
  std::string clauses = *simd_clauses(accs);
  int n0 = int(k_.ranges.size());
  std::string r0 = var(VarId{n0}), size0 = cpp_size(k_.reduction_ranges[0]);
  SymShape rest(k_.reduction_ranges.begin() + 1, k_.reduction_ranges.end());
  const SymInt rest_size = checked_numel(rest);
  bool one_dim = !rest_size.symbolic() && rest_size.hint() == 1;  // the first reduced dim is the only one
  // The thread's chunk of the first reduced dim; when it is the only one, its loop steps
  // by vectors (from the chunk's start: loads unaligned) and ends with a scalar tail.
  int lanes = pass.lanes;
  for (Acc &acc : accs)
    if (lanes) start_vector(acc, lanes);
  w_.line("const int64_t " + r0 + "_begin = " + size0 + " * t / " + nt + ", " + r0 + "_end = " + size0 + " * (t + 1) / " + nt + ";");
  if (one_dim && lanes) {
    std::string l = std::to_string(lanes);
    w_.line("const int64_t " + r0 + "_split = " + r0 + "_begin + (" + r0 + "_end - " + r0 + "_begin) / " + l + " * " + l + ";");
    w_.open("for (int64_t " + r0 + " = " + r0 + "_begin; " + r0 + " < " + r0 + "_split; " + r0 + " += " + l + ")");
    vector_body(VarId{n0}, lanes, false, [&] { emit_pass(step, accs); });
    w_.close();
    w_.open("for (int64_t " + r0 + " = " + r0 + "_split; " + r0 + " < " + r0 + "_end; ++" + r0 + ")");
  } else {
    if (one_dim) w_.line("#pragma omp simd" + clauses);
    w_.open("for (int64_t " + r0 + " = " + r0 + "_begin; " + r0 + " < " + r0 + "_end; ++" + r0 + ")");
  }
  if (one_dim) {
    push();
    emit_pass(step, accs);
    pop();
  } else {
    emit_nest(rest, n0 + 1, false, 0, clauses, lanes, [&] { emit_pass(step, accs); });
  }
  w_.close();
  for (const Acc &acc : accs) fold_vector(acc);
  for (const Acc &acc : accs) {
    w_.line(acc.a + "_part[t] = " + acc.a + ";");
    if (is_floating(acc.in) && (acc.node->reduce_op == ir::ReduceOp::Max || acc.node->reduce_op == ir::ReduceOp::Min))
      w_.line(acc.a + "_n_part[t] = " + acc.c + ";");
  }
  pop();
  w_.close();
  std::vector<Acc> total;
  for (const Node *n : reductions) total.push_back(start(*n));
  w_.open("for (int t = 0; t < " + nt + "; ++t)");
  for (size_t i = 0; i < total.size(); ++i) {
    Acc part = accs[i];
    part.a = accs[i].a + "_part[t]";
    part.c = accs[i].a + "_n_part[t]";
    merge(total[i], part);
  }
  w_.close();
  for (const Acc &acc : total) finish(acc);
}

}  // namespace coil::codegen::detail
