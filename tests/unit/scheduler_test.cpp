// The scheduler: the seed's examples, each fusion kind, each reason a fusion is refused,
// inlining and its low-precision rule, the variable maps, the memory plan it feeds, and
// the interpreter's check that a fused kernel only reads what its loop has at hand.
#include <gtest/gtest.h>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "scheduler/reindex.h"

namespace coil::sched {
namespace {

Graph parse(const std::string &inputs, const std::string &body) {
  return frontend::parse_graph("class GraphModule(torch.nn.Module):\n    def forward(self, " + inputs + "):\n" + body,
                               "test.py");
}

Schedule run(const std::string &inputs, const std::string &body, ScheduleOptions o = {}) {
  return compile_graph(parse(inputs, body), o).schedule;
}

int loop_kernels(const Schedule &s) {
  int n = 0;
  for (const ir::Kernel &k : s.ir.kernels) n += k.is_loop_nest() || k.kind == ir::KernelKind::Scan;
  return n;
}

bool rejected_with(const Schedule &s, const std::string &words) {
  for (const Rejection &r : s.rejected)
    if (r.reason.find(words) != std::string::npos) return true;
  return false;
}

constexpr const char *kX = R"(x: "f32[64, 256][256, 1]cpu")";
constexpr const char *kAB = R"(a: "f32[64, 256][256, 1]cpu", b: "f32[64, 256][256, 1]cpu")";

// Seed: (x*2 + 1).relu() is one kernel.
TEST(SchedulerSeed, ReluChainIsOneKernel) {
  Schedule s = run(kX, R"(
        mul: "f32[64, 256][256, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        add: "f32[64, 256][256, 1]cpu" = torch.ops.aten.add.Tensor(mul, 1)
        relu: "f32[64, 256][256, 1]cpu" = torch.ops.aten.relu.default(add)
        return (relu,)
)");
  EXPECT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.lives.size(), 0u);
}

// Seed: x = a + b; y = x * 2; z = y + a is one kernel with no intermediate buffer.
TEST(SchedulerSeed, AddMulAddHasNoIntermediate) {
  Schedule s = run(kAB, R"(
        add: "f32[64, 256][256, 1]cpu" = torch.ops.aten.add.Tensor(a, b)
        mul: "f32[64, 256][256, 1]cpu" = torch.ops.aten.mul.Tensor(add, 2)
        add_1: "f32[64, 256][256, 1]cpu" = torch.ops.aten.add.Tensor(mul, a)
        return (add_1,)
)");
  ASSERT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.ir.kernels[0].stores.size(), 1u);
  EXPECT_EQ(s.memory.arena_bytes, 0);
}

// Seed: softmax and layer norm over the last dim are one kernel each, in passes.
TEST(SchedulerSeed, SoftmaxIsOneKernelOfThreePasses) {
  Schedule s = run(kX, R"(
        _softmax: "f32[64, 256][256, 1]cpu" = torch.ops.aten._softmax.default(x, -1, False)
        return (_softmax,)
)");
  ASSERT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.ir.kernels[0].kind, ir::KernelKind::Reduction);
  EXPECT_EQ(s.ir.kernels[0].steps.size(), 3u);  // max, sum of exp, normalize
  EXPECT_EQ(s.ir.kernels[0].internal.size(), 2u);
}

TEST(SchedulerSeed, LayerNormIsOneKernel) {
  Schedule s = run(R"(x: "f32[64, 256][256, 1]cpu", w: "f32[256][1]cpu", b: "f32[256][1]cpu")", R"(
        native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [256], w, b, 1e-05)
        getitem: "f32[64, 256][256, 1]cpu" = native_layer_norm[0]
        return (getitem,)
)");
  EXPECT_EQ(loop_kernels(s), 1);
}

// Vertical fusion through a view: the consumer reads the producer at the point it wrote.
TEST(SchedulerFusion, VerticalThroughAView) {
  ScheduleOptions no_inline;
  no_inline.inline_pointwise = false;
  Schedule s = run(kX, R"(
        sin: "f32[64, 256][256, 1]cpu" = torch.ops.aten.sin.default(x)
        view: "f32[16, 4, 256][1024, 256, 1]cpu" = torch.ops.aten.view.default(sin, [16, 4, 256])
        cos: "f32[16, 4, 256][1024, 256, 1]cpu" = torch.ops.aten.cos.default(view)
        return (cos,)
)",
                   no_inline);
  ASSERT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.ir.kernels[0].internal.size(), 1u);
}

