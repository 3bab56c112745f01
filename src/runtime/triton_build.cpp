#include "runtime/triton_build.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/cache.h"
#include "runtime/compiler.h"
#include "support/error.h"
#include "support/options.h"
#include "support/text.h"

extern char **environ;

namespace coil {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

constexpr const char *kKind = "triton";
constexpr size_t kMaxMessageShown = 4096;
constexpr int kNoTriton = 3;  // the helper's exit status for a Python without triton

// The folder runtime/include sits in is coil's source folder: the helper and the
// project's virtual environment live there too.
fs::path coil_source_dir() { return runtime_include_dir().parent_path().parent_path(); }

fs::path helper_path() { return triton_helper_file("compile_kernels.py"); }

}  // namespace

fs::path triton_helper_file(std::string_view name) {
  fs::path helper = coil_source_dir() / "python" / "coil_triton" / name;
  std::error_code ec;
  if (!fs::is_regular_file(helper, ec))
    throw UserError(str_cat("cannot find coil's Triton helper ", helper.string(),
                            "; set COIL_SOURCE_DIR to coil's source folder"));
  return helper;
}

namespace {

std::string read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(str_cat("cannot read ", path.string(), ": ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  out.close();
  if (!out) throw UserError(str_cat("cannot write ", path.string(), ": ", std::strerror(errno)));
}

std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// The head of a long message: the first lines say what went wrong.
std::string cut(std::string text) {
  text = trimmed(std::move(text));
  if (text.size() <= kMaxMessageShown) return text;
  size_t at = text.rfind('\n', kMaxMessageShown);
  if (at == std::string::npos) at = kMaxMessageShown;
  return str_cat(text.substr(0, at), "\n... (", text.size() - at, " more bytes)");
}

// Variables Triton, MLIR or LLVM read while compiling: a kernel built under
// TRITON_OVERRIDE_ARCH or DISABLE_LLVM_OPT is not the same kernel. Cache folders are not.
std::string compiler_environment() {
  static constexpr const char *kPrefixes[] = {"TRITON_", "MLIR_", "LLVM_", "NVPTX_", "DISABLE_LLVM_OPT",
                                              "DISABLE_PTXAS_OPT", "USE_IR_LOC", "PTXAS_"};
  static const std::set<std::string> kIgnored = {"TRITON_CACHE_DIR", "TRITON_HOME"};
  std::vector<std::string> seen;
  for (char **e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool matches = std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                               [&](const char *p) { return name.rfind(p, 0) == 0; });
    if (matches && !kIgnored.count(name)) seen.push_back(entry);
  }
  std::sort(seen.begin(), seen.end());
  std::string out;
  for (const auto &s : seen) out += s + "\n";
  return out;
}

// The interpreter and the helper, asked once per process: what goes into every key.
struct TritonToolchain {
  std::string python;
  fs::path helper;
  std::string helper_digest;  // a changed helper may compile differently
  std::string version;        // Triton's
};

TritonToolchain probe_toolchain(const std::string &python) {
  fs::path helper = helper_path();
  std::string hint = "set COIL_TRITON_PYTHON (option triton.python) to a Python with triton, or run scripts/setup.sh, "
                     "which makes coil's .venv with it";
  ProcessResult result;
  try {
    result = run_process({python, helper.string(), "--version"});
  } catch (const UserError &e) {
    throw UserError(str_cat("cannot compile Triton kernels: ", e.message(), "\n", hint));
  }
  if (result.exit_code == kNoTriton) throw UserError(str_cat("cannot compile Triton kernels: ", trimmed(result.err), "\n", hint));
  if (result.exit_code != 0)
    throw UserError(str_cat("cannot compile Triton kernels: '", python, " ", helper.string(), " --version' exited with ",
                            result.exit_code, ":\n", cut(result.err + result.out), "\n", hint));
  try {
    json reply = json::parse(result.out);
    return {python, helper, cache_key({read_file(helper)}), reply.at("triton").get<std::string>()};
  } catch (const json::exception &e) {
    throw UserError(str_cat("cannot compile Triton kernels: unexpected reply from '", python, " ", helper.string(),
                            " --version': ", cut(result.out), "\n", hint));
  }
}

const TritonToolchain &toolchain() {
  std::string python = triton_python();
  static std::mutex mutex;
  static std::map<std::string, TritonToolchain> found;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(python);
  if (it != found.end()) return it->second;
  return found[python] = probe_toolchain(python);
}

bool is_identifier(const std::string &name) {
  auto ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), ok);
}

const TritonArg *find_arg(const TritonCompileRequest &r, const std::string &name) {
  for (const auto &a : r.signature)
    if (a.name == name) return &a;
  return nullptr;
}

