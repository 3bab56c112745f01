// The loop IR's bodies, printer and reference interpreter on hand-built programs.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/interpreter.h"
#include "ir/scalar_math.h"

namespace coil::ir {
namespace {

TensorType dense(DType t, Shape sizes) { return TensorType{t, sizes, contiguous_strides(sizes), {}}; }

HostTensor tensor(DType t, Shape sizes, std::vector<double> values) {
  HostTensor h = HostTensor::zeros(t, sizes);
  for (size_t i = 0; i < values.size(); ++i) {
    switch (t) {
      case DType::F32: h.ptr<float>()[i] = float(values[i]); break;
      case DType::I64: h.ptr<int64_t>()[i] = int64_t(values[i]); break;
      default: ADD_FAILURE() << "unsupported dtype in the test helper";
    }
  }
  return h;
}

std::vector<double> values(const HostTensor &t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.element_as_double(i));
  return out;
}

// relu(x * 2 + 1) over a transposed view of a [2, 3] input: out[i, j] = f(x[j, i]).
Program relu_chain() {
  Program p;
  BufferId x = p.add_buffer({"x", Buffer::Kind::Input, dense(DType::F32, {2, 3}), -1});
  BufferId out = p.add_buffer({"buf0", Buffer::Kind::Computed, dense(DType::F32, {3, 2}), 0});
  Node n;
  n.origin = "relu";
  n.ranges = {3, 2};
  BodyBuilder b;
  int v = b.load(x, offset_of({Expr(n.x(1)), Expr(n.x(0))}, {3, 1}), DType::F32);
  int two = b.constant(2, DType::F32);
  v = b.binary(Op::Mul, v, two, DType::F32);
  v = b.binary(Op::Add, v, b.constant(1, DType::F32), DType::F32);
  v = b.binary(Op::Maximum, v, b.constant(0, DType::F32), DType::F32);
  b.add_result(v);
  n.body = b.finish();
  n.outputs = {out};
  p.nodes.push_back(n);
  p.inputs = {x};
  p.outputs = {out};
  return p;
}

TEST(Body, BuilderMergesIdenticalValues) {
  BodyBuilder b;
  int a = b.load(0, Expr(VarId{0}), DType::F32);
  int a2 = b.load(0, Expr(VarId{0}), DType::F32);
  int c = b.constant(1.5, DType::F32);
  EXPECT_EQ(a, a2);
  EXPECT_EQ(b.binary(Op::Add, a, c, DType::F32), b.binary(Op::Add, a2, b.constant(1.5, DType::F32), DType::F32));
  EXPECT_EQ(b.cast(a, DType::F32), a);
  EXPECT_EQ(b.body().instrs.size(), 3u);
}

// Integer arithmetic of index values is one index expression: arange's start + i * step
// and a causal mask's column - row, which the code generators then see as affine.
TEST(Body, IndexArithmeticFoldsIntoOneIndex) {
  BodyBuilder b;
  int col = b.binary(Op::Add, b.constant(0, DType::I64),
                     b.binary(Op::Mul, b.index(Expr(VarId{1}), DType::I64), b.constant(1, DType::I64), DType::I64),
                     DType::I64);
  int d = b.binary(Op::Sub, col, b.index(Expr(VarId{0}), DType::I64), DType::I64);
  ASSERT_EQ(b.body().at(d).op, Op::Index);
  EXPECT_EQ(b.body().at(d).index, Expr(VarId{1}) - Expr(VarId{0}));
  // Not for other dtypes, products of two indices, or numbers that could overflow.
  int i32 = b.binary(Op::Add, b.index(Expr(VarId{0}), DType::I32), b.constant(1, DType::I32), DType::I32);
  EXPECT_EQ(b.body().at(i32).op, Op::Add);
  int sq = b.binary(Op::Mul, b.index(Expr(VarId{0}), DType::I64), b.index(Expr(VarId{0}), DType::I64), DType::I64);
  EXPECT_EQ(b.body().at(sq).op, Op::Mul);
  int big = b.binary(Op::Mul, b.index(Expr(VarId{0}), DType::I64), b.constant(double(int64_t(1) << 40), DType::I64),
                     DType::I64);
  EXPECT_EQ(b.body().at(big).op, Op::Mul);
}

TEST(LoopIr, PrintsBuffersNodesAndBodies) {
  std::string text = str(relu_chain());
  EXPECT_NE(text.find("x: f32[2, 3][3, 1]cpu  input"), std::string::npos) << text;
  EXPECT_NE(text.find("buf0 = pointwise  # relu"), std::string::npos) << text;
  EXPECT_NE(text.find("%0 = load x[x0 + x1*3]  f32"), std::string::npos) << text;
  EXPECT_NE(text.find("%6 = maximum %4, %5  f32"), std::string::npos) << text;
}

TEST(Interpreter, RunsAPointwiseNodeOverAView) {
  Program p = relu_chain();
  auto out = interpret(p, {{"x", tensor(DType::F32, {2, 3}, {-3, 0, 1, 2, -1, 5})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes, (Shape{3, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 5, 1, 0, 3, 11}));
}

Program reduce_rows(ReduceOp op, DType in, DType out_dtype, int outputs = 1) {
  Program p;
  BufferId x = p.add_buffer({"x", Buffer::Kind::Input, dense(in, {2, 3}), -1});
  Node n;
  n.kind = NodeKind::Reduction;
  n.reduce_op = op;
  n.origin = std::string(reduce_op_name(op));
  n.ranges = {2};
  n.reduction_ranges = {3};
  BodyBuilder b;
  b.add_result(b.load(x, offset_of({Expr(n.x(0)), Expr(n.r(0))}, {3, 1}), in));
  n.body = b.finish();
  for (int k = 0; k < outputs; ++k)
    n.outputs.push_back(p.add_buffer({"buf" + std::to_string(k), Buffer::Kind::Computed, dense(out_dtype, {2}), 0}));
  p.nodes.push_back(n);
  p.inputs = {x};
  p.outputs = n.outputs;
  return p;
}

TEST(Interpreter, Reductions) {
  TensorList in = {{"x", tensor(DType::F32, {2, 3}, {1, 5, 5, -2, NAN, 3})}};
  EXPECT_EQ(values(interpret(reduce_rows(ReduceOp::Max, DType::F32, DType::F32), in)[0])[0], 5);
  EXPECT_TRUE(std::isnan(values(interpret(reduce_rows(ReduceOp::Max, DType::F32, DType::F32), in)[0])[1]));
  // The first maximum wins; NaN counts as the maximum.
  EXPECT_EQ(values(interpret(reduce_rows(ReduceOp::ArgMax, DType::F32, DType::I64), in)[0]),
            (std::vector<double>{1, 1}));
  EXPECT_EQ(values(interpret(reduce_rows(ReduceOp::ArgMin, DType::F32, DType::I64), in)[0])[0], 0);
  TensorList ints = {{"x", tensor(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6})}};
  EXPECT_EQ(values(interpret(reduce_rows(ReduceOp::Sum, DType::I64, DType::I64), ints)[0]),
            (std::vector<double>{6, 15}));
  EXPECT_EQ(values(interpret(reduce_rows(ReduceOp::Prod, DType::I64, DType::I64), ints)[0]),
            (std::vector<double>{6, 120}));
}

TEST(Interpreter, WelfordGivesMeanM2AndCount) {
  TensorList in = {{"x", tensor(DType::F32, {2, 3}, {1, 2, 3, 10, 10, 10})}};
  auto out = interpret(reduce_rows(ReduceOp::Welford, DType::F32, DType::F32, 3), in);
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, 10}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{2, 0}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{3, 3}));
}