// A pointwise producer that is also returned joins the reduction's pass (stored), and
// the reduction reads it at the point it computed it.
TEST(SchedulerFusion, PointwiseProducerIntoReduction) {
  Schedule s = run(kX, R"(
        exp: "f32[64, 256][256, 1]cpu" = torch.ops.aten.exp.default(x)
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(exp, [1])
        return (exp, sum_1)
)");
  ASSERT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.ir.kernels[0].steps.size(), 1u);
  EXPECT_EQ(s.ir.kernels[0].stores.size(), 2u);
}

// A reduction over dim 0 and its epilogue: the epilogue walks rows in the reduction's order.
TEST(SchedulerFusion, EpilogueAfterReductionOverDimZero) {
  Schedule s = run(kX, R"(
        sum_1: "f32[1, 256][256, 1]cpu" = torch.ops.aten.sum.dim_IntList(x, [0], True)
        div: "f32[64, 256][256, 1]cpu" = torch.ops.aten.div.Tensor(x, sum_1)
        return (div,)
)");
  ASSERT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.ir.kernels[0].steps.size(), 2u);
}

// Horizontal: two reductions of one space reading x share one pass.
TEST(SchedulerFusion, HorizontalReductionsShareAPass) {
  std::string body = R"(
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [1])
        amax: "f32[64][1]cpu" = torch.ops.aten.amax.default(x, [1])
        return (sum_1, amax)
)";
  Schedule s = run(kX, body);
  ASSERT_EQ(loop_kernels(s), 1);
  EXPECT_EQ(s.ir.kernels[0].steps.size(), 1u);
  ScheduleOptions apart;
  apart.horizontal = false;
  EXPECT_EQ(loop_kernels(run(kX, body, apart)), 2);
}

TEST(SchedulerReject, DifferentIterationSpace) {
  Schedule s = run(kX, R"(
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [1])
        sum_2: "f32[256][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [0])
        cumsum: "f32[64, 256][256, 1]cpu" = torch.ops.aten.cumsum.default(x, 1)
        return (sum_1, sum_2, cumsum)
)");
  EXPECT_EQ(loop_kernels(s), 3);
  EXPECT_TRUE(rejected_with(s, "different iteration space 64 reducing 256 vs 256 reducing 64")) << explain(s);
  EXPECT_TRUE(rejected_with(s, "a scan runs alone")) << explain(s);
}

TEST(SchedulerReject, ExternCall) {
  Schedule s = run(R"(a: "f32[64, 32][32, 1]cpu", b: "f32[32, 16][16, 1]cpu")", R"(
        mm: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        relu: "f32[64, 16][16, 1]cpu" = torch.ops.aten.relu.default(mm)
        return (relu,)
)");
  EXPECT_TRUE(rejected_with(s, "an extern call (mm) runs in a library")) << explain(s);
}

TEST(SchedulerReject, MaxFusionSize) {
  ScheduleOptions small;
  small.max_fusion_size = 1;
  Schedule s = run(kX, R"(
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [1])
        amax: "f32[64][1]cpu" = torch.ops.aten.amax.default(x, [1])
        return (sum_1, amax)
)",
                   small);
  EXPECT_EQ(loop_kernels(s), 2);
  EXPECT_TRUE(rejected_with(s, "over max_fusion_size 1")) << explain(s);
}

// sum -> mm -> (x + mm): fusing the sum's kernel with the add would put the mm inside.
TEST(SchedulerReject, Cycle) {
  Schedule s = run(R"(x: "f32[64, 64][64, 1]cpu")", R"(
        relu: "f32[64, 64][64, 1]cpu" = torch.ops.aten.relu.default(x)
        mm: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mm.default(relu, relu)
        add: "f32[64, 64][64, 1]cpu" = torch.ops.aten.add.Tensor(relu, mm)
        return (add,)
)");
  EXPECT_TRUE(rejected_with(s, "would create a cycle through")) << explain(s);
}

// y = x.t() + 1 read back transposed by a consumer that must not fuse through a
// different element: stored, read where the other kernel wrote it.
TEST(SchedulerReject, AnotherElementAtTheSamePoint) {
  ScheduleOptions no_inline;
  no_inline.inline_pointwise = false;
  no_inline.horizontal = false;
  Schedule s = run(R"(x: "f32[64, 64][64, 1]cpu")", R"(
        sin: "f32[64, 64][64, 1]cpu" = torch.ops.aten.sin.default(x)
        cumsum: "f32[64, 64][64, 1]cpu" = torch.ops.aten.cumsum.default(sin, 1)
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(sin, [1])
        t: "f32[64, 64][1, 64]cpu" = torch.ops.aten.t.default(sin)
        add: "f32[64, 64][64, 1]cpu" = torch.ops.aten.add.Tensor(sin, t)
        return (cumsum, sum_1, add)
)",
                   no_inline);
  EXPECT_TRUE(rejected_with(s, "another element at the same point")) << explain(s);
}

