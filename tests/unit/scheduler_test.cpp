// The scheduler: the seed's examples, each fusion kind, each reason a fusion is refused,
// inlining and its low-precision rule, the variable maps, the memory plan it feeds, and
// the interpreter's check that a fused kernel only reads what its loop has at hand.
#include <gtest/gtest.h>

#include <set>

#include "codegen/gpu/gpu_epilogue.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "lowering/lowering.h"
#include "scheduler/epilogue.h"
#include "scheduler/reindex.h"
#include "test_util.h"

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

// A pointwise group beside a reduction, sharing only their input, walks it as the
// reduction does: x is loaded at one index in the kernel (the sum over dim 0 and x * 2 in
// the sum's variables, not the product in its own flat order).
TEST(SchedulerFusion, SiblingReadsItsInputWhereTheReductionDoes) {
  Schedule s = run(kX, R"(
        sum_1: "f32[256][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [0])
        mul: "f32[64, 256][256, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        return (sum_1, mul)
)");
  ASSERT_EQ(loop_kernels(s), 1);
  std::set<std::string> indices;
  for (int m : s.ir.kernels[0].nodes)
    for (const ir::Instr &i : s.ir.program.nodes[size_t(m)].body.instrs)
      if (i.op == ir::Op::Load) indices.insert(ir::str(i.index));
  EXPECT_EQ(indices.size(), 1u) << explain(s);
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

// An extern call takes no producer and no reduction, and only the pointwise consumers
// that read as post-ops (relu fuses onto it: SchedulerEpilogue below).
TEST(SchedulerReject, ExternCall) {
  constexpr const char *kIn = R"(a: "f32[64, 32][32, 1]cpu", b: "f32[32, 16][16, 1]cpu")";
  const std::string refusal = "an extern call (mm) runs in a library, not in a generated loop";
  auto refused_as_it_is = [&](const Schedule &s) {
    for (const Rejection &r : s.rejected)
      if (r.reason == refusal) return true;
    return false;
  };
  Schedule s = run(kIn, R"(
        exp: "f32[64, 32][32, 1]cpu" = torch.ops.aten.exp.default(a)
        mm: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(exp, b)
        sin: "f32[64, 16][16, 1]cpu" = torch.ops.aten.sin.default(mm)
        return (sin,)
)");
  EXPECT_EQ(s.ir.kernels.size(), 3u) << explain(s);
  EXPECT_TRUE(refused_as_it_is(s)) << "the producer\n" << explain(s);
  EXPECT_TRUE(rejected_with(s, refusal + "; its epilogue cannot take [sin]: sin applies sin, which has no post-op"))
      << explain(s);
  Schedule reduced = run(kIn, R"(
        mm: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        sum_1: "f32[16][1]cpu" = torch.ops.aten.sum.dim_IntList(mm, [0])
        return (sum_1,)
)");
  EXPECT_TRUE(refused_as_it_is(reduced)) << "the reduction\n" << explain(reduced);
}

// A consumer of the call's result is no epilogue when the result is needed elsewhere too,
// when it combines the result with a computed value, and when eager rounds the result
// (emulate_precision_casts) before the consumer reads it.
TEST(SchedulerReject, ExternEpilogueLimits) {
  constexpr const char *kIn = R"(a: "f32[64, 32][32, 1]cpu", b: "f32[32, 16][16, 1]cpu", v: "f32[16][1]cpu")";
  Schedule twice = run(kIn, R"(
        mm: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        relu: "f32[64, 16][16, 1]cpu" = torch.ops.aten.relu.default(mm)
        return (mm, relu)
)");
  EXPECT_TRUE(rejected_with(twice, "buf3 is a graph output, and a library stores only the last post-op's value"))
      << explain(twice);
  Schedule computed = run(kIn, R"(
        mm: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        neg: "f32[16][1]cpu" = torch.ops.aten.neg.default(v)
        mul: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(mm, neg)
        return (mul,)
)");
  EXPECT_TRUE(rejected_with(computed, "mul takes the other operand of mul from a computation, not from memory"))
      << explain(computed);
  ScheduleOptions emulate;
  emulate.emulate_precision_casts = true;
  Schedule rounded = run(R"(a: "bf16[64, 32][32, 1]cpu", b: "bf16[32, 16][16, 1]cpu")", R"(
        mm: "bf16[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        relu: "bf16[64, 16][16, 1]cpu" = torch.ops.aten.relu.default(mm)
        return (relu,)
)",
                         emulate);
  EXPECT_TRUE(rejected_with(rounded, "emulate_precision_casts rounds buf2 to bf16 before the epilogue reads it"))
      << explain(rounded);
  EXPECT_EQ(run(R"(a: "bf16[64, 32][32, 1]cpu", b: "bf16[32, 16][16, 1]cpu")", R"(
        mm: "bf16[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        relu: "bf16[64, 16][16, 1]cpu" = torch.ops.aten.relu.default(mm)
        return (relu,)
)").ir.kernels.size(),
            1u)
      << "without emulate_precision_casts the rounding goes with the store";
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

// relu -> mm -> (relu + sin(mm)): fusing the relu's kernel with the add would put the mm
// inside. (sin keeps the add from being the mm's epilogue.)
TEST(SchedulerReject, Cycle) {
  Schedule s = run(R"(x: "f32[64, 64][64, 1]cpu")", R"(
        relu: "f32[64, 64][64, 1]cpu" = torch.ops.aten.relu.default(x)
        mm: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mm.default(relu, relu)
        sin: "f32[64, 64][64, 1]cpu" = torch.ops.aten.sin.default(mm)
        add: "f32[64, 64][64, 1]cpu" = torch.ops.aten.add.Tensor(relu, sin)
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

// A second pass over a reduction's rows (a normalization after its statistics) stays
// apart where the GPU's plan would run the kernel in too few programs
// (ScheduleOptions::min_programs_for_second_pass, codegen::gpu_schedule_options): a row per
// program, or a block of 64 rows side by side; with fewer than 2^21 elements, or on the
// CPU, it is fused.
TEST(SchedulerReject, SecondPassOverFewPrograms) {
  // softmax-like: exp, its sum over `dim`, the division
  auto schedule = [](const std::string &sizes, const std::string &strides, const std::string &sum_type, int dim,
                     bool gpu) {
    std::string t = "f32" + sizes + strides + "cpu";
    return run("x: \"" + t + "\"", R"(
        exp: ")" + t + R"(" = torch.ops.aten.exp.default(x)
        sum_1: ")" + sum_type + R"(cpu" = torch.ops.aten.sum.dim_IntList(exp, [)" + std::to_string(dim) + R"(], True)
        div: ")" + t + R"(" = torch.ops.aten.div.Tensor(exp, sum_1)
        return (div,)
)",
               gpu ? codegen::gpu_schedule_options(ScheduleOptions{}) : ScheduleOptions{});
  };
  auto rows = [&](const std::string &r, const std::string &c, bool gpu) {
    return schedule("[" + r + ", " + c + "]", "[" + c + ", 1]", "f32[" + r + ", 1][1, 1]", 1, gpu);
  };
  Schedule apart = rows("64", "65536", true);
  EXPECT_TRUE(rejected_with(apart, "a second pass over 64 rows of 65536 elements would run in 64 programs"))
      << explain(apart);
  EXPECT_EQ(loop_kernels(apart), 2);
  EXPECT_EQ(loop_kernels(rows("64", "65536", false)), 1);
  EXPECT_EQ(loop_kernels(rows("64", "1024", true)), 1);     // 2^16 elements
  EXPECT_EQ(loop_kernels(rows("512", "4096", true)), 1);    // 512 programs
  EXPECT_EQ(loop_kernels(rows("4096", "1024", true)), 1);
  // Rows side by side (the sum over dim 0): 64 columns are one block, one program.
  auto columns = [&](const std::string &r, const std::string &c) {
    return schedule("[" + r + ", " + c + "]", "[" + c + ", 1]", "f32[1, " + c + "][" + c + ", 1]", 0, true);
  };
  Schedule narrow = columns("32768", "64");
  EXPECT_TRUE(rejected_with(narrow, "a second pass over 64 rows of 32768 elements (side by side) would run in 1 programs"))
      << explain(narrow);
  EXPECT_EQ(loop_kernels(narrow), 2);
  EXPECT_EQ(loop_kernels(columns("128", "16384")), 1);      // 256 blocks of 64 columns
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

// A bf16 value whose f32 copy would be stored (read twice, with two streaming loads inside)
// keeps its own buffer, and the copy, one load and a cast, is recomputed in both readers.
TEST(SchedulerInline, WideningCopyReadsTheNarrowValue) {
  std::string inputs = R"(a: "bf16[64, 256][256, 1]cpu", b: "bf16[64, 256][256, 1]cpu")";
  std::string copy = R"(
        add: "bf16[64, 256][256, 1]cpu" = torch.ops.aten.add.Tensor(a, b)
        _to_copy: "f32[64, 256][256, 1]cpu" = torch.ops.aten._to_copy.default(add, dtype = torch.float32)
        sum_1: "f32[64][1]cpu" = torch.ops.aten.sum.dim_IntList(_to_copy, [1])
)";
  auto origins = [](const Schedule &s) {
    std::vector<std::string> out;
    for (const ir::Node &n : s.ir.program.nodes)
      if (n.kind == ir::NodeKind::Pointwise) out.push_back(n.origin);
    return out;
  };
  ScheduleOptions o;
  o.max_inline_reads = 1;
  std::string twice = copy + R"(        amax: "f32[256][1]cpu" = torch.ops.aten.amax.default(_to_copy, [0])
        return (sum_1, amax)
)";
  Schedule narrow = run(inputs, twice, o);
  EXPECT_EQ(origins(narrow), std::vector<std::string>{"add"}) << explain(narrow);
  ASSERT_EQ(narrow.inlined.size(), 2u) << explain(narrow);
  EXPECT_NE(narrow.inlined[0].find("keeps its bf16 buffer: its f32 copy _to_copy is recomputed"), std::string::npos)
      << narrow.inlined[0];
  // Where the copy with the value inside would be recomputed too, nothing is stored.
  Schedule recomputed = run(inputs, twice);
  EXPECT_TRUE(origins(recomputed).empty()) << explain(recomputed);
  Schedule once = run(inputs, copy + "        return (sum_1,)\n", o);
  EXPECT_TRUE(origins(once).empty()) << explain(once);
}

// A costly value of a smaller space read at every element of a larger one (batch norm's
// 1/sqrt(var + eps) per channel) keeps its buffer; a cheap one is recomputed, and so is a
// costly one read at as many points as it has.
TEST(SchedulerInline, CostlyBroadcastValueIsStored) {
  std::string inputs = R"(x: "f32[64, 16][16, 1]cpu", v: "f32[16][1]cpu")";
  auto inlined = [&](const char *op, const char *shape) {
    return run(inputs, str_cat("\n        y: \"f32", shape, "[1]cpu\" = torch.ops.aten.", op,
                               ".default(v)\n        mul: \"f32[64, 16][16, 1]cpu\" = torch.ops.aten.mul.Tensor(x, y)\n"
                               "        return (mul,)\n"))
        .inlined.size();
  };
  EXPECT_EQ(inlined("rsqrt", "[16]"), 0u);
  EXPECT_EQ(inlined("neg", "[16]"), 1u);
  Schedule same = run(R"(x: "f32[16][1]cpu", v: "f32[16][1]cpu")", R"(
        y: "f32[16][1]cpu" = torch.ops.aten.rsqrt.default(v)
        mul: "f32[16][1]cpu" = torch.ops.aten.mul.Tensor(x, y)
        return (mul,)
)");
  EXPECT_EQ(same.inlined.size(), 1u);
}

// A sort compares its keys with one another: recomputed in the rank's reduction, a key
// could come out of a vector and a scalar evaluation with different last bits and rank
// against itself. So the keys are stored, however cheap, even where the positions alone
// are used and the rank is their only reader (multinomial's fixture under four lanes
// failed so).
TEST(SchedulerInline, SortKeysAreStored) {
  std::string body = R"(
        neg: "f32[4, 5][5, 1]cpu" = torch.ops.aten.neg.default(x)
        sort = torch.ops.aten.sort.default(neg)
        getitem_1: "i64[4, 5][5, 1]cpu" = sort[1]
        return (getitem_1,)
)";
  Schedule s = run(R"(x: "f32[4, 5][5, 1]cpu")", body);
  for (const std::string &line : s.inlined) EXPECT_EQ(line.find("(neg)"), std::string::npos) << line;
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

// mm then relu: relu runs on each element of the product as a post-op of the call, and
// the product never reaches memory.
TEST(SchedulerEpilogue, ReluFusesOntoTheCall) {
  Schedule s = run(R"(a: "f32[64, 32][32, 1]cpu", b: "f32[32, 16][16, 1]cpu")", R"(
        mm: "f32[64, 16][16, 1]cpu" = torch.ops.aten.mm.default(a, b)
        relu: "f32[64, 16][16, 1]cpu" = torch.ops.aten.relu.default(mm)
        return (relu,)
)");
  ASSERT_EQ(s.ir.kernels.size(), 1u) << explain(s);
  const ir::Kernel &k = s.ir.kernels[0];
  EXPECT_EQ(k.kind, ir::KernelKind::Extern);
  EXPECT_EQ(k.nodes.size(), 2u);
  EXPECT_EQ(k.attrs.at("post_ops"), "relu");
  ASSERT_EQ(k.internal.size(), 1u);
  EXPECT_EQ(s.ir.program.buffer(k.internal[0]).name, "buf2") << "the product stays in the call";
  EXPECT_EQ(s.memory.arena_bytes, 0);
  EXPECT_NE(ir::str(s.ir).find("  post_ops: relu\n"), std::string::npos) << ir::str(s.ir);
  EXPECT_NE(explain(s).find("post-ops: relu"), std::string::npos) << explain(s);
}

// A bias added, then gelu, over a view of the product (the rows of a linear layer seen
// as [batch, tokens, features]): one chain, the bias broadcast over the rows.
TEST(SchedulerEpilogue, BiasAndGeluThroughAView) {
  Schedule s = run(R"(x: "f32[16, 24][24, 1]cpu", w: "f32[24, 96][96, 1]cpu", bias: "f32[96][1]cpu")", R"(
        mm: "f32[16, 96][96, 1]cpu" = torch.ops.aten.mm.default(x, w)
        view: "f32[2, 8, 96][768, 96, 1]cpu" = torch.ops.aten.view.default(mm, [2, 8, 96])
        add: "f32[2, 8, 96][768, 96, 1]cpu" = torch.ops.aten.add.Tensor(view, bias)
        gelu: "f32[2, 8, 96][768, 96, 1]cpu" = torch.ops.aten.gelu.default(add)
        return (gelu,)
)");
  ASSERT_EQ(s.ir.kernels.size(), 1u) << explain(s);
  EXPECT_EQ(s.ir.kernels[0].attrs.at("post_ops"), "add bias[1, 96], gelu_erf");
  Epilogue e = epilogue_of(s.ir.program, s.ir.kernels[0]);
  EXPECT_EQ(e.out.strides, (Shape{96, 1})) << "the [2, 8, 96] result seen over the product's [16, 96]";
}

// Activations that use the value more than once are recognized whole; scalars on either
// side become linear post-ops, relu then min(6) one clip.
TEST(SchedulerEpilogue, ActivationsAndScalars) {
  auto post_ops = [](const std::string &body) {
    Schedule s = run(R"(a: "f32[8, 4][4, 1]cpu", b: "f32[4, 8][8, 1]cpu")",
                     "        mm: \"f32[8, 8][8, 1]cpu\" = torch.ops.aten.mm.default(a, b)\n" + body);
    EXPECT_EQ(s.ir.kernels.size(), 1u) << explain(s);
    return s.ir.kernels[0].attrs.count("post_ops") ? s.ir.kernels[0].attrs.at("post_ops") : "";
  };
  EXPECT_EQ(post_ops(R"(        y: "f32[8, 8][8, 1]cpu" = torch.ops.aten.silu.default(mm)
        return (y,)
)"),
            "silu");
  EXPECT_EQ(post_ops(R"(        y: "f32[8, 8][8, 1]cpu" = torch.ops.aten.gelu.default(mm, approximate = 'tanh')
        return (y,)
)"),
            "gelu_tanh");
  EXPECT_EQ(post_ops(R"(        y: "f32[8, 8][8, 1]cpu" = torch.ops.aten.hardtanh.default(mm, 0.0, 6.0)
        return (y,)
)"),
            "clip(0, 6)");
  EXPECT_EQ(post_ops(R"(        y: "f32[8, 8][8, 1]cpu" = torch.ops.aten.leaky_relu.default(mm, 0.2)
        return (y,)
)"),
            "relu(0.2)");
  EXPECT_EQ(post_ops(R"(        mul: "f32[8, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(mm, 2)
        rsub: "f32[8, 8][8, 1]cpu" = torch.ops.aten.sub.Tensor(1.0, mul)
        y: "f32[8, 8][8, 1]cpu" = torch.ops.aten.sigmoid.default(rsub)
        return (y,)
)"),
            "linear(2, 0), linear(-1, 1), sigmoid");
}

// The interpreter runs a call with its epilogue as it runs them apart.
TEST(SchedulerEpilogue, InterpreterRunsTheFusedKernel) {
  Compilation c = compile_graph(parse(R"(a: "f32[6, 5][5, 1]cpu", b: "f32[5, 4][4, 1]cpu", t: "f32[4][1]cpu")", R"(
        mm: "f32[6, 4][4, 1]cpu" = torch.ops.aten.mm.default(a, b)
        mul: "f32[6, 4][4, 1]cpu" = torch.ops.aten.mul.Tensor(mm, t)
        tanh: "f32[6, 4][4, 1]cpu" = torch.ops.aten.tanh.default(mul)
        return (tanh,)
)"),
                                ScheduleOptions{});
  ASSERT_EQ(c.schedule.ir.kernels.size(), 1u) << explain(c.schedule);
  TensorList in;
  for (auto [name, sizes] : {std::pair<const char *, Shape>{"a", {6, 5}}, {"b", {5, 4}}, {"t", {4}}}) {
    HostTensor h = HostTensor::zeros(DType::F32, sizes);
    for (int64_t i = 0; i < checked_numel(sizes); ++i) h.ptr<float>()[i] = float((i * 7) % 11) / 5 - 1;
    in.push_back({name, h});
  }
  auto fused = ir::interpret(c.schedule.ir, in), apart = ir::interpret(ir::unfused(c.lowered), in);
  ASSERT_EQ(fused.size(), 1u);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(fused[0].ptr<float>()[i], apart[0].ptr<float>()[i]) << i;
}

// Two kernels in a row where the second writes over what the first made, in place (sin
// has no post-op, so it stays a kernel of its own after the mm).
TEST(SchedulerMemory, InPlaceOverADyingIntermediate) {
  ScheduleOptions o;
  o.inline_pointwise = false;
  o.horizontal = false;
  Schedule s = run(R"(x: "f32[64, 64][64, 1]cpu")", R"(
        mm: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mm.default(x, x)
        sin: "f32[64, 64][64, 1]cpu" = torch.ops.aten.sin.default(mm)
        mm_1: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mm.default(sin, x)
        return (mm_1,)
)",
                   o);
  ASSERT_EQ(s.lives.size(), 2u) << memory_plan_str(s);
  EXPECT_EQ(s.memory.reused[1], 0) << memory_plan_str(s);
  EXPECT_EQ(s.memory.arena_bytes, 64 * 64 * 4);
}

// A scatter whose initial tensor dies in it writes over it (embedding_dense_backward's
// zeros, then the rows added): one buffer in the arena, and the kernel says that it copies
// nothing (the dialects skip the copy).
TEST(SchedulerMemory, ScatterWritesOverItsInitialTensor) {
  Schedule s = run(R"(g: "f32[6, 4][4, 1]cpu", i: "i64[6][1]cpu")", R"(
        embedding_dense_backward: "f32[50, 4][4, 1]cpu" = torch.ops.aten.embedding_dense_backward.default(g, i, 50, -1, False)
        mul: "f32[50, 4][4, 1]cpu" = torch.ops.aten.mul.Tensor(embedding_dense_backward, 2)
        return (mul,)
)");
  int scatters = 0;
  for (const ir::Kernel &k : s.ir.kernels)
    if (k.kind == ir::KernelKind::Scatter) {
      ++scatters;
      EXPECT_EQ(k.attrs.count("written_over"), 1u) << memory_plan_str(s);
    }
  EXPECT_EQ(scatters, 1);
  EXPECT_LT(s.memory.arena_bytes, 2 * 50 * 4 * 4) << memory_plan_str(s);  // one buffer, not two
}

// Cross-entropy's pieces in a training graph: the log-probabilities are recomputed at the
// elements the gather picks (never stored: the arena holds each row's max and log-sum),
// and the one-hot gradient (a scatter of one element per row into zeros) is a pointwise
// value fused into its reader, with no scatter kernel.
TEST(SchedulerMemory, CrossEntropyKeepsNoRowsOfTheVocabulary) {
  Schedule forward = run(R"(x: "f32[16, 1000][1000, 1]cpu", t: "i64[16, 1][1, 1]cpu")", R"(
        amax: "f32[16, 1][1, 1]cpu" = torch.ops.aten.amax.default(x, [1], True)
        sub: "f32[16, 1000][1000, 1]cpu" = torch.ops.aten.sub.Tensor(x, amax)
        exp: "f32[16, 1000][1000, 1]cpu" = torch.ops.aten.exp.default(sub)
        sum_1: "f32[16, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList(exp, [1], True)
        log: "f32[16, 1][1, 1]cpu" = torch.ops.aten.log.default(sum_1)
        sub_1: "f32[16, 1000][1000, 1]cpu" = torch.ops.aten.sub.Tensor(sub, log)
        gather: "f32[16, 1][1, 1]cpu" = torch.ops.aten.gather.default(sub_1, 1, t)
        return (gather,)
)");
  EXPECT_LE(forward.memory.arena_bytes, 2 * 128) << memory_plan_str(forward);
  Schedule backward = run(R"(x: "f32[16, 1000][1000, 1]cpu", t: "i64[16, 1][1, 1]cpu")", R"(
        zeros_like: "f32[16, 1000][1000, 1]cpu" = torch.ops.aten.zeros_like.default(x)
        scatter: "f32[16, 1000][1000, 1]cpu" = torch.ops.aten.scatter.value(zeros_like, 1, t, -1.0)
        mul: "f32[16, 1000][1000, 1]cpu" = torch.ops.aten.mul.Tensor(scatter, x)
        return (mul,)
)");
  for (const ir::Kernel &k : backward.ir.kernels) EXPECT_NE(k.kind, ir::KernelKind::Scatter);
  EXPECT_EQ(backward.ir.kernels.size(), 1u);
  EXPECT_EQ(backward.memory.arena_bytes, 0) << memory_plan_str(backward);
}

// A graph of symbolic sizes is scheduled once for all its sizes: kernels over [s0, 64],
// fused where the sizes' expressions are equal, apart where they are equal only at the
// sizes compiled for (s0 and s1, both 8), and no guard recorded either way.
TEST(SchedulerSymbolic, FusesByTheSizesExpressionsAndNeverGuards) {
  frontend::SizeValues sizes{{"s0", 8}, {"s1", 8}};
  Graph g = frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[s0, 64][64, 1]cpu", b: "f32[s1, 64][64, 1]cpu", c: "f32[64][1]cpu"):
        relu: "f32[s0, 64][64, 1]cpu" = torch.ops.aten.relu.default(a)
        mul: "f32[s0, 64][64, 1]cpu" = torch.ops.aten.mul.Tensor(relu, c)
        sum_1: "f32[s0][1]cpu" = torch.ops.aten.sum.dim_IntList(mul, [1])
        add: "f32[s0, 64][64, 1]cpu" = torch.ops.aten.add.Tensor(a, c)
        sub: "f32[s1, 64][64, 1]cpu" = torch.ops.aten.sub.Tensor(b, c)
        return (sum_1, add, sub)
)", "test.py", &sizes);
  Schedule s = schedule_kernels(lowering::lower_symbolic(g));
  EXPECT_TRUE(size_guards_of(g)->guards().empty()) << size_guards_str(g);
  ASSERT_EQ(s.ir.kernels.size(), 2u) << explain(s);
  // The sum and the add over the same [s0, 64], in one kernel; the sub over [s1, 64] apart.
  EXPECT_EQ(shape_str(s.ir.kernels[0].ranges), "[s0]");
  EXPECT_EQ(shape_str(s.ir.kernels[0].reduction_ranges), "[64]");
  EXPECT_EQ(s.ir.kernels[0].nodes.size(), 2u) << explain(s);
  EXPECT_EQ(shape_str(s.ir.kernels[1].ranges), "[s1, 64]");
  EXPECT_TRUE(rejected_with(s, "different iteration space")) << explain(s);
}

