// The back half for the GPU: tune (with triton.autotune), generate and build the Triton
// dialect's kernels and host program (driver/compile.h). Tests: tests/gpu/program_test.cpp,
// tests/unit/triton_test.cpp, scripts/gpu_check.sh.
#include <chrono>
#include <iostream>

#include "driver/autotune.h"
#include "driver/compile.h"
#include "runtime/cuda_driver.h"
#include "support/error.h"
#include "support/options.h"

namespace coil {

using codegen::GpuKernel;

CudaBuild build_cuda(const sched::Schedule &s) {
  auto start = std::chrono::steady_clock::now();
  CudaBuild b;
  codegen::TritonOptions o;
  if (options::get_bool("triton.autotune")) {
    if (cuda::available()) {
      auto tuning = std::chrono::steady_clock::now();
      o.configs = autotune_triton(s, &b.tuned);
      b.tuning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - tuning).count();
    } else {
      std::cerr << "coil: triton.autotune is on but there is no GPU to time kernels on ("
                << cuda::unavailable_reason() << "); the default configs are used\n";
    }
  }
  b.program = codegen::generate_triton(s, o);
  if (options::get_bool("debug"))
    for (const GpuKernel &k : b.program.kernels) std::cerr << "coil: generated Triton (" << k.name << "):\n" << k.source << "\n";
  std::vector<TritonCompileRequest> requests = codegen::compile_requests(b.program);
  COIL_ASSERT(requests.size() == b.program.kernels.size(), requests.size(), " compile requests for ",
              b.program.kernels.size(), " kernels");
  // The GPU this process would run on decides the target; without one (compiling on a
  // machine with no GPU for one that has), sm_90.
  int capability = cuda::available() ? cuda::Device::get().capability() : 90;
  for (TritonCompileRequest &r : requests) r.capability = capability;
  if (!requests.empty()) b.binaries = build_triton_kernels(requests);
  for (const TritonBinary &binary : b.binaries) b.cache_hits += binary.cache_hit ? 1 : 0;
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return b;
}

}  // namespace coil
