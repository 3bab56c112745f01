// Shared helpers for coil's unit tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace coil::test {

/// The repository root (tests run from it; COIL_SOURCE_DIR overrides).
inline std::filesystem::path source_dir() {
  if (const char *env = std::getenv("COIL_SOURCE_DIR")) return env;
#ifdef COIL_SOURCE_DIR
  return COIL_SOURCE_DIR;
#else
  return std::filesystem::current_path();
#endif
}

/// Every bundled example directory, sorted by name.
inline std::vector<std::filesystem::path> example_dirs() {
  std::vector<std::filesystem::path> out;
  for (const auto &e : std::filesystem::directory_iterator(source_dir() / "examples"))
    if (e.is_directory()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace coil::test
