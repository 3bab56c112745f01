#include "runtime/compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/cache.h"
#include "runtime/pch.h"
#include "support/error.h"
#include "support/options.h"
#include "support/text.h"

extern char **environ;

namespace coil {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxStderrShown = 4096;

// A file descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Both ends close on exec: the child gets only the end it is handed as stdout or stderr.
struct Pipe {
  Fd read, write;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw UserError(str_cat("cannot create a pipe: ", std::strerror(errno)));
    read.fd = fds[0];
    write.fd = fds[1];
  }
};

// Reads both pipes to their ends at once, so a child filling one never blocks on it.
void drain(Fd &out_fd, Fd &err_fd, std::string &out, std::string &err) {
  pollfd fds[2] = {{out_fd.fd, POLLIN, 0}, {err_fd.fd, POLLIN, 0}};
  std::string *sinks[2] = {&out, &err};
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw UserError(str_cat("cannot read a subprocess's output: ", std::strerror(errno)));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        sinks[i]->append(buffer, size_t(n));
        continue;
      }
      fds[i].fd = -1;  // end of file (or an error): poll ignores negative descriptors
      --open;
    }
  }
}

// Reaps `pid`; the exit code, 128 + N for signal N, -1 when the status is lost (a host
// process that ignores SIGCHLD has its children reaped for it).
int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::optional<fs::path> find_on_path(const std::string &name) {
  auto runnable = [](const fs::path &p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return fs::absolute(name);
    return std::nullopt;
  }
  const char *path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (runnable(candidate)) return fs::absolute(candidate);
  }
  return std::nullopt;
}

CxxCompiler probe_compiler(const std::string &name) {
  std::optional<fs::path> path = find_on_path(name);
  if (!path) throw UserError(str_cat("cpp.compiler is '", name, "', which is not an executable on PATH"));
  ProcessResult version = run_process({path->string(), "--version"});
  if (version.exit_code != 0)
    throw UserError(str_cat("cpp.compiler is '", name, "', but '", path->string(), " --version' exited with ",
                            version.exit_code, ": ", first_line(version.err)));
  std::string line = first_line(version.out.empty() ? version.err : version.out);
  std::error_code ec;
  fs::path resolved = fs::canonical(*path, ec);
  return {path->string(), str_cat(line, " (", (ec ? *path : resolved).string(), ")")};
}

bool valid_stem(const std::string &name) {
  auto ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; };
  return !name.empty() && name[0] != '.' && std::all_of(name.begin(), name.end(), ok);
}

void write_text(const fs::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  out.close();
  if (!out) throw UserError(str_cat("cannot write ", path.string(), ": ", std::strerror(errno)));
}

std::string joined(const std::vector<std::string> &parts, const std::string &separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

// One argument as a POSIX shell reads it back: a plain word as it is, anything else in
// single quotes, inside which nothing is special but the quote itself, written '\''
// (close, a quoted quote, reopen). A path holding ' or $(...) then stays one argument.
std::string shell_word(const std::string &a) {
  bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                 "0123456789-_=+./:,@") == std::string::npos;
  if (plain) return a;
  std::string out = "'";
  for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A command line a person can paste into a shell.
std::string shell_line(const std::vector<std::string> &argv) {
  std::vector<std::string> quoted;
  for (const auto &a : argv) quoted.push_back(shell_word(a));
  return joined(quoted, " ");
}

// The first errors matter most: keep the head, cut at a line end.
std::string cut_output(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() <= kMaxStderrShown) return text;
  size_t cut = text.rfind('\n', kMaxStderrShown);
  if (cut == std::string::npos) cut = kMaxStderrShown;
  return str_cat(text.substr(0, cut), "\n... (", text.size() - cut, " more bytes)");
}

std::vector<std::string> compile_command(const CxxCompiler &cc, const std::vector<std::string> &flags,
                                         const fs::path &source, const fs::path &output) {
  // Libraries go after the source, or a linker that drops unneeded ones would drop them.
  auto is_link = [](const std::string &f) { return f.rfind("-l", 0) == 0 || f.rfind("-Wl,", 0) == 0; };
  std::vector<std::string> argv = {cc.path};
  for (const auto &f : flags)
    if (!is_link(f)) argv.push_back(f);
  argv.insert(argv.end(), {source.string(), "-o", output.string()});
  for (const auto &f : flags)
    if (is_link(f)) argv.push_back(f);
  return argv;
}

