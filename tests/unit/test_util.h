// Shared helpers for coil's unit tests.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "support/error.h"

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

/// Every case directory (one holding a graph.py) under `dir`, sorted by name.
inline std::vector<std::filesystem::path> case_dirs(const std::filesystem::path &dir) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    if (std::filesystem::exists(e.path() / "graph.py")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// The bundled examples and the fixtures captured from PyTorch.
inline std::vector<std::filesystem::path> example_dirs() { return case_dirs(source_dir() / "examples"); }
inline std::vector<std::filesystem::path> fixture_dirs() { return case_dirs(source_dir() / "tests" / "fixtures"); }

/// The message of the UserError `fn` throws, or "(no error)".
inline std::string user_error_of(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const UserError &e) {
    return e.message();
  }
  return "(no error)";
}

/// A whole file as text ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace coil::test
