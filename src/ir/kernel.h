// The loop IR after scheduling: nodes grouped into kernels.
//
// A kernel is one loop nest launched once per call of the graph. Its iteration space is
// `ranges` (the outer points: one row of a reduction, or one element of a pointwise
// kernel) times `reduction_ranges` (empty for a pointwise kernel). Every member node was
// rewritten by the scheduler into the kernel's variables, so x0..x{n-1} are the outer
// variables and x{n}.. (a Reduction's r0..) the inner ones in every member:
//   - a Reduction member has ranges = kernel ranges, reduction_ranges = the kernel's;
//   - an inner Pointwise member has ranges and reduction_ranges = the kernel's: it runs
//     at every point of both, storing at each (a Pointwise node with reduction ranges
//     exists only inside a kernel);
//   - an outer Pointwise member has ranges = kernel ranges: it runs once per row, after
//     the reductions it reads.
// A row runs `steps` in order: an inner step is one pass over the reduction ranges
// running its members at each point, an outer step runs its members once. A value
// produced by one member and read by another in the same kernel is read at the very
// point that produced it (same row, and same inner point when both are inner members of
// one step), so a buffer whose readers are all in the kernel never reaches memory: it is
// `internal`. Scan and Scatter nodes are kernels of one node each. An Extern kernel is
// its call, then the pointwise nodes of its epilogue (scheduler/epilogue.h), each in the
// call's variables and reading the value before it: the library applies them to each
// element of its result as post-ops, so every value but the last is internal.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace coil::ir {

enum class KernelKind : uint8_t { Pointwise, Reduction, Scan, Extern, Scatter };
std::string_view kernel_kind_name(KernelKind k);

/// One pass of a row: over the reduction ranges (inner) or once (outer).
struct Step {
  bool inner = true;
  std::vector<int> nodes;  // node indices, in execution order
};

struct Kernel {
  std::string name;  // kernel0, kernel1, ... in execution order
  KernelKind kind = KernelKind::Pointwise;
  SymShape ranges;  // symbolic where the program is
  SymShape reduction_ranges;
  std::vector<int> nodes;         // every member, in execution order
  std::vector<Step> steps;        // Pointwise and Reduction kernels
  std::vector<BufferId> stores;   // outputs written to memory
  std::vector<BufferId> internal; // outputs that stay in the kernel
  /// Decisions the scheduler made for the kernel, printed in dumps (`post_ops`: an extern
  /// call's epilogue). The dialects' decisions are their plans, made after the schedule
  /// (codegen/cpp/cpp_plan.h, codegen/triton/triton_kernel_plan.h; kernel_plans.txt).
  std::map<std::string, std::string> attrs;

  bool is_loop_nest() const { return kind == KernelKind::Pointwise || kind == KernelKind::Reduction; }
  /// The index of the one step that passes over the reduction ranges, when exactly one does
  /// (a split reduction's pass, which its programs share out).
  std::optional<size_t> only_pass() const;
};

/// What kernel `k` computes, in one line: "reduction over [64, 1] reducing [256]: amax, sub, exp, sum".
std::string kernel_summary(const Program &p, const Kernel &k);

/// A Program whose nodes run as `kernels`, in order. Nodes that belong to no kernel were
/// inlined into their consumers and never run.
struct ScheduledProgram {
  Program program;
  std::vector<Kernel> kernels;

  /// Whether buffer `b` lives in memory (an input, a constant, or a stored output).
  bool in_memory(BufferId b) const;
};

/// A ScheduledProgram that runs every node of `p` as a kernel of its own.
ScheduledProgram unfused(Program p);

/// Deterministic text: each kernel with its iteration space, steps and members (each
/// member as str(Program) prints a node), its stores and internal buffers.
std::string str(const ScheduledProgram &s);

}  // namespace coil::ir
