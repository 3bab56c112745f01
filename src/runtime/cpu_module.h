// A graph compiled for the CPU: generate the translation unit, build it into a shared
// library through the cache, load it, and call it with host tensors. The calling side
// of coil/artifact.h (runtime/include/coil/artifact.h).
#pragma once

#include <string>
#include <vector>

#include "io/host_tensor.h"
#include "runtime/loader.h"
#include "scheduler/scheduler.h"

struct coil_tensor_desc;

namespace coil {

struct CpuBuild {
  std::string source;   // the generated translation unit
  std::string so_path;  // the shared library in the cache
  std::vector<std::string> layouts;  // per kernel: how the C++ dialect runs it
  bool cache_hit = false;
  double seconds = 0;   // generating and building (or finding) it
};

/// Generates the C++ of `s` for the selected ISA and builds it (cached).
CpuBuild build_cpu(const sched::Schedule &s);

class CpuModule {
 public:
  explicit CpuModule(const std::string &so_path);

  /// Runs the graph on `inputs` (by name) and returns its outputs, dense row-major.
  /// A UserError on a missing or mistyped input and on an error inside a kernel.
  std::vector<HostTensor> run(const TensorList &inputs) const;

  /// The median time of one call over `iterations` calls, in seconds.
  double median_seconds(const TensorList &inputs, int iterations) const;

 private:
  struct Prepared;
  Prepared prepare(const TensorList &inputs) const;
  int call(Prepared &p) const;

  SharedLibrary lib_;
  int (*num_inputs_)();
  int (*num_outputs_)();
  const coil_tensor_desc *(*input_)(int);
  const coil_tensor_desc *(*output_)(int);
  int (*run_)(void *const *, void **);
  const char *(*error_message_)(int);
};

}  // namespace coil
