// The scheduler's driver: dead nodes out, cheap producers inlined, loops in memory order, fusion, kernel
// order, what each kernel stores, and the memory plan. Reads like the pipeline it runs.
#include "scheduler/scheduler.h"

#include "ir/specialize.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <sstream>

#include "scheduler/epilogue.h"
#include "scheduler/fusion.h"
#include "scheduler/reindex.h"
#include "support/error.h"
#include "support/options.h"
#include "support/vectors.h"

namespace coil::sched {
namespace {

using ir::BufferId;
using ir::Kernel;
using ir::Node;

// Whether a node writes no element at all (an empty tensor needs no kernel).
bool writes_nothing(const ir::Program &p, const Node &n) {
  return std::all_of(n.outputs.begin(), n.outputs.end(),
                     [&](BufferId b) { return b < 0 || checked_numel(p.buffer(b).type.sizes) == 0; });
}

// Buffers with no elements that a node takes as an operand (an extern call's, a
// scatter's copy source): each is passed as a pointer, so their writers stay (their
// loops run zero times).
std::set<BufferId> empty_extern_operands(const ir::Program &p) {
  std::set<BufferId> out;
  for (const Node &n : p.nodes)
    for (const ir::View &v : n.operands)  // an absent operand (no bias) is buffer -1
      if (v.buffer >= 0 && checked_numel(p.buffer(v.buffer).type.sizes) == 0) out.insert(v.buffer);
  return out;
}

// A load from a computed buffer with no elements never runs: the loops around it are
// empty (a sum over a dim of 0) or its mask is never true there (cat's empty part).
// It becomes its fill value, so that no kernel reads a buffer that has no writer and so
// no storage.
void drop_loads_of_empty(const ir::Program &p, Node &n) {
  auto empty = [&](BufferId b) {
    return p.buffer(b).kind == ir::Buffer::Kind::Computed && checked_numel(p.buffer(b).type.sizes) == 0;
  };
  std::vector<BufferId> reads = n.reads();
  if (n.kind == ir::NodeKind::Extern || std::none_of(reads.begin(), reads.end(), empty)) return;
  ir::BodyBuilder b;
  auto fill = [&](int, const ir::Instr &load) -> std::optional<int> {
    // A gathered load stays: any index into an empty buffer is out of range, which it reports.
    if (!empty(load.buffer) || !load.indirect.empty()) return std::nullopt;
    return b.constant(load.args[0] >= 0 ? load.value : 0, load.dtype);
  };
  std::vector<int> values = ir::copy_body(n.body, b, [](const ir::Expr &e) { return e; }, fill);
  for (int r : n.body.results) b.add_result(values[size_t(r)]);
  n.body = ir::prune_dead_values(b.finish());
}

// Removes nodes none of whose outputs is read or returned, and nodes that write no
// element; one line per node removed.
std::vector<std::string> eliminate_dead_nodes(ir::Program &p) {
  std::vector<std::string> log;
  std::vector<bool> live(p.nodes.size(), false);
  std::set<BufferId> needed(p.outputs.begin(), p.outputs.end()), for_externs = empty_extern_operands(p);
  for (size_t i = p.nodes.size(); i-- > 0;) {
    Node &n = p.nodes[i];
    live[i] = std::any_of(n.outputs.begin(), n.outputs.end(), [&](BufferId b) { return needed.count(b) > 0; });
    if (!live[i]) {
      log.push_back(str_cat(n.origin, " is never read"));
      continue;
    }
    bool extern_operand = std::any_of(n.outputs.begin(), n.outputs.end(), [&](BufferId b) { return for_externs.count(b); });
    if (writes_nothing(p, n) && !extern_operand) {
      live[i] = false;
      log.push_back(str_cat(n.origin, " has no elements to compute"));
      continue;
    }
    drop_loads_of_empty(p, n);
    for (BufferId b : n.reads()) needed.insert(b);
  }
  std::reverse(log.begin(), log.end());
  std::vector<Node> kept;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    for (BufferId b : p.nodes[i].outputs)
      if (b >= 0) p.buffers[size_t(b)].producer = live[i] ? int(kept.size()) : -1;
    if (live[i]) kept.push_back(std::move(p.nodes[i]));
  }
  p.nodes = std::move(kept);
  return log;
}

// Groups in an order that respects every dependency, earliest first node first.
std::vector<int> kernel_order(const ir::Program &p, const std::vector<Group> &groups) {
  std::map<BufferId, int> writer;
  for (size_t g = 0; g < groups.size(); ++g)
    for (int n : groups[g].nodes)
      for (BufferId b : p.nodes[size_t(n)].outputs) writer[b] = int(g);
  std::vector<std::set<int>> succ(groups.size());
  std::vector<int> indegree(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int n : groups[g].nodes)
      for (BufferId b : p.nodes[size_t(n)].reads()) {
        auto w = writer.find(b);
        if (w != writer.end() && w->second != int(g) && succ[size_t(w->second)].insert(int(g)).second)
          ++indegree[g];
      }
  using Item = std::pair<int, int>;  // first node, group
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t g = 0; g < groups.size(); ++g)
    if (indegree[g] == 0) ready.push({groups[g].nodes.front(), int(g)});
  std::vector<int> order;
  while (!ready.empty()) {
    int g = ready.top().second;
    ready.pop();
    order.push_back(g);
    for (int s : succ[size_t(g)])
      if (--indegree[size_t(s)] == 0) ready.push({groups[size_t(s)].nodes.front(), s});
  }
  COIL_ASSERT(order.size() == groups.size(), "the fused kernels depend on each other in a cycle");
  return order;
}

