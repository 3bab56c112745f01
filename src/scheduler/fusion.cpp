// Fusion. Candidates are pairs of groups that touch the same memory: one reads what the
// other writes (vertical) or both read one buffer (horizontal). They are tried best
// saving first (bytes of memory traffic that fusion removes); a pair fuses when
//   1. both are loop nests (scans and scatters stay alone; an extern call takes only
//      pointwise consumers that a library runs as post-ops: its epilogue, epilogue.h),
//   2. the result holds at most max_fusion_size nodes and kMaxKernelInstructions
//      instructions,
//   3. no third group sits on a path between them (that would be a cycle),
//   4. their iteration spaces match: equal sizes, or a pointwise group over a
//      reduction's rows (outer) or over rows x reduced elements (inner),
//   5. one of a few variable maps moves the other group into the kernel's variables so
//      that every buffer passed inside the kernel is read at the point that wrote it,
//   6. the row can be ordered into passes (steps): a value computed in a pass over the
//      row is read in that pass only, a reduction's result after its pass,
//   7. a second pass over the rows has programs enough to fill the device
//      (ScheduleOptions::min_programs_for_second_pass; the GPU's).
// Rounds repeat until nothing fuses; the reasons of the last round's failures are kept.
#include "scheduler/fusion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "scheduler/epilogue.h"
#include "scheduler/reindex.h"
#include "support/error.h"
#include "support/vectors.h"

