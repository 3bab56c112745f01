// The fixture coverage table: for every registered op, the dtypes and the kinds of
// inputs (size-0 and size-1 dims, non-contiguous, broadcast) the fixture graphs
// exercise it with. `coil coverage DIR...` prints it; tests/unit/fixtures_test.cpp
// checks that the committed table is current and that every op has a fixture.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace coil::tools {

struct OpCoverage {
  std::set<DType> dtypes;
  bool size0 = false, size1 = false, noncontiguous = false, broadcast = false;
  std::set<std::string> graphs;  // names of the graphs that use the op
};

using Coverage = std::map<std::string, OpCoverage>;  // by op target

/// Adds the nodes of `g` (named `graph_name`) to `coverage`.
void add_coverage(const Graph &g, const std::string &graph_name, Coverage &coverage);

/// Parses every `graph.py` under the given directories (one level: DIR/<case>/graph.py).
Coverage coverage_of(const std::vector<std::string> &dirs);

/// The markdown table, one row per registered op (ops with no fixture included), then
/// core_aten_table.
std::string coverage_table(const Coverage &coverage);

/// One row per op of the Core ATen opset: native, extern, refused (and why) or missing,
/// and the number of graphs using it.
std::string core_aten_table(const Coverage &coverage);

/// Registered ops that no graph uses.
std::vector<std::string> uncovered_ops(const Coverage &coverage);

}  // namespace coil::tools
