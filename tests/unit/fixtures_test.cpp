// Fixtures captured from PyTorch (scripts/capture_fixtures.py): each parses, verifies
// against coil's meta functions, matches its tensor files, round-trips through the
// printer and carries Inductor's kernel count; every registered op has a fixture and
// the committed coverage table is current.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/parser.h"
#include "frontend/printer.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "test_util.h"
#include "tools/coverage.h"

namespace coil {
namespace {
using test::read_text;

std::filesystem::path fixtures_dir() { return test::source_dir() / "tests" / "fixtures"; }

// Examples and fixtures alike: parse, verify against the meta functions, match the
// tensor files, and print back to the same text.
class GraphCase : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(GraphCase, ParsesVerifiesAndRoundTrips) {
  const auto dir = GetParam();
  Graph g = test::fixture_graph(dir);
  check_graph_inputs(g, read_safetensors((dir / "inputs.safetensors").string()), "inputs");
  check_graph_outputs(g, read_safetensors((dir / "expected.safetensors").string()), "expected");
  std::string once = frontend::print_graph(g);
  // A graph of symbolic sizes prints them as symbols: read it back for the same values.
  std::map<std::string, int64_t> values = symbol_values(g);
  frontend::SizeValues sizes(values.begin(), values.end());
  EXPECT_EQ(frontend::print_graph(frontend::parse_graph(once, "printed.py", sizes.empty() ? nullptr : &sizes)), once);
}

auto case_name = [](const auto &info) { return info.param.filename().string(); };
INSTANTIATE_TEST_SUITE_P(Bundled, GraphCase, testing::ValuesIn(test::example_dirs()), case_name);
INSTANTIATE_TEST_SUITE_P(Captured, GraphCase, testing::ValuesIn(test::fixture_dirs()), case_name);

TEST(Examples, AllTwelveArePresent) { EXPECT_EQ(test::example_dirs().size(), 12u); }

class Fixture : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(Fixture, RecordsInductorsCpuKernelCount) {
  auto meta = nlohmann::json::parse(read_text(GetParam() / "meta.json"));
  ASSERT_TRUE(meta.contains("inductor_kernels_cpu"));
  EXPECT_TRUE(meta["inductor_kernels_cpu"].is_number_integer()) << meta.dump();
}

INSTANTIATE_TEST_SUITE_P(Captured, Fixture, testing::ValuesIn(test::fixture_dirs()), case_name);

tools::Coverage all_coverage() {
  return tools::coverage_of({fixtures_dir().string(), (test::source_dir() / "examples").string()});
}

TEST(Coverage, EveryRegisteredOpHasAFixture) {
  auto missing = tools::uncovered_ops(all_coverage());
  std::string names;
  for (const auto &m : missing) names += " " + m;
  EXPECT_TRUE(missing.empty()) << "registered ops without a fixture:" << names;
}

TEST(Coverage, CommittedTableIsCurrent) {
  std::string committed = read_text(fixtures_dir() / "COVERAGE.md");
  EXPECT_EQ(committed, tools::coverage_table(all_coverage()))
      << "regenerate it: build/coil coverage tests/fixtures examples > tests/fixtures/COVERAGE.md";
}

}  // namespace
}  // namespace coil
