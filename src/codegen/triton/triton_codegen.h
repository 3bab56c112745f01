// The Triton dialect (DESIGN.md, decisions 6 and 8): one @triton.jit kernel per loop-nest
// kernel of a schedule, and the host program that launches them, in order, on buffers
// that live in the caller's inputs and outputs or in one device arena.
//
//   @triton.jit
//   def kernel0(in_ptr0, out_ptr0, XBLOCK: tl.constexpr):
//       xoffset = tl.program_id(0) * XBLOCK
//       xindex = xoffset + tl.arange(0, XBLOCK)
//       xmask = xindex < 1000
//       x0 = xindex
//       tmp0 = tl.load(in_ptr0 + (x0), xmask)
//       ...
//
// Pointwise kernels cover their elements with blocks of XBLOCK (YBLOCK x XBLOCK tiles when
// a load walks the last two dims transposed); reductions keep a row in one program
// (persistent), loop over it in RBLOCK steps (looped), or split it across programs whose
// partial results a second kernel combines (split). Sizes are literals: a kernel is
// generated for one shape. What the dialect decided for each kernel is recorded in
// `GpuKernel::attrs` (and printed in its source's header comment).
// Tests: tests/unit/triton_test.cpp, tests/golden/, the fixtures under --interpret.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/gpu/extern_plan.h"
#include "codegen/triton/triton_request.h"
#include "graph/sym_int.h"
#include "scheduler/epilogue.h"
#include "scheduler/scheduler.h"

namespace coil::codegen {

/// One generated Triton kernel: its module source and how it is compiled.
struct GpuKernel {
  std::string name;    // the @triton.jit function and the stem of its files: kernel0, kernel3_partials
  std::string source;  // a Python module: imports, helpers, the kernel
  std::vector<TritonArg> signature;                 // pointer args ("*fp32", ...), sizes ("i32"), then constexprs
  std::vector<std::string> sizes;                   // the symbols it takes, in signature order: s0, s1
  bool sizes_by_16 = false;  // launched only where each of `sizes` is a multiple of 16 (aligned_variants)
  std::map<std::string, TritonConstant> constexprs;  // XBLOCK, RBLOCK, ...
  int num_warps = 4;
  int num_stages = 1;
  std::array<SymInt, 3> grid = {1, 1, 1};  // programs along program_id(0), (1), (2)
  std::map<std::string, std::string> attrs;  // the dialect's decisions, in words
};

/// Where a buffer lives on the device.
struct GpuPlace {
  enum class Kind : uint8_t { Input, Output, Arena, Scratch } kind = Kind::Arena;
  int index = -1;       // Input: the graph input; Output: the graph output
  SymInt offset = 0;    // Arena, Scratch: the byte offset in the device arena
};

/// One step of the host program: a Triton launch, or an extern call.
struct GpuStep {
  enum class Kind : uint8_t { Launch, Extern } kind = Kind::Launch;
  int kernel = -1;  // Launch: index into GpuProgram::kernels
  /// Launch: the buffer behind each pointer argument, in signature order. A Scratch
  /// buffer (partial results of a split reduction) has an id past the program's buffers.
  std::vector<int> args;
  /// Launch: runs only at sizes where each of these holds (`16 - s0 < 0`, `s0 - 256 <= 0`):
  /// one of a kernel's variants, each launched in its size bucket (plan_variants).
  std::vector<SizeGuard> only_if;
  int node = -1;    // Extern: the node of the call in the program
  std::string schedule_kernel;  // the scheduler's kernel this step belongs to
  /// Extern: the post-ops fused onto the call (codegen/gpu/gpu_epilogue.h); the step then
  /// writes epilogue->out, and the call's own output is never stored.
  std::optional<sched::Epilogue> epilogue;
  /// Extern: how the call runs (library, layouts, epilogue, workspace), planned here at
  /// compile time; the runtime prepares it once at load (runtime/cuda_extern.h). None for
  /// a call of symbolic sizes, planned by what runs it at a call's sizes.
  std::optional<GpuExternPlan> extern_plan;