TEST(ScalarMath, FollowsPyTorch) {
  auto f = [](Op op, double a, double b) { return apply_op(op, DType::F32, DType::F32, {a, 0}, {b, 0}).f; };
  auto i = [](Op op, int64_t a, int64_t b) { return apply_op(op, DType::I32, DType::I32, {0, a}, {0, b}).i; };
  EXPECT_EQ(i(Op::FloorDiv, -7, 2), -4);
  EXPECT_EQ(i(Op::TruncDiv, -7, 2), -3);
  EXPECT_EQ(i(Op::Remainder, -7, 3), 2);
  EXPECT_EQ(i(Op::Fmod, -7, 3), -1);
  EXPECT_EQ(i(Op::Add, 2147483647, 1), -2147483648);  // i32 wraps
  EXPECT_EQ(f(Op::Remainder, -7.5, 2), 0.5);
  EXPECT_EQ(f(Op::FloorDiv, 7, -2), -4);
  EXPECT_TRUE(std::isnan(f(Op::Maximum, NAN, 1)));
  EXPECT_EQ(apply_op(Op::Round, DType::F32, DType::F32, {2.5, 0}).f, 2);
  EXPECT_EQ(cast({-2.7, 0}, DType::F32, DType::I64).i, -2);
  EXPECT_EQ(cast({0, 300}, DType::I64, DType::U8).i, 44);
  EXPECT_THROW(i(Op::FloorDiv, 1, 0), UserError);
  // f32 rounding after each op: 0.1 + 0.2 in f32.
  EXPECT_EQ(f(Op::Add, double(0.1f), double(0.2f)), double(0.1f + 0.2f));
}

}  // namespace
}  // namespace coil::ir
