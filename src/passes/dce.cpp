// eliminate_dead_code: nodes none of whose outputs a graph output depends on are
// removed. Graph inputs and constants stay: they are the calling convention.
#include "passes/graph_rewrite.h"
#include "passes/passes.h"

namespace coil::passes {

Graph eliminate_dead_code(const Graph &g, PassLog *log) {
  std::vector<bool> live(g.values().size(), false);
  for (ValueId v : g.outputs()) live[size_t(v.index)] = true;
  GraphEdit edit;
  // Backwards: a node is live when something live reads one of its outputs.
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node &n = g.nodes()[i];
    bool used = false;
    for (ValueId v : n.outputs) used = used || live[size_t(v.index)];
    if (!used) {
      edit.drop(int(i));
      continue;
    }
    for (ValueId v : g.node_inputs(n)) live[size_t(v.index)] = true;
  }
  if (log)
    for (int i : edit.dropped) log->lines.push_back(str_cat("dce: removed ", g.nodes()[size_t(i)].name, " (unused)"));
  return rebuild(g, edit);
}

}  // namespace coil::passes
