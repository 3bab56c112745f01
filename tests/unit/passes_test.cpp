// The graph passes: one test per behaviour of each pass, then every fixture and example
// run through all of them, checking that output types and the reference interpreter's
// outputs do not change.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "graph/registry.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "ir/interpreter.h"
#include "lowering/lowering.h"
#include "passes/passes.h"
#include "test_util.h"

namespace coil::passes {
namespace {

constexpr const char *kX = R"(x: "f32[4, 8][8, 1]cpu")";

Graph parse(const std::string &body, const std::string &inputs = kX) {
  return frontend::parse_graph("class GraphModule(torch.nn.Module):\n    def forward(self, " + inputs + "):\n" + body,
                               "test.py");
}

const Node *find_node(const Graph &g, const std::string &name) {
  for (const Node &n : g.nodes())
    if (n.name == name) return &n;
  return nullptr;
}

/// The node called `name`; a test failure (an exception) when there is none.
const Node &node(const Graph &g, const std::string &name) {
  const Node *n = find_node(g, name);
  if (!n) throw std::runtime_error("no node " + name);
  return *n;
}

const Arg &arg(const Node &n, const std::string &name) { return n.args[size_t(n.op->schema.find_arg(name))]; }

/// The name of the value that node `node_name` reads as its argument `name`.
std::string reads(const Graph &g, const std::string &node_name, const std::string &name) {
  return g.value(arg(node(g, node_name), name).as<ValueId>()).name;
}

std::string output_name(const Graph &g, size_t i) { return g.value(g.outputs().at(i)).name; }

bool logged(const PassLog &log, const std::string &line) {
  return std::find(log.lines.begin(), log.lines.end(), line) != log.lines.end();
}

std::string joined(const PassLog &log) {
  std::string s;
  for (const std::string &line : log.lines) s += line + "\n";
  return s;
}

// --- remove_noops -------------------------------------------------------------------

TEST(PassesNoops, RemovesAssertionsAndAliases) {
  Graph g = parse(R"(
        _assert_tensor_metadata = torch.ops.aten._assert_tensor_metadata.default(x, None, None, torch.float32);  _assert_tensor_metadata = None
        _assert_async = torch.ops.aten._assert_async.msg(x, 'x is zero');  _assert_async = None
        alias: "f32[4, 8][8, 1]cpu" = torch.ops.aten.alias.default(x)
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(alias, 2)
        return (mul,)
)");
  PassLog log;
  Graph out = remove_noops(g, &log);
  EXPECT_EQ(out.nodes().size(), 1u);
  EXPECT_EQ(reads(out, "mul", "self"), "x");
  EXPECT_TRUE(logged(log, "noop: removed _assert_tensor_metadata (assertion)")) << joined(log);
  EXPECT_TRUE(logged(log, "noop: removed _assert_async (assertion)")) << joined(log);
  EXPECT_TRUE(logged(log, "noop: alias is x (alias)")) << joined(log);
}

TEST(PassesNoops, RemovesIdentityViews) {
  Graph g = parse(R"(
        view: "f32[4, 8][8, 1]cpu" = torch.ops.aten.view.default(x, [4, 8])
        expand: "f32[4, 8][8, 1]cpu" = torch.ops.aten.expand.default(view, [4, -1])
        permute: "f32[4, 8][8, 1]cpu" = torch.ops.aten.permute.default(expand, [0, 1])
        unsqueeze: "f32[1, 4, 8][32, 8, 1]cpu" = torch.ops.aten.unsqueeze.default(permute, 0)
        squeeze: "f32[4, 8][8, 1]cpu" = torch.ops.aten.squeeze.dim(unsqueeze, 0)
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(squeeze, 1)
        return (add,)
)");
  PassLog log;
  Graph out = remove_noops(g, &log);
  EXPECT_EQ(reads(out, "add", "self"), "x");
  EXPECT_TRUE(logged(log, "noop: view is x (identity view)")) << joined(log);
  EXPECT_TRUE(logged(log, "noop: expand is x (identity view)")) << joined(log);
  EXPECT_TRUE(logged(log, "noop: permute is x (identity view)")) << joined(log);
  // squeeze(unsqueeze(x)) is x: views are followed up the chain.
  EXPECT_TRUE(logged(log, "noop: squeeze is x (identity view)")) << joined(log);
  // The unsqueeze itself is no identity; DCE removes it once nothing reads it.
  EXPECT_NE(find_node(out, "unsqueeze"), nullptr);
  EXPECT_EQ(find_node(run_graph_passes(g, reference_evaluator()), "unsqueeze"), nullptr);
}

TEST(PassesNoops, KeepsSlicesThatMoveTheStart) {
  Graph g = parse(R"(
        slice_1: "f32[3, 8][8, 1]cpu" = torch.ops.aten.slice.Tensor(x, 0, 1, 9223372036854775807)
        slice_2: "f32[4, 8][8, 1]cpu" = torch.ops.aten.slice.Tensor(x, 0, 0, 4)
        slice_3: "f32[3, 8][8, 1]cpu" = torch.ops.aten.slice.Tensor(slice_1, 0, 0, 3)
        as_strided: "f32[3, 8][8, 1]cpu" = torch.ops.aten.as_strided.default(slice_1, [3, 8], [8, 1])
        as_strided_1: "f32[3, 8][8, 1]cpu" = torch.ops.aten.as_strided.default(slice_1, [3, 8], [8, 1], 0)
        as_strided_2: "f32[3, 8][8, 1]cpu" = torch.ops.aten.as_strided.default(slice_1, [3, 8], [8, 1], 8)
        return (slice_1, slice_2, slice_3, as_strided, as_strided_1, as_strided_2)
)");
  PassLog log;
  Graph out = remove_noops(g, &log);
  EXPECT_EQ(output_name(out, 0), "slice_1");
  EXPECT_EQ(output_name(out, 1), "x");
  EXPECT_EQ(output_name(out, 2), "slice_1");
  EXPECT_EQ(output_name(out, 3), "slice_1");  // as_strided keeps its input's start
  EXPECT_EQ(output_name(out, 4), "as_strided_1");  // starts at 0, slice_1 at 8
  EXPECT_EQ(output_name(out, 5), "slice_1");
  EXPECT_EQ(log.lines.size(), 4u) << joined(log);
}

TEST(PassesNoops, KeepsCopiesThatSeparateOutputsFromInputs) {
  Graph g = parse(R"(
        clone: "f32[4, 8][8, 1]cpu" = torch.ops.aten.clone.default(x)
        clone_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.clone.default(x)
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(clone_1, 2)
        _to_copy: "f32[4, 8][8, 1]cpu" = torch.ops.aten._to_copy.default(mul, dtype = torch.float32)
        clone_2: "f32[4, 8][8, 1]cpu" = torch.ops.aten.clone.default(_to_copy)
        _to_copy_1: "f16[4, 8][8, 1]cpu" = torch.ops.aten._to_copy.default(mul, dtype = torch.float16)
        return (clone, _to_copy, clone_2, _to_copy_1)
)");
  PassLog log;
  Graph out = remove_noops(g, &log);
  // A returned copy of an input stays: the output must not alias the input.
  EXPECT_EQ(output_name(out, 0), "clone");
  // A copy nobody returns goes.
  EXPECT_EQ(reads(out, "mul", "self"), "x");
  EXPECT_TRUE(logged(log, "noop: clone_1 is x (identity copy)")) << joined(log);
  // A returned copy of an intermediate goes, but only once: two outputs stay distinct.
  EXPECT_EQ(output_name(out, 1), "mul");
  EXPECT_EQ(output_name(out, 2), "clone_2");
  // A conversion is no identity.
  EXPECT_EQ(output_name(out, 3), "_to_copy_1");
  EXPECT_EQ(log.lines.size(), 2u) << joined(log);
}

TEST(PassesNoops, KeepsCopiesReadAtAnAbsoluteOffset) {
  // as_strided with a storage_offset addresses the buffer holding its input: in clone's
  // buffer element 8 is x's element 16, so that clone must stay.
  Graph g = parse(R"(
        slice_1: "f32[3, 8][8, 1]cpu" = torch.ops.aten.slice.Tensor(x, 0, 1)
        clone: "f32[3, 8][8, 1]cpu" = torch.ops.aten.clone.default(slice_1)
        as_strided: "f32[8][1]cpu" = torch.ops.aten.as_strided.default(clone, [8], [1], 8)
        clone_1: "f32[3, 8][8, 1]cpu" = torch.ops.aten.clone.default(slice_1)
        mul: "f32[3, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(clone_1, 2)
        return (as_strided, mul)
)");
  PassLog log;
  Graph out = remove_noops(g, &log);
  EXPECT_EQ(joined(log), "noop: clone_1 is slice_1 (identity copy)\n");
  HostTensor x = HostTensor::zeros(DType::F32, {4, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.ptr<float>()[i] = float(i);
  TensorList inputs;
  inputs.emplace_back("x", x);
  std::vector<HostTensor> before = ir::interpret(lowering::lower(g), inputs);
  std::vector<HostTensor> after = ir::interpret(lowering::lower(out), inputs);
  EXPECT_EQ(after[0].element_as_double(0), 16.0);
  EXPECT_EQ(before[0].element_as_double(0), 16.0);
}

// --- fold_scalar_subgraphs ------------------------------------------------------------

TEST(PassesFold, FoldsAScalarSubgraphIntoOneFull) {
  Graph g = parse(R"(
        scalar_tensor: "f32[][]cpu" = torch.ops.aten.scalar_tensor.default(3.0)
        mul: "f32[][]cpu" = torch.ops.aten.mul.Tensor(scalar_tensor, 2)
        sub: "f32[][]cpu" = torch.ops.aten.sub.Tensor(mul, 0.5)
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, sub)
        return (add,)
)");
  PassLog log;
  Graph out = run_graph_passes(g, reference_evaluator(), &log);
  ASSERT_EQ(out.nodes().size(), 2u) << joined(log);
  const Node &full = out.nodes()[0];
  EXPECT_EQ(full.name, "sub");
  EXPECT_EQ(full.target(), "aten.full.default");
  EXPECT_EQ(arg(full, "fill_value").as<double>(), 5.5);
  EXPECT_EQ(arg(full, "dtype").as<DType>(), DType::F32);
  EXPECT_EQ(out.type(full.outputs[0]).str(), "f32[][]cpu");
  EXPECT_EQ(reads(out, "add", "other"), "sub");
  EXPECT_TRUE(logged(log, "fold: sub = 5.5 (f32[])")) << joined(log);
  // Only the frontier is folded: mul is not read outside the scalar subgraph.
  EXPECT_EQ(std::count_if(log.lines.begin(), log.lines.end(), [](auto &l) { return l.starts_with("fold"); }), 1);
}

TEST(PassesFold, KeepsDtypesThroughPromotion) {
  // i64 / int is f32 (true division), i64 * int stays i64, and the folded values stay
  // 0-dim tensors: added to an f16 tensor they leave it f16.
  Graph g = parse(R"(
        full: "i64[][]cpu" = torch.ops.aten.full.default([], 7, dtype = torch.int64, device = device(type='cpu'))
        div: "f32[][]cpu" = torch.ops.aten.div.Tensor(full, 2)
        mul: "i64[][]cpu" = torch.ops.aten.mul.Tensor(full, 3)
        gt: "b8[][]cpu" = torch.ops.aten.gt.Scalar(div, 3.0)
        add: "f16[4][1]cpu" = torch.ops.aten.add.Tensor(h, mul)
        add_1: "f16[4][1]cpu" = torch.ops.aten.add.Tensor(h, div)
        where: "f16[4][1]cpu" = torch.ops.aten.where.self(gt, add, add_1)
        return (where,)
)",
                  R"(h: "f16[4][1]cpu")");
  PassLog log;
  Graph out = fold_scalar_subgraphs(g, reference_evaluator(), &log);
  EXPECT_TRUE(logged(log, "fold: div = 3.5 (f32[])")) << joined(log);
  EXPECT_TRUE(logged(log, "fold: mul = 21 (i64[])")) << joined(log);
  EXPECT_TRUE(logged(log, "fold: gt = True (b8[])")) << joined(log);
  EXPECT_EQ(log.lines.size(), 3u) << joined(log);
  const Node &mul = node(out, "mul");
  EXPECT_EQ(mul.target(), "aten.full.default");
  EXPECT_EQ(arg(mul, "fill_value").integer(), 21);
  EXPECT_EQ(out.type(mul.outputs[0]).str(), "i64[][]cpu");
  EXPECT_EQ(out.type(node(out, "gt").outputs[0]).str(), "b8[][]cpu");
  EXPECT_EQ(out.type(node(out, "add_1").outputs[0]).str(), "f16[4][1]cpu");
}

TEST(PassesFold, LeavesLoneFactoriesAndIsIdempotent) {
  Graph g = parse(R"(
        full: "f32[][]cpu" = torch.ops.aten.full.default([], 2.0)
        scalar_tensor: "f32[][]cpu" = torch.ops.aten.scalar_tensor.default(3.0)
        add: "f32[][]cpu" = torch.ops.aten.add.Tensor(full, scalar_tensor)
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(x, add)
        mul_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(mul, full)
        return (mul_1,)
)");
  PassLog log;
  Graph once = fold_scalar_subgraphs(g, reference_evaluator(), &log);
  EXPECT_EQ(joined(log), "fold: add = 5.0 (f32[])\n");
  PassLog again;
  Graph twice = fold_scalar_subgraphs(once, reference_evaluator(), &again);
  EXPECT_TRUE(again.lines.empty()) << joined(again);
  EXPECT_EQ(twice.nodes().size(), once.nodes().size());
}

TEST(PassesFold, LeavesValuesThatDependOnInputsOrRaise) {
  Graph g = parse(R"(
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(x)
        mul: "f32[][]cpu" = torch.ops.aten.mul.Tensor(sum_1, 2)
        full: "i64[][]cpu" = torch.ops.aten.full.default([], 1, dtype = torch.int64)
        div: "i64[][]cpu" = torch.ops.aten.div.Tensor_mode(full, 0, rounding_mode = 'floor')
        add: "f32[][]cpu" = torch.ops.aten.add.Tensor(mul, div)
        return (add,)
)");
  PassLog log;
  Graph out = fold_scalar_subgraphs(g, reference_evaluator(), &log);
  // sum_1 reads x; integer division by zero raises when the graph runs, not now.
  EXPECT_TRUE(log.lines.empty()) << joined(log);
  EXPECT_EQ(node(out, "div").target(), "aten.div.Tensor_mode");
}

// --- eliminate_common_subexpressions ----------------------------------------------------

TEST(PassesCse, MergesTheTwoCopiesOfRmsnorm) {
  Graph g = frontend::parse_graph_file((test::source_dir() / "examples" / "rmsnorm_bf16" / "graph.py").string());
  PassLog log;
  Graph out = eliminate_common_subexpressions(g, &log);
  EXPECT_TRUE(logged(log, "cse: _to_copy_1 is _to_copy")) << joined(log);
  EXPECT_EQ(find_node(out, "_to_copy_1"), nullptr);
  EXPECT_EQ(reads(out, "pow_1", "self"), "_to_copy");
  EXPECT_EQ(reads(out, "mul", "self"), "_to_copy");
}

TEST(PassesCse, KeepsDifferentArgumentsApart) {
  Graph g = parse(R"(
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, 1)
        add_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, 2)
        add_2: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, 1.0)
        add_3: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, 0.0)
        add_4: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, -0.0)
        add_5: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, 1, alpha = 2)
        add_6: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, 1)
        sum_1: "f32[4][1]cpu" = torch.ops.aten.sum.dim_IntList(add, [1])
        sum_2: "f32[4, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList(add_6, [1], True)
        sum_3: "f32[4][1]cpu" = torch.ops.aten.sum.dim_IntList(add_6, [1])
        neg: "f32[4][1]cpu" = torch.ops.aten.neg.default(sum_3)
        return (add_1, add_2, add_3, add_4, add_5, sum_1, sum_2, neg)
)");
  PassLog log;
  Graph out = eliminate_common_subexpressions(g, &log);
  EXPECT_EQ(joined(log), "cse: add_6 is add\ncse: sum_3 is sum_1\n");
  EXPECT_EQ(reads(out, "sum_2", "self"), "add");
  EXPECT_EQ(reads(out, "neg", "self"), "sum_1");
}

