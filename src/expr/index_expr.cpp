#include "expr/index_expr.h"

#include <algorithm>
#include <climits>
#include <set>
#include <span>

#include "expr/index_expr_internal.h"
#include "support/error.h"
#include "support/hash.h"

namespace coil::ir {

using namespace internal;

// ---------------------------------------------------------------------------------------
// Nodes. An Expr and an Atom each share one immutable node; hashes and the lowest
// variable inside (which orders atoms by loop) are computed once, at construction.

namespace detail {

struct AtomNode {
  AtomKind kind = AtomKind::Var;
  VarId var;
  std::string symbol;
  Expr arg, other;
  int64_t divisor = 0;
  int first_var = INT_MAX;  // the lowest variable id inside; INT_MAX when none
  size_t hash = 0;
};

struct ExprNode {
  int64_t constant = 0;
  std::vector<Term> terms;
  int first_var = INT_MAX;
  size_t hash = 0;
};

/// What this file reads of the nodes behind the public handles, and how it makes them.
struct Internals {
  static const AtomNode &node(const Atom &a) { return *a.node_; }
  static const ExprNode &node(const Expr &e) { return *e.node_; }
  static Atom atom(std::shared_ptr<const AtomNode> node) { return Atom(std::move(node)); }
  static Expr expr(std::shared_ptr<const ExprNode> node) { return Expr(std::move(node)); }
};

}  // namespace detail

namespace internal {

using detail::AtomNode;
using detail::ExprNode;
using detail::Internals;

[[noreturn]] void unknown_kind(AtomKind kind) {
  throw_internal(__FILE__, __LINE__, str_cat("unknown AtomKind ", static_cast<int>(kind)));
}

// ---------------------------------------------------------------------------------------
// Integers: checked arithmetic and Python's floor division.

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// |a| without overflow, INT64_MIN included.
uint64_t magnitude(int64_t a) { return a < 0 ? 0 - static_cast<uint64_t>(a) : a; }

uint64_t gcd(uint64_t a, uint64_t b) {
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}

int cmp(int64_t a, int64_t b) { return (a > b) - (a < b); }

int first_var(const Expr &e) { return Internals::node(e).first_var; }

// ---------------------------------------------------------------------------------------
// The canonical order: atoms by their lowest variable, then kind, then contents;
// monomials and sums lexicographically. Never by pointer or hash, so it is the same on
// every run.

int compare_atoms(const Atom &a, const Atom &b) {
  const AtomNode &x = Internals::node(a), &y = Internals::node(b);
  if (&x == &y) return 0;
  // Atoms of outer loop variables first, so that an index reads x0*..., x1*..., x2.
  if (int c = cmp(x.first_var, y.first_var)) return c;
  if (int c = cmp(static_cast<int>(x.kind), static_cast<int>(y.kind))) return c;
  switch (x.kind) {
    case AtomKind::Var: return cmp(x.var.id, y.var.id);
    case AtomKind::Symbol: {
      int c = x.symbol.compare(y.symbol);
      return (c > 0) - (c < 0);
    }
    case AtomKind::FloorDiv:
    case AtomKind::Mod:
      if (int c = compare(x.arg, y.arg)) return c;
      return cmp(x.divisor, y.divisor);
    case AtomKind::Min:
    case AtomKind::Max:
    case AtomKind::SizeDiv:
    case AtomKind::SizeMod:
      if (int c = compare(x.arg, y.arg)) return c;
      return compare(x.other, y.other);
  }
  unknown_kind(x.kind);
}

int compare_monomials(const std::vector<Atom> &a, const std::vector<Atom> &b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (int c = compare_atoms(a[i], b[i])) return c;
  return cmp(static_cast<int64_t>(a.size()), static_cast<int64_t>(b.size()));
}

bool atom_less(const Atom &a, const Atom &b) { return compare_atoms(a, b) < 0; }

// ---------------------------------------------------------------------------------------
// Building nodes.

std::shared_ptr<const ExprNode> make_expr_node(int64_t constant, std::vector<Term> terms) {
  auto node = std::make_shared<ExprNode>();
  node->hash = hash_mix(0xe4, static_cast<size_t>(constant));
  for (const Term &t : terms) {
    node->hash = hash_mix(node->hash, static_cast<size_t>(t.coeff));
    for (const Atom &a : t.factors) {
      node->hash = hash_mix(node->hash, a.hash());
      node->first_var = std::min(node->first_var, Internals::node(a).first_var);
    }
    node->hash = hash_mix(node->hash, 0x7e);  // ends a term: x*y + z differs from x + y*z
  }
  node->constant = constant;
  node->terms = std::move(terms);
  return node;
}

Atom make_atom(AtomKind kind, VarId var, std::string symbol, Expr arg, Expr other,
               int64_t divisor) {
  auto node = std::make_shared<AtomNode>();
  node->kind = kind;
  node->var = var;
  node->first_var = kind == AtomKind::Var ? var.id : std::min(first_var(arg), first_var(other));
  size_t h = hash_mix(static_cast<size_t>(kind), static_cast<size_t>(var.id));
  h = hash_mix(h, std::hash<std::string>()(symbol));
  h = hash_mix(hash_mix(h, arg.hash()), other.hash());
  node->hash = hash_mix(h, static_cast<size_t>(divisor));
  node->symbol = std::move(symbol);
  node->arg = std::move(arg);
  node->other = std::move(other);
  node->divisor = divisor;
  return Internals::atom(std::move(node));
}

Expr atom_expr(AtomKind kind, Expr arg, Expr other, int64_t divisor) {
  return Expr(make_atom(kind, VarId{}, {}, std::move(arg), std::move(other), divisor));
}

// ---------------------------------------------------------------------------------------
// Canonical sums. Each returns nullopt when a coefficient or the constant overflows;
// the public operators turn that into an InternalError, the simplifier into "no rewrite".

/// Sorts the terms, merges equal monomials and drops zero coefficients.
std::optional<Expr> try_make_sum(std::vector<Term> terms, int64_t constant) {
  std::sort(terms.begin(), terms.end(), [](const Term &a, const Term &b) {
    return compare_monomials(a.factors, b.factors) < 0;
  });
  std::vector<Term> merged;
  for (Term &t : terms) {
    if (merged.empty() || compare_monomials(merged.back().factors, t.factors) != 0) {
      merged.push_back(std::move(t));
      continue;
    }
    auto sum = checked_add(merged.back().coeff, t.coeff);
    if (!sum) return std::nullopt;
    merged.back().coeff = *sum;
  }
  std::erase_if(merged, [](const Term &t) { return t.coeff == 0; });
  return Internals::expr(make_expr_node(constant, std::move(merged)));
}

/// a + b*k.
std::optional<Expr> try_add_scaled(const Expr &a, const Expr &b, int64_t k) {
  std::vector<Term> terms = a.terms();
  for (const Term &t : b.terms()) {
    auto coeff = checked_mul(t.coeff, k);
    if (!coeff) return std::nullopt;
    terms.push_back({*coeff, t.factors});
  }
  auto scaled = checked_mul(b.constant(), k);
  auto constant = scaled ? checked_add(a.constant(), *scaled) : std::nullopt;
  if (!constant) return std::nullopt;
  return try_make_sum(std::move(terms), *constant);
}

std::vector<Atom> multiply_monomials(const std::vector<Atom> &a, const std::vector<Atom> &b) {
  std::vector<Atom> out;
  out.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out), atom_less);
  return out;
}

