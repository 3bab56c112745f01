#include "runtime/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <tuple>

#include <nlohmann/json.hpp>

#include "runtime/sha256.h"
#include "support/error.h"
#include "support/options.h"

namespace coil {
namespace fs = std::filesystem;
namespace {

constexpr const char *kTmp = "tmp";
constexpr const char *kFailed = "failed";
constexpr const char *kManifest = "manifest.json";
constexpr const char *kManifestFormat = "coil-cache-entry-1";
constexpr const char *kTag = "CACHEDIR.TAG";
constexpr auto kAbandonedAge = std::chrono::hours(1);

// Every kind of entry: what clear removes and info counts (no other folder is an entry).
constexpr std::array<const char *, 4> kKinds = {"cpp", "pch", "triton", "autotune"};

// The tag of the Cache Directory Tagging spec (bford.info/cachedir): backup tools skip the
// folder, and `coil cache clear` knows the folder is coil's.
constexpr std::string_view kTagSignature = "Signature: 8a477f597d28d172789f06886806bc55\n";
constexpr std::string_view kTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by coil: the folder is coil's cache of\n"
    "# compiled kernels. For information about cache directory tags see https://bford.info/cachedir/\n";

// <pid>.<random>.<counter>: unique across processes (pid), across forks of one process
// (pid again: a forked child inherits the generator's state) and within one (counter).
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char random[17];
  std::snprintf(random, sizeof random, "%016llx", static_cast<unsigned long long>(rng()));
  return str_cat(getpid(), ".", random, ".", counter++);
}

bool is_kind(std::string_view name) {
  return std::any_of(kKinds.begin(), kKinds.end(), [&](const char *k) { return name == k; });
}

bool is_hex(std::string_view text, size_t size) {
  return text.size() == size && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Creates `dir` and every missing folder above it, each readable by the user alone: mkdir
// applies the umask, which can only take bits away from 0700, and the chmod puts back any
// it took from the user.
fs::path make_private_folders(const fs::path &dir) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec) && p != p.root_path(); p = p.parent_path())
    missing.push_back(p);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) == 0) ::chmod(it->c_str(), 0700);
    else if (errno != EEXIST)
      throw UserError(str_cat("cannot create the cache folder ", it->string(), ": ", std::strerror(errno)));
  }
  return dir;
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(size_t(n));
  }
  return true;
}

// Writes a new file readable by the user alone; `path` must not exist.
void write_private_file(const fs::path &path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::fchmod(fd, 0600) == 0 && write_all(fd, text);
  int err = errno;
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) throw UserError(str_cat("cannot write ", path.string(), ": ", std::strerror(err)));
}

// The whole file, read in one piece (a stream's rdbuf copy takes four times as long on
// a precompiled header of 70 MB).
std::optional<std::string> read_whole(const fs::path &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0) text = std::string(size_t(st.st_size), '\0');
  for (size_t got = 0; text && got < text->size();) {
    ssize_t n = ::read(fd, text->data() + got, text->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) text.reset();  // an error, or the file shrank meanwhile
    else got += size_t(n);
  }
  int err = errno;
  ::close(fd);
  errno = err;
  return text;
}

bool has_coil_tag(const fs::path &root) {
  std::optional<std::string> tag = read_whole(root / kTag);
  return tag && tag->rfind(kTagSignature, 0) == 0 && tag->find("created by coil") != std::string::npos;
}

// The first thing in `root` that coil does not put there, or "" (a cache coil made before
// it wrote the tag holds only its own folders).
std::string foreign_child(const fs::path &root) {
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!is_kind(name) && name != kTmp && name != kFailed && name != kTag) return name;
  }
  return "";
}

// A UserError saying `refusal` when the root exists and is someone else's folder.
void check_is_cache(const fs::path &root, std::string_view refusal) {
  std::error_code ec;
  if (!fs::exists(root, ec) || has_coil_tag(root)) return;
  std::string foreign = foreign_child(root);
  if (foreign.empty()) return;
  throw UserError(str_cat(root.string(), " is not a coil cache (it has no CACHEDIR.TAG written by coil, and coil did "
                          "not write its '", foreign, "'): ", refusal, ". COIL_CACHE_DIR (option cache_dir) names the "
                          "cache: point it at a coil cache, or at a new or empty folder"));
}