TEST(PassesCse, MapsEveryOutputOfAMultiOutputNode) {
  Graph g = parse(R"(
        var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 0)
        getitem: "f32[4][1]cpu" = var_mean[0]
        getitem_1: "f32[4][1]cpu" = var_mean[1];  var_mean = None
        var_mean_1 = torch.ops.aten.var_mean.correction(x, [1], correction = 0)
        getitem_2: "f32[4][1]cpu" = var_mean_1[0]
        getitem_3: "f32[4][1]cpu" = var_mean_1[1];  var_mean_1 = None
        add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(getitem, getitem_3)
        sub: "f32[4][1]cpu" = torch.ops.aten.sub.Tensor(getitem_2, getitem_1)
        return (add, sub)
)");
  PassLog log;
  Graph out = run_graph_passes(g, reference_evaluator(), &log);
  EXPECT_TRUE(logged(log, "cse: var_mean_1 is var_mean")) << joined(log);
  EXPECT_EQ(reads(out, "add", "other"), "getitem_1");
  EXPECT_EQ(reads(out, "sub", "self"), "getitem");
  EXPECT_EQ(out.nodes().size(), 3u);
}

TEST(PassesCse, KeepsTwoReturnedValuesDistinct) {
  Graph g = parse(R"(
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        mul_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        return (mul, mul_1)
)");
  PassLog log;
  Graph out = eliminate_common_subexpressions(g, &log);
  EXPECT_TRUE(log.lines.empty()) << joined(log);
  EXPECT_EQ(output_name(out, 1), "mul_1");
}

