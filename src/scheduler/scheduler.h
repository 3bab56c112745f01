// The scheduler: which nodes of a lowered Program run together, in which order, and
// where their buffers live (DESIGN.md, the pipeline's `scheduler` stage).
//
//   inline_pointwise   cheap pointwise nodes recomputed inside their consumers
//   fuse               nodes grouped into kernels, best saving first:
//                        vertical      a consumer with its producer, read at the point
//                                      that produced it
//                        reduction     pointwise producers into a reduction's pass, and
//                                      pointwise consumers over the same rows after it
//                        horizontal    independent nodes of one iteration space that
//                                      read the same buffers
//                      each pair left apart keeps the reason why
//   plan_memory        every stored intermediate placed in one arena
//
// Decisions are data (Schedule): the dumps and `coil compile --explain` print them.
// Tests: tests/unit/scheduler_test.cpp, tests/unit/kernel_count_test.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/kernel.h"
#include "scheduler/epilogue.h"
#include "scheduler/memory_plan.h"

namespace coil::sched {

struct ScheduleOptions {
  int64_t max_fusion_size = 64;
  bool horizontal = true;
  bool inline_pointwise = true;
  int64_t max_inline_reads = 8;
  bool emulate_precision_casts = false;
  /// Pointwise consumers of an extern call fused on as its epilogue (oneDNN post-ops on
  /// the CPU, cuBLASLt epilogues on the GPU).
  bool extern_epilogues = true;
  /// When set, an epilogue that match_epilogue takes must also pass this check of the
  /// library that will run it: "" when it can, else why not (the GPU's cuBLASLt takes a
  /// bias and relu or gelu; codegen::gpu_schedule_options sets it).
  std::function<std::string(const ir::Program &, const ir::Node &call, const Epilogue &)> epilogue_check;
  /// The graph pass passes::channels_last_convolutions runs before lowering (the driver
  /// reads this; option layout.channels_last_convolutions). Off by default: it takes cuDNN's
  /// layout conversions out of ResNet-50 on the GPU (1.3 of 5.5 ms), but coil's pointwise
  /// kernels iterate in the logical order of their sizes, not in memory order, and on
  /// channels-last values their accesses stop coalescing (the model went from 4.5 to 17 ms).
  bool channels_last_convolutions = false;

  /// The values of the options registry (src/support/options.h).
  static ScheduleOptions from_registry();
};

/// Two kernels the scheduler considered fusing and did not, and why, in words.
struct Rejection {
  std::string first, second;  // kernel names
  std::string reason;
};

struct Schedule {
  ir::ScheduledProgram ir;
  std::vector<std::string> inlined;    // "buf2 (relu) recomputed in buf4 (add)"
  std::vector<std::string> removed;    // dead nodes: "buf7 (getitem_3) is never read"
  std::vector<std::string> fusions;    // "kernel1: vertical fusion of add and mul saves 4.0 KiB"
  std::vector<Rejection> rejected;
  std::vector<BufferLife> lives;       // every stored intermediate
  std::vector<ir::BufferId> life_buffers;  // the buffer of each entry of `lives`
  MemoryPlan memory;
};

/// Recomputes cheap pointwise producers in their consumers (rewriting `p`); returns
/// one line per inlined node. Nodes inlined are removed from `p`.
std::vector<std::string> inline_pointwise(ir::Program &p, const ScheduleOptions &o);

/// Schedules a lowered program.
Schedule schedule(ir::Program p, const ScheduleOptions &o = {});

/// The memory plan of a schedule as memory_plan.txt prints it.
std::string memory_plan_str(const Schedule &s);

/// `coil compile --explain`: every kernel with its member nodes, every inlined node and
/// every fusion left undone with its reason.
std::string explain(const Schedule &s);

}  // namespace coil::sched