TEST(Reindex, LinearizeMapsPointKToPointK) {
  ir::Ranges r = ranges_of({8, 16});
  VarMap m = *linearize({4, 32}, {0, 1}, {8, 16}, 0, r);
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

// A 3x3 window of stride 2 and padding 1 over [8, 16, 16] (channel, h, w): where the
// mask holds, the producer's point is the window's position, with no division.
TEST(Reindex, SolveUnderMaskFollowsAPaddedWindow) {
  using ir::Expr;
  using ir::VarId;
  ir::Ranges r = ranges_of({8, 8, 8}, {3, 3});  // c, oh, ow, then r0, r1
  Expr store = Expr(VarId{0}) * 256 + Expr(VarId{1}) * 16 + Expr(VarId{2});
  Expr h = Expr(VarId{1}) * 2 + Expr(VarId{3}) - 1, w = Expr(VarId{2}) * 2 + Expr(VarId{4}) - 1;
  Expr target = Expr(VarId{0}) * 256 + h * 16 + w;
  std::vector<MaskFact> facts = {{h, 0, 16}, {w, 0, 16}};
  auto m = solve_under_mask(store, {8, 16, 16}, target, r, facts);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0], Expr(VarId{0}));
  EXPECT_EQ((*m)[1], h);
  EXPECT_EQ((*m)[2], w);
  // Without the bound on w the split is not the only one (w = -1 is the previous row).
  EXPECT_FALSE(solve_under_mask(store, {8, 16, 16}, target, r, {{h, 0, 16}}));
  EXPECT_FALSE(solve_under_mask(store, {8, 16, 16}, target, r, {{h, 0, 16}, {w, -1, 16}}));
  // With no mask at all, in-range parts need no fact.
  Expr plain = Expr(VarId{0}) * 256 + Expr(VarId{1}) * 32 + Expr(VarId{2});
  auto p = solve_under_mask(store, {8, 16, 16}, plain, r, {});
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[1], Expr(VarId{1}) * 2);
}

