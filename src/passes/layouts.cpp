// channels_last_convolutions: the layout of convolution outputs chosen for the library.
//
// PyTorch leaves a convolution's output layout to the library it calls, and its graphs
// record that choice: ResNet-50 exported in bf16 on CUDA has channels-last input and
// weights but contiguous (NCHW) outputs, so cuDNN converts every activation to NHWC and back
// around each call (a quarter of the model's GPU time). Where an operand of a convolution
// is already channels-last, its output is made channels-last too, and every value after it
// takes the layout its op's meta rule gives (a batch norm or an add follows its input). Only
// intermediates change: the pass is undone when a graph output would change its layout, when
// a view cannot follow (its meta refuses the new strides), or when a value read by explicit
// strides (as_strided) would change where its elements are (the adaptive average pool's
// decomposition reads a [N, C, 1, 1] mean so, which no layout changes), each said in the log.
// Tests: tests/unit/passes_test.cpp.
#include <variant>

#include "graph/registry.h"
#include "graph/strides.h"
#include "passes/graph_rewrite.h"
#include "passes/passes.h"

namespace coil::passes {
namespace {

bool channels_last_4d(const TensorType &t) {
  return t.rank() == 4 && suggest_memory_format(t.sizes, t.strides) == MemoryFormat::ChannelsLast;
}

ValueId arg_value(const Node &n, std::string_view name) { return n.args[size_t(n.op->schema.find_arg(name))].as<ValueId>(); }

const TensorType &arg_type(const Graph &g, const Node &n, std::string_view name) { return g.type(arg_value(n, name)); }

// Whether every element of `a` is where it is in `b` (strides of dims of one element aside).
bool same_addresses(const TensorType &a, const TensorType &b) {
  if (a.sizes != b.sizes || a.strides.size() != b.strides.size()) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

// One round: the convolutions of `g` with a channels-last operand and a contiguous output
// made channels-last; the graph, or why not (and `names` empty when there were none).
std::variant<Graph, std::string> one_round(const Graph &g, std::vector<std::string> &names) {
  GraphEdit edit;
  std::vector<const Node *> strided;  // reads memory by explicit strides
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.nodes()[i];
    if (n.op->schema.name.rfind("as_strided", 0) == 0) strided.push_back(&n);
    if (n.target() != "aten.convolution.default" || n.args[size_t(n.op->schema.find_arg("transposed"))].as<bool>())
      continue;
    const TensorType &out = g.type(n.outputs[0]);
    if (out.rank() != 4 || channels_last_4d(out)) continue;
    if (!channels_last_4d(arg_type(g, n, "input")) && !channels_last_4d(arg_type(g, n, "weight"))) continue;
    edit.layouts[int(i)] = channels_last_strides(out.sizes);
    names.push_back(n.name);
  }
  if (edit.layouts.empty()) return g;
  Graph out;
  try {
    out = rebuild(g, edit);
  } catch (const UserError &e) {
    return str_cat("with channels-last outputs, ", e.message());
  }
  for (const Node *n : strided) {
    ValueId v = arg_value(*n, "self");  // values keep their ids through rebuild
    if (!same_addresses(g.type(v), out.type(v)))
      return str_cat("'", n->name, "' reads '", g.value(v).name, "' by explicit strides, which would change from ",
                     g.type(v).str(), " to ", out.type(v).str());
  }
  std::vector<ValueId> was = g.outputs(), now = out.outputs();
  for (size_t i = 0; i < was.size(); ++i)
    if (!(g.type(was[i]) == out.type(now[i])))
      return str_cat("graph output ", i, " would change from ", g.type(was[i]).str(), " to ", out.type(now[i]).str());
  return out;
}

std::string joined(const std::vector<std::string> &names) {
  std::string list;
  for (const std::string &name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

}  // namespace

// In rounds: a convolution whose input became channels-last in one round (ConvNeXt's
// downsampling convolution feeding a depthwise one) follows in the next.
Graph channels_last_convolutions(const Graph &g, PassLog *log) {
  auto say = [&](std::string line) {
    if (log) log->lines.push_back("layout: " + std::move(line));
  };
  Graph current = g;
  std::vector<std::string> converted;
  for (;;) {
    std::vector<std::string> names;
    auto round = one_round(current, names);
    if (auto *why = std::get_if<std::string>(&round)) {
      if (converted.empty()) say("convolution layouts kept: " + *why);
      else say(str_cat("layouts of ", joined(names), " kept: ", *why));
      break;
    }
    if (names.empty()) break;
    current = std::move(std::get<Graph>(round));
    converted.insert(converted.end(), names.begin(), names.end());
  }
  if (converted.empty()) return g;
  int changed = 0;
  for (size_t i = 0; i < g.values().size(); ++i) changed += g.values()[i].type.strides != current.values()[i].type.strides;
  say(str_cat(converted.size(), " convolutions write channels-last outputs (", joined(converted), "); ", changed,
              " values change layout"));
  return current;
}

}  // namespace coil::passes
