#include "frontend/printer.h"

#include <map>
#include <set>

#include "support/python_repr.h"
#include "graph/registry.h"

namespace coil::frontend {
namespace {

constexpr const char *kIndent = "        ";

std::string quoted_type(const TensorType &t) { return "\"" + t.str() + "\""; }

std::string value_name(const Graph &g, ValueId id) {
  const Value &v = g.value(id);
  COIL_ASSERT(!v.name.empty(), "printing a reference to an unnamed value ", id.index);
  return v.name;
}

// The names of the symbolic sizes a printed graph passes to its nodes, by expression: FX
// passes them as values of their own (`mul: "Sym(2*s0)" = ...`), which the printer states
// before the first node that takes each.
using SizeNames = std::map<std::string, std::string>;

struct ArgPrinter {
  const Graph &g;
  const SizeNames *sizes = nullptr;
  std::string operator()(NoneArg) const { return "None"; }
  std::string operator()(bool b) const { return b ? "True" : "False"; }
  std::string operator()(const SymInt &i) const {
    if (!i.symbolic() || !sizes) return str(i);
    auto it = sizes->find(str(i));
    return it != sizes->end() ? it->second : str(i);
  }
  std::string operator()(double d) const { return python_float_repr(d); }
  std::string operator()(const std::string &s) const { return python_str_repr(s); }
  std::string operator()(DType t) const { return torch_name(t); }
  std::string operator()(Device d) const {
    std::string kind = d.kind == Device::Kind::CPU ? "cpu" : "cuda";
    if (d.index < 0) return "device(type='" + kind + "')";
    return "device(type='" + kind + "', index=" + std::to_string(d.index) + ")";
  }
  std::string operator()(Layout l) const { return "torch." + std::string(layout_name(l)); }
  std::string operator()(MemoryFormat m) const { return "torch." + std::string(memory_format_name(m)); }
  std::string operator()(ValueId id) const { return value_name(g, id); }
  std::string operator()(const ArgList &items) const {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + std::visit(*this, items[i].v);
    return out + "]";
  }
};

bool is_default(const SchemaArg &s, const Arg &a) { return s.default_value && *s.default_value == a; }

// Positional arguments up to the last one that differs from its default, then the
// keyword-only ones that differ: the way FX prints calls.
std::string print_call_args(const Graph &g, const Node &n, const SizeNames &sizes) {
  auto arg_text = [&](const Arg &a) { return std::visit(ArgPrinter{g, &sizes}, a.v); };
  const auto &schema = n.op->schema.args;
  size_t positional_end = 0;
  for (size_t i = 0; i < schema.size(); ++i)
    if (!schema[i].kwarg_only && !is_default(schema[i], n.args[i])) positional_end = i + 1;
  std::vector<std::string> parts;
  for (size_t i = 0; i < positional_end; ++i) parts.push_back(arg_text(n.args[i]));
  for (size_t i = 0; i < schema.size(); ++i)
    if (schema[i].kwarg_only && !is_default(schema[i], n.args[i]))
      parts.push_back(schema[i].name + " = " + arg_text(n.args[i]));
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

// States each symbolic size `a` holds that no earlier statement named: `size_0: "Sym(s0*2)" = s0*2`.
void name_sizes(const Arg &a, const std::set<std::string> &taken, SizeNames &sizes, std::string &out) {
  if (a.is<ArgList>())
    for (const Arg &x : a.as<ArgList>()) name_sizes(x, taken, sizes, out);
  if (!a.is_int() || !a.as<SymInt>().symbolic()) return;
  std::string expr = str(a.as<SymInt>());
  if (sizes.count(expr)) return;
  std::string name;
  for (size_t k = sizes.size(); name.empty() || taken.count(name); ++k) name = "size_" + std::to_string(k);
  sizes.emplace(expr, name);
  out += kIndent + name + ": \"Sym(" + expr + ")\" = " + expr + "\n";
}

void print_node(const Graph &g, const Node &n, const std::set<std::string> &taken, SizeNames &sizes, std::string &out) {
  for (const Arg &a : n.args) name_sizes(a, taken, sizes, out);
  std::string call = "torch.ops." + n.target() + "(" + print_call_args(g, n, sizes) + ")";
  if (!n.multi_output()) {
    out += kIndent + n.name + ": " + quoted_type(g.type(n.outputs[0])) + " = " + call + "\n";
    return;
  }
  out += kIndent + n.name + " = " + call + "\n";
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value &v = g.value(n.outputs[i]);
    if (v.name.empty()) continue;
    out += kIndent + v.name + ": " + quoted_type(v.type) + " = " + n.name + "[" + std::to_string(i) + "]\n";
  }
}

std::string print_output(const Graph &g, const OutputTree &t) {
  switch (t.kind) {
    case OutputTree::Kind::Value: return value_name(g, t.value);
    case OutputTree::Kind::None: return "None";
    case OutputTree::Kind::Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < t.items.size(); ++i) out += (i ? ", " : "") + print_output(g, t.items[i]);
      return out + (t.items.size() == 1 ? ",)" : ")");
    }
  }
  return "";
}

}  // namespace

std::string print_arg(const Graph &g, const Arg &a) { return std::visit(ArgPrinter{g}, a.v); }

std::string print_graph(const Graph &g) {
  std::string out = "class GraphModule(torch.nn.Module):\n    def forward(self";
  for (ValueId id : g.inputs()) out += ", " + g.value(id).name + ": " + quoted_type(g.type(id));
  out += "):\n";
  for (ValueId id : g.constants())
    out += kIndent + g.value(id).name + ": " + quoted_type(g.type(id)) + " = self." + g.value(id).name + "\n";
  std::set<std::string> taken;
  for (const Value &v : g.values()) taken.insert(v.name);
  for (const Node &n : g.nodes()) taken.insert(n.name);
  SizeNames sizes;
  for (const Node &n : g.nodes()) print_node(g, n, taken, sizes, out);
  out += std::string(kIndent) + "return " + print_output(g, g.output_tree()) + "\n";
  return out;
}

}  // namespace coil::frontend