// Maps between spaces of symbolic sizes: s0 = 5 and s1 = 3 where the maps are made; none
// of them records a guard.
class SymbolicReindex : public testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(sym.guards->guards().empty()); }
  test::Symbols sym;
  SymInt s0 = sym("s0", 5), s1 = sym("s1", 3);
  ir::Expr x0{ir::VarId{0}}, x1{ir::VarId{1}}, x2{ir::VarId{2}};
};

TEST_F(SymbolicReindex, LinearizeMatchesSpacesTermByTerm) {
  // [s0*s1, 4] walked as [s0, s1, 4]: the flat dim is x0*s1 + x1, with no division.
  SymShape split{s0, s1, 4};
  auto m = linearize({s0 * s1, 4}, {0, 1}, split, 0, ranges_of(split));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0], x0 * s1.expr() + x1);
  EXPECT_EQ((*m)[1], x2);
  // [s0, 2] walked as [s0*2]: the dim of 2 elements carries, as a flat offset's digits do.
  SymShape flat{s0 * 2};
  auto c = linearize({s0, 2}, {0, 1}, flat, 0, ranges_of(flat));
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)[0], ir::floor_div(x0, 2));
  EXPECT_EQ((*c)[1], ir::mod(x0, 2));
  // [s0, s1] walked as [s0*s1] divides by s1.
  SymShape both{s0 * s1};
  auto d = linearize({s0, s1}, {0, 1}, both, 0, ranges_of(both));
  ASSERT_TRUE(d);
  EXPECT_EQ((*d)[0], ir::floor_div(x0, s1.expr()));
  EXPECT_EQ((*d)[1], ir::mod(x0, s1.expr()));
}

