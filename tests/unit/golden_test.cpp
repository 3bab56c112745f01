// Golden files: the generated C++ of the seed's four examples, kept in tests/golden/<case>/
// as kernel.cpp and compared after normalization (trailing spaces), reporting the first
// line that differs. COIL_UPDATE_GOLDEN=1 rewrites them after an intended change; the
// diff is then reviewed like any other.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "codegen/cpp/cpp_codegen.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "test_util.h"

namespace coil {
namespace {

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    out.push_back(line);
  }
  return out;
}

class Golden : public testing::TestWithParam<std::string> {};

TEST_P(Golden, GeneratedCppIsUnchanged) {
  auto dir = test::source_dir() / "tests" / "golden" / GetParam();
  Compilation c = compile_graph(frontend::parse_graph_file((dir / "graph.py").string()), sched::ScheduleOptions{});
  codegen::CppOptions avx512;
  avx512.vector_bytes = 64;
  std::string source = codegen::generate_cpp(c.schedule, avx512);
  auto golden = dir / "kernel.cpp";
  if (std::getenv("COIL_UPDATE_GOLDEN")) std::ofstream(golden) << source;
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "no golden file " << golden << " (COIL_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  auto a = lines_of(source), b = lines_of(want.str());
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string got = i < a.size() ? a[i] : "<end>", expected = i < b.size() ? b[i] : "<end>";
    ASSERT_EQ(got, expected) << golden.string() << ":" << i + 1 << ": the first line that differs";
  }
}

INSTANTIATE_TEST_SUITE_P(Seed, Golden, testing::Values("square", "sum", "relu_chain", "add_mul_add"),
                         [](const auto &info) { return std::string(info.param); });

}  // namespace
}  // namespace coil