TEST(SchedulerReject, ReadAtADataDependentIndex) {
  ScheduleOptions no_inline;
  no_inline.inline_pointwise = false;
  Schedule s = run(R"(x: "f32[8, 4][4, 1]cpu", i: "i64[8][1]cpu")", R"(
        relu: "f32[8, 4][4, 1]cpu" = torch.ops.aten.relu.default(x)
        index_select: "f32[8, 4][4, 1]cpu" = torch.ops.aten.index_select.default(relu, 0, i)
        return (index_select,)
)",
                   no_inline);
  EXPECT_EQ(loop_kernels(s), 2);
  EXPECT_TRUE(rejected_with(s, "is read at an index that depends on data")) << explain(s);
}

TEST(SchedulerReject, ScatterRunsAlone) {
  Schedule s = run(R"(x: "f32[8, 4][4, 1]cpu", i: "i64[2, 4][4, 1]cpu", src: "f32[2, 4][4, 1]cpu")", R"(
        scatter: "f32[8, 4][4, 1]cpu" = torch.ops.aten.scatter.src(x, 0, i, src)
        add: "f32[8, 4][4, 1]cpu" = torch.ops.aten.add.Tensor(scatter, x)
        return (add,)
)");
  EXPECT_TRUE(rejected_with(s, "a scatter writes at places read from data")) << explain(s);
}

// A value computed in one pass over the row cannot be read in a later pass.
TEST(SchedulerReject, ValueAcrossPasses) {
  ScheduleOptions no_inline;
  no_inline.inline_pointwise = false;
  Schedule s = run(kX, R"(
        exp: "f32[64, 256][256, 1]cpu" = torch.ops.aten.exp.default(x)
        sum_1: "f32[64, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList(exp, [1], True)
        div: "f32[64, 256][256, 1]cpu" = torch.ops.aten.div.Tensor(exp, sum_1)
        return (div,)
)",
                   no_inline);
  EXPECT_TRUE(rejected_with(s, "is computed in one pass over the row and needed in a later one")) << explain(s);
  EXPECT_EQ(loop_kernels(s), 2);
}

// Decision 14: an inlined bf16 result is not rounded before its consumer, unless
// emulate_precision_casts; a `_to_copy` to bf16 always rounds.
TEST(SchedulerInline, LowPrecisionRoundingGoesWithTheStore) {
  std::string inputs = R"(x: "bf16[8][1]cpu")";
  std::string body = R"(
        mul: "bf16[8][1]cpu" = torch.ops.aten.mul.Tensor(x, 3)
        add: "bf16[8][1]cpu" = torch.ops.aten.add.Tensor(mul, 1)
        return (add,)
)";
  auto casts = [](const Schedule &s) {
    int n = 0;
    for (const ir::Node &node : s.ir.program.nodes)
      for (const ir::Instr &i : node.body.instrs) n += i.op == ir::Op::Cast && i.dtype == DType::BF16;
    return n;
  };
  Schedule fast = run(inputs, body);
  EXPECT_EQ(fast.inlined.size(), 1u);
  EXPECT_EQ(casts(fast), 1);  // the store's
  ScheduleOptions emulate;
  emulate.emulate_precision_casts = true;
  EXPECT_EQ(casts(run(inputs, body, emulate)), 2);
  Schedule copy = run(R"(x: "f32[8][1]cpu")", R"(
        _to_copy: "bf16[8][1]cpu" = torch.ops.aten._to_copy.default(x, dtype = torch.bfloat16)
        add: "bf16[8][1]cpu" = torch.ops.aten.add.Tensor(_to_copy, 1)
        return (add,)
)");
  EXPECT_EQ(casts(copy), 2);
}

TEST(SchedulerInline, ProducerReadManyTimesIsStored) {
  ScheduleOptions o;
  o.max_inline_reads = 1;
  std::string body = R"(
        add: "f32[64, 256][256, 1]cpu" = torch.ops.aten.add.Tensor(a, b)
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(add, [1])
        amax: "f32[256][1]cpu" = torch.ops.aten.amax.default(add, [0])
        return (sum_1, amax)
)";
  EXPECT_EQ(run(kAB, body, o).inlined.size(), 0u);
  EXPECT_EQ(run(kAB, body).inlined.size(), 1u);
}

