#include "runtime/pch.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/cache.h"
#include "support/error.h"
#include "support/options.h"
#include "support/text.h"

namespace coil {
namespace fs = std::filesystem;
namespace {

constexpr const char *kHeader = "coil/precompiled.h";

// GCC finds a .gch beside (or instead of) the header it would include; clang takes the
// file it is given and refuses one built with other settings.
enum class Style { Gcc, Clang };

// clang says so in its version line ("Debian clang version 14.0.6", "Apple clang version
// 15.0.0"); any other compiler is asked for GCC's way, and one that has no such thing
// fails to build the header.
Style style_of(const CxxCompiler &cc) { return cc.identity.find("clang") != std::string::npos ? Style::Clang : Style::Gcc; }

std::string_view style_name(Style s) { return s == Style::Clang ? "clang" : "gcc"; }

fs::path pch_file(const fs::path &entry, Style s) {
  return s == Style::Clang ? entry / "precompiled.pch" : entry / "coil" / "precompiled.h.gch";
}

// The kernel build's flags that compile the header: -shared and libraries only link.
std::vector<std::string> header_flags(const std::vector<std::string> &flags) {
  auto links = [](const std::string &f) { return f == "-shared" || f.rfind("-l", 0) == 0 || f.rfind("-Wl,", 0) == 0; };
  std::vector<std::string> out;
  for (const auto &f : flags)
    if (!links(f)) out.push_back(f);
  return out;
}

std::vector<std::string> build_command(const PchRequest &r, Style s, const fs::path &output) {
  std::vector<std::string> argv = {r.compiler.path};
  for (auto &f : header_flags(r.flags)) argv.push_back(std::move(f));
  // clang would check every header's time stamp at each use and refuse the file after a
  // `touch`; the key covers their contents instead.
  if (s == Style::Clang) argv.insert(argv.end(), {"-Xclang", "-fno-pch-timestamp"});
  argv.insert(argv.end(), {"-x", "c++-header", (r.include / kHeader).string(), "-o", output.string()});
  return argv;
}

std::vector<std::string> use_flags(const fs::path &entry, Style s) {
  if (s == Style::Clang) return {"-include-pch", pch_file(entry, s).string()};
  // GCC looks for coil/precompiled.h.gch in each include folder before the header: the
  // entry's folder comes first. -Winvalid-pch says when the file was found and not used.
  return {"-I", entry.string(), "-include", kHeader, "-Winvalid-pch"};
}

bool has_pch_file(const fs::path &dir, Style s) {
  std::error_code ec;
  auto size = fs::file_size(pch_file(dir, s), ec);
  return !ec && size > 0;
}

std::string joined(const std::vector<std::string> &parts) {
  std::string out;
  for (const auto &p : parts) out += p + "\n";
  return out;
}

void write_meta(const fs::path &dir, const PchRequest &r, const std::string &key, double seconds) {
  nlohmann::ordered_json meta;
  meta["kind"] = "pch";
  meta["key"] = key;
  meta["header"] = (r.include / kHeader).string();
  meta["coil_version"] = kCoilVersion;
  meta["compiler"] = r.compiler.identity;
  meta["isa"] = isa_name(r.isa);
  meta["flags"] = header_flags(r.flags);
  meta["created"] = utc_timestamp();
  meta["compile_seconds"] = seconds;
  std::ofstream out(dir / "meta.json", std::ios::binary);
  out << meta.dump(2) << "\n";
  out.close();
  if (!out) throw UserError(str_cat("cannot write ", (dir / "meta.json").string(), ": ", std::strerror(errno)));
}

// Keys this process could not build: each kernel build would fail the same way again.
struct FailedKeys {
  std::mutex mutex;
  std::set<std::string> keys;
};

FailedKeys &failed_keys() {
  static FailedKeys failed;
  return failed;
}

bool failed_before(const std::string &key) {
  std::lock_guard<std::mutex> lock(failed_keys().mutex);
  return failed_keys().keys.count(key) > 0;
}

void remember_failure(const std::string &key) {
  std::lock_guard<std::mutex> lock(failed_keys().mutex);
  failed_keys().keys.insert(key);
}

std::optional<fs::path> build(const PchRequest &r, const std::string &key, Style s) {
  CacheStaging staging("pch", key);
  fs::create_directories(pch_file(staging.dir(), s).parent_path());
  auto start = std::chrono::steady_clock::now();
  ProcessResult result = run_process(build_command(r, s, pch_file(staging.dir(), s)));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool debug = options::get_bool("debug");
  if (result.exit_code != 0 || !has_pch_file(staging.dir(), s)) {
    remember_failure(key);
    if (debug)
      std::cerr << "coil: cannot precompile the kernel prelude with " << r.compiler.identity << " (exit status "
                << result.exit_code << ": " << first_line(result.err + result.out)
                << "); kernels are compiled without it\n";
    return std::nullopt;
  }
  write_meta(staging.dir(), r, key, seconds);
  fs::path entry = staging.publish();
  if (debug) std::cerr << "coil: precompiled the kernel prelude in " << seconds << " s: " << entry.string() << "\n";
  return entry;
}

}  // namespace

std::string pch_key(const PchRequest &r) {
  return cache_key({"pch", kCoilVersion, r.compiler.identity, isa_name(r.isa), style_name(style_of(r.compiler)),
                    joined(header_flags(r.flags)), r.include.string(), r.headers_digest});
}

std::vector<std::string> pch_flags(const PchRequest &r) {
  Style s = style_of(r.compiler);
  std::string key = pch_key(r);
  std::string file = pch_file(fs::path(), s).generic_string();  // relative to the entry
  if (std::optional<fs::path> entry = cache_lookup("pch", key, {file, "meta.json"})) return use_flags(*entry, s);
  if (failed_before(key)) return {};
  std::optional<fs::path> built = build(r, key, s);
  return built ? use_flags(*built, s) : std::vector<std::string>{};
}

std::string pch_rejection(const std::string &compiler_stderr) {
  std::istringstream lines(compiler_stderr);
  for (std::string line; std::getline(lines, line);)
    if (line.find("[-Winvalid-pch]") != std::string::npos) return line;
  return "";
}

}  // namespace coil