TEST_F(SymbolicReindex, SolveInjectiveTakesStridesOfSizes) {
  // A [4, s0 + 3] producer (rows padded by 3) read at its own point: x0's stride is s0 + 3.
  SymShape sizes{4, s0 + 3};
  ir::Expr store = x0 * (s0 + 3).expr() + x1;
  auto m = solve_injective(store, sizes, store, ranges_of(sizes));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0], x0);
  EXPECT_EQ((*m)[1], x1);
  // Read at x1 + 1, the last element of a row is the next row's first: by division by s0 + 3.
  auto next = solve_injective(store, sizes, store + 1, ranges_of(sizes));
  ASSERT_TRUE(next);
  for (int64_t s : {2, 5})
    for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 0}, {1, s + 2}, {2, s + 1}}) {
      int64_t flat = r * (s + 3) + c + 1;
      std::map<std::string, int64_t> at{{"s0", s}};
      EXPECT_EQ(ir::eval((*next)[0], {r, c}, at), flat / (s + 3));
      EXPECT_EQ(ir::eval((*next)[1], {r, c}, at), flat % (s + 3));
    }
}

// A window of padding 1 over a row of s0 elements reads x1 + 1 where x1 + 1 < s0: the
// mask's bound is the size itself, and without it the last element would read the next row.
TEST_F(SymbolicReindex, SolveUnderMaskTakesABoundOfSize) {
  SymShape sizes{2, s0};
  ir::BodyBuilder b;
  ir::Expr w = x1 + 1;
  int i = b.index(w, DType::I64);
  int lo = b.binary(ir::Op::Ge, i, b.constant(0, DType::I64), DType::Bool);
  int hi = b.binary(ir::Op::Lt, i, b.index(s0.expr(), DType::I64), DType::Bool);
  int mask = b.binary(ir::Op::LogicalAnd, lo, hi, DType::Bool);
  std::vector<MaskFact> facts = mask_facts(b.body(), mask);
  ASSERT_EQ(facts.size(), 1u);
  EXPECT_EQ(facts[0].lo, 0);
  ASSERT_TRUE(facts[0].below);
  EXPECT_EQ(*facts[0].below, s0.expr());
  ir::Expr store = x0 * s0.expr() + x1;
  auto m = solve_under_mask(store, sizes, store + 1, ranges_of(sizes), facts);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0], x0);
  EXPECT_EQ((*m)[1], w);
  EXPECT_FALSE(solve_under_mask(store, sizes, store + 1, ranges_of(sizes), {{w, 0, ir::Interval::kNoUpper}}));
}

