// How the graph passes change a Graph. A Graph is built only through GraphBuilder, so
// a pass records what it changes in a GraphEdit (values replaced by others, nodes
// dropped, nodes substituted) and rebuild() makes the new graph from the old one: every
// kept node is added again under its name and location, its arguments re-bound and its
// meta function re-run, and the rebuilt node must have the types it had before.
//
// Also here: the facts about ops and storage the passes share (which ops are random,
// which are views, where a view starts in its base's storage), since a value that
// shares memory with another cannot always be swapped for an equal one.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/storage.h"

namespace coil::passes {

/// Which value each replaced value now stands for, both in the old graph's ids. Chains
/// are followed: after replace(a, b) and replace(b, c), uses of a read c.
class Replacements {
 public:
  void replace(ValueId from, ValueId to);
  ValueId resolve(ValueId v) const;
  bool is_replaced(ValueId v) const { return to_.count(v.index) > 0; }
  bool empty() const { return to_.empty(); }

 private:
  std::map<int, ValueId> to_;
};

/// A node built in place of an old one, under the old one's name and location.
struct NodeSubstitute {
  const OpDef *op = nullptr;
  std::vector<Arg> positional;
  std::vector<std::pair<std::string, Arg>> keywords;
};

/// What a pass changes in a graph, in the old graph's ids.
struct GraphEdit {
  Replacements replacements;
  std::set<int> dropped;  // old node indices
  std::map<int, NodeSubstitute> substitutes;
  /// Old node index -> the layout its output 0 takes, for ops whose layout is their
  /// library's (OpDef::layout_from_backend). With any, the nodes after it may change
  /// their strides as their meta rules follow (never their dtypes or sizes).
  std::map<int, Shape> layouts;

  void drop(int node) { dropped.insert(node); }
  bool is_dropped(int node) const { return dropped.count(node) > 0; }
  bool empty() const { return replacements.empty() && dropped.empty() && substitutes.empty() && layouts.empty(); }
};

/// `g` with `edit` applied: inputs and constants (names, order), node names, locations
/// and the output tree are kept, with every use of a replaced value (the output tree's
/// included) reading its replacement. An InternalError when a kept node reads a dropped
/// node's output or a rebuilt node's types differ from the old node's.
Graph rebuild(const Graph &g, const GraphEdit &edit);

/// A graph of only the nodes `nodes` of `g` (old indices, in order), which must read no
/// graph input or constant, returning `output`. The fold pass evaluates these.
Graph extract_subgraph(const Graph &g, const std::vector<int> &nodes, ValueId output);

/// Ops that draw random numbers (by name, or because they take a Generator): two calls
/// give different values, so they are never folded or merged.
bool is_random(const OpDef &op);

/// The node that writes `v`, or null for a graph input or constant.
const Node *producer_of(const Graph &g, ValueId v);

/// For each value of `g` (by index): true when an as_strided with an explicit
/// storage_offset reads it, directly or through views. Such a read depends on which
/// buffer holds the value, not only on its elements, so the value cannot be replaced
/// by an equal value held elsewhere.
std::vector<bool> read_at_absolute_offset(const Graph &g);

}  // namespace coil::passes