namespace coil::sched {
namespace {

using ir::BufferId;
using ir::Expr;
using ir::Instr;
using ir::KernelKind;
using ir::Node;
using ir::NodeKind;

std::string space_str(const Group &g) {
  auto dims = [](const SymShape &s) {
    if (s.empty()) return std::string("1");
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + str(s[i]);
    return out;
  };
  if (g.kind == KernelKind::Reduction) return dims(g.ranges) + " reducing " + dims(g.reduction_ranges);
  return dims(g.ranges);
}

std::vector<BufferId> written_by(const ir::Program &p, const Group &g) {
  std::vector<BufferId> out;
  for (int n : g.nodes)
    for (BufferId b : p.nodes[size_t(n)].outputs)
      if (b >= 0) out.push_back(b);
  return out;
}

std::set<BufferId> read_by(const ir::Program &p, const Group &g) {
  std::set<BufferId> out;
  for (int n : g.nodes)
    for (BufferId b : p.nodes[size_t(n)].reads()) out.insert(b);
  return out;
}

// Whether two spaces have as many points at every size the graph serves: equal numbers,
// or equal expressions of its symbols (`s0*768` and `768*s0`). Sizes equal only at the
// sizes compiled for (`s0` and `s1`, both 8) are not: fusion never guards on them.
bool same_numel(const SymShape &a, const SymShape &b) { return checked_numel(a).same(checked_numel(b)); }

// The role of a member in its kernel.
enum class Role { Reduction, Inner, Outer };

// A member's role in a group: pointwise members of a reduction group without reduction
// ranges run once per row.
Role role_in(const Node &n, const Group &g) {
  if (n.kind == NodeKind::Reduction) return Role::Reduction;
  bool outer = n.reduction_ranges.empty() && !g.reduction_ranges.empty();
  return outer ? Role::Outer : Role::Inner;
}

/// A fusion being checked: the members with their (possibly rewritten) nodes.
struct Trial {
  KernelKind kind;
  SymShape ranges, reduction_ranges;
  std::map<int, Node> nodes;    // node index -> node in the kernel's variables
  std::map<int, Role> roles;
  std::vector<ir::Step> steps;
};

// Assigns every member a pass of the row; a reason when a value would cross passes.
std::optional<std::string> order_steps(const ir::Program &p, Trial &t) {
  std::map<BufferId, int> writer;
  for (const auto &[i, n] : t.nodes)
    for (BufferId b : n.outputs) writer[b] = i;
  std::map<int, int> step_of;
  t.steps.clear();
  for (const auto &[i, n] : t.nodes) {
    Role role = t.roles.at(i);
    bool inner = role != Role::Outer;
    int lower = 0, fixed = -1;
    BufferId fixed_by = -1;
    for (BufferId b : n.reads()) {
      auto w = writer.find(b);
      if (w == writer.end()) continue;
      Role wrole = t.roles.at(w->second);
      int ws = step_of.at(w->second);
      if (wrole == Role::Inner) {
        // An inner value lives only in its pass (with no reduction ranges a pass is one element).
        bool rows = !t.reduction_ranges.empty();
        if (rows && !inner)
          return str_cat(p.buffer(b).name, " is computed for every element of a row but read once per row");
        if (fixed >= 0 && fixed != ws)
          return str_cat(p.buffer(b).name, " is computed in one pass", rows ? " over the row" : "",
                         " and needed in another");
        fixed = ws;
        fixed_by = b;
      } else {
        lower = std::max(lower, wrole == Role::Outer && !inner ? ws : ws + 1);
      }
    }
    int s = -1;
    if (fixed >= 0) {
      if (fixed < lower)
        return str_cat(p.buffer(fixed_by).name, " is computed in one pass over the row and needed in a later one");
      s = fixed;
    } else {
      for (int k = lower; k < int(t.steps.size()) && s < 0; ++k)
        if (t.steps[size_t(k)].inner == inner) s = k;
      if (s < 0) {
        while (int(t.steps.size()) < lower) t.steps.push_back(ir::Step{!inner, {}});
        s = int(t.steps.size());
        t.steps.push_back(ir::Step{inner, {}});
      }
    }
    step_of[i] = s;
    t.steps[size_t(s)].nodes.push_back(i);
  }
  std::erase_if(t.steps, [](const ir::Step &s) { return s.nodes.empty(); });
  return std::nullopt;
}

// Whether every buffer passed between members is read where it was written.
std::optional<std::string> check_indices(const ir::Program &p, const Trial &t) {
  std::map<BufferId, const Node *> writer;
  for (const auto &[i, n] : t.nodes)
    for (BufferId b : n.outputs)
      if (b >= 0) writer[b] = &n;
  for (const auto &member : t.nodes) {
    const Node &n = member.second;
    auto name = [&](ir::VarId v) { return n.var_name(v); };
    for (const Instr &load : n.body.instrs) {
      if (load.op != ir::Op::Load) continue;
      auto w = writer.find(load.buffer);
      if (w == writer.end()) continue;
      if (!load.indirect.empty())
        return str_cat(p.buffer(load.buffer).name, " is read at an index that depends on data");
      ir::Ranges r = ranges_of(t.ranges, t.reduction_ranges);
      Expr store = ir::simplify(ir::store_index(*w->second, p.buffer(load.buffer)), r);
      if (store != ir::simplify(load.index, r))
        return str_cat(p.buffer(load.buffer).name, " is written at [", ir::str(store, name), "] but read at [",
                       ir::str(load.index, name), "]: another element at the same point");
    }
  }
  return std::nullopt;
}

// The linear index of a map's space over `sizes`, in the target's variables, is an
// injective affine expression: then the map is a bijection between equal-sized spaces.
bool is_bijection(const VarMap &map, const SymShape &sizes, const ir::Ranges &r) {
  Expr l(0);
  for (size_t d = 0; d < sizes.size(); ++d) l = l * sizes[d] + map[d];
  l = ir::simplify(l, r);
  for (const ir::Term &term : l.terms()) {
    // A positive multiple of one variable, by a number or by sizes.
    auto vars = std::count_if(term.factors.begin(), term.factors.end(), [](const ir::Atom &a) { return a.kind() == ir::AtomKind::Var; });
    auto symbols = std::count_if(term.factors.begin(), term.factors.end(), [](const ir::Atom &a) { return a.kind() == ir::AtomKind::Symbol; });
    if (vars != 1 || vars + symbols != int64_t(term.factors.size()) || term.coeff <= 0) return false;
  }
  return true;
}

bool same_space(const Group &a, const Group &b) {
  if (a.kind == KernelKind::Scan && b.kind == KernelKind::Scan)
    return same(a.ranges, b.ranges) && a.scan_dim == b.scan_dim;
  bool loops = (a.kind == KernelKind::Pointwise || a.kind == KernelKind::Reduction) && a.kind == b.kind;
  return loops && same_numel(a.ranges, b.ranges) && same_numel(a.reduction_ranges, b.reduction_ranges);
}

// The most body instructions of one fused kernel. A C++ compiler's time grows faster
// than the size of a function (a chain of 2,000 pointwise ops fused into one kernel of
// about 6,000 instructions took g++ 44 s, in kernels of at most 1,024 instructions 20 s),
// so a longer chain goes into several kernels.
constexpr size_t kMaxKernelInstructions = 1024;

std::string bytes_str(int64_t b) {
  std::ostringstream os;
  if (b < 1024) {
    os << b << " B";
  } else if (b < 1024 * 1024) {
    os << double(b) / 1024 << " KiB";
  } else {
    os << double(b) / (1024 * 1024) << " MiB";
  }
  return os.str();
}

struct Fuser {
  ir::Program &p;
  const ScheduleOptions &o;
  std::vector<Group> groups;
  std::vector<bool> alive;
  // Who reads and who writes each buffer (nodes, by BufferId) and each node's group, kept
  // up to date by commit: the successors of a group then cost what the group touches,
  // not a pass over every group.
  std::vector<std::vector<int>> readers_of, writers_of;
  std::vector<int> group_of;
  // A level per live group, lower than its successors' (a topological rank, kept as
  // groups merge): a path from g to h passes only groups of levels between theirs, so
  // the cycle check walks those, not everything reachable from g.
  std::vector<int64_t> level;