TEST(Reindex, MaskFactsReadTheComparisonsOfAnd) {
  ir::BodyBuilder b;
  ir::Expr h = ir::Expr(ir::VarId{1}) - 1;
  int i = b.index(h, DType::I64);
  int lo = b.binary(ir::Op::Ge, i, b.constant(0, DType::I64), DType::Bool);
  int hi = b.binary(ir::Op::Lt, i, b.constant(16, DType::I64), DType::Bool);
  int other = b.binary(ir::Op::Le, b.index(ir::Expr(ir::VarId{0}), DType::I64), b.constant(4, DType::I64), DType::Bool);
  int mask = b.binary(ir::Op::LogicalAnd, b.binary(ir::Op::LogicalAnd, lo, hi, DType::Bool), other, DType::Bool);
  std::vector<MaskFact> facts = mask_facts(b.body(), mask);
  ASSERT_EQ(facts.size(), 2u);
  auto of = [&](const ir::Expr &e) { return std::find_if(facts.begin(), facts.end(), [&](auto &f) { return f.e == e; }); };
  ASSERT_NE(of(h), facts.end());
  EXPECT_EQ(of(h)->lo, 0);
  EXPECT_EQ(of(h)->hi, 16);
  ASSERT_NE(of(ir::Expr(ir::VarId{0})), facts.end());
  EXPECT_EQ(of(ir::Expr(ir::VarId{0}))->hi, 5);
}