/// (sum a_i + ca) * (sum b_j + cb), distributed.
std::optional<Expr> try_multiply(const Expr &a, const Expr &b) {
  std::vector<Term> terms;
  auto add = [&](int64_t x, int64_t y, std::vector<Atom> factors) {
    auto coeff = checked_mul(x, y);
    if (coeff) terms.push_back({*coeff, std::move(factors)});
    return coeff.has_value();
  };
  for (const Term &ta : a.terms()) {
    for (const Term &tb : b.terms())
      if (!add(ta.coeff, tb.coeff, multiply_monomials(ta.factors, tb.factors))) return std::nullopt;
    if (!add(ta.coeff, b.constant(), ta.factors)) return std::nullopt;
  }
  for (const Term &tb : b.terms())
    if (!add(tb.coeff, a.constant(), tb.factors)) return std::nullopt;
  auto constant = checked_mul(a.constant(), b.constant());
  if (!constant) return std::nullopt;
  return try_make_sum(std::move(terms), *constant);
}

Expr must(std::optional<Expr> e, const char *op, const Expr &a, const Expr &b) {
  COIL_ASSERT(e.has_value(), "index arithmetic overflows int64: (", str(a), ") ", op, " (",
              str(b), ")");
  return *std::move(e);
}

// ---------------------------------------------------------------------------------------
// Dividing a sum. Both floor_div and mod start by pulling out what the divisor divides.

/// The atom of kind `kind` when x is that atom plus a constant.
const Atom *sole_atom(const Expr &x, AtomKind kind) {
  if (x.terms().size() != 1 || x.terms()[0].coeff != 1) return nullptr;
  const std::vector<Atom> &factors = x.terms()[0].factors;
  return factors.size() == 1 && factors[0].kind() == kind ? &factors[0] : nullptr;
}