TEST(PassesRebuild, EveryOutputOfALibraryOpKeepsTheLayoutTheGraphStates) {
  // convolution_backward's gradients are laid out by the library: with a channels-last
  // input PyTorch's grad_weight is channels last too, though the weight is not; rebuilding
  // the node keeps the layout the graph states for each output.
  Graph g = parse(R"(
        alias: "f32[2, 8, 5, 5][200, 25, 5, 1]cpu" = torch.ops.aten.alias.default(dy)
        convolution_backward = torch.ops.aten.convolution_backward.default(alias, x, w, [8], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
        getitem: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = convolution_backward[0]
        getitem_1: "f32[8, 4, 2, 2][16, 1, 8, 4]cpu" = convolution_backward[1]
        getitem_2: "f32[8][1]cpu" = convolution_backward[2];  convolution_backward = None
        return (getitem, getitem_1, getitem_2)
)",
                  R"(dy: "f32[2, 8, 5, 5][200, 25, 5, 1]cpu", x: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu", )"
                  R"(w: "f32[8, 4, 2, 2][16, 4, 2, 1]cpu")");
  PassLog log;
  Graph out = run_graph_passes(g, reference_evaluator(), &log);
  EXPECT_EQ(out.type(out.outputs().at(1)).strides, (Shape{16, 1, 8, 4})) << joined(log);
  EXPECT_EQ(out.type(out.outputs().at(0)).strides, (Shape{144, 1, 24, 4}));
  EXPECT_EQ(out.nodes().size(), 1u) << "the alias is gone: the graph was rebuilt";
}

