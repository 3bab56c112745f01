// Small string helpers shared by the tools' command lines, the compilers' messages and
// the caches' records.
#pragma once

#include <string>

namespace coil {

/// `text` up to its first newline (all of it when it has none).
inline std::string first_line(const std::string &text) { return text.substr(0, text.find('\n')); }

/// `text` with every occurrence of `from` (not empty) replaced by `to`, left to right.
inline std::string replace_all(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace coil
