// Index expressions: coil's own small symbolic algebra over loop variables (DESIGN.md,
// decision 5). Lowering writes every load and store index as an Expr, views compose
// index maps with `substitute`, the code generators ask `access_of` how an index moves
// with each loop variable, and the reference interpreter calls `eval`. The graph's
// symbolic sizes are Exprs of symbols too (graph/sym_int.h): so the algebra sits below the
// graph, in a folder of its own, and keeps the namespace of the loop IR it was made for.
//
// An Expr is always in canonical form: a sum of terms (coefficient x product of atoms)
// plus a constant. Atoms are variables, symbols (named sizes) and the operators
// FloorDiv, Mod, Min, Max. Terms are sorted, equal terms merged, zero terms dropped and
// constants folded as the Expr is built, so `==` is structural and two ways of writing
// one polynomial compare equal. `simplify` adds the rewrites that need variable ranges.
// Tests: tests/unit/index_expr_test.cpp.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace coil::ir {

/// A loop variable. Printed as `x<id>` unless the printer is given names.
struct VarId {
  int id = 0;
  friend auto operator<=>(const VarId &, const VarId &) = default;
};

class Expr;
namespace detail {
struct ExprNode;
struct AtomNode;
struct Internals;  // index_expr.cpp's view of the nodes
}  // namespace detail

enum class AtomKind {
  Var,       ///< a loop variable, 0 <= v < its range
  Symbol,    ///< a named size: an unknown non-negative integer (dynamic shapes)
  FloorDiv,  ///< arg // divisor, Python's floor division, divisor > 0
  Mod,       ///< arg % divisor, Python's remainder: in [0, divisor)
  Min,       ///< min(arg, other)
  Max,       ///< max(arg, other)
  SizeDiv,   ///< arg // other, Python's floor division by a size of symbols (`x0 // s1`), other >= 1
  SizeMod,   ///< arg % other, Python's remainder by a size of symbols: in [0, other)
};

/// A factor of a term that is not a number. Immutable and shared: cheap to copy.
class Atom {
 public:
  AtomKind kind() const;
  VarId var() const;                  ///< Var only
  const std::string &symbol() const;  ///< Symbol only
  const Expr &arg() const;            ///< FloorDiv, Mod: the dividend; Min, Max: the first operand
  const Expr &other() const;          ///< Min, Max: the second operand; SizeDiv, SizeMod: the divisor
  int64_t divisor() const;            ///< FloorDiv, Mod: the divisor (modulus), > 1
  size_t hash() const;

  friend bool operator==(const Atom &a, const Atom &b);

 private:
  friend struct detail::Internals;
  explicit Atom(std::shared_ptr<const detail::AtomNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const detail::AtomNode> node_;
};

/// coeff * factors[0] * factors[1] * ...: factors sorted (repeated for powers), never
/// empty; coeff never 0.
struct Term {
  int64_t coeff = 1;
  std::vector<Atom> factors;

  friend bool operator==(const Term &, const Term &) = default;
};

/// An integer index expression in canonical form (see the top of this file).
/// Arithmetic that overflows int64 throws InternalError: an index that does not fit is
/// a bug upstream, never silently wrapped.
class Expr {
 public:
  Expr();                // 0
  Expr(int64_t value);   // NOLINT: constants read naturally in index arithmetic
  Expr(VarId var);       // NOLINT: so do loop variables
  explicit Expr(Atom atom);
  /// A named size such as `s0`: behaves like an unknown non-negative integer.
  static Expr symbol(std::string name);

  int64_t constant() const;
  const std::vector<Term> &terms() const;  ///< in canonical order
  std::optional<int64_t> as_constant() const;
  std::optional<VarId> as_var() const;
  /// The atom when this Expr is exactly one atom (coefficient 1, no constant).
  const Atom *as_atom() const;
  size_t hash() const;  ///< consistent with ==; stable across runs of one build

  friend bool operator==(const Expr &a, const Expr &b);