// --- random ops -------------------------------------------------------------------------

TEST(PassesRandom, RandomOpsAreNeitherMergedNorFolded) {
  // No random op is registered yet; a local registry stands in for the day one is.
  Registry random_ops;
  random_ops.add("rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                 "bool? pin_memory=None) -> Tensor",
                 [](const MetaArgs &a) {
                   Shape s = a.ints("size");
                   return std::vector<TensorType>{TensorType{DType::F32, s, contiguous_strides(s), Device{}}};
                 });
  const OpDef &rand = *random_ops.find("aten.rand.default");
  const OpDef &add = *Registry::get().find("aten.add.Tensor");
  GraphBuilder b;
  ValueId x = b.add_input("x", TensorType{DType::F32, {4}, {1}, Device{}});
  auto output = [&](int node) { return b.graph().nodes()[size_t(node)].outputs[0]; };
  ValueId r0 = output(b.add_node("rand", rand, {Arg(ArgList{})}, {}));
  ValueId r1 = output(b.add_node("rand_1", rand, {Arg(ArgList{})}, {}));
  ValueId sum = output(b.add_node("add", add, {Arg(r0), Arg(r1)}, {}));
  ValueId y = output(b.add_node("add_1", add, {Arg(x), Arg(sum)}, {}));
  b.set_outputs(OutputTree{OutputTree::Kind::Tuple, {}, {OutputTree{OutputTree::Kind::Value, y, {}}}});
  Graph g = b.finish();
  PassLog log;
  Graph out = run_graph_passes(g, reference_evaluator(), &log);
  EXPECT_TRUE(log.lines.empty()) << joined(log);
  EXPECT_EQ(out.nodes().size(), 4u);
  EXPECT_EQ(reads(out, "add", "other"), "rand_1");
}

