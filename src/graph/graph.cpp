#include "graph/graph.h"

#include <functional>
#include <set>

#include "graph/registry.h"
#include "graph/strides.h"

namespace coil {
namespace {

// Checks one argument against its schema type and puts it in canonical form: Float
// arguments hold doubles, fixed-length lists are expanded from a bare int.
class ArgChecker {
 public:
  explicit ArgChecker(const SchemaArg &a) : a_(a) {}

  Arg check(Arg arg) const {
    const ArgType &t = a_.type;
    if (arg.is_none()) {
      if (t.optional) return arg;
      fail(arg, "None");
    }
    if (!t.is_list) return element(std::move(arg), t.base, false);
    if (!arg.is<ArgList>()) {
      // `int[2] stride=1` and `int[1] dim=0` accept a bare int, as PyTorch does.
      if (t.base == BaseType::Int && arg.is_int() && t.list_len > 0)
        return Arg(ArgList(size_t(t.list_len), Arg(arg.as<SymInt>())), arg.loc);
      fail(arg, arg.kind_name());
    }
    ArgList items;
    for (const Arg &item : arg.as<ArgList>()) {
      if (item.is_none() && t.elem_optional) {
        items.push_back(item);
        continue;
      }
      items.push_back(element(item, t.base, true));
    }
    // The length of an `int[N]` list is the op's to check: pooling takes [] for "same as
    // the kernel" and one value for every spatial dim.
    return Arg(std::move(items), arg.loc);
  }

 private:
  Arg element(Arg arg, BaseType base, bool in_list) const {
    switch (base) {
      case BaseType::Tensor:
        if (arg.is<ValueId>()) return arg;
        // A Python number where a Tensor is expected: PyTorch wraps it (`mul.Tensor(x, 2)`).
        if (!in_list && arg.is_number()) return arg;
        break;
      case BaseType::Scalar:
        if (arg.is_number()) return arg;
        break;
      case BaseType::Int:
        if (arg.is_int()) return arg;
        break;
      case BaseType::Float:
        if (arg.is<double>()) return arg;
        if (arg.is_int()) return Arg(double(arg.integer()), arg.loc);
        break;
      case BaseType::Bool:
        if (arg.is<bool>()) return arg;
        break;
      case BaseType::Str:
        if (arg.is<std::string>()) return arg;
        break;
      case BaseType::ScalarType:
        if (arg.is<DType>()) return arg;
        break;
      case BaseType::Layout:
        if (arg.is<Layout>()) return arg;
        break;
      case BaseType::Device:
        if (arg.is<Device>()) return arg;
        break;
      case BaseType::MemoryFormat:
        if (arg.is<MemoryFormat>()) return arg;
        break;
      case BaseType::Generator:
        break;  // only None, handled by the caller
    }
    fail(arg, in_list ? "a list holding " + arg.kind_name() : arg.kind_name());
  }

  [[noreturn]] void fail(const Arg &arg, const std::string &got) const {
    throw UserError(str_cat("argument '", a_.name, "' expects ", a_.type.str(), ", got ", got),
                    arg.loc);
  }

  const SchemaArg &a_;
};

std::vector<Arg> bind(const Schema &s, std::vector<Arg> positional,
                      std::vector<std::pair<std::string, Arg>> keywords, const SourceLoc &loc) {
  size_t max_positional = 0;
  while (max_positional < s.args.size() && !s.args[max_positional].kwarg_only) ++max_positional;
  if (positional.size() > max_positional)
    throw UserError(str_cat("takes at most ", max_positional, " positional argument",
                            max_positional == 1 ? "" : "s", " but ", positional.size(),
                            " were given; the schema is ", s.text),
                    positional[max_positional].loc.known() ? positional[max_positional].loc : loc);
  std::vector<std::optional<Arg>> slots(s.args.size());
  for (size_t i = 0; i < positional.size(); ++i) slots[i] = std::move(positional[i]);
  for (auto &[name, arg] : keywords) {
    int i = s.find_arg(name);
    if (i < 0)
      throw UserError(str_cat("no argument is named '", name, "'; the schema is ", s.text),
                      arg.loc.known() ? arg.loc : loc);
    if (slots[size_t(i)])
      throw UserError(str_cat("argument '", name, "' is given twice"),
                      arg.loc.known() ? arg.loc : loc);
    slots[size_t(i)] = std::move(arg);
  }
  std::vector<Arg> bound;
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SchemaArg &a = s.args[i];
    if (!slots[i]) {
      if (!a.default_value)
        throw UserError(str_cat("missing argument '", a.name, "'; the schema is ", s.text), loc);
      slots[i] = *a.default_value;
    }
    bound.push_back(canonical_arg(s, a, std::move(*slots[i])));
  }
  return bound;
}

void collect_values(const Arg &a, std::vector<ValueId> &out) {
  if (a.is<ValueId>()) out.push_back(a.as<ValueId>());
  if (a.is<ArgList>())
    for (const Arg &item : a.as<ArgList>()) collect_values(item, out);
}

void collect_outputs(const OutputTree &t, std::vector<ValueId> &out) {
  switch (t.kind) {
    case OutputTree::Kind::Value: out.push_back(t.value); return;
    case OutputTree::Kind::None: return;
    case OutputTree::Kind::Tuple:
      for (const auto &item : t.items) collect_outputs(item, out);
      return;
  }
}

}  // namespace

