// A graph of symbolic sizes on the GPU: its Triton kernels compiled and loaded once (their
// code takes the sizes as arguments), and one CudaProgram per size it is called at: the
// host program at those sizes (grids, arena offsets, the variant of each kernel that serves
// them), extern calls planned for their libraries there, the arena and, with the option
// triton.cudagraphs, its CUDA graph. A program is set up at the first call of its sizes and
// kept among the triton.sizes_kept sizes called last; one called again after it was
// dropped is set up again (no compile: the kernels stay loaded). A graph without symbols
// has one program, made at load.
//
// A call finds its sizes' program by comparing integers (no allocation, no string); only
// setting one up specializes the schedule. The guards of the graph are the caller's to
// check before asking for sizes it has not seen (driver/api.cpp).
// Tests: tests/gpu/program_test.cpp, tests/gpu/device_io_test.cpp (a GPU).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda_program.h"

namespace coil {

class CudaPrograms {
 public:
  /// `s` and `gpu` as compiled (symbolic sizes or not), `binaries` their kernels' cubins;
  /// `symbols` names the sizes a call gives, in order. Loads the kernels; without symbols,
  /// sets up the one program.
  CudaPrograms(sched::Schedule s, codegen::GpuProgram gpu, const std::vector<TritonBinary> &binaries,
               std::vector<std::string> symbols);

  /// The program at `sizes` (one value per symbol), when one is set up; else null.
  std::shared_ptr<const CudaProgram> find(std::span<const int64_t> sizes) const;
  /// The program at `sizes`, set up now when it is not (an error from setting it up is
  /// the caller's: a UserError naming what failed). The caller keeps the pointer for its
  /// call: a program dropped meanwhile lives until the call is done.
  std::shared_ptr<const CudaProgram> at(std::span<const int64_t> sizes) const;

  const std::vector<std::string> &symbols() const { return symbols_; }
  /// Sizes set up so far (a size set up again after it was dropped counts again).
  int64_t setups() const;
  /// The program called last (the only one without symbols); null before any call.
  std::shared_ptr<const CudaProgram> last() const;
  /// Each step's time over every program set up (triton.profile), by step name in order
  /// of first appearance.
  std::vector<StepTime> profile() const;
  void reset_profile() const;
  int device_ordinal() const { return device_ordinal_; }

 private:
  struct Entry {
    std::vector<int64_t> sizes;
    std::shared_ptr<const CudaProgram> program;
  };
  std::shared_ptr<const CudaProgram> make(std::span<const int64_t> sizes) const;

  sched::Schedule schedule_;
  codegen::GpuProgram gpu_;
  std::shared_ptr<const LoadedKernels> kernels_;
  std::vector<std::string> symbols_;
  size_t kept_ = 8;  // triton.sizes_kept
  std::vector<std::pair<std::string, std::string>> options_;  // every option's value at the compile
  int device_ordinal_ = 0;
  mutable std::mutex mutex_;
  mutable std::list<Entry> entries_;  // the size called last first
  mutable int64_t setups_ = 0;
};

}  // namespace coil
