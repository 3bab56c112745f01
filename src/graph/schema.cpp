#include "graph/schema.h"

#include <cctype>
#include <charconv>

namespace coil {
namespace {

struct BaseName {
  std::string_view name;
  BaseType type;
};
constexpr BaseName kBaseNames[] = {
    {"Tensor", BaseType::Tensor},       {"Scalar", BaseType::Scalar},
    {"int", BaseType::Int},             {"SymInt", BaseType::Int},
    {"float", BaseType::Float},         {"bool", BaseType::Bool},
    {"str", BaseType::Str},             {"ScalarType", BaseType::ScalarType},
    {"Layout", BaseType::Layout},       {"Device", BaseType::Device},
    {"MemoryFormat", BaseType::MemoryFormat}, {"Generator", BaseType::Generator},
};

// A recursive-descent reader over one schema string. Schemas are coil's own tables,
// so any error here is internal and names the schema.
class SchemaReader {
 public:
  explicit SchemaReader(std::string_view text) : s_(text) {}

  Schema read() {
    Schema schema;
    std::string qualified = ident_with("_.:");
    size_t ns_end = qualified.find("::");
    if (ns_end != std::string::npos) {
      schema.ns = qualified.substr(0, ns_end);
      qualified = qualified.substr(ns_end + 2);
    }
    size_t dot = qualified.find('.');
    schema.name = qualified.substr(0, dot);
    schema.overload = dot == std::string::npos ? "default" : qualified.substr(dot + 1);
    expect('(');
    bool kwarg_only = false;
    while (!accept(')')) {
      if (!schema.args.empty() || kwarg_only) expect(',');
      if (accept('*')) {
        kwarg_only = true;
        continue;
      }
      schema.args.push_back(argument(kwarg_only));
    }
    expect('-');
    expect('>');
    schema.returns = returns();
    skip_ws();
    COIL_ASSERT(pos_ == s_.size(), "trailing text in schema: ", s_);
    return schema;
  }

 private:
  SchemaArg argument(bool kwarg_only) {
    SchemaArg a;
    a.type = type();
    a.name = ident_with("_");
    a.kwarg_only = kwarg_only;
    if (accept('=')) a.default_value = value();
    return a;
  }

  ArgType type() {
    ArgType t;
    std::string base = ident_with("");
    t.base = base_type(base);
    if (accept('(')) {  // alias annotation: (a), (a!), (a -> *)
      while (!accept(')')) {
        COIL_ASSERT(pos_ < s_.size(), "unterminated alias annotation in ", s_);
        if (s_[pos_++] == '!') t.mutated = true;
      }
    }
    if (accept('?')) t.elem_optional = true;
    if (accept('[')) {
      t.is_list = true;
      if (!accept(']')) {
        t.list_len = int(integer());
        expect(']');
      }
      t.optional = accept('?');
    } else {
      t.optional = t.elem_optional;
      t.elem_optional = false;
    }
    return t;
  }

  std::vector<ArgType> returns() {
    std::vector<ArgType> out;
    if (!accept('(')) {
      out.push_back(type());
      return out;
    }
    while (!accept(')')) {
      if (!out.empty()) expect(',');
      out.push_back(type());
      skip_ws();
      if (pos_ < s_.size() && std::isalpha(uint8_t(s_[pos_]))) ident_with("_");  // a name
    }
    return out;
  }

  Arg value() {
    skip_ws();
    if (accept('[')) {
      ArgList items;
      while (!accept(']')) {
        if (!items.empty()) expect(',');
        items.push_back(value());
      }
      return Arg(std::move(items));
    }
    if (peek() == '\'' || peek() == '"') return Arg(quoted());
    if (peek() == '-' || std::isdigit(uint8_t(peek()))) return number();
    std::string word = ident_with("_");
    if (word == "None") return Arg(NoneArg{});
    if (word == "True") return Arg(true);
    if (word == "False") return Arg(false);
    if (auto mf = memory_format_from_name(word)) return Arg(*mf);
    if (word == "Mean") return Arg(int64_t(1));  // at::Reduction::Mean
    if (auto d = dtype_from_torch_name(word)) return Arg(*d);  // dtype=long
    COIL_ASSERT(false, "unknown default '", word, "' in schema ", s_);
  }

  Arg number() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    bool is_float = false;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '.' ||
                                ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e')))) {
      if (s_[pos_] == '.' || s_[pos_] == 'e') is_float = true;
      ++pos_;
    }
    std::string text(s_.substr(start, pos_ - start));
    if (is_float) return Arg(std::stod(text));
    return Arg(int64_t(std::stoll(text)));
  }

  std::string quoted() {
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    COIL_ASSERT(end != std::string_view::npos, "unterminated string in schema ", s_);
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }

  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    COIL_ASSERT(ec == std::errc(), "expected an integer in schema ", s_);
    pos_ = size_t(end - s_.data());
    return v;
  }

  static BaseType base_type(const std::string &name) {
    for (const auto &b : kBaseNames)
      if (b.name == name) return b.type;
    COIL_ASSERT(false, "unknown schema type '", name, "'");
  }

  std::string ident_with(std::string_view extra) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) ||
                                extra.find(s_[pos_]) != std::string_view::npos ||
                                (s_[pos_] == '_')))
      ++pos_;
    COIL_ASSERT(pos_ > start, "expected a name at column ", start, " of schema ", s_);
    return std::string(s_.substr(start, pos_ - start));
  }

  char peek() {
    skip_ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) { COIL_ASSERT(accept(c), "expected '", c, "' at column ", pos_, " of schema ", s_); }
  void skip_ws() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string_view base_name(BaseType b) {
  for (const auto &n : kBaseNames)
    if (n.type == b) return n.name;
  return "?";
}

}  // namespace

std::string ArgType::str() const {
  std::string s(base_name(base));
  if (elem_optional) s += "?";
  if (is_list) s += list_len ? "[" + std::to_string(list_len) + "]" : "[]";
  if (optional) s += "?";
  return s;
}

int Schema::find_arg(std::string_view arg_name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == arg_name) return int(i);
  return -1;
}

bool Schema::mutates_an_input() const {
  for (const auto &a : args)
    if (a.type.mutated) return true;
  return false;
}

Schema parse_schema(std::string_view text) {
  Schema s = SchemaReader(text).read();
  s.text = std::string(text);
  return s;
}

}  // namespace coil
