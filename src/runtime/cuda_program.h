// A graph compiled for the GPU: generate its Triton kernels and host program
// (codegen/triton/triton_codegen.h), compile the kernels to cubins through the cache, load
// them, and run the host program's steps on the caller's device memory and stream. The GPU
// counterpart of runtime/cpu_module.h (DESIGN.md, decisions 8, 12 and 16).
//
// Buffers live where the host program places them: inputs in the workspace's copies of the
// caller's tensors (each laid out by its buffer's strides, as the CPU artifact receives
// them), outputs in the workspace's allocations of their buffers' extent (an output that
// aliases an input or an earlier output reads that memory, as COIL_OUTPUT_ALIASES_* say in
// coil/artifact.h), intermediates and split-reduction partials at their offsets in one
// device arena.
//
// Device tensors in and out (run with DeviceTensor): every launch's arguments and every
// bound extern call hold fixed addresses (and a CUDA graph is captured on them). A caller's
// tensor in its buffer's layout, 256-byte aligned, is bound where the caller keeps it the
// first time it is seen, and read or written there without a copy for as long as it comes
// back at that address (parameters, PyTorch's caching allocator); once its address moves,
// it is copied through the workspace's own buffer, as every other tensor is (binding the
// steps anew costs what loading did, so it is done once, not per call). A workspace's own
// buffer for an input or output is allocated when a call first needs it: a tensor bound in
// place (a model's parameters) is never held twice on the device. So a call queues,
// all on the caller's stream: device-to-device copies of the inputs not bound in place into
// the workspace, the steps (or the graph's replay), copies of the outputs not written in
// place out of it. Nothing is allocated on the device (nor on the host for tensors in the
// compiled layouts) and the host never waits for the GPU (except when a graph is captured,
// below): the call returns once the work is queued. A tensor in its buffer's layout takes
// the copy planned for it at load (one cuMemcpyDtoDAsync when the layout is dense); other
// strides are copied by rows (runtime/device_copy.h: cuMemcpy2DAsync, planned per call),
// and a layout rows cannot express (an output whose strides write two elements to one
// place, negative strides, more than kMaxCopyPieces driver calls) is a UserError naming
// the tensor.
//
// Host tensors in and out (run with a TensorList: `coil run`, tests): the inputs are
// uploaded into the workspace, the steps run, the host waits for them and downloads the
// outputs as dense row-major tensors.
//
// Threads and streams: concurrent calls on one CudaProgram are safe, from any threads on
// any streams. Each call takes a workspace of its own from a pool (the one made by the
// constructor first; a second is made only while two calls are being queued at once): its
// buffers and arena at fixed addresses, an event recorded on the call's stream after its
// last copy. The next call that takes the workspace makes its own stream wait for that
// event before its first copy, so a workspace is reused only after the work of its previous
// call, on whichever stream, is done; the host does not wait. The first workspace's arena
// and extern scratch lie in the GPU's shared arena (cuda::SharedArena, option
// triton.shared_arena), which every program loaded on the GPU uses: a call on it takes a
// turn (its stream waits for the previous turn's work; the host waits only while another
// thread queues one), so a training step's forward and backward hold the larger of their
// arenas, not both. The loaded kernels are shared, and CudaKernel::launch is safe from
// several threads.
//
// CUDA graphs (option triton.cudagraphs): the first call on a workspace launches the steps
// one by one on the workspace's own stream (after the caller's stream's copies), waits for
// them and captures them on the workspace's fixed addresses (the call's results are those
// of the launches: a replay would apply an update written over its input twice); every
// later call replays the graph on the caller's stream as one launch between its copies. A
// tensor bound anew (its address seen first, or moved) has the graph captured again.
// Extern calls through cuBLAS and cuDNN are captured with the kernels; a program with an
// extern call on the host's loops, or whose capture fails, launches its steps one by one
// (describe() says why). Extern calls are prepared once, by the constructor
// (runtime/cuda_extern.h: cuDNN's descriptors and algorithm, the workspace the largest
// needs), then bound to each workspace's addresses (handles, cuBLASLt's descriptors) at its
// first call, once its tensors are placed: a call only calls the libraries.
// Tests: tests/gpu/program_test.cpp and tests/gpu/device_io_test.cpp (a GPU),
// scripts/gpu_check.sh (every fixture).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codegen/triton/triton_codegen.h"
#include "io/host_tensor.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_copy.h"
#include "runtime/triton_build.h"
#include "runtime/triton_launch.h"
#include "scheduler/scheduler.h"

