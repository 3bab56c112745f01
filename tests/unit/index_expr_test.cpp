// Index expressions: canonical forms, printing, bounds, one test per simplification rule,
// access facts, and randomized checks of every rewrite against brute-force evaluation.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "expr/index_expr.h"
#include "support/error.h"
#include "support/int_math.h"

namespace coil::ir {
namespace {

const VarId kX{0}, kY{1}, kZ{2};
const Expr x = kX, y = kY, z = kZ;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// ---------------------------------------------------------------------------------------
// Canonical form on construction.

TEST(IndexExprBuild, ConstantsFold) {
  EXPECT_EQ(floor_div(7, 2), Expr(3));
  EXPECT_EQ(floor_div(-7, 2), Expr(-4));  // Python rounds toward minus infinity
  EXPECT_EQ(mod(-7, 2), Expr(1));         // and keeps remainders non-negative
  EXPECT_EQ(Expr(2) * 3 + 1, Expr(7));
  EXPECT_EQ(min(3, 5), Expr(3));
  EXPECT_EQ(max(3, 5), Expr(5));
  EXPECT_EQ((Expr(6) * Expr(7)).as_constant(), 42);
}

TEST(IndexExprBuild, MultiplyByOneOrZero) {
  EXPECT_EQ(x * 1, x);
  EXPECT_EQ(1 * x, x);
  EXPECT_EQ(x * 0, Expr(0));
  EXPECT_EQ(x * Expr(0), Expr(0));
}

TEST(IndexExprBuild, AddThenSubtractCancels) {
  EXPECT_EQ((x + 3) - 3, x);
  EXPECT_EQ(x - x, Expr(0));
  EXPECT_EQ(-(-x), x);
}

TEST(IndexExprBuild, ProductsDistribute) {
  EXPECT_EQ(2 * (x + y), x * 2 + y * 2);
  EXPECT_EQ(str(2 * (x + y)), "x0*2 + x1*2");
  EXPECT_EQ((x + 1) * (y + 2), x * y + x * 2 + y + 2);
  EXPECT_EQ(str((x + 1) * (y + 2)), "x0*2 + x0*x1 + x1 + 2");
}

TEST(IndexExprBuild, EqualTermsMerge) {
  EXPECT_EQ(x + x, x * 2);
  EXPECT_EQ(x * y, y * x);
  EXPECT_EQ(x * y * 3 - y * x, x * y * 2);
  EXPECT_EQ(floor_div(x, 4) + floor_div(x, 4), floor_div(x, 4) * 2);
}

TEST(IndexExprBuild, TermsSortDeterministically) {
  EXPECT_EQ(y + x, x + y);
  EXPECT_EQ(str(y * 3 + 5 + x * 256), "x0*256 + x1*3 + 5");
  EXPECT_EQ(str(mod(y, 8) + x), "x0 + x1 % 8");
}

TEST(IndexExprBuild, FloorDivMovesMultiplesOut) {
  // (x*c*k + rest) // c -> x*k + rest // c, constants included
  EXPECT_EQ(floor_div(x * 128 + y, 64), x * 2 + floor_div(y, 64));
  EXPECT_EQ(floor_div(x + 5, 4), floor_div(x + 1, 4) + 1);
  EXPECT_EQ(floor_div(x - 1, 4), floor_div(x + 3, 4) - 1);
}

TEST(IndexExprBuild, ModDropsMultiples) {
  EXPECT_EQ(mod(x * 4, 2), Expr(0));
  EXPECT_EQ(mod(x * 64 + y, 64), mod(y, 64));
  EXPECT_EQ(mod(x + 5, 4), mod(x + 1, 4));
}

TEST(IndexExprBuild, CommonFactorsLeaveDivisions) {
  // (x*c) % (c*k) -> (x % k)*c and (x*c) // (c*k) -> x // k
  EXPECT_EQ(mod(x * 4, 12), mod(x, 3) * 4);
  EXPECT_EQ(str(mod(x * 4, 12)), "(x0 % 3)*4");
  EXPECT_EQ(floor_div(x * 4, 12), floor_div(x, 3));
  EXPECT_EQ(floor_div(x * 6 + 2, 4), floor_div(x * 3 + 1, 2));
}

TEST(IndexExprBuild, DivisionByOne) {
  EXPECT_EQ(floor_div(x, 1), x);
  EXPECT_EQ(mod(x, 1), Expr(0));
}

TEST(IndexExprBuild, NestedFloorDivsBecomeOne) {
  // (x // a) // b -> x // (a*b), also with a constant between them
  EXPECT_EQ(floor_div(floor_div(x, 4), 8), floor_div(x, 32));
  EXPECT_EQ(floor_div(floor_div(x, 4) + 1, 8), floor_div(x + 4, 32));
  // (A + y // a) // d -> (A*a + y) // (a*d) for any integer A
  EXPECT_EQ(floor_div(y + floor_div(x, 4), 8), floor_div(x + y * 4, 32));
  // Only a quotient of coefficient 1 joins: (y // 4)*3 // 8 is not (y*3) // 32.
  EXPECT_EQ(str(floor_div(floor_div(x, 4) * 3, 8)), "((x0 // 4)*3) // 8");
}

TEST(IndexExprBuild, MinMaxOfShiftedOperands) {
  EXPECT_EQ(min(x + 1, x + 3), x + 1);
  EXPECT_EQ(max(x + 1, x + 3), x + 3);
  EXPECT_EQ(min(x, x), x);
}

TEST(IndexExprBuild, MinMaxAreSymmetric) {
  EXPECT_EQ(min(y, x), min(x, y));
  EXPECT_EQ(max(7, x), max(x, 7));
  EXPECT_EQ(str(min(7, x)), "min(x0, 7)");
}

TEST(IndexExprBuild, NonPositiveDivisorsAssert) {
  EXPECT_THROW(floor_div(x, 0), InternalError);
  EXPECT_THROW(mod(x, -3), InternalError);
}

TEST(IndexExprBuild, OverflowThrowsInsteadOfWrapping) {
  EXPECT_THROW(Expr(kMax) + 1, InternalError);
  EXPECT_THROW(Expr(kMin) * -1, InternalError);
  EXPECT_THROW(-Expr(kMin), InternalError);
  EXPECT_THROW(x * kMax * 2, InternalError);
  EXPECT_THROW(x * kMax + x, InternalError);
  EXPECT_EQ(floor_div(kMin, 2), Expr(kMin / 2));
  EXPECT_EQ(mod(x * kMin, 2), Expr(0));
}

TEST(IndexExprBuild, EqualExprsHashEqual) {
  Expr a = x * 256 + floor_div(y, 4) * 16 + mod(y, 4);
  Expr b = mod(y, 4) + 16 * floor_div(y + 0, 4) + 128 * (x * 2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  std::unordered_set<Expr> set = {a, b, a + 1, x};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_NE(a, a + 1);
  EXPECT_NE(x * y + z, x + y * z);
}

TEST(IndexExprBuild, Accessors) {
  Expr e = x * 4 + 3;
  EXPECT_EQ(e.constant(), 3);
  ASSERT_EQ(e.terms().size(), 1u);
  EXPECT_EQ(e.terms()[0].coeff, 4);
  EXPECT_EQ(e.as_constant(), std::nullopt);
  EXPECT_EQ(Expr(5).as_constant(), 5);
  EXPECT_EQ(x.as_var(), kX);
  EXPECT_EQ((x + 1).as_var(), std::nullopt);
  Expr quotient = floor_div(x, 4);
  const Atom *div = quotient.as_atom();
  ASSERT_NE(div, nullptr);
  EXPECT_EQ(div->kind(), AtomKind::FloorDiv);
  EXPECT_EQ(div->arg(), x);
  EXPECT_EQ(div->divisor(), 4);
  EXPECT_THROW(div->var(), InternalError);
}

// ---------------------------------------------------------------------------------------
// Printing.

TEST(IndexExprPrint, PythonLike) {
  EXPECT_EQ(str(x * 256 + y), "x0*256 + x1");
  EXPECT_EQ(str(floor_div(x * 64 + y, 128)), "(x0*64 + x1) // 128");
  EXPECT_EQ(str(mod(y, 64)), "x1 % 64");
  EXPECT_EQ(str(min(x, 7)), "min(x0, 7)");
  EXPECT_EQ(str(max(x, y - 1)), "max(x0, x1 - 1)");
  EXPECT_EQ(str(mod(floor_div(x, 4), 16)), "(x0 // 4) % 16");
  EXPECT_EQ(str(floor_div(min(x, 7), 2)), "min(x0, 7) // 2");
}

TEST(IndexExprPrint, SignsAndConstants) {
  EXPECT_EQ(str(Expr(0)), "0");
  EXPECT_EQ(str(Expr(-3)), "-3");
  EXPECT_EQ(str(x - 3), "x0 - 3");
  EXPECT_EQ(str(x - y * 2), "x0 - x1*2");
  EXPECT_EQ(str(3 - x), "-x0 + 3");
  EXPECT_EQ(str(Expr(kMin) + x), "x0 - 9223372036854775808");
}

TEST(IndexExprPrint, OperatorsNextToSignsOrFactorsGetParentheses) {
  // -x0 // 4 would be (-x0) // 4 in Python.
  EXPECT_EQ(str(-floor_div(x, 4)), "-(x0 // 4)");
  EXPECT_EQ(str(floor_div(x, 4) * 64 + y), "(x0 // 4)*64 + x1");
  EXPECT_EQ(str(x - mod(y, 4)), "x0 - x1 % 4");
  EXPECT_EQ(str(mod(x, 4) * y), "(x0 % 4)*x1");
}

TEST(IndexExprPrint, NamesAndSymbols) {
  auto names = [](VarId v) { return std::string(v.id == 0 ? "i" : "j"); };
  EXPECT_EQ(str(x * 64 + mod(y, 8), names), "i*64 + j % 8");
  Expr s = Expr::symbol("s0");
  EXPECT_EQ(str(x * s + y), "x0*s0 + x1");
}

TEST(IndexExprPrint, SameExprSameText) {
  Expr a = floor_div(x * 3 + y, 5) + min(z, 2) * 4;
  Expr b = min(2, z) * 4 + floor_div(y + 3 * x, 5);
  EXPECT_EQ(str(a), str(b));
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), str(a));
}

// ---------------------------------------------------------------------------------------
// Bounds.

TEST(IndexExprBounds, VariablesAndSums) {
  Ranges r = {{kX, 4}, {kY, 256}};
  EXPECT_EQ(bounds(x * 256 + y, r), (Interval{0, 1023}));
  EXPECT_EQ(bounds(x - y * 2 + 1, r), (Interval{-509, 4}));
  EXPECT_EQ(bounds(x * y, r), (Interval{0, 765}));
}

TEST(IndexExprBounds, Operators) {
  Ranges r = {{kX, 10}, {kY, 3}};
  EXPECT_EQ(bounds(floor_div(x, 4), r), (Interval{0, 2}));
  EXPECT_EQ(bounds(mod(x, 4), r), (Interval{0, 3}));
  EXPECT_EQ(bounds(mod(y + 4, 8), r), (Interval{4, 6}));
  EXPECT_EQ(bounds(floor_div(y - 5, 4), r), (Interval{-2, -1}));
  EXPECT_EQ(bounds(min(x, 7), r), (Interval{0, 7}));
  EXPECT_EQ(bounds(max(x, 3), r), (Interval{3, 9}));
}

TEST(IndexExprBounds, UnknownVariablesAndSymbols) {
  EXPECT_EQ(bounds(x, {}), Interval::unbounded());
  EXPECT_EQ(bounds(mod(x, 8), {}), (Interval{0, 7}));
  Expr s = Expr::symbol("s0");
  EXPECT_EQ(bounds(s, {}), (Interval{0, Interval::kNoUpper}));
  EXPECT_EQ(bounds(x * s + 2, {{kX, 4}}), (Interval{2, Interval::kNoUpper}));
  EXPECT_EQ(bounds(-s, {}), (Interval{Interval::kNoLower, 0}));
}

TEST(IndexExprBounds, OverflowDropsTheBound) {
  Ranges r = {{kX, 10}, {kY, kMax}};
  EXPECT_EQ(bounds(x * (kMax / 2), r), (Interval{0, Interval::kNoUpper}));
  EXPECT_EQ(bounds(x * (kMax / 2) * -1, r), (Interval{Interval::kNoLower, 0}));
  EXPECT_EQ(bounds(y * y, r), Interval::unbounded());
  EXPECT_EQ(bounds(y + kMax, r).hi, Interval::kNoUpper);
}

TEST(IndexExprBounds, EmptyLoopIsVacuous) {
  EXPECT_EQ(bounds(x, {{kX, 0}}), (Interval{0, 0}));
  EXPECT_THROW(Ranges({{kX, -1}}), InternalError);
}

// ---------------------------------------------------------------------------------------
// eval, substitute, vars_of.

TEST(IndexExprEval, PythonSemantics) {
  EXPECT_EQ(eval(floor_div(x, 2), {-7}), -4);
  EXPECT_EQ(eval(mod(x, 3), {-7}), 2);
  EXPECT_EQ(eval(x * 256 + y, {2, 5}), 517);
  EXPECT_EQ(eval(min(x, y) + max(x, y) * 10, {3, 8}), 83);
  EXPECT_EQ(eval(floor_div(x * 3 + y, 4) + mod(x - y, 5), {7, 2}), 5 + 0);
}

TEST(IndexExprEval, SymbolsAndMissingValues) {
  Expr s = Expr::symbol("s0");
  EXPECT_EQ(eval(x * s + y, {2, 1}, {{"s0", 10}}), 21);
  EXPECT_THROW(eval(x * s, {2}), InternalError);
  EXPECT_THROW(eval(x + y, {2}), InternalError);
  EXPECT_THROW(eval(x * x, {kMax}), InternalError);
}

TEST(IndexExprSubstitute, ViewsCompose) {
  // A transpose of a [4, 8] contiguous tensor, then viewed as [32]: the flat index w
  // splits into (w // 4, w % 4), which the transposed map sends to (w % 4)*8 + w // 4.
  Expr transposed = y * 8 + x;  // element (x, y) of the [8, 4] transpose
  Expr flat = substitute(transposed, [](VarId v) -> std::optional<Expr> {
    if (v == kX) return floor_div(z, 4);
    if (v == kY) return mod(z, 4);
    return std::nullopt;
  });
  EXPECT_EQ(flat, mod(z, 4) * 8 + floor_div(z, 4));
  EXPECT_EQ(str(flat), "x2 // 4 + (x2 % 4)*8");
  EXPECT_EQ(substitute(floor_div(x, 2) + y, [](VarId v) -> std::optional<Expr> {
              return v == kX ? std::optional<Expr>(y * 4 + 1) : std::nullopt;
            }),
            y * 3);
}

TEST(IndexExprSubstitute, VarsOf) {
  Expr e = floor_div(z, 3) + min(x, 2) * Expr::symbol("s0");
  EXPECT_EQ(vars_of(e), (std::vector<VarId>{kX, kZ}));
  EXPECT_TRUE(vars_of(Expr(4)).empty());
}

// ---------------------------------------------------------------------------------------
// Simplification: one test per rule, named after it.

TEST(SimplifyFloorDiv, MultiplesMoveOut) {
  // (x*c*k + rest) // c -> x*k + rest // c: part of construction, so any ranges do.
  EXPECT_EQ(simplify(floor_div(x * 128 + y * 3, 64), {}), x * 2 + floor_div(y * 3, 64));
}

TEST(SimplifyFloorDiv, SmallRestIsZero) {
  // rest // d -> 0 when 0 <= rest < d
  EXPECT_EQ(simplify(floor_div(y + 3, 64), {{kY, 61}}), Expr(0));
  EXPECT_EQ(simplify(floor_div(y + 3, 64), {{kY, 62}}), floor_div(y + 3, 64));
}

TEST(SimplifyFloorDiv, OneBucketIsConstant) {
  // rest // d -> k when k*d <= rest < k*d + d
  EXPECT_EQ(simplify(floor_div(y - 10, 32), {{kY, 8}}), Expr(-1));
  EXPECT_EQ(simplify(floor_div(max(y, 40), 32), {{kY, 60}}), Expr(1));
}

TEST(SimplifyFloorDiv, NestedFloorDivs) {
  // (x // a) // b -> x // (a*b)
  EXPECT_EQ(simplify(floor_div(floor_div(x, 4), 8), {}), floor_div(x, 32));
}

TEST(SimplifyFloorDiv, FlattenedRowRecovers) {
  // ((x*64 + y) // 64) -> x when 0 <= y < 64
  EXPECT_EQ(simplify(floor_div(x * 64 + y, 64), {{kY, 64}}), x);
  EXPECT_EQ(simplify(floor_div(x * 64 + y, 64), {{kY, 65}}), x + floor_div(y, 64));
}

TEST(SimplifyFloorDiv, FloorDivOfModSwaps) {
  // (x % (a*b)) // a -> (x // a) % b
  EXPECT_EQ(simplify(floor_div(mod(x, 24), 4), {}), mod(floor_div(x, 4), 6));
  EXPECT_EQ(simplify(floor_div(mod(x, 24), 5), {}), floor_div(mod(x, 24), 5));
}

TEST(SimplifyFloorDiv, SmallRemainderDrops) {
  // (A*g + B) // (g*k) -> A // k when 0 <= B < g
  EXPECT_EQ(simplify(floor_div(x * 8 + y, 16), {{kY, 8}}), floor_div(x, 2));
  EXPECT_EQ(simplify(floor_div(x * 8 + y, 16), {{kY, 9}}), floor_div(x * 8 + y, 16));
}

TEST(SimplifyMod, MultiplesDrop) {
  // (x*m*k + rest) % m -> rest % m: part of construction.
  EXPECT_EQ(simplify(mod(x * 64 + y, 64), {}), mod(y, 64));
}

TEST(SimplifyMod, SmallRestIsItself) {
  // rest % m -> rest when 0 <= rest < m
  EXPECT_EQ(simplify(mod(y, 64), {{kY, 64}}), y);
  EXPECT_EQ(simplify(mod(x * 8 + y, 64), {{kX, 8}, {kY, 8}}), x * 8 + y);
  EXPECT_EQ(simplify(mod(x * 8 + y, 64), {{kX, 8}, {kY, 9}}), mod(x * 8 + y, 64));
}

TEST(SimplifyMod, OneBucketShifts) {
  // rest % m -> rest - k*m when k*m <= rest < k*m + m
  EXPECT_EQ(simplify(mod(max(x, 5), 4), {{kX, 7}}), max(x, 5) - 4);
  EXPECT_EQ(simplify(mod(y - 3, 16), {{kY, 3}}), y + 13);
}

TEST(SimplifyMod, FloorDivBelowModulus) {
  // (x // a) % b -> x // a when x < a*b
  EXPECT_EQ(simplify(mod(floor_div(x, 4), 8), {{kX, 32}}), floor_div(x, 4));
  EXPECT_EQ(simplify(mod(floor_div(x, 4), 8), {{kX, 33}}), mod(floor_div(x, 4), 8));
}

TEST(SimplifyMod, ModOfFloorDivOfModReorders) {
  // (x % (a*b)) // a -> (x // a) % b keeps a remainder outermost
  EXPECT_EQ(simplify(floor_div(mod(x, 64), 8), {}), mod(floor_div(x, 8), 8));
}

TEST(SimplifyMod, NestedModWhenDivides) {
  // (x % a) % b -> x % b when b divides a, also under a coefficient: (x % 3)*4 % 12
  EXPECT_EQ(simplify(mod(mod(x, 12), 4), {}), mod(x, 4));
  EXPECT_EQ(simplify(mod(mod(x, 3) * 4 + y, 12), {}), mod(x * 4 + y, 12));
  EXPECT_EQ(simplify(mod(mod(x, 12), 5), {}), mod(mod(x, 12), 5));
}

TEST(SimplifyMod, CommonFactorOut) {
  // (x*c) % (c*k) -> (x % k)*c
  EXPECT_EQ(simplify(mod(x * 4, 12), {}), mod(x, 3) * 4);
}

TEST(SimplifyMod, SmallRemainderSplits) {
  // (A*g + B) % (g*k) -> (A % k)*g + B when 0 <= B < g
  EXPECT_EQ(simplify(mod(x * 8 + y, 16), {{kY, 8}}), mod(x, 2) * 8 + y);
}

TEST(SimplifySum, FloorDivModRecombine) {
  // (x // a)*a + x % a -> x, under any coefficient and beside other terms
  EXPECT_EQ(simplify(floor_div(x, 8) * 8 + mod(x, 8), {}), x);
  EXPECT_EQ(simplify(floor_div(x, 8) * 24 + mod(x, 8) * 3 + y, {}), x * 3 + y);
  EXPECT_EQ(simplify(floor_div(x + y, 8) * 8 + mod(x + y, 8), {}), x + y);
  EXPECT_EQ(simplify(floor_div(x, 8) * 8 + mod(x, 4), {}), floor_div(x, 8) * 8 + mod(x, 4));
}

TEST(SimplifySum, DigitsRecombineAcrossLevels) {
  // z // 12 pairs with (z // 4) % 3: the three digits of z in base (2, 3, 4) recombine.
  Expr digits = floor_div(z, 12) * 12 + mod(floor_div(z, 4), 3) * 4 + mod(z, 4);
  EXPECT_EQ(simplify(digits, {}), z);
}

TEST(SimplifySum, ModsCombine) {
  // ((x // a) % b)*a + x % a -> x % (a*b)
  EXPECT_EQ(simplify(mod(floor_div(x, 4), 3) * 4 + mod(x, 4), {}), mod(x, 12));
  EXPECT_EQ(simplify(mod(floor_div(x, 4), 3) * 8 + mod(x, 4) * 2 + y, {}), mod(x, 12) * 2 + y);
}

TEST(SimplifySum, QuotientUnfoldsWhenATermCancels) {
  // (((A % k)*g + B) // d)*c + rest -> ((A*g + B) // d)*c - (A // k)*(c*k*g/d) + rest
  // (x // 10)*120 + (((x % 10)*12 + y) // 15)*15: the remainder inside comes back out
  // and cancels the first term.
  Expr e = floor_div(x, 10) * 120 + floor_div(mod(x, 10) * 12 + y, 15) * 15;
  EXPECT_EQ(simplify(e, {}), floor_div(x * 12 + y, 15) * 15);
  // Nothing to cancel: it stays.
  Expr alone = floor_div(mod(x, 10) * 12 + y, 15);
  EXPECT_EQ(simplify(alone, {}), alone);
}

TEST(SimplifyMod, QuotientUnfoldsUnderAModulus) {
  // ((((A % k)*g + B) // d)*c) % m -> (((A*g + B) // d)*c) % m when m divides c*k*g/d:
  // ((((x % 30)*2 + y) // 3) % 5) drops its inner remainder, 60/3 being a multiple of 5.
  EXPECT_EQ(simplify(mod(floor_div(mod(x, 30) * 2 + y, 3), 5), {}),
            mod(floor_div(x * 2 + y, 3), 5));
  EXPECT_EQ(simplify(mod(floor_div(mod(x, 30) * 2 + y, 3), 7), {}),
            mod(floor_div(mod(x, 30) * 2 + y, 3), 7));
}

TEST(SimplifySum, ReshapeRecombines) {
  // A contiguous [2, 3, 4] tensor viewed as [2, 12]: element (x, y) reads
  // x*12 + (y // 4)*4 + y % 4, which is x*12 + y.
  Expr index = x * 12 + floor_div(y, 4) * 4 + mod(y, 4);
  EXPECT_EQ(simplify(index, {{kX, 2}, {kY, 12}}), x * 12 + y);
}

TEST(SimplifyMin, LeftWhenProvenSmaller) {
  // min(a, b) -> a when a <= b
  EXPECT_EQ(simplify(min(x, 7), {{kX, 8}}), x);
  EXPECT_EQ(simplify(min(x + y, x + 5), {{kY, 6}}), x + y);  // shared terms cancel
}

TEST(SimplifyMin, RightWhenProvenSmaller) {
  EXPECT_EQ(simplify(min(x + 8, 7), {{kX, 3}}), Expr(7));
}

TEST(SimplifyMin, UnprovenStays) {
  EXPECT_EQ(simplify(min(x, 7), {{kX, 9}}), min(x, 7));
  EXPECT_EQ(simplify(min(x, 7), {}), min(x, 7));
}

TEST(SimplifyMax, LeftWhenProvenLarger) {
  // max(a, b) -> a when a >= b
  EXPECT_EQ(simplify(max(x + 8, 7), {{kX, 3}}), x + 8);
}

TEST(SimplifyMax, RightWhenProvenLarger) {
  EXPECT_EQ(simplify(max(x, 7), {{kX, 8}}), Expr(7));
  EXPECT_EQ(simplify(max(x, 7), {{kX, 9}}), max(x, 7));
}

TEST(SimplifyVar, UnitRangeIsZero) {
  // v -> 0 when 0 <= v < 1: a loop of one iteration
  EXPECT_EQ(simplify(x * 64 + y, {{kX, 1}, {kY, 64}}), y);
  EXPECT_EQ(simplify(floor_div(y, 4) + x, {{kY, 64}}), floor_div(y, 4) + x);
}

TEST(SimplifyNested, OperandsSimplifyFirst) {
  // min(x % 8, 7) -> x % 8 needs only the bounds of the remainder.
  EXPECT_EQ(simplify(min(mod(x, 8), 7), {}), mod(x, 8));
  EXPECT_EQ(simplify(floor_div(mod(y, 64) + x * 64, 64), {{kY, 64}}), x);
}

// ---------------------------------------------------------------------------------------
// Access facts and loop merging.

TEST(AccessOf, Kinds) {
  Ranges r = {{kX, 4}, {kY, 64}, {kZ, 8}};
  Expr index = x * 64 + y;
  EXPECT_EQ(access_of(index, kY, r), (AccessFact{Access::Contiguous, 1}));
  EXPECT_EQ(access_of(index, kX, r), (AccessFact{Access::Affine, 64}));
  EXPECT_EQ(access_of(index, kZ, r), (AccessFact{Access::Broadcast, 0}));
  EXPECT_EQ(access_of(index * -1 + 255, kY, r), (AccessFact{Access::Affine, -1}));
  EXPECT_EQ(access_of(floor_div(y, 4), kY, r).kind, Access::Irregular);
  EXPECT_EQ(access_of(x * y, kX, r).kind, Access::Irregular);
  EXPECT_EQ(access_of(min(y, 7) + y, kY, r).kind, Access::Irregular);
}

TEST(AccessOf, SimplifiesFirst) {
  Ranges r = {{kX, 4}, {kY, 64}};
  // y // 64 is 0 in range: x is affine and y does not occur.
  EXPECT_EQ(access_of(floor_div(x * 64 + y, 64), kX, r), (AccessFact{Access::Contiguous, 1}));
  EXPECT_EQ(access_of(floor_div(x * 64 + y, 64), kY, r), (AccessFact{Access::Broadcast, 0}));
}

TEST(StrideOf, ConstantsAndSizes) {
  Ranges r = {{kX, 4}, {kY, 64}, {kZ, 8}};
  Expr s0 = Expr::symbol("s0"), s1 = Expr::symbol("s1");
  EXPECT_EQ(stride_of(x * 64 + y, kX, r), std::optional<Expr>(64));
  EXPECT_EQ(stride_of(x * 64 + y, kY, r), std::optional<Expr>(1));
  EXPECT_EQ(stride_of(x * 64 + y, kZ, r), std::optional<Expr>(0));
  // A stride of sizes, which access_of calls irregular: a transposed read of symbolic rows.
  EXPECT_EQ(stride_of(y * s0 + x, kY, r), std::optional<Expr>(s0));
  EXPECT_EQ(stride_of(y * s0 * s1 * 2 + x, kY, r), std::optional<Expr>(s0 * s1 * 2));
  EXPECT_EQ(access_of(y * s0 + x, kY, r).kind, Access::Irregular);
  EXPECT_EQ(stride_of(x * y, kX, r), std::nullopt);
  EXPECT_EQ(stride_of(floor_div(y, 4) * s0, kY, r), std::nullopt);
}

TEST(CanMerge, StridesThatChain) {
  Ranges r = {{kX, 4}, {kY, 64}};
  EXPECT_TRUE(can_merge(x * 64 + y, kX, 4, kY, 64, r));            // contiguous
  EXPECT_TRUE(can_merge(x * 128 + y * 2, kX, 4, kY, 64, r));       // strided by 2
  EXPECT_TRUE(can_merge(z, kX, 4, kY, 64, r));                     // both broadcast
  EXPECT_FALSE(can_merge(x + y * 4, kX, 4, kY, 64, r));            // transposed
  EXPECT_FALSE(can_merge(y, kX, 4, kY, 64, r));                    // outer broadcast only
  EXPECT_FALSE(can_merge(x * 64 + floor_div(y, 2), kX, 4, kY, 64, r));
  EXPECT_TRUE(can_merge(x * 5 + y * 7, kX, 4, kY, 1, {{kX, 4}, {kY, 1}}));  // inner size 1
}

TEST(MergeVars, RewritesToOneVariable) {
  VarId m{3};
  // outer*s*n + inner*s -> merged*s
  EXPECT_EQ(merge_vars(x * 128 + y * 2 + z, kX, kY, 64, m), Expr(m) * 2 + z);
  // A broadcast index stays broadcast.
  EXPECT_EQ(merge_vars(z * 3, kX, kY, 64, m), z * 3);
  // A size-1 outer loop folds away given the merged range.
  EXPECT_EQ(merge_vars(x * 5 + y * 7, kX, kY, 8, m, {{m, 8}}), Expr(m) * 7);
}

// ---------------------------------------------------------------------------------------
// Randomized: small expressions over small ranges, checked point by point against a
// reference evaluator written independently of Expr.

using Point = std::vector<int64_t>;

int64_t ref_floordiv(int64_t a, int64_t d) { return (a - ((a % d) + d) % d) / d; }
int64_t ref_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

/// An Expr and how to compute its value without it.
struct Sample {
  Expr expr;
  std::function<int64_t(const Point &)> value;
};

class RandomExprs {
 public:
  explicit RandomExprs(unsigned seed) : rng_(seed) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  Ranges ranges(int vars, std::vector<int64_t> &sizes) {
    Ranges r;
    sizes.clear();
    for (int i = 0; i < vars; ++i) {
      sizes.push_back(uniform(1, 6));
      r.set(VarId{i}, sizes.back());
    }
    return r;
  }

