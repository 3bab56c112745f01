// Every bundled example parses, verifies against the meta functions, matches its
// tensor files and round-trips through the printer.
#include <gtest/gtest.h>

#include "frontend/parser.h"
#include "frontend/printer.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace coil {
namespace {

class Example : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(Example, ParsesVerifiesAndRoundTrips) {
  const auto dir = GetParam();
  Graph g = frontend::parse_graph_file((dir / "graph.py").string());
  check_graph_inputs(g, read_safetensors((dir / "inputs.safetensors").string()), "inputs");
  check_graph_outputs(g, read_safetensors((dir / "expected.safetensors").string()), "expected");
  std::string once = frontend::print_graph(g);
  EXPECT_EQ(frontend::print_graph(frontend::parse_graph(once, "printed.py")), once);
}

INSTANTIATE_TEST_SUITE_P(Bundled, Example, testing::ValuesIn(test::example_dirs()),
                         [](const auto &info) { return info.param.filename().string(); });

TEST(Examples, AllTwelveArePresent) { EXPECT_EQ(test::example_dirs().size(), 12u); }

}  // namespace
}  // namespace coil
