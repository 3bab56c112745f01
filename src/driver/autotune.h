// Autotuning of Triton kernels (option triton.autotune): for each schedule kernel worth
// tuning, every config of codegen::tuning_configs() is generated, compiled (all of them in
// one build_triton_kernels run) and timed on the current GPU with CUDA events; the fastest
// is kept. Winners are cached (<cache>/autotune/, decision 9) by the default config's
// kernel sources, the candidates, the GPU's name and capability, Triton's and coil's
// versions: a second compile of the same graph on the same GPU model times nothing.
//
// A schedule of symbolic sizes is tuned per size bucket: a kernel of one plan at the sizes
// compiled for, each variant of a kernel of several (codegen::plan_variants) at sizes inside
// its bucket (its size at the bucket's top), cached under those sizes and returned under the
// variant's name (`kernel4_upto256`), so that each bucket runs its own winner.
//
// Timing runs each candidate's launches (two for a split reduction) on device buffers of the
// kernel's own, zero-filled: the memory a kernel moves does not depend on the values, and
// zero indices are always in range. A candidate must beat the default by 2% to replace it,
// so that noise does not change the generated code from one compile to the next.
// Tests: tests/gpu/program_test.cpp (a GPU); every candidate's code under the interpreter
// in tests/unit/triton_test.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/triton/triton_codegen.h"
#include "scheduler/scheduler.h"

namespace coil {

/// What tuning decided for one schedule kernel.
struct TunedKernel {
  std::string kernel;            // the schedule kernel (kernel3)
  codegen::TritonConfig winner;  // every field set
  int candidates = 0;
  double winner_ms = 0;   // per call, as timed (0 when read from the cache)
  double default_ms = 0;  // the default config's time
  bool cache_hit = false;

  /// "kernel3: 8 configs, block0=1 block1=4096 warps=16 stages=1 split=1 at 21.4 us (default 24.0 us)"
  std::string describe() const;
};

/// Tunes every schedule kernel of `s` with more than one candidate, on the current GPU (a
/// UserError when there is none); a schedule of symbolic sizes per size bucket (above).
/// Returns the winners by schedule kernel or variant, to go in TritonOptions::configs;
/// `report` (optional) gets one entry per tuned kernel or variant. While it runs, a progress
/// line on stderr when stderr is a terminal.
std::map<std::string, codegen::TritonConfig> autotune_triton(const sched::Schedule &s,
                                                             std::vector<TunedKernel> *report = nullptr);

}  // namespace coil