  Sample sample(int depth) {
    if (depth == 0 || uniform(0, 5) == 0) return leaf();
    // One draw at a time: the order of arguments' evaluation is unspecified.
    auto op = static_cast<Op>(uniform(0, static_cast<int64_t>(Op::Flatten)));
    Sample a = sample(depth - 1);
    switch (op) {
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::Min:
      case Op::Max: return binary(op, a, sample(depth - 1));
      case Op::Scale: return scaled(a, uniform(-8, 8));
      case Op::Div: return divided(a, uniform(1, 9));
      case Op::Mod: return remainder(a, uniform(1, 9));
      case Op::Flatten: return flattened(a);
    }
    return a;
  }

 private:
  enum class Op { Add, Sub, Mul, Min, Max, Scale, Div, Mod, Flatten };

  Sample leaf() {
    if (uniform(0, 2) == 0) {
      int64_t c = uniform(-6, 12);
      return {Expr(c), [c](const Point &) { return c; }};
    }
    int v = static_cast<int>(uniform(0, 2));
    return {Expr(VarId{v}), [v](const Point &p) { return p[v]; }};
  }

  static int64_t apply(Op op, int64_t a, int64_t b) {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Sub: return a - b;
      case Op::Mul: return a * b;
      case Op::Min: return std::min(a, b);
      case Op::Max: return std::max(a, b);
      case Op::Scale:
      case Op::Div:
      case Op::Mod:
      case Op::Flatten: break;
    }
    ADD_FAILURE() << "not a binary op";
    return 0;
  }

