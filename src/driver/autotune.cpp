#include "driver/autotune.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "codegen/triton/triton_kernel_plan.h"
#include "ir/specialize.h"
#include "runtime/cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/triton_build.h"
#include "runtime/triton_launch.h"
#include "support/error.h"

namespace coil {
namespace {

using codegen::GpuKernel;
using codegen::GpuProgram;
using codegen::GpuStep;
using codegen::TritonConfig;

constexpr const char *kKind = "autotune";
constexpr double kMargin = 0.98;       // a candidate must take under 98% of the default's time
constexpr double kRunMs = 2.0;         // calls per timed run: enough for about this long
constexpr int kRuns = 5;

// The launches of one schedule kernel in one generated program: its kernels, in order.
struct Candidate {
  TritonConfig config;
  std::vector<const GpuKernel *> kernels;
  std::vector<const GpuStep *> steps;
  const GpuProgram *program = nullptr;
  std::vector<size_t> binaries;  // per kernel: index into the compiled binaries
};

// One tunable schedule kernel and its candidates, the default first.
struct Tunable {
  std::string kernel;
  std::vector<Candidate> candidates;
  std::string key;
  TunedKernel result;
};

std::string request_identity(const TritonCompileRequest &r) {
  std::ostringstream o;
  o << r.name << '\n' << r.num_warps << ' ' << r.num_stages << '\n';
  for (const auto &[name, value] : r.constexprs) o << name << '=' << std::visit([](auto v) { return std::to_string(v); }, value) << ' ';
  o << '\n' << r.source;
  return o.str();
}

// The cached winner of `key`, when there is one.
std::optional<TritonConfig> cached_winner(const std::string &key) {
  std::optional<std::filesystem::path> entry = cache_lookup(kKind, key, {"winner.txt"});
  if (!entry) return std::nullopt;
  std::ifstream in(*entry / "winner.txt");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  try {
    return codegen::parse_triton_config(line, "autotune cache entry " + key);
  } catch (const UserError &) {
    return std::nullopt;  // damaged by hand: tuned again and replaced
  }
}

void publish_winner(const Tunable &t, const std::vector<double> &ms) {
  CacheStaging staging(kKind, t.key);
  {
    std::ofstream out(staging.dir() / "winner.txt");
    out << t.result.winner.str() << "\n";
    out << "# " << t.kernel << " on " << cuda::Device::get().name() << ", " << utc_timestamp() << "\n";
    for (size_t i = 0; i < t.candidates.size(); ++i)
      out << "# " << t.candidates[i].config.str() << ": " << ms[i] * 1e3 << " us\n";
  }
  staging.publish();
}

// Shows which kernel is being tuned on a terminal's stderr, overwriting itself.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), shown_(::isatty(2) == 1) {}
  ~Progress() {
    if (shown_ && printed_) std::cerr << "\r\033[K" << std::flush;
  }
  void at(size_t i, const Tunable &t) {
    if (!shown_) return;
    printed_ = true;
    std::cerr << "\r\033[Kcoil: autotuning " << t.kernel << " (" << i + 1 << " of " << total_ << ", "
              << t.candidates.size() << " configs)" << std::flush;
  }

 private:
  size_t total_;
  bool shown_;
  bool printed_ = false;
};

// Device memory for every buffer one candidate's steps touch, zero-filled.
class TuningBuffers {
 public:
  TuningBuffers(const sched::Schedule &s, const Candidate &c) {
    each_buffer(s, c, [&](int id, int64_t bytes) {
      cuda::DeviceBuffer b(size_t(std::max<int64_t>(bytes, 1)));
      b.fill(0);
      buffers_.emplace(id, std::move(b));
    });
  }
  cuda::CUdeviceptr at(int id) const { return buffers_.at(id).ptr(); }
  /// The bytes a candidate's buffers take.
  static int64_t bytes(const sched::Schedule &s, const Candidate &c) {
    int64_t total = 0;
    each_buffer(s, c, [&](int, int64_t bytes) { total += bytes; });
    return total;
  }