// Readers of every buffer, by node.
std::vector<std::vector<int>> readers_of(const ir::Program &p) {
  std::vector<std::vector<int>> out(p.buffers.size());
  for (size_t i = 0; i < p.nodes.size(); ++i)
    for (BufferId b : p.nodes[i].reads()) out[size_t(b)].push_back(int(i));
  return out;
}

// An extern call with pointwise consumers fused on as its epilogue (fusion.cpp).
bool has_epilogue(const Kernel &k) { return k.kind == ir::KernelKind::Extern && k.nodes.size() > 1; }

Kernel make_kernel(const ir::Program &p, const Group &g, int index, const std::vector<std::vector<int>> &readers) {
  Kernel k;
  k.name = "kernel" + std::to_string(index);
  k.kind = g.kind;
  k.ranges = g.ranges;
  k.reduction_ranges = g.reduction_ranges;
  k.steps = g.steps;
  for (const ir::Step &s : g.steps) k.nodes.insert(k.nodes.end(), s.nodes.begin(), s.nodes.end());
  if (k.steps.empty()) k.nodes = g.nodes;
  for (int n : k.nodes)
    for (BufferId b : p.nodes[size_t(n)].outputs) {
      if (b < 0) continue;
      bool outside = contains(p.outputs, b) || std::any_of(readers[size_t(b)].begin(), readers[size_t(b)].end(), [&](int r) {
                       return !std::count(g.nodes.begin(), g.nodes.end(), r);
                     });
      (outside || !(k.is_loop_nest() || has_epilogue(k)) ? k.stores : k.internal).push_back(b);
    }
  if (has_epilogue(k)) {
    Epilogue e = epilogue_of(p, k);
    std::string copy = "none: the call writes " + p.buffer(e.out.buffer).name + " in its layout";
    k.attrs["post_ops"] = e.ops.empty() ? copy : str(p, e.ops);
  }
  return k;
}

// Whether scatter kernel k may write `out` over `dying`, its initial tensor: `out` starts
// as a copy of all of `dying` in `out`'s own dtype and layout (a copy of itself, which the
// dialects then skip), and the values it writes read `dying` nowhere.
bool scatter_may_write_over(const ir::Program &p, const Kernel &k, BufferId out, BufferId dying) {
  const Node &scatter = p.nodes[size_t(k.nodes[0])];
  if (scatter.outputs[0] != out || scatter.operands[0].buffer != dying || !ir::scatter_copies_in_place_layout(p, scatter) ||
      !same(p.buffer(dying).type.strides, p.buffer(out).type.strides))
    return false;
  return std::none_of(scatter.body.instrs.begin(), scatter.body.instrs.end(),
                      [&](const ir::Instr &i) { return i.op == ir::Op::Load && i.buffer == dying; });
}

// Whether kernel k may write `out` over `dying`: every read of `dying` in the kernel
// happens no later than the write, at the element written.
bool may_write_over(const ir::Program &p, const Kernel &k, BufferId out, BufferId dying) {
  if (!p.buffer(out).bytes().same(p.buffer(dying).bytes())) return false;
  if (k.kind == ir::KernelKind::Scatter) return scatter_may_write_over(p, k, out, dying);
  if (!k.is_loop_nest()) return false;
  const Node &writer = p.nodes[size_t(p.buffer(out).producer)];
  ir::Ranges r = ranges_of(k.ranges, k.reduction_ranges);
  ir::Expr at = ir::simplify(ir::store_index(writer, p.buffer(out)), r);
  bool past_writer = false;
  for (int n : k.nodes) {
    const Node &node = p.nodes[size_t(n)];
    for (const ir::Instr &i : node.body.instrs) {
      if (i.op != ir::Op::Load || i.buffer != dying) continue;
      if (past_writer || !i.indirect.empty() || ir::simplify(i.index, r) != at) return false;
      if (node.kind == ir::NodeKind::Reduction && &node != &writer) return false;
    }
    if (&node == &writer) past_writer = true;
  }
  return true;
}

}  // namespace

