#include "scheduler/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "support/error.h"

namespace coil::sched {
namespace {

void check_input(const std::vector<BufferLife> &buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLife &b = buffers[i];
    COIL_ASSERT(b.bytes.hint() >= 0, b.name, " has a negative size ", b.bytes);
    COIL_ASSERT(b.last_use >= b.def, b.name, " is last used at step ", b.last_use, " before its def at ", b.def);
    for (int c : b.inplace_candidates) {
      COIL_ASSERT(c >= 0 && static_cast<size_t>(c) < buffers.size() && static_cast<size_t>(c) != i, b.name,
                  " has an in-place candidate out of range: ", c);
      const BufferLife &victim = buffers[c];
      COIL_ASSERT(victim.def < b.def && victim.last_use == b.def, b.name, " (def ", b.def,
                  ") may not take over ", victim.name, " (live [", victim.def, ", ", victim.last_use, "])");
      COIL_ASSERT(victim.bytes.same(b.bytes), b.name, " (", b.bytes, " B) may not take over ", victim.name, " (",
                  victim.bytes, " B)");
    }
  }
}

/// Whether `s` holds a max or min of sizes that the symbols' ranges did not decide.
bool undecided(const SymInt &s) {
  if (!s.symbolic()) return false;
  for (const ir::Term &t : s.expr().terms())
    for (const ir::Atom &a : t.factors)
      if (a.kind() == ir::AtomKind::Max || a.kind() == ir::AtomKind::Min) return true;
  return false;
}

/// Buffer indices in kernel order: by def step, ties by input order.
std::vector<int> kernel_order(const std::vector<BufferLife> &buffers) {
  std::vector<int> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return buffers[a].def < buffers[b].def; });
  return order;
}

/// Decides offsets one buffer at a time; `placed` holds every buffer decided so far.
class Planner {
 public:
  explicit Planner(const std::vector<BufferLife> &buffers) : buffers_(buffers) {
    plan_.offsets.assign(buffers.size(), 0);
    plan_.reused.assign(buffers.size(), -1);
    taken_.assign(buffers.size(), false);
  }

  void place(int i) {
    const BufferLife &b = buffers_[i];
    plan_.naive_bytes += aligned(b.bytes);
    if (b.bytes.same(0)) return;
    if (int victim = available_candidate(b); victim >= 0) {
      taken_[victim] = true;
      plan_.reused[i] = victim;
      plan_.offsets[i] = plan_.offsets[victim];
    } else {
      plan_.offsets[i] = first_fit(b);
    }
    placed_.push_back(i);
    // The arena is the highest end so far. Of symbolic sizes, an offset or an arena that
    // would be a max no range decides (each later offset would hold it, and the wrapper's
    // expressions grow with every buffer) is instead the top of the arena: the buffer goes
    // above every one placed, and the arena grows by its size.
    if (plan_.reused[i] >= 0) return;  // the buffer it takes over ends below the top
    SymInt end = plan_.offsets[i] + aligned(b.bytes), top = sym_max(plan_.arena_bytes, end);
    if (undecided(plan_.offsets[i]) || undecided(top)) {
      plan_.offsets[i] = plan_.arena_bytes;
      top = plan_.arena_bytes + aligned(b.bytes);
    }
    plan_.arena_bytes = top;
  }

  MemoryPlan take() { return std::move(plan_); }

 private:
  // Every candidate dies at b.def with b's size (checked); it is available unless an
  // earlier output of the same kernel already took it.
  int available_candidate(const BufferLife &b) const {
    for (int c : b.inplace_candidates)
      if (!taken_[c]) return c;
    return -1;
  }

