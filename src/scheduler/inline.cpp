// inline_pointwise: a pointwise node whose value is cheap to recompute is evaluated
// inside each consumer at the point the consumer reads, so its buffer is never written.
//
//   buf1[x0] = relu(x[x0])            buf2[x0] = relu(x[x0]) * 2
//   buf2[x0] = buf1[x0] * 2     ->
//
// The consumer's load index is solved for the producer's variables (the producer's
// buffer is dense, so the solution is exact). A gathered load (an index read from data:
// gather, cross-entropy's pick of each row's target) recomputes the producer at the
// elements it gathers only, the producer's loads gathered by the same values. A masked
// load (padding, cat) masks every load of the producer too, and the bounds its mask states
// let the solution follow the window's position dim by dim instead of dividing a flat
// offset. Decision 14: the rounding of a bf16/f16 result at its store
// disappears with the store, unless emulate_precision_casts asks for eager's roundings
// or the cast is the op itself (`_to_copy`). A bf16 value whose f32 copy would be stored
// keeps its own buffer instead, and the copy is recomputed in its readers (stays_narrow).
#include <algorithm>
#include <set>

#include "graph/strides.h"
#include "scheduler/reindex.h"
#include "scheduler/scheduler.h"
#include "support/error.h"

namespace coil::sched {
namespace {

using ir::BodyBuilder;
using ir::BufferId;
using ir::Expr;
using ir::Instr;
using ir::Node;
using ir::NodeKind;
using ir::Op;

bool is_low_precision(DType t) { return t == DType::BF16 || t == DType::F16; }


bool has_indirect_load(const ir::Body &body) {
  return std::any_of(body.instrs.begin(), body.instrs.end(), [](const Instr &i) { return !i.indirect.empty(); });
}

bool has_index(const ir::Body &body) {
  return std::any_of(body.instrs.begin(), body.instrs.end(), [](const Instr &i) { return i.op == Op::Index; });
}

// Whether `body` computes with integers and booleans only: then any evaluation of it, scalar
// or vector, in any dialect, gives the same bits (a compared buffer's values may be
// recomputed; randperm's random keys are).
bool integral(const ir::Body &body) {
  return std::all_of(body.instrs.begin(), body.instrs.end(), [](const Instr &i) { return !is_floating(i.dtype); });
}

// Whether every use of value `v` in `body` widens it to f32: then a low-precision
// rounding before it can go with the store (decision 14).
bool only_widened(const ir::Body &body, int v) {
  for (const Instr &i : body.instrs)
    for (int k = 0; k < 3; ++k) {
      if (i.args[size_t(k)] != v || (i.op == Op::Load && k == 0)) continue;
      if (i.op != Op::Cast || i.dtype != DType::F32) return false;
    }
  for (int r : body.results)
    if (r == v) return false;
  return true;
}

// A gathered point's outermost variable without its remainder: v = t // stride and not
// (t // stride) % size, so that a gathered offset outside the buffer (a bad index) stays
// outside it in the producer's own loads, whose bounds checks then report it, instead of
// wrapping around to an element that exists.
void unwrap_outermost(VarMap &map, const Expr &store) {
  int outer = -1;
  int64_t widest = 0;
  for (const ir::Term &t : store.terms())
    if (t.factors.size() == 1 && t.factors[0].kind() == ir::AtomKind::Var && std::abs(t.coeff) > widest) {
      widest = std::abs(t.coeff);
      outer = t.factors[0].var().id;
    }
  if (outer < 0 || size_t(outer) >= map.size()) return;
  const Expr &v = map[size_t(outer)];
  if (v.constant() == 0 && v.terms().size() == 1 && v.terms()[0].coeff == 1 && v.terms()[0].factors.size() == 1 &&
      v.terms()[0].factors[0].kind() == ir::AtomKind::Mod)
    map[size_t(outer)] = v.terms()[0].factors[0].arg();
}

// The point of `producer` that `load` (of its output, in a consumer over `r`, the load's
// mask a value of `body`) reads, in the consumer's variables. Under a mask (padding, cat),
// the point comes from the mask's bounds when they place the load in every dim, else from
// the remainders of the flat offset. Nothing where that would divide by a symbolic size.
std::optional<VarMap> producer_point(const ir::Program &p, const Node &producer, const ir::Body &body, const Instr &load,
                                     const ir::Ranges &r) {
  Expr store = ir::store_index(producer, p.buffer(producer.outputs[0]));
  int mask = load.args[0];
  bool gathered = !load.indirect.empty();
  std::optional<VarMap> map;
  if (mask >= 0 && !gathered) map = solve_under_mask(store, producer.ranges, load.index, r, mask_facts(body, mask));
  if (!map) map = solve_injective(store, producer.ranges, load.index, r);
  if (map && gathered) unwrap_outermost(*map, store);
  return map;
}

struct Inliner {
  const ir::Program &p;
  const Node &producer;
  const ScheduleOptions &o;

