// What index_expr.cpp (the algebra) shares with index_simplify.cpp (the rules): integer
// helpers and the term-level operations the rules are written with. Not for use
// outside src/ir/index_*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "expr/index_expr.h"
#include "support/int_math.h"

namespace coil::ir::internal {

[[noreturn]] void unknown_kind(AtomKind kind);

std::optional<int64_t> checked_add(int64_t a, int64_t b);
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
/// |a| without overflow, INT64_MIN included.
uint64_t magnitude(int64_t a);
uint64_t gcd(uint64_t a, uint64_t b);

/// a + b*k, or nothing when a coefficient overflows.
std::optional<Expr> try_add_scaled(const Expr &a, const Expr &b, int64_t k);
/// The atom of kind `kind` when x is exactly that atom / t's only factor is one.
const Atom *sole_atom(const Expr &x, AtomKind kind);
const Atom *sole_factor(const Term &t, AtomKind kind);

/// x == whole*d + rest, where `whole` takes every term whose coefficient d divides and
/// the constant's multiple of d, leaving rest's constant in [0, d).
struct DivSplit {
  Expr whole;
  Expr rest;
};
DivSplit split_multiples(const Expr &x, int64_t d);

/// e with every atom replaced by fn(atom), or nothing when that overflows.
std::optional<Expr> map_atoms(const Expr &e, const std::function<Expr(const Atom &)> &fn);
/// The atom rebuilt with its operands passed through `child`.
Expr rebuild_atom(const Atom &a, const std::function<Expr(const Expr &)> &child);

}  // namespace coil::ir::internal
