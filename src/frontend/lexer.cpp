#include "frontend/lexer.h"

#include <cctype>

namespace coil::frontend {
namespace {

constexpr size_t kMaxBracketDepth = 256;
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

class Lexer {
 public:
  Lexer(std::string_view text, const std::string &filename) : s_(text), file_(filename) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) step();
    if (!open_.empty()) fail(open_.back().second, str_cat("'", open_.back().first, "' is never closed"));
    end_line();
    out_.push_back(Token{Tok::End, "", here(), 0});
    return std::move(out_);
  }

 private:
  void step() {
    char c = s_[pos_];
    if (c == '\n') {
      newline();
    } else if (c == '\r' || c == ' ' || c == '\t' || c == '\f') {
      advance();
    } else if (c == '#') {
      while (pos_ < s_.size() && s_[pos_] != '\n') advance();
    } else if (c == '\\' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') {
      advance();  // explicit line joining
      advance();
    } else if (std::isalpha(uint8_t(c)) || c == '_' ||
               (c == '<' && pos_ + 1 < s_.size() && std::isalpha(uint8_t(s_[pos_ + 1])))) {
      name();
    } else if (std::isdigit(uint8_t(c)) || (c == '.' && pos_ + 1 < s_.size() && std::isdigit(uint8_t(s_[pos_ + 1])))) {
      number();
    } else if (c == '\'' || c == '"') {
      string();
    } else {
      punct();
    }
  }

  void newline() {
    if (open_.empty()) {
      end_line();
      line_start_ = true;
    }
    advance();
  }

  void end_line() {
    if (!out_.empty() && out_.back().kind != Tok::Newline) out_.push_back(Token{Tok::Newline, "", here(), 0});
  }

  // Names, plus `<lambda>`: Inductor prints `class <lambda>(torch.nn.Module)`.
  void name() {
    SourceLoc loc = here();
    size_t start = pos_;
    if (s_[pos_] == '<') {
      size_t close = s_.find('>', pos_);
      if (close == std::string_view::npos || s_.substr(pos_, close + 1 - pos_).find('\n') != std::string_view::npos)
        fail(loc, "unexpected character '<'");
      while (pos_ <= close) advance();
    } else {
      while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '_')) advance();
    }
    emit(Tok::Name, std::string(s_.substr(start, pos_ - start)), loc);
  }

  void number() {
    SourceLoc loc = here();
    size_t start = pos_;
    bool is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      bool exp_sign = (c == '+' || c == '-') && pos_ > start && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E');
      if (c == '.' || c == 'e' || c == 'E') is_float = true;
      if (!(std::isalnum(uint8_t(c)) || c == '.' || c == '_' || exp_sign)) break;
      advance();
    }
    emit(is_float ? Tok::Float : Tok::Int, std::string(s_.substr(start, pos_ - start)), loc);
  }

  void string() {
    SourceLoc loc = here();
    char quote = s_[pos_];
    advance();
    std::string value;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') fail(loc, "unterminated string");
      char c = s_[pos_];
      advance();
      if (c == quote) break;
      if (c == '\\') {
        if (pos_ >= s_.size()) fail(loc, "unterminated string");
        c = escape(s_[pos_], loc);
        advance();
      }
      value += c;
    }
    emit(Tok::String, value, loc);
  }

  char escape(char c, const SourceLoc &loc) {
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case '\\': return '\\';
      case '\'': return '\'';
      case '"': return '"';
      default: fail(loc, str_cat("unsupported escape '\\", c, "' in string"));
    }
  }

  void punct() {
    SourceLoc loc = here();
    char c = s_[pos_];
    if (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
      advance();
      advance();
      emit(Tok::Punct, "->", loc);
      return;
    }
    if (s_.substr(pos_, kByteOrderMark.size()) == kByteOrderMark) fail(loc, byte_order_mark_error());
    // Python's operators besides: FX prints arithmetic and comparisons of sizes (`s0 * 2`,
    // `s0 >= 2`) as operators, one character a token.
    if (std::string_view("()[]{},:=.;-+*/%<>!&|~").find(c) == std::string_view::npos)
      fail(loc, str_cat("unexpected character ", describe(c)));
    if (c == '(' || c == '[' || c == '{') {
      if (open_.size() >= kMaxBracketDepth) fail(loc, "brackets nested too deeply");
      open_.emplace_back(c, loc);
    }
    if (c == ')' || c == ']' || c == '}') {
      char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (open_.empty() || open_.back().first != want) fail(loc, str_cat("unmatched '", c, "'"));
      open_.pop_back();
    }
    advance();
    emit(Tok::Punct, std::string(1, c), loc);
  }

  // Editors on Windows may save one; PyTorch never prints one.
  std::string byte_order_mark_error() const {
    std::string what = "UTF-8 byte order mark (bytes 0xef 0xbb 0xbf)";
    if (pos_ == 0) return str_cat("the file starts with a ", what, "; save it without one, as PyTorch prints graphs");
    return "unexpected " + what;
  }

  static std::string describe(char c) {
    if (std::isprint(uint8_t(c))) return str_cat("'", c, "'");
    return str_cat("byte 0x", "0123456789abcdef"[uint8_t(c) >> 4], "0123456789abcdef"[uint8_t(c) & 15]);
  }

  void emit(Tok kind, std::string text, SourceLoc loc) {
    Token t{kind, std::move(text), std::move(loc), 0};
    if (line_start_) t.indent = t.loc.col - 1;
    line_start_ = false;
    out_.push_back(std::move(t));
  }

  void advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  SourceLoc here() const { return SourceLoc{file_, line_, col_}; }
  [[noreturn]] void fail(const SourceLoc &loc, const std::string &msg) const { throw UserError(msg, loc); }

  std::string_view s_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  std::vector<std::pair<char, SourceLoc>> open_;  // brackets not yet closed
  bool line_start_ = true;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text, const std::string &filename) {
  return Lexer(text, filename).run();
}

}  // namespace coil::frontend
