// The wrapper of a generated translation unit: where each buffer lives at run time, the
// tensor descriptors and the entry points of coil/artifact.h (runtime/include/coil).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/common/writer.h"
#include "scheduler/scheduler.h"
#include "support/vectors.h"

namespace coil::codegen {

/// Where each buffer lives at run time, as the wrapper names it.
struct Storage {
  std::map<ir::BufferId, std::string> where;  // C++ expression of the buffer's base pointer (char*)
  std::map<ir::BufferId, std::string> key;    // equal keys: the same memory (in-place reuse)
  std::set<ir::BufferId> in_arena;            // at a 64-byte aligned offset of the module's arena
};


/// Inputs from the caller, outputs the caller owns, intermediates in the arena.
Storage place_buffers(const sched::Schedule &s);

/// A kernel as the wrapper calls it: its function, then its buffers and symbolic sizes.
struct KernelCall {
  std::string name;
  std::vector<ir::BufferId> buffers;
  std::vector<std::string> symbols;
};

/// Descriptors, the graph's symbolic sizes and the checks on them, the arena pool and the C
/// entry points, calling the kernels of `calls` in order. With `profile` (the option
/// cpp.profile) each call is timed and coil_profile reports the times (coil/artifact.h).
void emit_wrapper(const sched::Schedule &s, const Storage &st, const std::vector<KernelCall> &calls, bool profile,
                  Writer &w);

}  // namespace coil::codegen
