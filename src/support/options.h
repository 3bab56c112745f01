// The options registry (DESIGN.md, decision 10): every knob of coil in one table.
//
// An option has a dotted name (`max_fusion_size`, `cpp.isa`, `triton.autotune`), a type,
// a default, an environment variable (COIL_ + the name upper-cased with dots as
// underscores: COIL_MAX_FUSION_SIZE, COIL_CPP_ISA) and one line of documentation. Its
// value is, in order of precedence: an override set in this process (the command line's
// `--set name=value`), the environment variable, the default. `coil config` prints them
// all. A malformed value is a UserError naming the option, where it came from and the
// values it accepts. Tests: tests/unit/options_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace coil::options {

enum class Type : uint8_t { Bool, Int, String, Choice };

struct Option {
  std::string name;
  Type type = Type::String;
  std::string default_value;           // as text: "true", "64", "", "auto"
  std::vector<std::string> choices;    // Choice only
  std::string doc;                     // one line
  std::string env() const;             // COIL_MAX_FUSION_SIZE
};

/// Every registered option, sorted by name.
const std::vector<Option> &all();

/// The option called `name`; a UserError listing close names when there is none.
const Option &find(const std::string &name);

/// Where an option's current value comes from.
enum class Source : uint8_t { Default, Environment, Override };

/// The current value as text and where it came from; validated against the type and
/// canonical (a Bool reads "true" or "false", an Int plain decimal). The environment is
/// read at each call; an empty variable counts as unset. A malformed value is a UserError
/// such as `COIL_MAX_FUSION_SIZE='abc': max_fusion_size expects an integer`.
std::pair<std::string, Source> current(const std::string &name);

bool get_bool(const std::string &name);      // true/false/1/0/on/off/yes/no
int64_t get_int(const std::string &name);
std::string get_string(const std::string &name);  // String and Choice

/// Overrides an option for this process (validated now, `--set NAME='VALUE': ...` when
/// malformed): `coil --set` and tests. Overrides are guarded by a mutex.
void set_override(const std::string &name, const std::string &value);
/// Parses `name=value` and sets it; a UserError on a missing `=`.
void set_override(const std::string &assignment);
void clear_overrides();

/// Overrides for the calling thread while this object lives, over set_override's: the
/// options of one compilation (include/coil/coil.h's CompileOptions). Each value is
/// validated here (a UserError naming the option); scopes nest, innermost first.
class ScopedOverrides {
 public:
  explicit ScopedOverrides(const std::vector<std::pair<std::string, std::string>> &values);
  ~ScopedOverrides();
  ScopedOverrides(const ScopedOverrides &) = delete;
  ScopedOverrides &operator=(const ScopedOverrides &) = delete;
};

/// The table `coil config` prints: name, current value, source, environment variable, doc.
std::string table();

}  // namespace coil::options
