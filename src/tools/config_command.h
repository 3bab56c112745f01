// `coil config`: the options registry (support/options.h) as the command line shows it.
#pragma once

#include <string>
#include <vector>

namespace coil::tools {

/// `coil config [--set name=value]... [NAME]`: applies each --set as an override of this
/// process, then prints every option's table (no NAME) or NAME's value, source and doc.
/// Bad arguments are UserErrors. Tests: tests/unit/options_test.cpp.
int run_config(const std::vector<std::string> &args);

/// The help text `coil config --help` prints.
inline constexpr const char *kConfigHelp =
    "usage: coil config [--set name=value]... [NAME]\n\n"
    "Prints every option of coil with its current value, where the value comes from\n"
    "(default, env or set), its environment variable and what it does; with NAME, that\n"
    "option alone. A value comes from --set if given, else from the option's environment\n"
    "variable (COIL_ + the name upper-cased, dots as underscores), else the default.\n\n"
    "options:\n"
    "  --set name=value  override an option (repeatable); the value is checked\n";

}  // namespace coil::tools
