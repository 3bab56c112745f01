// The graph every stage consumes: ATen nodes over typed tensor values.
//
// Values are tensors: graph inputs, constants (module attributes) and node outputs.
// A node has an op from the registry, its arguments bound to the op's schema (one per
// schema argument, defaults filled in), and the values it produces, whose types the op's
// meta function computed. Graphs are built through GraphBuilder, which checks arguments
// and runs meta functions as nodes are added, so a Graph is always well typed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/arg.h"
#include "graph/tensor_type.h"

namespace coil {

struct OpDef;

struct Value {
  enum class Kind : uint8_t { Input, Constant, NodeOutput };
  Kind kind = Kind::Input;
  std::string name;  // empty for an unnamed output of a multi-output node
  TensorType type;
  int producer = -1;  // node index for NodeOutput
  int output_index = 0;
};

struct Node {
  std::string name;
  const OpDef *op = nullptr;
  std::vector<Arg> args;  // one per schema argument
  std::vector<ValueId> outputs;
  SourceLoc loc;

  /// True when the op returns a tuple or list (the text reads its items with `name[i]`).
  bool multi_output() const;
  const std::string &target() const;
};

/// The structure of what forward returns: a value, None, or a (nested) tuple.
struct OutputTree {
  enum class Kind : uint8_t { Value, None, Tuple };
  Kind kind = Kind::Tuple;
  ValueId value;
  std::vector<OutputTree> items;
};

class Graph {
 public:
  const std::vector<Value> &values() const { return values_; }
  const std::vector<Node> &nodes() const { return nodes_; }
  const std::vector<ValueId> &inputs() const { return inputs_; }
  const std::vector<ValueId> &constants() const { return constants_; }
  const OutputTree &output_tree() const { return outputs_; }
  /// The returned values in order, None entries skipped.
  std::vector<ValueId> outputs() const;

  const Value &value(ValueId id) const { return values_.at(size_t(id.index)); }
  const TensorType &type(ValueId id) const { return value(id).type; }
  const Node &producer(ValueId id) const { return nodes_.at(size_t(value(id).producer)); }

  /// Tensor values a node reads, in argument order (lists flattened).
  std::vector<ValueId> node_inputs(const Node &n) const;

 private:
  friend class GraphBuilder;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> constants_;
  OutputTree outputs_;
};

/// The guards of a graph of symbolic sizes (graph/sym_int.h), which its symbolic sizes
/// share; null for a graph without symbols.
std::shared_ptr<SizeGuards> size_guards_of(const Graph &g);
/// The value each symbol of the graph was read with (its inputs' sizes, its SymInt inputs):
/// {"s0": 8}.
std::map<std::string, int64_t> symbol_values(const Graph &g);
/// What a graph's guards say: each symbol with its value and whether it was specialized,
/// then each guard with what relied on it; "" for a graph without symbols (a dump, sizes.txt).
std::string size_guards_str(const Graph &g);

struct Schema;
struct SchemaArg;

/// Checks `value` against the schema's type for `arg` and puts it in canonical form:
/// Float arguments hold doubles, `int[2]` lists given as one int are expanded. A
/// UserError at the argument's location when the type does not fit.
Arg canonical_arg(const Schema &schema, const SchemaArg &arg, Arg value);

/// Builds a Graph node by node. Every error is a UserError placed at the location
/// given for the offending node or argument.
class GraphBuilder {
 public:
  ValueId add_input(const std::string &name, const TensorType &type, const SourceLoc &loc = {});
  ValueId add_constant(const std::string &name, const TensorType &type, const SourceLoc &loc = {});

  /// Binds positional and keyword arguments to the op's schema, checks their types,
  /// runs the meta function and returns the node's index. Outputs are named after
  /// the node when it has a single tensor output; otherwise they start unnamed.
  int add_node(const std::string &name, const OpDef &op, std::vector<Arg> positional,
               std::vector<std::pair<std::string, Arg>> keywords, const SourceLoc &loc = {});

  /// Names output `index` of a multi-output node (`getitem = var_mean[1]`).
  ValueId name_output(int node, int64_t index, const std::string &name, const SourceLoc &loc = {});

  /// Gives output `index` of an op whose layout PyTorch leaves to its library
  /// (OpDef::layout_from_backend) the dense layout `strides` a graph states for it. A
  /// UserError when the op's layout is its own rule or `strides` is not dense.
  void set_output_layout(int node, int64_t index, const SymShape &strides, const SourceLoc &loc = {});
  /// Gives output `index` of an op whose type there PyTorch leaves to its kernel
  /// (OpDef::typed_by_backend) the dtype and sizes a graph states for it, contiguous. A
  /// UserError when the op types that output by its own rule, a dtype is not floating where
  /// they differ, or the ranks differ.
  void set_output_type(int node, int64_t index, const TensorType &type, const SourceLoc &loc = {});

  void set_outputs(OutputTree tree) { g_.outputs_ = std::move(tree); }

  const Graph &graph() const { return g_; }
  Graph finish() { return std::move(g_); }

 private:
  ValueId add_value(Value v);
  Graph g_;
};

}  // namespace coil