  void index_node(int n, bool add) {
    auto update = [&](std::vector<int> &list) {
      if (add) list.push_back(n);
      else list.erase(std::remove(list.begin(), list.end(), n), list.end());
    };
    std::vector<BufferId> reads = p.nodes[size_t(n)].reads();
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (BufferId b : reads) update(readers_of[size_t(b)]);
    for (BufferId b : p.nodes[size_t(n)].outputs)
      if (b >= 0) update(writers_of[size_t(b)]);
  }

  void index_all() {
    readers_of.assign(p.buffers.size(), {});
    writers_of.assign(p.buffers.size(), {});
    group_of.assign(p.nodes.size(), -1);
    for (size_t n = 0; n < p.nodes.size(); ++n) index_node(int(n), true);
    for (size_t g = 0; g < groups.size(); ++g)
      for (int n : groups[g].nodes) group_of[size_t(n)] = int(g);
  }

  // Groups that write what group g reads.
  std::vector<int> predecessors(int g) const {
    std::set<int> out;
    for (BufferId b : read_by(p, groups[size_t(g)]))
      if (int w = writer_group(b); w >= 0 && w != g) out.insert(w);
    return {out.begin(), out.end()};
  }

  // Levels from scratch: the longest path to each group, groups taken in a topological
  // order (each once all it reads is levelled).
  void level_all() {
    level.assign(groups.size(), 0);
    std::vector<int> waiting(groups.size(), 0), ready;
    for (size_t g = 0; g < groups.size(); ++g)
      if (alive[g] && (waiting[g] = int(predecessors(int(g)).size())) == 0) ready.push_back(int(g));
    while (!ready.empty()) {
      int u = ready.back();
      ready.pop_back();
      for (int s : successors(u)) {
        level[size_t(s)] = std::max(level[size_t(s)], level[size_t(u)] + 1);
        if (--waiting[size_t(s)] == 0) ready.push_back(s);
      }
    }
  }

  // After g became the union of two groups: g above its predecessors, and every group
  // reachable from g above g, raised as little as needed.
  void relevel(int g) {
    for (int h : predecessors(g)) level[size_t(g)] = std::max(level[size_t(g)], level[size_t(h)] + 1);
    std::vector<int> work = {g};
    while (!work.empty()) {
      int u = work.back();
      work.pop_back();
      for (int s : successors(u))
        if (level[size_t(s)] <= level[size_t(u)]) {
          level[size_t(s)] = level[size_t(u)] + 1;
          work.push_back(s);
        }
    }
  }

  // The live group that writes `b` (the last in group order when several do), or -1.
  int writer_group(BufferId b) const {
    int w = -1;
    for (int n : writers_of[size_t(b)]) {
      int g = group_of[size_t(n)];
      if (g >= 0 && alive[size_t(g)]) w = std::max(w, g);
    }
    return w;
  }

  // Group index of each node.
  std::map<int, int> group_of_node() const {
    std::map<int, int> out;
    for (size_t g = 0; g < groups.size(); ++g)
      if (alive[g])
        for (int n : groups[g].nodes) out[n] = int(g);
    return out;
  }

  size_t instructions(const Group &g) const {
    size_t n = 0;
    for (int i : g.nodes) n += p.nodes[size_t(i)].body.instrs.size();
    return n;
  }

  // Groups that read what group g writes.
  std::vector<int> successors(int g) const {
    std::set<int> out;
    for (BufferId b : written_by(p, groups[size_t(g)])) {
      if (writer_group(b) != g) continue;
      for (int n : readers_of[size_t(b)]) {
        int h = group_of[size_t(n)];
        if (h >= 0 && alive[size_t(h)] && h != g) out.insert(h);
      }
    }
    return {out.begin(), out.end()};
  }

  // A buffer on a path from `from` to `to` through a third group, if there is one.
  std::optional<BufferId> path_through_other(int from, int to) const {
    // Only a group below `to` reaches it.
    auto below_to = [&](int g) { return level[size_t(g)] < level[size_t(to)]; };
    if (!below_to(from)) return std::nullopt;
    std::vector<int> work;
    std::set<int> seen;
    std::map<int, BufferId> via;
    for (int s : successors(from))
      if (s != to && below_to(s)) {
        work.push_back(s);
        seen.insert(s);
        via[s] = written_by(p, groups[size_t(s)]).front();
      }
    while (!work.empty()) {
      int g = work.back();
      work.pop_back();
      for (int s : successors(g)) {
        if (s == to) return via[g];
        if (below_to(s) && seen.insert(s).second) {
          work.push_back(s);
          via[s] = via[g];
        }
      }
    }
    return std::nullopt;
  }

  // The bytes of memory traffic fusing a and b saves; 0 when they share nothing.
  // What each group writes and reads, for one round of candidates.
  struct Access {
    std::vector<BufferId> writes;
    std::set<BufferId> reads;
  };