/// The atom of kind `kind` when the term is coeff * that atom.
const Atom *sole_factor(const Term &t, AtomKind kind) {
  return t.factors.size() == 1 && t.factors[0].kind() == kind ? &t.factors[0] : nullptr;
}

DivSplit split_multiples(const Expr &x, int64_t d) {
  std::vector<Term> whole, rest;
  for (const Term &t : x.terms()) {
    if (t.coeff % d == 0)
      whole.push_back({t.coeff / d, t.factors});
    else
      rest.push_back(t);
  }
  return {*try_make_sum(std::move(whole), coil::floor_div(x.constant(), d)),
          *try_make_sum(std::move(rest), coil::floor_mod(x.constant(), d))};
}

/// The greatest common divisor of d, every coefficient of x and its constant.
int64_t common_factor(const Expr &x, int64_t d) {
  uint64_t g = gcd(static_cast<uint64_t>(d), magnitude(x.constant()));
  for (const Term &t : x.terms()) g = gcd(g, magnitude(t.coeff));
  return static_cast<int64_t>(g);  // g <= d, so it fits
}

/// x / g for a g that divides every coefficient and the constant of x.
Expr divide_exact(const Expr &x, int64_t g) {
  std::vector<Term> terms;
  for (const Term &t : x.terms()) terms.push_back({t.coeff / g, t.factors});
  return *try_make_sum(std::move(terms), x.constant() / g);
}

/// x // d for an x that shares no factor with d. A quotient inside joins this one:
///   (A + y // a) // d -> (A*a + y) // (a*d)
/// as floor((A + floor(y/a))/d) == floor((A*a + y)/(a*d)) for any integer A; so every
/// way of dividing y by a*d has one canonical form, and one division instead of two.
Expr floor_div_reduced(const Expr &x, int64_t d) {
  for (const Term &t : x.terms()) {
    const Atom *inner = t.coeff == 1 ? sole_factor(t, AtomKind::FloorDiv) : nullptr;
    if (!inner) continue;
    auto divisor = checked_mul(inner->divisor(), d);
    auto others = try_add_scaled(x, Expr(*inner), -1);
    auto dividend = others ? try_add_scaled(inner->arg(), *others, inner->divisor()) : std::nullopt;
    if (divisor && dividend) return floor_div(*dividend, *divisor);
  }
  return atom_expr(AtomKind::FloorDiv, x, Expr(), d);
}

Expr min_or_max(AtomKind kind, const Expr &a, const Expr &b) {
  // min(y + c0, y + c1) -> y + min(c0, c1): no range is needed to order these.
  if (a.terms() == b.terms()) {
    bool a_is_smaller = a.constant() <= b.constant();
    return (kind == AtomKind::Min) == a_is_smaller ? a : b;
  }
  // min and max are symmetric: keep the operands ordered so that min(b, a) == min(a, b).
  bool in_order = compare(a, b) <= 0;
  return atom_expr(kind, in_order ? a : b, in_order ? b : a, 0);
}

}  // namespace internal

// ---------------------------------------------------------------------------------------
// Atom and Expr.

AtomKind Atom::kind() const { return node_->kind; }

VarId Atom::var() const {
  COIL_ASSERT(node_->kind == AtomKind::Var, "var() of a non-variable atom");
  return node_->var;
}

const std::string &Atom::symbol() const {
  COIL_ASSERT(node_->kind == AtomKind::Symbol, "symbol() of a non-symbol atom");
  return node_->symbol;
}

const Expr &Atom::arg() const {
  COIL_ASSERT(node_->kind != AtomKind::Var && node_->kind != AtomKind::Symbol,
              "arg() of a leaf atom");
  return node_->arg;
}

const Expr &Atom::other() const {
  COIL_ASSERT(node_->kind == AtomKind::Min || node_->kind == AtomKind::Max || node_->kind == AtomKind::SizeDiv ||
                  node_->kind == AtomKind::SizeMod,
              "other() of an atom that is not min, max or a division by a size");
  return node_->other;
}

int64_t Atom::divisor() const {
  COIL_ASSERT(node_->kind == AtomKind::FloorDiv || node_->kind == AtomKind::Mod,
              "divisor() of an atom that is not // or %");
  return node_->divisor;
}

size_t Atom::hash() const { return node_->hash; }

bool operator==(const Atom &a, const Atom &b) {
  if (a.node_ == b.node_) return true;
  return a.hash() == b.hash() && compare_atoms(a, b) == 0;
}

Expr::Expr() {
  static const std::shared_ptr<const ExprNode> zero = make_expr_node(0, {});
  node_ = zero;
}

Expr::Expr(int64_t value) : node_(make_expr_node(value, {})) {}

Expr::Expr(VarId var) : Expr(make_atom(AtomKind::Var, var, {}, Expr(), Expr(), 0)) {}

