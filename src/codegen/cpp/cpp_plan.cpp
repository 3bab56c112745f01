// The C++ dialect's planner (cpp_plan.h): each kernel's strategy, lanes, tiles, row
// buffers and prefaulted outputs, and the option cpp.plan that overrides them.
#include "codegen/cpp/cpp_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "codegen/common/access.h"
#include "codegen/cpp/cpp_extern.h"
#include "codegen/cpp/cpp_ops.h"
#include "support/error.h"

namespace coil::codegen {
namespace {

using ir::Instr;
using ir::Node;
using ir::Op;
using ir::VarId;

constexpr int64_t kTile = 32;          // edge of a transposed tile
constexpr int64_t kKeptBlock = 64;     // rows side by side in LanesOverKeptDim
constexpr int kMaxTransposed = 4;      // transposed loads copied into tiles; the rest lane by lane
constexpr int64_t kRowCacheBytes = 32768;
constexpr size_t kMaxRowCaches = 2;
constexpr int64_t kPrefaultBytes = int64_t(1) << 20;

std::string var_name(const ir::Kernel &k, int id) {
  int n = int(k.ranges.size());
  return id < n ? "x" + std::to_string(id) : "r" + std::to_string(id - n);
}

// The innermost dim of `sizes` with more than one element (a symbolic size counts as
// more), or -1.
int innermost(const SymShape &sizes) {
  int d = int(sizes.size()) - 1;
  while (d >= 0 && known_eq(sizes[size_t(d)], 1)) --d;
  return d;
}

// Lanes of a vector loop over the innermost dim of `sizes`: a register's, unless that dim
// is shorter than a register (or the ISA has no vectors). A symbolic dim runs in vectors
// whatever its size compiled for: its loop has a scalar tail, which at a short size is the
// whole loop, and long sizes get the vectors.
int lanes_for(const SymShape &sizes, int register_lanes) {
  int d = innermost(sizes);
  if (d < 0) return 0;
  const SymInt &size = sizes[size_t(d)];
  return register_lanes > 0 && (size.symbolic() || size.hint() >= register_lanes) ? register_lanes : 0;
}

void set_vector_loop(CppKernelPlan &plan, const ir::Kernel &k, const SymShape &sizes, int first) {
  int d = innermost(sizes);
  plan.vector_var = d < 0 ? "" : var_name(k, first + d);
  plan.vector_size = d < 0 ? 0 : sizes[size_t(d)].hint();
  plan.lanes = lanes_for(sizes, plan.register_lanes);
}

bool is_arg_reduction(const Node &n) {
  return n.kind == ir::NodeKind::Reduction && (n.reduce_op == ir::ReduceOp::ArgMax || n.reduce_op == ir::ReduceOp::ArgMin);
}

// ---- pointwise: transposed tiles ------------------------------------------------------------

// Direct loads of the kernel's inputs that are contiguous along the second last dim and
// strided along the last (by a constant, or by sizes: `x1*s10`), each distinct one once:
// each is copied into a tile of its own, transposed, which the rows of the tile then read
// as vectors.
std::vector<CppLoadRef> transposed_loads(const ir::Program &p, const ir::Kernel &k, const ir::Ranges &ranges) {
  int n = int(k.ranges.size());
  std::vector<CppLoadRef> out;
  std::set<std::string> seen;
  for (int m : k.nodes) {
    const ir::Body &body = p.nodes[size_t(m)].body;
    for (size_t idx = 0; idx < body.instrs.size(); ++idx) {
      const Instr &i = body.instrs[idx];
      if (i.op != Op::Load || !i.indirect.empty() || i.args[0] >= 0) continue;
      if (contains(k.internal, i.buffer) || contains(k.stores, i.buffer)) continue;
      ir::AccessFact prev = ir::access_of(i.index, VarId{n - 2}, ranges);
      std::optional<ir::Expr> last = ir::stride_of(i.index, VarId{n - 1}, ranges);
      if (prev.kind != ir::Access::Contiguous || !last || *last == ir::Expr(0) || *last == ir::Expr(1)) continue;
      if (int(out.size()) < kMaxTransposed && seen.insert(element_key(p, i.buffer, i.index, ranges)).second)
        out.push_back({m, int(idx)});
    }
  }
  return out;
}

void plan_tiles(CppKernelPlan &plan, const ir::Program &p, const ir::Kernel &k, const ir::Ranges &ranges) {
  plan.strategy = CppStrategy::TransposedTiles;
  plan.tile = kTile;
  plan.tile_lanes = plan.register_lanes > 0 && kTile % plan.register_lanes == 0 ? plan.register_lanes : 0;
  plan.transposed = transposed_loads(p, k, ranges);
  const SymInt &rows = k.ranges[k.ranges.size() - 2], &cols = k.ranges.back();
  plan.tile_edges = rows.symbolic() || cols.symbolic() || rows.hint() % kTile != 0 || cols.hint() % kTile != 0;
}

void plan_lanes_over_kept_dim(CppKernelPlan &plan, const ir::Kernel &k) {
  plan.strategy = CppStrategy::LanesOverKeptDim;
  plan.tile = kKeptBlock;
  plan.vector_var = var_name(k, int(k.ranges.size()) - 1);
}

// ---- reductions ---------------------------------------------------------------------------

// Whether the reductions of `step` have forms that OpenMP's reduction clauses and partial
// results merged after the loop can take: not argmax's first-index rule, not Welford's
// running mean (its shifted sums need the row's first element, which a chunk lacks).
bool splittable(const ir::Program &p, const ir::Step &step) {
  bool any = false;
  for (int n : step.nodes) {
    const Node &node = p.nodes[size_t(n)];
    if (node.kind != ir::NodeKind::Reduction) continue;
    if (is_arg_reduction(node) || node.reduce_op == ir::ReduceOp::Welford) return false;
    any = true;
  }
  return any;
}

std::vector<CppPassPlan> plan_passes(const ir::Program &p, const ir::Kernel &k, const CppKernelPlan &plan) {
  std::vector<CppPassPlan> passes;
  SymShape rest(k.reduction_ranges.empty() ? k.reduction_ranges.begin() : k.reduction_ranges.begin() + 1,
                k.reduction_ranges.end());
  for (size_t s = 0; s < k.steps.size(); ++s) {
    const ir::Step &step = k.steps[s];
    if (!step.inner) continue;
    CppPassPlan pass;
    pass.step = int(s);
    for (int n : step.nodes)
      if (is_arg_reduction(p.nodes[size_t(n)])) {
        pass.scalar_reason = "first-index tie rule";
        pass.scalar_origin = p.nodes[size_t(n)].origin;
      }
    pass.split = plan.strategy == CppStrategy::SplitRow && splittable(p, step) && !k.reduction_ranges.empty() &&
                 !known_eq(k.reduction_ranges[0], 1) && !known_eq(k.reduction_ranges[0], 0);
    if (!pass.scalar_reason.empty()) {
      pass.lanes = 0;
    } else if (pass.split) {
      // A thread's chunk of the first reduced dim steps by vectors when it is the only dim.
      pass.lanes = known_eq(checked_numel(rest), 1) ? lanes_for({k.reduction_ranges[0]}, plan.lanes)
                                            : lanes_for(rest, plan.lanes);
    } else {
      pass.lanes = plan.lanes;
    }
    passes.push_back(pass);
  }
  return passes;
}

bool costly(Op op) {
  switch (op) {
    case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log: case Op::Log1p: case Op::Log2: case Op::Tanh:
    case Op::Sigmoid: case Op::Erf: case Op::Pow: case Op::Sin: case Op::Cos: case Op::Tan: case Op::Atan2: return true;
    default: return false;
  }
}

// Costly values of floating type that a later pass computes again, while a row of each
// fits in 32 KiB: at most two, each written by the first pass that computes it. Row
// buffers live on the thread's stack, of a size known now: a symbolic row whose hint fits
// gets buffers of 32 KiB, which serve the rows that fit (CppRowCache::row).
std::vector<CppRowCache> plan_row_cache(const ir::Program &p, const ir::Kernel &k, const ir::Ranges &ranges) {
  std::vector<CppRowCache> out;
  SymInt reduced = checked_numel(k.reduction_ranges);
  if (reduced.hint() <= 0) return out;
  int64_t rn = reduced.hint();
  std::map<std::string, int> first;  // key -> the pass that computes it first
  int step = 0;
  for (const ir::Step &s : k.steps) {
    ++step;
    if (!s.inner) continue;
    for (int n : s.nodes) {
      const ir::Body &body = p.nodes[size_t(n)].body;
      std::vector<std::string> keys = structural_keys(p, body, ranges);
      for (size_t i = 0; i < keys.size(); ++i) {
        const Instr &instr = body.instrs[i];
        if (!costly(instr.op) || !is_floating(instr.dtype) || rn * itemsize(instr.dtype) > kRowCacheBytes) continue;
        auto [it, inserted] = first.emplace(keys[i], step);
        bool cached = std::any_of(out.begin(), out.end(), [&](const CppRowCache &c) { return c.key == keys[i]; });
        if (!inserted && it->second < step && !cached && out.size() < kMaxRowCaches) {
          std::optional<SymInt> row = reduced.symbolic() ? std::optional<SymInt>(reduced) : std::nullopt;
          int64_t size = row ? kRowCacheBytes / itemsize(instr.dtype) : rn;
          out.push_back({keys[i], it->second, "row_value" + std::to_string(out.size()), instr.dtype, size, row});
        }
      }
    }
  }
  return out;
}

void plan_reduction(CppKernelPlan &plan, const ir::Program &p, const ir::Kernel &k, const ir::Ranges &ranges) {
  if (!k.ranges.empty() && k.ranges.back().hint() >= 16 && rows_contiguous_across_reduction(p, k))
    return plan_lanes_over_kept_dim(plan, k);
  plan.strategy = known_eq(checked_numel(k.ranges), 1) ? CppStrategy::SplitRow : CppStrategy::RowsOnThreads;
  set_vector_loop(plan, k, k.reduction_ranges, int(k.ranges.size()));
  plan.passes = plan_passes(p, k, plan);
  // A row per thread: its row buffers on the thread's stack.
  if (plan.strategy == CppStrategy::RowsOnThreads) plan.row_cache = plan_row_cache(p, k, ranges);
}

// ---- the first touch of large outputs --------------------------------------------------

// Graph outputs of 1 MiB or more that the kernel writes: the caller owns that memory and
// may hand it over freshly mapped. Arena buffers are backed after the first call, and an
// output written in place over another argument is not fresh.
std::vector<ir::BufferId> plan_prefault(const ir::Program &p, const ir::Kernel &k, const Storage &storage) {
  std::vector<ir::BufferId> out;
  if (k.kind != ir::KernelKind::Pointwise && k.kind != ir::KernelKind::Reduction) return out;
  KernelParams params = kernel_params(p, k);
  auto shares_memory = [&](ir::BufferId b) {
    return std::any_of(params.order.begin(), params.order.end(),
                       [&](ir::BufferId o) { return o != b && storage.key.at(o) == storage.key.at(b); });
  };
  for (ir::BufferId b : params.order) {
    if (!contains(k.stores, b) || storage.in_arena.count(b) || shares_memory(b)) continue;
    const TensorType &t = p.buffer(b).type;
    if ((storage_extent(t) * itemsize(t.dtype)).hint() >= kPrefaultBytes) out.push_back(b);  // a heuristic
  }
  return out;
}

// ---- overrides -------------------------------------------------------------------------------

std::vector<CppStrategy> legal_strategies(const ir::Kernel &k) {
  switch (k.kind) {
    case ir::KernelKind::Pointwise:
      if (k.ranges.size() >= 2) return {CppStrategy::Rows, CppStrategy::TransposedTiles};
      return {CppStrategy::Rows};
    case ir::KernelKind::Reduction: {
      std::vector<CppStrategy> out{CppStrategy::RowsOnThreads};
      if (known_eq(checked_numel(k.ranges), 1)) out.push_back(CppStrategy::SplitRow);
      if (!k.ranges.empty()) out.push_back(CppStrategy::LanesOverKeptDim);
      return out;
    }
    case ir::KernelKind::Scan: return {CppStrategy::Scan};
    case ir::KernelKind::Scatter: return {CppStrategy::Scatter};
    case ir::KernelKind::Extern: return {CppStrategy::Extern};
  }
  return {};
}

std::string strategy_names(const std::vector<CppStrategy> &v) {
  std::string out;
  for (CppStrategy s : v) out += std::string(out.empty() ? "" : ", ") + strategy_name(s);
  return out;
}

bool parse_flag(const std::string &what, const std::string &value) {
  if (value == "0" || value == "off" || value == "false") return false;
  if (value == "1" || value == "on" || value == "true") return true;
  throw UserError(str_cat("option cpp.plan: '", what, "' expects 0 or 1"));
}

// Replans `plan` after its strategy changed: the fields that strategy needs, anew.
void replan(CppKernelPlan &plan, CppStrategy to, const ir::Program &p, const ir::Kernel &k, const ir::Ranges &ranges) {
  CppKernelPlan fresh;
  fresh.kernel = plan.kernel;
  fresh.kind = plan.kind;
  fresh.register_lanes = plan.register_lanes;
  fresh.prefault = plan.prefault;
  fresh.overridden = plan.overridden;
  fresh.strategy = to;
  switch (to) {
    case CppStrategy::Rows: set_vector_loop(fresh, k, k.ranges, 0); break;
    case CppStrategy::TransposedTiles: plan_tiles(fresh, p, k, ranges); break;
    case CppStrategy::LanesOverKeptDim: plan_lanes_over_kept_dim(fresh, k); break;
    case CppStrategy::RowsOnThreads:
    case CppStrategy::SplitRow:
      set_vector_loop(fresh, k, k.reduction_ranges, int(k.ranges.size()));
      fresh.passes = plan_passes(p, k, fresh);
      if (to == CppStrategy::RowsOnThreads && !known_eq(checked_numel(k.ranges), 1)) fresh.row_cache = plan_row_cache(p, k, ranges);
      break;
    case CppStrategy::Scan:
    case CppStrategy::Scatter:
    case CppStrategy::Extern: break;
  }
  plan = std::move(fresh);
}

void set_lanes(CppKernelPlan &plan, const std::string &what, const std::string &value) {
  int lanes = 0;
  try {
    size_t used = 0;
    lanes = std::stoi(value, &used);
    if (used != value.size()) lanes = -1;
  } catch (const std::exception &) {
    lanes = -1;
  }
  COIL_USER_CHECK(lanes == 0 || (lanes >= 2 && lanes <= 64 && (lanes & (lanes - 1)) == 0), "option cpp.plan: '", what,
                  "': lanes must be 0 (scalar code) or a power of two from 2 to 64");
  switch (plan.strategy) {
    case CppStrategy::Rows: plan.lanes = plan.vector_size >= lanes ? lanes : 0; break;
    case CppStrategy::TransposedTiles:
      COIL_USER_CHECK(lanes == 0 || kTile % lanes == 0, "option cpp.plan: '", what, "': a tile's rows of ", kTile,
                      " take lanes dividing ", kTile);
      plan.tile_lanes = lanes;
      break;
    case CppStrategy::RowsOnThreads:
    case CppStrategy::SplitRow:
      plan.lanes = plan.vector_size >= lanes ? lanes : 0;
      for (CppPassPlan &pass : plan.passes)
        if (pass.scalar_reason.empty()) pass.lanes = plan.lanes;
      break;
    case CppStrategy::LanesOverKeptDim:
    case CppStrategy::Scan:
    case CppStrategy::Scatter:
    case CppStrategy::Extern:
      throw UserError(str_cat("option cpp.plan: '", what, "': ", plan.kernel, " (", strategy_name(plan.strategy),
                              ") has no vector loop whose lanes could be set"));
  }
}

void apply_override(CppKernelPlan &plan, const std::string &field, const std::string &value, const std::string &what,
                    const ir::Program &p, const ir::Kernel &k, const ir::Ranges &ranges) {
  if (field == "strategy") {
    std::vector<CppStrategy> legal = legal_strategies(k);
    auto it = std::find_if(legal.begin(), legal.end(), [&](CppStrategy s) { return value == strategy_name(s); });
    COIL_USER_CHECK(it != legal.end(), "option cpp.plan: '", what, "': ", plan.kernel, " can run as ", strategy_names(legal));
    replan(plan, *it, p, k, ranges);
  } else if (field == "lanes") {
    set_lanes(plan, what, value);
  } else if (field == "split") {
    bool on = parse_flag(what, value);
    COIL_USER_CHECK(plan.strategy == CppStrategy::SplitRow || !on, "option cpp.plan: '", what, "': ", plan.kernel,
                    " does not reduce to one row");
    for (CppPassPlan &pass : plan.passes) pass.split = pass.split && on;
  } else if (field == "row_cache") {
    COIL_USER_CHECK(!parse_flag(what, value), "option cpp.plan: '", what,
                    "': row buffers can only be turned off (the planner keeps those worth keeping)");
    plan.row_cache.clear();
  } else if (field == "prefault") {
    COIL_USER_CHECK(!parse_flag(what, value), "option cpp.plan: '", what, "': prefaulting can only be turned off");
    plan.prefault.clear();
  } else {
    throw UserError(str_cat("option cpp.plan: '", what, "': no field '", field,
                            "'; the fields are strategy, lanes, split, row_cache, prefault"));
  }
  plan.overridden.push_back(field + "=" + value);
}

void apply_overrides(std::vector<CppKernelPlan> &plans, const sched::Schedule &s, const std::string &text) {
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    size_t dot = item.find('.'), eq = item.find('=');
    COIL_USER_CHECK(dot != std::string::npos && eq != std::string::npos && dot < eq, "option cpp.plan: '", item,
                    "' is not KERNEL.FIELD=VALUE (kernel0.lanes=8)");
    std::string kernel = item.substr(0, dot), field = item.substr(dot + 1, eq - dot - 1), value = item.substr(eq + 1);
    auto it = std::find_if(plans.begin(), plans.end(), [&](const CppKernelPlan &pl) { return pl.kernel == kernel; });
    COIL_USER_CHECK(it != plans.end(), "option cpp.plan: '", item, "': the graph has no kernel ", kernel, " (kernel0 to kernel",
                    plans.size() - 1, ")");
    const ir::Kernel &k = s.ir.kernels[size_t(it - plans.begin())];
    apply_override(*it, field, value, item, s.ir.program, k, ir::ranges_of(k.ranges, k.reduction_ranges));
  }
}

// ---- words ------------------------------------------------------------------------------------

// How the vector loop of `plan` runs, in words: "x1 (256) in vectors of 16 lanes, no tail".
std::string vector_words(const CppKernelPlan &plan) {
  if (plan.vector_var.empty()) return "one element, no loop";
  std::string x = plan.vector_var, size = std::to_string(plan.vector_size);
  if (plan.register_lanes == 0 && plan.lanes == 0) return x + " (" + size + ") in scalar code under omp simd (the ISA has no vectors)";
  if (plan.lanes == 0)
    return x + " (" + size + ") in scalar code under omp simd (shorter than a vector of " +
           std::to_string(plan.register_lanes) + ")";
  std::string lanes = std::to_string(plan.lanes);
  if (plan.strategy == CppStrategy::SplitRow && x == "r0")
    return x + " (" + size + ") in vectors of " + lanes + " lanes, each thread's chunk with a scalar tail";
  int64_t tail = plan.vector_size % plan.lanes;
  return x + " (" + size + ") in vectors of " + lanes + " lanes" +
         (tail ? ", a scalar tail of " + std::to_string(tail) : std::string(", no tail"));
}

}  // namespace

