#include "tools/config_command.h"

#include <iostream>

#include "support/error.h"
#include "support/options.h"

namespace coil::tools {
namespace {

struct ConfigArgs {
  std::vector<std::string> assignments;  // each --set name=value, in order
  std::vector<std::string> names;
};

ConfigArgs parse_config_args(const std::vector<std::string> &args) {
  ConfigArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a.rfind("--set=", 0) == 0) {
      out.assignments.push_back(a.substr(6));
      continue;
    }
    if (a == "--set") {
      if (i + 1 >= args.size()) throw UserError("coil config: option --set needs a value name=value");
      out.assignments.push_back(args[++i]);
      continue;
    }
    if (a.rfind("-", 0) == 0)
      throw UserError(str_cat("coil config: unknown option '", a, "' (see coil config --help)"));
    out.names.push_back(a);
  }
  if (out.names.size() > 1)
    throw UserError(str_cat("coil config: expected at most one option name, got ", out.names.size(),
                            " (see coil config --help)"));
  return out;
}

std::string source_text(const options::Option &option, options::Source source) {
  switch (source) {
    case options::Source::Default: return "default";
    case options::Source::Environment: return "env " + option.env();
    case options::Source::Override: return "set";
  }
  return "";
}

// max_fusion_size = 32  (env COIL_MAX_FUSION_SIZE)
//   most nodes one kernel may hold
void print_one(const std::string &name) {
  const options::Option &option = options::find(name);
  auto [value, source] = options::current(name);
  std::cout << option.name << " = " << (value.empty() ? "\"\"" : value) << "  (" << source_text(option, source)
            << ")\n  " << option.doc << "\n";
}

}  // namespace

int run_config(const std::vector<std::string> &args) {
  ConfigArgs parsed = parse_config_args(args);
  for (const auto &assignment : parsed.assignments) options::set_override(assignment);
  if (parsed.names.empty()) {
    std::cout << options::table();
    return 0;
  }
  print_one(parsed.names[0]);
  return 0;
}

}  // namespace coil::tools