// --- eliminate_dead_code ----------------------------------------------------------------

TEST(PassesDce, RemovesUnusedChainsButKeepsInputs) {
  Graph g = parse(R"(
        exp: "f32[4, 8][8, 1]cpu" = torch.ops.aten.exp.default(y)
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(exp, 1)
        relu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.relu.default(x)
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(relu, 2)
        return (relu,)
)",
                  R"(x: "f32[4, 8][8, 1]cpu", y: "f32[4, 8][8, 1]cpu")");
  PassLog log;
  Graph out = eliminate_dead_code(g, &log);
  EXPECT_EQ(joined(log), "dce: removed exp (unused)\ndce: removed add (unused)\ndce: removed mul (unused)\n");
  ASSERT_EQ(out.nodes().size(), 1u);
  EXPECT_EQ(out.nodes()[0].name, "relu");
  ASSERT_EQ(out.inputs().size(), 2u);
  EXPECT_EQ(out.value(out.inputs()[1]).name, "y");
  EXPECT_EQ(output_name(out, 0), "relu");
}

// --- every fixture and example ------------------------------------------------------------

std::vector<std::filesystem::path> all_cases() {
  std::vector<std::filesystem::path> cases = test::fixture_dirs();
  for (const auto &dir : test::example_dirs()) cases.push_back(dir);
  return cases;
}