  static Expr build(Op op, const Expr &a, const Expr &b) {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Sub: return a - b;
      case Op::Mul: return a * b;
      case Op::Min: return min(a, b);
      case Op::Max: return max(a, b);
      case Op::Scale:
      case Op::Div:
      case Op::Mod:
      case Op::Flatten: break;
    }
    ADD_FAILURE() << "not a binary op";
    return 0;
  }

  static Sample binary(Op op, const Sample &a, const Sample &b) {
    return {build(op, a.expr, b.expr),
            [op, a, b](const Point &p) { return apply(op, a.value(p), b.value(p)); }};
  }

  static Sample scaled(const Sample &a, int64_t k) {
    return {a.expr * k, [a, k](const Point &p) { return a.value(p) * k; }};
  }

  static Sample divided(const Sample &a, int64_t d) {
    return {floor_div(a.expr, d), [a, d](const Point &p) { return ref_floordiv(a.value(p), d); }};
  }

  static Sample remainder(const Sample &a, int64_t m) {
    return {mod(a.expr, m), [a, m](const Point &p) { return ref_mod(a.value(p), m); }};
  }

  /// What views produce: a value split into digits and put back with strides.
  Sample flattened(const Sample &a) {
    int64_t inner = uniform(1, 6);
    int64_t stride = uniform(1, 4);
    if (uniform(0, 1)) stride *= inner;  // often the stride that recombines
    Expr e = floor_div(a.expr, inner) * stride + mod(a.expr, inner);
    return {e, [a, inner, stride](const Point &p) {
              int64_t v = a.value(p);
              return ref_floordiv(v, inner) * stride + ref_mod(v, inner);
            }};
  }

  std::mt19937 rng_;
};

