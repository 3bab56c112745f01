#include "passes/graph_rewrite.h"

#include <string_view>

#include "graph/registry.h"
#include "graph/strides.h"

namespace coil::passes {

void Replacements::replace(ValueId from, ValueId to) {
  COIL_ASSERT(!(resolve(to) == from), "value ", from.index, " would stand for itself");
  to_[from.index] = to;
}

ValueId Replacements::resolve(ValueId v) const {
  for (auto it = to_.find(v.index); it != to_.end(); it = to_.find(v.index)) v = it->second;
  return v;
}

namespace {

/// Adds nodes of an old graph to a new one, mapping the old graph's value ids to the
/// new graph's.
class Rebuilder {
 public:
  Rebuilder(const Graph &old, const Replacements &r, const std::map<int, Shape> *layouts = nullptr)
      : old_(old), r_(r), layouts_(layouts), ids_(old.values().size()) {}

  void copy_inputs_and_constants() {
    for (ValueId v : old_.inputs()) ids_[size_t(v.index)] = b_.add_input(old_.value(v).name, old_.type(v));
    for (ValueId v : old_.constants()) ids_[size_t(v.index)] = b_.add_constant(old_.value(v).name, old_.type(v));
  }

  /// The old node again, its tensor arguments read through the replacements.
  void copy_node(const Node &n) {
    NodeSubstitute same{n.op, {}, {}};
    const Schema &s = n.op->schema;
    for (size_t i = 0; i < s.args.size(); ++i) {
      Arg a = map_arg(n.args[i]);
      if (s.args[i].kwarg_only)
        same.keywords.emplace_back(s.args[i].name, std::move(a));
      else
        same.positional.push_back(std::move(a));
    }
    add(n, same);
  }

  /// A node in place of `old`: old's name and location, its outputs standing for old's.
  void add(const Node &old, const NodeSubstitute &made_as) {
    int index = b_.add_node(old.name, *made_as.op, made_as.positional, made_as.keywords, old.loc);
    const Node &made = b_.graph().nodes()[size_t(index)];
    COIL_ASSERT(made.outputs.size() == old.outputs.size(), "rebuilding '", old.name, "' gave ",
                made.outputs.size(), " outputs instead of ", old.outputs.size());
    std::vector<ValueId> outputs = made.outputs;
    bool name_outputs = made.multi_output();
    // An op whose layout is its library's keeps the layouts it had (a graph may have stated
    // them), unless the edit gives its first output another.
    if (made.op->layout_from_backend) {
      auto chosen = layouts_ ? layouts_->find(old_index(old)) : std::map<int, Shape>::const_iterator{};
      bool given = layouts_ && chosen != layouts_->end();
      for (size_t i = 0; i < outputs.size(); ++i) {
        const SymShape strides = given && i == 0 ? SymShape(chosen->second) : old_.type(old.outputs[i]).strides;
        if (!same(b_.graph().type(outputs[i]).strides, strides)) b_.set_output_layout(index, int64_t(i), strides, old.loc);
      }
    }
    // So do the outputs whose type is its kernel's.
    for (int64_t i : made.op->typed_by_backend) {
      const TensorType &then = old_.type(old.outputs[size_t(i)]);
      if (b_.graph().type(outputs[size_t(i)]) != then) b_.set_output_type(index, i, then, old.loc);
    }
    bool follow = layouts_ && !layouts_->empty();
    for (size_t i = 0; i < outputs.size(); ++i) {
      ValueId was = old.outputs[i];
      const TensorType &now = b_.graph().type(outputs[i]), &then = old_.type(was);
      bool same = follow ? now.dtype == then.dtype && now.sizes == then.sizes && now.device == then.device : now == then;
      COIL_ASSERT(same, "rebuilding '", old.name, "' changed output ", i, " from ", then.str(), " to ", now.str());
      const std::string &name = old_.value(was).name;
      if (name_outputs && !name.empty()) b_.name_output(index, int64_t(i), name, old.loc);
      ids_[size_t(was.index)] = outputs[i];
    }
  }

