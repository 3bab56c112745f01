#include "frontend/parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "frontend/lexer.h"
#include "frontend/size_expr.h"
#include "support/python_repr.h"
#include "graph/core_aten.h"
#include "graph/registry.h"
#include "graph/strides.h"
#include "support/files.h"

namespace coil::frontend {
namespace {

constexpr int kMaxNesting = 64;  // nested lists and tuples in arguments and returns

std::string describe(const Token &t) {
  switch (t.kind) {
    case Tok::Newline: return "end of line";
    case Tok::End: return "end of file";
    case Tok::String: return "string " + python_str_repr(t.text);
    case Tok::Name:
    case Tok::Int:
    case Tok::Float:
    case Tok::Punct: return "'" + t.text + "'";
  }
  return "?";
}

// What a name in the forward body is bound to.
struct Binding {
  enum class Kind { Tensor, Tuple, Nothing, Size };
  Kind kind;
  ValueId value;     // Tensor
  int node = -1;     // Tuple and Nothing: the node whose result the name holds
  SymInt size;       // Size: a symbolic size (an input "Sym(s0)", a node "Sym(2*s0)")
  std::string size_expr;  // Size: its annotation's expression, `s0 >= 2` for a condition
};

class Parser {
 public:
  Parser(std::string_view text, const std::string &filename, const SizeValues *sizes)
      : file_(filename), toks_(tokenize(text, filename)), sizes_(sizes),
        guards_(sizes ? std::make_shared<SizeGuards>() : nullptr) {}

  Graph run() {
    bool wrapped = accept_name("ExportedProgram");
    if (wrapped) {
      expect_punct(":");
      expect_newline();
    }
    module_header();
    forward_header();
    while (!at_name("return")) {
      if (peek().kind == Tok::End) fail(peek(), "forward ends without a return statement");
      statement();
    }
    output();
    if (!wrapped) {
      if (at_name("class")) fail(peek(), "a graph with submodules is not supported; expected one forward");
      if (peek().kind != Tok::End) fail(peek(), str_cat("expected end of file after return, found ", describe(peek())));
    }
    return builder_.finish();
  }

 private:
  // class GraphModule(torch.nn.Module):
  void module_header() {
    expect_name("class", "a graph module starting with 'class'");
    expect_kind(Tok::Name, "a class name");
    if (accept_punct("(")) {
      dotted_name();
      expect_punct(")");
    }
    expect_punct(":");
    expect_newline();
  }

  // def forward(self, a_0: "f32[4][1]cpu", ...):
  void forward_header() {
    expect_name("def", "'def forward'");
    expect_name("forward", "'def forward'");
    expect_punct("(");
    expect_name("self", "'self' as the first parameter of forward");
    while (accept_punct(",")) {
      if (at_punct(")")) break;
      parameter();
    }
    expect_punct(")");
    if (accept_punct("->")) skip_to(":");
    expect_punct(":");
    expect_newline();
  }

  void parameter() {
    const Token &name = expect_kind(Tok::Name, "a parameter name");
    if (!at_punct(":")) fail(peek(), str_cat("input '", name.text, "' needs a type annotation such as \"f32[4, 4]\""));
    next();
    const Token &ann = expect_kind(Tok::String, "a type annotation string");
    std::string_view expr;
    if (is_sym_annotation(ann.text, &expr)) {  // a size the caller passes: its value is given
      define(name, Binding{Binding::Kind::Size, {}, -1, size_value(ann, expr), std::string(expr)});
      return;
    }
    TensorType type = input_type(ann);
    define(name, Binding{Binding::Kind::Tensor, builder_.add_input(name.text, type, name.loc), -1, {}});
  }

  // A SymInt: its annotation's expression (`Sym(2*s0)`), with its value at the given sizes.
  SymInt size_value(const Token &ann, std::string_view expr) {
    SourceLoc at = inside(ann);
    at.col += 4;  // "Sym("
    if (!sizes_)
      fail(ann, str_cat("symbolic size ", ann.text, ": this graph has symbolic sizes, and coil compiles it for their "
                        "values (", kHowSizesAreGiven, ")"));
    return read_size_expr(expr, *sizes_, at, guards_);
  }