void plan_memory(Schedule &s) {
  const ir::Program &p = s.ir.program;
  std::map<BufferId, int> def, last;
  for (size_t k = 0; k < s.ir.kernels.size(); ++k) {
    const Kernel &kernel = s.ir.kernels[k];
    for (BufferId b : kernel.stores) def[b] = int(k);
    for (int n : kernel.nodes)
      for (BufferId b : p.nodes[size_t(n)].reads()) last[b] = int(k);
  }
  std::map<BufferId, int> index;
  for (const auto &[b, k] : def) {
    if (p.buffer(b).kind != ir::Buffer::Kind::Computed || contains(p.outputs, b)) continue;
    BufferLife life;
    life.name = p.buffer(b).name;
    life.bytes = p.buffer(b).bytes();
    life.def = k;
    life.last_use = last.count(b) ? std::max(k, last.at(b)) : k;
    index[b] = int(s.lives.size());
    s.lives.push_back(life);
    s.life_buffers.push_back(b);
  }
  for (size_t i = 0; i < s.lives.size(); ++i) {
    BufferLife &life = s.lives[i];
    const Kernel &k = s.ir.kernels[size_t(life.def)];
    std::set<BufferId> reads;
    for (int n : k.nodes)
      for (BufferId b : p.nodes[size_t(n)].reads()) reads.insert(b);
    for (BufferId dying : reads) {
      auto it = index.find(dying);
      if (it == index.end() || s.lives[size_t(it->second)].last_use != life.def) continue;
      if (s.lives[size_t(it->second)].def >= life.def) continue;
      if (may_write_over(p, k, s.life_buffers[i], dying)) life.inplace_candidates.push_back(it->second);
    }
  }
  s.memory = sched::plan_memory(s.lives);
  // A scatter placed over its initial tensor copies nothing: the dialects read this.
  for (size_t i = 0; i < s.lives.size(); ++i) {
    Kernel &k = s.ir.kernels[size_t(s.lives[i].def)];
    if (k.kind == ir::KernelKind::Scatter && s.memory.reused[i] >= 0)
      k.attrs["written_over"] = s.lives[size_t(s.memory.reused[i])].name;
  }
}

namespace {

std::string members(const ir::Program &p, const std::vector<int> &nodes) {
  std::string out;
  for (int n : nodes) out += (out.empty() ? "" : ", ") + p.nodes[size_t(n)].origin;
  return out;
}

std::string space(const Kernel &k) {
  std::string out = shape_str(k.ranges);
  if (!k.reduction_ranges.empty()) out += " reducing " + shape_str(k.reduction_ranges);
  return out;
}

}  // namespace

ScheduleOptions ScheduleOptions::from_registry() {
  ScheduleOptions o;
  o.max_fusion_size = options::get_int("max_fusion_size");
  o.horizontal = options::get_bool("fusion.horizontal");
  o.max_streams = options::get_int("fusion.max_streams");
  o.inline_pointwise = options::get_bool("fusion.inline_pointwise");
  o.max_inline_reads = options::get_int("fusion.max_inline_reads");
  o.memory_order_loops = options::get_bool("fusion.memory_order_loops");
  o.emulate_precision_casts = options::get_bool("emulate_precision_casts");
  o.channels_last_convolutions = options::get_bool("layout.channels_last_convolutions");
  return o;
}

Schedule schedule(ir::Program p, const ScheduleOptions &o) {
  Schedule s = schedule_kernels(std::move(p), o);
  plan_memory(s);
  return s;
}

Schedule schedule_kernels(ir::Program p, const ScheduleOptions &o) {
  Schedule s;
  s.removed = eliminate_dead_nodes(p);
  s.inlined = inline_pointwise(p, o);
  s.reordered = order_loops(p, o);
  std::vector<PairRejection> rejected;
  std::vector<Group> groups = fuse(p, singleton_groups(p), o, s.fusions, rejected);
  std::vector<int> order = kernel_order(p, groups);
  auto readers = readers_of(p);
  std::map<int, std::string> name_of;
  for (size_t k = 0; k < order.size(); ++k) {
    s.ir.kernels.push_back(make_kernel(p, groups[size_t(order[k])], int(k), readers));
    name_of[order[k]] = s.ir.kernels.back().name;
  }
  for (const auto &r : rejected) s.rejected.push_back({name_of.at(r.first), name_of.at(r.second), r.reason});
  std::sort(s.rejected.begin(), s.rejected.end(), [](const Rejection &a, const Rejection &b) {
    return std::tie(a.first, a.second) < std::tie(b.first, b.second);
  });
  s.ir.program = std::move(p);
  return s;
}