// Batch norm and relu inlined into a padded max pool read the per-channel weights at the
// channel itself, unmasked (they are in bounds anyway), not at a remainder of a division.
TEST(SchedulerInline, PaddedWindowReadsItsProducerByPosition) {
  Schedule s = run(R"(x: "f32[2, 4, 8, 8][256, 64, 8, 1]cpu", w: "f32[4][1]cpu")", R"(
        view: "f32[4, 1, 1][1, 1, 1]cpu" = torch.ops.aten.view.default(w, [4, 1, 1])
        mul: "f32[2, 4, 8, 8][256, 64, 8, 1]cpu" = torch.ops.aten.mul.Tensor(x, view)
        relu: "f32[2, 4, 8, 8][256, 64, 8, 1]cpu" = torch.ops.aten.relu.default(mul)
        max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu, [3, 3], [2, 2], [1, 1])
        getitem: "f32[2, 4, 4, 4][64, 16, 4, 1]cpu" = max_pool2d_with_indices[0]
        return (getitem,)
)");
  ASSERT_EQ(loop_kernels(s), 1) << explain(s);
  bool found = false;
  for (const ir::Node &n : s.ir.program.nodes)
    for (const ir::Instr &i : n.body.instrs)
      if (i.op == ir::Op::Load && s.ir.program.buffer(i.buffer).name == "w") {
        found = true;
        EXPECT_EQ(i.index, ir::Expr(ir::VarId{1})) << ir::str(i.index);
        EXPECT_LT(i.args[0], 0) << "the weight's load is masked";
      }
  EXPECT_TRUE(found);
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