  int64_t saving(int a, int b, const std::vector<Access> &access) const {
    int64_t bytes = 0;
    const std::vector<BufferId> &wa = access[size_t(a)].writes, &wb = access[size_t(b)].writes;
    const std::set<BufferId> &ra = access[size_t(a)].reads, &rb = access[size_t(b)].reads;
    auto internal_after = [&](BufferId x) {
      if (contains(p.outputs, x)) return false;
      for (int n : readers_of[size_t(x)])
        if (!std::count(groups[size_t(a)].nodes.begin(), groups[size_t(a)].nodes.end(), n) &&
            !std::count(groups[size_t(b)].nodes.begin(), groups[size_t(b)].nodes.end(), n))
          return false;
      return true;
    };
    for (BufferId x : wa)
      if (rb.count(x)) bytes += p.buffer(x).bytes().hint() * (internal_after(x) ? 2 : 1);
    for (BufferId x : wb)
      if (ra.count(x)) bytes += p.buffer(x).bytes().hint() * (internal_after(x) ? 2 : 1);
    if (o.horizontal || bytes > 0)
      for (BufferId x : ra)
        if (rb.count(x) && !contains(wa, x) && !contains(wb, x)) bytes += p.buffer(x).bytes().hint();
    return bytes;
  }

  // Moves group m's members into the space (ranges, red) with `map`, as `role`.
  void move_into(Trial &t, const Group &m, const VarMap &map, Role role) const {
    for (int n : m.nodes) {
      const Node &node = p.nodes[size_t(n)];
      Role r = m.kind == KernelKind::Reduction ? role_in(node, m) : role;
      SymShape red = r == Role::Outer ? SymShape{} : t.reduction_ranges;
      VarMap local(map.begin(), map.begin() + node.num_vars());
      t.nodes[n] = rewrite_node(p, node, local, t.ranges, red);
      t.roles[n] = r;
    }
  }

  void keep(Trial &t, const Group &g) const {
    for (int n : g.nodes) {
      const Node &node = p.nodes[size_t(n)];
      t.nodes[n] = node;
      t.roles[n] = role_in(node, g);
    }
  }

