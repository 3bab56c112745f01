#include "support/options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "support/error.h"

namespace coil::options {
namespace {

constexpr int64_t kNoMinimum = std::numeric_limits<int64_t>::min();

/// An option and what the registry checks beyond its type.
struct Entry {
  Option option;
  int64_t min_int = kNoMinimum;  // Int only
};

Entry bool_option(std::string name, bool value, std::string doc) {
  return {{std::move(name), Type::Bool, value ? "true" : "false", {}, std::move(doc)}};
}

Entry int_option(std::string name, int64_t value, int64_t min, std::string doc) {
  return {{std::move(name), Type::Int, std::to_string(value), {}, std::move(doc)}, min};
}

Entry string_option(std::string name, std::string value, std::string doc) {
  return {{std::move(name), Type::String, std::move(value), {}, std::move(doc)}};
}

Entry choice_option(std::string name, std::vector<std::string> choices, std::string doc) {
  std::string value = choices.front();
  return {{std::move(name), Type::Choice, std::move(value), std::move(choices), std::move(doc)}};
}

// Every knob of coil. Keep the doc to one line: `coil config` prints it in a table.
std::vector<Entry> registered_entries() {
  return {
      bool_option("debug", false, "print each stage's decisions to stderr"),
      int_option("dynamic.sizes_per_graph", 8, 1,
                 "most sizes a torch.compile graph of symbolic sizes whose guards fix a symbol is compiled for, one "
                 "compile each; a call at another size runs in eager PyTorch (any other graph of symbolic sizes is "
                 "compiled once for every size)"),
      string_option("trace", "",
                    "directory for each stage's dump (graph.txt, graph_after_passes.txt, "
                    "ir_pre_fusion.txt, ir_post_fusion.txt, memory_plan.txt); empty: no dumps"),
      string_option("cache_dir", "", "content-addressed cache of compiled artifacts; empty: ~/.cache/coil"),
      int_option("max_fusion_size", 64, 1, "most nodes one kernel may hold"),
      bool_option("fusion.horizontal", true, "fuse independent kernels of one iteration space that share reads"),
      int_option("fusion.max_streams", 16, 0,
                 "most buffers of 1 MiB or more a kernel of horizontal fusion that saves little traffic may stream "
                 "at once; 0: no limit"),
      bool_option("fusion.inline_pointwise", true,
                  "recompute cheap pointwise producers inside consumers instead of storing them"),
      int_option("fusion.max_inline_reads", 8, 0, "most distinct loads a recomputed producer may add to a consumer (loads of tensors 16 times smaller "
                  "than the producer, read from cache, not counted)"),
      bool_option("fusion.memory_order_loops", true,
                  "pointwise and reduction loops in their output's memory order (channels-last, transposed), not its logical one"),
      choice_option("extern.align_product_rows", {"auto", "always", "never"},
                    "matrix products read operands and write results whose rows are not 16-byte aligned through "
                    "copies with padded rows, and an mm or addmm whose dims are not runs on copies padded with zeros "
                    "(auto: bf16 and f16 matrices of 2^20 elements or more on the GPU, dims padded where the "
                    "arithmetic outweighs the copies)"),
      choice_option("extern.conv_weight_grad", {"library", "loops"},
                    "convolution weight gradients on the GPU: the library's backward-filter pass (cuDNN), or a generated "
                    "reduction over the batch and output positions"),
      bool_option("layout.channels_last_convolutions", true,
                  "convolutions write channels-last outputs where an operand is, and the values after them follow"),
      bool_option("emulate_precision_casts", false,
                  "round bf16/f16 after every op as eager does, not only at stores"),
      int_option("num_threads", 0, 0, "threads of CPU kernels; 0: OMP_NUM_THREADS if set, else one per core"),
      choice_option("cpp.isa", {"auto", "avx512", "avx2", "scalar"},
                    "SIMD instruction set of CPU kernels: auto (the best this machine has), avx512, avx2 "
                    "or scalar"),
      bool_option("cpp.prefault", true,
                  "CPU kernels fault in the pages of graph outputs of 1 MiB or more ahead of their writes, 256 KiB "
                  "per system call, when the caller hands them over unbacked (freshly allocated)"),
      bool_option("cpp.profile", false, "time each kernel of a compiled graph"),
      bool_option("cpp.onednn", true,
                  "run CPU matrix products and convolutions through oneDNN (with their epilogues as post-ops) when "
                  "coil was built with it; off: plain loops"),
      bool_option("cpp.conv1x1_as_matmul", true,
                  "run a 1x1 convolution without padding whose input and result hold their channels innermost as "
                  "a oneDNN matmul on the tensors where they are; off: a oneDNN convolution, which reorders the "
                  "weights into its blocked layout on every call"),
      bool_option("cpp.pch", true,
                  "compile CPU kernels with a precompiled header of the kernel prelude (built once per compiler, "
                  "flags and ISA)"),
      int_option("cpp.vector_lanes", 0, 0,
                 "lanes of the SIMD vectors of CPU kernels (a power of two up to 64); 0: the ISA's register of "
                 "floats, 16 on AVX-512 and 8 on AVX2"),
      string_option("cpp.compiler", "c++", "C++ compiler that builds CPU kernels"),
      string_option("cpp.plan", "",
                    "overrides of the C++ dialect's kernel plans, KERNEL.FIELD=VALUE separated by commas "
                    "(kernel0.lanes=8,kernel1.strategy=rows_on_threads); fields: strategy, lanes, split, row_cache, "
                    "prefault; kernel_plans.txt shows the plans"),
      bool_option("triton.autotune", false, "benchmark launch configurations of each Triton kernel, keep the fastest"),
      bool_option("triton.cudagraphs", false, "replay a compiled GPU graph's launches as one CUDA graph"),
      int_option("triton.sizes_kept", 8, 1,
                 "sizes of a GPU graph of symbolic sizes kept set up (host program, arena, CUDA graph each); the "
                 "size called longest ago beyond them is dropped, and set up again (no compile) when called"),
      bool_option("triton.shared_arena", true,
                  "the intermediates of every graph loaded on a GPU share one arena, its calls taking turns; off: "
                  "each graph holds an arena of its own, and calls on different streams may overlap"),
      bool_option("triton.profile", false,
                  "time each step of a compiled GPU graph with CUDA events (steps launched one by one, the stream "
                  "held until all are queued)"),
      string_option("triton.python", "",
                    "Python with triton that compiles GPU kernels; empty: coil's .venv/bin/python if present, else "
                    "python3"),
  };
}

struct Registry {
  std::vector<Option> options;   // sorted by name
  std::vector<int64_t> min_int;  // parallel to options
};

std::optional<std::string> canonical_value(const Option &option, int64_t min_int, const std::string &text);

const Registry &registry() {
  static const Registry r = [] {
    std::vector<Entry> entries = registered_entries();
    std::sort(entries.begin(), entries.end(),
              [](const Entry &a, const Entry &b) { return a.option.name < b.option.name; });
    Registry out;
    for (const Entry &e : entries) {
      COIL_ASSERT(canonical_value(e.option, e.min_int, e.option.default_value) == e.option.default_value,
                  "option ", e.option.name, " has an invalid default '", e.option.default_value, "'");
      COIL_ASSERT(out.options.empty() || out.options.back().name != e.option.name, "option ", e.option.name,
                  " is registered twice");
      out.options.push_back(e.option);
      out.min_int.push_back(e.min_int);
    }
    return out;
  }();
  return r;
}

size_t index_of(const Option &option) { return static_cast<size_t>(&option - registry().options.data()); }

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<bool> parse_bool(const std::string &text) {
  std::string t = lower(text);
  if (t == "true" || t == "1" || t == "on" || t == "yes") return true;
  if (t == "false" || t == "0" || t == "off" || t == "no") return false;
  return std::nullopt;
}

std::optional<int64_t> parse_int(const std::string &text) {
  const char *begin = text.data();
  const char *end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (begin == end || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

bool is_choice(const Option &option, const std::string &text) {
  return std::find(option.choices.begin(), option.choices.end(), text) != option.choices.end();
}

/// The value in canonical form (true/false, a plain decimal), or nothing when it is malformed.
std::optional<std::string> canonical_value(const Option &option, int64_t min_int, const std::string &text) {
  switch (option.type) {
    case Type::Bool: {
      auto b = parse_bool(text);
      if (!b) return std::nullopt;
      return std::string(*b ? "true" : "false");
    }
    case Type::Int: {
      auto i = parse_int(text);
      if (!i || *i < min_int) return std::nullopt;
      return std::to_string(*i);
    }
    case Type::String:
      return text;
    case Type::Choice:
      if (!is_choice(option, text)) return std::nullopt;
      return text;
  }
  return std::nullopt;
}

/// What a value of `option` may be, for error messages: "expects an integer >= 1".
std::string accepted(const Option &option, int64_t min_int, const std::string &text) {
  switch (option.type) {
    case Type::Bool:
      return "true or false (or 1/0, on/off, yes/no)";
    case Type::Int:
      if (parse_int(text) && min_int != kNoMinimum) return str_cat("an integer >= ", min_int);
      return "an integer";
    case Type::String:
      return "any text";
    case Type::Choice: {
      std::string list;
      for (const auto &c : option.choices) list += (list.empty() ? "" : ", ") + c;
      return "one of " + list;
    }
  }
  return "";
}

/// Checks `text` for `option`; `origin` names where it came from (COIL_X, or --set name).
std::string validate(const Option &option, const std::string &text, const std::string &origin) {
  int64_t min_int = registry().min_int[index_of(option)];
  if (auto value = canonical_value(option, min_int, text)) return *value;
  throw UserError(
      str_cat(origin, "='", text, "': ", option.name, " expects ", accepted(option, min_int, text)));
}

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

/// `max_fusion` is close to `max_fusion_size` (a substring), `cpp_isa` to `cpp.isa` (a typo).
bool is_close(const std::string &query, const std::string &name, size_t distance) {
  bool substring = std::min(query.size(), name.size()) >= 3 &&
                   (name.find(query) != std::string::npos || query.find(name) != std::string::npos);
  return substring || distance <= std::max<size_t>(2, name.size() / 3);
}

std::string unknown_option_message(const std::string &name) {
  std::string query = lower(name);
  std::vector<std::pair<size_t, std::string>> close;
  for (const Option &o : all()) {
    size_t d = edit_distance(query, o.name);
    if (is_close(query, o.name, d)) close.emplace_back(d, o.name);
  }
  std::sort(close.begin(), close.end());
  if (close.empty()) return str_cat("unknown option '", name, "'; 'coil config' lists every option");
  if (close.size() > 3) close.resize(3);
  std::string list;
  for (size_t i = 0; i < close.size(); ++i)
    list += str_cat(i == 0 ? "" : i + 1 == close.size() ? " or " : ", ", "'", close[i].second, "'");
  return str_cat("unknown option '", name, "' (did you mean ", list, "?)");
}

std::mutex overrides_mutex;
std::map<std::string, std::string> overrides;  // name -> canonical value

// ScopedOverrides of the calling thread, innermost last.
thread_local std::vector<std::map<std::string, std::string>> scoped_overrides;

std::optional<std::string> override_of(const std::string &name) {
  for (auto it = scoped_overrides.rbegin(); it != scoped_overrides.rend(); ++it)
    if (auto found = it->find(name); found != it->end()) return found->second;
  std::lock_guard<std::mutex> lock(overrides_mutex);
  auto it = overrides.find(name);
  if (it == overrides.end()) return std::nullopt;
  return it->second;
}

const char *source_name(Source source) {
  switch (source) {
    case Source::Default: return "default";
    case Source::Environment: return "env";
    case Source::Override: return "set";
  }
  return "";
}

std::string shown(const std::string &value) { return value.empty() ? "\"\"" : value; }

}  // namespace

std::string Option::env() const {
  std::string out = "COIL_";
  for (char c : name) out += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const std::vector<Option> &all() { return registry().options; }

const Option &find(const std::string &name) {
  const auto &options = all();
  auto it = std::lower_bound(options.begin(), options.end(), name,
                             [](const Option &o, const std::string &n) { return o.name < n; });
  if (it != options.end() && it->name == name) return *it;
  throw UserError(unknown_option_message(name));
}

std::pair<std::string, Source> current(const std::string &name) {
  const Option &option = find(name);
  if (auto value = override_of(name)) return {*value, Source::Override};
  const char *env = std::getenv(option.env().c_str());
  if (env && *env) return {validate(option, env, option.env()), Source::Environment};
  return {option.default_value, Source::Default};
}

bool get_bool(const std::string &name) {
  COIL_ASSERT(find(name).type == Type::Bool, "option ", name, " is not a Bool");
  return current(name).first == "true";
}

int64_t get_int(const std::string &name) {
  COIL_ASSERT(find(name).type == Type::Int, "option ", name, " is not an Int");
  return *parse_int(current(name).first);
}

std::string get_string(const std::string &name) {
  Type type = find(name).type;
  COIL_ASSERT(type == Type::String || type == Type::Choice, "option ", name, " is not a String or Choice");
  return current(name).first;
}

void set_override(const std::string &name, const std::string &value) {
  const Option &option = find(name);
  std::string canonical = validate(option, value, "--set " + name);
  std::lock_guard<std::mutex> lock(overrides_mutex);
  overrides[name] = std::move(canonical);
}

void set_override(const std::string &assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(str_cat("--set expects name=value, got '", assignment, "'"));
  set_override(assignment.substr(0, eq), assignment.substr(eq + 1));
}

ScopedOverrides::ScopedOverrides(const std::vector<std::pair<std::string, std::string>> &values) {
  std::map<std::string, std::string> layer;
  for (const auto &[name, value] : values) layer[name] = validate(find(name), value, "option " + name);
  scoped_overrides.push_back(std::move(layer));
}

ScopedOverrides::~ScopedOverrides() { scoped_overrides.pop_back(); }

void clear_overrides() {
  std::lock_guard<std::mutex> lock(overrides_mutex);
  overrides.clear();
}

std::string table() {
  std::vector<std::vector<std::string>> rows = {{"name", "value", "source", "env var", "doc"}};
  for (const Option &o : all()) {
    auto [value, source] = current(o.name);
    rows.push_back({o.name, shown(value), source_name(source), o.env(), o.doc});
  }
  std::vector<size_t> width(rows[0].size() - 1, 0);
  for (const auto &row : rows)
    for (size_t c = 0; c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto &row : rows) {
    for (size_t c = 0; c < width.size(); ++c) out += row[c] + std::string(width[c] - row[c].size() + 2, ' ');
    out += row.back() + "\n";
  }
  return out;
}

}  // namespace coil::options
