// Sizes and strides that may depend on a graph's symbolic sizes (dynamic shapes).
//
// A graph traced with dynamic shapes names some sizes by symbols (`f32[s0, 768][768, 1]`,
// frontend/size_expr.h). A SymInt is one size or stride of such a graph: an integer, the
// *hint* (its value at the sizes the graph is being compiled for), together with its
// expression in the symbols when it depends on them (an ir::Expr with Symbol atoms,
// `768*s0`). Arithmetic carries both, so meta functions and lowerings written for integers
// compute the expressions of what they derive as they compute the hints.
//
// Code that needs a plain integer says which one it needs:
//   - hint(): for a heuristic (a block size, a loop order, a tile): the compiled code is
//     right at every size, only tuned for this one;
//   - int64_t(s), or any implicit conversion: the compiled code is right at this value
//     only. A symbolic SymInt converted so records a guard `expr == hint` in its graph's
//     SizeGuards (below: every symbolic SymInt points to the guards of the graph its symbols
//     belong to), naming what specialized it; a compiled graph serves only sizes that pass
//     its guards (while the loop IR specializes every symbol, a call's inputs are checked
//     against the sizes compiled for). So the pipeline is correct wherever it was not yet
//     taught to keep expressions, and symbolic wherever it was.
// Comparisons of SymInts decide by the symbols' ranges when they can (`s0 == 1` is false for
// a symbol of at least 2), by structure when the expressions are equal, and otherwise by the
// hints, recording the outcome as a guard. Tests: tests/unit/sym_int_test.cpp.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "expr/index_expr.h"

namespace coil {

class SizeGuards;

class SymInt {
 public:
  SymInt() = default;
  SymInt(int64_t value) : hint_(value) {}  // NOLINT: sizes read naturally as integers
  SymInt(int value) : hint_(value) {}      // NOLINT
  SymInt(size_t value) : hint_(int64_t(value)) {}  // NOLINT
  /// `e` with its value `hint` at the sizes compiled for, its guards recorded in `guards`;
  /// a plain integer when `e` is a constant.
  static SymInt of(const ir::Expr &e, int64_t hint, std::shared_ptr<SizeGuards> guards);

  /// The value at the sizes being compiled for, for heuristics: no guard.
  int64_t hint() const { return hint_; }
  /// Whether it depends on a symbol.
  bool symbolic() const { return node_ != nullptr; }
  /// Its expression (a constant Expr for a plain integer).
  ir::Expr expr() const;
  /// Where its guards go; null for a plain integer.
  const std::shared_ptr<SizeGuards> &guards() const;
  /// Its value, valid only at that value: a symbolic one records the guard `expr == hint`.
  int64_t value() const;
  operator int64_t() const { return value(); }  // NOLINT: see the top of this file

  /// The same expression and hint (no guard): identical sizes, as types compare.
  bool same(const SymInt &o) const;