  // name: "Sym(...)" = <anything>: a size computed from sizes (arg0_1 * 2,
  // torch.ops.aten.sym_size.int(x, 0)), which its annotation states; the rest of the line
  // is not read.
  void size_statement(const Token &name, const Token &ann, std::string_view expr) {
    define(name, Binding{Binding::Kind::Size, {}, -1, size_value(ann, expr), std::string(expr)});
    while (peek().kind != Tok::Newline && peek().kind != Tok::End) next();
  }

  // torch.ops.aten._assert_scalar.default(ge, "Runtime assertion failed for expression ...")
  // on sizes: checked now, for the given sizes; it leaves no node. A bound on one symbol
  // (`s0 >= 2`, `s0 <= 64`, as torch.export's Dims state them) becomes its range and a
  // guard, which a compiled graph checks at each call.
  void size_assertion(const Token &start) {
    expect_punct("(");
    if (peek().kind == Tok::Name && names_.count(peek().text)) {
      const Binding &b = names_.at(peek().text);
      if (b.kind == Binding::Kind::Size)
        if (auto bound = symbol_bound(b.size_expr)) guards_->bound(*bound, str_cat("the graph's assertion ", peek().text));
    }
    Arg cond = argument(0);
    std::string message = "a size assertion failed";
    if (accept_punct(",")) message = expect_kind(Tok::String, "the assertion's message").text;
    accept_punct(",");
    expect_punct(")");
    if (!cond.is_int() && !cond.is<bool>())
      fail(start, "_assert_scalar takes a size condition; coil checks assertions on sizes only");
    if (cond.number() == 0)
      fail(start, str_cat(message, " (sizes ", size_values_str(*sizes_), ")"));
  }

  // name[: "type"] = rhs[;  a = b = None]
  void statement() {
    const Token &name = expect_kind(Tok::Name, "a statement");
    const Token *ann = nullptr;
    if (accept_punct(":")) ann = &expect_kind(Tok::String, "a type annotation string");
    expect_punct("=");
    std::string_view size_expr;
    if (ann && is_sym_annotation(ann->text, &size_expr)) {
      size_statement(name, *ann, size_expr);
    } else if (at_name("self")) {
      constant(name, ann);
    } else if (at_name("torch")) {
      call(name, ann);
    } else if (at_name("operator")) {
      operator_getitem(name, ann);
    } else if (peek().kind == Tok::Name && (peek_at(1).kind == Tok::Newline || peek_at(1).kind == Tok::End ||
                                            (peek_at(1).kind == Tok::Punct && peek_at(1).text == ";"))) {
      alias(name, ann);
    } else {
      getitem(name, ann);
    }
    while (accept_punct(";")) cleanup();
    expect_newline();
  }

  // _tensor_constant0: "f32[4][1]cpu" = self._tensor_constant0
  void constant(const Token &name, const Token *ann) {
    next();
    expect_punct(".");
    std::string attr = dotted_name();
    if (!ann) fail(name, str_cat("constant '", name.text, "' (self.", attr, ") needs a type annotation"));
    TensorType type = input_type(*ann);
    define(name, Binding{Binding::Kind::Tensor, builder_.add_constant(name.text, type, name.loc)});
  }

