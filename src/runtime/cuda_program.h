// A graph compiled for the GPU: generate its Triton kernels and host program
// (codegen/triton/triton_codegen.h), compile the kernels to cubins through the cache, load
// them, and run the host program's steps with host tensors in and out. The GPU counterpart
// of runtime/cpu_module.h (DESIGN.md, decisions 8 and 12).
//
// Buffers live where the host program places them: inputs in device copies of the caller's
// tensors (each laid out by its buffer's strides, as the CPU artifact receives them),
// outputs in device allocations of their buffers' extent (an output that aliases an input
// or an earlier output reads that memory, as COIL_OUTPUT_ALIASES_* say in coil/artifact.h),
// intermediates and split-reduction partials at their offsets in one device arena.
//
// Threads: concurrent run() and median_seconds() calls on one CudaProgram are safe. Each
// call takes a workspace of its own from a pool (the one made by the constructor first; a
// second is made only while two calls overlap): device copies of the inputs, the outputs
// and the arena, at addresses fixed for the workspace's life; the loaded kernels are
// shared, and CudaKernel::launch is safe from several threads.
//
// CUDA graphs (option triton.cudagraphs): the first call on a workspace launches the steps
// one by one on the workspace's own stream, then captures them on those fixed addresses;
// every later call copies its inputs into the same device buffers, replays the graph as one
// launch on the caller's stream and copies the outputs back. Extern calls through cuBLAS
// and cuDNN are captured with the kernels; a program with an extern call on the host's
// loops, or whose capture fails, launches its steps one by one (describe() says why).
// Extern calls are prepared once, by the constructor (runtime/cuda_extern.h: cuDNN's
// descriptors and algorithm, the workspace the largest needs), then bound to each
// workspace's addresses (handles, cuBLASLt's descriptors): a call only calls the libraries.
// Tests: tests/gpu/program_test.cpp (a GPU), scripts/gpu_check.sh (every fixture).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/triton/triton_codegen.h"
#include "io/host_tensor.h"
#include "runtime/cuda_driver.h"
#include "runtime/triton_build.h"
#include "runtime/triton_launch.h"
#include "scheduler/scheduler.h"

namespace coil {

namespace cuda {
class ExternHandles;
class PreparedExtern;
}  // namespace cuda

class CudaProgram {
 public:
  /// Loads every cubin (`binaries[i]` of `gpu.kernels[i]`, as driver/compile.h's
  /// build_for_cuda makes them) once, checks every step against its kernel and every place
  /// against its buffer, and allocates the device arena. Keeps a copy of the schedule's
  /// Program (extern calls and buffer types). A UserError when there is no usable GPU; an
  /// InternalError naming the kernel or step when the host program does not fit its
  /// kernels or buffers.
  CudaProgram(const sched::Schedule &s, codegen::GpuProgram gpu, const std::vector<TritonBinary> &binaries);
  ~CudaProgram();
  CudaProgram(const CudaProgram &) = delete;
  CudaProgram &operator=(const CudaProgram &) = delete;

  /// Copies the inputs (by name) to the device, runs every step in order on `stream`
  /// (null: a stream of this object's own), waits for them, and copies the outputs back
  /// as dense row-major tensors of the outputs' sizes, like CpuModule::run. A UserError on
  /// a missing or mistyped input, and on a failed launch or extern call (naming its step).
  std::vector<HostTensor> run(const TensorList &inputs, cuda::CUstream stream = nullptr) const;

  /// The median time of one call of the steps alone, in seconds: `iterations` calls in runs
  /// of 10 back to back, each run between two CUDA events on this object's stream (after
  /// one run to warm up); the inputs are copied to the device and the outputs allocated once.
  double median_seconds(const TensorList &inputs, int iterations) const;

  /// One line per step, in order, for --explain, after a line on CUDA graphs when the
  /// option asks for them:
  ///   CUDA graph: the 4 steps are captured at the first call and replayed as one launch
  ///   kernel0: Triton, grid 1024x1x1, 4 warps; XBLOCK=1024
  ///   kernel3: cuBLAS, mm of [64, 256] and [256, 128] into [64, 128]
  std::vector<std::string> describe() const;

  /// With the option triton.cudagraphs: whether the steps replay as a CUDA graph, or why
  /// not ("CUDA graph off: ..."); empty without the option.
  std::string graphs_note() const;

  /// Whether calls replay the steps as a CUDA graph (until a capture fails).
  bool uses_graphs() const { return graphs_ && !graphs_failed_.load(); }

  const codegen::GpuProgram &program() const { return gpu_; }

 private:
  struct Slot;
  struct Workspace;
  class Lease;

  void check_program(const std::vector<TritonBinary> &binaries) const;
  void decide_graphs();
  void prepare_externs();
  /// A workspace, with the extern handles given (null: new ones).
  std::unique_ptr<Workspace> make_workspace(std::unique_ptr<cuda::ExternHandles> handles = nullptr) const;
  std::unique_ptr<Lease> prepare(const TensorList &inputs) const;
  void run_steps(Workspace &w, cuda::CUstream stream, bool sync_each_step) const;
  void launch_all(Workspace &w, cuda::CUstream stream, bool sync_each_step) const;
  std::vector<HostTensor> read_outputs(const Workspace &w) const;
  std::string step_label(size_t step) const;

  ir::Program program_;
  codegen::GpuProgram gpu_;
  const cuda::Device *device_ = nullptr;
  std::vector<std::unique_ptr<cuda::CudaKernel>> kernels_;  // per gpu_.kernels[i]
  std::vector<Slot> slots_;                                 // per buffer id
  std::vector<std::unique_ptr<cuda::PreparedExtern>> externs_;  // per step; null for launches
  size_t extern_workspace_bytes_ = 0;                       // the most any extern step needs
  std::unique_ptr<cuda::ExternHandles> load_handles_;       // what preparing used; the first workspace's
  std::vector<int> output_owner_;  // per output: the first output of the same buffer
  std::unique_ptr<cuda::Stream> stream_;
  bool graphs_ = false;                          // triton.cudagraphs, and nothing rules them out
  mutable std::atomic<bool> graphs_failed_{false};  // a capture failed: launches one by one
  // Workspaces not in use by a call; the pool only grows while calls overlap. The mutex
  // also guards graphs_note_.
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> free_workspaces_;
  mutable std::string graphs_note_;
};

}  // namespace coil