/// Every point of the iteration space of `sizes`.
std::vector<Point> all_points(const std::vector<int64_t> &sizes) {
  std::vector<Point> points = {{}};
  for (int64_t size : sizes) {
    std::vector<Point> next;
    for (const Point &p : points) {
      for (int64_t i = 0; i < size; ++i) {
        next.push_back(p);
        next.back().push_back(i);
      }
    }
    points = std::move(next);
  }
  return points;
}

TEST(RandomIndexExpr, SimplifyKeepsEveryValue) {
  RandomExprs gen(20240601);
  int rewritten = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<int64_t> sizes;
    Ranges r = gen.ranges(3, sizes);
    Sample s = gen.sample(4);
    Expr simple = simplify(s.expr, r);
    Interval b = bounds(s.expr, r), sb = bounds(simple, r);
    if (!(simple == s.expr)) ++rewritten;
    for (const Point &p : all_points(sizes)) {
      int64_t want = s.value(p);
      ASSERT_EQ(eval(s.expr, p), want) << "built " << s.expr;
      ASSERT_EQ(eval(simple, p), want) << s.expr << " simplified to " << simple;
      ASSERT_TRUE(b.contains(want)) << s.expr << " outside " << b;
      ASSERT_TRUE(sb.contains(want)) << simple << " outside " << sb;
    }
    ASSERT_EQ(simplify(simple, r), simple) << "no fixpoint for " << s.expr;
  }
  EXPECT_GT(rewritten, 300);  // the rules do fire on these samples
}