const char *strategy_name(CppStrategy s) {
  switch (s) {
    case CppStrategy::Rows: return "rows";
    case CppStrategy::TransposedTiles: return "transposed_tiles";
    case CppStrategy::RowsOnThreads: return "rows_on_threads";
    case CppStrategy::SplitRow: return "split_row";
    case CppStrategy::LanesOverKeptDim: return "lanes_over_kept_dim";
    case CppStrategy::Scan: return "scan";
    case CppStrategy::Scatter: return "scatter";
    case CppStrategy::Extern: return "extern";
  }
  return "?";
}

std::vector<std::string> structural_keys(const ir::Program &p, const ir::Body &body, const ir::Ranges &ranges) {
  std::vector<std::string> keys(body.instrs.size());
  for (size_t k = 0; k < body.instrs.size(); ++k) {
    const Instr &i = body.instrs[k];
    std::string key = std::string(ir::op_name(i.op)) + ":" + std::string(short_name(i.dtype));
    if (i.op == Op::Load) {
      // Where the element read depends on data or a mask, the load is this one alone.
      if (!i.indirect.empty() || i.args[0] >= 0) key += "#" + std::to_string(reinterpret_cast<uintptr_t>(&i));
      key += "(" + p.buffer(i.buffer).name + "[" + ir::str(ir::simplify(i.index, ranges)) + "])";
    } else if (i.op == Op::Constant) {
      key += "(" + literal(i.value, i.dtype) + ")";
    } else if (i.op == Op::Index) {
      key += "(" + ir::str(ir::simplify(i.index, ranges)) + ")";
    } else {
      key += "(";
      for (int a = 0; a < ir::op_arity(i.op); ++a) key += (a ? "," : "") + keys[size_t(i.args[size_t(a)])];
      key += ")";
    }
    keys[k] = key;
  }
  return keys;
}