namespace coil {

namespace cuda {
class ExternHandles;
class PreparedExtern;
}  // namespace cuda

/// One step's time in a profiled program (the option triton.profile).
struct StepTime {
  std::string name;     // kernel3, or the extern step's kernel
  std::string summary;  // "reduction over [64, 1] reducing [256]: amax, sub, exp, sum"
  int64_t calls = 0;
  double seconds = 0;   // the GPU's time over every call
};

/// A caller's tensor in device memory (of the program's device): the address of its
/// element 0 and its strides in elements (empty: contiguous); for an output, the allocation
/// it lies in when the caller knows it: element 0 is storage_offset elements into
/// storage_elements (-1: unknown). Its dtype and sizes are the graph's; the caller checks
/// them (driver/api.cpp).
struct DeviceTensor {
  cuda::CUdeviceptr data = 0;
  std::span<const int64_t> strides;
  int64_t storage_offset = -1;
  int64_t storage_elements = -1;
};

/// The kernels of a GPU program, loaded once (per GpuProgram::kernels[i]): the programs of
/// one graph at each of its sizes (runtime/cuda_programs.h) share them.
using LoadedKernels = std::vector<std::shared_ptr<const cuda::CudaKernel>>;

/// Loads `binaries[i]`, the cubin of `gpu.kernels[i]` (driver/compile.h's build_for_cuda),
/// on the current GPU; a UserError when there is none, naming the kernel that failed.
std::shared_ptr<const LoadedKernels> load_kernels(const codegen::GpuProgram &gpu,
                                                  const std::vector<TritonBinary> &binaries);

class CudaProgram {
 public:
  /// Loads every cubin (`binaries[i]` of `gpu.kernels[i]`, as driver/compile.h's
  /// build_for_cuda makes them) once, checks every step against its kernel and every place
  /// against its buffer, and allocates the device arena. Keeps a copy of the schedule's
  /// Program (extern calls and buffer types). A UserError when there is no usable GPU; an
  /// InternalError naming the kernel or step when the host program does not fit its
  /// kernels or buffers. The schedule and the program are of integer sizes.
  CudaProgram(const sched::Schedule &s, codegen::GpuProgram gpu, const std::vector<TritonBinary> &binaries);
  /// The same with the kernels loaded already, at one call's sizes: `s` and `gpu` are a
  /// schedule of symbolic sizes and its program specialized to `values`
  /// (codegen::at_sizes), and each launch passes its kernel the values of the symbols it
  /// takes (GpuKernel::sizes) after the buffers.
  CudaProgram(const sched::Schedule &s, codegen::GpuProgram gpu, std::shared_ptr<const LoadedKernels> kernels,
              const std::map<std::string, int64_t> &values);
  ~CudaProgram();
  CudaProgram(const CudaProgram &) = delete;
  CudaProgram &operator=(const CudaProgram &) = delete;

  /// Queues the graph on `stream` (null: the legacy default stream, as PyTorch's default
  /// stream is) over the caller's device memory: `inputs` in the order of the program's
  /// inputs, `outputs` of its outputs, written when the stream reaches the end of the call.
  /// Returns once the work is queued. A UserError on a wrong count, a layout that cannot be
  /// copied, or a failed copy, launch or extern call (naming its tensor or step); with the
  /// option debug the host waits for every step, so that the error names the one that failed.
  void run(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs, cuda::CUstream stream) const;

  /// Host tensors: uploads the inputs (by name), runs every step in order on `stream`
  /// (null: a stream of this object's own), waits for them, and downloads the outputs as
  /// dense row-major tensors of the outputs' sizes, like CpuModule::run. A UserError on
  /// a missing or mistyped input, and on a failed launch or extern call (naming its step).
  std::vector<HostTensor> run(const TensorList &inputs, cuda::CUstream stream = nullptr) const;