 private:
  friend struct detail::Internals;
  explicit Expr(std::shared_ptr<const detail::ExprNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const detail::ExprNode> node_;
};

Expr operator+(const Expr &a, const Expr &b);
Expr operator-(const Expr &a, const Expr &b);
Expr operator-(const Expr &a);
Expr operator*(const Expr &a, const Expr &b);
Expr operator*(const Expr &a, int64_t k);
Expr operator*(int64_t k, const Expr &a);
/// Python's `x // divisor`; asserts divisor > 0.
Expr floor_div(const Expr &x, int64_t divisor);
/// Python's `x % modulus`, in [0, modulus); asserts modulus > 0.
Expr mod(const Expr &x, int64_t modulus);
/// The same by a size that may be an Expr of symbols (`s1`, `s1*64`): a number divides
/// as above; a size of symbols takes out the terms it divides exactly
/// (`(x0*s1 + x1) // s1` is `x0 + x1 // s1`) and leaves the rest in a SizeDiv or SizeMod
/// atom. A size of symbols is at least 1.
Expr floor_div(const Expr &x, const Expr &divisor);
Expr mod(const Expr &x, const Expr &modulus);
Expr min(const Expr &a, const Expr &b);
Expr max(const Expr &a, const Expr &b);

/// The deterministic total order of canonical forms (never pointers or hashes): terms
/// of lower variables first, constants last. Negative, zero or positive like strcmp.
int compare(const Expr &a, const Expr &b);

/// Python-like text, e.g. `x0*256 + x1`, `(x0*3 + x1) // 64`, `min(x0, 7)`; one Expr
/// always prints the same text, and different Exprs different texts (unless a symbol is
/// named like a variable).
std::string str(const Expr &e);
/// The same with variables named by `name` (symbols keep their own names).
std::string str(const Expr &e, const std::function<std::string(VarId)> &name);
std::ostream &operator<<(std::ostream &os, const Expr &e);
std::ostream &operator<<(std::ostream &os, VarId v);

/// The known range of each loop variable: 0 <= v < size, the size a number or an Expr of
/// symbols (a loop over `s0*12`: v's bounds are then those of the size, minus one, over the
/// symbols' ranges). A variable it does not know may take any value.
class Ranges {
 public:
  Ranges() = default;
  Ranges(std::initializer_list<std::pair<VarId, int64_t>> sizes);

  void set(VarId v, int64_t size);  ///< asserts size >= 0
  void set(VarId v, const Expr &size);  ///< asserts a constant size >= 0
  /// The size of v's loop when it is a number.
  std::optional<int64_t> size_of(VarId v) const;
  /// The size of v's loop, symbolic or not.
  std::optional<Expr> extent_of(VarId v) const;
  /// A symbol's range, lo <= s <= hi (asserts 0 <= lo <= hi); a symbol without one is an
  /// integer of at least `symbol_floor` (0 unless set), without upper bound.
  void set_symbol(const std::string &name, int64_t lo, int64_t hi);
  void set_symbol_floor(int64_t lo);  ///< asserts lo >= 0
  std::pair<int64_t, int64_t> symbol_range(const std::string &name) const;

 private:
  std::map<VarId, Expr> sizes_;
  std::map<std::string, std::pair<int64_t, int64_t>> symbols_;
  int64_t symbol_floor_ = 0;
};

/// Inclusive bounds lo <= e <= hi. The extreme int64 values stand for no bound, so
/// comparisons such as `lo >= 0` or `hi < d` stay conservative without special cases.
struct Interval {
  static constexpr int64_t kNoLower = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kNoUpper = std::numeric_limits<int64_t>::max();

  int64_t lo = kNoLower;
  int64_t hi = kNoUpper;

  static Interval unbounded() { return {}; }
  static Interval point(int64_t v);
  bool bounded() const { return lo != kNoLower && hi != kNoUpper; }
  bool contains(int64_t v) const { return lo <= v && v <= hi; }

