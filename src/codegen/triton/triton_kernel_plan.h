// The Triton dialect's plans (DESIGN.md, decision 17): how each kernel of a schedule maps
// onto program blocks, decided before anything is printed: the strategy (blocks, tiles,
// persistent, looped, rows side by side, split), the block sizes, warps, pipeline stages
// and the programs per row of a split reduction. The emitter (triton_kernel.h) prints a
// kernel from its plan; the autotuner times the plans tuning_plans() enumerates. Printed
// as kernel_plans.txt. A kernel of symbolic sizes is planned per size bucket: the size its
// plan follows (a reduction's row, else its rows; a pointwise kernel's elements) is cut into
// ranges, each planned at its top, and a variant of the kernel is generated per distinct
// plan, launched where the call's size falls in its range (plan_variants). Tests:
// tests/unit/triton_test.cpp (TritonPlan*).
#pragma once

#include <algorithm>
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
  std::string variant;  // a kernel of several size buckets: its bucket's, "upto256", "above4096"; else ""
  TritonStrategy strategy = TritonStrategy::Blocks;
  int64_t block0 = 0;  // XBLOCK (YBLOCK of a tile)
  int64_t block1 = 0;  // RBLOCK (XBLOCK of a tile); 0 for blocks
  int warps = 0;
  int stages = 1;
  int64_t split = 0;   // reductions: programs per row (1: unsplit); 0 for other kernels
  /// The variant launched only where every size the kernel takes is a multiple of 16
  /// (aligned_variants): Triton is told so, and vectorizes loads and masks along them.
  bool sizes_by_16 = false;

  /// The plan as the autotuner and TritonOptions::configs name it.
  TritonConfig config() const;
};

/// The numbers a kernel is planned by: its elements, its rows (the elements kept by a
/// reduction), the elements a row reduces (1 for pointwise) and its last dim.
struct KernelExtent {
  int64_t numel = 0, rows = 0, rn = 1, last = 1;
  /// The elements the kernel walks: a reduction's rows times its row, else its elements.
  int64_t elements() const { return std::max(numel, rows * rn); }
};

/// From this many elements on (KernelExtent::elements) a kernel is memory's, not launch
/// latency's: its configs are worth timing (tuning_plans) and its symbolic variants a twin
/// for sizes of multiples of 16 (aligned_variants).
constexpr int64_t kManyElements = int64_t(1) << 16;

/// `k`'s extent at the sizes compiled for (the hints).
KernelExtent extent_at_hints(const ir::Kernel &k);

/// The plan of kernel `k` at extent `e` (at the hints when none): the dialect's choices,
/// with every field `o.configs` sets for the kernel taken from there (by the kernel's name,
/// for every variant, or by a variant's, `kernel3_upto64`, for that one alone).
TritonKernelPlan plan_triton_kernel(const ir::Program &p, const ir::Kernel &k, const TritonOptions &o,
                                    const std::optional<KernelExtent> &e = std::nullopt);

/// A plan and the sizes it serves: every size (`only_if` empty), or those where each
/// guard of `only_if` holds (`s0 - 64 <= 0`, `64 - s0 < 0`: the bucket (64, 4096]).
struct TritonVariant {
  TritonKernelPlan plan;
  std::vector<SizeGuard> only_if;
  KernelExtent extent;  // what it was planned at: the top of its bucket, or the hints
  /// The bucket, for a kernel of several: the size it follows and its ends (lo, hi], each
  /// absent where the bucket is open on that side (what only_if states).
  SymInt size;
  std::optional<int64_t> lo, hi;
};

/// The plans kernel `k` is generated with, one per size bucket. The size its plan follows
/// (a reduction's row length when symbolic, else its rows; a pointwise kernel's elements)
/// is cut at the sizes compiled for and at 16, 256, 4096, 65536 and 2^20 (past its range's
/// ends the cuts drop); each range is planned at its top (the last at 2^24), and neighbouring
/// ranges of one plan are merged. A kernel of numbers, or whose plan is the same at every
/// cut, has one variant serving every size; the host picks by comparing the call's size.
std::vector<TritonVariant> plan_variants(const ir::Program &p, const ir::Kernel &k, const TritonOptions &o);

/// `variants` of kernel `k`, each that moves 2^16 elements or more (at the extent it was
/// planned at) in two where `k` takes symbolic sizes: a twin launched where every one of
/// them is a multiple of 16 (`sizes_by_16`, named `_by16`; its guard `s0 % 16 + s1 % 16 == 0`)
/// and the variant where one is not. At static sizes Triton sees the numbers and aligns its
/// loads itself; a size it takes as an argument it must be told divides by 16, or every
/// load along it (`x0 + r0*s1`) and every mask by it (`x0 < s0`) is scalar. Same plan and
/// config (the autotuner tunes the bucket once); only the promise differs.
std::vector<TritonVariant> aligned_variants(const ir::Program &p, const ir::Kernel &k, std::vector<TritonVariant> variants);

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
