#include "tools/cache_command.h"

#include <iostream>

#include "runtime/cache.h"
#include "support/error.h"
#include "support/options.h"

namespace coil::tools {
namespace {

// Applies each --set and returns the one subcommand.
std::string parse_cache_args(const std::vector<std::string> &args) {
  std::vector<std::string> words;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a.rfind("--set=", 0) == 0) {
      options::set_override(a.substr(6));
      continue;
    }
    if (a == "--set") {
      if (i + 1 >= args.size()) throw UserError("coil cache: option --set needs a value name=value");
      options::set_override(args[++i]);
      continue;
    }
    if (a.rfind("-", 0) == 0) throw UserError(str_cat("coil cache: unknown option '", a, "' (see coil cache --help)"));
    words.push_back(a);
  }
  if (words.empty()) throw UserError("coil cache: expected info or clear (see coil cache --help)");
  if (words.size() > 1)
    throw UserError(str_cat("coil cache: expected one command, info or clear, got ", words.size(),
                            " (see coil cache --help)"));
  return words[0];
}

}  // namespace

int run_cache(const std::vector<std::string> &args) {
  std::string what = parse_cache_args(args);
  if (what == "info") {
    std::cout << cache_info_text();
    return 0;
  }
  if (what == "clear") {
    CacheInfo removed = cache_clear();
    std::cout << "removed " << removed.entries << (removed.entries == 1 ? " entry" : " entries") << " and "
              << removed.failed_sources << (removed.failed_sources == 1 ? " failed source" : " failed sources")
              << " from " << cache_root().string() << "\n";
    return 0;
  }
  throw UserError(str_cat("coil cache: unknown command '", what, "'; expected info or clear (see coil cache --help)"));
}

}  // namespace coil::tools
