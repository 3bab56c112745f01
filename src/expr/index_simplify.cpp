// The simplifier of index expressions (the rules that need variable ranges), the
// reasoning about sizes of symbols it uses (exact quotients, upper bounds in sizes) and
// the access facts the code generators ask for. The algebra itself is in index_expr.cpp.
#include <algorithm>
#include <climits>
#include <set>
#include <span>

#include "expr/index_expr.h"
#include "expr/index_expr_internal.h"
#include "support/error.h"

namespace coil::ir {

using namespace internal;

// ---------------------------------------------------------------------------------------
// Simplification rules, grouped by operator. Each receives an atom already in canonical
// form and returns its rewrite, or nothing. The rules that need no ranges live in the
// constructors and hold for every Expr:
//   (y*d*k + rest) // d  -> y*k + rest // d        floor_div
//   (y*c) // (c*k)       -> y // k                 floor_div
//   (A + y // a) // d    -> (A*a + y) // (a*d)     floor_div
//   (y*d*k + rest) % d   -> rest % d               mod
//   (y*c) % (c*k)        -> (y % k)*c              mod
//   min(y + c0, y + c1)  -> y + min(c0, c1)        min, max

namespace {

using AtomRule = std::optional<Expr> (*)(const Atom &, const Ranges &);
using SumRule = std::optional<Expr> (*)(const Expr &, const Ranges &);

bool in_one_bucket(Interval b, int64_t d) {
  return b.bounded() && coil::floor_div(b.lo, d) == coil::floor_div(b.hi, d);
}

/// 0 <= e < g everywhere in ranges.
bool fits_below(const Expr &e, int64_t g, const Ranges &ranges) {
  Interval b = bounds(e, ranges);
  return b.lo >= 0 && b.hi < g;
}

/// The factors g, 1 < g < d, that d shares with some coefficient of x, largest first:
/// the candidates for splitting x into A*g + B.
std::vector<int64_t> partial_factors(const Expr &x, int64_t d) {
  std::vector<int64_t> out;
  for (const Term &t : x.terms()) {
    int64_t g = static_cast<int64_t>(gcd(static_cast<uint64_t>(d), magnitude(t.coeff)));
    if (g > 1 && g < d && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

/// How many FloorDiv and Mod operations evaluating e takes.
int division_count(const Expr &e) {
  int n = 0;
  for (const Term &t : e.terms()) {
    for (const Atom &a : t.factors) {
      bool by_size = a.kind() == AtomKind::SizeDiv || a.kind() == AtomKind::SizeMod;
      if (a.kind() == AtomKind::FloorDiv || a.kind() == AtomKind::Mod || by_size) ++n;
      if (a.kind() != AtomKind::Var && a.kind() != AtomKind::Symbol) n += division_count(a.arg());
      if (a.kind() == AtomKind::Min || a.kind() == AtomKind::Max || by_size) n += division_count(a.other());
    }
  }
  return n;
}

/// e - part + whole, unless something overflows (or is missing already).
std::optional<Expr> replace_part(const Expr &e, const std::optional<Expr> &part,
                                 const std::optional<Expr> &whole) {
  auto removed = part && whole ? try_add_scaled(e, *part, -1) : std::nullopt;
  return removed ? try_add_scaled(*removed, *whole, 1) : std::nullopt;
}

/// e - part + whole when that has fewer divisions than e.
std::optional<Expr> replace_if_cheaper(const Expr &e, const std::optional<Expr> &part,
                                       const std::optional<Expr> &whole) {
  auto out = replace_part(e, part, whole);
  if (!out || division_count(*out) >= division_count(e)) return std::nullopt;
  return out;
}

/// c*e, unless it overflows.
std::optional<Expr> times(const Expr &e, int64_t c) { return try_add_scaled(Expr(), e, c); }

/// The ways of writing x with one remainder taken out of a quotient:
///   ((A % k)*g + B) // d -> (A*g + B) // d - (A // k)*(k*g/d)   when d divides k*g
/// as (A % k)*g == A*g - (A // k)*k*g. Alone this trades a Mod for a FloorDiv; it pays
/// when the new quotient cancels a term beside it or a modulus absorbs it.
std::vector<Expr> unfoldings(const Expr &x) {
  std::vector<Expr> out;
  for (const Term &t : x.terms()) {
    const Atom *div = sole_factor(t, AtomKind::FloorDiv);
    if (!div) continue;
    for (const Term &inner : div->arg().terms()) {
      const Atom *rem = sole_factor(inner, AtomKind::Mod);
      auto period = rem ? checked_mul(rem->divisor(), inner.coeff) : std::nullopt;
      if (!period || *period % div->divisor() != 0) continue;
      // The quotient's argument with A*g in place of (A % k)*g, and what that adds.
      auto multiples = try_add_scaled(rem->arg(), Expr(*rem), -1);  // (A // k)*k
      auto arg = multiples ? try_add_scaled(div->arg(), *multiples, inner.coeff) : std::nullopt;
      auto excess = checked_mul(t.coeff, *period / div->divisor());
      if (!arg || !excess) continue;
      auto quotient = times(floor_div(*arg, div->divisor()), t.coeff);
      auto correction = times(floor_div(rem->arg(), rem->divisor()), *excess);
      auto whole = quotient && correction ? try_add_scaled(*quotient, *correction, -1)
                                          : std::nullopt;
      if (auto next = replace_part(x, times(Expr(*div), t.coeff), whole)) out.push_back(*next);
    }
  }
  return out;
}

// --- Var.

// v -> 0   when its loop runs once: 0 <= v < 1
std::optional<Expr> var_unit_range(const Atom &a, const Ranges &ranges) {
  std::optional<int64_t> size = ranges.size_of(a.var());
  if (!size || *size > 1) return std::nullopt;
  return Expr(0);
}

constexpr AtomRule kVarRules[] = {var_unit_range};

// --- FloorDiv: `x // d`, x canonical (no multiple of d left in it), d > 1.

// x // d -> k   when bounds put x in one bucket: k*d <= x < k*d + d
// (so `rest // d -> 0` when 0 <= rest < d)
std::optional<Expr> floor_div_one_bucket(const Atom &a, const Ranges &ranges) {
  Interval b = bounds(a.arg(), ranges);
  if (!in_one_bucket(b, a.divisor())) return std::nullopt;
  return Expr(coil::floor_div(b.lo, a.divisor()));
}

// (y % (d*k)) // d -> (y // d) % k
std::optional<Expr> floor_div_of_mod(const Atom &a, const Ranges &) {
  const Atom *inner = sole_atom(a.arg(), AtomKind::Mod);
  if (!inner || a.arg().constant() != 0 || inner->divisor() % a.divisor() != 0) return std::nullopt;
  return mod(floor_div(inner->arg(), a.divisor()), inner->divisor() / a.divisor());
}

// (A*g + B) // (g*k) -> A // k   when 0 <= B < g
// e.g. (x*8 + y) // 16 -> x // 2 when 0 <= y < 8
std::optional<Expr> floor_div_drop_small_remainder(const Atom &a, const Ranges &ranges) {
  for (int64_t g : partial_factors(a.arg(), a.divisor())) {
    auto [whole, rest] = split_multiples(a.arg(), g);
    if (fits_below(rest, g, ranges)) return floor_div(whole, a.divisor() / g);
  }
  return std::nullopt;
}

constexpr AtomRule kFloorDivRules[] = {
    floor_div_one_bucket,
    floor_div_of_mod,
    floor_div_drop_small_remainder,
};

// --- Mod: `x % m`, x canonical (no multiple of m left in it, constant in [0, m)), m > 1.

// x % m -> x - k*m   when bounds put x in one bucket: k*m <= x < k*m + m
// (so `rest % m -> rest` when 0 <= rest < m, and `(y // a) % b -> y // a` when y < a*b)
std::optional<Expr> mod_one_bucket(const Atom &a, const Ranges &ranges) {
  Interval b = bounds(a.arg(), ranges);
  if (!in_one_bucket(b, a.divisor())) return std::nullopt;
  auto base = checked_mul(coil::floor_div(b.lo, a.divisor()), a.divisor());
  if (!base) return std::nullopt;
  return try_add_scaled(a.arg(), *base, -1);
}

// ((y % n)*c + rest) % m -> (y*c + rest) % m   when m divides n*c
// (so `(y % a) % b -> y % b` when b divides a)
std::optional<Expr> mod_of_mod(const Atom &a, const Ranges &) {
  Expr x = a.arg();
  bool changed = false;
  for (const Term &t : a.arg().terms()) {
    const Atom *inner = sole_factor(t, AtomKind::Mod);
    auto period = inner ? checked_mul(inner->divisor(), t.coeff) : std::nullopt;
    if (!period || *period % a.divisor() != 0) continue;
    // (y % n)*c == y*c - (y // n)*n*c, and m divides the last part.
    auto next = try_add_scaled(x, inner->arg() - Expr(*inner), t.coeff);
    if (!next) continue;
    x = *next;
    changed = true;
  }
  if (!changed) return std::nullopt;
  return mod(x, a.divisor());
}

// (A*g + B) % (g*k) -> (A % k)*g + B   when 0 <= B < g
// e.g. (x*8 + y) % 16 -> (x % 2)*8 + y when 0 <= y < 8
std::optional<Expr> mod_split_small_remainder(const Atom &a, const Ranges &ranges) {
  for (int64_t g : partial_factors(a.arg(), a.divisor())) {
    auto [whole, rest] = split_multiples(a.arg(), g);
    if (fits_below(rest, g, ranges)) return mod(whole, a.divisor() / g) * g + rest;
  }
  return std::nullopt;
}

// ((((A % k)*g + B) // d)*c + rest) % m -> (((A*g + B) // d)*c + rest) % m
//   when d divides k*g and m divides c*k*g/d (see unfoldings)
std::optional<Expr> mod_unfold_quotient(const Atom &a, const Ranges &) {
  int before = division_count(Expr(a));
  for (const Expr &x : unfoldings(a.arg())) {
    Expr out = mod(x, a.divisor());
    if (division_count(out) < before) return out;
  }
  return std::nullopt;
}

constexpr AtomRule kModRules[] = {
    mod_one_bucket,
    mod_of_mod,
    mod_split_small_remainder,
    mod_unfold_quotient,
};

// --- Min and Max: the bounds of the difference decide, so shared terms cancel first.

// min(a, b) -> a   when a - b <= 0
// min(a, b) -> b   when a - b >= 0
std::optional<Expr> min_proven(const Atom &a, const Ranges &ranges) {
  auto diff = try_add_scaled(a.arg(), a.other(), -1);
  if (!diff) return std::nullopt;
  Interval b = bounds(*diff, ranges);
  if (b.hi <= 0) return a.arg();
  if (b.lo >= 0) return a.other();
  return std::nullopt;
}

// max(a, b) -> b   when a - b <= 0
// max(a, b) -> a   when a - b >= 0
std::optional<Expr> max_proven(const Atom &a, const Ranges &ranges) {
  auto diff = try_add_scaled(a.arg(), a.other(), -1);
  if (!diff) return std::nullopt;
  Interval b = bounds(*diff, ranges);
  if (b.hi <= 0) return a.other();
  if (b.lo >= 0) return a.arg();
  return std::nullopt;
}

constexpr AtomRule kMinRules[] = {min_proven};
constexpr AtomRule kMaxRules[] = {max_proven};

// --- SizeDiv and SizeMod: by a size of symbols, decided by an upper bound in sizes.

// Whether 0 <= x < d at every point: x's upper bound is below the size d.
bool below_size(const Expr &x, const Expr &d, const Ranges &ranges) {
  if (bounds(x, ranges).lo < 0) return false;
  std::optional<Expr> upper = upper_bound(x, ranges);
  return upper && bounds(d - 1 - *upper, ranges).lo >= 0;
}

// x // d -> 0   when 0 <= x < d (`x1 // s1` over a loop of s1)
std::optional<Expr> size_div_below(const Atom &a, const Ranges &ranges) {
  if (!below_size(a.arg(), a.other(), ranges)) return std::nullopt;
  return Expr(0);
}

// x % d -> x   when 0 <= x < d
std::optional<Expr> size_mod_below(const Atom &a, const Ranges &ranges) {
  if (!below_size(a.arg(), a.other(), ranges)) return std::nullopt;
  return a.arg();
}

constexpr AtomRule kSizeDivRules[] = {size_div_below};
constexpr AtomRule kSizeModRules[] = {size_mod_below};

// --- Sums: identities that put back together what a view took apart. Each is exact
// over the ranges; it is made when the sum ends up with fewer divisions. Quotients are
// looked for as the rules above would have written them, since that is how they appear.

// (u // n)*n*k + (u % n)*k -> u*k
// e.g. (z // 12)*12 + ((z // 4) % 3)*4 has u = z // 4, n = 3
std::optional<Expr> recombine_div_mod(const Expr &e, const Ranges &ranges) {
  for (const Term &t : e.terms()) {
    const Atom *rem = sole_factor(t, AtomKind::Mod);
    auto quotient_coeff = rem ? checked_mul(t.coeff, rem->divisor()) : std::nullopt;
    if (!quotient_coeff) continue;
    Expr quotient = simplify(floor_div(rem->arg(), rem->divisor()), ranges);
    auto parts = try_add_scaled(Expr(*rem) * t.coeff, quotient, *quotient_coeff);
    auto whole = times(rem->arg(), t.coeff);
    if (auto out = replace_if_cheaper(e, parts, whole)) return out;
  }
  return std::nullopt;
}

// ((u // a + w) % b)*a*k + (u % a)*k -> ((u + w*a) % (a*b))*k
// (the digits of one number in base a, a*b put back into one remainder; w is what a
// constructor pulled out of u, e.g. ((x0*6 + x1 // 2) % 4)*2 + x1 % 2 has w = x0*6)
std::optional<Expr> combine_mods(const Expr &e, const Ranges &ranges) {
  for (const Term &low : e.terms()) {
    const Atom *rem = sole_factor(low, AtomKind::Mod);
    auto high_coeff = rem ? checked_mul(low.coeff, rem->divisor()) : std::nullopt;
    if (!high_coeff) continue;
    Expr digits = simplify(floor_div(rem->arg(), rem->divisor()), ranges);
    for (const Term &high : e.terms()) {
      const Atom *digit = sole_factor(high, AtomKind::Mod);
      if (!digit || high.coeff != *high_coeff) continue;
      // u + (v - u // a)*a has u % a below and v above.
      auto w = try_add_scaled(digit->arg(), digits, -1);
      auto number = w ? try_add_scaled(rem->arg(), *w, rem->divisor()) : std::nullopt;
      auto modulus = checked_mul(rem->divisor(), digit->divisor());
      if (!number || !modulus) continue;
      auto parts = try_add_scaled(Expr(*rem) * low.coeff, Expr(*digit), high.coeff);
      auto whole = times(mod(*number, *modulus), low.coeff);
      if (auto out = replace_if_cheaper(e, parts, whole)) return out;
    }
  }
  return std::nullopt;
}

// (((A % k)*g + B) // d)*c + rest -> ((A*g + B) // d)*c - (A // k)*(c*k*g/d) + rest
//   when d divides k*g and the sum gets cheaper (see unfoldings), e.g.
//   (x // 10)*120 + (((x % 10)*12 + y) // 15)*15 -> ((x*12 + y) // 15)*15
std::optional<Expr> unfold_quotient(const Expr &e, const Ranges &) {
  for (const Expr &out : unfoldings(e))
    if (division_count(out) < division_count(e)) return out;
  return std::nullopt;
}

// (u // d)*d*m + (u % d)*m -> u*m, for a size d of symbols and m a number times sizes
// (`(x0 // s1)*s1*64 + (x0 % s1)*64` is x0*64)
std::optional<Expr> recombine_size_div_mod(const Expr &e, const Ranges &ranges) {
  for (const Term &t : e.terms()) {
    const Atom *rem = nullptr;
    Expr m(t.coeff);
    for (const Atom &a : t.factors) {
      if (a.kind() == AtomKind::SizeMod && !rem) rem = &a;
      else if (a.kind() == AtomKind::Symbol) m = m * Expr(a);
      else m = Expr(0);
    }
    if (!rem || m == Expr(0)) continue;
    Expr quotient = simplify(floor_div(rem->arg(), rem->other()), ranges);
    auto parts = try_add_scaled(Expr(*rem) * m, quotient * rem->other() * m, 1);
    if (auto out = replace_if_cheaper(e, parts, rem->arg() * m)) return out;
  }
  return std::nullopt;
}

constexpr SumRule kSumRules[] = {recombine_div_mod, combine_mods, unfold_quotient, recombine_size_div_mod};

std::span<const AtomRule> rules_for(AtomKind kind) {
  switch (kind) {
    case AtomKind::Var: return kVarRules;
    case AtomKind::Symbol: return {};
    case AtomKind::FloorDiv: return kFloorDivRules;
    case AtomKind::Mod: return kModRules;
    case AtomKind::Min: return kMinRules;
    case AtomKind::Max: return kMaxRules;
    case AtomKind::SizeDiv: return kSizeDivRules;
    case AtomKind::SizeMod: return kSizeModRules;
  }
  unknown_kind(kind);
}

/// The first rule that changes the atom wins.
std::optional<Expr> rewrite_atom(const Atom &a, const Ranges &ranges) {
  Expr before(a);
  for (AtomRule rule : rules_for(a.kind()))
    if (auto out = rule(a, ranges); out && !(*out == before)) return out;
  return std::nullopt;
}

std::optional<Expr> rewrite_sum(const Expr &e, const Ranges &ranges) {
  for (SumRule rule : kSumRules)
    if (auto out = rule(e, ranges); out && !(*out == e)) return out;
  return std::nullopt;
}

Expr simplify_once(const Expr &e, const Ranges &ranges);

/// Operands first, then the atom's own rules on the canonical result.
Expr simplify_atom(const Atom &a, const Ranges &ranges) {
  Expr rebuilt = rebuild_atom(a, [&](const Expr &x) { return simplify_once(x, ranges); });
  const Atom *atom = rebuilt.as_atom();
  if (!atom) return rebuilt;
  return rewrite_atom(*atom, ranges).value_or(rebuilt);
}

Expr simplify_once(const Expr &e, const Ranges &ranges) {
  // A rewrite whose coefficients would overflow is not made.
  Expr rebuilt = map_atoms(e, [&](const Atom &a) { return simplify_atom(a, ranges); }).value_or(e);
  return rewrite_sum(rebuilt, ranges).value_or(rebuilt);
}

// Every rule removes a division, moves one inward or shrinks a divisor, so a fixpoint
// comes in a few rounds; the cap only guards against a future rule that undoes another
// (the result is exact either way).
constexpr int kMaxRounds = 64;

}  // namespace

std::optional<Expr> exact_quotient(const Expr &a, const Expr &b) {
  if (b.terms().size() + (b.constant() != 0) != 1) return std::nullopt;  // one term, or a constant
  Term div = b.terms().empty() ? Term{b.constant(), {}} : b.terms()[0];
  // a's constant is a term without factors: only a constant divides it.
  if (a.constant() % div.coeff != 0 || (a.constant() != 0 && !div.factors.empty())) return std::nullopt;
  Expr q(a.constant() / div.coeff);
  for (const Term &t : a.terms()) {
    if (t.coeff % div.coeff != 0) return std::nullopt;
    std::vector<Atom> rest = t.factors;
    for (const Atom &f : div.factors) {
      auto it = std::find(rest.begin(), rest.end(), f);
      if (it == rest.end()) return std::nullopt;
      rest.erase(it);
    }
    Expr p(t.coeff / div.coeff);
    for (const Atom &f : rest) p = p * Expr(f);
    q = q + p;
  }
  return q;
}

std::optional<Expr> upper_bound(const Expr &e, const Ranges &ranges) {
  Expr upper(e.constant());
  for (const Term &t : e.terms()) {
    Expr coeff(t.coeff);  // a number times sizes, times at most one other factor
    std::optional<Expr> most;
    const Atom *other = nullptr;
    int others = 0;
    for (const Atom &a : t.factors) {
      if (a.kind() == AtomKind::Symbol) {
        coeff = coeff * Expr(a);
        continue;
      }
      ++others;
      other = &a;
      if (a.kind() == AtomKind::Var) {
        if (auto extent = ranges.extent_of(a.var())) most = *extent - 1;
      } else if (a.kind() == AtomKind::FloorDiv && bounds(a.arg(), ranges).lo >= 0) {
        if (auto x = upper_bound(a.arg(), ranges)) most = floor_div(*x, a.divisor());
      } else if (a.kind() == AtomKind::SizeDiv && bounds(a.arg(), ranges).lo >= 0) {
        if (auto x = upper_bound(a.arg(), ranges)) most = floor_div(*x, a.other());
      } else if (a.kind() == AtomKind::Mod) {
        most = Expr(a.divisor() - 1);
      } else if (a.kind() == AtomKind::SizeMod) {
        most = a.other() - 1;
      }
    }
    if (others == 0) {
      upper = upper + coeff;  // sizes alone: exactly themselves
    } else if (others > 1 || !most) {
      return std::nullopt;
    } else if (t.coeff > 0) {
      upper = upper + coeff * *most;  // (a negative multiple of a value >= 0 adds at most 0)
    } else if (bounds(Expr(*other), ranges).lo < 0) {
      return std::nullopt;
    }
  }
  return upper;
}

Expr simplify(const Expr &e, const Ranges &ranges) {
  Expr current = e;
  for (int round = 0; round < kMaxRounds; ++round) {
    Expr next = simplify_once(current, ranges);
    if (next == current) return current;
    current = std::move(next);
  }
  return current;
}

// ---------------------------------------------------------------------------------------
// Access facts for the code generators.

namespace {

bool mentions(const Expr &e, VarId v);

bool mentions(const Atom &a, VarId v) {
  switch (a.kind()) {
    case AtomKind::Var: return a.var() == v;
    case AtomKind::Symbol: return false;
    case AtomKind::FloorDiv:
    case AtomKind::Mod: return mentions(a.arg(), v);
    case AtomKind::Min:
    case AtomKind::Max:
    case AtomKind::SizeDiv:
    case AtomKind::SizeMod: return mentions(a.arg(), v) || mentions(a.other(), v);
  }
  unknown_kind(a.kind());
}

bool mentions(const Term &t, VarId v) {
  return std::any_of(t.factors.begin(), t.factors.end(),
                     [&](const Atom &a) { return mentions(a, v); });
}

bool mentions(const Expr &e, VarId v) {
  return std::any_of(e.terms().begin(), e.terms().end(),
                     [&](const Term &t) { return mentions(t, v); });
}

bool is_irregular(const AccessFact &f) { return f.kind == Access::Irregular; }

}  // namespace

AccessFact access_of(const Expr &index, VarId v, const Ranges &ranges) {
  Expr e = simplify(index, ranges);
  AccessFact fact{Access::Broadcast, 0};
  for (const Term &t : e.terms()) {
    if (!mentions(t, v)) continue;
    // A canonical sum holds v alone in at most one term: any other mention is irregular.
    if (t.factors.size() != 1 || t.factors[0].kind() != AtomKind::Var)
      return {Access::Irregular, 0};
    fact = {t.coeff == 1 ? Access::Contiguous : Access::Affine, t.coeff};
  }
  return fact;
}

std::optional<Expr> stride_of(const Expr &index, VarId v, const Ranges &ranges) {
  Expr e = simplify(index, ranges);
  Expr stride = 0;
  for (const Term &t : e.terms()) {
    if (!mentions(t, v)) continue;
    // v once, times sizes alone: a canonical sum holds v so in at most one term.
    Expr by = t.coeff;
    int vars = 0;
    for (const Atom &a : t.factors) {
      if (a.kind() == AtomKind::Var && a.var() == v) {
        ++vars;
      } else if (a.kind() == AtomKind::Symbol) {
        by = by * Expr(a);
      } else {
        return std::nullopt;
      }
    }
    if (vars != 1) return std::nullopt;
    stride = by;
  }
  return stride;
}

bool can_merge(const Expr &index, VarId outer, int64_t outer_size, VarId inner,
               int64_t inner_size, const Ranges &ranges) {
  COIL_ASSERT(outer_size >= 0 && inner_size >= 0, "can_merge: negative loop size");
  // A loop of size 1 has its variable fixed at 0: merging only renames the other one.
  if (outer_size == 1 || inner_size == 1) return true;
  AccessFact o = access_of(index, outer, ranges), i = access_of(index, inner, ranges);
  if (is_irregular(o) || is_irregular(i)) return false;
  return checked_mul(i.stride, inner_size) == o.stride;
}

Expr merge_vars(const Expr &index, VarId outer, VarId inner, int64_t inner_size, VarId merged,
                const Ranges &ranges) {
  COIL_ASSERT(inner_size > 0, "merge_vars: inner size ", inner_size, " is not positive");
  Expr m(merged);
  Expr split = substitute(index, [&](VarId v) -> std::optional<Expr> {
    if (v == outer) return floor_div(m, inner_size);
    if (v == inner) return mod(m, inner_size);
    return std::nullopt;
  });
  return simplify(split, ranges);
}

}  // namespace coil::ir