void specialize(Schedule &s, const std::map<std::string, int64_t> &values) {
  s.ir = ir::specialize(std::move(s.ir), values);
  specialize(s.lives, s.memory, values);
}

std::string memory_plan_str(const Schedule &s) { return str(s.lives, s.memory); }

std::string explain(const Schedule &s) {
  const ir::Program &p = s.ir.program;
  std::ostringstream os;
  int loops = 0, externs = 0;
  for (const Kernel &k : s.ir.kernels) (k.kind == ir::KernelKind::Extern ? externs : loops)++;
  os << loops << (loops == 1 ? " kernel" : " kernels") << " and " << externs << " extern "
     << (externs == 1 ? "call" : "calls") << ", in order:\n";
  for (const Kernel &k : s.ir.kernels) {
    os << "  " << k.name << "  " << ir::kernel_kind_name(k.kind) << " over " << space(k) << ": "
       << members(p, k.nodes) << "\n";
    if (auto post = k.attrs.find("post_ops"); post != k.attrs.end()) os << "      post-ops: " << post->second << "\n";
    if (k.steps.size() > 1)
      for (size_t i = 0; i < k.steps.size(); ++i)
        os << "      " << (k.steps[i].inner ? "pass over each row: " : "once per row: ") << members(p, k.steps[i].nodes)
           << "\n";
    std::string stores, internal;
    for (BufferId b : k.stores) stores += " " + p.buffer(b).name;
    for (BufferId b : k.internal) internal += " " + p.buffer(b).name;
    os << "      writes" << (stores.empty() ? " nothing" : stores);
    if (!internal.empty()) os << "; keeps" << internal << " in registers (never written to memory)";
    os << "\n";
  }
  if (!s.inlined.empty()) {
    os << "recomputed where they are used instead of stored:\n";
    for (const auto &l : s.inlined) os << "  " << l << "\n";
  }
  if (!s.reordered.empty()) {
    os << "loops in memory order (outermost the largest stride):\n";
    for (const auto &l : s.reordered) os << "  " << l << "\n";
  }
  if (!s.removed.empty()) {
    os << "removed (nothing reads them, or they have no elements):\n";
    for (const auto &l : s.removed) os << "  " << l << "\n";
  }
  if (!s.fusions.empty()) {
    os << "fusions, in the order they were made (memory traffic saved):\n";
    for (const auto &l : s.fusions) os << "  " << l << "\n";
  }
  if (!s.rejected.empty()) {
    os << "kernels left apart, and why:\n";
    for (const auto &r : s.rejected) os << "  " << r.first << " and " << r.second << ": " << r.reason << "\n";
  }
  os << "memory: " << s.memory.arena_bytes << " bytes of arena for " << s.lives.size() << " intermediate buffers ("
     << s.memory.naive_bytes << " without reuse)\n";
  return os.str();
}

std::vector<int> inputs_writable_by(const ir::ScheduledProgram &s, ir::BufferId b) {
  const ir::Program &p = s.program;
  const ir::Buffer &out = p.buffer(b);
  if (out.kind != ir::Buffer::Kind::Computed || std::count(p.outputs.begin(), p.outputs.end(), b) > 1) return {};
  // The one kernel that stores b.
  int writer = -1;
  for (size_t k = 0; k < s.kernels.size(); ++k)
    if (std::count(s.kernels[k].stores.begin(), s.kernels[k].stores.end(), b)) {
      if (writer >= 0) return {};
      writer = int(k);
    }
  if (writer < 0) return {};
  std::vector<int> writable;
  for (size_t j = 0; j < p.inputs.size(); ++j) {
    ir::BufferId input = p.inputs[j];
    const TensorType &in = p.buffer(input).type;
    if (!(in.dtype == out.type.dtype && same(in.sizes, out.type.sizes) && same(in.strides, out.type.strides))) continue;
    if (std::count(p.outputs.begin(), p.outputs.end(), input)) continue;  // returned as it was
    // The writing kernel reads the input only where and before it writes b (as the memory
    // plan lets a kernel write over a buffer that dies in it); no later kernel reads it.
    bool safe = may_write_over(p, s.kernels[size_t(writer)], b, input);
    for (size_t later = size_t(writer) + 1; later < s.kernels.size() && safe; ++later)
      for (int n : s.kernels[later].nodes) {
        std::vector<ir::BufferId> reads = p.nodes[size_t(n)].reads();
        if (std::count(reads.begin(), reads.end(), input)) safe = false;
      }
    if (safe) writable.push_back(int(j));
  }
  return writable;
}

}  // namespace coil::sched
