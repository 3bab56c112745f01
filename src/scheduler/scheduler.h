// The scheduler: which nodes of a lowered Program run together, in which order, and
// where their buffers live (DESIGN.md, the pipeline's `scheduler` stage).
//
//   inline_pointwise   cheap pointwise nodes recomputed inside their consumers
//   order_loops        a node's outer loops in its output's memory order
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
#include <map>
#include <string>
#include <vector>

#include "ir/kernel.h"
#include "scheduler/epilogue.h"
#include "scheduler/memory_plan.h"

namespace coil::sched {

struct ScheduleOptions {
  int64_t max_fusion_size = 64;
  bool horizontal = true;
  /// Horizontal fusion that saves little traffic stops where the kernel would stream more
  /// buffers of 1 MiB or more than this at once (a CPU core's prefetchers follow some
  /// sixteen streams: AdamW's updates of sixteen GPT-2 weights in one loop ran 2.5x slower
  /// per element than one weight's); 0: no limit. The GPU's kernels take the same limit:
  /// GPT-2's AdamW step of 148 tensors on an H100 took 3.17 ms unlimited, 2.44 ms at 16.
  int64_t max_streams = 16;
  bool inline_pointwise = true;
  int64_t max_inline_reads = 8;
  /// A reduction kernel walks each row again for the values that need the row's reduced
  /// ones (a normalization after its statistics) in the same programs, one per row or per
  /// block of rows. Where that kernel would run in fewer programs than this (as
  /// `reduction_programs` counts them) over 2^21 elements or more, the second walk runs as
  /// a kernel of its own, and the reduction alone can be split across programs: on a GPU,
  /// 64 channels of a channels-last batch norm ran in one program (ResNet-50's training
  /// step, 22 ms for one kernel). 0: no limit (the CPU's threads share rows);
  /// codegen::gpu_schedule_options sets both.
  int64_t min_programs_for_second_pass = 0;
  /// The programs an unsplit reduction kernel of `rows` rows of `rn` elements runs in, its
  /// rows side by side in memory (ir::reads_rows_side_by_side) or not.
  std::function<int64_t(int64_t rows, int64_t rn, bool side_by_side)> reduction_programs;
  /// order_loops: outer loops in their output's memory order, not its logical order.
  bool memory_order_loops = true;
  bool emulate_precision_casts = false;
  /// Pointwise consumers of an extern call fused on as its epilogue (oneDNN post-ops on
  /// the CPU, cuBLASLt epilogues on the GPU).
  bool extern_epilogues = true;
  /// When set, an epilogue that match_epilogue takes must also pass this check of the
  /// library that will run it: "" when it can, else why not (the GPU's cuBLASLt takes a
  /// bias and relu or gelu; codegen::gpu_schedule_options sets it).
  std::function<std::string(const ir::Program &, const ir::Node &call, const Epilogue &)> epilogue_check;
  /// The graph pass passes::channels_last_convolutions runs before lowering (the driver
  /// reads this; option layout.channels_last_convolutions): it takes cuDNN's layout
  /// conversions out of a channels-last model on the GPU (1.3 of ResNet-50's 5.5 ms), and
  /// order_loops keeps the kernels between the convolutions walking memory in order.
  bool channels_last_convolutions = true;

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
  std::vector<std::string> reordered;  // "buf3 (relu): loops over dims [0, 2, 3, 1] of strides ..."
  std::vector<std::string> fusions;    // "kernel1: vertical fusion of add and mul saves 4.0 KiB"
  std::vector<Rejection> rejected;
  std::vector<BufferLife> lives;       // every stored intermediate
  std::vector<ir::BufferId> life_buffers;  // the buffer of each entry of `lives`
  MemoryPlan memory;
};

/// Recomputes cheap pointwise producers in their consumers (rewriting `p`); returns
/// one line per inlined node. Nodes inlined are removed from `p`.
std::vector<std::string> inline_pointwise(ir::Program &p, const ScheduleOptions &o);

/// Puts the outer loops of every pointwise and reduction node whose output is laid out in
/// another order than its logical one in that memory order (outermost the largest stride);
/// returns one line per node reordered (src/scheduler/loop_order.cpp).
std::vector<std::string> order_loops(ir::Program &p, const ScheduleOptions &o);

/// Schedules a lowered program: schedule_kernels, then plan_memory.
Schedule schedule(ir::Program p, const ScheduleOptions &o = {});

/// The kernels of a lowered program (every stage above but the memory plan). A program of
/// symbolic sizes keeps them: fusion decides by the sizes' expressions (never by their
/// values: it guards nothing) and its heuristics by their hints.
Schedule schedule_kernels(ir::Program p, const ScheduleOptions &o = {});

/// Places the stored intermediates of `s` (its kernels scheduled) in one arena: s.lives,
/// s.memory, offsets in the program's symbolic sizes where it has them.
void plan_memory(Schedule &s);

/// `s` at one call's sizes (every symbol of it in `values`): its program, kernels and
/// memory plan (ir/specialize.h).
void specialize(Schedule &s, const std::map<std::string, int64_t> &values);

/// The graph inputs (indices into program.inputs) over whose memory the computed buffer `b`
/// may be written in place of its own: `b` has the input's dtype, sizes and strides and is
/// stored by one loop-nest kernel, which reads the input only at the element it stores,
/// before storing it (as the memory plan reuses a dying buffer); no later kernel reads the
/// input. A caller that updates an input with a graph output (a compiled optimizer step's
/// parameters) then passes the input's memory for that output and copies nothing.
std::vector<int> inputs_writable_by(const ir::ScheduledProgram &s, ir::BufferId b);

/// The memory plan of a schedule as memory_plan.txt prints it.
std::string memory_plan_str(const Schedule &s);

/// `coil compile --explain`: every kernel with its member nodes, every inlined node and
/// every fusion left undone with its reason.
std::string explain(const Schedule &s);

}  // namespace coil::sched
