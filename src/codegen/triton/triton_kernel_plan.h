// The Triton dialect's plans (DESIGN.md, decision 17): how each kernel of a schedule maps
// onto program blocks, decided before anything is printed: the strategy (blocks, tiles,
// persistent, looped, rows side by side, split), the block sizes, warps, pipeline stages
// and the programs per row of a split reduction. The emitter (triton_kernel.h) prints a
// kernel from its plan; the autotuner times the plans tuning_plans() enumerates. Printed
// as kernel_plans.txt. Sizes are decided at the hints (the sizes compiled for) of a
// schedule of symbolic sizes; a plan that holds only at some sizes (a persistent row) comes
// with a variant for the rest (plan_variants). Tests: tests/unit/triton_test.cpp (TritonPlan*).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/triton/triton_codegen.h"
#include "ir/kernel.h"

namespace coil::codegen {

enum class TritonStrategy {
  Blocks,        // pointwise: blocks of XBLOCK elements
  Tiles,         // pointwise: YBLOCK x XBLOCK tiles of the last two dims (a load walks them transposed)
  Persistent,    // reduction: RBLOCK holds a whole row, XBLOCK rows per program
  Looped,        // reduction: a row per program, walked in steps of RBLOCK
  Columns,       // reduction: XBLOCK neighbouring rows side by side, RBLOCK reduced elements per step
  SplitRows,     // reduction: `split` programs per row each reduce a chunk; a second kernel combines
  SplitColumns,  // the same for blocks of rows side by side
  Scan,          // rows scanned in steps of RBLOCK with a carry
  Scatter,       // the copy, then the writes
};

const char *strategy_name(TritonStrategy s);

struct TritonKernelPlan {
  std::string kernel;  // the schedule's kernel: kernel0
  std::string variant;  // "" for the kernel's plan; "looped" for its variant at other sizes
  TritonStrategy strategy = TritonStrategy::Blocks;
  int64_t block0 = 0;  // XBLOCK (YBLOCK of a tile)
  int64_t block1 = 0;  // RBLOCK (XBLOCK of a tile); 0 for blocks
  int warps = 0;
  int stages = 1;
  int64_t split = 0;   // reductions: programs per row (1: unsplit); 0 for other kernels

  /// The plan as the autotuner and TritonOptions::configs name it.
  TritonConfig config() const;
};

/// The plan of kernel `k`: the dialect's choices, with every field `o.configs` sets for
/// the kernel taken from there.
TritonKernelPlan plan_triton_kernel(const ir::Program &p, const ir::Kernel &k, const TritonOptions &o);

/// A plan and the sizes it serves: all (no condition), or those where `only_if` holds.
struct TritonVariant {
  TritonKernelPlan plan;
  std::optional<SizeGuard> only_if;
};

/// The plans kernel `k` is generated with: plan_triton_kernel's alone, or, for a persistent
/// reduction whose row may be longer than its RBLOCK at other sizes, that plan where the
/// row fits and a looped plan where it does not (the host picks by the call's sizes).
std::vector<TritonVariant> plan_variants(const ir::Program &p, const ir::Kernel &k, const TritonOptions &o);

/// The plans worth timing for kernel `k`, `plan` first, then up to 9 more of its strategy
/// (none for kernels under 2^16 elements, scans and scatters).
std::vector<TritonKernelPlan> tuning_plans(const ir::Program &p, const ir::Kernel &k, const TritonKernelPlan &plan,
                                           const TritonOptions &o);

/// The rows one program of an unsplit reduction holds by default: a block of up to 64 rows
/// side by side (Columns), or as many rows as fill 1,024 elements (Persistent; a Looped
/// plan's row of more than 1,024 is one). The scheduler counts programs by it
/// (gpu_schedule_options).
int64_t default_rows_per_program(int64_t rows, int64_t rn, bool side_by_side);

/// Every plan as text, a line per kernel and variant (kernel_plans.txt of the GPU).
std::string plans_str(const std::vector<TritonVariant> &plans);

}  // namespace coil::codegen