 private:
  struct Node;
  int64_t hint_ = 0;
  std::shared_ptr<const Node> node_;  // null: a plain integer
};

/// Sizes or strides as SymInts. It converts to and from plain integer vectors: from them
/// freely, to them as each SymInt converts (guarded, see the top of this file), so that code
/// not yet taught to keep expressions specializes where it uses a shape.
class SymShape : public std::vector<SymInt> {
 public:
  using std::vector<SymInt>::vector;
  SymShape() = default;
  SymShape(const std::vector<int64_t> &v) : std::vector<SymInt>(v.begin(), v.end()) {}  // NOLINT
  operator std::vector<int64_t>() const;  // NOLINT: guarded, as SymInt's conversion
};

/// Whether a <= b at every size the graph serves, by the symbols' ranges (no guard): false
/// where that is not known.
bool known_le(const SymInt &a, const SymInt &b);

/// Whether `s` is `v` at every size: a plain integer of that value (no guard).
inline bool known_eq(const SymInt &s, int64_t v) { return !s.symbolic() && s.hint() == v; }

/// `s` at one call's sizes (`values` names each of its symbols): a plain integer.
SymInt at_sizes(const SymInt &s, const std::map<std::string, int64_t> &values);
/// Each of `shape` so; with no values, its hints (the sizes compiled for).
std::vector<int64_t> at_sizes(const SymShape &shape, const std::map<std::string, int64_t> &values);
/// The same into `out`, which keeps its capacity (a call's checks allocate nothing).
void at_sizes(const SymShape &shape, const std::map<std::string, int64_t> &values, std::vector<int64_t> &out);

/// The SymInt of `e`, an expression of the symbols of `guards`, its hint at their values.
SymInt sym_of(const ir::Expr &e, const std::shared_ptr<SizeGuards> &guards);

SymInt operator+(const SymInt &a, const SymInt &b);
SymInt operator-(const SymInt &a, const SymInt &b);
SymInt operator-(const SymInt &a);
SymInt operator*(const SymInt &a, const SymInt &b);
/// Python's floor division and remainder. A symbolic divisor is specialized (guarded).
SymInt sym_floor_div(const SymInt &a, const SymInt &b);
SymInt sym_mod(const SymInt &a, const SymInt &b);
SymInt sym_min(const SymInt &a, const SymInt &b);
SymInt sym_max(const SymInt &a, const SymInt &b);

// Mixed with plain integers, so that `s + 1` is not ambiguous between SymInt's and the
// built-in operators.
#define COIL_SYM_MIXED(op)                                                                   \
  inline SymInt operator op(const SymInt &a, int64_t b) { return a op SymInt(b); }           \
  inline SymInt operator op(int64_t a, const SymInt &b) { return SymInt(a) op b; }           \
  inline SymInt operator op(const SymInt &a, int b) { return a op SymInt(int64_t(b)); }      \
  inline SymInt operator op(int a, const SymInt &b) { return SymInt(int64_t(a)) op b; }
COIL_SYM_MIXED(+)
COIL_SYM_MIXED(-)
COIL_SYM_MIXED(*)
#undef COIL_SYM_MIXED
/// Index expressions with sizes in them (`x0*s1 + x1`): no guard. Templates, so that only a
/// SymInt itself (not an integer converted to one) picks them.
template <std::same_as<SymInt> S> ir::Expr operator+(const ir::Expr &a, const S &b) { return a + b.expr(); }
template <std::same_as<SymInt> S> ir::Expr operator+(const S &a, const ir::Expr &b) { return a.expr() + b; }
template <std::same_as<SymInt> S> ir::Expr operator-(const ir::Expr &a, const S &b) { return a - b.expr(); }
template <std::same_as<SymInt> S> ir::Expr operator-(const S &a, const ir::Expr &b) { return a.expr() - b; }
template <std::same_as<SymInt> S> ir::Expr operator*(const ir::Expr &a, const S &b) { return a * b.expr(); }
template <std::same_as<SymInt> S> ir::Expr operator*(const S &a, const ir::Expr &b) { return a.expr() * b; }
SymInt &operator+=(SymInt &a, const SymInt &b);
SymInt &operator-=(SymInt &a, const SymInt &b);
SymInt &operator*=(SymInt &a, const SymInt &b);

/// Comparisons: decided by ranges or structure where they can be, else by the hints with a
/// guard recording the outcome.
bool operator==(const SymInt &a, const SymInt &b);
bool operator!=(const SymInt &a, const SymInt &b);
bool operator<(const SymInt &a, const SymInt &b);
bool operator<=(const SymInt &a, const SymInt &b);
bool operator>(const SymInt &a, const SymInt &b);
bool operator>=(const SymInt &a, const SymInt &b);
#define COIL_SYM_CMP(op)                                                                        \
  inline bool operator op(const SymInt &a, int64_t b) { return a op SymInt(b); }                \
  inline bool operator op(int64_t a, const SymInt &b) { return SymInt(a) op b; }                \
  inline bool operator op(const SymInt &a, int b) { return a op SymInt(int64_t(b)); }           \
  inline bool operator op(int a, const SymInt &b) { return SymInt(int64_t(a)) op b; }           \
  inline bool operator op(const SymInt &a, size_t b) { return a op SymInt(int64_t(b)); }        \
  inline bool operator op(size_t a, const SymInt &b) { return SymInt(int64_t(a)) op b; }
COIL_SYM_CMP(==)
COIL_SYM_CMP(!=)
COIL_SYM_CMP(<)
COIL_SYM_CMP(<=)
COIL_SYM_CMP(>)
COIL_SYM_CMP(>=)
#undef COIL_SYM_CMP

/// Shapes element by element as SymInts compare (guarded; `same` compares structure).
bool operator==(const SymShape &a, const SymShape &b);
inline bool operator!=(const SymShape &a, const SymShape &b) { return !(a == b); }
bool operator==(const SymShape &a, const std::vector<int64_t> &b);
inline bool operator==(const std::vector<int64_t> &a, const SymShape &b) { return b == a; }
inline bool operator!=(const SymShape &a, const std::vector<int64_t> &b) { return !(a == b); }
inline bool operator!=(const std::vector<int64_t> &a, const SymShape &b) { return !(b == a); }

/// `s0*768`, or the integer.
std::string str(const SymInt &s);
std::ostream &operator<<(std::ostream &os, const SymInt &s);

/// The hints of `shape`, for heuristics.
std::vector<int64_t> hints(const SymShape &shape);
/// The values of `shape`, each guarded (see SymInt::value).
std::vector<int64_t> values(const SymShape &shape);
/// Whether any size of `shape` is symbolic.
bool symbolic(const SymShape &shape);
/// Element-wise SymInt::same.
bool same(const SymShape &a, const SymShape &b);

/// A fact the compiled code relies on: `expr op 0` for the symbols' values.
struct SizeGuard {
  enum class Op : uint8_t { Eq, Ne, Lt, Le };
  ir::Expr expr;
  Op op = Op::Eq;
  std::string why;  // what relied on it: "lowering node mm (aten.mm.default)"

