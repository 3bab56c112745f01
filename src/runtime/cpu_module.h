// A graph compiled for the CPU, loaded: the shared library that driver/compile.h's
// build_for_cpu built, called with host tensors. The calling side of coil/artifact.h
// (runtime/include/coil/artifact.h). Tests: tests/unit/runtime_test.cpp,
// tests/unit/cpp_backend_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/host_tensor.h"
#include "runtime/loader.h"

struct coil_tensor_desc;
struct coil_kernel_profile;

namespace coil {

/// One kernel's row of a profiled module (coil_profile in coil/artifact.h).
struct KernelProfile {
  std::string name;     // kernel0
  std::string summary;  // what it computes: "pointwise over [64, 256]: add, relu"
  int64_t calls = 0;
  double seconds = 0;   // over every call
};

class CpuModule {
 public:
  /// Loads the library and gives it the option num_threads (read now, so that a malformed
  /// COIL_NUM_THREADS is a UserError before any kernel runs; 0 leaves the library to its
  /// default).
  explicit CpuModule(const std::string &so_path);

  /// The graph's inputs (graph inputs, then constants) and outputs as the library lays
  /// them out (coil/artifact.h).
  int num_inputs() const { return num_inputs_(); }
  int num_outputs() const { return num_outputs_(); }
  const coil_tensor_desc &input(int i) const { return *input_(i); }
  const coil_tensor_desc &output(int i) const { return *output_(i); }

  /// coil_run on allocations laid out as input() and output() say; sets the pointers of
  /// aliasing outputs. A UserError with the library's message when it fails.
  void call(void *const *inputs, void **outputs) const;

  /// Runs the graph on `inputs` (by name) and returns its outputs, dense row-major.
  /// A UserError on a missing or mistyped input and on an error inside a kernel.
  std::vector<HostTensor> run(const TensorList &inputs) const;

  /// The median time of one call over `iterations` calls, in seconds.
  double median_seconds(const TensorList &inputs, int iterations) const;

  /// Each kernel's calls and time since this module was made or reset_profile(), in call
  /// order; empty when the graph was compiled without cpp.profile (its library has no
  /// coil_profile). The library keeps the counts: calls through another module of it
  /// count too.
  std::vector<KernelProfile> profile() const;

  /// The most threads the library's kernels run on now: the option num_threads as it was
  /// when this module was made, else the library's default (coil/artifact.h).
  int num_threads() const;

  /// Starts profile() from zero: to leave out the first call's one-time work (OpenMP's
  /// threads, oneDNN's primitives).
  void reset_profile();

 private:
  struct Prepared;
  Prepared prepare(const TensorList &inputs) const;
  std::vector<KernelProfile> library_profile() const;

  SharedLibrary lib_;
  int (*num_inputs_)();
  int (*num_outputs_)();
  const coil_tensor_desc *(*input_)(int);
  const coil_tensor_desc *(*output_)(int);
  int (*run_)(void *const *, void **);
  const char *(*error_message_)(int);
  int32_t (*profile_)(coil_kernel_profile *, int32_t) = nullptr;  // optional
  int32_t (*set_num_threads_)(int32_t);
  int32_t (*num_threads_)();
  // What the library had counted before this module or the last reset: a library
  // dlclose'd may stay loaded (GCC's unique symbols keep it), counts and all.
  std::vector<KernelProfile> profile_baseline_;
};

}  // namespace coil