// The root, tagged as coil's before coil writes anything in it; a UserError, with nothing
// written, when it is someone else's folder.
fs::path claimed_root() {
  fs::path root = cache_root();
  if (has_coil_tag(root)) return root;
  make_private_folders(root);
  check_is_cache(root, "coil writes nothing in it");
  try {
    write_private_file(root / kTag, kTagText);
  } catch (const UserError &) {
    std::error_code ec;
    if (!fs::exists(root / kTag, ec)) throw;  // else another process is tagging it
  }
  return root;
}

// `dir`, a folder under the root, and the folders above it: made private when missing.
fs::path ensure_folder(const fs::path &dir) {
  claimed_root();
  return make_private_folders(dir);
}

// Moves `path` under tmp/ and deletes it there; whoever renames it first deletes it.
void move_aside_and_remove(const fs::path &path, const std::string &label) {
  fs::path trash = ensure_folder(cache_root() / kTmp) / str_cat("clear-", label, ".", unique_suffix());
  std::error_code ec;
  fs::rename(path, trash, ec);
  if (ec) return;  // gone already, or another process took it
  fs::remove_all(trash, ec);
}

bool older_than(const fs::path &path, std::chrono::hours age) {
  std::error_code ec;
  auto written = fs::last_write_time(path, ec);
  return !ec && fs::file_time_type::clock::now() - written > age;
}

// Every regular file's size under `dir`; tolerant of files vanishing meanwhile.
int64_t folder_bytes(const fs::path &dir) {
  int64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    auto size = it->file_size(size_ec);
    if (!size_ec) total += int64_t(size);
  }
  return total;
}

// ---- manifests ----

using Json = nlohmann::ordered_json;

// Each file under the staging folder `dir` made private and recorded: {"path": {bytes, sha256}}.
Json seal_files(const fs::path &dir) {
  Json files = Json::object();
  ::chmod(dir.c_str(), 0700);
  for (const auto &item : fs::recursive_directory_iterator(dir)) {
    fs::path path = item.path();
    std::string name = fs::relative(path, dir).generic_string();
    COIL_ASSERT(!item.is_symlink(), "cache entry file ", name, " is a symbolic link");
    if (item.is_directory()) {
      ::chmod(path.c_str(), 0700);
      continue;
    }
    COIL_ASSERT(item.is_regular_file(), "cache entry file ", name, " is not a regular file");
    ::chmod(path.c_str(), 0600);
    std::optional<std::string> content = read_whole(path);
    if (!content) throw UserError(str_cat("cannot read ", path.string(), ": ", std::strerror(errno)));
    files[name] = {{"bytes", content->size()}, {"sha256", sha256_hex(*content)}};
  }
  return files;
}

void write_manifest(const fs::path &dir, std::string_view kind, std::string_view key) {
  Json manifest;
  manifest["format"] = kManifestFormat;
  manifest["kind"] = kind;
  manifest["key"] = key;
  manifest["files"] = seal_files(dir);
  write_private_file(dir / kManifest, manifest.dump(2) + "\n");
}

std::optional<Json> read_json(const fs::path &path) {
  std::optional<std::string> text = read_whole(path);
  if (!text) return std::nullopt;
  Json j = Json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// Why one recorded file does not match, or "".
std::string file_damage(const fs::path &entry, const std::string &name, const Json &recorded) {
  fs::path path = entry / name;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec))) return str_cat(name, " is missing");
  auto bytes = fs::file_size(path, ec);
  auto want = recorded.value("bytes", uint64_t(0));
  if (ec || bytes != want) return str_cat(name, " has ", bytes, " bytes, ", want, " when it was published");
  std::optional<std::string> content = read_whole(path);
  if (!content) return str_cat(name, " cannot be read");
  if (sha256_hex(*content) != recorded.value("sha256", ""))
    return str_cat(name, " has changed since it was published (its SHA-256 differs)");
  return "";
}