TEST(RandomIndexExpr, TextAndHashFollowEquality) {
  RandomExprs gen(7);
  std::unordered_map<std::string, Expr> by_text;
  for (int trial = 0; trial < 3000; ++trial) {
    Expr e = gen.sample(3).expr;
    Expr same = e * 2 - e;  // rebuilt through other nodes
    ASSERT_EQ(same, e);
    ASSERT_EQ(same.hash(), e.hash());
    ASSERT_EQ(str(same), str(e));
    auto [it, fresh] = by_text.emplace(str(e), e);
    if (!fresh) {
      ASSERT_EQ(it->second, e) << "two exprs print as " << str(e);
    }
  }
}

TEST(RandomIndexExpr, SubstituteMatchesComposition) {
  RandomExprs gen(99);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<int64_t> sizes;
    gen.ranges(3, sizes);
    Sample e = gen.sample(3), fx = gen.sample(2), fy = gen.sample(2);
    Expr composed = substitute(e.expr, [&](VarId v) -> std::optional<Expr> {
      if (v == kX) return fx.expr;
      if (v == kY) return fy.expr;
      return std::nullopt;
    });
    for (const Point &p : all_points(sizes)) {
      Point inner = {fx.value(p), fy.value(p), p[2]};
      ASSERT_EQ(eval(composed, p), e.value(inner)) << e.expr << " composed: " << composed;
    }
  }
}