  /// The ordinal of the GPU the program is loaded on: device tensors must live there.
  int device_ordinal() const { return device_->ordinal(); }

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

  /// How many tensors device tensor calls have copied into or out of a workspace so far
  /// (a tensor bound in place is not copied).
  int64_t copies() const { return copies_.load(std::memory_order_relaxed); }
  /// Device bytes the workspaces have allocated for inputs and outputs of their own so far:
  /// made when a call first copies a tensor or takes host tensors, never for a tensor bound
  /// in place (the arena and the extern steps' scratch are not counted).
  int64_t own_bytes() const { return own_bytes_.load(std::memory_order_relaxed); }

  /// With the option triton.cudagraphs: whether the steps replay as a CUDA graph, or why
  /// not ("CUDA graph off: ..."); empty without the option.
  std::string graphs_note() const;

  /// With the option triton.profile: each step's calls and GPU time since the program was
  /// loaded or reset_profile(), in step order; empty otherwise. Profiled calls launch their
  /// steps one by one (no CUDA graph), hold the stream until all are queued
  /// (cuda::StreamGate), record an event between each two, and wait for the last: a step's
  /// time is the GPU's from the end of the step before to its own end, without the host's
  /// launching.
  std::vector<StepTime> profile() const;
  void reset_profile() const;

  /// Whether a workspace of the program has its arena in the GPU's shared arena.
  bool in_shared_arena() const { return shared_taken_.load(); }

  /// Whether calls replay the steps as a CUDA graph (until a capture fails).
  bool uses_graphs() const { return graphs_ && !graphs_failed_.load(); }

  const codegen::GpuProgram &program() const { return gpu_; }
  /// The schedule's program it runs (at integer sizes): its inputs' and outputs' types.
  const ir::Program &ir() const { return program_; }
  /// The strides of input `j`'s buffer and of output `k`'s view, as integers: the layouts
  /// a call passes without a copy.
  std::span<const int64_t> input_strides(size_t j) const { return input_strides_[j]; }
  std::span<const int64_t> output_strides(size_t k) const { return output_strides_[k]; }
  /// The allocation that holds output `k` (ir::output_allocation): (storage offset, elements).
  std::pair<int64_t, int64_t> output_allocation(size_t k) const { return output_allocations_[k]; }

 private:
  struct Slot;
  struct Workspace;
  class Lease;
  /// Where a device tensor call finds one of its tensors (cuda_program.cpp, "where a call's
  /// tensors are bound"): the workspace's own buffer (copied into or out of), the caller's
  /// memory the steps are bound to, or the workspace's buffer for good after the caller's
  /// address moved.
  enum class Binding : uint8_t { Own, Caller, Copied };
  /// The alignment a caller's address needs to be bound to: that of the workspace's own
  /// buffers, which the kernels (16 bytes) and the libraries' plans assume.
  static constexpr cuda::CUdeviceptr kCallerAlignment = 256;

  void check_program(const std::map<std::string, int64_t> &values) const;
  void decide_graphs();
  void prepare_externs();
  void plan_copies();
  /// A workspace, with the extern handles given (null: new ones).
  std::unique_ptr<Workspace> make_workspace(std::unique_ptr<cuda::ExternHandles> handles = nullptr) const;
  std::vector<const HostTensor *> check_host_inputs(const TensorList &inputs) const;
  void upload(Workspace &w, const std::vector<const HostTensor *> &given) const;
  /// The copy of input `j` (or output `k`) from (to) the caller's `strides`: the one made at
  /// load for the buffer's layout, else one planned into `adhoc`; a UserError naming the
  /// tensor when its layout cannot be copied.
  const cuda::StridedCopy &input_copy(size_t j, std::span<const int64_t> strides,
                                      std::optional<cuda::StridedCopy> &adhoc) const;
  const cuda::StridedCopy &output_copy(size_t k, std::span<const int64_t> strides,
                                       std::optional<cuda::StridedCopy> &adhoc) const;
  void bind_extern(Workspace &w, size_t i) const;
  bool has_own(size_t t) const;  // tensor t has a buffer of its own: an input, or its buffer's home output
  cuda::CUdeviceptr own_buffer(Workspace &w, size_t t) const;
  void use_own(Workspace &w, size_t t) const;
  bool place(Workspace &w, size_t t, std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs) const;
  bool overlaps_another(size_t t, std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs) const;
  bool one_tensor_by_design(size_t t, size_t u, std::span<const DeviceTensor> outputs) const;
  bool views_of_one_buffer(size_t t, size_t u, std::span<const DeviceTensor> outputs) const;
  cuda::CUdeviceptr buffer_start(size_t k, const DeviceTensor &d) const;
  bool holds_buffer(size_t k, const DeviceTensor &d) const;
  ir::BufferId buffer_of(size_t t) const;  // tensor t: an input, or output t - inputs
  void move(Workspace &w, size_t t, cuda::CUdeviceptr to) const;
  void rebind(Workspace &w) const;
  void bind_own(Workspace &w) const;
  void run_step(Workspace &w, cuda::CUstream stream, size_t i) const;
  void run_steps(Workspace &w, cuda::CUstream stream, bool sync_each_step) const;
  void run_profiled(Workspace &w, cuda::CUstream stream) const;
  void launch_all(Workspace &w, cuda::CUstream stream, bool sync_each_step) const;
  std::vector<HostTensor> read_outputs(const Workspace &w) const;
  std::string step_label(size_t step) const;