  const sched::Epilogue *epilogue_or_null() const { return epilogue ? &*epilogue : nullptr; }
};

/// A schedule as the GPU runs it.
struct GpuProgram {
  std::vector<GpuKernel> kernels;
  std::vector<GpuStep> steps;
  /// Every buffer the steps touch, by id (program buffers first, then scratch buffers).
  std::map<int, GpuPlace> places;
  std::map<int, std::string> scratch_names;  // scratch id -> name (kernel3_partials)
  std::map<int, DType> scratch_dtypes;
  std::map<int, SymInt> scratch_elements;
  SymInt arena_bytes = 0;
  /// Each kernel's plan (triton_kernel_plan.h), then each extern call's
  /// (codegen/gpu/extern_plan.h), as kernel_plans.txt shows them.
  std::string plans;
};

/// How one schedule kernel runs: its block sizes, warps, pipeline stages and, for a split
/// reduction, the programs per row. 0 leaves a field to the dialect's default; the
/// autotuner (driver/autotune.h) picks among tuning_configs().
struct TritonConfig {
  int64_t block0 = 0;  // XBLOCK (YBLOCK of a tile)
  int64_t block1 = 0;  // RBLOCK (XBLOCK of a tile)
  int num_warps = 0;
  int num_stages = 0;
  int64_t split = 0;   // programs that share a row of a reduction: 1 for none

  /// "XBLOCK=64 RBLOCK=64 warps=4 stages=1 split=16", the fields set only.
  std::string str() const;
  bool operator==(const TritonConfig &) const = default;
};

/// The config `str()` printed; a UserError naming `origin` on anything else.
TritonConfig parse_triton_config(std::string_view text, std::string_view origin);

struct TritonOptions {
  int64_t max_persistent_rblock = 4096;  // longer rows are looped (or split)
  /// Per schedule kernel (by name): the config to generate it with instead of the defaults.
  std::map<std::string, TritonConfig> configs;
};

/// The kernels and host program of `s` on the GPU. Extern calls stay steps of their own,
/// with the epilogue the scheduler fused onto them (schedule with gpu_schedule_options()).
GpuProgram generate_triton(const sched::Schedule &s, const TritonOptions &o = {});

/// `g`, generated from a schedule of symbolic sizes, at one call's sizes: `at` is that
/// schedule specialized to `values` (sched::specialize), which name every symbol. Grids,
/// places, scratch and the arena are integers; a kernel's variant stays only where its
/// `only_if` holds; each extern call is planned for its library at these sizes. The
/// kernels are the same (their code takes the sizes as arguments, GpuKernel::sizes):
/// what runs the program passes each kernel the values of its symbols.
GpuProgram at_sizes(const GpuProgram &g, const sched::Schedule &at, const std::map<std::string, int64_t> &values);

/// The configs worth timing for schedule kernel `kernel` of `s`, each with every field it
/// decides set: first the one generate_triton(s, o) uses (o's config for the kernel, else
/// the dialect's default), then up to 9 more. The first alone for kernels not worth tuning:
/// those under 2^16 elements, scans, scatters, extern calls.
std::vector<TritonConfig> tuning_configs(const sched::Schedule &s, const std::string &kernel, const TritonOptions &o = {});

/// The host program as JSON (DIR/launch_plan.json of `coil compile --device cuda`), read by
/// python/coil_triton/run_plan.py: buffers with their places, inputs and outputs with their
/// views, and the steps with their grids and arguments.
std::string launch_plan_json(const sched::Schedule &s, const GpuProgram &g);

/// Whether schedule kernel `k` is an attention call, which the dialect generates as a
/// kernel of its own (triton_attention.h) rather than calling a library.
bool is_attention(const ir::Program &p, const ir::Kernel &k);

/// The compile requests of every kernel (for runtime/triton_build.h).
std::vector<TritonCompileRequest> compile_requests(const GpuProgram &g);

}  // namespace coil::codegen
