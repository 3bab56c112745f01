// Graph passes: rewrites of the ATen graph before lowering, each one a function from
// Graph to Graph that keeps PyTorch's semantics (values, dtypes, sizes and strides of
// every graph output) and says what it changed.
//
//   remove_noops                  assertions, aliases, identity views and copies -> their input
//   fold_scalar_subgraphs         nodes computing a 0-dim/one-element value from no graph
//                                 input -> one aten.full node holding the value
//   eliminate_common_subexpressions  two nodes with the same op and the same arguments -> one
//   eliminate_dead_code           nodes no graph output depends on -> gone
//   channels_last_convolutions    convolution outputs NHWC where an operand is (an option)
//
// run_graph_passes applies them in that order (the driver reads like a script).
// Tests: tests/unit/passes_test.cpp.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "io/host_tensor.h"

namespace coil::passes {

/// What a pass did, one line per change, in words: `cse: _to_copy_1 is _to_copy`.
struct PassLog {
  std::vector<std::string> lines;
};

/// How fold_scalar_subgraphs computes a value at compile time. The graph passes run
/// before lowering and do not depend on it: the driver supplies lowering and the reference
/// interpreter (driver/compile.h's reference_evaluator()).
struct ScalarEvaluator {
  /// Whether a node's op can be computed (it has a lowering).
  std::function<bool(const Node &)> can_evaluate;
  /// The one output of a graph of no inputs; nothing when it cannot be computed here (an
  /// op that raises, e.g. integer division by zero, raises at run time instead).
  std::function<std::optional<HostTensor>(const Graph &)> evaluate;
};

Graph remove_noops(const Graph &g, PassLog *log = nullptr);
Graph fold_scalar_subgraphs(const Graph &g, const ScalarEvaluator &eval, PassLog *log = nullptr);
Graph eliminate_common_subexpressions(const Graph &g, PassLog *log = nullptr);
Graph eliminate_dead_code(const Graph &g, PassLog *log = nullptr);

/// Convolution outputs channels-last where an operand is, and the values after them as their
/// ops follow; only intermediates change (src/passes/layouts.cpp). Not in
/// run_graph_passes: the driver runs it under the option layout.channels_last_convolutions.
Graph channels_last_convolutions(const Graph &g, PassLog *log = nullptr);

/// All of the above but channels_last_convolutions, in order.
Graph run_graph_passes(const Graph &g, const ScalarEvaluator &eval, PassLog *log = nullptr);

}  // namespace coil::passes