/// Equal elements, NaN equal to NaN; `what` names the output in messages.
void expect_identical(const HostTensor &after, const HostTensor &before, const std::string &what) {
  ASSERT_EQ(after.dtype, before.dtype) << what;
  ASSERT_EQ(after.sizes, before.sizes) << what;
  int64_t mismatches = 0;
  std::string first;
  for (int64_t i = 0; i < before.numel(); ++i) {
    double a = after.element_as_double(i), b = before.element_as_double(i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    if (mismatches++ == 0) first = str_cat("at ", i, ": ", a, " vs ", b);
  }
  EXPECT_EQ(mismatches, 0) << what << ": first " << first;
}

// ResNet's block as PyTorch exports it in bf16 on CUDA: channels-last input and weight,
// a contiguous convolution output, a batch norm's scale and shift and a relu after it.
constexpr const char *kConvInputs =
    R"(x: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu", w: "f32[8, 4, 3, 3][36, 1, 12, 4]cpu", s: "f32[8, 1, 1][1, 1, 1]cpu")";
constexpr const char *kConvBlock = R"(        c: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        m: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.mul.Tensor(c, s)
        r: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.relu.default(m)
)";

std::vector<HostTensor> run_on_ramps(const Graph &g) {
  TensorList in;
  for (ValueId v : g.inputs()) {
    HostTensor t = HostTensor::zeros(g.type(v).dtype, g.type(v).sizes);
    for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = float(std::sin(double(i)));
    in.emplace_back(g.value(v).name, std::move(t));
  }
  return ir::interpret(lowering::lower(g), in);
}

