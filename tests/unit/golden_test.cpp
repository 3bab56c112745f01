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

class Golden : public testing::TestWithParam<std::string> {};

TEST_P(Golden, GeneratedCppIsUnchanged) {
  auto dir = test::source_dir() / "tests" / "golden" / GetParam();
  Compilation c = compile_graph(frontend::parse_graph_file((dir / "graph.py").string()), sched::ScheduleOptions{});
  codegen::CppOptions avx512;
  avx512.vector_bytes = 64;
  std::string source = codegen::generate_cpp(c.schedule, avx512);
  test::expect_matches_golden(dir / "kernel.cpp", source);
}

INSTANTIATE_TEST_SUITE_P(Seed, Golden, testing::Values("square", "sum", "relu_chain", "add_mul_add"),
                         [](const auto &info) { return std::string(info.param); });

}  // namespace
}  // namespace coil