// A request comes from coil's code generator: a malformed one is coil's bug.
void check_request(const TritonCompileRequest &r) {
  COIL_ASSERT(is_identifier(r.name), "Triton kernel name '", r.name, "' is not a Python identifier");
  std::set<std::string> names;
  for (const auto &a : r.signature) {
    COIL_ASSERT(names.insert(a.name).second, "kernel ", r.name, " declares argument ", a.name, " twice");
    COIL_ASSERT(!a.type.empty(), "argument ", a.name, " of kernel ", r.name, " has no type");
    COIL_ASSERT(a.type != "constexpr" || r.constexprs.count(a.name), "constexpr ", a.name, " of kernel ", r.name,
                " has no value");
  }
  for (const auto &[name, value] : r.constexprs) {
    const TritonArg *arg = find_arg(r, name);
    COIL_ASSERT(arg && arg->type == "constexpr", "kernel ", r.name, " gives a value to ", name,
                ", which is not one of its constexpr arguments");
  }
  for (const auto &name : r.divisible_by_16) {
    const TritonArg *arg = find_arg(r, name);
    COIL_ASSERT(arg && arg->type != "constexpr", "kernel ", r.name, " marks ", name,
                " divisible by 16, which is not one of its run-time arguments");
  }
  COIL_ASSERT(r.num_warps > 0 && (r.num_warps & (r.num_warps - 1)) == 0, "num_warps of ", r.name, " is ",
              r.num_warps, ", not a power of 2");
  COIL_ASSERT(r.num_stages >= 1, "num_stages of ", r.name, " is ", r.num_stages);
}

json constexprs_json(const TritonCompileRequest &r) {
  json out = json::object();
  for (const auto &[name, value] : r.constexprs) std::visit([&, &n = name](auto v) { out[n] = v; }, value);
  return out;
}

// The helper's description of one kernel (see compile_kernels.py for the format).
json job_entry(const TritonCompileRequest &r, const fs::path &dir) {
  json signature = json::object();
  for (const auto &a : r.signature) signature[a.name] = a.type;
  return {{"name", r.name},           {"source", (dir / (r.name + ".py")).string()},
          {"function", r.name},       {"signature", signature},
          {"constexprs", constexprs_json(r)}, {"divisibility", r.divisible_by_16},
          {"num_warps", r.num_warps}, {"num_stages", r.num_stages},
          {"capability", r.capability}, {"out_dir", dir.string()}};
}

std::string request_key(const TritonCompileRequest &r, const TritonToolchain &t) {
  json described = job_entry(r, "");
  described.erase("source");
  described.erase("out_dir");
  return cache_key({kKind, kCoilVersion, t.version, t.helper_digest, compiler_environment(), described.dump(),
                    r.source});
}

bool has_binary(const fs::path &dir, const std::string &name) {
  std::error_code ec;
  auto cubin_size = fs::file_size(dir / (name + ".cubin"), ec);
  return !ec && cubin_size > 0 && fs::is_regular_file(dir / (name + ".json"), ec);
}

TritonBinary read_entry(const fs::path &entry, const std::string &name, bool hit) {
  fs::path facts = entry / (name + ".json");
  return {read_file(entry / (name + ".cubin")), parse_launch_facts(read_file(facts), facts.string()), entry, hit};
}

void write_meta(const fs::path &dir, const TritonCompileRequest &r, const std::string &key, const TritonToolchain &t,
                double seconds, size_t batch) {
  nlohmann::ordered_json meta;
  meta["kind"] = kKind;
  meta["key"] = key;
  meta["name"] = r.name;
  meta["coil_version"] = kCoilVersion;
  meta["triton_version"] = t.version;
  meta["python"] = t.python;
  meta["capability"] = r.capability;
  meta["created"] = utc_timestamp();
  meta["batch_seconds"] = seconds;  // the helper's whole run, shared by `batch_size` kernels
  meta["batch_size"] = batch;
  write_file(dir / "meta.json", meta.dump(2) + "\n");
}

// One kernel the cache did not have, being built in its own staging folder.
struct Miss {
  size_t index;  // into the requests
  std::string key;
  std::unique_ptr<CacheStaging> staging;
};

// Why the helper left no binary for `m`: its .error file, else what the helper printed.
std::string failure_text(const Miss &m, const std::string &name, const ProcessResult &run) {
  std::error_code ec;
  fs::path error = m.staging->dir() / (name + ".error");
  if (fs::is_regular_file(error, ec)) return cut(read_file(error));
  return cut(str_cat("the helper left no result for this kernel (exit status ", run.exit_code, ")\n", run.err,
                     run.out));
}

std::string failure_message(const TritonCompileRequest &r, const Miss &m, const std::string &text) {
  fs::path kept = keep_failed_source(str_cat(r.name, "-", m.key.substr(0, 12), ".py"), r.source);
  std::string shown = replace_all(text, (m.staging->dir() / (r.name + ".py")).string(), kept.string());
  return str_cat("Triton failed to compile kernel '", r.name, "' (source kept in ", kept.string(), "):\n", shown);
}