std::string shape_str(const std::vector<int64_t> &shape) {
  std::string out;
  for (int64_t s : shape) out += (out.empty() ? "" : "x") + std::to_string(s);
  return out;
}

TEST(RandomIndexExpr, ReshapesOfContiguousTensorsStayAffine) {
  // A contiguous tensor viewed as another shape of the same numel: the index through
  // the view's digits must simplify back to the view's own contiguous index, also
  // through a chain of two views.
  RandomExprs gen(5);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<int64_t> factors;
    for (int i = 0; i < 6; ++i) factors.push_back(gen.uniform(1, 5));
    // Groups consecutive factors into dims, cutting between them at random.
    auto group = [&](const std::vector<int64_t> &fs) {
      std::vector<int64_t> shape = {fs[0]};
      for (size_t i = 1; i < fs.size(); ++i) {
        if (gen.uniform(0, 1)) shape.push_back(1);
        shape.back() *= fs[i];
      }
      return shape;
    };
    std::vector<int64_t> source = group(factors);
    std::shuffle(factors.begin(), factors.end(), std::mt19937(trial));
    std::vector<int64_t> view = group(factors);
    Ranges r;
    Expr flat = 0;
    for (size_t d = 0; d < view.size(); ++d) {
      r.set(VarId{static_cast<int>(d)}, view[d]);
      flat = flat * view[d] + Expr(VarId{static_cast<int>(d)});
    }
    // The source coordinates are the digits of `flat` in base `source`.
    Expr index = 0;
    int64_t stride = 1;
    for (size_t d = source.size(); d-- > 0;) {
      index = index + mod(floor_div(flat, stride), source[d]) * stride;
      stride *= source[d];
    }
    EXPECT_EQ(simplify(index, r), simplify(flat, r))
        << "source " << shape_str(source) << ", view " << shape_str(view) << ": " << index;
    // A view of a view: the source is itself a view of `base`, composed unsimplified.
    std::shuffle(factors.begin(), factors.end(), std::mt19937(trial + 1));
    std::vector<int64_t> base = group(factors);
    Expr chained = 0;
    stride = 1;
    for (size_t d = base.size(); d-- > 0;) {
      chained = chained + mod(floor_div(index, stride), base[d]) * stride;
      stride *= base[d];
    }
    EXPECT_EQ(simplify(chained, r), simplify(flat, r))
        << "base " << shape_str(base) << ", source " << shape_str(source) << ", view "
        << shape_str(view) << ": " << simplify(chained, r);
  }
}