std::string manifest_damage(const fs::path &entry, std::string_view kind, std::string_view key,
                            const std::vector<std::string> &needed) {
  std::optional<Json> manifest = read_json(entry / kManifest);
  if (!manifest) return "it has no readable manifest.json";
  if (manifest->value("format", "") != kManifestFormat || manifest->value("kind", "") != kind ||
      manifest->value("key", "") != key)
    return "its manifest.json is for another entry";
  const Json &files = (*manifest)["files"];
  if (!files.is_object()) return "its manifest.json lists no files";
  for (const std::string &name : needed)
    if (!files.contains(name)) return str_cat("its manifest.json does not list ", name);
  for (const auto &[name, recorded] : files.items())
    if (std::string why = file_damage(entry, name, recorded); !why.empty()) return why;
  return "";
}

// Why the entry at `entry` cannot be used, or "" when it is intact and holds `needed`.
std::string entry_damage(const fs::path &entry, std::string_view kind, std::string_view key,
                         const std::vector<std::string> &needed) {
  try {
    return manifest_damage(entry, kind, key, needed);
  } catch (const nlohmann::json::exception &) {
    return "its manifest.json is malformed";  // a field of the wrong type: edited by hand
  }
}

// ---- entries this process has verified ----

// What a file looked like when it was hashed. Any write, truncation or replacement
// changes its change time (ctime, which no one can set back) or its inode.
using Stamp = std::tuple<dev_t, ino_t, off_t, time_t, long>;
using Stamps = std::map<std::string, Stamp>;  // every file under the entry, by path

Stamps stamps_of(const fs::path &entry) {
  Stamps out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(entry, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    out[it->path().string()] = {st.st_dev, st.st_ino, st.st_size, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
  }
  return out;
}

// A file changed less than this long before it was hashed may change again within the
// same tick of the file system's clock, keeping its ctime: its entry is hashed again at
// the next lookup (git's "racily clean" files).
constexpr time_t kSettledSeconds = 2;

struct VerifiedEntries {
  std::mutex mutex;
  std::map<std::string, Stamps> stamps;
};

VerifiedEntries &verified_entries() {
  static VerifiedEntries verified;
  return verified;
}

// Whether this process hashed `entry` before and none of its files changed since: each
// entry is hashed once per process (a precompiled header is tens of MB).
bool verified_before(const fs::path &entry, const Stamps &now) {
  std::lock_guard<std::mutex> lock(verified_entries().mutex);
  auto it = verified_entries().stamps.find(entry.string());
  return it != verified_entries().stamps.end() && it->second == now;
}

void remember_verified(const fs::path &entry, const Stamps &hashed) {
  time_t settled = std::time(nullptr) - kSettledSeconds;
  for (const auto &[path, stamp] : hashed)
    if (std::get<3>(stamp) >= settled) return;
  std::lock_guard<std::mutex> lock(verified_entries().mutex);
  verified_entries().stamps[entry.string()] = hashed;
}

// ---- what clear and info walk ----

// A folder coil published at <kind>/<key[0:2]>/<key>: its name is a key under its shard,
// and its manifest (or the meta.json that entries had before manifests) names that key.
bool is_entry(const fs::path &dir, const std::string &shard) {
  std::string key = dir.filename().string();
  if (!is_hex(key, 64) || key.compare(0, 2, shard) != 0) return false;
  for (const char *file : {kManifest, "meta.json"}) {
    std::optional<Json> j = read_json(dir / file);
    if (j && j->value("key", "") == key) return true;
  }
  return false;
}

// An entry of a coil that did not write manifests: not damaged, only older; replaced
// without a word (but under COIL_DEBUG).
bool written_before_manifests(const fs::path &entry) {
  std::error_code ec;
  return !fs::exists(entry / kManifest, ec) && is_entry(entry, entry.parent_path().filename().string());
}

// Every entry folder of `kind`.
std::vector<fs::path> entries_of(const fs::path &root, const char *kind) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator shard(root / kind, ec), end; !ec && shard != end; shard.increment(ec)) {
    std::string name = shard->path().filename().string();
    std::error_code inner_ec;
    if (!is_hex(name, 2) || !shard->is_directory(inner_ec)) continue;
    for (fs::directory_iterator entry(shard->path(), inner_ec); !inner_ec && entry != end; entry.increment(inner_ec))
      if (entry->is_directory(inner_ec) && is_entry(entry->path(), name)) out.push_back(entry->path());
  }
  return out;
}