Expr::Expr(Atom atom) : node_(make_expr_node(0, {Term{1, {std::move(atom)}}})) {}

Expr Expr::symbol(std::string name) {
  COIL_ASSERT(!name.empty(), "a symbol needs a name");
  return Expr(make_atom(AtomKind::Symbol, VarId{}, std::move(name), Expr(), Expr(), 0));
}

int64_t Expr::constant() const { return node_->constant; }
const std::vector<Term> &Expr::terms() const { return node_->terms; }
size_t Expr::hash() const { return node_->hash; }

std::optional<int64_t> Expr::as_constant() const {
  if (!terms().empty()) return std::nullopt;
  return constant();
}

std::optional<VarId> Expr::as_var() const {
  const Atom *atom = as_atom();
  if (!atom || atom->kind() != AtomKind::Var) return std::nullopt;
  return atom->var();
}

const Atom *Expr::as_atom() const {
  if (constant() != 0 || terms().size() != 1) return nullptr;
  const Term &t = terms()[0];
  return t.coeff == 1 && t.factors.size() == 1 ? &t.factors[0] : nullptr;
}

bool operator==(const Expr &a, const Expr &b) {
  if (a.node_ == b.node_) return true;
  return a.hash() == b.hash() && a.constant() == b.constant() && a.terms() == b.terms();
}

int compare(const Expr &a, const Expr &b) {
  const std::vector<Term> &ta = a.terms(), &tb = b.terms();
  // A constant sorts after anything with variables: min(x0, 7), not min(7, x0).
  if (ta.empty() != tb.empty()) return ta.empty() ? 1 : -1;
  for (size_t i = 0; i < std::min(ta.size(), tb.size()); ++i) {
    if (int c = compare_monomials(ta[i].factors, tb[i].factors)) return c;
    if (int c = cmp(ta[i].coeff, tb[i].coeff)) return c;
  }
  if (int c = cmp(static_cast<int64_t>(ta.size()), static_cast<int64_t>(tb.size()))) return c;
  return cmp(a.constant(), b.constant());
}

Expr operator+(const Expr &a, const Expr &b) { return must(try_add_scaled(a, b, 1), "+", a, b); }
Expr operator-(const Expr &a, const Expr &b) { return must(try_add_scaled(a, b, -1), "-", a, b); }
Expr operator-(const Expr &a) { return must(try_add_scaled(Expr(), a, -1), "-", Expr(), a); }
Expr operator*(const Expr &a, const Expr &b) { return must(try_multiply(a, b), "*", a, b); }
Expr operator*(const Expr &a, int64_t k) { return must(try_add_scaled(Expr(), a, k), "*", a, k); }
Expr operator*(int64_t k, const Expr &a) { return a * k; }

Expr floor_div(const Expr &x, int64_t d) {
  COIL_ASSERT(d > 0, "floor_div(", str(x), ", ", d, "): divisors are positive");
  // (y*d*k + rest + c) // d -> y*k + c // d + (rest + c % d) // d
  auto [whole, rest] = split_multiples(x, d);
  if (rest.terms().empty()) return whole;  // rest is a constant in [0, d)
  // (y*g + c*g) // (d*g) -> (y + c) // d
  int64_t g = common_factor(rest, d);
  return whole + floor_div_reduced(divide_exact(rest, g), d / g);
}

Expr mod(const Expr &x, int64_t m) {
  COIL_ASSERT(m > 0, "mod(", str(x), ", ", m, "): moduli are positive");
  // (y*m*k + rest + c) % m -> (rest + c % m) % m
  Expr rest = split_multiples(x, m).rest;
  if (rest.terms().empty()) return rest;  // a constant in [0, m)
  // (y*g + c*g) % (m*g) -> ((y + c) % m)*g
  int64_t g = common_factor(rest, m);
  return atom_expr(AtomKind::Mod, divide_exact(rest, g), Expr(), m / g) * g;
}

namespace {

/// x == whole*d + rest, `whole` the quotients of the terms d divides exactly.
DivSplit split_by_size(const Expr &x, const Expr &d) {
  Expr whole, rest(x.constant());
  for (const Term &t : x.terms()) {
    Expr term(t.coeff);
    for (const Atom &a : t.factors) term = term * Expr(a);
    if (auto q = exact_quotient(term, d)) whole = whole + *q;
    else rest = rest + term;
  }
  return {whole, rest};
}

/// The number of a size that is one term (64 of `s1*64`), else 1.
int64_t number_of(const Expr &d) {
  return d.terms().size() == 1 && d.constant() == 0 ? d.terms()[0].coeff : 1;
}

}  // namespace