  // Variable maps worth trying to move `m` into target group `t` (as inner or outer).
  std::vector<VarMap> candidate_maps(const Group &m, const Group &target, bool outer) const {
    SymShape msizes = m.ranges;
    if (m.kind == KernelKind::Reduction) msizes.insert(msizes.end(), m.reduction_ranges.begin(), m.reduction_ranges.end());
    SymShape tsizes = target.ranges;
    SymShape tred = outer ? SymShape{} : target.reduction_ranges;
    ir::Ranges tr = ranges_of(target.ranges, tred);
    std::vector<VarMap> out;
    auto add = [&](std::optional<VarMap> map) {
      if (map && std::find(out.begin(), out.end(), *map) == out.end()) out.push_back(std::move(*map));
    };
    std::vector<int> identity(m.ranges.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (m.kind == KernelKind::Reduction) {
      // Rows onto rows and reduced elements onto reduced elements, each in order: the
      // order of the reduced elements is what argmax's positions count.
      std::optional<VarMap> map = linearize(m.ranges, identity, target.ranges, 0, tr);
      std::vector<int> rid(m.reduction_ranges.size());
      std::iota(rid.begin(), rid.end(), 0);
      std::optional<VarMap> rmap = linearize(m.reduction_ranges, rid, target.reduction_ranges, int(target.ranges.size()), tr);
      if (map && rmap) {
        map->insert(map->end(), rmap->begin(), rmap->end());
        add(*map);
      }
      return out;
    }
    SymShape full = tsizes;
    full.insert(full.end(), tred.begin(), tred.end());
    auto m_writes = written_by(p, m);
    auto t_writes = written_by(p, target);
    // Solve m's variables from where the target reads what m writes...
    for (int n : target.nodes)
      for (const Instr &i : p.nodes[size_t(n)].body.instrs) {
        if (i.op != ir::Op::Load || !contains(m_writes, i.buffer) || !i.indirect.empty()) continue;
        const Node &w = p.nodes[size_t(p.buffer(i.buffer).producer)];
        if (auto map = solve_injective(ir::store_index(w, p.buffer(i.buffer)), msizes, i.index, tr))
          if (is_bijection(*map, msizes, tr)) add(*map);
      }
    // ... or from where m reads what the target writes.
    for (int n : m.nodes)
      for (const Instr &i : p.nodes[size_t(n)].body.instrs) {
        if (i.op != ir::Op::Load || !contains(t_writes, i.buffer) || !i.indirect.empty()) continue;
        const Node &w = p.nodes[size_t(p.buffer(i.buffer).producer)];
        Expr store = ir::store_index(w, p.buffer(i.buffer));
        if (auto map = solve_injective(i.index, msizes, store, tr))
          if (is_bijection(*map, msizes, tr)) add(*map);
      }
    // ... or, for groups that share an input, from where both read it: each element read
    // at the point the target reads it, so that the kernel loads it once (a copy of a matrix
    // beside the sum over its rows walks it as the sum does, not in its own flat order).
    if (checked_numel(msizes).hint() > 0)  // (an empty space has no element to solve for)
      for (int n : m.nodes)
        for (const Instr &i : p.nodes[size_t(n)].body.instrs) {
          if (i.op != ir::Op::Load || !i.indirect.empty() || contains(t_writes, i.buffer) || contains(m_writes, i.buffer))
            continue;
          for (int tn : target.nodes)
            for (const Instr &j : p.nodes[size_t(tn)].body.instrs) {
              if (j.op != ir::Op::Load || j.buffer != i.buffer || !j.indirect.empty()) continue;
              if (auto map = solve_injective(i.index, msizes, j.index, tr))
                if (is_bijection(*map, msizes, tr)) add(*map);
            }
        }
    add(linearize(msizes, identity, full, 0, tr));
    // The variables that pick a row of what the target writes go first: a consumer of a
    // reduction over dim 0 walks its rows in the reduction's order.
    std::vector<int> rows_first;
    for (int n : m.nodes)
      for (const Instr &i : p.nodes[size_t(n)].body.instrs)
        if (i.op == ir::Op::Load && contains(t_writes, i.buffer))
          for (ir::VarId v : ir::vars_of(i.index))
            if (v.id < int(msizes.size()) && !std::count(rows_first.begin(), rows_first.end(), v.id))
              rows_first.push_back(v.id);
    std::sort(rows_first.begin(), rows_first.end());
    for (int d : identity)
      if (!std::count(rows_first.begin(), rows_first.end(), d)) rows_first.push_back(d);
    add(linearize(msizes, rows_first, full, 0, tr));
    return out;
  }

  // The fused group of a and b, or why they cannot fuse.
  std::variant<Trial, std::string> try_fuse(int a, int b) const {
    const Group &ga = groups[size_t(a)], &gb = groups[size_t(b)];
    if (ga.kind == KernelKind::Scan && gb.kind == KernelKind::Scan) return fuse_scans(a, b);
    if (ga.kind == KernelKind::Extern || gb.kind == KernelKind::Extern) return fuse_epilogue(a, b);
    for (const Group *g : {&ga, &gb}) {
      if (g->kind == KernelKind::Scan) return std::string("a scan runs alone: each element waits for the one before");
      if (g->kind == KernelKind::Scatter) return std::string("a scatter writes at places read from data and runs alone");
    }
    size_t size = ga.nodes.size() + gb.nodes.size();
    if (int64_t(size) > o.max_fusion_size)
      return str_cat("over max_fusion_size ", o.max_fusion_size, " (together they hold ", size, " nodes)");
    if (size_t body = instructions(ga) + instructions(gb); body > kMaxKernelInstructions)
      return str_cat("over ", kMaxKernelInstructions, " instructions in one kernel (together they hold ", body, ")");
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}})
      if (auto via = path_through_other(from, to)) return str_cat("would create a cycle through ", p.buffer(*via).name);

    // The target keeps its variables; the other group moves.
    const Group *target = &ga, *moved = &gb;
    bool outer = false;
    std::string mismatch = str_cat("different iteration space ", space_str(ga), " vs ", space_str(gb));
    bool ra = ga.kind == KernelKind::Reduction, rb = gb.kind == KernelKind::Reduction;
    if (ra && rb) {
      if (!same_numel(ga.ranges, gb.ranges) || !same_numel(ga.reduction_ranges, gb.reduction_ranges)) return mismatch;
    } else if (ra || rb) {
      target = ra ? &ga : &gb;
      moved = ra ? &gb : &ga;
      SymInt rows = checked_numel(target->ranges), n = checked_numel(moved->ranges), rn = checked_numel(target->reduction_ranges);
      if (!n.same(rows * rn) && !n.same(rows)) return mismatch;
      outer = n.same(rows) && !rn.same(1);
    } else if (!same_numel(ga.ranges, gb.ranges)) {
      return mismatch;
    }
    std::string first_reason;
    std::vector<std::pair<const Group *, const Group *>> orders = {{target, moved}};
    if (!ra && !rb) orders.push_back({moved, target});  // two pointwise groups: either may move
    for (auto [t, m] : orders) {
      for (const VarMap &map : candidate_maps(*m, *t, outer)) {
        Trial trial{t->kind, t->ranges, t->reduction_ranges, {}, {}, {}};
        keep(trial, *t);
        move_into(trial, *m, map, outer ? Role::Outer : Role::Inner);
        auto reason = check_indices(p, trial);
        if (!reason) reason = order_steps(p, trial);
        if (!reason) {
          // Every map orders the same passes: this reason holds for all of them.
          if (auto narrow = second_pass_too_narrow(trial)) return *narrow;
          return trial;
        }
        if (first_reason.empty()) first_reason = *reason;
      }
    }
    return first_reason;
  }