// A source keep_failed_source() wrote (<name>-<12 hex>.cpp or .py), or its partial copy.
bool is_failed_source(const std::string &name) {
  static const std::regex kName(R"(\.?[A-Za-z0-9_.-]+-[0-9a-f]{12}\.(cpp|py)(\.[0-9]+\.[0-9a-f]{16}\.[0-9]+)?)");
  return std::regex_match(name, kName);
}

std::vector<fs::path> failed_sources(const fs::path &root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(root / kFailed, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && is_failed_source(it->path().filename().string())) out.push_back(it->path());
  return out;
}

// A staging folder (<key>.<pid>.<random>.<n>, job-<key>... for Triton's jobs) or trash.
bool is_coil_temporary(const std::string &name, bool *trash) {
  static const std::regex kName(R"((clear-[a-z]+|(job-)?[0-9a-f]{64})\.[0-9]+\.[0-9a-f]{16}\.[0-9]+)");
  *trash = name.rfind("clear-", 0) == 0;
  return std::regex_match(name, kName);
}

void remove_if_empty(const fs::path &dir) {
  std::error_code ec;
  fs::remove(dir, ec);  // a folder that still holds something stays
}

void clear_entries(const fs::path &root, CacheInfo &removed) {
  for (const char *kind : kKinds) {
    for (const fs::path &entry : entries_of(root, kind)) {
      removed.bytes += folder_bytes(entry);
      move_aside_and_remove(entry, kind);
      remove_if_empty(entry.parent_path());
      ++removed.entries_by_kind[kind];
      ++removed.entries;
    }
    remove_if_empty(root / kind);
  }
}

// Staging folders of live processes stay; those of killed ones, and trash, go.
void clear_temporaries(const fs::path &root) {
  std::error_code ec;
  for (fs::directory_iterator it(root / kTmp, ec), end; !ec && it != end; it.increment(ec)) {
    bool trash = false;
    if (!is_coil_temporary(it->path().filename().string(), &trash)) continue;
    std::error_code rm_ec;
    if (trash || older_than(it->path(), kAbandonedAge)) fs::remove_all(it->path(), rm_ec);
  }
}

// 1536 -> "1.5 KiB"
std::string human_bytes(int64_t bytes) {
  static constexpr const char *kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return str_cat(bytes, " B");
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string plural(int64_t n, const char *one, const char *many) { return str_cat(n, " ", n == 1 ? one : many); }

}  // namespace

fs::path cache_root() {
  std::string configured = options::get_string("cache_dir");
  if (!configured.empty()) return fs::absolute(configured);
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && fs::path(xdg).is_absolute()) return fs::path(xdg) / "coil";  // relative: ignored, as the spec says
  const char *home = std::getenv("HOME");
  if (home && *home) return fs::path(home) / ".cache" / "coil";
  throw UserError("cannot place coil's cache: HOME is not set; set COIL_CACHE_DIR (option cache_dir)");
}

std::string cache_key(const std::vector<std::string_view> &fields) {
  std::string text;
  for (std::string_view f : fields) {
    text += std::to_string(f.size());
    text += ':';
    text += f;
    text += '\n';
  }
  return sha256_hex(text);
}

