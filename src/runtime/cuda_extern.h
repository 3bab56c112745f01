// The extern calls of the loop IR (matrix products, convolutions) on the GPU, run as their
// plans say (codegen/gpu/extern_plan.h: cuBLAS, cuBLASLt with an epilogue, cuDNN, or the
// host loops with the reason), through the libraries loaded at run time
// (runtime/cuda_libraries.h, runtime/cuda_blaslt.h).
//
// Three moments, so that a call does no planning:
//   - compile time: the plan, made without a GPU and kept in the host program;
//   - load time (PreparedExtern, once per program): whether the library the plan wants is
//     on this machine (else the host loops, saying so), cuDNN's execution plan (the
//     backend API's heuristics' first engine that builds and keeps f32 off TF32) and its
//     legacy descriptors and algorithm (for addresses the plan cannot take), the workspace,
//     the vector of ones a bias broadcast reads; then per workspace of fixed addresses
//     (bind): the cuBLAS and cuDNN handles, cuBLASLt's descriptors and algorithm, every
//     operand's address, cuDNN's variant pack of them, whether the operands overlap the
//     output (the host loops then);
//   - per call (run): the library calls with those addresses, on the caller's stream.
// Every library call is checked; a failure names the call, the library's status name, the
// graph node and the kernel.
// Tests: tests/unit/cuda_extern_test.cpp (any machine), tests/gpu/extern_test.cpp and
// tests/gpu/program_test.cpp (a GPU).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "codegen/gpu/extern_plan.h"
#include "ir/loop_ir.h"
#include "runtime/cuda_blaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_extern_host.h"
#include "runtime/cuda_libraries.h"
#include "scheduler/epilogue.h"

namespace coil::cuda {

/// The cuBLAS and cuDNN handles of one workspace, made in the current context when first
/// asked for (at bind time) and destroyed with it. A handle is not shared between calls
/// that run at once: one per workspace.
class ExternHandles {
 public:
  ExternHandles() = default;
  ~ExternHandles();
  ExternHandles(const ExternHandles &) = delete;
  ExternHandles &operator=(const ExternHandles &) = delete;

  cublasHandle_t blas(std::string_view what);
  cudnnHandle_t dnn(std::string_view what);

 private:
  cublasHandle_t blas_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
};

/// One prepared step bound to one workspace's addresses (what run() reads), owned
/// through BoundExternPtr.
struct BoundExtern;
struct BoundExternDelete {
  void operator()(BoundExtern *b) const;
};
using BoundExternPtr = std::unique_ptr<BoundExtern, BoundExternDelete>;

/// One extern step prepared when its program is loaded. Keeps references to `p`, `n` and
/// `epilogue`, which must outlive it.
class PreparedExtern {
 public:
  /// In the current context: library availability, cuDNN's descriptors and algorithm
  /// (asked through `handles`), the vector of ones. `kernel` names the step in errors.
  PreparedExtern(const ir::Program &p, const ir::Node &n, const sched::Epilogue *epilogue, codegen::GpuExternPlan plan,
                 std::string_view kernel, ExternHandles &handles);
  ~PreparedExtern();
  PreparedExtern(const PreparedExtern &) = delete;
  PreparedExtern &operator=(const PreparedExtern &) = delete;

  const codegen::GpuExternPlan &plan() const { return plan_; }
  /// Whether any of the call (the product or the epilogue) runs on the host's loops
  /// here, which a CUDA graph cannot hold (a workspace whose operands overlap the output
  /// may also run a product there: bind decides).
  bool on_host() const;
  /// What runs the call on this machine, in words: the plan's, or the host loops with the
  /// missing library; cuDNN's algorithm and workspace.
  std::string words() const;
  /// The device workspace run() is given, in bytes (cuDNN's algorithm's, cuBLASLt's).
  size_t workspace_bytes() const { return workspace_bytes_; }

  /// The step on one workspace: `address` gives every buffer's fixed address, `workspace`
  /// at least workspace_bytes() of device memory that only this workspace's calls use.
  BoundExternPtr bind(ExternHandles &handles, const BufferAddress &address, CUdeviceptr workspace) const;
  /// Runs the call on `stream` as bound: library calls with addresses, nothing else
  /// (the host loops download, compute and upload).
  void run(BoundExtern &bound, CUstream stream) const;

 private:
  enum class Mode : uint8_t { Nothing, Gemm, Lt, Conv, Host };
  struct Cudnn;

  void prepare_convolution(ExternHandles &handles);
  void plan_backend(cudnnHandle_t handle);
  void bind_backend(BoundExtern &bound, ExternHandles &handles) const;

  const ir::Program &p_;
  const ir::Node &n_;
  const sched::Epilogue *epilogue_;
  codegen::GpuExternPlan plan_;
  std::string what_;           // "running extern node ... of kernel ...", for errors
  Mode mode_ = Mode::Host;
  std::string missing_;        // the library the plan wants and this machine lacks
  bool epilogue_on_host_ = false;
  size_t workspace_bytes_ = 0;
  std::unique_ptr<Cudnn> dnn_;  // Conv: descriptors and algorithm
  DeviceBuffer ones_;           // the vector of ones the bias broadcast reads
};

/// Which library runs extern node `n` of `p` (with `epilogue` fused onto it, or null), in
/// words for `coil compile --explain`: its plan's words (codegen::GpuExternPlan::words)
/// with `assume_libraries`, else with what this machine has ("host loops: <why>" where a
/// library is missing). Needs no GPU; never throws.
std::string gpu_extern_library(const ir::Program &p, const ir::Node &n, const sched::Epilogue *epilogue,
                               bool assume_libraries);
std::string gpu_extern_library(const ir::Program &p, const ir::Node &n, bool assume_libraries);
std::string gpu_extern_library(const ir::Program &p, const ir::Node &n);

/// The library `plan` wants that this machine lacks, in words; empty when all are here.
std::string missing_library(const codegen::GpuExternPlan &plan);

/// Whether a bound convolution runs cuDNN's execution plan (false: its legacy calls, or
/// not a convolution).
bool runs_execution_plan(const BoundExtern &bound);

/// How many times this process has set up an extern step: created a cuBLAS or cuDNN
/// handle, a cuDNN descriptor or a cuBLASLt matmul, asked a heuristic, or allocated device
/// memory for one. Load and bind time add to it; PreparedExtern::run never does.
int64_t extern_setups();

/// Plans, prepares, binds and runs extern node `n` once (tests and one-off calls; a
/// program prepares once at load): reads its operand views and writes its output buffer
/// (or the epilogue's) at the addresses given, on `stream`, and waits for it.
void run_gpu_extern(const ir::Program &p, const ir::Node &n, const BufferAddress &address, CUstream stream,
                    std::string_view kernel = {}, const sched::Epilogue *epilogue = nullptr);

}  // namespace coil::cuda
