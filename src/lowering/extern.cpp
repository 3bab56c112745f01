// Matrix products and convolution become Extern nodes: library calls on strided views
// of their operands (a transposed weight stays a view). Their bias and elementwise
// consumers stay separate nodes that the scheduler may hand to the library as epilogues.
#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

ir::View view_of(const TensorRef &r) { return ir::View{r.buffer, r.sizes, r.strides, r.offset}; }

/// An Extern node over the named tensor arguments (absent optional ones kept as -1).
TensorRef extern_call(Lowering &l, const Node &n, ir::ExternOp op, const std::vector<const char *> &operands,
                      int64_t reduction_size) {
  const TensorType &out = l.graph().type(n.outputs[0]);
  TensorRef result = l.new_buffer(out);
  ir::Node node;
  node.kind = ir::NodeKind::Extern;
  node.extern_op = op;
  node.origin = n.name;
  node.ranges = out.sizes;
  for (const char *name : operands) {
    const Arg &a = arg(n, name);
    node.operands.push_back(a.is_none() ? ir::View{} : view_of(l.ref(a.as<ValueId>())));
  }
  for (const char *name : {"beta", "alpha"})
    if (n.op->schema.find_arg(name) >= 0) node.scalars[name] = number(arg(n, name));
  node.attrs["reduction_size"] = {reduction_size};
  node.outputs = {result.buffer};
  l.program().nodes.push_back(std::move(node));
  return result;
}

/// The length of the contracted dim: the last of the first matrix operand.
int64_t inner_size(Lowering &l, const Node &n, const char *name) {
  return l.graph().type(arg(n, name).as<ValueId>()).sizes.back();
}

LowerFn product(ir::ExternOp op, std::vector<const char *> operands, const char *contracted) {
  return [=](Lowering &l, const Node &n) {
    return std::vector<TensorRef>{extern_call(l, n, op, operands, inner_size(l, n, contracted))};
  };
}

std::vector<TensorRef> convolution(Lowering &l, const Node &n) {
  bool transposed = arg(n, "transposed").as<bool>();
  const TensorType &w = l.graph().type(arg(n, "weight").as<ValueId>());
  // Each output element sums over one input-channel group times one kernel window.
  int64_t window = transposed ? w.sizes[0] / arg(n, "groups").as<int64_t>() : w.sizes[1];
  for (size_t d = 2; d < w.sizes.size(); ++d) window *= w.sizes[d];
  TensorRef out = extern_call(l, n, ir::ExternOp::Convolution, {"input", "weight", "bias"}, window);
  ir::Node &node = l.program().nodes.back();
  size_t spatial = w.sizes.size() - 2;
  for (const char *name : {"stride", "padding", "dilation", "output_padding"}) {
    std::vector<int64_t> v;
    for (const Arg &a : arg(n, name).as<ArgList>()) v.push_back(a.as<int64_t>());
    if (v.size() == 1) v.assign(spatial, v[0]);
    node.attrs[name] = v;
  }
  node.attrs["groups"] = {arg(n, "groups").as<int64_t>()};
  node.attrs["transposed"] = {transposed ? 1 : 0};
  return {out};
}

}  // namespace

void add_extern_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.mm.default"] = product(ir::ExternOp::Mm, {"self", "mat2"}, "self");
  t["aten.bmm.default"] = product(ir::ExternOp::Bmm, {"self", "mat2"}, "self");
  t["aten.mv.default"] = product(ir::ExternOp::Mv, {"self", "vec"}, "self");
  t["aten.addmm.default"] = product(ir::ExternOp::Addmm, {"self", "mat1", "mat2"}, "mat1");
  t["aten.baddbmm.default"] = product(ir::ExternOp::Baddbmm, {"self", "batch1", "batch2"}, "batch1");
  t["aten.addmv.default"] = product(ir::ExternOp::Addmv, {"self", "mat", "vec"}, "mat");
  t["aten.convolution.default"] = convolution;
}

}  // namespace coil::lowering