  // name = torch.ops.aten.add.Tensor(x, y, alpha = 2)
  void call(const Token &name, const Token *ann) {
    const Token &start = peek();
    std::vector<std::string> parts;
    parts.push_back(next().text);
    while (accept_punct(".")) parts.push_back(expect_kind(Tok::Name, "an op name").text);
    if (parts.size() != 5 || parts[1] != "ops")
      fail(start, str_cat("expected an op as torch.ops.<namespace>.<op>.<overload>, found ", join(parts)));
    std::string target = parts[2] + "." + parts[3] + "." + parts[4];
    if (sizes_ && target == "aten._assert_scalar.default") {
      size_assertion(start);
      define(name, Binding{Binding::Kind::Nothing, {}, -1});
      return;
    }
    const OpDef *op = Registry::get().find(target);
    if (!op) fail(start, unknown_op(parts[2], parts[3], target));

    expect_punct("(");
    std::vector<Arg> positional;
    std::vector<std::pair<std::string, Arg>> keywords;
    while (!accept_punct(")")) {
      if (!positional.empty() || !keywords.empty()) {
        expect_punct(",");
        if (accept_punct(")")) break;
      }
      if (peek().kind == Tok::Name && peek_at(1).kind == Tok::Punct && peek_at(1).text == "=") {
        std::string key = next().text;
        next();
        keywords.emplace_back(key, argument(0));
      } else {
        if (!keywords.empty()) fail(peek(), "positional argument after keyword arguments");
        positional.push_back(argument(0));
      }
    }
    int node = builder_.add_node(name.text, *op, std::move(positional), std::move(keywords), name.loc);
    const Node &n = builder_.graph().nodes()[size_t(node)];
    if (!n.multi_output()) {
      if (ann) check_annotation(*ann, node, 0);
      define(name, Binding{Binding::Kind::Tensor, n.outputs[0], node});
      return;
    }
    if (ann) fail(*ann, str_cat("node '", name.text, "' (", target, ") returns ", n.outputs.size(),
                                " values; annotate its items (", name.text, "[i]), not the tuple"));
    define(name, Binding{n.outputs.empty() ? Binding::Kind::Nothing : Binding::Kind::Tuple, {}, node});
  }

  // input_1 = input: another name for a value (export writes one for an input named like a
  // Python builtin).
  void alias(const Token &name, const Token *ann) {
    const Token &of = next();
    Binding b = lookup(of);
    if (ann && b.kind == Binding::Kind::Tensor) {
      TensorType want = parse_annotation(ann->text, inside(*ann), sizes_, guards_).type;
      const TensorType &actual = builder_.graph().type(b.value);
      if (want.dtype != actual.dtype || want.sizes != actual.sizes)
        fail(*ann, str_cat("'", name.text, "' = '", of.text, "': annotation says ", ann->text, " but '", of.text, "' is ",
                           actual.str()));
    }
    define(name, b);
  }

  // getitem = var_mean[1]
  void getitem(const Token &name, const Token *ann) {
    const Token &base = expect_kind(Tok::Name, "an op call, a getitem or self.<attr>");
    expect_punct("[");
    int64_t index = integer_literal();
    expect_punct("]");
    bind_item(name, ann, base, index);
  }

  // getitem = operator.getitem(var_mean, 1)
  void operator_getitem(const Token &name, const Token *ann) {
    next();
    expect_punct(".");
    expect_name("getitem", "operator.getitem");
    expect_punct("(");
    const Token &base = expect_kind(Tok::Name, "a tuple name");
    expect_punct(",");
    int64_t index = integer_literal();
    expect_punct(")");
    bind_item(name, ann, base, index);
  }

  void bind_item(const Token &name, const Token *ann, const Token &base, int64_t index) {
    const Binding &b = lookup(base);
    if (b.kind != Binding::Kind::Tuple)
      fail(base, str_cat("'", base.text, "' is not a tuple of tensors; only outputs of multi-output ops can be indexed"));
    ValueId id = builder_.name_output(b.node, index, name.text, base.loc);
    if (ann) check_annotation(*ann, b.node, index);
    define(name, Binding{Binding::Kind::Tensor, id, b.node});
  }

  // a = b = None
  void cleanup() {
    do {
      const Token &t = expect_kind(Tok::Name, "a name to clear");
      if (t.text == "None") return;
      if (!names_.count(t.text)) fail(t, str_cat("undefined name '", t.text, "'"));
    } while (accept_punct("="));
    fail(peek(), str_cat("expected '= None' in a clean-up, found ", describe(peek())));
  }

  // return (a, (b, None))
  void output() {
    next();
    OutputTree tree = output_item(0);
    builder_.set_outputs(std::move(tree));
    expect_newline();
  }