// The fused schedule and every node run apart give the same bits on the storage of
// dense inputs of `sizes`.
void expect_same_as_unfused(const Compilation &c, const std::vector<std::pair<std::string, Shape>> &inputs) {
  TensorList in;
  for (const auto &[name, sizes] : inputs) {
    HostTensor h = HostTensor::zeros(DType::F32, sizes);
    for (int64_t i = 0; i < checked_numel(sizes); ++i) h.ptr<float>()[i] = float((i * 7) % 11) / 5 - 1;
    in.push_back({name, h});
  }
  auto fused = ir::interpret(c.schedule.ir, in), apart = ir::interpret(ir::unfused(c.lowered), in);
  ASSERT_EQ(fused.size(), apart.size());
  for (size_t o = 0; o < fused.size(); ++o) {
    ASSERT_EQ(fused[o].sizes, apart[o].sizes);
    for (int64_t i = 0; i < fused[o].numel(); ++i)
      EXPECT_EQ(fused[o].ptr<float>()[i], apart[o].ptr<float>()[i]) << "output " << o << " element " << i;
  }
}

constexpr const char *kChannelsLast = R"(x: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu", y: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu")";

// Pointwise nodes over channels-last values loop N, H, W, C: the innermost loop walks
// memory, the chain is still one kernel, and it computes what the nodes do apart.
TEST(SchedulerLoopOrder, ChannelsLastLoopsFollowMemory) {
  Compilation c = compile_graph(parse(kChannelsLast, R"(
        add: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = torch.ops.aten.add.Tensor(x, y)
        relu: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = torch.ops.aten.relu.default(add)
        mul: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = torch.ops.aten.mul.Tensor(relu, y)
        return (relu, mul)
)"),
                                ScheduleOptions{});
  const Schedule &s = c.schedule;
  ASSERT_EQ(loop_kernels(s), 1) << explain(s);
  EXPECT_EQ(s.ir.kernels[0].ranges, (std::vector<int64_t>{2, 6, 6, 4})) << explain(s);
  EXPECT_NE(explain(s).find("loops over dims [0, 2, 3, 1] of strides [144, 1, 24, 4]"), std::string::npos) << explain(s);
  // Every store is at the flat position of the loops.
  for (int n : s.ir.kernels[0].nodes)
    EXPECT_EQ(ir::str(ir::store_index(s.ir.program.nodes[size_t(n)], s.ir.program.buffer(s.ir.program.nodes[size_t(n)].outputs[0]))),
              "x0*144 + x1*24 + x2*4 + x3");
  expect_same_as_unfused(c, {{"x", {2, 4, 6, 6}}, {"y", {2, 4, 6, 6}}});

  ScheduleOptions logical;
  logical.memory_order_loops = false;
  EXPECT_EQ(run(kChannelsLast, R"(
        relu: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = torch.ops.aten.relu.default(x)
        return (relu,)
)",
                logical)
                .ir.kernels[0]
                .ranges,
            (std::vector<int64_t>{2, 4, 6, 6}));
}

