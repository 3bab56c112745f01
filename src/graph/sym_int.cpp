#include "graph/sym_int.h"

#include <algorithm>
#include <utility>

#include "support/error.h"
#include "support/int_math.h"

namespace coil {
namespace {

thread_local const GuardActivity *active = nullptr;

void check_overflow(bool overflow, const char *what) {
  if (overflow) throw UserError(str_cat("a size overflows int64 in ", what));
}

/// The guards of the graph `a` or `b` belongs to (one of them is symbolic).
const std::shared_ptr<SizeGuards> &guards_of(const SymInt &a, const SymInt &b) {
  return a.symbolic() ? a.guards() : b.guards();
}

/// Records in `g` that `d op 0` held at the hints (d symbolic).
void record(SizeGuards &g, const ir::Expr &d, SizeGuard::Op op) { g.add(SizeGuard{d, op, GuardActivity::current()}); }

/// Bounds of `d` good for its sign: with every symbol of at least 1 that each term of d
/// has (d having no constant) divided out, which leaves d's sign as it is. So
/// `s1*96 - s0*s1*96` is negative for s0 >= 2, where intervals alone bound it by nothing.
ir::Interval sign_bounds(const SizeGuards &g, const ir::Expr &d) {
  ir::Interval plain = g.bounds(d);
  if (d.constant() != 0 || d.terms().size() < 2 || plain.lo > 0 || plain.hi < 0) return plain;
  // Each symbol of the first term (repeated for powers) that divides every term.
  ir::Expr rest = d;
  bool divided = false;
  for (const ir::Atom &a : d.terms()[0].factors) {
    if (a.kind() != ir::AtomKind::Symbol || g.range_of(a.symbol()).lo < 1) continue;
    if (std::optional<ir::Expr> q = ir::exact_quotient(rest, ir::Expr(a))) rest = *q, divided = true;
  }
  if (!divided) return plain;
  ir::Interval r = g.bounds(rest);
  if (r.lo > 0) return {1, ir::Interval::kNoUpper};
  if (r.hi < 0) return {ir::Interval::kNoLower, -1};
  if (r.lo == 0 && r.hi == 0) return {0, 0};
  return plain;
}

/// Decides `d op 0` for d = a - b: by the symbols' ranges when they decide it, else by the
/// hints with a guard.
bool decide(const SymInt &a, const SymInt &b, SizeGuard::Op op) {
  int64_t ha = a.hint(), hb = b.hint();
  bool at_hints = op == SizeGuard::Op::Eq ? ha == hb : op == SizeGuard::Op::Ne ? ha != hb
                : op == SizeGuard::Op::Lt ? ha < hb : ha <= hb;
  if (!a.symbolic() && !b.symbolic()) return at_hints;
  SizeGuards &g = *guards_of(a, b);
  ir::Expr d = a.expr() - b.expr();
  ir::Interval i = sign_bounds(g, d);
  switch (op) {
    case SizeGuard::Op::Eq:
    case SizeGuard::Op::Ne: {
      bool known_zero = i.lo == 0 && i.hi == 0, known_nonzero = i.lo > 0 || i.hi < 0;
      if (known_zero || known_nonzero) return (op == SizeGuard::Op::Eq) == known_zero;
      bool eq = ha == hb;
      record(g, d, eq ? SizeGuard::Op::Eq : SizeGuard::Op::Ne);
      return at_hints;
    }
    case SizeGuard::Op::Lt:
      if (i.hi < 0) return true;
      if (i.lo >= 0) return false;
      if (at_hints) record(g, d, SizeGuard::Op::Lt); else record(g, -d, SizeGuard::Op::Le);
      return at_hints;
    case SizeGuard::Op::Le:
      if (i.hi <= 0) return true;
      if (i.lo > 0) return false;
      if (at_hints) record(g, d, SizeGuard::Op::Le); else record(g, -d, SizeGuard::Op::Lt);
      return at_hints;
  }
  return at_hints;
}

std::string op_text(SizeGuard::Op op) {
  switch (op) {
    case SizeGuard::Op::Eq: return "==";
    case SizeGuard::Op::Ne: return "!=";
    case SizeGuard::Op::Lt: return "<";
    case SizeGuard::Op::Le: return "<=";
  }
  return "?";
}

}  // namespace

struct SymInt::Node {
  ir::Expr expr;
  std::shared_ptr<SizeGuards> guards;
};

SymInt SymInt::of(const ir::Expr &e, int64_t hint, std::shared_ptr<SizeGuards> guards) {
  SymInt s(hint);
  if (auto c = e.as_constant()) {
    COIL_ASSERT(*c == hint, "the constant size ", *c, " given the hint ", hint);
    return s;
  }
  COIL_ASSERT(guards, "the symbolic size ", ir::str(e), " has no guards to record into");
  s.node_ = std::make_shared<const Node>(Node{e, std::move(guards)});
  return s;
}

ir::Expr SymInt::expr() const { return node_ ? node_->expr : ir::Expr(hint_); }

const std::shared_ptr<SizeGuards> &SymInt::guards() const {
  static const std::shared_ptr<SizeGuards> none;
  return node_ ? node_->guards : none;
}

int64_t SymInt::value() const {
  if (node_) {
    ir::Interval i = node_->guards->bounds(node_->expr);
    if (!(i.lo == hint_ && i.hi == hint_)) record(*node_->guards, node_->expr - ir::Expr(hint_), SizeGuard::Op::Eq);
  }
  return hint_;
}

SymInt at_sizes(const SymInt &s, const std::map<std::string, int64_t> &values) {
  return s.symbolic() ? SymInt(ir::eval(s.expr(), {}, values)) : s;
}

void at_sizes(const SymShape &shape, const std::map<std::string, int64_t> &values, std::vector<int64_t> &out) {
  out.clear();
  for (const SymInt &s : shape) out.push_back(values.empty() ? s.hint() : at_sizes(s, values).hint());
}

std::vector<int64_t> at_sizes(const SymShape &shape, const std::map<std::string, int64_t> &values) {
  std::vector<int64_t> out;
  at_sizes(shape, values, out);
  return out;
}

SymInt sym_of(const ir::Expr &e, const std::shared_ptr<SizeGuards> &guards) {
  if (auto c = e.as_constant()) return SymInt(*c);
  COIL_ASSERT(guards, "a size of symbols without their graph's guards: ", e);
  return SymInt::of(e, ir::eval(e, {}, guards->values()), guards);
}

bool SymInt::same(const SymInt &o) const {
  if (hint_ != o.hint_ || symbolic() != o.symbolic()) return false;
  return !node_ || node_->expr == o.node_->expr;
}

SymInt operator+(const SymInt &a, const SymInt &b) {
  int64_t h = 0;
  check_overflow(__builtin_add_overflow(a.hint(), b.hint(), &h), "a sum");
  if (!a.symbolic() && !b.symbolic()) return h;
  return SymInt::of(a.expr() + b.expr(), h, guards_of(a, b));
}

SymInt operator-(const SymInt &a, const SymInt &b) {
  int64_t h = 0;
  check_overflow(__builtin_sub_overflow(a.hint(), b.hint(), &h), "a difference");
  if (!a.symbolic() && !b.symbolic()) return h;
  return SymInt::of(a.expr() - b.expr(), h, guards_of(a, b));
}

SymInt operator-(const SymInt &a) { return SymInt(int64_t(0)) - a; }

SymInt operator*(const SymInt &a, const SymInt &b) {
  int64_t h = 0;
  check_overflow(__builtin_mul_overflow(a.hint(), b.hint(), &h), "a product");
  if (!a.symbolic() && !b.symbolic()) return h;
  return SymInt::of(a.expr() * b.expr(), h, guards_of(a, b));
}

SymInt &operator+=(SymInt &a, const SymInt &b) { return a = a + b; }
SymInt &operator-=(SymInt &a, const SymInt &b) { return a = a - b; }
SymInt &operator*=(SymInt &a, const SymInt &b) { return a = a * b; }

namespace {

/// Whether 0 <= a < b for every value of the symbols in their ranges (b symbolic).
bool below(const SymInt &a, const SymInt &b) {
  const SizeGuards &g = *guards_of(a, b);
  return g.bounds(a.expr()).lo >= 0 && g.bounds(b.expr() - a.expr()).lo >= 1;
}

}  // namespace

SymInt sym_floor_div(const SymInt &a, const SymInt &b) {
  if (b.symbolic() && below(a, b)) return 0;  // (s0 - 1) // s0
  if (b.symbolic() && b.hint() != 0)
    if (std::optional<ir::Expr> q = ir::exact_quotient(a.expr(), b.expr()))  // s0*s1*64 // s1
      return SymInt::of(*q, a.hint() / b.hint(), b.guards());
  int64_t d = b.value();  // index expressions divide by constants only
  COIL_ASSERT(d != 0, "a size divided by zero");
  if (d < 0) return sym_floor_div(-a, -d);
  int64_t h = floor_div(a.hint(), d);
  return a.symbolic() ? SymInt::of(ir::floor_div(a.expr(), d), h, a.guards()) : SymInt(h);
}

SymInt sym_mod(const SymInt &a, const SymInt &b) {
  if (b.symbolic() && below(a, b)) return a;  // (s0 - 1) % s0
  if (b.symbolic() && ir::exact_quotient(a.expr(), b.expr())) return 0;  // s0*s1*64 % s1
  int64_t d = b.value();
  COIL_ASSERT(d != 0, "a size modulo zero");
  if (d < 0) return -sym_mod(-a, -d);
  int64_t h = floor_mod(a.hint(), d);
  return a.symbolic() ? SymInt::of(ir::mod(a.expr(), d), h, a.guards()) : SymInt(h);
}

SymInt sym_min(const SymInt &a, const SymInt &b) {
  if (!a.symbolic() && !b.symbolic()) return std::min(a.hint(), b.hint());
  ir::Interval i = guards_of(a, b)->bounds(a.expr() - b.expr());
  if (i.hi <= 0) return a;
  if (i.lo >= 0) return b;
  return SymInt::of(ir::min(a.expr(), b.expr()), std::min(a.hint(), b.hint()), guards_of(a, b));
}

bool known_le(const SymInt &a, const SymInt &b) {
  if (!a.symbolic() && !b.symbolic()) return a.hint() <= b.hint();
  return guards_of(a, b)->bounds(b.expr() - a.expr()).lo >= 0;
}

SymInt sym_max(const SymInt &a, const SymInt &b) {
  if (!a.symbolic() && !b.symbolic()) return std::max(a.hint(), b.hint());
  ir::Interval i = guards_of(a, b)->bounds(a.expr() - b.expr());
  if (i.lo >= 0) return a;
  if (i.hi <= 0) return b;
  return SymInt::of(ir::max(a.expr(), b.expr()), std::max(a.hint(), b.hint()), guards_of(a, b));
}

bool operator==(const SymInt &a, const SymInt &b) { return decide(a, b, SizeGuard::Op::Eq); }
bool operator!=(const SymInt &a, const SymInt &b) { return decide(a, b, SizeGuard::Op::Ne); }
bool operator<(const SymInt &a, const SymInt &b) { return decide(a, b, SizeGuard::Op::Lt); }
bool operator<=(const SymInt &a, const SymInt &b) { return decide(a, b, SizeGuard::Op::Le); }
bool operator>(const SymInt &a, const SymInt &b) { return decide(b, a, SizeGuard::Op::Lt); }
bool operator>=(const SymInt &a, const SymInt &b) { return decide(b, a, SizeGuard::Op::Le); }

std::string str(const SymInt &s) { return s.symbolic() ? ir::str(s.expr()) : std::to_string(s.hint()); }
std::ostream &operator<<(std::ostream &os, const SymInt &s) { return os << str(s); }

SymShape::operator std::vector<int64_t>() const { return values(*this); }

std::vector<int64_t> hints(const SymShape &shape) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const SymInt &s : shape) out.push_back(s.hint());
  return out;
}

