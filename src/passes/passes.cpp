// The graph passes in order. Each one keeps every graph output's type; checked here.
#include "passes/passes.h"

namespace coil::passes {
namespace {

void check_output_types(const Graph &before, const Graph &after) {
  std::vector<ValueId> was = before.outputs(), now = after.outputs();
  COIL_ASSERT(was.size() == now.size(), "the graph passes changed the number of outputs from ", was.size(), " to ",
              now.size());
  for (size_t i = 0; i < was.size(); ++i)
    COIL_ASSERT(before.type(was[i]) == after.type(now[i]), "the graph passes changed output ", i, " from ",
                before.type(was[i]).str(), " to ", after.type(now[i]).str());
}

}  // namespace

Graph run_graph_passes(const Graph &g, const ScalarEvaluator &eval, PassLog *log) {
  Graph out;
  {
    GuardActivity what("the pass removing no-ops");
    out = remove_noops(g, log);
  }
  {
    GuardActivity what("the pass folding scalar subgraphs");
    out = fold_scalar_subgraphs(out, eval, log);
  }
  {
    GuardActivity what("common subexpression elimination");
    out = eliminate_common_subexpressions(out, log);
  }
  {
    GuardActivity what("dead code elimination");
    out = eliminate_dead_code(out, log);
  }
  check_output_types(g, out);
  return out;
}

}  // namespace coil::passes
