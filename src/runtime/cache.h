// The content-addressed cache of compiled artifacts (DESIGN.md, decision 9).
//
//   <root>/CACHEDIR.TAG               says the folder is coil's cache (bford.info/cachedir)
//   <root>/<kind>/<key[0:2]>/<key>/   one entry: its files and a manifest.json (kinds: cpp,
//                                     pch, triton, autotune)
//   <root>/tmp/                       entries being built, folders being deleted
//   <root>/failed/                    sources a compiler rejected, kept for the user
//
// The root is the option `cache_dir` (COIL_CACHE_DIR), else $XDG_CACHE_HOME/coil, else
// $HOME/.cache/coil. A key is the SHA-256 of everything that changes the artifact. An
// entry is built in its own folder under tmp/ and renamed into place in one step, so no
// process ever sees a half-written entry; when two processes build the same key at once,
// the first rename wins and the loser discards its copy.
//
// A cache hit is code that gets loaded, so every entry, of every kind, goes through the
// same two steps here: publish() makes its files private to the user (folders 0700, files
// 0600, whatever the umask) and records each file's size and SHA-256 in its manifest;
// cache_lookup() checks them all before handing the entry out, and reports, removes and
// misses a damaged one so that it is built again. Clearing removes only what this layout
// and the manifests say coil wrote. Tests: tests/unit/runtime_test.cpp, tests/cli/cli_test.sh.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coil {

/// Part of every key: a new coil never reuses an older coil's artifacts.
inline constexpr std::string_view kCoilVersion = "0.1.0";

/// The cache's root folder (see above); absolute. A UserError when HOME is unset too.
std::filesystem::path cache_root();

/// The SHA-256 of `fields`, each prefixed by its length so that two different lists never
/// hash the same text.
std::string cache_key(const std::vector<std::string_view> &fields);

/// Where the entry `key` of `kind` lives, whether or not it exists.
std::filesystem::path cache_entry_dir(std::string_view kind, std::string_view key);

/// The entry `key` of `kind` when it is there and intact: its manifest names the kind and
/// key, lists each of `needed` (paths relative to the entry), and every file it lists has
/// the size and SHA-256 recorded at publication. Each file is read and hashed once per
/// process: a later lookup hashes again only when a file's inode, size or change time
/// differs (or changed within 2 s of the hashing). A damaged entry is reported on
/// stderr and removed, and the lookup misses.
std::optional<std::filesystem::path> cache_lookup(std::string_view kind, std::string_view key,
                                                  const std::vector<std::string> &needed);

/// Now in UTC, as 2025-01-31T12:00:00Z: when an entry was created, for its meta.json.
std::string utc_timestamp();

/// The folder one entry is built in: <root>/tmp/<key>.<pid>.<random>/, created empty and
/// private (0700). Destroyed before publish(), it is removed with what it holds.
class CacheStaging {
 public:
  CacheStaging(std::string kind, std::string key);
  ~CacheStaging();
  CacheStaging(const CacheStaging &) = delete;
  CacheStaging &operator=(const CacheStaging &) = delete;

  const std::filesystem::path &dir() const { return dir_; }

  /// Makes every file 0600 and every folder 0700, writes the manifest (each file's size
  /// and SHA-256), renames the folder into place and returns the entry's path. When
  /// another process published the key first and its entry is intact, ours is discarded
  /// and theirs returned; a damaged entry in the way is replaced.
  std::filesystem::path publish();

 private:
  std::string kind_;
  std::string key_;
  std::filesystem::path dir_;
  bool published_ = false;
};

/// Writes `source` to <root>/failed/<file_name> (atomically) and returns the path: a
/// source the compiler rejected stays for the user to read after its staging folder goes.
std::filesystem::path keep_failed_source(const std::string &file_name, std::string_view source);

struct CacheInfo {
  int64_t entries = 0;                           // over every kind
  int64_t bytes = 0;                             // every file under the root
  std::map<std::string, int64_t> entries_by_kind;  // "cpp" -> 12
  int64_t failed_sources = 0;                    // files in failed/
};

/// Counts what the cache holds now; zeros when the root does not exist. A UserError when
/// the root is not a coil cache (see cache_clear).
CacheInfo cache_info();

/// Removes every entry of every kind and the failed sources: only folders and files whose
/// place and name follow the layout above and, for an entry, whose manifest (or meta.json,
/// written before manifests) names its key; anything else in the root stays. Each entry is
/// first renamed under tmp/ and then deleted, so a concurrent reader sees an entry or
/// none. Leftovers of coil's in tmp/ older than an hour (from killed processes) go too.
/// A UserError, with nothing removed, when the root is not a coil cache: it has no coil
/// CACHEDIR.TAG and holds something other than the folders above. Returns what it
/// removed (bytes: their size).
CacheInfo cache_clear();

/// What `coil cache info` prints: the root, entries per kind, failed sources, total size.
std::string cache_info_text();

}  // namespace coil
