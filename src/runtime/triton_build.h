// Building GPU kernels: Triton source to cubin through Triton's own compiler, run as a
// Python subprocess at compile time only (python/coil_triton/compile_kernels.py, many
// kernels per run, in parallel), cached like CPU kernels (DESIGN.md, decisions 8 and 9).
// What a launcher needs (entry name, warps, shared memory, hidden scratch pointers) is read
// from each compiled kernel's metadata, never assumed from a Triton version.
// Tests: tests/unit/triton_build_test.cpp; on a GPU, tests/gpu/launch_test.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codegen/triton/triton_request.h"

namespace coil {

/// A pointer Triton appends after the declared arguments; `size` bytes per program
/// (times num_ctas), 0 meaning a null pointer is passed.
struct TritonHiddenArg {
  std::string name;  // global_scratch, profile_scratch
  int64_t size = 0;
  int64_t align = 1;
};

/// What a launch needs, as read from the compiled kernel's metadata.
struct TritonLaunchFacts {
  std::string name;  // the cubin's entry point
  int num_warps = 0;
  int num_ctas = 1;
  int64_t shared = 0;                        // dynamic shared memory in bytes
  std::vector<TritonArg> args;               // the declared arguments that are not constexpr, in order
  std::vector<TritonHiddenArg> hidden_args;  // passed after `args`, in order
  bool cooperative_grid = false;
  bool pdl = false;  // programmatic dependent launch
  int capability = 0;
  std::string triton_version;
};

/// Parses the <name>.json the helper writes; a UserError naming `origin` when malformed.
TritonLaunchFacts parse_launch_facts(std::string_view json_text, std::string_view origin);

struct TritonBinary {
  std::string cubin;  // an ELF image for cuModuleLoadData
  TritonLaunchFacts facts;
  std::filesystem::path entry;  // the cache entry holding <name>.py, .cubin, .json and meta.json
  bool cache_hit = false;
};

/// Compiles every request, in order, into <cache>/triton/<ab>/<key>/. Cache hits run no
/// Python; the misses go to one helper run, which compiles them in parallel. The key
/// covers the source, name, signature, constexprs, divisibility, warps, stages,
/// capability, the Triton version, Triton's environment variables (TRITON_*, MLIR_*,
/// LLVM_*, ...), the helper's own text and coil's version. A kernel Triton rejects is a
/// UserError naming the kernel, its source kept in <cache>/failed/ and Triton's message
/// (the kernels that compiled are cached all the same).
std::vector<TritonBinary> build_triton_kernels(const std::vector<TritonCompileRequest> &requests);
TritonBinary build_triton_kernel(const TritonCompileRequest &request);

/// A file of coil's Python package (python/coil_triton/<name>); a UserError when missing.
std::filesystem::path triton_helper_file(std::string_view name);

/// The Python that runs the helper: the option `triton.python` (COIL_TRITON_PYTHON) when
/// set, else .venv/bin/python of coil's source folder when it exists, else python3.
std::string triton_python();

/// The Triton version `triton_python()` has, asked once per process and interpreter; a
/// UserError saying how to install it when there is none.
std::string triton_version();

}  // namespace coil