CppKernelPlan plan_cpp_kernel(const ir::Program &p, const ir::Kernel &k, const Storage &storage, const CppOptions &o) {
  CppKernelPlan plan;
  plan.kernel = k.name;
  plan.kind = k.kind;
  plan.register_lanes = o.lanes ? o.lanes : o.vector_bytes / 4;
  ir::Ranges ranges = ir::ranges_of(k.ranges, k.reduction_ranges);
  switch (k.kind) {
    case ir::KernelKind::Pointwise:
      // When a load walks the last two dims the other way round from the store (x + y.t()),
      // both are cut into square tiles, so that the lines of both stay in cache.
      if (loads_transposed_in_last_two_dims(p, k)) {
        plan_tiles(plan, p, k, ranges);
      } else {
        plan.strategy = CppStrategy::Rows;
        set_vector_loop(plan, k, k.ranges, 0);
      }
      break;
    case ir::KernelKind::Reduction: plan_reduction(plan, p, k, ranges); break;
    case ir::KernelKind::Scan: plan.strategy = CppStrategy::Scan; break;
    case ir::KernelKind::Scatter: plan.strategy = CppStrategy::Scatter; break;
    case ir::KernelKind::Extern:
      plan.strategy = CppStrategy::Extern;
      plan.library = extern_library(p, k);
      break;
  }
  if (o.prefault) plan.prefault = plan_prefault(p, k, storage);
  return plan;
}