  /// The lowest offset where `b` overlaps no buffer still live at its def step: the gaps
  /// between them in order of offset (at the sizes compiled for), the first where b fits at
  /// every size; else above them all.
  SymInt first_fit(const BufferLife &b) const {
    std::vector<std::pair<SymInt, SymInt>> busy;  // [begin, end) of live buffers
    for (int p : placed_)
      if (buffers_[p].last_use >= b.def) busy.emplace_back(plan_.offsets[p], plan_.offsets[p] + aligned(buffers_[p].bytes));
    std::stable_sort(busy.begin(), busy.end(), [](const auto &x, const auto &y) {
      return std::pair(x.first.hint(), x.second.hint()) < std::pair(y.first.hint(), y.second.hint());
    });
    SymInt size = aligned(b.bytes);
    SymInt offset = 0;
    // [offset, offset + size) clear of every busy range at every size; with numbers, of the
    // next one (offset is past the ends of those before it, the later ones begin after).
    auto fits = [&](size_t next) {
      if (!offset.symbolic() && !size.symbolic() && !busy[next].first.symbolic()) return known_le(offset + size, busy[next].first);
      return std::all_of(busy.begin(), busy.end(), [&](const auto &x) {
        return known_le(x.second, offset) || known_le(offset + size, x.first);
      });
    };
    for (size_t k = 0; k < busy.size(); ++k) {
      if (fits(k)) return offset;
      offset = sym_max(offset, busy[k].second);
    }
    return offset;  // past every end: the maximum of them
  }

  const std::vector<BufferLife> &buffers_;
  MemoryPlan plan_;
  std::vector<bool> taken_;  // per buffer: its storage was taken over in place
  std::vector<int> placed_;
};

std::string pad_right(const std::string &s, size_t width) { return s + std::string(width - s.size(), ' '); }
std::string pad_left(const std::string &s, size_t width) { return std::string(width - s.size(), ' ') + s; }

std::string live_range(const BufferLife &b) { return str_cat("live [", b.def, ", ", b.last_use, "]"); }

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLife> &buffers) {
  check_input(buffers);
  Planner planner(buffers);
  for (int i : kernel_order(buffers)) planner.place(i);
  return planner.take();
}

// buf1  4096 B  live [0, 2]  offset    0
// buf3  4096 B  live [2, 3]  offset    0  (in place of buf1)
// buf4    64 B  live [3, 4]  offset 4096
// arena 8256 B (naive 8256 B, 0% saved)
std::string str(const std::vector<BufferLife> &buffers, const MemoryPlan &plan) {
  COIL_ASSERT(plan.offsets.size() == buffers.size() && plan.reused.size() == buffers.size(),
              "a plan of ", plan.offsets.size(), " buffers printed with ", buffers.size());
  size_t name_w = 0, bytes_w = 0, live_w = 0, offset_w = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    name_w = std::max(name_w, buffers[i].name.size());
    bytes_w = std::max(bytes_w, str(buffers[i].bytes).size());
    live_w = std::max(live_w, live_range(buffers[i]).size());
    offset_w = std::max(offset_w, str(plan.offsets[i]).size());
  }
  std::string out;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLife &b = buffers[i];
    out += str_cat(pad_right(b.name, name_w), "  ", pad_left(str(b.bytes), bytes_w), " B  ", pad_right(live_range(b), live_w),
                   "  offset ", pad_left(str(plan.offsets[i]), offset_w));
    if (plan.reused[i] >= 0) out += str_cat("  (in place of ", buffers[plan.reused[i]].name, ")");
    out += "\n";
  }
  int64_t naive = plan.naive_bytes.hint(), arena = plan.arena_bytes.hint();
  int64_t saved = naive > 0 ? (naive - arena) * 100 / naive : 0;
  out += str_cat("arena ", plan.arena_bytes, " B (naive ", plan.naive_bytes, " B, ", saved, "% saved",
                 plan.arena_bytes.symbolic() ? " at the sizes compiled for" : "", ")\n");
  return out;
}

void specialize(std::vector<BufferLife> &buffers, MemoryPlan &plan, const std::map<std::string, int64_t> &values) {
  for (BufferLife &b : buffers) b.bytes = at_sizes(b.bytes, values);
  for (SymInt &o : plan.offsets) o = at_sizes(o, values);
  plan.arena_bytes = at_sizes(plan.arena_bytes, values);
  plan.naive_bytes = at_sizes(plan.naive_bytes, values);
}

}  // namespace coil::sched
