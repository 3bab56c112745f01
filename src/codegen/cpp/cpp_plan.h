// The C++ dialect's plans (DESIGN.md, decision 17): how each kernel of a schedule runs,
// decided before anything is printed. The planner looks at a kernel's loops and loads and
// decides the strategy (vector loops over rows, transposed tiles, rows on threads, a row
// split across threads, rows side by side in lanes), the lanes of each vector loop, the
// values kept in row buffers between passes and the outputs prefaulted ahead of their
// writes; the emitter (cpp_kernel.h) prints a kernel from its plan and decides nothing.
// Plans are printed (`kernel_plans.txt` under COIL_TRACE, `coil compile --explain`),
// overridable per kernel (the option cpp.plan), and part of the cache key through the
// source they produce. Tests: tests/unit/cpp_plan_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_codegen.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "ir/kernel.h"

namespace coil::codegen {

enum class CppStrategy {
  Rows,              // pointwise: threads over the outer loops, the innermost in vectors
  TransposedTiles,   // pointwise: 32x32 tiles of the last two dims, a load walking them transposed
  RowsOnThreads,     // reduction: a row per thread, each pass over it in vectors
  SplitRow,          // reduction to one row: the reduced elements split across threads
  LanesOverKeptDim,  // reduction: neighbouring rows side by side in the lanes of a block
  Scan,              // rows on threads, each scanned in order
  Scatter,           // the copy, then the writes in order
  Extern,            // a library call (cpp_extern.cpp)
};

/// The name of a strategy in plans and in the option cpp.plan: "rows", "transposed_tiles", ...
const char *strategy_name(CppStrategy s);

/// A load of a kernel: node `node` of the program, instruction `instr` of its body.
struct CppLoadRef {
  int node = 0;
  int instr = 0;
};

/// One pass of a reduction kernel over the reduced elements (a step with reductions).
struct CppPassPlan {
  int step = 0;       // the kernel's step, from 0
  int lanes = 0;      // lanes of its vector loop; 0: scalar code under omp simd
  bool split = false; // SplitRow: its elements in chunks on threads, partials merged in order
  std::string scalar_reason;  // why it has no vector form, when it has none
  std::string scalar_origin;  // the reduction that has none
};

/// A costly value that two passes over a row compute alike (softmax's exp(x - max)): the
/// earlier pass writes it to a row buffer on the thread's stack, the later ones read it.
struct CppRowCache {
  std::string key;   // the value's structural key (structural_keys)
  int step = 0;      // the pass that computes and writes it, from 1
  std::string name;  // the row buffer: row_value0, ...
  DType dtype = DType::F32;
  int64_t size = 0;  // elements of a row; of a symbolic row, the most it holds
  /// The row's length when symbolic: the kernel keeps its rows in the buffers where they
  /// fit (at most `size` elements) and computes the values again in longer ones.
  std::optional<SymInt> row;
};

struct CppKernelPlan {
  std::string kernel;  // kernel0
  ir::KernelKind kind = ir::KernelKind::Pointwise;
  CppStrategy strategy = CppStrategy::Rows;
  int register_lanes = 0;  // floats in a register of the ISA (or cpp.vector_lanes); 0: no vectors
  // The innermost loop that runs in vectors: of the kernel's ranges (pointwise), of the
  // reduced ranges (reductions); lanes 0 when it runs in scalar code.
  std::string vector_var;  // x1, r0; empty when every dim has one element
  int64_t vector_size = 0;
  int lanes = 0;
  // TransposedTiles: the tile's edge, the lanes along a tile's rows (0: scalar tiles) and
  // the loads copied into tiles of their own first. LanesOverKeptDim: `tile` rows side by side.
  int64_t tile = 0;
  int tile_lanes = 0;
  bool tile_edges = false;  // the last two dims are not whole tiles: edge tiles in scalar code
  std::vector<CppLoadRef> transposed;
  std::vector<CppPassPlan> passes;     // reductions
  std::vector<CppRowCache> row_cache;  // RowsOnThreads
  std::vector<ir::BufferId> prefault;  // graph outputs each thread faults in ahead of its writes
  std::string library;                 // Extern: the library and how it is called, in words
  std::vector<std::string> overridden; // fields that the option cpp.plan set, "lanes=4"
};

/// The plan of one kernel with the dialect's own choices.
CppKernelPlan plan_cpp_kernel(const ir::Program &p, const ir::Kernel &k, const Storage &storage, const CppOptions &o);

/// The plans of every kernel of `s`, in order, with the overrides of `overrides` applied
/// (the option cpp.plan: "kernel0.lanes=4,kernel2.strategy=rows_on_threads"). A UserError
/// names an override that names no kernel, no field, or a choice the kernel cannot take.
std::vector<CppKernelPlan> plan_cpp(const sched::Schedule &s, const CppOptions &o, const std::string &overrides = "");

/// How a plan runs its kernel, in words: the `// layout:` line of the kernel's function
/// and `--explain`'s line.
std::string describe(const CppKernelPlan &plan);

/// Every plan as text, a block per kernel (the dump kernel_plans.txt).
std::string plans_str(const std::vector<CppKernelPlan> &plans, const sched::Schedule &s);

/// A key per value of `body` that is equal for values computed alike from the same memory:
/// loads by buffer and index, ops by op, dtype and operands. Loads through indices read
/// from data, or under a mask, get a key no other value shares.
std::vector<std::string> structural_keys(const ir::Program &p, const ir::Body &body, const ir::Ranges &ranges);

}  // namespace coil::codegen