  // Why a reduction kernel may not walk its rows a second time (ScheduleOptions::
  // min_programs_for_second_pass), or nothing.
  std::optional<std::string> second_pass_too_narrow(const Trial &t) const {
    if (o.min_programs_for_second_pass <= 0 || !o.reduction_programs || t.kind != KernelKind::Reduction)
      return std::nullopt;
    int64_t rows = checked_numel(t.ranges).hint(), rn = checked_numel(t.reduction_ranges).hint();  // a heuristic
    int64_t passes = std::count_if(t.steps.begin(), t.steps.end(), [](const ir::Step &s) { return s.inner; });
    if (passes < 2 || rows * rn < (int64_t(1) << 21)) return std::nullopt;
    std::set<BufferId> written;
    std::vector<const ir::Node *> members;
    for (const auto &[i, n] : t.nodes) {
      members.push_back(&n);
      written.insert(n.outputs.begin(), n.outputs.end());
    }
    bool side_by_side = ir::reads_rows_side_by_side(members, t.ranges, t.reduction_ranges,
                                                    [&](BufferId b) { return !written.count(b); });
    int64_t programs = o.reduction_programs(rows, rn, side_by_side);
    if (programs >= o.min_programs_for_second_pass) return std::nullopt;
    return str_cat("a second pass over ", rows, " rows of ", rn, " elements", side_by_side ? " (side by side)" : "",
                   " would run in ", programs, " programs, too few to fill the device (fewer than ",
                   o.min_programs_for_second_pass, ")");
  }

  // The last value an extern group computes: its call's result, or its epilogue's.
  BufferId chain_end(const Group &g) const { return p.nodes[size_t(g.nodes.back())].outputs[0]; }