// A contiguous consumer of a channels-last producer, a reduction over H and W, and a
// transposed output: each node keeps the loop order of its own output, fused or not,
// and the results are the unfused ones.
TEST(SchedulerLoopOrder, MixedLayoutsComputeWhatTheNodesDo) {
  ScheduleOptions no_inline;
  no_inline.inline_pointwise = false;
  Compilation c = compile_graph(parse(kChannelsLast, R"(
        sin: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = torch.ops.aten.sin.default(x)
        clone: "f32[2, 4, 6, 6][144, 36, 6, 1]cpu" = torch.ops.aten.clone.default(sin, memory_format = torch.contiguous_format)
        sum_1: "f32[2, 4][4, 1]cpu" = torch.ops.aten.sum.dim_IntList(sin, [2, 3])
        permute: "f32[2, 6, 6, 4][144, 6, 1, 36]cpu" = torch.ops.aten.permute.default(clone, [0, 2, 3, 1])
        cos: "f32[2, 6, 6, 4][144, 6, 1, 36]cpu" = torch.ops.aten.cos.default(permute)
        return (clone, sum_1, cos)
)"),
                                no_inline);
  EXPECT_NE(explain(c.schedule).find("(cos): loops over dims [0, 3, 1, 2]"), std::string::npos) << explain(c.schedule);
  expect_same_as_unfused(c, {{"x", {2, 4, 6, 6}}, {"y", {2, 4, 6, 6}}});
}

}  // namespace
}  // namespace coil::sched