  /// Whether it holds at `values`.
  bool holds(const std::map<std::string, int64_t> &values) const;
  /// `s0 == 8`, `s0 - s1 < 0`.
  std::string str() const;
  /// str() and what relied on it: `s0 >= 2 (the range of s0 that the compiled code assumes)`.
  std::string explained() const;
};

/// How a compiled graph refuses a call's sizes (`given`: "s0 = 1") that fail `check`
/// (SizeGuard::explained): "the compiled graph does not serve the sizes s0 = 1: it needs ...".
std::string sizes_refused(std::string_view given, std::string_view check);

/// A range a graph states for one symbol, lo <= symbol <= hi, either side open.
struct SymbolBound {
  std::string symbol;
  std::optional<int64_t> lo, hi;
};

/// The guards of one graph's symbolic sizes, and the symbols' ranges that comparisons decide
/// by. Every symbolic SymInt of the graph points to it (the parser makes one per graph of
/// symbolic sizes); the compiled graph checks each call's sizes against it.
class SizeGuards {
 public:
  /// A symbol's range: lo <= s <= hi. Unless set, a symbol is at least 2 (PyTorch
  /// specializes sizes 0 and 1 unless told otherwise).
  void set_range(const std::string &symbol, int64_t lo, int64_t hi);
  /// Notes that `symbol` is read with `value`, its value at the sizes compiled for: a value
  /// below 2 widens its range down to it, so that no comparison is decided against it.
  void add_symbol(const std::string &symbol, int64_t value);
  /// Each symbol read, with its value at the sizes compiled for.
  const std::map<std::string, int64_t> &values() const { return values_; }
  /// A range the graph states (an assertion on sizes): its lower bound replaces the default,
  /// its upper bound narrows the range, and each is a guard (`why` says which assertion), so
  /// that what the range decides is checked at every call.
  void bound(const SymbolBound &b, const std::string &why);
  ir::Interval range_of(const std::string &symbol) const;
  /// The bounds of `e` over the symbols' ranges.
  ir::Interval bounds(const ir::Expr &e) const { return ir::bounds(e, ranges_); }
  /// The symbols' ranges (no loop variable).
  const ir::Ranges &ranges() const { return ranges_; }

  /// Records `g` (once: an identical guard is not repeated).
  void add(SizeGuard g);
  /// Ends the compile: the code generated checks the guards recorded so far, so a new one
  /// recorded later (a size read as a number where a hint was meant) would never be checked,
  /// or refuse sizes the code serves; add() then throws an InternalError naming it.
  void seal() { sealed_ = true; }
  /// Records `s == value` for each symbol of `symbols`, its value read (values()), for the
  /// reason `why`: a stage that does not keep these symbols, given their values.
  void fix(const std::set<std::string> &symbols, std::string_view why);
  const std::vector<SizeGuard> &guards() const { return guards_; }
  /// The symbols some Eq guard fixes to one value, by name: what was specialized.
  std::map<std::string, int64_t> specialized(const std::map<std::string, int64_t> &hints) const;
  /// What a call's sizes must pass: each symbol's range (comparisons were decided by it),
  /// then the guards.
  std::vector<SizeGuard> checks() const;
  /// The first of checks() that fails at `values`, if any.
  std::optional<SizeGuard> first_failing(const std::map<std::string, int64_t> &values) const;

 private:
  ir::Ranges ranges_ = default_ranges();
  std::vector<SizeGuard> guards_;
  std::map<std::string, int64_t> values_;
  bool sealed_ = false;

  static ir::Ranges default_ranges();
};

/// What the compile on this thread is doing, the reason of the guards recorded during its
/// scope: `what`, and the node it is about ("lowering node", "mm", "aten.mm.default" reads
/// "lowering node mm (aten.mm.default)"). The texts are not copied (they must outlive it)
/// and are joined only when a guard is recorded, so a static graph pays nothing per node.
class GuardActivity {
 public:
  explicit GuardActivity(std::string_view what, std::string_view node = {}, std::string_view op = {});
  ~GuardActivity();
  GuardActivity(const GuardActivity &) = delete;
  GuardActivity &operator=(const GuardActivity &) = delete;
  /// The activity now, "" outside any.
  static std::string current();

 private:
  const GuardActivity *previous_;
  std::string_view what_, node_, op_;
};

}  // namespace coil