// What one compile needs besides the request: the compiler, its flags and the key.
struct Build {
  CxxCompiler compiler;
  Isa isa;
  std::vector<std::string> flags;
  std::string key;
  std::optional<PchRequest> pch;       // the request wants the precompiled prelude and cpp.pch is on
  std::vector<std::string> pch_flags;  // before `flags`; empty when no header could be built
  bool pch_used = false;               // the compile that succeeded used it
};

void write_meta(const fs::path &dir, const SharedObjectRequest &r, const Build &b, double seconds) {
  nlohmann::ordered_json meta;
  meta["kind"] = "cpp";
  meta["key"] = b.key;
  meta["name"] = r.name;
  meta["coil_version"] = kCoilVersion;
  meta["compiler"] = b.compiler.identity;
  meta["isa"] = isa_name(b.isa);
  meta["flags"] = b.flags;
  meta["pch"] = b.pch_used ? nlohmann::ordered_json(pch_key(*b.pch)) : nlohmann::ordered_json();
  meta["created"] = utc_timestamp();
  meta["compile_seconds"] = seconds;
  write_text(dir / "meta.json", meta.dump(2) + "\n");
}

// The compile with the precompiled prelude; false when it failed (a damaged header, a
// compiler that refuses it), and the caller compiles again without.
bool compile_with_pch(Build &b, const fs::path &source, const fs::path &output) {
  std::vector<std::string> flags = b.pch_flags;
  flags.insert(flags.end(), b.flags.begin(), b.flags.end());
  ProcessResult result = run_process(compile_command(b.compiler, flags, source, output));
  std::error_code ec;
  bool debug = options::get_bool("debug");
  if (result.exit_code != 0 || !fs::is_regular_file(output, ec)) {
    if (debug)
      std::cerr << "coil: the build with the precompiled prelude failed (" << first_line(result.err)
                << "); building without it\n";
    return false;
  }
  std::string rejected = pch_rejection(result.err);
  b.pch_used = rejected.empty();
  if (debug && !b.pch_used) std::cerr << "coil: the precompiled prelude was not used: " << rejected << "\n";
  return true;
}

// Compiles into the staging folder; on failure keeps the source and throws for the user.
double compile_in(const fs::path &dir, const SharedObjectRequest &r, Build &b) {
  fs::path source = dir / (r.name + ".cpp");
  fs::path output = dir / (r.name + ".so");
  write_text(source, r.source);
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  if (!b.pch_flags.empty() && compile_with_pch(b, source, output)) return elapsed();
  ProcessResult result = run_process(compile_command(b.compiler, b.flags, source, output));
  double seconds = elapsed();
  std::error_code ec;
  if (result.exit_code == 0 && fs::is_regular_file(output, ec)) return seconds;

  fs::path kept = keep_failed_source(str_cat(r.name, "-", b.key.substr(0, 12), ".cpp"), r.source);
  std::string shown = cut_output(replace_all(result.err + result.out, source.string(), kept.string()));
  if (shown.empty()) shown = str_cat("(no output; exit status ", result.exit_code, ")");
  fs::path kept_so = fs::path(kept).replace_extension(".so");
  throw UserError(str_cat("the C++ compiler failed on ", kept.string(), ":\n", shown,
                          "\ncommand: ", shell_line(compile_command(b.compiler, b.flags, kept, kept_so))));
}

std::string build_or_reuse(const SharedObjectRequest &r, bool *cache_hit) {
  COIL_ASSERT(valid_stem(r.name), "kernel file name '", r.name, "' is not a plain file stem");
  Build b;
  b.compiler = find_compiler();
  b.isa = r.isa ? *r.isa : selected_isa();
  fs::path include = runtime_include_dir();
  std::string headers = headers_digest(include);
  b.flags = shared_object_flags(include, b.isa, r.flags);
  if (r.precompiled_prelude && options::get_bool("cpp.pch"))
    b.pch = PchRequest{b.compiler, b.isa, b.flags, include, headers};
  // The header's key, not whether it could be built: a hit needs no header.
  b.key = cache_key({"cpp", kCoilVersion, r.name, b.compiler.identity, isa_name(b.isa), joined(b.flags, "\n"), headers,
                     b.pch ? pch_key(*b.pch) : "", r.source});
  std::string so_name = r.name + ".so";

  std::optional<fs::path> entry = cache_lookup("cpp", b.key, {so_name, "meta.json"});
  if (cache_hit) *cache_hit = entry.has_value();
  if (entry) return (*entry / so_name).string();

  if (b.pch) b.pch_flags = pch_flags(*b.pch);
  CacheStaging staging("cpp", b.key);
  double seconds = compile_in(staging.dir(), r, b);
  if (options::get_bool("debug"))
    std::cerr << "coil: compiled " << so_name << " in " << seconds << " s"
              << (b.pch_used ? " with the precompiled prelude" : "") << "\n";
  write_meta(staging.dir(), r, b, seconds);
  return (staging.publish() / so_name).string();
}

}  // namespace

