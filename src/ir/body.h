// Loop bodies as data (DESIGN.md, decision 4): a small expression DAG per compute node,
// evaluated at one point of the node's iteration space.
//
//   %0 = load buf0[x0*256 + x1]        f32
//   %1 = const 2.0                     f32
//   %2 = mul %0, %1                    f32
//   %3 = const 0.0                     f32
//   %4 = maximum %2, %3                f32
//
// Values are numbered in definition order and every operand refers to an earlier value,
// so a body is already topologically sorted. Building a body through BodyBuilder merges
// identical values: nothing is loaded or computed twice (the code generators' `tmpN`).
// Bodies print deterministically, hash, compare, and are interpreted by the reference
// interpreter (src/ir/interpreter.h).
#pragma once

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/dtype.h"
#include "expr/index_expr.h"

namespace coil::ir {

/// Index of a Buffer in its Program.
using BufferId = int;

enum class Op : uint8_t {
  // Leaves.
  Load,      // buffer[index]; with a mask operand, `fill` where the mask is false
  Constant,  // a number of the value's dtype
  Index,     // an index expression as a value (arange, iota, triu's comparison)
  // Unary.
  Cast, Neg, Abs, Exp, Exp2, Expm1, Log, Log1p, Log2, Sqrt, Rsqrt, Reciprocal, Sin, Cos, Tan,
  Tanh, Sigmoid, Erf, Floor, Ceil, Round, Trunc, Sign, LogicalNot, BitwiseNot, IsNan, IsInf,
  Acos, Asin, Atan, Acosh, Asinh, Atanh, Cosh, Sinh, Log10,
  // Binary.
  Add, Sub, Mul, TrueDiv, FloorDiv, TruncDiv, Remainder, Fmod, Pow, Maximum, Minimum, Atan2,
  Copysign, Fmax, Fmin, Hypot,  // fmax/fmin: a NaN operand gives the other one
  Ldexp,  // a 2^b for a whole number b (of a's floating dtype), exactly, as C's ldexp
  // Series summed until they converge (coil/series.h): the regularized incomplete gamma
  // functions P(a, x) and Q(a, x) of operands (a, x), the Hurwitz zeta of (s, q).
  Igamma, Igammac, Zeta,
  // Orthogonal polynomials P_n(x), operands (x, n) of one floating dtype, n a whole number:
  // the recurrences of coil/polynomials.h, in its order.
  ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP,
  // Random numbers: operands (seed, counter), both i64; Philox4x32-10 of the counter under
  // the seed (coil/philox.h). Rand: uniform in [0, 1); Randn: standard normal (f32 or f64);
  // RandBits: a uniform i64 in [0, 2^63).
  Rand, Randn, RandBits,
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor, BitwiseAnd, BitwiseOr, BitwiseXor,
  // Ternary.
  Where,
};

/// `load`, `add`, `maximum`: the op's name in printed bodies.
std::string_view op_name(Op op);
/// The number of value operands an op takes (Load's optional mask not counted).
int op_arity(Op op);
/// LogicalAnd, LogicalOr, LogicalXor: each operand is tested for truth (x != 0) by its own
/// dtype, whatever the other's (logical_or of an f32 and an i64).
bool is_logical(Op op);
/// Rand, Randn, RandBits: a value drawn from the generator, a pure function of its operands.
bool is_random(Op op);
/// ChebyshevT .. LegendreP: an orthogonal polynomial, `polynomial_family` its row in
/// coil/polynomials.h's table.
bool is_polynomial(Op op);
int polynomial_family(Op op);

/// Loads whose index depends on loaded values (gather, embedding, indexing) name those
/// values through index variables of their own: in the index of such a load,
/// VarId{kIndirectBase + k} stands for the integer value `indirect[k]` of the body.
inline constexpr int kIndirectBase = 1000;
inline VarId indirect_var(int k) { return VarId{kIndirectBase + k}; }

/// One value of a body. Fields beyond `op`, `dtype` and `args` belong to one op each.
struct Instr {
  Op op = Op::Constant;
  DType dtype = DType::F32;
  std::array<int, 3> args = {-1, -1, -1};  // operand values; Load: args[0] is the mask or -1
  BufferId buffer = -1;                    // Load
  Expr index;                              // Load: element offset into the buffer; Index: the value
  double value = 0;                        // Constant, and Load's fill under a false mask
  std::vector<int> indirect;               // Load: the values its index reads (see above)

  friend bool operator==(const Instr &, const Instr &) = default;
  size_t hash() const;
};

struct Body {
  std::vector<Instr> instrs;
  std::vector<int> results;  // the values a node stores or reduces

  const Instr &at(int v) const { return instrs.at(size_t(v)); }
  friend bool operator==(const Body &, const Body &) = default;
  size_t hash() const;
};

/// Builds a Body, merging identical values and folding casts to the same dtype.
class BodyBuilder {
 public:
  int load(BufferId buffer, const Expr &index, DType dtype);
  /// A load that reads `fill` wherever `mask` (a bool value) is false: padding, cat,
  /// out-of-range slices.
  int masked_load(BufferId buffer, const Expr &index, DType dtype, int mask, double fill);
  /// A load at an index that uses indirect_var(k) for value `indirect[k]` (integers).
  int indirect_load(BufferId buffer, const Expr &index, DType dtype, std::vector<int> indirect);
  int constant(double value, DType dtype);
  int index(const Expr &e, DType dtype);
  int cast(int v, DType dtype);
  int unary(Op op, int v, DType dtype);
  int binary(Op op, int a, int b, DType dtype);
  int where(int cond, int a, int b, DType dtype);

  DType dtype(int v) const { return body_.at(v).dtype; }
  void add_result(int v) { body_.results.push_back(v); }
  Body finish() { return std::move(body_); }
  const Body &body() const { return body_; }

 private:
  int add(Instr instr);
  Body body_;
  std::unordered_map<size_t, std::vector<int>> by_hash_;
};

/// `%3 = maximum %2, %1  f32`, one line per value, then `-> %4`.
std::string str(const Body &body, const std::function<std::string(BufferId)> &buffer_name,
                const std::function<std::string(VarId)> &var_name);

/// `body` without the values no result depends on, renumbered in order.
Body prune_dead_values(const Body &body);

/// What replaces a load when a body is copied: given the load's value number in the
/// source body and the load as it would be copied (index reindexed, mask mapped), a value
/// already in the destination, or nothing to copy the load as it is.
using InlineLoadFn = std::function<std::optional<int>(int value, const Instr &load)>;

/// What an integer division's divisor becomes when a body is copied (may be empty): a value
/// in the destination, given the copied divisor.
using DivisorFn = std::function<int(int divisor)>;

/// Copies `body`'s values into `out`, rewriting every load and index expression through
/// `reindex`, offering each load (direct or indirect) to `inline_load` and the divisor of
/// each integer division (floordiv, truncdiv, remainder, fmod) to `guard_divisor` (either may
/// be empty). Returns the map from `body`'s values to `out`'s.
std::vector<int> copy_body(const Body &body, BodyBuilder &out, const std::function<Expr(const Expr &)> &reindex,
                           const InlineLoadFn &inline_load = {}, const DivisorFn &guard_divisor = {});

}  // namespace coil::ir