  ir::Program program_;
  codegen::GpuProgram gpu_;
  const cuda::Device *device_ = nullptr;
  std::shared_ptr<const LoadedKernels> kernels_;            // per gpu_.kernels[i]
  // Per step: the values of its kernel's size arguments (GpuKernel::sizes), each in the
  // width of its argument's type (i32 or i64), as the launch passes them after the buffers.
  std::vector<std::vector<cuda::CUdeviceptr>> size_args_;
  std::vector<Shape> input_strides_, output_strides_;      // input_strides(), output_strides()
  std::vector<std::pair<int64_t, int64_t>> output_allocations_;  // output_allocation()
  std::vector<Slot> slots_;                                 // per buffer id
  std::vector<std::unique_ptr<cuda::PreparedExtern>> externs_;  // per step; null for launches
  size_t extern_workspace_bytes_ = 0;                       // the most any extern step needs
  std::unique_ptr<cuda::ExternHandles> load_handles_;       // what preparing used; the first workspace's
  std::vector<int> output_owner_;  // per output: the first output of the same buffer
  // Per input and output: the copy between the caller's tensor and the workspace when the
  // caller's layout is the buffer's (the output's view's); empty where rows cannot do it
  // (the reason in *_copy_errors_).
  std::vector<std::optional<cuda::StridedCopy>> input_copies_, output_copies_;
  std::vector<std::string> input_copy_errors_, output_copy_errors_;
  std::vector<ir::View> output_views_;  // per output: its view of its buffer
  std::vector<bool> output_in_place_;    // per output: the home of its buffer's whole extent
  // Per output: the inputs it may be written over (sched::inputs_writable_by): a call that
  // passes one address for both binds both there, not counting them as overlapping.
  std::vector<std::vector<int>> writable_over_;
  std::vector<int> output_input_;  // per output: the input it is, whole and in its layout, or -1
  std::unique_ptr<cuda::Stream> stream_;
  bool graphs_ = false;                          // triton.cudagraphs, and nothing rules them out
  mutable std::atomic<bool> graphs_failed_{false};  // a capture failed: launches one by one
  mutable std::atomic<int64_t> copies_{0};          // copies(): tensors copied by device tensor calls
  mutable std::atomic<int64_t> own_bytes_{0};       // own_bytes()
  // Workspaces not in use by a call; the pool only grows while calls overlap. The mutex
  // also guards graphs_note_.
  cuda::SharedArena *shared_ = nullptr;          // triton.shared_arena: the GPU's, where the driver has one
  mutable std::atomic<bool> shared_taken_{false};  // a workspace of this program lives in it
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> free_workspaces_;
  mutable std::string graphs_note_;
  // triton.profile: per step, what it computes, and its calls and seconds so far.
  bool profile_ = false;
  std::vector<std::string> step_summaries_;
  mutable std::mutex profile_mutex_;
  mutable std::vector<int64_t> step_calls_;
  mutable std::vector<double> step_seconds_;
};

}  // namespace coil
