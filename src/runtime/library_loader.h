// Loading a shared library of NVIDIA's at run time (the driver, cuBLAS, cuBLASLt, cuDNN): coil builds
// without their headers and runs on a machine without them (DESIGN.md, decision 13).
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

namespace coil::cuda {

/// Resolves `name` in `library` into `slot`; false when the library lacks it.
template <typename Fn>
bool resolve(void *library, const char *name, Fn &slot) {
  slot = reinterpret_cast<Fn>(::dlsym(library, name));
  return slot != nullptr;
}

/// The functions of one library, resolved in turn; the first needed one that is missing
/// is kept for the error that names it.
class Symbols {
 public:
  explicit Symbols(void *library) : library_(library) {}

  /// A function coil cannot run without.
  template <typename Fn>
  void need(const char *name, Fn &slot) {
    if (!resolve(library_, name, slot) && missing_.empty()) missing_ = name;
  }
  /// A function coil uses when the library has it; true when found.
  template <typename Fn>
  bool want(const char *name, Fn &slot) {
    return resolve(library_, name, slot);
  }
  /// The first needed function the library lacks; empty when it has them all.
  const std::string &missing() const { return missing_; }

 private:
  void *library_;
  std::string missing_;
};

/// The first of `names` that dlopen finds (the plain name, then under $CUDA_HOME/lib64,
/// where a toolkit installed outside the loader's path keeps it); null with every
/// failure in `why`. Never closed: libraries stay loaded for the life of the process.
void *open_first(const std::vector<std::string> &names, std::string &why);

}  // namespace coil::cuda