ProcessResult run_process(const std::vector<std::string> &argv) {
  COIL_ASSERT(!argv.empty(), "run_process needs a program to run");
  Pipe out;
  Pipe err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write.fd, 2);
  std::vector<char *> args;
  for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  out.write.reset();  // the child holds the write ends now; ours would keep the pipes open
  err.write.reset();
  if (rc != 0) throw UserError(str_cat("cannot run ", argv[0], ": ", std::strerror(rc)));

  ProcessResult result;
  try {
    drain(out.read, err.read, result.out, result.err);
  } catch (...) {
    out.read.reset();
    err.read.reset();
    wait_for(pid);  // no zombie, even on the way out
    throw;
  }
  result.exit_code = wait_for(pid);
  return result;
}

CxxCompiler find_compiler() {
  std::string name = options::get_string("cpp.compiler");
  if (name.empty()) name = "c++";
  static std::mutex mutex;
  static std::map<std::string, CxxCompiler> found;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(name);
  if (it != found.end()) return it->second;
  return found[name] = probe_compiler(name);
}

fs::path runtime_include_dir() {
  std::error_code ec;
  // A shared library holding coil (the Python package's module) finds the headers installed
  // beside it first: those of the code it was built from, wherever it was installed.
  Dl_info self{};
  if (::dladdr(reinterpret_cast<const void *>(&runtime_include_dir), &self) && self.dli_fname &&
      fs::path(self.dli_fname).is_absolute()) {
    fs::path beside = fs::path(self.dli_fname).parent_path() / "runtime" / "include";
    if (fs::is_directory(beside, ec)) return beside;
  }
#ifdef COIL_RUNTIME_INCLUDE_DIR
  if (fs::is_directory(COIL_RUNTIME_INCLUDE_DIR, ec)) return fs::path(COIL_RUNTIME_INCLUDE_DIR);
#endif
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path dir = exe.parent_path(); !ec && !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "runtime" / "include", ec)) return dir / "runtime" / "include";
    if (dir == dir.root_path()) break;
  }
  const char *source_dir = std::getenv("COIL_SOURCE_DIR");
  if (source_dir && *source_dir && fs::is_directory(fs::path(source_dir) / "runtime" / "include", ec))
    return fs::path(source_dir) / "runtime" / "include";
  throw UserError(str_cat("cannot find coil's kernel headers (runtime/include) beside ", exe.string(),
                          ", in a folder above it or in $COIL_SOURCE_DIR; set COIL_SOURCE_DIR to coil's source folder"));
}

std::string headers_digest(const fs::path &include) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto &entry : fs::recursive_directory_iterator(include)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    files.emplace_back(fs::relative(entry.path(), include).string(), text.str());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string_view> fields;
  for (const auto &[name, text] : files) {
    fields.push_back(name);
    fields.push_back(text);
  }
  return cache_key(fields);
}

std::vector<std::string> shared_object_flags(const fs::path &include, Isa isa, const std::vector<std::string> &extra) {
  std::vector<std::string> flags = {"-shared", "-fPIC", "-O3", "-std=c++17", "-fopenmp", "-fno-math-errno",
                                    "-ffp-contract=off", "-I", include.string()};
  for (auto &f : isa_flags(isa)) flags.push_back(std::move(f));
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

std::string build_shared_object(const SharedObjectRequest &r, bool *cache_hit) {
  try {
    return build_or_reuse(r, cache_hit);
  } catch (const fs::filesystem_error &e) {
    throw UserError(str_cat("the cache of compiled kernels: ", e.what()));
  }
}

}  // namespace coil