  OutputTree map_tree(const OutputTree &t) const {
    OutputTree out{t.kind, {}, {}};
    if (t.kind == OutputTree::Kind::Value) out.value = map(t.value);
    for (const OutputTree &item : t.items) out.items.push_back(map_tree(item));
    return out;
  }

  void set_outputs(OutputTree t) { b_.set_outputs(std::move(t)); }
  Graph finish() { return b_.finish(); }

  ValueId map(ValueId old) const {
    ValueId v = r_.resolve(old);
    ValueId id = ids_[size_t(v.index)];
    COIL_ASSERT(id.index >= 0, "value '", old_.value(v).name, "' (", v.index,
                ") is read but is not in the rebuilt graph");
    return id;
  }

 private:
  Arg map_arg(const Arg &a) const {
    if (a.is<ValueId>()) return Arg(map(a.as<ValueId>()), a.loc);
    if (!a.is<ArgList>()) return a;
    ArgList items;
    for (const Arg &item : a.as<ArgList>()) items.push_back(map_arg(item));
    return Arg(std::move(items), a.loc);
  }

  int old_index(const Node &n) const { return int(&n - old_.nodes().data()); }

  const Graph &old_;
  const Replacements &r_;
  const std::map<int, Shape> *layouts_;
  GraphBuilder b_;
  std::vector<ValueId> ids_;  // by old value index; -1 when not (yet) in the new graph
};

}  // namespace

Graph rebuild(const Graph &g, const GraphEdit &edit) {
  if (edit.empty()) return g;
  Rebuilder r(g, edit.replacements, &edit.layouts);
  r.copy_inputs_and_constants();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.nodes()[i];
    if (edit.is_dropped(int(i))) continue;
    auto sub = edit.substitutes.find(int(i));
    if (sub != edit.substitutes.end())
      r.add(n, sub->second);
    else
      r.copy_node(n);
  }
  r.set_outputs(r.map_tree(g.output_tree()));
  return r.finish();
}

Graph extract_subgraph(const Graph &g, const std::vector<int> &nodes, ValueId output) {
  Replacements none;
  Rebuilder r(g, none);
  for (int i : nodes) r.copy_node(g.nodes()[size_t(i)]);
  r.set_outputs(OutputTree{OutputTree::Kind::Value, r.map(output), {}});
  return r.finish();
}

bool is_random(const OpDef &op) {
  static const std::set<std::string_view> kRandom = {
      "bernoulli", "cauchy",      "dropout",      "exponential", "feature_dropout", "geometric", "log_normal",
      "multinomial", "native_dropout", "normal", "poisson",    "rand",            "rand_like", "randint",
      "randint_like", "randn",    "randn_like",   "randperm",    "rrelu",           "rrelu_with_noise", "uniform",
  };
  if (kRandom.count(op.schema.name)) return true;
  for (const SchemaArg &a : op.schema.args)
    if (a.type.base == BaseType::Generator) return true;
  return false;
}

const Node *producer_of(const Graph &g, ValueId v) {
  if (g.value(v).kind != Value::Kind::NodeOutput) return nullptr;
  return &g.producer(v);
}

std::vector<bool> read_at_absolute_offset(const Graph &g) {
  std::vector<bool> read(g.values().size(), false);
  for (const Node &n : g.nodes()) {
    auto start = view_start(g, n, 0);
    if (!start || !start->absolute) continue;
    // Mark the base and every view between it and the storage it views.
    for (ValueId v = view_base(n);;) {
      read[size_t(v.index)] = true;
      const Node *p = producer_of(g, v);
      if (!p || !view_start(g, *p, g.value(v).output_index)) break;
      v = view_base(*p);
    }
  }
  return read;
}

}  // namespace coil::passes