  OutputTree output_item(int depth) {
    if (depth > kMaxNesting) fail(peek(), "return value nested too deeply");
    if (accept_name("None")) return OutputTree{OutputTree::Kind::None, {}, {}};
    if (at_punct("(") || at_punct("[")) {
      std::string close = next().text == "(" ? ")" : "]";
      OutputTree tuple{OutputTree::Kind::Tuple, {}, {}};
      while (!accept_punct(close)) {
        if (!tuple.items.empty()) {
          expect_punct(",");
          if (accept_punct(close)) break;
        }
        tuple.items.push_back(output_item(depth + 1));
      }
      return tuple;
    }
    const Token &t = expect_kind(Tok::Name, "a returned value");
    const Binding &b = lookup(t);
    if (b.kind == Binding::Kind::Size)
      fail(t, str_cat("'", t.text, "' is a size (", b.size, "), not a tensor; coil's graphs return tensors"));
    if (b.kind != Binding::Kind::Tensor) fail(t, str_cat("'", t.text, "' is not a tensor; return its items"));
    return OutputTree{OutputTree::Kind::Value, b.value, {}};
  }

  Arg argument(int depth) {
    if (depth > kMaxNesting) fail(peek(), "argument nested too deeply");
    const Token &t = peek();
    SourceLoc loc = t.loc;
    if (accept_punct("-")) return negative(loc);
    switch (t.kind) {
      case Tok::Int: return Arg(integer_literal(), loc);
      case Tok::Float: return Arg(float_literal(), loc);
      case Tok::String: return Arg(next().text, loc);
      case Tok::Punct:
        if (t.text == "[" || t.text == "(") return sequence(depth);
        fail(t, str_cat("expected an argument, found ", describe(t)));
      case Tok::Name: return named_argument(depth);
      case Tok::Newline:
      case Tok::End: break;
    }
    fail(t, str_cat("expected an argument, found ", describe(t)));
  }

  Arg negative(const SourceLoc &loc) {
    const Token &t = peek();
    if (t.kind == Tok::Int) {
      // -9223372036854775808 is the one int whose magnitude does not fit.
      if (t.text == "9223372036854775808") {
        next();
        return Arg(std::numeric_limits<int64_t>::min(), loc);
      }
      return Arg(-integer_literal(), loc);
    }
    if (t.kind == Tok::Float) return Arg(-float_literal(), loc);
    if (accept_name("inf")) return Arg(-std::numeric_limits<double>::infinity(), loc);
    fail(t, str_cat("expected a number after '-', found ", describe(t)));
  }

  Arg sequence(int depth) {
    const Token &open = next();
    std::string close = open.text == "(" ? ")" : "]";
    ArgList items;
    bool trailing_comma = false;
    while (!accept_punct(close)) {
      if (!items.empty()) {
        expect_punct(",");
        trailing_comma = true;
        if (accept_punct(close)) break;
      }
      trailing_comma = false;
      items.push_back(argument(depth + 1));
    }
    // `(x)` is x in Python; `(x,)` is a tuple.
    if (open.text == "(" && items.size() == 1 && !trailing_comma) return items[0];
    return Arg(std::move(items), open.loc);
  }

  Arg named_argument(int depth) {
    const Token &t = next();
    SourceLoc loc = t.loc;
    if (t.text == "True") return Arg(true, loc);
    if (t.text == "False") return Arg(false, loc);
    if (t.text == "None") return Arg(NoneArg{}, loc);
    if (t.text == "inf") return Arg(std::numeric_limits<double>::infinity(), loc);
    if (t.text == "nan") return Arg(std::numeric_limits<double>::quiet_NaN(), loc);
    if (t.text == "torch" && at_punct(".")) return torch_attribute(t);
    if (t.text == "device" && at_punct("(")) return device(t);
    const Binding &b = lookup(t);
    if (b.kind == Binding::Kind::Size) return Arg(b.size, loc);
    if (b.kind != Binding::Kind::Tensor)
      fail(t, str_cat("'", t.text, "' holds the tuple returned by ", builder_.graph().nodes()[size_t(b.node)].target(),
                      "; pass one item, ", t.text, "[i]"));
    return Arg(b.value, loc);
  }

  // torch.float32, torch.strided, torch.channels_last, torch.device('cpu')
  Arg torch_attribute(const Token &torch) {
    next();
    const Token &attr = expect_kind(Tok::Name, "a torch attribute");
    if (attr.text == "device" && at_punct("(")) return device(attr);
    if (auto d = dtype_from_torch_name(attr.text)) return Arg(*d, torch.loc);
    if (auto l = layout_from_name(attr.text)) return Arg(*l, torch.loc);
    if (auto m = memory_format_from_name(attr.text)) return Arg(*m, torch.loc);
    fail(attr, str_cat("unknown torch attribute 'torch.", attr.text, "'; expected a dtype, layout or memory format"));
  }

