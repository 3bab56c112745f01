// `coil cache`: what the cache of compiled artifacts (runtime/cache.h) holds, and
// clearing it.
#pragma once

#include <string>
#include <vector>

namespace coil::tools {

/// `coil cache [--set name=value]... info|clear`. Bad arguments are UserErrors.
/// Tests: tests/unit/runtime_test.cpp.
int run_cache(const std::vector<std::string> &args);

/// The help text `coil cache --help` prints.
inline constexpr const char *kCacheHelp =
    "usage: coil cache [--set name=value]... info|clear\n\n"
    "coil keeps what it compiles (the shared object of each CPU graph, with its source and\n"
    "a meta.json) in one content-addressed cache: COIL_CACHE_DIR (option cache_dir), else\n"
    "$XDG_CACHE_HOME/coil, else ~/.cache/coil. An entry is reused only when its source,\n"
    "flags, compiler, ISA and coil version all match, and only when its files still have\n"
    "the SHA-256 recorded when it was written; a damaged entry is reported and rebuilt.\n\n"
    "commands:\n"
    "  info   print the cache's folder, its entries by kind, the sources a compiler\n"
    "         rejected (kept in failed/) and the total size\n"
    "  clear  remove every entry and every kept source coil wrote, and nothing else;\n"
    "         a folder that is not a coil cache is refused; safe while other coil\n"
    "         processes use the cache (they rebuild what they need)\n\n"
    "options:\n"
    "  --set name=value  override an option (repeatable), e.g. --set cache_dir=/tmp/c\n";

}  // namespace coil::tools
