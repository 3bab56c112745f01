// Shared helpers for coil's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "ir/loop_ir.h"
#include "support/error.h"

// COIL_ASAN: this test binary is built with AddressSanitizer (the sanitizer build of
// scripts/test.sh), where a few tests skip what ASan forbids or what only the g++ run does.
#if defined(__SANITIZE_ADDRESS__)
#define COIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COIL_ASAN 1
#endif
#endif

namespace coil::test {

/// Symbols of one graph of symbolic sizes, as SymInts with their values: `sym("s0", 5)`.
struct Symbols {
  std::shared_ptr<SizeGuards> guards = std::make_shared<SizeGuards>();
  SymInt operator()(const std::string &name, int64_t value) const {
    guards->add_symbol(name, value);
    return SymInt::of(ir::Expr::symbol(name), value, guards);
  }
};

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

/// The family of a dyn_ fixture, one graph captured at several sizes (`dyn_sum` of
/// `dyn_sum_s7` and `dyn_sum_s16`); "" for other fixtures.
inline std::string dynamic_family(const std::filesystem::path &dir) {
  static const std::regex name("(dyn_.*)_s[0-9x]+");
  std::smatch m;
  std::string base = dir.filename().string();
  return std::regex_match(base, m, name) ? m[1].str() : "";
}

/// A case's graph.py, read as `coil run` reads it: a graph of symbolic sizes (the dyn_
/// fixtures) for the sizes of the case's inputs.safetensors.
inline Graph fixture_graph(const std::filesystem::path &dir) {
  return frontend::parse_graph_file((dir / "graph.py").string(), tensor_shapes_in((dir / "inputs.safetensors").string()));
}

/// Every output of program `p` against eager's `expected`, with the tolerances of the
/// testing tiers (src/io/compare.h), never loosened here.
inline void expect_outputs_match(const std::vector<HostTensor> &outputs, const TensorList &expected,
                                 const ir::Program &p) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor *want = find_tensor(expected, output_tensor_name(i));
    ASSERT_NE(want, nullptr);
    Comparison c = compare(outputs[i], *want, default_tolerance(want->dtype, ir::max_reduction_size(p, p.outputs[i])));
    EXPECT_TRUE(c.pass) << output_tensor_name(i) << ": " << c.mismatches << " mismatches, first " << c.first_mismatch
                        << ", max abs error " << c.max_abs_error;
  }
}

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

/// Compares generated `source` with the golden file `golden` after normalization (trailing
/// spaces), failing at the first line that differs; COIL_UPDATE_GOLDEN=1 rewrites the file
/// after an intended change, and the diff is then reviewed like any other.
inline void expect_matches_golden(const std::filesystem::path &golden, const std::string &source) {
  if (std::getenv("COIL_UPDATE_GOLDEN")) std::ofstream(golden) << source;
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "no golden file " << golden << " (COIL_UPDATE_GOLDEN=1 writes it)";
  auto lines_of = [](const std::string &text) {
    std::vector<std::string> out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
      out.push_back(line);
    }
    return out;
  };
  auto a = lines_of(source), b = lines_of(read_text(golden));
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string got = i < a.size() ? a[i] : "<end>", expected = i < b.size() ? b[i] : "<end>";
    ASSERT_EQ(got, expected) << golden.string() << ":" << i + 1 << ": the first line that differs";
  }
}

}  // namespace coil::test