  // Where a chain value may not stay inside the kernel: read by another node, or returned.
  std::optional<std::string> read_outside(BufferId b, const std::vector<int> &members) const {
    if (contains(p.outputs, b)) return str_cat(p.buffer(b).name, " is a graph output");
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const auto reads = p.nodes[i].reads();
      if (std::count(reads.begin(), reads.end(), b) && !std::count(members.begin(), members.end(), int(i)))
        return str_cat(p.buffer(b).name, " is also read by ", p.nodes[i].origin);
    }
    return std::nullopt;
  }

  // An extern call with a pointwise consumer of its result as its epilogue: the
  // consumer moves into the call's variables (x_d over the result's dim d) and must read
  // as post-ops (epilogue.h). The call's result and every value of the chain but the
  // last stay internal: a library stores only the last.
  std::variant<Trial, std::string> fuse_epilogue(int a, int b) const {
    const Group &call = groups[size_t(groups[size_t(a)].kind == KernelKind::Extern ? a : b)];
    const Group &consumer = groups[size_t(&call == &groups[size_t(a)] ? b : a)];
    std::string refusal = str_cat("an extern call (", ir::extern_op_name(p.nodes[size_t(call.nodes[0])].extern_op),
                                  ") runs in a library, not in a generated loop");
    if (p.nodes[size_t(call.nodes[0])].extern_op == ir::ExternOp::Attention)
      return "an attention kernel takes no epilogue (its dialects' kernels store their result as it is)";
    if (p.nodes[size_t(call.nodes[0])].attrs.count("aligned_rows"))
      return "the product writes its result with rows padded for the library (extern.align_product_rows), which "
             "an epilogue storing another layout would undo";
    BufferId result = chain_end(call);
    if (consumer.kind != KernelKind::Pointwise || !read_by(p, consumer).count(result)) return refusal;
    if (!o.extern_epilogues) return str_cat(refusal, "; this device's extern calls take no epilogue");
    auto apart = [&](const std::string &why) {
      return str_cat(refusal, "; its epilogue cannot take ", describe_nodes(consumer), ": ", why);
    };
    size_t size = call.nodes.size() + consumer.nodes.size();
    if (int64_t(size) > o.max_fusion_size)
      return apart(str_cat("over max_fusion_size ", o.max_fusion_size, " (together they hold ", size, " nodes)"));
    if (!same_numel(call.ranges, consumer.ranges))
      return apart(str_cat("different iteration space ", space_str(call), " vs ", space_str(consumer)));
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}})
      if (auto via = path_through_other(from, to))
        return apart(str_cat("would create a cycle through ", p.buffer(*via).name));
    std::vector<int> members = call.nodes;
    members.insert(members.end(), consumer.nodes.begin(), consumer.nodes.end());
    std::sort(members.begin(), members.end());
    for (size_t i = 0; i + 1 < members.size(); ++i)
      for (BufferId x : p.nodes[size_t(members[i])].outputs)
        if (auto why = read_outside(x, members)) return apart(*why + ", and a library stores only the last post-op's value");
    DType t = p.buffer(result).type.dtype;
    if (o.emulate_precision_casts && (t == DType::BF16 || t == DType::F16))
      return apart(str_cat("emulate_precision_casts rounds ", p.buffer(result).name, " to ", short_name(t),
                           " before the epilogue reads it"));
    std::string first_reason;
    for (const VarMap &map : candidate_maps(consumer, call, false)) {
      Trial trial{KernelKind::Extern, call.ranges, {}, {}, {}, {}};
      keep(trial, call);
      move_into(trial, consumer, map, Role::Inner);
      auto reason = check_indices(p, trial);
      if (!reason) {
        std::vector<const Node *> epilogue;
        for (const auto &[i, n] : trial.nodes)
          if (i != call.nodes[0]) epilogue.push_back(&n);
        const Node &call_node = trial.nodes.at(call.nodes[0]);
        auto e = match_epilogue(p, call_node, epilogue);
        if (std::holds_alternative<Epilogue>(e)) {
          if (!o.epilogue_check) return trial;
          std::string why = o.epilogue_check(p, call_node, std::get<Epilogue>(e));
          if (why.empty()) return trial;
          reason = why;
        } else {
          reason = std::get<std::string>(e);
        }
      }
      if (first_reason.empty()) first_reason = *reason;
    }
    return apart(first_reason);
  }

  // Scans along one dim of one space run side by side when neither reads the other.
  std::variant<Trial, std::string> fuse_scans(int a, int b) const {
    const Group &ga = groups[size_t(a)], &gb = groups[size_t(b)];
    if (!same_space(ga, gb))
      return str_cat("scans over different spaces or dims: ", shape_str(ga.ranges), " along dim ", ga.scan_dim, " vs ",
                     shape_str(gb.ranges), " along dim ", gb.scan_dim);
    if (int64_t(ga.nodes.size() + gb.nodes.size()) > o.max_fusion_size)
      return str_cat("over max_fusion_size ", o.max_fusion_size);
    auto wa = written_by(p, ga), wb = written_by(p, gb);
    for (BufferId x : read_by(p, gb))
      if (contains(wa, x)) return str_cat("a scan reads ", p.buffer(x).name, ", which the other scan writes whole");
    for (BufferId x : read_by(p, ga))
      if (contains(wb, x)) return str_cat("a scan reads ", p.buffer(x).name, ", which the other scan writes whole");
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}})
      if (auto via = path_through_other(from, to)) return str_cat("would create a cycle through ", p.buffer(*via).name);
    Trial t{KernelKind::Scan, ga.ranges, {}, {}, {}, {}};
    for (const Group *g : {&ga, &gb})
      for (int n : g->nodes) {
        t.nodes[n] = p.nodes[size_t(n)];
        t.roles[n] = Role::Inner;
      }
    return t;
  }

  void commit(int a, int b, Trial &t) {
    for (auto &[i, n] : t.nodes) {
      index_node(i, false);
      p.nodes[size_t(i)] = std::move(n);
      index_node(i, true);
    }
    Group g;
    g.kind = t.kind;
    g.ranges = t.ranges;
    g.reduction_ranges = t.reduction_ranges;
    for (const auto &[i, n] : t.roles) g.nodes.push_back(i);
    g.steps = t.steps;
    g.scan_dim = groups[size_t(a)].scan_dim;
    groups[size_t(a)] = std::move(g);
    alive[size_t(b)] = false;
    for (int n : groups[size_t(a)].nodes) group_of[size_t(n)] = a;
    level[size_t(a)] = std::max(level[size_t(a)], level[size_t(b)]);
    relevel(a);
  }

  std::string describe_nodes(const Group &g) const {
    std::string out;
    for (int n : g.nodes) out += (out.empty() ? "" : ", ") + p.nodes[size_t(n)].origin;
    return "[" + out + "]";
  }

  std::string describe(int g) const { return describe_nodes(groups[size_t(g)]); }

  struct Candidate {
    int a, b;
    int64_t bytes;
  };

  // Why groups a and b, which fusing saves `saving` bytes, stay apart for the streams they
  // would read and write at once (ScheduleOptions::max_streams), or nothing.
  std::optional<std::string> too_many_streams(int a, int b, int64_t saving) const {
    if (o.max_streams <= 0) return std::nullopt;
    std::set<BufferId> large;
    int64_t traffic = 0;
    for (int g : {a, b}) {
      std::vector<BufferId> touched = written_by(p, groups[size_t(g)]);
      for (BufferId x : read_by(p, groups[size_t(g)])) touched.push_back(x);
      for (BufferId x : touched)
        if (int64_t bytes = p.buffer(x).bytes().hint(); bytes >= (int64_t(1) << 20) && large.insert(x).second) traffic += bytes;
    }
    if (int64_t(large.size()) <= o.max_streams || saving * 16 >= traffic) return std::nullopt;
    return str_cat("together they stream ", large.size(), " buffers of 1 MiB or more at once (fusion.max_streams ",
                   o.max_streams, ") to save ", bytes_str(saving));
  }

  // The live groups after `a` that share a buffer with it: one writes what the other
  // reads, or (with horizontal fusion) both read it. Only these can save traffic.
  std::set<int> sharing_after(int a, const Access &access) const {
    std::set<int> out;
    auto add = [&](const std::vector<int> &nodes) {
      for (int n : nodes)
        if (int g = group_of[size_t(n)]; g > a && alive[size_t(g)]) out.insert(g);
    };
    for (BufferId x : access.writes) add(readers_of[size_t(x)]);
    for (BufferId x : access.reads) {
      add(writers_of[size_t(x)]);
      if (o.horizontal) add(readers_of[size_t(x)]);
    }
    return out;
  }

  std::vector<Candidate> candidates() const {
    std::vector<Access> access(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
      if (alive[g]) access[g] = {written_by(p, groups[g]), read_by(p, groups[g])};
    std::vector<Candidate> out;
    for (size_t a = 0; a < groups.size(); ++a) {
      if (!alive[a]) continue;
      std::set<int> sharing = sharing_after(int(a), access[a]);
      for (int b : sharing)
        if (int64_t bytes = saving(int(a), b, access); bytes > 0) out.push_back({int(a), b, bytes});
      if (!o.horizontal) continue;
      // Nothing shared with the next group of the same space, but one launch fewer: worth
      // it last, for small kernels most.
      for (size_t b = a + 1; b < groups.size(); ++b) {
        if (!alive[b] || !same_space(groups[a], groups[b])) continue;
        if (sharing.count(int(b)) && saving(int(a), int(b), access) > 0) continue;
        out.push_back({int(a), int(b), 0});
        break;
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const Candidate &x, const Candidate &y) { return x.bytes > y.bytes; });
    return out;
  }
};


}  // namespace