 private:
  std::map<int, cuda::DeviceBuffer> buffers_;

  // fn(id, bytes) once for each buffer the candidate's steps pass.
  template <typename Fn>
  static void each_buffer(const sched::Schedule &s, const Candidate &c, Fn fn) {
    const ir::Program &p = s.ir.program;
    std::set<int> seen;
    for (const GpuStep *st : c.steps)
      for (int id : st->args) {
        if (!seen.insert(id).second) continue;
        if (size_t(id) < p.buffers.size()) {
          const TensorType &t = p.buffer(id).type;
          fn(id, storage_extent(t) * itemsize(t.dtype));
        } else {
          fn(id, c.program->scratch_elements.at(id) * itemsize(c.program->scratch_dtypes.at(id)));
        }
      }
  }
};

// Milliseconds per call of one candidate's launches.
double time_candidate(const sched::Schedule &s, const Candidate &c, const std::vector<TritonBinary> &binaries,
                      cuda::CUstream stream) {
  TuningBuffers memory(s, c);
  std::vector<std::unique_ptr<cuda::CudaKernel>> kernels;
  std::vector<std::vector<cuda::CUdeviceptr>> values(c.steps.size());
  std::vector<std::vector<const void *>> args(c.steps.size());
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const TritonBinary &b = binaries[c.binaries[i]];
    auto module = std::make_shared<const cuda::CudaModule>(b.cubin, c.kernels[i]->name);
    kernels.push_back(std::make_unique<cuda::CudaKernel>(std::move(module), b.facts));
    for (int id : c.steps[i]->args) values[i].push_back(memory.at(id));
    for (const cuda::CUdeviceptr &v : values[i]) args[i].push_back(&v);
  }
  auto launches = [&] {
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const auto &g = c.kernels[i]->grid;
      kernels[i]->launch({uint32_t(g[0]), uint32_t(g[1]), uint32_t(g[2])}, args[i], stream);
    }
  };
  std::string what = "the autotuning of " + c.steps[0]->schedule_kernel;
  double once = cuda::median_ms_per_call(stream, 1, 1, launches, what);
  int calls = int(std::clamp(std::ceil(kRunMs / std::max(once, 1e-4)), 1.0, 100.0));
  return cuda::median_ms_per_call(stream, kRuns, calls, launches, what);
}

}  // namespace

std::string TunedKernel::describe() const {
  std::ostringstream o;
  o << kernel << ": " << candidates << " configs, " << winner.str();
  if (cache_hit) {
    o << " (from the cache)";
  } else {
    o.precision(1);
    o << std::fixed << " at " << winner_ms * 1e3 << " us (default " << default_ms * 1e3 << " us)";
  }
  return o.str();
}

