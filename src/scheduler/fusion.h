// Fusion: grouping the nodes of a Program into kernels (see scheduler.h for the kinds).
// Private to the scheduler; tests go through schedule().
#pragma once

#include <string>
#include <vector>

#include "ir/kernel.h"
#include "scheduler/scheduler.h"

namespace coil::sched {

/// A kernel being formed: its iteration space, its members (node indices, ascending)
/// and the passes of a row.
struct Group {
  ir::KernelKind kind = ir::KernelKind::Pointwise;
  SymShape ranges;
  SymShape reduction_ranges;
  std::vector<int> nodes;
  std::vector<ir::Step> steps;
  int scan_dim = -1;  // Scan groups: the dim every member scans along
};

/// A group per node.
std::vector<Group> singleton_groups(const ir::Program &p);

/// Fuses groups of `p` greedily, best saving first, rewriting member nodes of `p` into
/// their kernel's variables. Appends a line per fusion to `log` and the pairs still
/// apart at the end, with their reasons, to `rejected` (as group indices of the result).
struct PairRejection {
  int first, second;
  std::string reason;
};
std::vector<Group> fuse(ir::Program &p, std::vector<Group> groups, const ScheduleOptions &o,
                        std::vector<std::string> &log, std::vector<PairRejection> &rejected);

}  // namespace coil::sched
