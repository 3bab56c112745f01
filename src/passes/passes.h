// Graph passes: rewrites of the ATen graph before lowering, each one a function from
// Graph to Graph that keeps PyTorch's semantics (values, dtypes, sizes and strides of
// every graph output) and says what it changed.
//
//   remove_noops                  assertions, aliases, identity views and copies -> their input
//   fold_scalar_subgraphs         nodes computing a 0-dim/one-element value from no graph
//                                 input -> one aten.full node holding the value
//   eliminate_common_subexpressions  two nodes with the same op and the same arguments -> one
//   eliminate_dead_code           nodes no graph output depends on -> gone
//
// run_graph_passes applies them in that order (the driver reads like a script).
// Tests: tests/unit/passes_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace coil::passes {

/// What a pass did, one line per change, in words: `cse: _to_copy_1 is _to_copy`.
struct PassLog {
  std::vector<std::string> lines;
};

Graph remove_noops(const Graph &g, PassLog *log = nullptr);
Graph fold_scalar_subgraphs(const Graph &g, PassLog *log = nullptr);
Graph eliminate_common_subexpressions(const Graph &g, PassLog *log = nullptr);
Graph eliminate_dead_code(const Graph &g, PassLog *log = nullptr);

/// All of the above, in order.
Graph run_graph_passes(const Graph &g, PassLog *log = nullptr);

}  // namespace coil::passes