TEST(PassesLayouts, ConvolutionsAndWhatFollowsGoChannelsLast) {
  Graph g = parse(std::string(kConvBlock) +
                      "        sum_1: \"f32[2, 8][8, 1]cpu\" = torch.ops.aten.sum.dim_IntList(r, [2, 3])\n"
                      "        return (sum_1,)\n",
                  kConvInputs);
  PassLog log;
  Graph out = channels_last_convolutions(g, &log);
  EXPECT_EQ(out.type(node(out, "c").outputs[0]).strides, (Shape{288, 1, 48, 8}));
  EXPECT_EQ(out.type(node(out, "r").outputs[0]).strides, (Shape{288, 1, 48, 8}));
  EXPECT_EQ(out.type(out.outputs()[0]), g.type(g.outputs()[0]));
  EXPECT_TRUE(logged(log, "layout: 1 convolutions write channels-last outputs (c); 3 values change layout")) << joined(log);
  std::vector<HostTensor> before = run_on_ramps(g), after = run_on_ramps(out);
  expect_identical(after[0], before[0], "sum_1");
  // Once is enough: a second run finds nothing to change.
  PassLog again;
  channels_last_convolutions(out, &again);
  EXPECT_TRUE(again.lines.empty()) << joined(again);
}

TEST(PassesLayouts, GraphOutputsAndViewsKeepTheirLayouts) {
  PassLog log;
  Graph returned = parse(std::string(kConvBlock) + "        return (r,)\n", kConvInputs);
  Graph out = channels_last_convolutions(returned, &log);
  EXPECT_EQ(out.type(node(out, "c").outputs[0]).strides, (Shape{288, 36, 6, 1}));
  EXPECT_TRUE(logged(log, "layout: convolution layouts kept: graph output 0 would change from "
                          "f32[2, 8, 6, 6][288, 36, 6, 1]cpu to f32[2, 8, 6, 6][288, 1, 48, 8]cpu")) << joined(log);
  log.lines.clear();
  Graph viewed = parse(std::string(kConvBlock) +
                           "        view: \"f32[2, 288][288, 1]cpu\" = torch.ops.aten.view.default(r, [2, 288])\n"
                           "        return (view,)\n",
                       kConvInputs);
  out = channels_last_convolutions(viewed, &log);
  EXPECT_EQ(out.type(node(out, "c").outputs[0]).strides, (Shape{288, 36, 6, 1}));
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0].rfind("layout: convolution layouts kept: with channels-last outputs, ", 0), 0u) << joined(log);
}

// A convolution whose input turns channels-last in one round (a depthwise convolution after
// ConvNeXt's downsampling one, with a contiguous input and weight) follows in the next.
TEST(PassesLayouts, ConvolutionsAfterConvertedOnesFollow) {
  Graph g = parse(std::string(kConvBlock) +
                      "        c2: \"f32[2, 8, 6, 6][288, 36, 6, 1]cpu\" = torch.ops.aten.convolution.default(r, v, None, "
                      "[1, 1], [1, 1], [1, 1], False, [0, 0], 8)\n"
                      "        sum_1: \"f32[2, 8][8, 1]cpu\" = torch.ops.aten.sum.dim_IntList(c2, [2, 3])\n"
                      "        return (sum_1,)\n",
                  std::string(kConvInputs) + R"(, v: "f32[8, 1, 3, 3][9, 9, 3, 1]cpu")");
  PassLog log;
  Graph out = channels_last_convolutions(g, &log);
  EXPECT_EQ(out.type(node(out, "c2").outputs[0]).strides, (Shape{288, 1, 48, 8})) << joined(log);
  EXPECT_TRUE(logged(log, "layout: 2 convolutions write channels-last outputs (c, c2); 4 values change layout"))
      << joined(log);
  expect_identical(run_on_ramps(out)[0], run_on_ramps(g)[0], "sum_1");
}