namespace {

// Device memory a kernel may be tuned on: a size bucket whose buffers take more (a row of
// 65,536 in a square matrix) keeps its default plan.
constexpr int64_t kMostTuningBytes = int64_t(2) << 30;

// Tunes the kernels `keys` names (schedule kernel -> the key its winner goes under) of `s`,
// a schedule of numbers (`where`: its sizes, "" at the sizes compiled for), into `winners`.
void tune(const sched::Schedule &s, const std::map<std::string, std::string> &keys, const std::string &where,
          std::map<std::string, TritonConfig> &winners, std::vector<TunedKernel> *report) {
  const cuda::Device &device = cuda::Device::get();
  // The candidates of every kernel, and the rounds of whole programs that generate them:
  // round i uses each kernel's i-th candidate (or its default).
  std::vector<Tunable> tunables;
  size_t rounds = 1;
  for (const ir::Kernel &k : s.ir.kernels) {
    if (!keys.count(k.name)) continue;
    if (k.kind == ir::KernelKind::Extern && !codegen::is_attention(s.ir.program, k)) continue;
    std::vector<TritonConfig> configs = codegen::tuning_configs(s, k.name);
    if (configs.size() < 2) continue;
    Tunable t;
    t.kernel = k.name;
    for (const TritonConfig &c : configs) t.candidates.push_back({c, {}, {}, nullptr, {}});
    rounds = std::max(rounds, configs.size());
    tunables.push_back(std::move(t));
  }
  if (tunables.empty()) return;

  std::vector<GpuProgram> programs(rounds);
  for (size_t r = 0; r < rounds; ++r) {
    codegen::TritonOptions o;
    for (const Tunable &t : tunables) o.configs[t.kernel] = t.candidates[std::min(r, t.candidates.size() - 1)].config;
    programs[r] = codegen::generate_triton(s, o);
  }
  std::vector<TritonCompileRequest> requests;
  std::map<std::string, size_t> request_index;  // identical kernels compiled once
  for (Tunable &t : tunables) {
    std::string sources;
    for (size_t r = 0; r < t.candidates.size(); ++r) {
      Candidate &c = t.candidates[r];
      c.program = &programs[r];
      std::vector<TritonCompileRequest> all = codegen::compile_requests(programs[r]);
      for (const GpuStep &st : programs[r].steps) {
        if (st.kind != GpuStep::Kind::Launch || st.schedule_kernel != t.kernel) continue;
        c.steps.push_back(&st);
        c.kernels.push_back(&programs[r].kernels[size_t(st.kernel)]);
        TritonCompileRequest req = all[size_t(st.kernel)];
        req.capability = device.capability();
        std::string id = request_identity(req);
        auto [it, fresh] = request_index.emplace(id, requests.size());
        if (fresh) requests.push_back(std::move(req));
        c.binaries.push_back(it->second);
        if (r == 0) sources += id;
      }
    }
    std::string configs;
    for (const Candidate &c : t.candidates) configs += c.config.str() + "\n";
    // The sources are those at the bucket's sizes (numbers in the code): the key is the bucket's.
    t.key = cache_key({kKind, kCoilVersion, device.name(), std::to_string(device.capability()), triton_version(), sources,
                       configs, where});
    t.result.kernel = keys.at(t.kernel) + (where.empty() ? "" : " at " + where);
    t.result.candidates = int(t.candidates.size());
    if (std::optional<TritonConfig> hit = cached_winner(t.key)) {
      t.result.winner = *hit;
      t.result.cache_hit = true;
    }
  }
  // A kernel too large to tune here keeps its default plan.
  std::erase_if(tunables, [&](const Tunable &t) {
    return !t.result.cache_hit && TuningBuffers::bytes(s, t.candidates.front()) > kMostTuningBytes;
  });

  // Only what a miss needs is compiled.
  std::set<size_t> needed;
  for (const Tunable &t : tunables)
    if (!t.result.cache_hit)
      for (const Candidate &c : t.candidates) needed.insert(c.binaries.begin(), c.binaries.end());
  std::vector<TritonBinary> binaries(requests.size());
  if (!needed.empty()) {
    std::vector<TritonCompileRequest> wanted;
    for (size_t i : needed) wanted.push_back(requests[i]);
    std::vector<TritonBinary> built = build_triton_kernels(wanted);
    size_t j = 0;
    for (size_t i : needed) binaries[i] = std::move(built[j++]);
  }

  cuda::Stream stream(device);
  Progress progress(tunables.size());
  for (size_t i = 0; i < tunables.size(); ++i) {
    Tunable &t = tunables[i];
    if (!t.result.cache_hit) {
      progress.at(i, t);
      std::vector<double> ms;
      for (const Candidate &c : t.candidates) ms.push_back(time_candidate(s, c, binaries, stream.get()));
      size_t best = 0;
      for (size_t j = 1; j < ms.size(); ++j)
        if (ms[j] < ms[best] * (best == 0 ? kMargin : 1.0)) best = j;
      t.result.winner = t.candidates[best].config;
      t.result.winner_ms = ms[best];
      t.result.default_ms = ms[0];
      publish_winner(t, ms);
    }
    winners[keys.at(t.kernel)] = t.result.winner;
    if (report) report->push_back(t.result);
  }
}

// Sizes of the symbols at which `size` is as large as it gets up to `target` (its first
// symbol searched, the others at their hints), when those sizes lie in the range.
std::optional<std::map<std::string, int64_t>> sizes_for(const SymInt &size, int64_t target, const SizeGuards &guards) {
  std::set<std::string> symbols;
  ir::collect_symbols(size.expr(), symbols);
  if (symbols.empty()) return std::nullopt;
  std::map<std::string, int64_t> values = guards.values();
  const std::string &s = *symbols.begin();
  ir::Interval range = guards.range_of(s);
  int64_t lo = range.lo, hi = std::min<int64_t>(range.hi, int64_t(1) << 31);
  auto at = [&](int64_t v) {
    values[s] = v;
    return ir::eval(size.expr(), {}, values);
  };
  if (at(lo) > target) return std::nullopt;
  while (lo < hi) {  // the largest value of s with size <= target (sizes grow with their symbols)
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (at(mid) <= target) lo = mid;
    else hi = mid - 1;
  }
  values[s] = lo;
  return values;
}

std::string values_str(const std::map<std::string, int64_t> &values) {
  std::string out;
  for (const auto &[name, v] : values) out += str_cat(out.empty() ? "" : ", ", name, " = ", v);
  return out;
}

}  // namespace