std::vector<int64_t> values(const SymShape &shape) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const SymInt &s : shape) out.push_back(s.value());
  return out;
}

bool operator==(const SymShape &a, const SymShape &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

bool operator==(const SymShape &a, const std::vector<int64_t> &b) { return a == SymShape(b); }

bool symbolic(const SymShape &shape) {
  return std::any_of(shape.begin(), shape.end(), [](const SymInt &s) { return s.symbolic(); });
}

bool same(const SymShape &a, const SymShape &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same(b[i])) return false;
  return true;
}

// ---------------------------------------------------------------------------------------
// Guards.

bool SizeGuard::holds(const std::map<std::string, int64_t> &values) const {
  int64_t v = ir::eval(expr, {}, values);
  switch (op) {
    case Op::Eq: return v == 0;
    case Op::Ne: return v != 0;
    case Op::Lt: return v < 0;
    case Op::Le: return v <= 0;
  }
  return false;
}

std::string SizeGuard::str() const {
  // `s0 - 8 == 0` reads better as `s0 == 8`, and `2 - s0 <= 0` as `s0 >= 2`: the constant
  // moves across, and a side of negative terms only is negated.
  bool negate = std::all_of(expr.terms().begin(), expr.terms().end(), [](const ir::Term &t) { return t.coeff < 0; });
  ir::Expr e = negate ? -expr : expr;
  std::string text = op_text(op);
  if (negate && op == Op::Lt) text = ">";
  if (negate && op == Op::Le) text = ">=";
  return ir::str(e - ir::Expr(e.constant())) + " " + text + " " + std::to_string(-e.constant());
}