// as_strided reads its input's memory by explicit strides: the pass goes on when that input's
// elements stay where they were (the mean of an adaptive average pool, [N, C, 1, 1]), and is
// undone when they would move.
TEST(PassesLayouts, AsStridedInputsKeepTheirAddresses) {
  PassLog log;
  Graph pooled = parse(std::string(kConvBlock) +
                           "        mean: \"f32[2, 8, 1, 1][8, 1, 1, 1]cpu\" = torch.ops.aten.mean.dim(r, [-1, -2], True)\n"
                           "        as_strided: \"f32[2, 8, 1, 1][8, 1, 8, 8]cpu\" = "
                           "torch.ops.aten.as_strided.default(mean, [2, 8, 1, 1], [8, 1, 8, 8])\n"
                           "        view: \"f32[2, 8][8, 1]cpu\" = torch.ops.aten.view.default(as_strided, [2, 8])\n"
                           "        return (view,)\n",
                       kConvInputs);
  Graph out = channels_last_convolutions(pooled, &log);
  EXPECT_EQ(out.type(node(out, "c").outputs[0]).strides, (Shape{288, 1, 48, 8})) << joined(log);
  expect_identical(run_on_ramps(out)[0], run_on_ramps(pooled)[0], "view");
  log.lines.clear();
  Graph strided = parse(std::string(kConvBlock) +
                            "        as_strided: \"f32[2, 288][288, 1]cpu\" = "
                            "torch.ops.aten.as_strided.default(r, [2, 288], [288, 1])\n"
                            "        return (as_strided,)\n",
                        kConvInputs);
  out = channels_last_convolutions(strided, &log);
  EXPECT_EQ(out.type(node(out, "c").outputs[0]).strides, (Shape{288, 36, 6, 1}));
  EXPECT_TRUE(logged(log, "layout: convolution layouts kept: 'as_strided' reads 'r' by explicit strides, which would "
                          "change from f32[2, 8, 6, 6][288, 36, 6, 1]cpu to f32[2, 8, 6, 6][288, 1, 48, 8]cpu"))
      << joined(log);
}

class PassesOnCase : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(PassesOnCase, KeepOutputTypesAndValues) {
  const auto dir = GetParam();
  Graph g = test::fixture_graph(dir);
  PassLog log;
  Graph out = run_graph_passes(g, reference_evaluator(), &log);
  ASSERT_EQ(out.outputs().size(), g.outputs().size());
  for (size_t i = 0; i < g.outputs().size(); ++i)
    EXPECT_EQ(out.type(out.outputs()[i]), g.type(g.outputs()[i])) << "output " << i;
  EXPECT_EQ(out.inputs().size(), g.inputs().size());
  EXPECT_EQ(out.constants().size(), g.constants().size());
  // Idempotent: a second run changes nothing.
  PassLog again;
  run_graph_passes(out, reference_evaluator(), &again);
  EXPECT_TRUE(again.lines.empty()) << joined(again);

  // The GPU's layout pass after them keeps output types too.
  Graph laid_out = channels_last_convolutions(out);
  for (size_t i = 0; i < g.outputs().size(); ++i)
    EXPECT_EQ(laid_out.type(laid_out.outputs()[i]), g.type(g.outputs()[i])) << "output " << i;

  // The same values: each lowered program that differs from the one before the passes is
  // interpreted (the interpreter is deterministic, and a program's text is all it reads
  // besides the inputs, so an unchanged program computes the same bits).
  TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
  ir::Program original = lowering::lower(g);
  std::string original_text = ir::str(original);
  std::vector<HostTensor> before;
  for (const Graph *changed : {&out, &laid_out}) {
    ir::Program p = lowering::lower(*changed);
    if (ir::str(p) == original_text) continue;
    if (before.empty()) before = ir::interpret(original, inputs);
    std::vector<HostTensor> after = ir::interpret(p, inputs);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) expect_identical(after[i], before[i], output_tensor_name(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Passes, PassesOnCase, testing::ValuesIn(all_cases()), [](const auto &info) {
  std::string name = info.param.parent_path().filename().string() + "_" + info.param.filename().string();
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
});

}  // namespace
}  // namespace coil::passes
