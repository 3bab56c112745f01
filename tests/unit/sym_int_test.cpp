// Symbolic sizes: arithmetic carries expressions and hints; comparisons decide by ranges and
// structure or record guards; conversions to integers specialize, with the reason recorded.
#include <gtest/gtest.h>

#include "graph/sym_int.h"
#include "graph/tensor_type.h"
#include "support/error.h"

namespace coil {
namespace {

SymInt sym(const std::string &name, int64_t hint, const std::shared_ptr<SizeGuards> &g) {
  return SymInt::of(ir::Expr::symbol(name), hint, g);
}

TEST(SymInt, PlainIntegersStayPlainAndRecordNothing) {
  auto guards = std::make_shared<SizeGuards>();
  SizeGuards &g = *guards;
  SymInt a = int64_t(6), b = 4;
  EXPECT_FALSE((a * b + 1).symbolic());
  EXPECT_EQ((a * b + 1).hint(), 25);
  EXPECT_EQ(sym_floor_div(int64_t(-7), 2).hint(), -4);  // Python's floor
  EXPECT_EQ(sym_mod(int64_t(-7), 2).hint(), 1);
  EXPECT_TRUE(a > b);
  EXPECT_EQ(int64_t(a), 6);
  EXPECT_TRUE(g.guards().empty());
}

TEST(SymInt, ArithmeticCarriesTheExpressionAndTheHint) {
  auto guards = std::make_shared<SizeGuards>();
  SymInt s0 = sym("s0", 8, guards);
  SymInt n = s0 * 768 + 1;
  EXPECT_TRUE(n.symbolic());
  EXPECT_EQ(n.hint(), 8 * 768 + 1);
  EXPECT_EQ(str(n), "s0*768 + 1");
  EXPECT_EQ(str(sym_floor_div(s0 * 768, 768)), "s0");
  SymInt c = s0 - s0;  // a constant expression is a plain integer
  EXPECT_FALSE(c.symbolic());
  EXPECT_EQ(c.hint(), 0);
}

TEST(SymInt, RangesDecideWithoutGuards) {
  auto guards = std::make_shared<SizeGuards>();
  SizeGuards &g = *guards;
  SymInt s0 = sym("s0", 8, guards);
  EXPECT_FALSE(s0 == 1);  // a symbol is at least 2 unless its range says otherwise
  EXPECT_TRUE(s0 != 0);
  EXPECT_TRUE(s0 > 1);
  EXPECT_TRUE(s0 * 2 == s0 + s0);
  EXPECT_EQ(str(sym_max(s0, 1)), "s0");
  SymInt s2 = sym("s2", 5, guards);
  EXPECT_TRUE(s2 * 96 < s0 * s2 * 96);  // s2*96*(1 - s0) < 0: the common factor is positive
  EXPECT_TRUE(s2 != s2 * s2);
  EXPECT_TRUE(g.guards().empty());
  g.set_range("s1", 1, 64);
  SymInt s1 = sym("s1", 1, guards);
  EXPECT_TRUE(s1 == 1);  // now undecided by its range: the hint decides, and a guard says so
  ASSERT_EQ(g.guards().size(), 1u);
  EXPECT_EQ(g.guards()[0].str(), "s1 == 1");
}

TEST(SymInt, UndecidedComparisonsRecordTheirOutcome) {
  auto guards = std::make_shared<SizeGuards>();
  SizeGuards &g = *guards;
  SymInt s0 = sym("s0", 8, guards), s1 = sym("s1", 16, guards);
  EXPECT_TRUE(s0 < s1);
  EXPECT_FALSE(s0 == s1);
  EXPECT_FALSE(s0 >= 9 + s1 * 0 + 3);  // 8 >= 12 is false: records 12 - s0 > 0
  ASSERT_EQ(g.guards().size(), 3u);
  EXPECT_FALSE(g.first_failing({{"s0", 3}, {"s1", 5}}));
  std::optional<SizeGuard> f = g.first_failing({{"s0", 7}, {"s1", 7}});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->str(), "s0 - s1 < 0");
}

TEST(SymInt, ConversionSpecializesAndSaysWhy) {
  auto guards = std::make_shared<SizeGuards>();
  SizeGuards &g = *guards;
  SymInt s0 = sym("s0", 8, guards);
  {
    GuardActivity what("lowering node mm (aten.mm.default)");
    int64_t v = s0 * 4;
    EXPECT_EQ(v, 32);
  }
  ASSERT_EQ(g.guards().size(), 1u);
  EXPECT_EQ(g.guards()[0].str(), "s0*4 == 32");
  EXPECT_EQ(g.guards()[0].why, "lowering node mm (aten.mm.default)");
  EXPECT_EQ(g.specialized({{"s0", 8}}), (std::map<std::string, int64_t>{{"s0", 8}}));
  EXPECT_FALSE(g.first_failing({{"s0", 8}}));
  EXPECT_TRUE(g.first_failing({{"s0", 9}}));
  EXPECT_EQ(GuardActivity::current(), "");
}

TEST(SymInt, ShapesConvertElementByElement) {
  auto guards = std::make_shared<SizeGuards>();
  SizeGuards &g = *guards;
  SymShape shape = {sym("s0", 2, guards), 768};
  EXPECT_EQ(shape_str(shape), "[s0, 768]");
  EXPECT_EQ(str(checked_numel(shape)), "s0*768");
  EXPECT_EQ(shape_str(contiguous_strides(shape)), "[768, 1]");
  SymShape t = {int64_t(4), sym("s1", 3, guards)};
  EXPECT_EQ(shape_str(contiguous_strides(t)), "[s1, 1]");
  EXPECT_TRUE(g.guards().empty());
  Shape plain = shape;  // specializes s0
  EXPECT_EQ(plain, (Shape{2, 768}));
  ASSERT_EQ(g.guards().size(), 1u);
  EXPECT_EQ(g.guards()[0].str(), "s0 == 2");
}

TEST(SymInt, TypesCompareByStructure) {
  auto guards = std::make_shared<SizeGuards>();
  SymShape a = {sym("s0", 4, guards), 8}, b = {int64_t(4), 8};
  TensorType x{DType::F32, a, contiguous_strides(a), {}}, y{DType::F32, b, contiguous_strides(b), {}};
  EXPECT_FALSE(x == y);  // equal at the hints, not at every size: no guard asked for
  EXPECT_TRUE(x == x);
  EXPECT_EQ(x.str(), "f32[s0, 8][8, 1]cpu");
}

TEST(SymInt, ASymbolicDivisorIsSpecialized) {
  auto guards = std::make_shared<SizeGuards>();
  SizeGuards &g = *guards;
  SymInt s0 = sym("s0", 12, guards), s1 = sym("s1", 4, guards);
  EXPECT_EQ(sym_floor_div(s0, s1).hint(), 3);
  ASSERT_EQ(g.guards().size(), 1u);
  EXPECT_EQ(g.guards()[0].str(), "s1 == 4");
}

TEST(SymInt, EachGraphsSizesRecordIntoTheirOwnGuards) {
  auto first = std::make_shared<SizeGuards>(), second = std::make_shared<SizeGuards>();
  SymInt a = sym("s0", 8, first), b = sym("s0", 3, second);
  (void)int64_t(a * 2);
  EXPECT_EQ(first->guards().size(), 1u);
  EXPECT_TRUE(second->guards().empty());
  EXPECT_EQ((b + 1).guards(), second);
  EXPECT_EQ(SymInt(int64_t(4)).guards(), nullptr);
}

}  // namespace
}  // namespace coil
