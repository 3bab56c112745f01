// channels_last_convolutions: the layout of convolution outputs chosen for the library.
//
// PyTorch leaves a convolution's output layout to the library it calls, and its graphs
// record that choice: ResNet-50 exported in bf16 on CUDA has channels-last input and
// weights but contiguous (NCHW) outputs, so cuDNN converts every activation to NHWC and back
// around each call (a quarter of the model's GPU time). Where an operand of a convolution
// is already channels-last, its output is made channels-last too, and every value after it
// takes the layout its op's meta rule gives (a batch norm or an add follows its input). Only
// intermediates change: the pass is undone when a graph output would change its layout, when
// a view cannot follow (its meta refuses the new strides), or when the graph reads memory by
// explicit strides (as_strided), each said in the log.
// Tests: tests/unit/passes_test.cpp.
#include "graph/registry.h"
#include "graph/strides.h"
#include "passes/graph_rewrite.h"
#include "passes/passes.h"

namespace coil::passes {
namespace {

bool channels_last_4d(const TensorType &t) {
  return t.rank() == 4 && suggest_memory_format(t.sizes, t.strides) == MemoryFormat::ChannelsLast;
}

const TensorType &arg_type(const Graph &g, const Node &n, std::string_view name) {
  return g.type(n.args[size_t(n.op->schema.find_arg(name))].as<ValueId>());
}

}  // namespace

Graph channels_last_convolutions(const Graph &g, PassLog *log) {
  auto say = [&](std::string line) {
    if (log) log->lines.push_back("layout: " + std::move(line));
  };
  GraphEdit edit;
  std::vector<std::string> names;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.nodes()[i];
    if (n.op->schema.name.rfind("as_strided", 0) == 0) {
      say(str_cat("convolution layouts kept: '", n.name, "' reads memory by explicit strides"));
      return g;
    }
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
    say(str_cat("convolution layouts kept: with channels-last outputs, ", e.message()));
    return g;
  }
  std::vector<ValueId> was = g.outputs(), now = out.outputs();
  for (size_t i = 0; i < was.size(); ++i)
    if (!(g.type(was[i]) == out.type(now[i]))) {
      say(str_cat("convolution layouts kept: graph output ", i, " would change from ", g.type(was[i]).str(), " to ",
                  out.type(now[i]).str()));
      return g;
    }
  int changed = 0;
  for (size_t i = 0; i < g.values().size(); ++i) changed += g.values()[i].type.strides != out.values()[i].type.strides;
  std::string list;
  for (const std::string &name : names) list += (list.empty() ? "" : ", ") + name;
  say(str_cat(names.size(), " convolutions write channels-last outputs (", list, "); ", changed,
              " values change layout"));
  return out;
}

}  // namespace coil::passes