std::vector<CppKernelPlan> plan_cpp(const sched::Schedule &s, const CppOptions &o, const std::string &overrides) {
  Storage storage = place_buffers(s);
  std::vector<CppKernelPlan> plans;
  for (const ir::Kernel &k : s.ir.kernels) {
    GuardActivity what("the C++ plan of", k.name);
    plans.push_back(plan_cpp_kernel(s.ir.program, k, storage, o));
  }
  apply_overrides(plans, s, overrides);
  return plans;
}

std::string describe(const CppKernelPlan &plan) {
  switch (plan.strategy) {
    case CppStrategy::Rows: return "threads over the outer loops; " + vector_words(plan);
    case CppStrategy::TransposedTiles: {
      std::string tile = std::to_string(plan.tile) + "x" + std::to_string(plan.tile);
      if (plan.tile_lanes == 0) return tile + " tiles of the last two dims (a load walks them transposed), omp simd in a tile";
      return tile + " tiles of the last two dims: " + std::to_string(plan.transposed.size()) +
             " transposed load(s) copied into a tile first, transposed; rows of the tile in vectors of " +
             std::to_string(plan.tile_lanes) + " lanes" + (plan.tile_edges ? "; tiles at the edges in scalar code" : "");
    }
    case CppStrategy::LanesOverKeptDim:
      return "rows in blocks of " + std::to_string(plan.tile) + " lanes of " + plan.vector_var +
             " (neighbouring rows are contiguous), omp simd across the lanes";
    case CppStrategy::RowsOnThreads:
    case CppStrategy::SplitRow: {
      std::string threads = plan.strategy == CppStrategy::SplitRow
                                ? "the reduced elements split across threads, partials combined in order"
                                : "threads over rows";
      std::string scalar_passes;
      for (const CppPassPlan &pass : plan.passes)
        if (!pass.scalar_reason.empty())
          scalar_passes = "; the pass of " + pass.scalar_origin + " is scalar (" + pass.scalar_reason + ")";
      return threads + "; " + vector_words(plan) + scalar_passes;
    }
    case CppStrategy::Scan: return "threads over rows, each scanned in order";
    case CppStrategy::Scatter: return "the copy, then the writes in order";
    case CppStrategy::Extern: return plan.library;
  }
  return "";
}