Expr floor_div(const Expr &x, const Expr &d) {
  if (auto c = d.as_constant()) return floor_div(x, *c);
  // x // (s*k) -> (x // k) // s: the number divides first, as a flat index's digits do.
  if (int64_t k = number_of(d); k > 1) return floor_div(floor_div(x, k), *exact_quotient(d, Expr(k)));
  // (y*d + rest) // d -> y + rest // d
  auto [whole, rest] = split_by_size(x, d);
  if (rest == Expr(0)) return whole;
  if (rest == Expr(-1)) return whole - 1;  // -1 // d is -1 for every d >= 1
  return whole + atom_expr(AtomKind::SizeDiv, rest, d, 0);
}

Expr mod(const Expr &x, const Expr &d) {
  if (auto c = d.as_constant()) return mod(x, *c);
  // x % (s*k) -> ((x // k) % s)*k + x % k
  if (int64_t k = number_of(d); k > 1) return mod(floor_div(x, k), *exact_quotient(d, Expr(k))) * k + mod(x, k);
  // (y*d + rest) % d -> rest % d
  Expr rest = split_by_size(x, d).rest;
  if (rest == Expr(0)) return rest;
  if (rest == Expr(-1)) return d - 1;
  return atom_expr(AtomKind::SizeMod, rest, d, 0);
}

Expr min(const Expr &a, const Expr &b) { return min_or_max(AtomKind::Min, a, b); }
Expr max(const Expr &a, const Expr &b) { return min_or_max(AtomKind::Max, a, b); }

// ---------------------------------------------------------------------------------------
// Printing. Python precedence: `*`, `//` and `%` bind equally and from the left, unary
// minus tighter; parentheses go where a reader (or Python) could misread.

namespace internal {

using Namer = std::function<std::string(VarId)>;

bool is_division(AtomKind k) {
  return k == AtomKind::FloorDiv || k == AtomKind::Mod || k == AtomKind::SizeDiv || k == AtomKind::SizeMod;
}

void print_expr(std::string &out, const Expr &e, const Namer &name);

/// The operand of `//` or `%`: bare when it is a variable, symbol or call.
void print_operand(std::string &out, const Expr &e, const Namer &name) {
  const Atom *atom = e.as_atom();
  bool bare = atom && !is_division(atom->kind());
  if (!bare) out += "(";
  print_expr(out, e, name);
  if (!bare) out += ")";
}

void print_atom(std::string &out, const Atom &a, const Namer &name) {
  switch (a.kind()) {
    case AtomKind::Var: out += name(a.var()); return;
    case AtomKind::Symbol: out += a.symbol(); return;
    case AtomKind::FloorDiv:
    case AtomKind::Mod:
      print_operand(out, a.arg(), name);
      out += str_cat(a.kind() == AtomKind::FloorDiv ? " // " : " % ", a.divisor());
      return;
    case AtomKind::SizeDiv:
    case AtomKind::SizeMod:
      print_operand(out, a.arg(), name);
      out += a.kind() == AtomKind::SizeDiv ? " // " : " % ";
      print_operand(out, a.other(), name);
      return;
    case AtomKind::Min:
    case AtomKind::Max:
      out += a.kind() == AtomKind::Min ? "min(" : "max(";
      print_expr(out, a.arg(), name);
      out += ", ";
      print_expr(out, a.other(), name);
      out += ")";
      return;
  }
  unknown_kind(a.kind());
}

/// One term without its sign: `x0*x1*4`, `(x0 // 4)*64`.
void print_term(std::string &out, const Term &t, bool after_unary_minus, const Namer &name) {
  uint64_t scale = magnitude(t.coeff);
  // `-(x // 4)` and `(x // 4)*2`: an operator next to a sign or factor gets parentheses.
  bool crowded = t.factors.size() > 1 || scale != 1 || after_unary_minus;
  for (size_t i = 0; i < t.factors.size(); ++i) {
    const Atom &a = t.factors[i];
    bool group = crowded && is_division(a.kind());
    if (i > 0) out += "*";
    if (group) out += "(";
    print_atom(out, a, name);
    if (group) out += ")";
  }
  if (scale != 1) out += str_cat("*", scale);
}

void print_expr(std::string &out, const Expr &e, const Namer &name) {
  const std::vector<Term> &terms = e.terms();
  for (size_t i = 0; i < terms.size(); ++i) {
    bool negative = terms[i].coeff < 0;
    if (i > 0) out += negative ? " - " : " + ";
    if (i == 0 && negative) out += "-";
    print_term(out, terms[i], i == 0 && negative, name);
  }
  int64_t c = e.constant();
  if (terms.empty())
    out += std::to_string(c);
  else if (c != 0)
    out += str_cat(c < 0 ? " - " : " + ", magnitude(c));
}

std::string default_name(VarId v) { return str_cat("x", v.id); }

}  // namespace internal

