// Tokens of the Python subset that FX prints: names, numbers, strings, punctuation and
// the ends of logical lines (newlines inside brackets join lines, as in Python).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace coil::frontend {

enum class Tok : uint8_t { Name, Int, Float, String, Punct, Newline, End };

struct Token {
  Tok kind;
  std::string text;  // a String token holds its decoded contents
  SourceLoc loc;
  int indent = 0;    // for the first token of a line: its column - 1
};

/// Splits `text` into tokens; comments are dropped, and blank or comment-only lines
/// produce nothing. A UserError at the offending character for anything else.
std::vector<Token> tokenize(std::string_view text, const std::string &filename);

}  // namespace coil::frontend