std::vector<Group> singleton_groups(const ir::Program &p) {
  std::vector<Group> out;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node &n = p.nodes[i];
    Group g;
    switch (n.kind) {
      case NodeKind::Pointwise: g.kind = KernelKind::Pointwise; break;
      case NodeKind::Reduction: g.kind = KernelKind::Reduction; break;
      case NodeKind::Scan: g.kind = KernelKind::Scan; break;
      case NodeKind::Extern: g.kind = KernelKind::Extern; break;
      case NodeKind::Scatter: g.kind = KernelKind::Scatter; break;
    }
    g.ranges = n.ranges;
    g.reduction_ranges = n.reduction_ranges;
    g.nodes = {int(i)};
    g.scan_dim = n.scan_dim;
    if (n.kind == NodeKind::Pointwise || n.kind == NodeKind::Reduction) g.steps = {ir::Step{true, {int(i)}}};
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<Group> fuse(ir::Program &p, std::vector<Group> groups, const ScheduleOptions &o,
                        std::vector<std::string> &log, std::vector<PairRejection> &rejected) {
  Fuser f{p, o, std::move(groups), {}, {}, {}, {}, {}};
  f.alive.assign(f.groups.size(), true);
  f.index_all();
  f.level_all();
  while (true) {
    std::vector<bool> touched(f.groups.size(), false);
    std::vector<PairRejection> reasons;
    bool fused = false;
    for (const auto &c : f.candidates()) {
      if (touched[size_t(c.a)] || touched[size_t(c.b)]) continue;
      if (auto why = f.too_many_streams(c.a, c.b, c.bytes)) {
        reasons.push_back({c.a, c.b, *why});
        continue;
      }
      auto result = f.try_fuse(c.a, c.b);
      if (auto *reason = std::get_if<std::string>(&result)) {
        reasons.push_back({c.a, c.b, *reason});
        continue;
      }
      log.push_back(str_cat(f.describe(c.a), " + ", f.describe(c.b), ": ",
                            c.bytes ? "saves " + bytes_str(c.bytes) : std::string("one launch fewer")));
      f.commit(c.a, c.b, std::get<Trial>(result));
      touched[size_t(c.a)] = touched[size_t(c.b)] = true;
      fused = true;
    }
    if (fused) continue;
    // Renumber: the surviving groups, and the reasons in their numbering.
    std::vector<Group> out;
    std::map<int, int> index;
    for (size_t g = 0; g < f.groups.size(); ++g)
      if (f.alive[g]) {
        index[int(g)] = int(out.size());
        out.push_back(std::move(f.groups[g]));
      }
    for (auto &r : reasons) rejected.push_back({index.at(r.first), index.at(r.second), std::move(r.reason)});
    return out;
  }
}

}  // namespace coil::sched