std::string plans_str(const std::vector<CppKernelPlan> &plans, const sched::Schedule &s) {
  const ir::Program &p = s.ir.program;
  std::ostringstream out;
  out << "# The C++ dialect's plan of each kernel (codegen/cpp/cpp_plan.h); the option cpp.plan overrides\n"
      << "# a field: --set cpp.plan=kernel0.lanes=8,kernel1.strategy=rows_on_threads\n";
  for (size_t i = 0; i < plans.size(); ++i) {
    const CppKernelPlan &plan = plans[i];
    out << plan.kernel << "  " << ir::kernel_summary(p, s.ir.kernels[i]) << "\n";
    out << "  strategy   " << strategy_name(plan.strategy) << "\n";
    if (plan.strategy == CppStrategy::Extern) out << "  library    " << plan.library << "\n";
    if (!plan.vector_var.empty() && plan.strategy != CppStrategy::LanesOverKeptDim)
      out << "  vector     " << plan.vector_var << " (" << plan.vector_size << "), lanes " << plan.lanes << " (a register: "
          << plan.register_lanes << ")\n";
    if (plan.strategy == CppStrategy::TransposedTiles) {
      out << "  tiles      " << plan.tile << "x" << plan.tile << ", lanes " << plan.tile_lanes
          << (plan.tile_edges ? ", edge tiles in scalar code" : "") << "\n";
      for (const CppLoadRef &l : plan.transposed) {
        const Instr &i = p.nodes[size_t(l.node)].body.instrs[size_t(l.instr)];
        out << "  transpose  " << p.buffer(i.buffer).name << "[" << ir::str(i.index) << "] (" << p.nodes[size_t(l.node)].origin
            << ")\n";
      }
    }
    if (plan.strategy == CppStrategy::LanesOverKeptDim)
      out << "  lanes      " << plan.tile << " rows side by side along " << plan.vector_var << "\n";
    for (const CppPassPlan &pass : plan.passes) {
      out << "  pass " << pass.step + 1 << "     " << (pass.split ? "split across threads, " : "");
      if (pass.lanes) out << "lanes " << pass.lanes << "\n";
      else out << "scalar" << (pass.scalar_reason.empty() ? "" : " (" + pass.scalar_origin + ": " + pass.scalar_reason + ")") << "\n";
    }
    for (const CppRowCache &c : plan.row_cache)
      out << "  row cache  " << c.name << "[" << c.size << "] of " << short_name(c.dtype) << ", written by pass " << c.step
          << (c.row ? str_cat(", where ", *c.row, " <= ", c.size) : std::string()) << ": " << c.key << "\n";
    for (ir::BufferId b : plan.prefault) out << "  prefault   " << p.buffer(b).name << "\n";
    for (const std::string &o : plan.overridden) out << "  overridden " << o << " (cpp.plan)\n";
    out << "  in words   " << describe(plan) << "\n";
  }
  return out.str();
}

}  // namespace coil::codegen
