// The precompiled kernel prelude (DESIGN.md, decision 7): coil/precompiled.h, every
// header a generated translation unit includes, compiled once per compiler, kernel
// flags, ISA and headers' contents into the cache, and handed to each kernel build so
// that the build parses only the kernels. Tests: tests/unit/runtime_test.cpp.
//
//   <root>/pch/<key[0:2]>/<key>/coil/precompiled.h.gch   GCC: found through -I <entry>
//   <root>/pch/<key[0:2]>/<key>/precompiled.pch          clang: named by -include-pch
//   <root>/pch/<key[0:2]>/<key>/meta.json
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/compiler.h"

namespace coil {

/// What a kernel build needs to find or build its precompiled header.
struct PchRequest {
  CxxCompiler compiler;
  Isa isa;
  std::vector<std::string> flags;  // every flag of the kernel build (shared_object_flags)
  std::filesystem::path include;   // the runtime include folder, where coil/precompiled.h is
  std::string headers_digest;      // of every file under `include`
};

/// The cache key of the header `r` asks for: the compiler's identity, the flags that
/// compile it (the kernel build's, without linking), the ISA, the headers' digest and
/// coil's version. Known without building it, so a kernel that is a cache hit needs none.
std::string pch_key(const PchRequest &r);

/// The flags that make a kernel build use the header, placed before its other flags;
/// built into the cache first when it is not there (two processes may build it at once:
/// both succeed, one entry stays). Empty when the compiler cannot build it: kernels are
/// then compiled without one, said under COIL_DEBUG, tried again by the next process.
std::vector<std::string> pch_flags(const PchRequest &r);

/// Whether a kernel build's stderr says the compiler found the header but did not use it
/// (GCC's -Winvalid-pch: the build went on without it); the line that says why, or "".
std::string pch_rejection(const std::string &compiler_stderr);

}  // namespace coil
