// Launching compiled Triton kernels from C++ through the CUDA driver (DESIGN.md, decision
// 8): a cubin is loaded once per module, each kernel's launch follows the facts read from
// its metadata (runtime/triton_build.h): warps, dynamic shared memory (the limit raised
// above 48 KiB), and the hidden scratch pointers Triton appends to the declared arguments.
// Tests: tests/unit/cuda_driver_test.cpp (any machine), tests/gpu/launch_test.cpp (a GPU).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/triton_build.h"

namespace coil::cuda {

/// Programs (thread blocks) along each axis; Triton's program_id(0), (1), (2).
struct LaunchGrid {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
  int64_t programs() const { return int64_t(x) * y * z; }
};

/// The grid that covers `xnumel` x `ynumel` x `znumel` elements with programs of
/// `xblock` x `yblock` x `zblock`: ceil(numel / block) per axis. A UserError when an axis
/// needs more programs than CUDA allows (x: 2^31 - 1; y, z: 65535).
LaunchGrid block_grid(int64_t xnumel, int64_t xblock, int64_t ynumel = 1, int64_t yblock = 1, int64_t znumel = 1,
                      int64_t zblock = 1);

/// One cubin loaded into a device's primary context; unloaded with the object.
class CudaModule {
 public:
  /// `label` names the module in errors (the kernel's name, say).
  CudaModule(std::string_view cubin, std::string label, const Device &device = Device::get());
  ~CudaModule();
  CudaModule(const CudaModule &) = delete;
  CudaModule &operator=(const CudaModule &) = delete;

  CUfunction function(const std::string &name) const;
  const Device &device() const { return *device_; }
  const std::string &label() const { return label_; }

 private:
  CUmodule module_ = nullptr;
  std::string label_;
  const Device *device_;
};

/// A Triton kernel ready to launch. Construction checks the facts against the loaded
/// function (its parameter count and sizes where the driver can tell, its thread limit)
/// and raises the dynamic shared memory limit when the kernel needs more than 48 KiB.
class CudaKernel {
 public:
  CudaKernel(std::shared_ptr<const CudaModule> module, TritonLaunchFacts facts);

  /// Launches on `stream` (null: the legacy default stream). `args[i]` points at the
  /// value of facts().args[i]: a CUdeviceptr for a pointer, an int32_t for i32, a float for
  /// fp32, a uint16_t holding the bits for fp16/bf16. A grid of no programs launches
  /// nothing. Safe to call from several threads at once.
  void launch(LaunchGrid grid, const std::vector<const void *> &args, CUstream stream) const;

  const TritonLaunchFacts &facts() const { return facts_; }

 private:
  void check_parameters() const;
  CUdeviceptr scratch(size_t hidden, int64_t programs, CUstream stream) const;

  std::shared_ptr<const CudaModule> module_;
  TritonLaunchFacts facts_;
  CUfunction function_ = nullptr;
  // Per hidden pointer with a size and per stream: launches on one stream run in order and
  // may share a buffer; launches on two streams may run at once and may not.
  mutable std::mutex scratch_mutex_;
  mutable std::vector<std::map<CUstream, DeviceBuffer>> scratch_;
};

/// Loads `binary` in a module of its own and makes its kernel.
CudaKernel load_triton_kernel(const TritonBinary &binary, const Device &device = Device::get());

}  // namespace coil::cuda
