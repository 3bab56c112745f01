// Errors for people and errors for us.
//
// A UserError is the user's input being wrong (bad graph text, an unknown op, a shape
// mismatch, a truncated file): it carries a location when one is known and prints as
// `FILE:LINE:COL: error: MESSAGE`. An InternalError is coil being wrong: an invariant
// broke. Both are exceptions so that no input can crash the process; the command line
// exits 1 on the first and 2 on the second.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace coil {

/// Where in a source text something is. Lines and columns count from 1; 0 means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;

  bool known() const { return line > 0; }
};

/// Concatenates anything streamable: str_cat("dim ", d, " of ", n).
template <typename... Ts>
std::string str_cat(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

class UserError : public std::runtime_error {
 public:
  explicit UserError(std::string message, SourceLoc loc = {})
      : std::runtime_error(message), message_(std::move(message)), loc_(std::move(loc)) {}

  const std::string &message() const { return message_; }
  const SourceLoc &loc() const { return loc_; }
  bool has_loc() const { return loc_.known(); }

  /// The same error placed at `loc`, unless it already has a place.
  UserError at(const SourceLoc &loc) const {
    return has_loc() ? *this : UserError(message_, loc);
  }
  /// `FILE:LINE:COL: error: MESSAGE`, or `FILE: error: MESSAGE` without a line.
  std::string render() const;

 private:
  std::string message_;
  SourceLoc loc_;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string &message)
      : std::logic_error("internal error: " + message) {}
};

[[noreturn]] void throw_internal(const char *file, int line, const std::string &message);

}  // namespace coil

/// Asserts an invariant of coil itself; the message says which.
#define COIL_ASSERT(cond, ...)                                              \
  do {                                                                      \
    if (!(cond))                                                            \
      ::coil::throw_internal(__FILE__, __LINE__,                            \
                             ::coil::str_cat(#cond ": ", __VA_ARGS__));     \
  } while (0)

/// Rejects user input: throws a UserError with the concatenated message.
#define COIL_USER_CHECK(cond, ...)                                          \
  do {                                                                      \
    if (!(cond)) throw ::coil::UserError(::coil::str_cat(__VA_ARGS__));    \
  } while (0)