Arg canonical_arg(const Schema &schema, const SchemaArg &arg, Arg value) {
  return ArgChecker(arg).check(std::move(value));
}

bool Node::multi_output() const { return op->schema.returns.size() != 1 || op->schema.returns_list(); }
const std::string &Node::target() const { return op->target; }

std::vector<ValueId> Graph::outputs() const {
  std::vector<ValueId> out;
  collect_outputs(outputs_, out);
  return out;
}

std::vector<ValueId> Graph::node_inputs(const Node &n) const {
  std::vector<ValueId> out;
  for (const Arg &a : n.args) collect_values(a, out);
  return out;
}

ValueId GraphBuilder::add_value(Value v) {
  g_.values_.push_back(std::move(v));
  return ValueId{int(g_.values_.size() - 1)};
}

ValueId GraphBuilder::add_input(const std::string &name, const TensorType &type, const SourceLoc &loc) {
  ValueId id = add_value(Value{Value::Kind::Input, name, type, -1, 0});
  g_.inputs_.push_back(id);
  return id;
}

ValueId GraphBuilder::add_constant(const std::string &name, const TensorType &type, const SourceLoc &loc) {
  ValueId id = add_value(Value{Value::Kind::Constant, name, type, -1, 0});
  g_.constants_.push_back(id);
  return id;
}

namespace {

// Calls `fn` on every SymInt of the graph: its values' sizes and strides, its int arguments.
void each_sym_int(const Graph &g, const std::function<void(const SymInt &)> &fn) {
  for (const Value &v : g.values()) {
    for (const SymInt &s : v.type.sizes) fn(s);
    for (const SymInt &s : v.type.strides) fn(s);
  }
  std::function<void(const Arg &)> arg = [&](const Arg &a) {
    if (a.is_int()) fn(a.as<SymInt>());
    if (a.is<ArgList>())
      for (const Arg &x : a.as<ArgList>()) arg(x);
  };
  for (const Node &n : g.nodes())
    for (const Arg &a : n.args) arg(a);
}

}  // namespace

std::shared_ptr<SizeGuards> size_guards_of(const Graph &g) {
  std::shared_ptr<SizeGuards> out;
  each_sym_int(g, [&](const SymInt &s) {
    if (!out && s.symbolic()) out = s.guards();
  });
  return out;
}

std::map<std::string, int64_t> symbol_values(const Graph &g) {
  std::shared_ptr<SizeGuards> guards = size_guards_of(g);
  return guards ? guards->values() : std::map<std::string, int64_t>{};
}

std::string size_guards_str(const Graph &g) {
  std::shared_ptr<SizeGuards> guards = size_guards_of(g);
  if (!guards) return "";
  std::map<std::string, int64_t> values = symbol_values(g), fixed = guards->specialized(values);
  std::string out = "# Symbolic sizes: the value each was compiled for; specialized: the compiled graph serves it only\n";
  for (const auto &[name, v] : values)
    out += str_cat(name, " = ", v, fixed.count(name) ? "  specialized" : "  symbolic", "\n");
  out += str_cat("# Guards: what a call's sizes must satisfy, and what relied on each (", guards->guards().size(), ")\n");
  for (const SizeGuard &gd : guards->guards()) out += str_cat(gd.str(), "  # ", gd.why.empty() ? "?" : gd.why, "\n");
  return out;
}