  friend bool operator==(const Interval &, const Interval &) = default;
};
std::ostream &operator<<(std::ostream &os, const Interval &i);

/// Bounds of `e` over every point of `ranges`, by interval arithmetic (FloorDiv, Mod,
/// Min and Max exactly up to their operands' bounds). A bound that would overflow int64
/// is dropped, never wrapped. A loop of size 0 runs no iteration: its variable is given
/// [0, 0] since no fact about it can be false.
Interval bounds(const Expr &e, const Ranges &ranges);

/// An expression in sizes that `e` never exceeds over `ranges`: each variable at its last
/// value (`x0*s1 + x1` over [s0, s1] is at most s0*s1 - 1), a quotient at its dividend's
/// bound's, a remainder below its modulus; sizes alone are themselves. Where `bounds`
/// gives no number (loops over sizes of symbols), this still orders an index below a size.
/// Nothing for other forms (a product of two variables, a negative quotient).
std::optional<Expr> upper_bound(const Expr &e, const Ranges &ranges);

/** Rewrites `e` with the rules that need ranges (FloorDiv, Mod, Min, Max, and sums such
 * as `(x // a)*a + x % a -> x`, which recombine what views split) until nothing changes.
 * The result has the value of `e` at every point of `ranges`; a rewrite whose
 * coefficients would overflow int64 is not made. The rules, one comment each, are
 * grouped by operator in index_expr.cpp; each has a test named after it. */
Expr simplify(const Expr &e, const Ranges &ranges);

/// The value of `e` with variable v set to values[v.id]; asserts that `e` has no symbol.
int64_t eval(const Expr &e, const std::vector<int64_t> &values);
/// The same with the value of each symbol by name.
int64_t eval(const Expr &e, const std::vector<int64_t> &values,
             const std::map<std::string, int64_t> &symbols);

/// Replaces each variable v for which `replace(v)` has a value (views compose index
/// maps this way); the result is canonical but not simplified: call `simplify` on it.
Expr substitute(const Expr &e, const std::function<std::optional<Expr>(VarId)> &replace);

/// q with q * b == a exactly, when b is a single term (`s1*64`) that divides every term of `a`
/// (`s0*s1*128 + s1*64` by `s1*64` is `s0*2 + 1`) and a has no constant unless b is one;
/// otherwise nothing. Divides sizes by sizes (a view's inferred dim) without knowing them.
std::optional<Expr> exact_quotient(const Expr &a, const Expr &b);

/// Replaces each symbol that `values` names by its value (a compiled program specialized to
/// one call's sizes); the result is canonical but not simplified.
Expr substitute_symbols(const Expr &e, const std::map<std::string, int64_t> &values);

/// The distinct variables of `e`, nested ones included, in increasing order.
std::vector<VarId> vars_of(const Expr &e);
/// Adds the names of `e`'s symbols, nested ones included, to `out`.
void collect_symbols(const Expr &e, std::set<std::string> &out);

/// How an index moves when one loop variable steps by 1 (the others fixed).
enum class Access {
  Broadcast,   ///< it does not move: the variable does not occur (stride 0)
  Contiguous,  ///< it moves by 1
  Affine,      ///< it moves by a constant stride other than 1 (negative included)
  Irregular,   ///< the variable is inside FloorDiv, Mod, Min or Max, or multiplied by another
};

struct AccessFact {
  Access kind = Access::Broadcast;
  int64_t stride = 0;  ///< meaningful for Broadcast, Contiguous and Affine

  friend bool operator==(const AccessFact &, const AccessFact &) = default;
};

/// How `index`, simplified under `ranges`, moves with `v`.
AccessFact access_of(const Expr &index, VarId v, const Ranges &ranges);

/// The stride of `index` (simplified under `ranges`) along `v` as an expression: access_of's
/// constant, or a product of sizes where the index moves by one (`x1*s10` moves by `s10`,
/// which access_of calls irregular); none where it is irregular in `v` otherwise.
std::optional<Expr> stride_of(const Expr &index, VarId v, const Ranges &ranges);

/// Whether the loops `outer` (size outer_size) and `inner` (size inner_size, the faster
/// one) can become one loop of outer_size*inner_size without making `index` irregular:
/// the index is affine in both and stride(outer) == stride(inner)*inner_size (both
/// broadcast included). A dimension of size 1 never prevents it: that variable is 0.
bool can_merge(const Expr &index, VarId outer, int64_t outer_size, VarId inner,
               int64_t inner_size, const Ranges &ranges);

/// `index` over one loop `merged` in place of (outer, inner): substitutes
/// outer = merged // inner_size and inner = merged % inner_size, then simplifies under
/// `ranges`, so `outer*s*n + inner*s` becomes `merged*s`. Give `ranges` the size of
/// `merged` when outer's size may be 1, so that `merged // inner_size` folds to 0.
Expr merge_vars(const Expr &index, VarId outer, VarId inner, int64_t inner_size, VarId merged,
                const Ranges &ranges = {});

}  // namespace coil::ir

template <>
struct std::hash<coil::ir::Expr> {
  size_t operator()(const coil::ir::Expr &e) const { return e.hash(); }
};

template <>
struct std::hash<coil::ir::VarId> {
  size_t operator()(coil::ir::VarId v) const { return std::hash<int>()(v.id); }
};