std::string str(const Expr &e) { return str(e, default_name); }

std::string str(const Expr &e, const std::function<std::string(VarId)> &name) {
  std::string out;
  print_expr(out, e, name);
  return out;
}

std::ostream &operator<<(std::ostream &os, const Expr &e) { return os << str(e); }
std::ostream &operator<<(std::ostream &os, VarId v) { return os << default_name(v); }

// ---------------------------------------------------------------------------------------
// Ranges and bounds.

Ranges::Ranges(std::initializer_list<std::pair<VarId, int64_t>> sizes) {
  for (const auto &[v, size] : sizes) set(v, size);
}

void Ranges::set(VarId v, int64_t size) { set(v, Expr(size)); }

void Ranges::set(VarId v, const Expr &size) {
  COIL_ASSERT(size.as_constant().value_or(0) >= 0, "the range of ", v, " has negative size ", size);
  sizes_[v] = size;
}

std::optional<int64_t> Ranges::size_of(VarId v) const {
  auto it = sizes_.find(v);
  if (it == sizes_.end()) return std::nullopt;
  return it->second.as_constant();
}

std::optional<Expr> Ranges::extent_of(VarId v) const {
  auto it = sizes_.find(v);
  if (it == sizes_.end()) return std::nullopt;
  return it->second;
}

void Ranges::set_symbol(const std::string &name, int64_t lo, int64_t hi) {
  COIL_ASSERT(0 <= lo && lo <= hi, "the range of symbol ", name, " is [", lo, ", ", hi, "]");
  symbols_[name] = {lo, hi};
}

void Ranges::set_symbol_floor(int64_t lo) {
  COIL_ASSERT(lo >= 0, "symbols have no negative floor, not ", lo);
  symbol_floor_ = lo;
}

std::pair<int64_t, int64_t> Ranges::symbol_range(const std::string &name) const {
  auto it = symbols_.find(name);
  return it != symbols_.end() ? it->second : std::pair{symbol_floor_, Interval::kNoUpper};
}

Interval Interval::point(int64_t v) { return {v, v}; }

std::ostream &operator<<(std::ostream &os, const Interval &i) {
  os << "[";
  if (i.lo == Interval::kNoLower) os << "-inf"; else os << i.lo;
  os << ", ";
  if (i.hi == Interval::kNoUpper) os << "inf"; else os << i.hi;
  return os << "]";
}