int GraphBuilder::add_node(const std::string &name, const OpDef &op, std::vector<Arg> positional,
                           std::vector<std::pair<std::string, Arg>> keywords, const SourceLoc &loc) {
  const Schema &s = op.schema;
  std::vector<Arg> args;
  std::vector<TensorType> types;
  try {
    for (const SchemaArg &a : s.args)
      if (a.type.mutated)
        throw UserError(str_cat("writes into its argument '", a.name,
                                "'; coil compiles functional graphs only (export with "
                                "torch.export(...).run_decompositions() to remove mutation)"));
    args = bind(s, std::move(positional), std::move(keywords), loc);
    GuardActivity what("the meta function of node", name, op.target);
    types = op.meta(MetaArgs(s, args, g_));
  } catch (const UserError &e) {
    throw UserError(str_cat("node '", name, "' (", op.target, "): ", e.message()),
                    e.has_loc() ? e.loc() : loc);
  }
  bool list_return = s.returns_list();
  COIL_ASSERT(list_return || types.size() == s.returns.size(), op.target, ": meta returned ",
              types.size(), " outputs, the schema has ", s.returns.size());
  Node n{name, &op, std::move(args), {}, loc};
  int index = int(g_.nodes_.size());
  bool single = !list_return && types.size() == 1;
  for (size_t i = 0; i < types.size(); ++i)
    n.outputs.push_back(add_value(Value{Value::Kind::NodeOutput, single ? name : std::string(),
                                        std::move(types[i]), index, int(i)}));
  g_.nodes_.push_back(std::move(n));
  return index;
}

void GraphBuilder::set_output_layout(int node, int64_t index, const SymShape &strides, const SourceLoc &loc) {
  const Node &n = g_.nodes_.at(size_t(node));
  TensorType &t = g_.values_[size_t(n.outputs.at(size_t(index)).index)].type;
  if (!n.op->layout_from_backend)
    throw UserError(str_cat("node '", n.name, "' (", n.target(), ") lays out its output by its own rule as ",
                            shape_str(t.strides), "; strides ", shape_str(strides), " cannot be chosen"),
                    loc);
  if (strides.size() != t.sizes.size() || !is_non_overlapping_and_dense(t.sizes, strides))
    throw UserError(str_cat("node '", n.name, "' (", n.target(), "): strides ", shape_str(strides),
                            " are not a dense layout of sizes ", shape_str(t.sizes)),
                    loc);
  t.strides = strides;
}

void GraphBuilder::set_output_type(int node, int64_t index, const TensorType &type, const SourceLoc &loc) {
  const Node &n = g_.nodes_.at(size_t(node));
  TensorType &t = g_.values_[size_t(n.outputs.at(size_t(index)).index)].type;
  bool open = n.op->output_typed_by_backend(index);
  bool dtypes = t.dtype == type.dtype || (is_floating(t.dtype) && is_floating(type.dtype));
  if (!open || !dtypes || t.rank() != type.rank())
    throw UserError(str_cat("node '", n.name, "' (", n.target(), ") gives its output ", index, " the type ", t.str(),
                            " by its own rule; ", type.str(), " cannot be chosen"),
                    loc);
  t.dtype = type.dtype;
  t.sizes = type.sizes;
  t.strides = contiguous_strides(type.sizes);
}

ValueId GraphBuilder::name_output(int node, int64_t index, const std::string &name, const SourceLoc &loc) {
  Node &n = g_.nodes_.at(size_t(node));
  if (index < 0 || index >= int64_t(n.outputs.size()))
    throw UserError(str_cat("'", n.name, "' (", n.target(), ") has ", n.outputs.size(),
                            " outputs; index ", index, " is out of range"),
                    loc);
  Value &v = g_.values_[size_t(n.outputs[size_t(index)].index)];
  if (!v.name.empty())
    throw UserError(str_cat("output ", index, " of '", n.name, "' is already named '", v.name, "'"), loc);
  v.name = name;
  return n.outputs[size_t(index)];
}

}  // namespace coil
