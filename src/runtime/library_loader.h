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

/// One of the libraries coil loads: the files to try in turn (the last one the plain
/// name, libcublas.so), the library's name for people, and what a needed function that
/// is missing says is needed.
struct LibrarySpec {
  std::vector<std::string> files;  // {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}
  std::string name;                // "cuBLAS": "... no cuBLAS on this machine"
  std::string needs;               // "cuBLAS 11 or newer": "libcublas has no f: cuBLAS 11 or newer is needed"
};

/// A library's function table as loaded, or why it cannot be used.
template <typename Api>
struct LoadedLibrary {
  Api api{};
  std::string reason;  // empty: usable
};

/// Loads `spec`'s library and fills its table with `bind(symbols, api)`, the library's list
/// of Symbols::need and Symbols::want calls. Never throws: what fails is the reason.
template <typename Api, typename Bind>
LoadedLibrary<Api> load_library(const LibrarySpec &spec, Bind bind) {
  LoadedLibrary<Api> out;
  std::string why;
  void *lib = open_first(spec.files, why);
  if (!lib) {
    out.reason = why + ": no " + spec.name + " on this machine";
    return out;
  }
  Symbols symbols(lib);
  bind(symbols, out.api);
  if (!symbols.missing().empty()) {
    const std::string &file = spec.files.back();
    out.reason = file.substr(0, file.find(".so")) + " has no " + symbols.missing() + ": " + spec.needs + " is needed";
  }
  return out;
}

}  // namespace coil::cuda