std::map<std::string, TritonConfig> autotune_triton(const sched::Schedule &s, std::vector<TunedKernel> *report) {
  std::map<std::string, TritonConfig> winners;
  std::shared_ptr<SizeGuards> guards = ir::guards_of(s.ir.program);
  if (!guards) {
    std::map<std::string, std::string> keys;
    for (const ir::Kernel &k : s.ir.kernels) keys[k.name] = k.name;
    tune(s, keys, "", winners, report);
    return winners;
  }
  // A schedule of symbolic sizes: a kernel of one plan is tuned at the sizes compiled for;
  // each size bucket of one of several (plan_variants) at sizes inside it, where its size is
  // the bucket's top (four times its bottom for the last), its winner under the variant's
  // name. Kernels are tuned together where their sizes are the same.
  const ir::Program &p = s.ir.program;
  // By sizes: each kernel tuned there, the key its winner goes under and the strategy of
  // its variant (none for a kernel of one plan).
  struct Entry {
    std::string key;
    std::optional<codegen::TritonStrategy> strategy;
  };
  std::map<std::map<std::string, int64_t>, std::map<std::string, Entry>> at;
  for (const ir::Kernel &k : s.ir.kernels) {
    std::vector<codegen::TritonVariant> variants;
    if (k.kind == ir::KernelKind::Pointwise || k.kind == ir::KernelKind::Reduction) variants = codegen::plan_variants(p, k, {});
    if (variants.size() <= 1) {
      at[guards->values()][k.name] = {k.name, std::nullopt};
      continue;
    }
    for (const codegen::TritonVariant &v : variants) {
      std::optional<std::map<std::string, int64_t>> values = sizes_for(v.size, v.hi ? *v.hi : *v.lo * 4, *guards);
      if (!values) continue;  // the bucket's sizes are not reached from one symbol
      bool inside = std::all_of(v.only_if.begin(), v.only_if.end(), [&](const SizeGuard &g) { return g.holds(*values); });
      if (inside) at[*values][k.name] = {k.name + "_" + v.plan.variant, v.plan.strategy};
    }
  }
  for (const auto &[values, entries] : at) {
    sched::Schedule specialized = s;
    sched::specialize(specialized, values);
    bool hints = values == guards->values();
    // A variant tuned at sizes where its kernel plans otherwise (another strategy) is not.
    std::map<std::string, std::string> tunable;
    for (const ir::Kernel &k : specialized.ir.kernels) {
      auto e = entries.find(k.name);
      if (e == entries.end()) continue;
      if (e->second.strategy && codegen::plan_triton_kernel(specialized.ir.program, k, {}).strategy != *e->second.strategy)
        continue;
      tunable[k.name] = e->second.key;
    }
    tune(specialized, tunable, hints ? "" : values_str(values), winners, report);
  }
  return winners;
}

}  // namespace coil