TEST(RandomIndexExpr, MergedLoopsReadTheSameElements) {
  RandomExprs gen(11);
  int merged_count = 0;
  for (int trial = 0; trial < 500; ++trial) {
    int64_t no = gen.uniform(1, 5), ni = gen.uniform(1, 5);
    int64_t si = gen.uniform(-3, 3);
    int64_t so = gen.uniform(0, 1) ? si * ni : gen.uniform(-9, 9);
    Expr index = x * so + y * si + z * gen.uniform(0, 3) + gen.uniform(0, 5);
    Ranges r = {{kX, no}, {kY, ni}, {kZ, 3}};
    if (!can_merge(index, kX, no, kY, ni, r)) continue;
    ++merged_count;
    VarId m{3};
    Expr merged = merge_vars(index, kX, kY, ni, m, {{m, no * ni}, {kZ, 3}});
    EXPECT_NE(access_of(merged, m, {{m, no * ni}}).kind, Access::Irregular) << merged;
    for (int64_t i = 0; i < no; ++i)
      for (int64_t j = 0; j < ni; ++j)
        for (int64_t k = 0; k < 3; ++k)
          ASSERT_EQ(eval(merged, {0, 0, k, i * ni + j}), eval(index, {i, j, k, 0})) << index;
  }
  EXPECT_GT(merged_count, 100);
}