namespace internal {

// Interval arithmetic. An end that is missing stays missing; an end that overflows
// becomes missing, which is always sound.
constexpr int64_t kNoLower = Interval::kNoLower;
constexpr int64_t kNoUpper = Interval::kNoUpper;

Interval add(Interval a, Interval b) {
  Interval r;
  if (a.lo != kNoLower && b.lo != kNoLower) r.lo = checked_add(a.lo, b.lo).value_or(kNoLower);
  if (a.hi != kNoUpper && b.hi != kNoUpper) r.hi = checked_add(a.hi, b.hi).value_or(kNoUpper);
  return r;
}

Interval scale(Interval a, int64_t k) {
  if (k == 0) return Interval::point(0);
  auto lo = a.lo == kNoLower ? std::nullopt : checked_mul(a.lo, k);
  auto hi = a.hi == kNoUpper ? std::nullopt : checked_mul(a.hi, k);
  if (k < 0) std::swap(lo, hi);  // a missing upper end times k < 0 is a missing lower end
  return {lo.value_or(kNoLower), hi.value_or(kNoUpper)};
}

Interval multiply(Interval a, Interval b) {
  if (a == Interval::point(0) || b == Interval::point(0)) return Interval::point(0);
  if (!a.bounded() || !b.bounded()) {
    // Non-negative factors keep a non-negative product: x*s0 for a symbol s0.
    if (a.lo >= 0 && b.lo >= 0) return {checked_mul(a.lo, b.lo).value_or(0), kNoUpper};
    return Interval::unbounded();
  }
  int64_t lo = kNoUpper, hi = kNoLower;
  for (int64_t x : {a.lo, a.hi}) {
    for (int64_t y : {b.lo, b.hi}) {
      auto p = checked_mul(x, y);
      if (!p) return Interval::unbounded();
      lo = std::min(lo, *p);
      hi = std::max(hi, *p);
    }
  }
  return {lo, hi};
}

Interval floor_div_bounds(Interval a, int64_t d) {
  return {a.lo == kNoLower ? kNoLower : coil::floor_div(a.lo, d),
          a.hi == kNoUpper ? kNoUpper : coil::floor_div(a.hi, d)};
}

Interval mod_bounds(Interval a, int64_t m) {
  // Inside one bucket [k*m, k*m + m) the remainder is exact; otherwise anything in [0, m).
  if (a.bounded() && coil::floor_div(a.lo, m) == coil::floor_div(a.hi, m))
    return {coil::floor_mod(a.lo, m), coil::floor_mod(a.hi, m)};
  return {0, m - 1};
}

Interval var_bounds(VarId v, const Ranges &ranges) {
  std::optional<Expr> size = ranges.extent_of(v);
  if (!size) return Interval::unbounded();
  if (auto n = size->as_constant()) return {0, std::max<int64_t>(*n - 1, 0)};  // size 0: no iteration, any fact holds
  int64_t hi = bounds(*size, ranges).hi;  // a size of symbols: at most its bound, less one
  return {0, hi == Interval::kNoUpper ? hi : std::max<int64_t>(hi - 1, 0)};
}

Interval atom_bounds(const Atom &a, const Ranges &ranges) {
  switch (a.kind()) {
    case AtomKind::Var: return var_bounds(a.var(), ranges);
    case AtomKind::Symbol: {
      auto [lo, hi] = ranges.symbol_range(a.symbol());
      return {lo, hi};
    }
    case AtomKind::FloorDiv: return floor_div_bounds(bounds(a.arg(), ranges), a.divisor());
    case AtomKind::Mod: return mod_bounds(bounds(a.arg(), ranges), a.divisor());
    case AtomKind::Min: {
      Interval x = bounds(a.arg(), ranges), y = bounds(a.other(), ranges);
      return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
    }
    case AtomKind::Max: {
      Interval x = bounds(a.arg(), ranges), y = bounds(a.other(), ranges);
      return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
    }
    case AtomKind::SizeDiv: {
      // A dividend >= 0 over a divisor >= max(1, its least): at most the dividend.
      Interval x = bounds(a.arg(), ranges), d = bounds(a.other(), ranges);
      if (x.lo < 0) return Interval::unbounded();
      return {0, x.hi == Interval::kNoUpper ? x.hi : x.hi / std::max<int64_t>(d.lo, 1)};
    }
    case AtomKind::SizeMod: {
      Interval d = bounds(a.other(), ranges);
      return {0, d.hi == Interval::kNoUpper ? d.hi : d.hi - 1};
    }
  }
  unknown_kind(a.kind());
}

}  // namespace internal

Interval bounds(const Expr &e, const Ranges &ranges) {
  Interval sum = Interval::point(e.constant());
  for (const Term &t : e.terms()) {
    Interval product = Interval::point(1);
    for (const Atom &a : t.factors) product = multiply(product, atom_bounds(a, ranges));
    sum = add(sum, scale(product, t.coeff));
  }
  return sum;
}

// ---------------------------------------------------------------------------------------
// Evaluation, substitution, variables.

namespace internal {

class Evaluator {
 public:
  Evaluator(const std::vector<int64_t> &values, const std::map<std::string, int64_t> *symbols)
      : values_(values), symbols_(symbols) {}

  int64_t expr(const Expr &e) const {
    int64_t sum = e.constant();
    for (const Term &t : e.terms()) {
      int64_t product = t.coeff;
      for (const Atom &a : t.factors) product = checked(checked_mul(product, atom(a)));
      sum = checked(checked_add(sum, product));
    }
    return sum;
  }

 private:
  int64_t atom(const Atom &a) const {
    switch (a.kind()) {
      case AtomKind::Var:
        COIL_ASSERT(a.var().id >= 0 && static_cast<size_t>(a.var().id) < values_.size(),
                    "eval: no value for ", a.var());
        return values_[a.var().id];
      case AtomKind::Symbol: return symbol(a.symbol());
      case AtomKind::FloorDiv: return coil::floor_div(expr(a.arg()), a.divisor());
      case AtomKind::Mod: return coil::floor_mod(expr(a.arg()), a.divisor());
      case AtomKind::Min: return std::min(expr(a.arg()), expr(a.other()));
      case AtomKind::Max: return std::max(expr(a.arg()), expr(a.other()));
      case AtomKind::SizeDiv: return coil::floor_div(expr(a.arg()), positive(expr(a.other())));
      case AtomKind::SizeMod: return coil::floor_mod(expr(a.arg()), positive(expr(a.other())));
    }
    unknown_kind(a.kind());
  }

  static int64_t positive(int64_t divisor) {
    COIL_ASSERT(divisor > 0, "eval: a division by the size ", divisor);
    return divisor;
  }

  int64_t symbol(const std::string &name) const {
    COIL_ASSERT(symbols_ != nullptr, "eval: no value for symbol ", name);
    auto it = symbols_->find(name);
    COIL_ASSERT(it != symbols_->end(), "eval: no value for symbol ", name);
    return it->second;
  }

