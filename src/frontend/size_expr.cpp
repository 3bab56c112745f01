#include "frontend/size_expr.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <type_traits>

#include "frontend/lexer.h"
#include "support/python_repr.h"

namespace coil::frontend {
namespace {

bool name_start(char c) { return std::isalpha(uint8_t(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(uint8_t(c)) || c == '_'; }

int64_t hint_of(int64_t v) { return v; }
int64_t hint_of(const SymInt &v) { return v.hint(); }

// Reads one expression by recursive descent, with Python's precedence:
// or < and < comparison < + - < * / // % < unary - < **. V is int64_t (its value) or
// SymInt (its value and its expression in the symbols, graph/sym_int.h): every operation
// checks the values, for errors that point into the text, then computes a V.
template <typename V>
class SizeExprReader {
 public:
  SizeExprReader(std::string_view s, const SizeValues &values, const SourceLoc &loc,
                 std::shared_ptr<SizeGuards> guards = nullptr)
      : s_(s), values_(values), loc_(loc), guards_(std::move(guards)) {}

  V read() {
    V v = disjunction();
    skip_spaces();
    if (pos_ < s_.size()) fail(pos_, str_cat("unexpected '", s_.substr(pos_, 1), "' in size expression '", s_, "'"));
    return v;
  }

 private:
  static V truth(bool b) { return V(int64_t(b)); }

  V disjunction() {
    V v = conjunction();
    while (accept("|")) {
      bool rhs = conjunction() != 0;
      v = truth(rhs || v != 0);
    }
    return v;
  }

  V conjunction() {
    V v = comparison();
    while (accept("&")) {
      bool rhs = comparison() != 0;
      v = truth(rhs && v != 0);
    }
    return v;
  }

  V comparison() {
    V a = sum();
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (!accept(op)) continue;
      V b = sum();
      if (op == "==") return truth(a == b);
      if (op == "!=") return truth(a != b);
      if (op == "<=") return truth(a <= b);
      if (op == ">=") return truth(a >= b);
      if (op == "<") return truth(a < b);
      return truth(a > b);
    }
    return a;
  }

  V sum() {
    V v = product();
    while (true) {
      size_t at = pos_;
      if (accept("+")) {
        v = add(at, v, product());
      } else if (accept("-")) {
        v = sub(at, v, product());
      } else {
        return v;
      }
    }
  }

  V product() {
    V v = unary();
    while (true) {
      size_t at = pos_;
      if (accept("**")) {  // binds tighter than *: handled in power(); here it is misplaced
        fail(at, "unexpected '**'");
      } else if (accept("*")) {
        v = mul(at, v, unary());
      } else if (accept("//")) {
        v = floor_div(at, v, unary());
      } else if (accept("/")) {
        v = exact_div(at, v, unary());
      } else if (accept("%")) {
        v = python_mod(at, v, unary());
      } else {
        return v;
      }
    }
  }

  V unary() {
    size_t at = pos_;
    if (accept("-")) {
      V v = unary();
      return sub(at, V(int64_t(0)), v);
    }
    if (accept("+")) return unary();
    return power();
  }

  V power() {
    V base = primary();
    size_t at = pos_;
    if (!accept("**")) return base;
    return pow(at, base, unary());
  }

  V primary() {
    skip_spaces();
    size_t at = pos_;
    if (pos_ >= s_.size()) fail(at, str_cat("size expression '", s_, "' ends early"));
    if (accept("(")) {
      V v = disjunction();
      expect(")");
      return v;
    }
    if (std::isdigit(uint8_t(s_[pos_]))) {
      while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
      auto v = parse_python_int(s_.substr(at, pos_ - at));
      if (!v) fail(at, str_cat("invalid integer '", s_.substr(at, pos_ - at), "' in size expression"));
      return V(*v);
    }
    if (!name_start(s_[pos_])) fail(at, str_cat("unexpected '", s_.substr(pos_, 1), "' in size expression '", s_, "'"));
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    std::string name(s_.substr(at, pos_ - at));
    if (accept("(")) return call(at, name);
    if (name == "True" || name == "true") return truth(true);
    if (name == "False" || name == "false") return truth(false);
    auto it = values_.find(name);
    if (it == values_.end()) {
      bool unbacked = name.size() > 1 && name[0] == 'u' && std::isdigit(uint8_t(name[1]));
      fail(at, unbacked ? str_cat("size '", name, "' is known only when the graph runs (a data-dependent size, as from "
                                  ".item() or nonzero); coil compiles graphs whose sizes follow from their inputs'")
                        : str_cat("symbolic size '", name, "' has no value (",
                                  values_.empty() ? std::string("none given: ") + kHowSizesAreGiven
                                                  : "given: " + size_values_str(values_),
                                  ")"));
    }
    if constexpr (std::is_same_v<V, SymInt>) {
      guards_->add_symbol(name, it->second);
      return SymInt::of(ir::Expr::symbol(name), it->second, guards_);
    }
    else return it->second;
  }

  // The functions sympy and PyTorch's printer write into size expressions.
  V call(size_t at, const std::string &name) {
    std::vector<V> a;
    if (!accept(")")) {
      do a.push_back(disjunction());
      while (accept(","));
      expect(")");
    }
    auto arity = [&](size_t n) {
      if (a.size() != n) fail(at, str_cat(name, "() takes ", n, " arguments in a size expression, not ", a.size()));
    };
    if (name == "Max" || name == "Min" || name == "sym_max" || name == "sym_min") {
      if (a.empty()) fail(at, str_cat(name, "() of nothing"));
      V v = a[0];
      bool is_max = name == "Max" || name == "sym_max";
      for (const V &x : a) v = is_max ? maximum(v, x) : minimum(v, x);
      return v;
    }
    if (name == "floor" || name == "ceiling" || name == "FloorToInt" || name == "CeilToInt" || name == "TruncToInt" ||
        name == "Identity" || name == "Integer") {
      arity(1);
      return a[0];  // of an integer, each is the integer
    }
    if (name == "Abs") {
      arity(1);
      return a[0] < 0 ? sub(at, V(int64_t(0)), a[0]) : a[0];
    }
    if (name == "Not") {
      arity(1);
      return truth(a[0] == 0);
    }
    if (name == "Eq" || name == "Ne" || name == "Ge" || name == "Gt" || name == "Le" || name == "Lt") {
      arity(2);
      if (name == "Eq") return truth(a[0] == a[1]);
      if (name == "Ne") return truth(a[0] != a[1]);
      if (name == "Ge") return truth(a[0] >= a[1]);
      if (name == "Gt") return truth(a[0] > a[1]);
      if (name == "Le") return truth(a[0] <= a[1]);
      return truth(a[0] < a[1]);
    }
    if (name == "And" || name == "Or") {
      bool v = name == "And";
      for (const V &x : a) v = name == "And" ? (v && x != 0) : (v || x != 0);
      return truth(v);
    }
    if (name == "FloorDiv") {
      arity(2);
      return floor_div(at, a[0], a[1]);
    }
    if (name == "CeilDiv") {
      arity(2);
      if (hint_of(a[1]) == 0) fail(at, "division by zero in a size expression");
      return sub(at, V(int64_t(0)), floor_div(at, sub(at, V(int64_t(0)), a[0]), a[1]));
    }
    if (name == "IntTrueDiv" || name == "CleanDiv") {
      arity(2);
      return exact_div(at, a[0], a[1]);
    }
    if (name == "Mod" || name == "PythonMod") {
      arity(2);
      return python_mod(at, a[0], a[1]);
    }
    if (name == "ModularIndexing") {
      arity(3);
      return python_mod(at, floor_div(at, a[0], a[1]), a[2]);
    }
    if (name == "Pow" || name == "PowByNatural") {
      arity(2);
      return pow(at, a[0], a[1]);
    }
    fail(at, str_cat("unknown function '", name, "' in size expression '", s_, "'"));
  }

  static V maximum(const V &a, const V &b) {
    if constexpr (std::is_same_v<V, SymInt>) return sym_max(a, b);
    else return std::max(a, b);
  }
  static V minimum(const V &a, const V &b) {
    if constexpr (std::is_same_v<V, SymInt>) return sym_min(a, b);
    else return std::min(a, b);
  }

  // base**exponent; a base other than 0 and +-1 overflows within 63 products. A symbolic
  // exponent is specialized.
  V pow(size_t at, const V &base, const V &exponent) {
    int64_t e = int64_t(exponent);
    if (e < 0) fail(at, "a negative power in a size expression");
    if (base == 0 || base == 1) return e == 0 ? V(int64_t(1)) : base;
    if (base == -1) return V(int64_t(e % 2 ? -1 : 1));
    V v = int64_t(1);
    for (int64_t i = 0; i < e; ++i) v = mul(at, v, base);
    return v;
  }

  V floor_div(size_t at, const V &a, const V &b) {
    int64_t q = floor_div_values(at, hint_of(a), hint_of(b));
    if constexpr (std::is_same_v<V, SymInt>) return sym_floor_div(a, b);
    else return q;
  }

  int64_t floor_div_values(size_t at, int64_t a, int64_t b) {
    if (b == 0) fail(at, "division by zero in a size expression");
    if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow(at);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) --q;
    return q;
  }

  V exact_div(size_t at, const V &a, const V &b) {
    int64_t q = floor_div_values(at, hint_of(a), hint_of(b));
    if (q * hint_of(b) != hint_of(a))
      fail(at, str_cat(hint_of(a), "/", hint_of(b), " in size expression '", s_, "' is not an integer"));
    return floor_div(at, a, b);
  }

  V python_mod(size_t at, const V &a, const V &b) {
    if (hint_of(b) == 0) fail(at, "modulo by zero in a size expression");
    if constexpr (std::is_same_v<V, SymInt>) {
      return sym_mod(a, b);
    } else {
      if (b == -1) return 0;
      int64_t r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }

  V add(size_t at, const V &a, const V &b) {
    int64_t r;
    if (__builtin_add_overflow(hint_of(a), hint_of(b), &r)) overflow(at);
    return a + b;
  }
  V sub(size_t at, const V &a, const V &b) {
    int64_t r;
    if (__builtin_sub_overflow(hint_of(a), hint_of(b), &r)) overflow(at);
    return a - b;
  }
  V mul(size_t at, const V &a, const V &b) {
    int64_t r;
    if (__builtin_mul_overflow(hint_of(a), hint_of(b), &r)) overflow(at);
    return a * b;
  }
  [[noreturn]] void overflow(size_t at) const { fail(at, str_cat("size expression '", s_, "' overflows 64 bits")); }

  bool accept(std::string_view op) {
    skip_spaces();
    if (s_.substr(pos_, op.size()) != op) return false;
    // '*' is not '**', '/' is not '//', '<' is not '<='.
    if ((op == "*" || op == "/") && pos_ + 1 < s_.size() && s_[pos_ + 1] == op[0]) return false;
    if ((op == "<" || op == ">") && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=') return false;
    pos_ += op.size();
    return true;
  }

  void expect(std::string_view op) {
    if (!accept(op)) fail(pos_, str_cat("expected '", op, "' in size expression '", s_, "'"));
  }

  void skip_spaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }

  [[noreturn]] void fail(size_t offset, const std::string &msg) const {
    SourceLoc at = loc_;
    if (at.known()) at.col += int(offset);
    throw UserError(msg, at);
  }

  std::string_view s_;
  const SizeValues &values_;
  SourceLoc loc_;
  std::shared_ptr<SizeGuards> guards_;
  size_t pos_ = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The size expressions of an annotation's first bracket, `f32[s0, 2*s1][...]`: each with
// its offset in the annotation.
std::vector<std::pair<std::string_view, size_t>> size_list(std::string_view ann) {
  std::vector<std::pair<std::string_view, size_t>> out;
  size_t open = ann.find('[');
  if (open == std::string_view::npos) return out;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i < ann.size(); ++i) {
    char c = ann[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == ']')) {
      std::string_view item = trim(ann.substr(start, i - start));
      if (!item.empty()) out.emplace_back(item, size_t(item.data() - ann.data()));
      start = i + 1;
      if (c == ']') break;
    }
  }
  return out;
}

}  // namespace

int64_t eval_size_expr(std::string_view text, const SizeValues &values, const SourceLoc &loc) {
  return SizeExprReader<int64_t>(text, values, loc).read();
}

SymInt read_size_expr(std::string_view text, const SizeValues &values, const SourceLoc &loc,
                      const std::shared_ptr<SizeGuards> &guards) {
  return SizeExprReader<SymInt>(text, values, loc, guards).read();
}

std::optional<SymbolBound> symbol_bound(std::string_view text) {
  text = trim(text);
  for (std::string_view op : {">=", "<=", ">", "<"}) {
    size_t at = text.find(op);
    if (at == std::string_view::npos) continue;
    std::string_view lhs = trim(text.substr(0, at)), rhs = trim(text.substr(at + op.size()));
    auto is_symbol = [](std::string_view s) {
      auto names = symbols_in(s);
      return names.size() == 1 && names[0] == s;
    };
    bool symbol_left = is_symbol(lhs);
    std::optional<int64_t> k = parse_python_int(symbol_left ? rhs : lhs);
    if (!k || !(symbol_left ? is_symbol(lhs) : is_symbol(rhs))) return std::nullopt;
    // As `symbol OP k`: mirror the operator when the symbol is on the right.
    bool greater = (op[0] == '>') == symbol_left, strict = op.size() == 1;
    SymbolBound b{std::string(symbol_left ? lhs : rhs), std::nullopt, std::nullopt};
    if (greater) b.lo = strict ? *k + 1 : *k;
    else b.hi = strict ? *k - 1 : *k;
    return b;
  }
  return std::nullopt;
}

std::vector<std::string> symbols_in(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (!name_start(text[i]) || (i > 0 && name_char(text[i - 1]))) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && name_char(text[i])) ++i;
    std::string name(text.substr(start, i - start));
    size_t after = i;
    while (after < text.size() && text[after] == ' ') ++after;
    bool function = after < text.size() && text[after] == '(';
    if (function || name == "True" || name == "False" || name == "true" || name == "false") continue;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

bool is_sym_annotation(std::string_view text, std::string_view *inner) {
  if (text.size() < 5 || text.substr(0, 4) != "Sym(" || text.back() != ')') return false;
  if (inner) *inner = text.substr(4, text.size() - 5);
  return true;
}

std::vector<InputDecl> declared_inputs(std::string_view text, const std::string &filename) {
  std::vector<Token> toks = tokenize(text, filename);
  std::vector<InputDecl> out;
  size_t i = 0;
  auto is = [&](size_t k, Tok kind, std::string_view s) {
    return k < toks.size() && toks[k].kind == kind && toks[k].text == s;
  };
  while (i + 2 < toks.size() && !(is(i, Tok::Name, "def") && is(i + 1, Tok::Name, "forward") && is(i + 2, Tok::Punct, "(")))
    ++i;
  for (i += 3; i < toks.size() && !is(i, Tok::Punct, ")"); ++i) {
    if (toks[i].kind == Tok::Name && is(i + 1, Tok::Punct, ":") && i + 2 < toks.size() && toks[i + 2].kind == Tok::String) {
      const Token &ann = toks[i + 2];
      out.push_back({toks[i].text, ann.text, SourceLoc{ann.loc.file, ann.loc.line, ann.loc.col + 1}});
      i += 2;
    }
  }
  return out;
}

SizeValues bind_sizes(const std::vector<InputDecl> &inputs,
                      const std::function<std::optional<Shape>(const std::string &)> &shape_of) {
  SizeValues values;
  std::map<std::string, std::string> bound_by;  // symbol -> "input 'x' dim 0"
  for (const InputDecl &in : inputs) {
    if (is_sym_annotation(in.annotation)) continue;
    auto sizes = size_list(in.annotation);
    std::optional<Shape> shape;
    for (size_t d = 0; d < sizes.size(); ++d) {
      auto [expr, offset] = sizes[d];
      auto symbols = symbols_in(expr);
      if (symbols.size() != 1 || symbols[0] != expr) continue;  // a number or a compound: checked later
      if (!shape) shape = shape_of(in.name);
      if (!shape || shape->size() != sizes.size()) break;  // the input's own check names what is wrong
      std::string where = str_cat("input '", in.name, "' dim ", d);
      auto [it, fresh] = values.emplace(symbols[0], (*shape)[d]);
      if (!fresh && it->second != (*shape)[d]) {
        SourceLoc at = in.loc;
        if (at.known()) at.col += int(offset);
        throw UserError(str_cat("symbolic size ", symbols[0], " is ", it->second, " by ", bound_by[symbols[0]],
                                " but ", (*shape)[d], " by ", where),
                        at);
      }
      bound_by.emplace(symbols[0], where);
    }
  }
  for (const InputDecl &in : inputs) {
    // The symbols of a Sym(...) annotation, or of a tensor's sizes and strides (not its
    // dtype or device).
    std::string_view exprs = in.annotation;
    if (!is_sym_annotation(in.annotation, &exprs)) {
      size_t open = exprs.find('['), close = exprs.rfind(']');
      exprs = open == std::string_view::npos || close < open ? std::string_view() : exprs.substr(open, close - open);
    }
    for (const std::string &s : symbols_in(exprs))
      if (!values.count(s))
        throw UserError(str_cat("symbolic size ", s, " of input '", in.name, "' (", in.annotation,
                                ") is no input's dim: its value cannot be read from the inputs' shapes"),
                        in.loc);
  }
  return values;
}

std::string size_values_str(const SizeValues &values) {
  std::string out;
  for (const auto &[name, v] : values) out += str_cat(out.empty() ? "" : ", ", name, "=", v);
  return out;
}

}  // namespace coil::frontend