TEST(RandomIndexExpr, AccessStridesAreSteps) {
  RandomExprs gen(3);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<int64_t> sizes;
    Ranges r = gen.ranges(3, sizes);
    Expr e = gen.sample(3).expr;
    for (int v = 0; v < 3; ++v) {
      AccessFact f = access_of(e, VarId{v}, r);
      if (f.kind == Access::Irregular) continue;
      for (const Point &p : all_points(sizes)) {
        if (p[v] + 1 >= sizes[v]) continue;
        Point next = p;
        ++next[v];
        ASSERT_EQ(eval(e, next) - eval(e, p), f.stride) << e << " in x" << v;
      }
    }
  }
}

// Products of window bounds clipped by min and max, as pooling divisors are written, keep
// their value through simplification.
TEST(IndexExprSimplify, ProductsOfClippedWindowBoundsKeepTheirValue) {
  // avg pool backward, ceil mode, kernel 2, stride 2, no padding, size 9, not counting padding.
  auto count_of = [](const Expr &p, const Expr &r) {
    Expr o = floor_div(p, 2) - r;
    Expr start = max(o * 2, Expr(0));
    Expr end = min(min(o * 2 + 2, Expr(9)), Expr(9));
    return end - start;
  };
  Expr count = Expr(1) * count_of(x, Expr(0));
  count = count * count_of(y, Expr(0));
  for (int64_t px = 0; px < 9; ++px)
    for (int64_t py = 0; py < 9; ++py) {
      auto along = [](int64_t p) {
        int64_t o = p / 2, s = std::max<int64_t>(o * 2, 0), e = std::min<int64_t>(o * 2 + 2, 9);
        return e - s;
      };
      ASSERT_EQ(eval(count, {px, py}), along(px) * along(py)) << px << " " << py << ": " << str(count);
      ASSERT_EQ(eval(simplify(count, Ranges{{kX, 9}, {kY, 9}}), {px, py}), along(px) * along(py))
          << px << " " << py << ": " << str(simplify(count, Ranges{{kX, 9}, {kY, 9}}));
    }
}

// ---------------------------------------------------------------------------------------
// Division by a size of symbols (SizeDiv, SizeMod).

TEST(IndexExprSizeDivision, TakesOutWhatTheSizeDivides) {
  Expr s1 = Expr::symbol("s1");
  EXPECT_EQ(floor_div(x * s1 + y, s1), x + floor_div(y, s1));
  EXPECT_EQ(mod(x * s1 + y, s1), mod(y, s1));
  EXPECT_EQ(str(floor_div(y + 1, s1 * 2)), "((x1 + 1) // 2) // s1") << "printed as Python reads it";
  EXPECT_EQ(floor_div(x * s1 * 4, s1 * 2), x * 2);
  // A number divides first: x // (s1*64) is (x // 64) // s1; x % (s1*64) keeps its digits.
  EXPECT_EQ(floor_div(x, s1 * 64), floor_div(floor_div(x, 64), s1));
  EXPECT_EQ(mod(x, s1 * 64), mod(floor_div(x, 64), s1) * 64 + mod(x, 64));
  // -1 // d and -1 % d for any size d >= 1: the last index of a space of d elements.
  EXPECT_EQ(floor_div(x * s1 - 1, s1), x - 1);
  EXPECT_EQ(mod(x * s1 - 1, s1), s1 - 1);
  // A number divisor is the number's division.
  EXPECT_EQ(floor_div(x, Expr(4)), floor_div(x, 4));
}

TEST(IndexExprSizeDivision, EvaluatesBoundsAndSpecializes) {
  Expr s1 = Expr::symbol("s1");
  Expr q = floor_div(x + y * 3, s1), r = mod(x - 7, s1);
  for (int64_t xv : {0, 5, 13})
    for (int64_t s : {1, 4, 6}) {
      EXPECT_EQ(eval(q, {xv, 2}, {{"s1", s}}), coil::floor_div(xv + 6, s));
      EXPECT_EQ(eval(r, {xv}, {{"s1", s}}), coil::floor_mod(xv - 7, s));
      EXPECT_EQ(substitute_symbols(q, {{"s1", s}}), floor_div(x + y * 3, s)) << "back to a number's division";
    }
  Ranges ranges{{kX, 10}, {kY, 4}};
  ranges.set_symbol("s1", 2, 8);
  EXPECT_EQ(bounds(q, ranges), (Interval{0, 9}));  // (9 + 9) // 2
  EXPECT_EQ(bounds(mod(x, s1), ranges), (Interval{0, 7}));
  std::set<std::string> symbols;
  collect_symbols(q, symbols);
  EXPECT_EQ(symbols, std::set<std::string>{"s1"});
}

// Over loops of symbolic sizes: x over [s0*s1] read as (x // s1, x % s1) and put back.
TEST(IndexExprSizeDivision, SimplifiesOverLoopsOfSizes) {
  Expr s0 = Expr::symbol("s0"), s1 = Expr::symbol("s1");
  Ranges ranges;
  ranges.set_symbol_floor(2);
  ranges.set(kX, s0 * s1);
  ranges.set(kY, s1);
  EXPECT_EQ(simplify(floor_div(y, s1), ranges), Expr(0)) << "y < s1";
  EXPECT_EQ(simplify(mod(y, s1), ranges), y);
  EXPECT_EQ(simplify(mod(floor_div(x, s1), s0), ranges), floor_div(x, s1)) << "x // s1 < s0";
  EXPECT_EQ(simplify(floor_div(x, s1) * s1 * 64 + mod(x, s1) * 64 + z, ranges), x * 64 + z);
  EXPECT_EQ(simplify(floor_div(x, s1) * s1 + mod(y, s1), ranges), floor_div(x, s1) * s1 + y) << "not x's remainder";
  EXPECT_EQ(upper_bound(x * 64 + y, ranges), s0 * s1 * 64 + s1 - 65);
  EXPECT_FALSE(upper_bound(x * y, ranges));
}

}  // namespace
}  // namespace coil::ir