  static int64_t checked(std::optional<int64_t> v) {
    COIL_ASSERT(v.has_value(), "eval: an index value overflows int64");
    return *v;
  }

  const std::vector<int64_t> &values_;
  const std::map<std::string, int64_t> *symbols_;
};

/// e rebuilt from its constant and fn(atom) for each atom, through the constructors;
/// nullopt when a coefficient of the result overflows int64.
std::optional<Expr> map_atoms(const Expr &e, const std::function<Expr(const Atom &)> &fn) {
  std::optional<Expr> out = Expr(e.constant());
  for (const Term &t : e.terms()) {
    std::optional<Expr> product = Expr(t.coeff);
    for (const Atom &a : t.factors) {
      product = try_multiply(*product, fn(a));
      if (!product) return std::nullopt;
    }
    out = try_add_scaled(*out, *product, 1);
    if (!out) return std::nullopt;
  }
  return out;
}

/// `a` with each operand x replaced by child(x), rebuilt through the constructors.
Expr rebuild_atom(const Atom &a, const std::function<Expr(const Expr &)> &child) {
  switch (a.kind()) {
    case AtomKind::Var:
    case AtomKind::Symbol: return Expr(a);
    case AtomKind::FloorDiv: return floor_div(child(a.arg()), a.divisor());
    case AtomKind::Mod: return mod(child(a.arg()), a.divisor());
    case AtomKind::Min: return min(child(a.arg()), child(a.other()));
    case AtomKind::Max: return max(child(a.arg()), child(a.other()));
    case AtomKind::SizeDiv: return floor_div(child(a.arg()), child(a.other()));
    case AtomKind::SizeMod: return mod(child(a.arg()), child(a.other()));
  }
  unknown_kind(a.kind());
}

void collect_vars(const Expr &e, std::set<VarId> &out) {
  for (const Term &t : e.terms()) {
    for (const Atom &a : t.factors) {
      if (a.kind() == AtomKind::Var) out.insert(a.var());
      if (a.kind() != AtomKind::Var && a.kind() != AtomKind::Symbol) collect_vars(a.arg(), out);
      if (a.kind() == AtomKind::Min || a.kind() == AtomKind::Max || a.kind() == AtomKind::SizeDiv ||
          a.kind() == AtomKind::SizeMod)
        collect_vars(a.other(), out);
    }
  }
}

}  // namespace internal

int64_t eval(const Expr &e, const std::vector<int64_t> &values) {
  return Evaluator(values, nullptr).expr(e);
}

int64_t eval(const Expr &e, const std::vector<int64_t> &values,
             const std::map<std::string, int64_t> &symbols) {
  return Evaluator(values, &symbols).expr(e);
}

Expr substitute(const Expr &e, const std::function<std::optional<Expr>(VarId)> &replace) {
  auto out = map_atoms(e, [&](const Atom &a) {
    if (a.kind() == AtomKind::Var) return replace(a.var()).value_or(Expr(a));
    return rebuild_atom(a, [&](const Expr &x) { return substitute(x, replace); });
  });
  COIL_ASSERT(out.has_value(), "index arithmetic overflows int64 substituting into ", str(e));
  return *out;
}

Expr substitute_symbols(const Expr &e, const std::map<std::string, int64_t> &values) {
  auto out = map_atoms(e, [&](const Atom &a) {
    if (a.kind() == AtomKind::Symbol) {
      auto it = values.find(a.symbol());
      return it == values.end() ? Expr(a) : Expr(it->second);
    }
    if (a.kind() == AtomKind::Var) return Expr(a);
    return rebuild_atom(a, [&](const Expr &x) { return substitute_symbols(x, values); });
  });
  COIL_ASSERT(out.has_value(), "index arithmetic overflows int64 substituting sizes into ", str(e));
  return *out;
}

void collect_symbols(const Expr &e, std::set<std::string> &out) {
  for (const Term &t : e.terms()) {
    for (const Atom &a : t.factors) {
      if (a.kind() == AtomKind::Symbol) out.insert(a.symbol());
      if (a.kind() != AtomKind::Var && a.kind() != AtomKind::Symbol) collect_symbols(a.arg(), out);
      if (a.kind() == AtomKind::Min || a.kind() == AtomKind::Max || a.kind() == AtomKind::SizeDiv ||
          a.kind() == AtomKind::SizeMod)
        collect_symbols(a.other(), out);
    }
  }
}

std::vector<VarId> vars_of(const Expr &e) {
  std::set<VarId> vars;
  collect_vars(e, vars);
  return {vars.begin(), vars.end()};
}

}  // namespace coil::ir