std::string SizeGuard::explained() const { return str() + " (" + (why.empty() ? "?" : why) + ")"; }

std::string sizes_refused(std::string_view given, std::string_view check) {
  return str_cat("the compiled graph does not serve the sizes ", given, ": it needs ", check);
}

ir::Ranges SizeGuards::default_ranges() {
  ir::Ranges r;
  r.set_symbol_floor(2);  // PyTorch specializes sizes 0 and 1 unless told otherwise
  return r;
}

void SizeGuards::set_range(const std::string &symbol, int64_t lo, int64_t hi) { ranges_.set_symbol(symbol, lo, hi); }

void SizeGuards::add_symbol(const std::string &symbol, int64_t value) {
  values_.emplace(symbol, value);
  ir::Interval r = range_of(symbol);
  if (value < r.lo) set_range(symbol, std::max<int64_t>(value, 0), r.hi);
}

void SizeGuards::bound(const SymbolBound &b, const std::string &why) {
  ir::Interval r = range_of(b.symbol);
  ir::Expr s = ir::Expr::symbol(b.symbol);
  if (b.lo) {
    r.lo = std::max<int64_t>(*b.lo, 0);
    add(SizeGuard{ir::Expr(*b.lo) - s, SizeGuard::Op::Le, why});
  }
  if (b.hi) {
    r.hi = std::min(r.hi, *b.hi);
    add(SizeGuard{s - ir::Expr(*b.hi), SizeGuard::Op::Le, why});
  }
  if (r.lo <= r.hi) set_range(b.symbol, r.lo, r.hi);
}

