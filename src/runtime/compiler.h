// Building CPU kernels: the system C++ compiler, run as a subprocess, turns one generated
// translation unit into one shared object in the cache (DESIGN.md, decisions 7 and 9).
// Tests: tests/unit/runtime_test.cpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/isa.h"

namespace coil {

/// What a finished subprocess left: its exit code (128 + N when signal N killed it) and
/// everything it wrote.
struct ProcessResult {
  int exit_code = 0;
  std::string out;
  std::string err;
};

/// Runs `argv` (argv[0] searched on PATH) without a shell, stdin from /dev/null, stdout
/// and stderr captured, and waits for it. A program that cannot start is a UserError.
ProcessResult run_process(const std::vector<std::string> &argv);

struct CxxCompiler {
  std::string path;      // as found on PATH: what is run (a ccache symlink stays one)
  std::string identity;  // first line of `--version` and the symlink-free path; in cache keys
};

/// The option `cpp.compiler` (default "c++") found on PATH and asked for its version,
/// once per process and name. A UserError when it is not found or does not run.
CxxCompiler find_compiler();

/// Where the kernel prelude headers are (`-I` of every kernel), first found of:
///   1. runtime/include beside the shared library coil is linked into (the Python
///      package's module, installed with them: CMakeLists.txt);
///   2. the compile definition COIL_RUNTIME_INCLUDE_DIR, when that folder exists;
///   3. runtime/include in the folder of /proc/self/exe or any folder above it
///      (a build tree inside the source tree);
///   4. $COIL_SOURCE_DIR/runtime/include.
/// The folder two above it is where the Triton helpers are (python/coil_triton).
/// A UserError naming those places when none has it.
std::filesystem::path runtime_include_dir();

/// The digest of every file under `include` with its path relative to it: in the key of
/// each kernel and precompiled header, so that none built against older headers is reused.
std::string headers_digest(const std::filesystem::path &include);

/// Every flag of a kernel build but the source and output: -shared -fPIC -O3 -std=c++17
/// -fopenmp -fno-math-errno -ffp-contract=off -I <include>, `isa`'s flags, then `extra`.
std::vector<std::string> shared_object_flags(const std::filesystem::path &include, Isa isa,
                                             const std::vector<std::string> &extra);

struct SharedObjectRequest {
  std::string source;
  std::vector<std::string> flags;    // after the standard ones
  std::string name;                  // file stem of the .cpp and .so: letters, digits, _ - .
  std::optional<Isa> isa;            // the ISA the source was generated for; empty: selected_isa()
  bool precompiled_prelude = false;  // a generated kernel file: build it with the prelude's PCH (cpp.pch)
};

/// Compiles `r.source` into <cache>/cpp/<ab>/<key>/<name>.so and returns that path. The
/// key covers the source, name, flags, compiler identity, ISA, the prelude headers'
/// contents, the precompiled header's key (runtime/pch.h) and coil's version. On a cache
/// hit the compiler does not run; an entry whose files differ from what was published
/// (runtime/cache.h) is reported, removed and built again. With `r.precompiled_prelude` the header is built first
/// when the cache lacks it; a build it breaks is done again without it, and its
/// meta.json's "pch" says whether it was used. A compiler failure is a UserError with
/// its stderr (cut to about 4 KB), the path of the rejected source, kept in
/// <cache>/failed/, and the command that compiles it, quoted for a POSIX shell.
std::string build_shared_object(const SharedObjectRequest &r, bool *cache_hit = nullptr);

}  // namespace coil