  // The producer's value at the consumer's load `load` (value `v` of `consumer`).
  std::optional<int> operator()(BodyBuilder &b, const Node &consumer, int v, const Instr &load) const {
    BufferId out = producer.outputs[0];
    if (load.buffer != out) return std::nullopt;
    ir::Ranges r = ranges_of(consumer.ranges, consumer.reduction_ranges);
    int mask = load.args[0];
    bool gathered = !load.indirect.empty();
    std::optional<VarMap> map = producer_point(p, producer, b.body(), load, r);
    COIL_ASSERT(map, "the dense buffer ", p.buffer(out).name, " has a store index that cannot be solved");
    auto reindex = [&](const Expr &e) {
      return ir::simplify(ir::substitute(e, [&](ir::VarId x) -> std::optional<Expr> {
                            if (x.id >= 0 && x.id < int(map->size())) return (*map)[size_t(x.id)];
                            return std::nullopt;
                          }),
                          r);
    };
    // The producer's loads read only under the mask, unless their index stays inside
    // the buffer anyway (a per-channel weight): those need no mask and stay hoistable.
    auto mask_loads = [&](int, const Instr &inner) -> std::optional<int> {
      if (gathered) {  // at the gathered point: indexed by the consumer's gathered values
        std::vector<ir::VarId> vars = ir::vars_of(inner.index);
        if (std::none_of(vars.begin(), vars.end(), [](ir::VarId v) { return v.id >= ir::kIndirectBase; }))
          return std::nullopt;
        return b.indirect_load(inner.buffer, inner.index, inner.dtype, load.indirect);
      }
      if (mask < 0) return std::nullopt;
      ir::Interval at = ir::bounds(inner.index, r);
      if (inner.indirect.empty() && at.lo >= 0 && at.hi < storage_extent(p.buffer(inner.buffer).type))
        return std::nullopt;
      int m = inner.args[0] < 0 ? mask : b.binary(Op::LogicalAnd, mask, inner.args[0], DType::Bool);
      return b.masked_load(inner.buffer, inner.index, inner.dtype, m, 0);
    };
    // A lane the mask leaves out never divides: its masked loads read 0, and an integer
    // division by that would report a division by zero that eager never does.
    auto guard_divisor = [&](int d) {
      DType t = b.dtype(d);
      return b.where(mask, d, b.constant(1, t), t);
    };
    std::vector<int> values = ir::copy_body(producer.body, b, reindex, mask_loads,
                                            mask >= 0 ? ir::DivisorFn(guard_divisor) : ir::DivisorFn());
    int result = values[size_t(producer.body.results[0])];
    const Instr &last = b.body().at(result);
    bool drop_rounding = !o.emulate_precision_casts && !producer.semantic_cast && last.op == Op::Cast &&
                         is_low_precision(last.dtype) && b.dtype(last.args[0]) == DType::F32 &&
                         only_widened(consumer.body, v);
    if (drop_rounding) result = last.args[0];
    if (mask >= 0) result = b.where(mask, result, b.constant(load.value, b.dtype(result)), b.dtype(result));
    return result;
  }
};

// The most instructions of a producer recomputed in its consumers. A chain of pointwise
// ops inlined one into the next grows its last body with every link: past this size the
// value is stored, and fusion keeps the chain in one kernel's registers instead, so a
// chain of n ops costs O(n) to schedule and no kernel body grows without bound.
constexpr size_t kMaxInlinedBody = 256;

// Whether an op costs more than a few instructions on either dialect: a square root, a
// division, a transcendental (each a libdevice or libm call).
bool costly(Op op) {
  switch (op) {
    case Op::Load: case Op::Constant: case Op::Index: case Op::Cast: case Op::Neg: case Op::Abs:
    case Op::Floor: case Op::Ceil: case Op::Round: case Op::Trunc: case Op::Sign: case Op::LogicalNot:
    case Op::BitwiseNot: case Op::IsNan: case Op::IsInf: case Op::Add: case Op::Sub: case Op::Mul:
    case Op::Maximum: case Op::Minimum: case Op::Copysign: case Op::Fmax: case Op::Fmin: case Op::Eq:
    case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::LogicalAnd: case Op::LogicalOr:
    case Op::LogicalXor: case Op::BitwiseAnd: case Op::BitwiseOr: case Op::BitwiseXor: case Op::Where:
      return false;
    default: return true;
  }
}

// A producer this many times smaller than a consumer reading it (a per-channel value read
// at every element, batch norm's 1/sqrt(var + eps)) keeps its buffer when it computes a
// costly op: recomputed, the op would run once per element of the consumer.
constexpr int64_t kBroadcastFactor = 16;

// The distinct loads of `n` that stream memory: of buffers not kBroadcastFactor times
// smaller than `n` (a per-channel weight read at every element stays in cache).
int count_streaming_loads(const ir::Program &p, const Node &n) {
  int64_t numel = checked_numel(n.ranges).hint();  // a heuristic: at the sizes compiled for
  std::set<std::pair<BufferId, size_t>> loads;
  for (const Instr &i : n.body.instrs)
    if (i.op == Op::Load && p.buffer(i.buffer).type.numel().hint() * kBroadcastFactor > numel)
      loads.insert({i.buffer, i.index.hash()});
  return int(loads.size());
}

// Why `n` must keep its buffer, or nothing when it may be recomputed in its consumers.
bool may_inline(const ir::Program &p, const Node &n, const std::vector<int> &consumers, const ScheduleOptions &o) {
  if (n.kind != NodeKind::Pointwise || n.outputs.size() != 1 || !n.output_index.empty()) return false;
  BufferId out = n.outputs[0];
  if (std::find(p.outputs.begin(), p.outputs.end(), out) != p.outputs.end()) return false;
  if (p.buffer(out).compared && !integral(n.body)) return false;
  const TensorType &t = p.buffer(out).type;
  if (!is_non_overlapping_and_dense(t.sizes, t.strides) || consumers.empty()) return false;
  bool has_costly = std::any_of(n.body.instrs.begin(), n.body.instrs.end(), [](const Instr &i) { return costly(i.op); });
  int uses = 0;
  for (int c : consumers) {
    const Node &cn = p.nodes[size_t(c)];
    if (cn.kind == NodeKind::Extern) return false;
    if (has_costly && (checked_numel(n.ranges) * kBroadcastFactor).hint() <=
                          (checked_numel(cn.ranges) * checked_numel(cn.reduction_ranges)).hint())
      return false;
    for (const ir::View &v : cn.operands)
      if (v.buffer == out) return false;
    for (const Instr &i : cn.body.instrs) {
      if (i.op != Op::Load || i.buffer != out) continue;
      // Gathered: recomputed at the gathered elements, unless it gathers itself, computes
      // with its index (which would name the gathered values outside a load) or is masked.
      if (!i.indirect.empty() && (has_indirect_load(n.body) || i.args[0] >= 0 || has_index(n.body))) return false;
      if (i.args[0] >= 0 && has_indirect_load(n.body)) return false;  // a gather under a mask
      // Read at a point of other symbolic sizes (a flat [s0*s1] of a [s0, s1] producer).
      if (symbolic(n.ranges) && !producer_point(p, n, cn.body, i, ranges_of(cn.ranges, cn.reduction_ranges))) return false;
      ++uses;
    }
  }
  if (n.body.instrs.size() > kMaxInlinedBody) return false;
  if (uses == 1) return true;
  return int64_t(count_streaming_loads(p, n)) * (uses - 1) <= o.max_inline_reads && n.body.instrs.size() <= 64;
}

// The body of `consumer` with `producer` recomputed at each of its loads of it.
ir::Body inlined_into(const ir::Program &p, const Node &producer, const Node &consumer, const ScheduleOptions &o) {
  BodyBuilder b;
  Inliner inliner{p, producer, o};
  std::vector<int> values = ir::copy_body(consumer.body, b, [](const Expr &e) { return e; },
                                          [&](int v, const Instr &load) { return inliner(b, consumer, v, load); });
  for (int r : consumer.body.results) b.add_result(values[size_t(r)]);
  return ir::prune_dead_values(b.finish());
}

// Whether `c` only widens the value of buffer `narrow` to f32 (`_to_copy` of a bf16 value).
bool widens(const ir::Program &p, const Node &c, BufferId narrow) {
  if (c.kind != NodeKind::Pointwise || !c.semantic_cast || c.outputs.size() != 1 || c.body.results.size() != 1) return false;
  if (!is_low_precision(p.buffer(narrow).type.dtype) || p.buffer(c.outputs[0]).type.dtype != DType::F32) return false;
  const Instr &cast = c.body.at(c.body.results[0]);
  if (cast.op != Op::Cast) return false;
  const Instr &load = c.body.at(cast.args[0]);
  return load.op == Op::Load && load.buffer == narrow && load.indirect.empty() && load.args[0] < 0 &&
         std::count_if(c.body.instrs.begin(), c.body.instrs.end(), [](const Instr &i) { return i.op == Op::Load; }) == 1;
}

// The reader of pointwise node `node` for which it keeps its low-precision buffer although it
// may be inlined, if any: a reader that widens it to f32 and that, with `node` inside, would
// keep its f32 buffer, where alone it is recomputed in its readers (`node`'s other readers
// then read its buffer too). The narrow value moves half the bytes (a batch norm's backward
// under autocast stores each bf16 gradient, not its f32 copy), and the readers see what
// eager's f32 copy holds: the value rounded to bf16 once.
std::optional<int> stays_narrow(const ir::Program &p, size_t node, const std::vector<std::vector<int>> &readers,
                                const ScheduleOptions &o) {
  const Node &w = p.nodes[node];
  const std::vector<int> &consumers = readers[node];
  auto cast = std::find_if(consumers.begin(), consumers.end(),
                           [&](int c) { return widens(p, p.nodes[size_t(c)], w.outputs[0]); });
  if (cast == consumers.end()) return std::nullopt;
  const Node &c = p.nodes[size_t(*cast)];
  const std::vector<int> &cast_readers = readers[size_t(*cast)];
  if (!may_inline(p, c, cast_readers, o)) return std::nullopt;
  Node with_w = c;
  with_w.body = inlined_into(p, w, c, o);
  if (may_inline(p, with_w, cast_readers, o)) return std::nullopt;
  return *cast;
}

// The nodes after each node that read its output, in order. Inlining a producer into a
// consumer adds only reads of buffers made before the producer, so the readers of a node
// not yet visited stay what they were: one pass over the reads at the start suffices.
std::vector<std::vector<int>> later_readers(const ir::Program &p) {
  std::vector<std::vector<int>> readers(p.nodes.size());
  for (size_t c = 0; c < p.nodes.size(); ++c) {
    std::vector<BufferId> reads = p.nodes[c].reads();
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (BufferId b : reads) {
      int producer = p.buffer(b).producer;
      if (producer >= 0 && size_t(producer) < c) readers[size_t(producer)].push_back(int(c));
    }
  }
  return readers;
}

}  // namespace

std::vector<std::string> inline_pointwise(ir::Program &p, const ScheduleOptions &o) {
  std::vector<std::string> log;
  if (!o.inline_pointwise) return log;
  std::vector<bool> gone(p.nodes.size(), false);
  std::vector<std::vector<int>> readers = later_readers(p);
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const std::vector<int> &consumers = readers[i];
    if (p.nodes[i].outputs.empty() || !may_inline(p, p.nodes[i], consumers, o)) continue;
    if (std::optional<int> cast = stays_narrow(p, i, readers, o)) {
      const ir::Buffer &narrow = p.buffer(p.nodes[i].outputs[0]);
      log.push_back(narrow.name + " (" + p.nodes[i].origin + ") keeps its " + std::string(short_name(narrow.type.dtype)) +
                    " buffer: its f32 copy " +
                    p.nodes[size_t(*cast)].origin + " is recomputed in its readers instead");
      continue;
    }
    std::string into;
    for (int c : consumers) {
      Node &cn = p.nodes[size_t(c)];
      cn.body = inlined_into(p, p.nodes[i], cn, o);
      into += (into.empty() ? "" : ", ") + cn.origin;
    }
    gone[i] = true;
    log.push_back(p.buffer(p.nodes[i].outputs[0]).name + " (" + p.nodes[i].origin + ") is recomputed in " + into);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (gone[i]) {
      for (BufferId b : p.nodes[i].outputs) p.buffers[size_t(b)].producer = -1;
      continue;
    }
    for (BufferId b : p.nodes[i].outputs) p.buffers[size_t(b)].producer = int(kept.size());
    kept.push_back(std::move(p.nodes[i]));
  }
  p.nodes = std::move(kept);
  return log;
}

}  // namespace coil::sched
