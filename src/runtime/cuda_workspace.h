// The device memory and bindings of one call of a CudaProgram (runtime/cuda_program.h):
// what runtime/cuda_program.cpp (loading, copies, launching) and runtime/cuda_binding.cpp
// (binding the steps to a caller's tensors) share. Internal to those two files.
// Tests: tests/gpu/program_test.cpp and tests/gpu/device_io_test.cpp (a GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/cuda_extern.h"
#include "runtime/cuda_program.h"

namespace coil {

// Where one buffer lives, resolved from the host program's places.
struct CudaProgram::Slot {
  bool placed = false;
  codegen::GpuPlace::Kind kind = codegen::GpuPlace::Kind::Arena;
  int index = -1;      // Input: the graph input; Output: the first output of the buffer
  int64_t offset = 0;  // Arena, Scratch
  int64_t bytes = 0;   // what the buffer spans
};

// Whether a caller's `strides` (empty: contiguous) place every element of `sizes` where
// `want` does; no allocation, as it runs on every call.
inline bool same_layout(const Shape &sizes, std::span<const int64_t> strides, const Shape &want) {
  int64_t contiguous = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    int64_t given = strides.empty() ? contiguous : strides[d];
    if (sizes[d] > 1 && given != want[d]) return false;
    contiguous *= sizes[d];
  }
  return true;
}

// A caller's strides, or the contiguous ones when it gave none (empty).
inline Shape strides_or_contiguous(const Shape &sizes, std::span<const int64_t> strides) {
  return strides.empty() ? contiguous_strides(sizes) : Shape(strides.begin(), strides.end());
}

// The device memory of one call: the inputs' copies and the outputs where a call needs
// them, the arena and every launch's arguments, bound once; and, with CUDA graphs, the steps captured on these
// addresses. Pooled: a call takes one and gives it back, so addresses stay fixed.
struct CudaProgram::Workspace {
  cuda::Event done{cuda::CU_EVENT_DISABLE_TIMING};           // recorded after the last call's work, on its stream
  bool used = false;                                         // whether `done` was recorded
  cuda::Event ready{cuda::CU_EVENT_DISABLE_TIMING};          // graphs: the caller's copies, before the first run
  std::vector<cuda::DeviceBuffer> inputs;                    // per graph input; empty until a call needs it
  std::vector<cuda::DeviceBuffer> outputs;                   // per graph output; empty until needed, or not its buffer's home
  bool shared = false;                                       // arena and extern scratch in the GPU's shared arena
  std::unique_ptr<cuda::DeviceArena> arena;                  // else: its own
  std::vector<cuda::CUdeviceptr> address;                    // per buffer id; 0 where never placed
  std::vector<std::vector<cuda::CUdeviceptr>> args;          // per step: the buffers' addresses, then the sizes
  std::vector<std::vector<const void *>> arg_pointers;       // per step: what CudaKernel::launch reads
  std::unique_ptr<cuda::Stream> capture_stream;              // graphs: where the steps first ran and were captured
  std::unique_ptr<cuda::Graph> graph;                        // graphs: the steps, captured after the first call
  std::unique_ptr<cuda::ExternHandles> handles;              // cuBLAS and cuDNN handles of this workspace's calls
  cuda::DeviceBuffer extern_workspace;                       // the extern steps' workspace, one at a time (own arena)
  cuda::CUdeviceptr extern_scratch = 0;                      // where that workspace is
  std::vector<cuda::BoundExternPtr> externs;                 // per step: the prepared call on these addresses
  std::vector<std::unique_ptr<cuda::Event>> marks;           // triton.profile: before the first step and after each
  // Device tensor calls, per graph input and then per output: where the steps find the
  // tensor (runtime/cuda_binding.cpp); the address it is bound to is its buffer's.
  std::vector<Binding> binding;
  std::vector<uint8_t> rebinds;                              // per tensor: times bound again where it moved
  std::vector<char> in_place;                                // this call's: read (written) in place, no copy
  std::vector<ir::BufferId> moved;                           // buffers whose address changed, not yet bound again
  bool steps_bound = false;                                  // the extern steps bound (at the first call)
  cuda::BufferAddress address_of;                            // every placed buffer's address now, for the extern steps
  std::vector<std::vector<ir::BufferId>> extern_buffers;     // per step: the buffers its bound call asked for
  std::vector<ir::BufferId> *asked = nullptr;                // while an extern step binds: its list
  bool broken = false;                                       // binding again failed: never given back to the pool
};

}  // namespace coil