TEST(SchedulerDce, UnusedNodesAndEmptyOutputsGo) {
  Schedule s = run(R"(x: "f32[0, 8][8, 1]cpu", y: "f32[4][1]cpu")", R"(
        relu: "f32[0, 8][8, 1]cpu" = torch.ops.aten.relu.default(x)
        var_mean = torch.ops.aten.var_mean.correction(y, [0], correction = 1)
        getitem: "f32[][]cpu" = var_mean[0]
        return (relu, getitem)
)");
  EXPECT_NE(std::find(s.removed.begin(), s.removed.end(), "relu has no elements to compute"), s.removed.end())
      << explain(s);
  EXPECT_EQ(loop_kernels(s), 1);
}

// Two kernels in a row where the second writes over what the first made, in place.
TEST(SchedulerMemory, InPlaceOverADyingIntermediate) {
  ScheduleOptions o;
  o.inline_pointwise = false;
  o.horizontal = false;
  Schedule s = run(R"(x: "f32[64, 64][64, 1]cpu")", R"(
        mm: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mm.default(x, x)
        relu: "f32[64, 64][64, 1]cpu" = torch.ops.aten.relu.default(mm)
        mm_1: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mm.default(relu, x)
        return (mm_1,)
)",
                   o);
  ASSERT_EQ(s.lives.size(), 2u) << memory_plan_str(s);
  EXPECT_EQ(s.memory.reused[1], 0) << memory_plan_str(s);
  EXPECT_EQ(s.memory.arena_bytes, 64 * 64 * 4);
}

TEST(Reindex, LinearizeMapsPointKToPointK) {
  ir::Ranges r = ranges_of({8, 16});
  VarMap m = linearize({4, 32}, {0, 1}, {8, 16}, 0, r);
  // x0 of [4, 32] = (16*y0 + y1) // 32 = y0 // 2; x1 = (16*y0 + y1) % 32.
  for (int64_t y0 = 0; y0 < 8; ++y0)
    for (int64_t y1 = 0; y1 < 16; ++y1) {
      int64_t k = y0 * 16 + y1;
      EXPECT_EQ(ir::eval(m[0], {y0, y1}), k / 32);
      EXPECT_EQ(ir::eval(m[1], {y0, y1}), k % 32);
    }
}

TEST(Reindex, SolveInjectiveInvertsATransposedStore) {
  ir::Ranges r = ranges_of({16, 8});
  ir::Expr store = ir::Expr(ir::VarId{0}) + ir::Expr(ir::VarId{1}) * 8;  // [8, 16] stored transposed
  auto m = solve_injective(store, {8, 16}, ir::Expr(ir::VarId{0}) * 8 + ir::Expr(ir::VarId{1}), r);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0], ir::Expr(ir::VarId{1}));
  EXPECT_EQ((*m)[1], ir::Expr(ir::VarId{0}));
  EXPECT_FALSE(solve_injective(ir::Expr(ir::VarId{0}), {8, 16}, ir::Expr(ir::VarId{0}), r));  // ignores x1
}

// The interpreter catches a kernel whose member reads a value its loop never computed
// at that point: here the relu reads add's output transposed.
TEST(ScheduleInterpreter, CatchesAReadOfAnotherPoint) {
  ScheduleOptions o;
  o.inline_pointwise = false;
  Compilation c = compile_graph(parse(R"(x: "f32[2, 2][2, 1]cpu")", R"(
        add: "f32[2, 2][2, 1]cpu" = torch.ops.aten.add.Tensor(x, 1)
        t: "f32[2, 2][1, 2]cpu" = torch.ops.aten.t.default(add)
        relu: "f32[2, 2][1, 2]cpu" = torch.ops.aten.relu.default(t)
        return (relu,)
)"),
                                o);
  ir::ScheduledProgram bad = ir::unfused(c.lowered);
  ASSERT_EQ(bad.kernels.size(), 2u);
  bad.kernels[0].nodes.push_back(bad.kernels[1].nodes[0]);
  bad.kernels[0].steps[0].nodes.push_back(bad.kernels[1].nodes[0]);
  bad.kernels[0].internal = {bad.kernels[0].stores[0]};
  bad.kernels[0].stores = {bad.kernels[1].stores[0]};
  bad.kernels.pop_back();
  HostTensor x = HostTensor::zeros(DType::F32, {2, 2});
  EXPECT_THROW(ir::interpret(bad, {{"x", x}}), InternalError);
}

}  // namespace
}  // namespace coil::sched
