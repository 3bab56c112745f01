// fold_scalar_subgraphs: values of at most one element computed from no graph input or
// constant are computed now and become one aten.full node.
//
//   scalar_tensor = aten.scalar_tensor.default(3)
//   mul = aten.mul.Tensor(scalar_tensor, 2)        ->   mul = aten.full.default([], 6.0,
//   add = aten.add.Tensor(x, mul)                             dtype = torch.float32, ...)
//
// The folded value keeps its dtype, sizes and device: a 0-dim tensor stays a 0-dim
// tensor (never a Python number), so type promotion downstream does not change. Values
// are computed by the pipeline's evaluator (ScalarEvaluator: lowering the subgraph and
// running the reference interpreter, which has PyTorch's semantics for every op coil can
// lower). Only the frontier is folded:
// nodes whose value something outside the foldable set reads; the rest is left for DCE.
#include <algorithm>

#include "frontend/printer.h"
#include "graph/registry.h"
#include "passes/graph_rewrite.h"
#include "passes/passes.h"

namespace coil::passes {
namespace {

/// Ops that return uninitialized memory: their values are not known at compile time.
bool is_uninitialized(const OpDef &op) {
  static const std::set<std::string_view> kEmpty = {"empty", "empty_like", "empty_strided", "new_empty",
                                                    "new_empty_strided"};
  return kEmpty.count(op.schema.name) > 0;
}

/// The value of a tensor of at most one element as full's fill_value, exactly.
Arg fill_value(const HostTensor &t) {
  if (t.numel() == 0) return is_floating(t.dtype) ? Arg(0.0) : t.dtype == DType::Bool ? Arg(false) : Arg(int64_t(0));
  switch (t.dtype) {
    case DType::Bool: return Arg(t.element_as_double(0) != 0);
    case DType::U8: return Arg(int64_t(t.ptr<uint8_t>()[0]));
    case DType::I8: return Arg(int64_t(t.ptr<int8_t>()[0]));
    case DType::I16: return Arg(int64_t(t.ptr<int16_t>()[0]));
    case DType::I32: return Arg(int64_t(t.ptr<int32_t>()[0]));
    case DType::I64: return Arg(t.ptr<int64_t>()[0]);
    case DType::F16:
    case DType::BF16:
    case DType::F32:
    case DType::F64: return Arg(t.element_as_double(0));
  }
  COIL_ASSERT(false, "unknown dtype ", int(t.dtype));
}

class ScalarFolder {
 public:
  ScalarFolder(const Graph &g, const ScalarEvaluator &eval, PassLog *log)
      : g_(g),
        eval_(eval),
        log_(log),
        foldable_(g.nodes().size(), false),
        read_outside_(g.values().size(), false),
        absolute_reads_(read_at_absolute_offset(g)) {}

  Graph run() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) foldable_[i] = foldable(g_.nodes()[i]);
    mark_reads_outside();
    for (size_t i = 0; i < g_.nodes().size(); ++i)
      if (on_frontier(int(i))) fold(int(i));
    return rebuild(g_, edit_);
  }

 private:
  /// A node whose outputs have at most one element each and whose tensor inputs all
  /// come from foldable nodes.
  bool foldable(const Node &n) const {
    if (n.outputs.empty() || is_random(*n.op) || is_uninitialized(*n.op)) return false;
    if (!eval_.can_evaluate(n)) return false;
    for (ValueId v : n.outputs)
      if (g_.type(v).numel() > 1) return false;
    for (ValueId v : g_.node_inputs(n)) {
      const Node *p = producer_of(g_, v);
      if (!p || !foldable_[size_t(g_.value(v).producer)]) return false;
    }
    return true;
  }

  void mark_reads_outside() {
    for (size_t i = 0; i < g_.nodes().size(); ++i)
      if (!foldable_[i])
        for (ValueId v : g_.node_inputs(g_.nodes()[i])) read_outside_[size_t(v.index)] = true;
    for (ValueId v : g_.outputs()) read_outside_[size_t(v.index)] = true;
  }

  /// A foldable node worth replacing: it computes something (a lone factory is already
  /// as folded as it gets), something outside reads it, and aten.full makes its type.
  bool on_frontier(int i) const {
    const Node &n = g_.nodes()[size_t(i)];
    if (!foldable_[size_t(i)] || n.outputs.size() != 1 || g_.node_inputs(n).empty()) return false;
    ValueId out = n.outputs[0];
    if (!read_outside_[size_t(out.index)]) return false;
    const TensorType &t = g_.type(out);
    bool unresolved_device = t.device.kind == Device::Kind::CUDA && t.device.index < 0;
    return t.strides == contiguous_strides(t.sizes) && !unresolved_device && !absolute_reads_[size_t(out.index)];
  }

  void fold(int i) {
    const Node &n = g_.nodes()[size_t(i)];
    std::optional<HostTensor> value = evaluate(i);
    if (!value) return;
    const TensorType &t = g_.type(n.outputs[0]);
    ArgList sizes;
    for (int64_t s : t.sizes) sizes.emplace_back(s);
    Arg fill = fill_value(*value);
    const OpDef *full = Registry::get().find("aten.full.default");
    COIL_ASSERT(full, "aten.full.default is not registered");
    edit_.substitutes[i] =
        NodeSubstitute{full, {Arg(sizes), fill}, {{"dtype", Arg(t.dtype)}, {"device", Arg(t.device)}}};
    if (log_)
      log_->lines.push_back(str_cat("fold: ", n.name, " = ", frontend::print_arg(g_, fill), " (",
                                    short_name(t.dtype), shape_str(t.sizes), ")"));
  }

  /// Node i's value, from the subgraph of foldable nodes it depends on; nothing when it
  /// cannot be computed here (an op that raises, e.g. integer division by zero, raises
  /// at run time instead).
  std::optional<HostTensor> evaluate(int i) const {
    std::vector<int> nodes = ancestors(i);
    Graph sub = extract_subgraph(g_, nodes, g_.nodes()[size_t(i)].outputs[0]);
    return eval_.evaluate(sub);
  }

  /// Node i and the nodes it reads from, transitively, in graph order.
  std::vector<int> ancestors(int i) const {
    std::vector<int> out, todo = {i};
    std::vector<bool> seen(g_.nodes().size(), false);
    seen[size_t(i)] = true;
    while (!todo.empty()) {
      int k = todo.back();
      todo.pop_back();
      out.push_back(k);
      for (ValueId v : g_.node_inputs(g_.nodes()[size_t(k)])) {
        int p = g_.value(v).producer;
        if (!seen[size_t(p)]) todo.push_back(p);
        seen[size_t(p)] = true;
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  const Graph &g_;
  const ScalarEvaluator &eval_;
  PassLog *log_;
  std::vector<bool> foldable_;      // by node
  std::vector<bool> read_outside_;  // by value: read by a node that is not foldable, or returned
  std::vector<bool> absolute_reads_;  // by value: see read_at_absolute_offset
  GraphEdit edit_;
};

}  // namespace

Graph fold_scalar_subgraphs(const Graph &g, const ScalarEvaluator &eval, PassLog *log) {
  return ScalarFolder(g, eval, log).run();
}

}  // namespace coil::passes