// Runs the helper once over every miss; publishes what compiled, throws for what did not.
void compile_misses(const std::vector<TritonCompileRequest> &requests, std::vector<Miss> &misses,
                    const TritonToolchain &t, std::vector<TritonBinary> &out) {
  json kernels = json::array();
  std::vector<std::string_view> keys;
  for (const Miss &m : misses) {
    const TritonCompileRequest &r = requests[m.index];
    write_file(m.staging->dir() / (r.name + ".py"), r.source);
    kernels.push_back(job_entry(r, m.staging->dir()));
    keys.push_back(m.key);
  }
  CacheStaging job_dir(kKind, "job-" + cache_key(keys));  // never published: removed on the way out
  fs::path job = job_dir.dir() / "job.json";
  write_file(job, json{{"kernels", kernels}}.dump(2));

  auto start = std::chrono::steady_clock::now();
  ProcessResult run = run_process({t.python, t.helper.string(), job.string()});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<std::string> failures;
  for (Miss &m : misses) {
    const TritonCompileRequest &r = requests[m.index];
    if (!has_binary(m.staging->dir(), r.name)) {
      failures.push_back(failure_message(r, m, failure_text(m, r.name, run)));
      continue;
    }
    write_meta(m.staging->dir(), r, m.key, t, seconds, misses.size());
    fs::path entry = m.staging->publish();
    out[m.index] = read_entry(entry, r.name, false);
  }
  if (failures.empty()) return;
  std::string message;
  for (const auto &f : failures) message += (message.empty() ? "" : "\n\n") + f;
  throw UserError(message);
}

std::vector<TritonBinary> build_or_reuse(const std::vector<TritonCompileRequest> &requests) {
  for (const auto &r : requests) check_request(r);
  const TritonToolchain &t = toolchain();
  std::vector<TritonBinary> out(requests.size());
  std::vector<Miss> misses;
  std::map<std::string, size_t> first_of_key;  // a kernel asked for twice is compiled once
  std::vector<std::pair<size_t, size_t>> copies;
  for (size_t i = 0; i < requests.size(); ++i) {
    std::string key = request_key(requests[i], t);
    auto [it, fresh] = first_of_key.emplace(key, i);
    if (!fresh) {
      copies.emplace_back(i, it->second);
      continue;
    }
    const std::string &name = requests[i].name;
    if (std::optional<fs::path> entry = cache_lookup(kKind, key, {name + ".cubin", name + ".json", "meta.json"})) {
      out[i] = read_entry(*entry, name, true);
      continue;
    }
    misses.push_back({i, key, std::make_unique<CacheStaging>(kKind, key)});
  }
  if (!misses.empty()) compile_misses(requests, misses, t, out);
  for (const auto &[copy, original] : copies) out[copy] = out[original];
  return out;
}

}  // namespace

TritonLaunchFacts parse_launch_facts(std::string_view json_text, std::string_view origin) {
  try {
    json j = json::parse(json_text);
    TritonLaunchFacts f;
    f.name = j.at("name").get<std::string>();
    f.num_warps = j.at("num_warps").get<int>();
    f.num_ctas = j.value("num_ctas", 1);
    f.shared = j.at("shared").get<int64_t>();
    for (const auto &a : j.at("args")) f.args.push_back({a.at("name").get<std::string>(), a.at("type").get<std::string>()});
    for (const auto &h : j.at("hidden_args"))
      f.hidden_args.push_back({h.at("name").get<std::string>(), h.at("size").get<int64_t>(), h.value("align", int64_t(1))});
    f.cooperative_grid = j.value("launch_cooperative_grid", false);
    f.pdl = j.value("launch_pdl", false);
    f.capability = j.at("target").at("arch").get<int>();
    f.triton_version = j.value("triton_version", "");
    return f;
  } catch (const json::exception &e) {
    throw UserError(str_cat("malformed launch facts in ", origin, ": ", e.what()));
  }
}

std::vector<TritonBinary> build_triton_kernels(const std::vector<TritonCompileRequest> &requests) {
  try {
    return build_or_reuse(requests);
  } catch (const fs::filesystem_error &e) {
    throw UserError(str_cat("the cache of compiled kernels: ", e.what()));
  }
}

TritonBinary build_triton_kernel(const TritonCompileRequest &request) { return build_triton_kernels({request})[0]; }

std::string triton_python() {
  std::string configured = options::get_string("triton.python");
  if (!configured.empty()) return configured;
  std::error_code ec;
  fs::path venv = coil_source_dir() / ".venv" / "bin" / "python";
  if (fs::is_regular_file(venv, ec) && ::access(venv.c_str(), X_OK) == 0) return venv.string();
  return "python3";
}

std::string triton_version() { return toolchain().version; }

}  // namespace coil