  // device(type='cuda', index=0), torch.device('cpu'), device('cuda:0')
  Arg device(const Token &start) {
    expect_punct("(");
    std::string kind;
    int64_t index = -1;
    bool first = true;
    while (!accept_punct(")")) {
      if (!first) expect_punct(",");
      first = false;
      if (peek().kind == Tok::String) {
        kind = next().text;
        continue;
      }
      const Token &key = expect_kind(Tok::Name, "type= or index=");
      expect_punct("=");
      if (key.text == "type") {
        kind = expect_kind(Tok::String, "a device type string").text;
      } else if (key.text == "index") {
        index = integer_literal();
      } else {
        fail(key, str_cat("unknown device argument '", key.text, "'"));
      }
    }
    std::string spec = index >= 0 ? str_cat(kind, ":", index) : kind;
    auto d = Device::parse(spec);
    if (!d) fail(start, str_cat("unknown device '", spec, "'; expected cpu or cuda"));
    return Arg(*d, start.loc);
  }

  // Annotations of graph inputs and constants: strides default to contiguous.
  TensorType input_type(const Token &ann) {
    Annotation a = parse_annotation(ann.text, inside(ann), sizes_, guards_);
    if (!a.has_strides) a.type.strides = contiguous_strides(a.type.sizes);
    return a.type;
  }

  // Checks output `index` of `node` against its annotation. An op whose layout or type
  // PyTorch leaves to its library takes the annotation's instead (OpDef::layout_from_backend,
  // OpDef::typed_by_backend).
  void check_annotation(const Token &ann, int node, int64_t index) {
    const Node &n = builder_.graph().nodes()[size_t(node)];
    const TensorType &actual = builder_.graph().type(n.outputs[size_t(index)]);
    GuardActivity checking("the annotation of node", n.name, n.target());
    Annotation a = parse_annotation(ann.text, inside(ann), sizes_, guards_);
    std::string what = n.multi_output() ? str_cat(" item ", index) : "";
    auto mismatch = [&](const std::string &part) {
      fail(ann, str_cat("node '", n.name, "' (", n.target(), "): annotation says ", ann.text, " but", what,
                        " is ", actual.str(), " (", part, " differ)"));
    };
    if ((a.type.dtype != actual.dtype || a.type.sizes != actual.sizes) && n.op->output_typed_by_backend(index))
      builder_.set_output_type(node, index, a.type, inside(ann));
    if (a.type.dtype != actual.dtype) mismatch("dtypes");
    if (a.type.sizes != actual.sizes) mismatch("sizes");
    if (a.has_device && a.type.device != actual.device) mismatch("devices");
    if (!a.has_strides) return;
    for (size_t d = 0; d < actual.sizes.size(); ++d) {
      if (actual.sizes[d] <= 1 || a.type.strides[d] == actual.strides[d]) continue;
      if (!n.op->layout_from_backend) mismatch(str_cat("strides of dim ", d));
      builder_.set_output_layout(node, index, a.type.strides, inside(ann));
      return;
    }
  }

  // The location of a string token's first character inside the quotes.
  static SourceLoc inside(const Token &t) { return SourceLoc{t.loc.file, t.loc.line, t.loc.col + 1}; }

  std::string unknown_op(const std::string &ns, const std::string &name, const std::string &target) {
    auto overloads = Registry::get().overloads_of(ns, name);
    if (auto why = refusal(target)) return str_cat("'", target, "' is not supported: ", *why);
    bool dunder = name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";  // __and__
    if (!name.empty() && name.back() == '_' && !dunder)
      return str_cat("'", target, "' writes into its input; coil compiles functional graphs only "
                     "(export with torch.export(...).run_decompositions() to remove mutation)");
    if (overloads.empty()) return str_cat("unknown op '", target, "': coil does not support ", ns, ".", name, " yet");
    return str_cat("unknown overload '", target, "'; coil has ", join(overloads, ", "));
  }