fs::path cache_entry_dir(std::string_view kind, std::string_view key) {
  COIL_ASSERT(key.size() > 2, "cache key '", key, "' is too short");
  return cache_root() / kind / key.substr(0, 2) / key;
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::optional<fs::path> cache_lookup(std::string_view kind, std::string_view key,
                                     const std::vector<std::string> &needed) {
  fs::path entry = cache_entry_dir(kind, key);
  std::error_code ec;
  if (!fs::exists(entry, ec)) return std::nullopt;
  Stamps before = stamps_of(entry);
  if (verified_before(entry, before)) return entry;
  std::string why = entry_damage(entry, kind, key, needed);
  if (why.empty()) {
    remember_verified(entry, before);
    return entry;
  }
  if (!written_before_manifests(entry))
    std::cerr << "coil: the cache entry " << entry.string() << " is damaged (" << why
              << "); removed, building it again\n";
  else if (options::get_bool("debug"))
    std::cerr << "coil: the cache entry " << entry.string()
              << " was written before coil recorded content hashes; building it again\n";
  move_aside_and_remove(entry, "damaged");
  return std::nullopt;
}

CacheStaging::CacheStaging(std::string kind, std::string key) : kind_(std::move(kind)), key_(std::move(key)) {
  COIL_ASSERT(is_kind(kind_), "'", kind_, "' is not a kind of cache entry");
  fs::path tmp = ensure_folder(cache_root() / kTmp);
  dir_ = tmp / str_cat(key_, ".", unique_suffix());
  if (::mkdir(dir_.c_str(), 0700) != 0)
    throw UserError(str_cat("cannot create the cache folder ", dir_.string(), ": ", std::strerror(errno)));
}

CacheStaging::~CacheStaging() {
  if (published_) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

fs::path CacheStaging::publish() {
  COIL_ASSERT(!published_, "cache entry ", key_, " is published twice");
  write_manifest(dir_, kind_, key_);
  fs::path target = cache_entry_dir(kind_, key_);
  // A few rounds: a concurrent `coil cache clear` may remove the parent folder between our
  // creating it and our rename, and a damaged entry in the way must be moved aside first.
  for (int attempt = 0; attempt < 5; ++attempt) {
    ensure_folder(target.parent_path());
    if (::rename(dir_.c_str(), target.c_str()) == 0) {
      published_ = true;
      return target;
    }
    int err = errno;
    if (err == ENOENT) continue;
    if (err != EEXIST && err != ENOTEMPTY)
      throw UserError(str_cat("cannot move ", dir_.string(), " to ", target.string(), ": ", std::strerror(err)));
    if (entry_damage(target, kind_, key_, {}).empty()) return target;  // theirs; the destructor removes ours
    move_aside_and_remove(target, "stale");
  }
  throw UserError(str_cat("cannot publish the cache entry ", target.string(), ": it kept changing under us"));
}

fs::path keep_failed_source(const std::string &file_name, std::string_view source) {
  fs::path dir = ensure_folder(cache_root() / kFailed);
  fs::path path = dir / file_name;
  fs::path partial = dir / str_cat(".", file_name, ".", unique_suffix());
  write_private_file(partial, source);
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) throw UserError(str_cat("cannot write ", path.string(), ": ", ec.message()));
  return path;
}

CacheInfo cache_info() {
  CacheInfo info;
  fs::path root = cache_root();
  check_is_cache(root, "coil counts nothing in it");
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return info;
  info.bytes = folder_bytes(root);
  for (const char *kind : kKinds) {
    if (!fs::is_directory(root / kind, ec)) continue;
    int64_t n = int64_t(entries_of(root, kind).size());
    info.entries_by_kind[kind] = n;
    info.entries += n;
  }
  info.failed_sources = int64_t(failed_sources(root).size());
  return info;
}

CacheInfo cache_clear() {
  fs::path root = cache_root();
  check_is_cache(root, "coil removes nothing from it");
  CacheInfo removed;
  clear_entries(root, removed);
  for (const fs::path &source : failed_sources(root)) {
    std::error_code ec;
    auto bytes = fs::file_size(source, ec);
    if (ec) bytes = 0;
    if (!fs::remove(source, ec)) continue;
    removed.bytes += int64_t(bytes);
    ++removed.failed_sources;
  }
  remove_if_empty(root / kFailed);
  clear_temporaries(root);
  return removed;
}

// cache    /home/u/.cache/coil
// cpp      12 entries
// failed   1 source a compiler rejected (/home/u/.cache/coil/failed)
// total    12 entries, 3.4 MiB
std::string cache_info_text() {
  fs::path root = cache_root();
  CacheInfo info = cache_info();
  std::string out = str_cat("cache    ", root.string(), "\n");
  for (const auto &[kind, n] : info.entries_by_kind)
    out += str_cat(kind, std::string(kind.size() < 9 ? 9 - kind.size() : 1, ' '), plural(n, "entry", "entries"), "\n");
  if (info.failed_sources > 0)
    out += str_cat("failed   ", plural(info.failed_sources, "source", "sources"), " a compiler rejected (",
                   (root / kFailed).string(), ")\n");
  out += str_cat("total    ", plural(info.entries, "entry", "entries"), ", ", human_bytes(info.bytes), "\n");
  return out;
}

}  // namespace coil
