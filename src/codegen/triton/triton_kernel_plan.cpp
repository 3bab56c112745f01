// The Triton dialect's planner (triton_kernel_plan.h): each kernel's strategy, block
// sizes, warps, stages and split, and the plans worth timing.
#include "codegen/triton/triton_kernel_plan.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "codegen/common/access.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "codegen/triton/triton_kernel.h"
#include "ir/specialize.h"
#include "support/error.h"

namespace coil::codegen {
namespace {

using detail::ceil_div;
using detail::next_pow2;

// The config's value when it sets one, else the default.
template <typename T>
T pick(T configured, T otherwise) {
  return configured > 0 ? configured : otherwise;
}

// Whether the reduced elements of a row may be split across programs: a single pass of
// combinable reductions (no argmax/argmin; Welford's partials merge by Chan's formula) and
// members computed at each element (stored by the program whose chunk holds it), with row
// values only before it (computed by both kernels of the split) and after it.
bool splittable(const ir::Program &p, const ir::Kernel &k) {
  std::optional<size_t> pass = k.only_pass();
  if (!pass) return false;
  for (int m : k.steps[*pass].nodes) {
    const ir::Node &node = p.nodes[size_t(m)];
    if (node.kind != ir::NodeKind::Reduction) continue;
    ir::ReduceOp op = node.reduce_op;
    if (op == ir::ReduceOp::ArgMax || op == ir::ReduceOp::ArgMin) return false;
  }
  return true;
}

// Programs per row (1: no split). Rows reduced one per program: split when at most 64
// rows of 65,536 or more would leave the GPU idle, in chunks of about 32,768. Rows side by
// side (a sum over dim 0): split when fewer than 256 programs (two per multiprocessor of
// an H100 or H200) would cover the rows, into enough chunks for about 512 programs.
int64_t default_split(const ir::Program &p, const ir::Kernel &k, bool columns, const KernelExtent &e) {
  int64_t rows = e.rows, rn = e.rn;
  if (!splittable(p, k)) return 1;
  if (!columns) return rows > 64 || rn < 65536 ? 1 : std::clamp<int64_t>(next_pow2(ceil_div(rn, 32768)), 2, 1024);
  int64_t programs = ceil_div(rows, default_rows_per_program(rows, rn, true));
  if (programs >= 256 || rn < 1024) return 1;
  return std::clamp<int64_t>(next_pow2(ceil_div(512, programs)), 2, std::min<int64_t>(512, next_pow2(ceil_div(rn, 128))));
}

// Registers per thread that a block's accumulators and the blocks of values its loads keep
// in flight may take. Past this a kernel spills or serializes its loads: GPT-2's backward
// fuses four layer norms' weight and bias gradients into one kernel of twelve accumulators,
// which took 0.21 ms to read 90 MB in blocks of 64 x 64 (0.06 to 0.07 ms in blocks that fit);
// ResNet-50's batch-norm backward sums, three accumulators and six loads, ran at two thirds
// of the H100's bandwidth in 64 x 64 (its Triton kernels 9.04 ms a step, 8.56 ms fitted).
constexpr int64_t kBlockRegisters = 160;

// The blocks of values `k`'s pass holds: an accumulator per reduction (an argmax's two), and
// one per distinct load streaming over the reduced elements. A Welford's mean, m2 and weight
// count as one: counted as three, ResNet-50's forward batch-norm statistics (two Welfords)
// ran in 64 x 32 blocks at 0.18 ms where 64 x 64 took 0.13.
int64_t blocks_held(const ir::Program &p, const ir::Kernel &k) {
  int64_t n = 0;
  int first_reduced = int(k.ranges.size());
  std::set<std::pair<ir::BufferId, size_t>> loads;
  for (const ir::Step &s : k.steps)
    for (int m : s.nodes) {
      const ir::Node &node = p.nodes[size_t(m)];
      for (const ir::Instr &i : node.body.instrs) {
        if (i.op != ir::Op::Load) continue;
        std::vector<ir::VarId> vars = ir::vars_of(i.index);
        if (std::any_of(vars.begin(), vars.end(), [&](ir::VarId v) { return v.id >= first_reduced; }))
          loads.insert({i.buffer, i.index.hash()});
      }
      if (node.kind != ir::NodeKind::Reduction) continue;
      ir::ReduceOp op = node.reduce_op;
      n += op == ir::ReduceOp::ArgMax || op == ir::ReduceOp::ArgMin ? 2 : 1;
    }
  return n + int64_t(loads.size());
}

// Halves a block of rows side by side (block1 reduced elements of block0 rows), reduced
// elements first and down to 8 each, until `blocks` blocks of it (accumulators and loads)
// fit kBlockRegisters per thread of `warps(block0 * block1)` warps.
void fit_blocks(int64_t &block0, int64_t &block1, int64_t blocks, const std::function<int(int64_t)> &warps) {
  auto fits = [&] { return blocks * block0 * block1 <= kBlockRegisters * 32 * warps(block0 * block1); };
  while (!fits() && block1 > 8) block1 /= 2;
  while (!fits() && block0 > 8) block0 /= 2;
}

void plan_pointwise(TritonKernelPlan &plan, const ir::Program &p, const ir::Kernel &k, const TritonConfig &cfg,
                    const KernelExtent &e) {
  int64_t numel = e.numel, rows = e.rows;
  int64_t tile_rows = pick(cfg.block0, std::min<int64_t>(32, next_pow2(rows)));
  // When a load walks the last two dims the other way round from the store (x + y.t()),
  // the kernel runs in YBLOCK x XBLOCK tiles, so that loads and stores both coalesce.
  if (loads_transposed_in_last_two_dims(p, k) && ceil_div(rows, tile_rows) <= 65535) {
    plan.strategy = TritonStrategy::Tiles;
    plan.block0 = tile_rows;
    plan.block1 = pick(cfg.block1, std::min<int64_t>(64, next_pow2(e.last)));
  } else {
    plan.strategy = TritonStrategy::Blocks;
    plan.block0 = pick(cfg.block0, std::min<int64_t>(1024, next_pow2(std::max<int64_t>(numel, 1))));
    plan.block1 = 0;
  }
  int64_t per_program = plan.block0 * std::max<int64_t>(plan.block1, 1);
  plan.warps = pick(cfg.num_warps, int(std::clamp<int64_t>(per_program / 256, 1, 4)));
}

void plan_reduction(TritonKernelPlan &plan, const ir::Program &p, const ir::Kernel &k, const TritonOptions &o,
                    const TritonConfig &cfg, const KernelExtent &e) {
  int64_t rows = e.rows, rn = e.rn;
  // When loads are contiguous along the last kept dim and not along the reduced one (a sum
  // over dim 0), a block holds many rows side by side, so that loads coalesce.
  bool columns = rows_contiguous_across_reduction(p, k);
  int64_t split = cfg.split > 1 && splittable(p, k) ? cfg.split : cfg.split == 1 ? 1 : default_split(p, k, columns, e);
  int64_t held = blocks_held(p, k);
  if (split > 1) {
    plan.strategy = columns ? TritonStrategy::SplitColumns : TritonStrategy::SplitRows;
    plan.split = split;
    plan.block0 = columns ? pick(cfg.block0, default_rows_per_program(rows, rn, true)) : 1;
    plan.block1 = pick(cfg.block1, int64_t(columns ? 64 : 2048));
    plan.warps = pick(cfg.num_warps, columns ? 4 : 8);
    if (columns && cfg.block0 <= 0 && cfg.block1 <= 0)
      fit_blocks(plan.block0, plan.block1, held, [&](int64_t) { return plan.warps; });
    return;
  }
  plan.split = 1;
  int64_t rpow = next_pow2(std::max<int64_t>(rn, 1));
  auto warps_for = [&](int64_t tile) { return pick(cfg.num_warps, int(std::clamp<int64_t>(tile / 256, 1, 8))); };
  if (columns) {
    plan.strategy = TritonStrategy::Columns;
    plan.block0 = pick(cfg.block0, default_rows_per_program(rows, rn, true));
    plan.block1 = std::min(pick(cfg.block1, int64_t(64)), rpow);
    if (cfg.block0 <= 0 && cfg.block1 <= 0) fit_blocks(plan.block0, plan.block1, held, warps_for);
  } else if (rpow <= o.max_persistent_rblock) {
    plan.strategy = TritonStrategy::Persistent;
    plan.block1 = rpow;
    plan.block0 = pick(cfg.block0, default_rows_per_program(rows, rn, false));
  } else {
    plan.strategy = TritonStrategy::Looped;
    plan.block0 = 1;
    plan.block1 = pick(cfg.block1, int64_t(2048));
  }
  plan.warps = warps_for(plan.block0 * plan.block1);
}

}  // namespace

int64_t default_rows_per_program(int64_t rows, int64_t rn, bool side_by_side) {
  int64_t most = std::min<int64_t>(64, next_pow2(std::max<int64_t>(rows, 1)));
  if (side_by_side) return most;
  return std::clamp<int64_t>(1024 / next_pow2(std::max<int64_t>(rn, 1)), 1, most);
}

const char *strategy_name(TritonStrategy s) {
  switch (s) {
    case TritonStrategy::Blocks: return "blocks";
    case TritonStrategy::Tiles: return "tiles";
    case TritonStrategy::Persistent: return "persistent";
    case TritonStrategy::Looped: return "looped";
    case TritonStrategy::Columns: return "columns";
    case TritonStrategy::SplitRows: return "split_rows";
    case TritonStrategy::SplitColumns: return "split_columns";
    case TritonStrategy::Scan: return "scan";
    case TritonStrategy::Scatter: return "scatter";
  }
  return "?";
}

TritonConfig TritonKernelPlan::config() const {
  switch (strategy) {
    case TritonStrategy::Blocks:
    case TritonStrategy::Tiles:
    case TritonStrategy::Persistent:
    case TritonStrategy::Looped:
    case TritonStrategy::Columns:
    case TritonStrategy::SplitRows:
    case TritonStrategy::SplitColumns: return {block0, block1, warps, stages, split};
    case TritonStrategy::Scan:
    case TritonStrategy::Scatter: return {};  // fixed layouts: nothing to choose
  }
  return {};
}

KernelExtent extent_at_hints(const ir::Kernel &k) {
  KernelExtent e;
  e.rows = checked_numel(k.ranges).hint();
  e.rn = k.kind == ir::KernelKind::Reduction ? checked_numel(k.reduction_ranges).hint() : 1;
  e.last = k.ranges.empty() ? 1 : std::max<int64_t>(k.ranges.back().hint(), 1);
  e.numel = e.rows;
  if (k.kind == ir::KernelKind::Pointwise) e.rows = k.ranges.size() >= 2 ? e.numel / e.last : 1;
  return e;
}

TritonKernelPlan plan_triton_kernel(const ir::Program &p, const ir::Kernel &k, const TritonOptions &o,
                                    const std::optional<KernelExtent> &at) {
  KernelExtent e = at ? *at : extent_at_hints(k);
  TritonConfig cfg;
  if (auto it = o.configs.find(k.name); it != o.configs.end()) cfg = it->second;
  TritonKernelPlan plan;
  plan.kernel = k.name;
  plan.stages = pick(cfg.num_stages, 1);
  switch (k.kind) {
    case ir::KernelKind::Pointwise: plan_pointwise(plan, p, k, cfg, e); break;
    case ir::KernelKind::Reduction: plan_reduction(plan, p, k, o, cfg, e); break;
    case ir::KernelKind::Scan: plan.strategy = TritonStrategy::Scan; break;
    case ir::KernelKind::Scatter: plan.strategy = TritonStrategy::Scatter; break;
    case ir::KernelKind::Extern: COIL_ASSERT(false, "extern calls are host steps, not Triton kernels");
  }
  return plan;
}

namespace {

// The cuts of plan_variants' size buckets: the defaults change between them (RBLOCK and
// XBLOCK grow, a row past 4,096 is looped, one past 65,536 may be split), and a plan made at
// a bucket's top wastes at most 16x the lanes of a row at its bottom.
constexpr int64_t kBucketCuts[] = {16, 256, 4096, 65536, int64_t(1) << 20};
constexpr int64_t kLastBucketAt = int64_t(1) << 24;

// The kernel's extent with the size a bucket follows at `v`: a reduction's row (`row`) or
// its rows, or a pointwise kernel's elements (its rows in proportion).
KernelExtent extent_with(const ir::Kernel &k, bool row, int64_t v) {
  KernelExtent e = extent_at_hints(k);
  if (k.kind == ir::KernelKind::Pointwise) {
    e.numel = v;
    e.rows = k.ranges.size() >= 2 ? std::max<int64_t>(v / e.last, 1) : 1;
  } else if (row) {
    e.rn = v;
  } else {
    e.rows = e.numel = v;
  }
  return e;
}

}  // namespace

std::vector<TritonVariant> plan_variants(const ir::Program &p, const ir::Kernel &k, const TritonOptions &o) {
  TritonKernelPlan at_hints = plan_triton_kernel(p, k, o);
  SymInt rn = checked_numel(k.reduction_ranges), rows = checked_numel(k.ranges);
  bool row = k.kind == ir::KernelKind::Reduction && rn.symbolic();
  SymInt size = row ? rn : rows;
  bool bucketed = (k.kind == ir::KernelKind::Pointwise || k.kind == ir::KernelKind::Reduction) && size.symbolic();
  if (!bucketed) return {{at_hints, {}, extent_at_hints(k), SymInt(), std::nullopt, std::nullopt}};
  ir::Interval range = size.guards()->bounds(size.expr());
  // The tops of the buckets within the size's range: the hint (whose bucket keeps the plan
  // of the sizes compiled for) and the cuts; the last bucket is open.
  std::set<int64_t> tops = {size.hint()};
  for (int64_t c : kBucketCuts)
    if (c >= range.lo && c < range.hi) tops.insert(c);
  struct Bucket {
    int64_t lo, hi;  // (lo, hi]; kNone: no end on that side
    KernelExtent extent;
    TritonKernelPlan plan;
    bool hint;  // it holds the sizes compiled for
  };
  constexpr int64_t kNone = -1;
  std::vector<Bucket> buckets;
  for (int64_t top : tops) {
    KernelExtent e = extent_with(k, row, top);
    bool hint = top == size.hint();
    buckets.push_back({buckets.empty() ? kNone : buckets.back().hi, top, e, hint ? at_hints : plan_triton_kernel(p, k, o, e), hint});
  }
  if (range.hi > *tops.rbegin()) {
    KernelExtent e = extent_with(k, row, std::max(kLastBucketAt, *tops.rbegin() * 16));
    buckets.push_back({*tops.rbegin(), kNone, e, plan_triton_kernel(p, k, o, e), false});
  }
  // Neighbours of one plan merge (the hint's extent kept, else the top's).
  std::vector<Bucket> merged;
  for (Bucket &b : buckets) {
    Bucket *last = merged.empty() ? nullptr : &merged.back();
    if (!last || last->plan.strategy != b.plan.strategy || !(last->plan.config() == b.plan.config())) {
      merged.push_back(b);
      continue;
    }
    last->hi = b.hi;
    if (!last->hint) last->extent = b.extent;
    last->hint = last->hint || b.hint;
  }
  std::vector<TritonVariant> out;
  for (const Bucket &b : merged) {
    TritonVariant v{b.plan, {}, b.extent, size, std::nullopt, std::nullopt};
    if (merged.size() > 1) {
      std::string why = str_cat("the size bucket of ", k.name, " by ", row ? "its row" : "its elements", " ", ir::str(size.expr()));
      if (b.lo != kNone) v.lo = b.lo;
      if (b.hi != kNone) v.hi = b.hi;
      if (v.lo) v.only_if.push_back({ir::Expr(*v.lo) - size.expr(), SizeGuard::Op::Lt, why});
      if (v.hi) v.only_if.push_back({size.expr() - ir::Expr(*v.hi), SizeGuard::Op::Le, why});
      v.plan.variant = b.hi == kNone ? str_cat("above", b.lo) : str_cat("upto", b.hi);
      // A config set for this variant alone (`kernel3_upto64`) plans it.
      if (auto it = o.configs.find(k.name + "_" + v.plan.variant); it != o.configs.end()) {
        TritonOptions own = o;
        own.configs[k.name] = it->second;
        std::string name = v.plan.variant;
        v.plan = plan_triton_kernel(p, k, own, b.extent);
        v.plan.variant = name;
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<TritonVariant> aligned_variants(const ir::Program &p, const ir::Kernel &k, std::vector<TritonVariant> variants) {
  std::set<std::string> symbols = ir::symbols_of(p, k);
  if (symbols.empty()) return variants;
  ir::Expr remainders(0);
  std::string names;
  for (const std::string &s : symbols) {
    remainders = remainders + ir::mod(ir::Expr::symbol(s), 16);
    names += (names.empty() ? "" : ", ") + s;
  }
  std::string why = str_cat("the sizes ", names, " of ", k.name, " as multiples of 16");
  std::vector<TritonVariant> out;
  for (TritonVariant &v : variants) {
    if (v.extent.elements() < kManyElements) {
      out.push_back(std::move(v));
      continue;
    }
    TritonVariant twin = v;
    twin.plan.sizes_by_16 = true;
    twin.plan.variant = v.plan.variant.empty() ? "by16" : v.plan.variant + "_by16";
    twin.only_if.push_back({remainders, SizeGuard::Op::Eq, why});
    v.only_if.push_back({remainders, SizeGuard::Op::Ne, why});
    out.push_back(std::move(twin));
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<TritonKernelPlan> tuning_plans(const ir::Program &p, const ir::Kernel &k, const TritonKernelPlan &plan,
                                           const TritonOptions &o) {
  std::vector<TritonConfig> out = {plan.config()};
  int64_t rows = checked_numel(k.ranges).hint(), rn = checked_numel(k.reduction_ranges).hint();
  auto add = [&](TritonConfig c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  const TritonConfig d = plan.config();
  int64_t rpow = next_pow2(std::max<int64_t>(rn, 1));
  bool worth_it = extent_at_hints(k).elements() >= kManyElements;
  switch (worth_it ? plan.strategy : TritonStrategy::Scan) {
    case TritonStrategy::Blocks:
      for (auto [b, w] : {std::pair<int64_t, int>{512, 4}, {1024, 4}, {1024, 8}, {2048, 8}, {4096, 8}}) add({b, 0, w, 1, 0});
      break;
    case TritonStrategy::Tiles:
      for (auto [b0, b1, w] : {std::tuple<int64_t, int64_t, int>{32, 64, 4}, {64, 64, 4}, {64, 64, 8}, {32, 128, 4}, {16, 128, 4}, {64, 128, 8}})
        add({b0, b1, w, 1, 0});
      break;
    case TritonStrategy::Persistent:
      // Rows per program and warps, with 2 to 64 elements per thread and at most 10 configs.
      for (int64_t b0 : {1, 2, 4, 8, 16, 32})
        for (int w : {4, 8, 16})
          if (out.size() < 10 && b0 <= next_pow2(rows) && b0 * rpow <= 16384 && b0 * rpow >= 64 * w && b0 * rpow / (32 * w) <= 64)
            add({b0, rpow, w, 1, 1});
      break;
    case TritonStrategy::Looped:
      for (auto [b1, w, st] : {std::tuple<int64_t, int, int>{1024, 4, 1}, {2048, 4, 1}, {4096, 8, 1}, {4096, 16, 1}, {2048, 8, 2}})
        add({1, b1, w, st, 1});
      break;
    case TritonStrategy::Columns:
    case TritonStrategy::SplitColumns: {
      int64_t sp = d.split;
      for (auto [b0, b1, w] : {std::tuple<int64_t, int64_t, int>{64, 64, 4}, {32, 64, 4}, {128, 32, 8}, {64, 32, 4}})
        add({std::min(b0, next_pow2(rows)), std::min(b1, rpow), w, 1, sp});
      if (splittable(p, k) && rn >= 1024)
        for (int64_t f : {sp * 2, sp / 2, sp * 4})
          if (f >= 1 && f <= 1024) add({d.block0, d.block1, d.num_warps, 1, f});
      break;
    }
    case TritonStrategy::SplitRows:
      for (auto [b1, w, f] : {std::tuple<int64_t, int, int64_t>{4096, 8, d.split}, {2048, 4, d.split}, {2048, 8, d.split / 2},
                               {2048, 8, d.split * 2}, {1024, 4, d.split * 2}})
        if (f >= 2 && f <= 1024) add({1, b1, w, 1, f});
      break;
    case TritonStrategy::Scan:
    case TritonStrategy::Scatter: break;
  }
  // Each config is planned again: the strategy it leads to is the kernel's own decision.
  std::vector<TritonKernelPlan> plans = {plan};
  for (size_t i = 1; i < out.size(); ++i) {
    TritonOptions with = o;
    with.configs[k.name] = out[i];
    plans.push_back(plan_triton_kernel(p, k, with));
  }
  return plans;
}

std::string plans_str(const std::vector<TritonVariant> &plans) {
  std::ostringstream out;
  out << "# The Triton dialect's plan of each kernel (codegen/triton/triton_kernel_plan.h)\n";
  for (const TritonVariant &v : plans) {
    out << v.plan.kernel << (v.plan.variant.empty() ? "" : "_" + v.plan.variant) << "  " << strategy_name(v.plan.strategy)
        << "  " << v.plan.config().str();
    for (size_t i = 0; i < v.only_if.size(); ++i) out << (i ? " and " : "  where ") << v.only_if[i].str();
    out << "\n";
  }
  return out.str();
}

}  // namespace coil::codegen
