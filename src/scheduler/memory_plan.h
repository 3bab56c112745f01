// Memory planning: where every intermediate buffer lives in one arena.
//
// The scheduler hands over each intermediate (a buffer written by one kernel and read by
// later ones, neither a graph input nor a graph output) with its size and its live range
// in kernel steps. plan_memory gives each one an offset in a single arena such that two
// buffers whose live ranges overlap never overlap in memory, reusing the space of dead
// buffers, and lets a kernel write its output over an input that dies in that very kernel
// when the scheduler says the kernel may (it reads each element before writing it, at the
// same index, and the sizes are equal).
//
// Sizes may be expressions of a graph's symbolic sizes: offsets are then expressions too,
// each evaluated once per call from the call's sizes. A buffer goes into a gap only where
// it fits at every size the graph serves (by the symbols' ranges), and above every live
// buffer otherwise; the plan is made at the sizes compiled for (their hints) and holds at
// all. Tests: tests/unit/memory_plan_test.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/sym_int.h"

namespace coil::sched {

/// Alignment of every buffer's offset in the arena (a cache line, and enough for any
/// vector load).
inline constexpr int64_t kArenaAlignment = 64;

/// `bytes` rounded up to kArenaAlignment.
inline SymInt aligned(const SymInt &bytes) {
  return sym_floor_div(bytes + (kArenaAlignment - 1), kArenaAlignment) * kArenaAlignment;
}

/// One intermediate as the planner sees it.
struct BufferLife {
  std::string name;   // buf3, for dumps
  SymInt bytes = 0;   // its allocation size
  int def = 0;        // the kernel step that writes it
  int last_use = 0;   // the last kernel step that reads it (>= def)
  /// Buffers (indices into the planner's input) whose storage this one may take over at
  /// step `def`: each dies at `def` (last_use == def), is read by that kernel only at the
  /// index it writes, and has the same byte size. The planner takes the first one that
  /// is still available; it never has to.
  std::vector<int> inplace_candidates;
};

struct MemoryPlan {
  SymShape offsets;             // per buffer, a multiple of kArenaAlignment
  std::vector<int> reused;      // per buffer: the buffer whose storage it took in place, or -1
  SymInt arena_bytes = 0;       // the peak: the arena's size
  SymInt naive_bytes = 0;       // the sum of all sizes (each rounded up to the alignment)
};

/// Plans `buffers` in one arena (first fit over free space, decided in kernel order: by
/// def step, ties by input order). A zero-byte buffer gets offset 0 and takes no space.
/// Input breaking the contract above (last_use < def, a candidate out of range, still
/// live after `def`, defined no earlier than this buffer or of another size) is an
/// InternalError: it is a scheduler bug.
MemoryPlan plan_memory(const std::vector<BufferLife> &buffers);

/// `plan` and its `buffers` at one call's sizes (every symbol of theirs in `values`).
void specialize(std::vector<BufferLife> &buffers, MemoryPlan &plan, const std::map<std::string, int64_t> &values);

/// Deterministic text: one line per buffer with its size, live range, offset and whether
/// it reused another in place; then the arena size against the naive sum.
std::string str(const std::vector<BufferLife> &buffers, const MemoryPlan &plan);

}  // namespace coil::sched