ir::Interval SizeGuards::range_of(const std::string &symbol) const {
  auto [lo, hi] = ranges_.symbol_range(symbol);
  return {lo, hi};
}

void SizeGuards::add(SizeGuard g) {
  for (const SizeGuard &h : guards_)
    if (h.op == g.op && h.expr == g.expr) return;
  if (sealed_) throw InternalError(str_cat("the guard ", g.explained(), " was recorded after the compiled code was generated"));
  guards_.push_back(std::move(g));
}

void SizeGuards::fix(const std::set<std::string> &symbols, std::string_view why) {
  for (const std::string &s : symbols) {
    auto it = values_.find(s);
    COIL_ASSERT(it != values_.end(), "symbol ", s, " was read without a value");
    add(SizeGuard{ir::Expr::symbol(s) - it->second, SizeGuard::Op::Eq, std::string(why)});
  }
}

std::map<std::string, int64_t> SizeGuards::specialized(const std::map<std::string, int64_t> &hints) const {
  std::map<std::string, int64_t> out;
  for (const SizeGuard &g : guards_) {
    if (g.op != SizeGuard::Op::Eq) continue;
    for (const ir::Term &t : g.expr.terms())
      for (const ir::Atom &a : t.factors)
        if (a.kind() == ir::AtomKind::Symbol)
          if (auto it = hints.find(a.symbol()); it != hints.end()) out[a.symbol()] = it->second;
  }
  return out;
}

std::vector<SizeGuard> SizeGuards::checks() const {
  std::vector<SizeGuard> out;
  for (const auto &[symbol, value] : values_) {
    ir::Interval r = range_of(symbol);
    ir::Expr s = ir::Expr::symbol(symbol);
    std::string why = "the range of " + symbol + " that the compiled code assumes";
    if (r.lo != ir::Interval::kNoLower) out.push_back({ir::Expr(r.lo) - s, SizeGuard::Op::Le, why});
    if (r.hi != ir::Interval::kNoUpper) out.push_back({s - ir::Expr(r.hi), SizeGuard::Op::Le, why});
  }
  out.insert(out.end(), guards_.begin(), guards_.end());
  return out;
}

std::optional<SizeGuard> SizeGuards::first_failing(const std::map<std::string, int64_t> &values) const {
  for (const SizeGuard &g : checks())
    if (!g.holds(values)) return g;
  return std::nullopt;
}

GuardActivity::GuardActivity(std::string_view what, std::string_view node, std::string_view op)
    : previous_(std::exchange(active, this)), what_(what), node_(node), op_(op) {}
GuardActivity::~GuardActivity() { active = previous_; }

std::string GuardActivity::current() {
  if (!active) return "";
  std::string out(active->what_);
  if (!active->node_.empty()) out += str_cat(" ", active->node_);
  if (!active->op_.empty()) out += str_cat(" (", active->op_, ")");
  return out;
}

}  // namespace coil
