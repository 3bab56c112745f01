// Loading a shared library of NVIDIA's at run time (cuBLAS, cuBLASLt, cuDNN): coil builds
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

/// The first of `names` that dlopen finds (the plain name, then under $CUDA_HOME/lib64,
/// where a toolkit installed outside the loader's path keeps it); null with every
/// failure in `why`. Never closed: libraries stay loaded for the life of the process.
void *open_first(const std::vector<std::string> &names, std::string &why);

}  // namespace coil::cuda