  void define(const Token &name, Binding b) {
    if (name.text == "self") fail(name, "'self' cannot be redefined");
    if (!names_.emplace(name.text, b).second) fail(name, str_cat("redefinition of '", name.text, "'"));
  }

  const Binding &lookup(const Token &t) {
    auto it = names_.find(t.text);
    if (it == names_.end()) fail(t, str_cat("undefined name '", t.text, "'"));
    return it->second;
  }

  int64_t integer_literal() {
    const Token &t = expect_kind(Tok::Int, "an integer");
    auto v = parse_python_int(t.text);
    if (!v) fail(t, str_cat("invalid integer ", t.text, " (coil's integers are 64-bit)"));
    return *v;
  }

  double float_literal() {
    const Token &t = expect_kind(Tok::Float, "a number");
    auto v = parse_python_float(t.text);
    if (!v) fail(t, str_cat("invalid float ", t.text));
    return *v;
  }

  std::string dotted_name() {
    std::string s = expect_kind(Tok::Name, "a name").text;
    while (accept_punct(".")) s += "." + expect_kind(Tok::Name, "a name").text;
    return s;
  }

  void skip_to(std::string_view punct) {
    while (!at_punct(punct) && peek().kind != Tok::Newline && peek().kind != Tok::End) next();
  }

  static std::string join(const std::vector<std::string> &parts, const std::string &sep = ".") {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
  }

  // Token access.
  const Token &peek() const { return toks_[pos_]; }
  const Token &peek_at(size_t k) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token &next() {
    const Token &t = toks_[pos_];
    if (t.kind != Tok::End) ++pos_;
    return t;
  }
  bool at_punct(std::string_view p) const { return peek().kind == Tok::Punct && peek().text == p; }
  bool at_name(std::string_view n) const { return peek().kind == Tok::Name && peek().text == n; }
  bool accept_punct(std::string_view p) {
    if (!at_punct(p)) return false;
    next();
    return true;
  }
  bool accept_name(std::string_view n) {
    if (!at_name(n)) return false;
    next();
    return true;
  }
  void expect_punct(std::string_view p) {
    if (!accept_punct(p)) fail(peek(), str_cat("expected '", p, "' but found ", describe(peek())));
  }
  void expect_name(std::string_view n, std::string_view what) {
    if (!accept_name(n)) fail(peek(), str_cat("expected ", what, " but found ", describe(peek())));
  }
  const Token &expect_kind(Tok kind, std::string_view what) {
    if (peek().kind != kind) fail(peek(), str_cat("expected ", what, " but found ", describe(peek())));
    return next();
  }
  void expect_newline() {
    if (peek().kind == Tok::End) return;
    if (peek().kind != Tok::Newline) fail(peek(), str_cat("expected end of line but found ", describe(peek())));
    next();
  }
  [[noreturn]] void fail(const Token &t, const std::string &msg) const { throw UserError(msg, t.loc); }

  std::string file_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  GraphBuilder builder_;
  std::map<std::string, Binding> names_;
  const SizeValues *sizes_;  // the values of symbolic sizes, when given
  std::shared_ptr<SizeGuards> guards_;  // the guards of those, when given
};

// f32[64, 256][256, 1]cuda:0
class AnnotationReader {
 public:
  AnnotationReader(std::string_view s, const SourceLoc &loc, const SizeValues *sizes, std::shared_ptr<SizeGuards> guards)
      : s_(s), loc_(loc), sizes_(sizes), guards_(std::move(guards)) {}

  Annotation read() {
    Annotation a;
    size_t open = s_.find('[');
    if (open == std::string_view::npos) fail(0, str_cat("expected a tensor type such as \"f32[4, 4]\", found \"", s_, "\""));
    std::string_view dt = s_.substr(0, open);
    auto dtype = dtype_from_short_name(dt);
    if (!dtype) fail(0, str_cat("unknown dtype '", dt, "' in annotation; expected one of f64, f32, f16, bf16, i64, i32, i16, i8, u8, b8"));
    a.type.dtype = *dtype;
    pos_ = open;
    a.type.sizes = int_list();
    checked_numel_at(a.type.sizes);
    if (pos_ < s_.size() && s_[pos_] == '[') {
      size_t at = pos_;
      a.type.strides = int_list();
      a.has_strides = true;
      if (a.type.strides.size() != a.type.sizes.size())
        fail(at, str_cat("annotation has ", a.type.sizes.size(), " sizes but ", a.type.strides.size(), " strides"));
      for (const SymInt &st : a.type.strides)
        if (st.hint() < 0) fail(at, str_cat("negative stride ", st, " in annotation"));
    }
    if (pos_ < s_.size()) {
      auto d = Device::parse(s_.substr(pos_));
      if (!d) fail(pos_, str_cat("unknown device '", s_.substr(pos_), "' in annotation; expected cpu or cuda"));
      a.type.device = *d;
      a.has_device = true;
    }
    return a;
  }

