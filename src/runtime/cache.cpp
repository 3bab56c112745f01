#include "runtime/cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>

#include "runtime/sha256.h"
#include "support/error.h"
#include "support/options.h"

namespace coil {
namespace fs = std::filesystem;
namespace {

constexpr const char *kTmp = "tmp";
constexpr const char *kFailed = "failed";
constexpr auto kAbandonedAge = std::chrono::hours(1);

// <pid>.<random>.<counter>: unique across processes (pid), across forks of one process
// (pid again: a forked child inherits the generator's state) and within one (counter).
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char random[17];
  std::snprintf(random, sizeof random, "%016llx", static_cast<unsigned long long>(rng()));
  return str_cat(getpid(), ".", random, ".", counter++);
}

fs::path ensure_folder(const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(str_cat("cannot create the cache folder ", dir.string(), ": ", ec.message()));
  return dir;
}

void write_file(const fs::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  out.close();
  if (!out) throw UserError(str_cat("cannot write ", path.string(), ": ", std::strerror(errno)));
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

// Folders exactly two levels below a kind's folder: <kind>/<key[0:2]>/<key>.
int64_t count_entries(const fs::path &kind_dir) {
  int64_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator shard(kind_dir, ec), end; !ec && shard != end; shard.increment(ec)) {
    std::error_code inner_ec;
    if (!shard->is_directory(inner_ec)) continue;
    for (fs::directory_iterator entry(shard->path(), inner_ec); !inner_ec && entry != end; entry.increment(inner_ec))
      if (entry->is_directory(inner_ec)) ++n;
  }
  return n;
}

int64_t count_files(const fs::path &dir) {
  int64_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) ++n;
  return n;
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

CacheStaging::CacheStaging(std::string kind, std::string key) : kind_(std::move(kind)), key_(std::move(key)) {
  fs::path tmp = ensure_folder(cache_root() / kTmp);
  dir_ = tmp / str_cat(key_, ".", unique_suffix());
  std::error_code ec;
  if (!fs::create_directory(dir_, ec))
    throw UserError(str_cat("cannot create the cache folder ", dir_.string(), ": ",
                            ec ? ec.message() : "it exists already"));
}

CacheStaging::~CacheStaging() {
  if (published_) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

fs::path CacheStaging::publish(const std::function<bool(const fs::path &)> &complete) {
  COIL_ASSERT(!published_, "cache entry ", key_, " is published twice");
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
    if (complete(target)) return target;  // theirs; the destructor removes ours
    move_aside_and_remove(target, "stale");
  }
  throw UserError(str_cat("cannot publish the cache entry ", target.string(), ": it kept changing under us"));
}

fs::path keep_failed_source(const std::string &file_name, std::string_view source) {
  fs::path dir = ensure_folder(cache_root() / kFailed);
  fs::path path = dir / file_name;
  fs::path partial = dir / str_cat(".", file_name, ".", unique_suffix());
  write_file(partial, source);
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) throw UserError(str_cat("cannot write ", path.string(), ": ", ec.message()));
  return path;
}

CacheInfo cache_info() {
  CacheInfo info;
  fs::path root = cache_root();
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code type_ec;
    bool folder = it->is_directory(type_ec);
    if (!folder) {
      auto size = it->file_size(type_ec);
      if (!type_ec) info.bytes += int64_t(size);
      continue;
    }
    info.bytes += folder_bytes(it->path());
    if (name == kTmp) continue;
    if (name == kFailed) {
      info.failed_sources += count_files(it->path());
      continue;
    }
    int64_t n = count_entries(it->path());
    info.entries_by_kind[name] = n;
    info.entries += n;
  }
  return info;
}

void cache_clear() {
  fs::path root = cache_root();
  std::error_code ec;
  std::vector<fs::path> tops;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) tops.push_back(it->path());
  for (const fs::path &top : tops) {
    std::string name = top.filename().string();
    if (name != kTmp) {
      move_aside_and_remove(top, name);
      continue;
    }
    // Staging folders of live processes stay; those of killed ones, and trash, go.
    for (fs::directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
      bool trash = it->path().filename().string().rfind("clear-", 0) == 0;
      std::error_code rm_ec;
      if (trash || older_than(it->path(), kAbandonedAge)) fs::remove_all(it->path(), rm_ec);
    }
  }
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