 private:
  SymShape int_list() {
    SymShape out;
    ++pos_;  // '['
    while (true) {
      skip_spaces();
      if (pos_ < s_.size() && s_[pos_] == ']') break;
      if (!out.empty()) {
        if (pos_ >= s_.size() || s_[pos_] != ',') fail(pos_, "expected ',' or ']' in annotation");
        ++pos_;
        skip_spaces();
      }
      out.push_back(integer());
    }
    ++pos_;
    return out;
  }

  // An integer, or a size expression (`s0`, `2*s0 + 1`) with its value at the given sizes.
  SymInt integer() {
    size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size() && (depth > 0 || (s_[pos_] != ',' && s_[pos_] != ']'))) {
      depth += s_[pos_] == '(' ? 1 : s_[pos_] == ')' ? -1 : 0;
      ++pos_;
    }
    std::string_view text = s_.substr(start, pos_ - start);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    if (text.empty()) fail(start, "expected an integer in annotation");
    if (auto v = parse_python_int(text)) return *v;
    if (text.find_first_not_of("-0123456789") == std::string_view::npos)
      fail(start, str_cat("invalid integer '", text, "' in annotation"));
    if (!sizes_)
      fail(start, str_cat("symbolic size '", text, "': this graph has symbolic sizes, and coil compiles it for their "
                          "values (", kHowSizesAreGiven, ")"));
    SourceLoc at = loc_;
    if (at.known()) at.col += int(start);
    if (!guards_) guards_ = std::make_shared<SizeGuards>();
    return read_size_expr(text, *sizes_, at, guards_);
  }

  void checked_numel_at(const SymShape &sizes) {
    try {
      checked_numel(hints(sizes));
    } catch (const UserError &e) {
      fail(0, e.message());
    }
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
  SourceLoc loc_;
  const SizeValues *sizes_;
  std::shared_ptr<SizeGuards> guards_;
  size_t pos_ = 0;
};

}  // namespace

Annotation parse_annotation(std::string_view text, const SourceLoc &loc, const SizeValues *sizes,
                            std::shared_ptr<SizeGuards> guards) {
  return AnnotationReader(text, loc, sizes, std::move(guards)).read();
}

Graph parse_graph(std::string_view text, const std::string &filename, const SizeValues *sizes) {
  return Parser(text, filename, sizes).run();
}

// The most graph text coil reads; a graph of 100,000 nodes is about 10 MB. A device or a
// pipe without end (/dev/zero) is then an error, not all of memory.
constexpr uint64_t kMaxGraphBytes = uint64_t(256) << 20;

namespace {
std::string graph_text(const std::string &path) {
  std::string text = read_file(path, kMaxGraphBytes);
  if (text.size() > kMaxGraphBytes)
    throw UserError(str_cat("more than ", kMaxGraphBytes >> 20, " MiB of graph text: not a graph coil reads"),
                    SourceLoc{path, 0, 0});
  return text;
}
}  // namespace

Graph parse_graph_file(const std::string &path, const SizeValues *sizes) {
  return parse_graph(graph_text(path), path, sizes);
}

Graph parse_graph_file(const std::string &path, const std::function<std::optional<Shape>(const std::string &)> &shape_of,
                       SizeValues *bound) {
  std::string text = graph_text(path);
  SizeValues sizes = bind_sizes(declared_inputs(text, path), shape_of);
  Graph g = parse_graph(text, path, &sizes);
  if (bound) *bound = std::move(sizes);
  return g;
}

}  // namespace coil::frontend
