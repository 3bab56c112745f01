// coil's public C++ API: compile a graph of ATen operators for a target, then run it on
// tensors the caller owns. The command line (`coil run`) and the Python package call coil
// through this header; it includes nothing of coil's sources, so it can be installed.
//
//   coil::CompileOptions o;
//   o.target = coil::Target::Cpu;
//   o.options = {{"cpp.isa", "avx2"}};
//   coil::CompiledGraph g = coil::compile(graph_text, o, "model.py");
//   std::vector<coil::TensorRef> in = {{x.data(), coil::ScalarType::Float32, {64, 256}}};
//   std::vector<coil::TensorRef> out = {{y.data(), coil::ScalarType::Float32, {64, 256}}};
//   g.run(in, out);
//
// The graph text is what PyTorch prints for an exported or traced graph (DESIGN.md, "The
// input"). Compiling runs the whole pipeline once (driver/compile.h): graph passes,
// lowering, fusion, the memory plan, each kernel's plan, code generation and the build,
// through the cache. Running allocates nothing when the caller's tensors have the layouts
// inputs() and outputs() give (on the CPU, after a thread's first call, which sizes its
// pointer arrays once); other strides are accepted and copied.
//
// On the GPU (target cuda) the tensors are the caller's device memory and the work goes on
// the caller's CUDA stream (PyTorch's current stream, say):
//
//   std::vector<coil::TensorRef> in = {{x_dev, coil::ScalarType::Float32, {64, 256}, {}, coil::Memory::cuda(0)}};
//   std::vector<coil::TensorRef> out = {{y_dev, coil::ScalarType::Float32, {64, 256}, {}, coil::Memory::cuda(0)}};
//   g.run(in, out, stream);   // a CUstream / cudaStream_t; returns once the work is queued
//
// Errors are coil::Error: Kind::Input for anything wrong with what the caller gave (a graph
// that does not parse, an op coil cannot compile, a tensor of the wrong type, an unknown
// option), its message naming the file, line, node and what was expected; Kind::Internal
// for a bug of coil's. Tests: tests/unit/api_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coil {

class Error : public std::runtime_error {
 public:
  enum class Kind { Input, Internal };
  Error(Kind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

/// Where a compiled graph runs.
enum class Target : uint8_t {
  Reference,        // "ref": the loop IR's reference interpreter on the CPU (slow; the oracle)
  Cpu,              // "cpu": generated C++ kernels, compiled and cached
  Cuda,             // "cuda": generated Triton kernels and library calls on the GPU
  CudaInterpreter,  // "cuda-interpret": the same Triton kernels under Triton's interpreter, on the CPU
};

/// "ref", "cpu", "cuda", "cuda-interpret".
const char *target_name(Target t);

/// The target called `name`; an Error naming the targets there are otherwise.
Target parse_target(std::string_view name);

/// Element types; the values are coil_dtype's of coil/artifact.h.
enum class ScalarType : int32_t { Float64, Float32, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };

/// Bytes per element.
int64_t element_size(ScalarType t);

/// "f32", "bf16", "i64", "b8": as PyTorch prints them in graphs.
const char *scalar_type_name(ScalarType t);

/// Where a tensor's memory is: the host's, or CUDA device `device`'s (its ordinal, as
/// PyTorch's `tensor.device.index`).
struct Memory {
  enum class Kind : uint8_t { Host, Cuda };
  Kind kind = Kind::Host;
  int device = 0;

  static Memory host() { return {}; }
  static Memory cuda(int device = 0) { return {Kind::Cuda, device}; }
  bool operator==(const Memory &) const = default;
};

/// "host", "cuda:0".
std::string memory_name(Memory m);

/// A tensor the caller owns: the address of element 0 (a device address for CUDA memory),
/// strides in elements (empty: contiguous, row-major), and where the memory is.
struct TensorRef {
  void *data = nullptr;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  Memory memory;
  /// Outputs, when the caller knows it: the allocation the tensor is a view of, as PyTorch
  /// says it (`storage_offset()`, and its storage's size in elements): element 0 is
  /// storage_offset elements into an allocation of storage_elements elements, all of them
  /// the caller's to be written. -1: unknown, the tensor's own elements only. An output
  /// given in the allocation TensorInfo's storage fields ask for is written in place.
  int64_t storage_offset = -1;
  int64_t storage_elements = -1;
};

/// A graph input or output as compiled.
struct TensorInfo {
  std::string name;  // the graph's name of an input; out0, out1, ... for outputs
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // the layout that runs without a copy
  /// Outputs: the most elements one reduction on the way to it combines (1: none); tests
  /// scale their tolerance with it.
  int64_t reduced_elements = 1;
  /// The last input of a graph that draws random numbers (rand, randn, randint, randperm,
  /// bernoulli, dropout): its random state, i64[2], named "coil.random_state", which the
  /// caller gives each call in the call's memory. Word 0 is the seed (the generator's
  /// key), word 1 the offset of its counters; the graph's numbers are a function of the
  /// two, the same on every target. Give each call new values, say two random words
  /// drawn from the caller's own generator (the torch.compile backend draws them from
  /// PyTorch's, so torch.manual_seed reproduces a run).
  bool random_state = false;
  /// Outputs: the input this output is, element for element and in its layout (a graph that
  /// returns one of its inputs, as a training graph's forward returns the parameters its
  /// backward reads), or -1. A caller may hand that input back in place of the output, and
  /// pass it as the output too: on cuda, when it comes in its layout, nothing is copied.
  int64_t same_as_input = -1;
  /// Outputs: the inputs over whose memory this output may be written instead of its own
  /// (the caller passing that input's address for it), when the caller means to replace
  /// the input with it, as an optimizer step updates its parameters: the kernel that writes
  /// the output reads such an input only at each element it writes, before writing it, and
  /// nothing reads the input after that kernel. On cuda, the call binds such an output and
  /// its input to the one address (neither is copied) when both come in their layouts.
  std::vector<int64_t> writable_over;
  /// Outputs: the allocation that holds the output without a copy. Several outputs may be
  /// views of one tensor of the graph (a training forward returns the query, key and value
  /// of attention, three views of one product), as PyTorch's outputs would be. The output
  /// is a view storage_offset elements into an allocation of storage_elements elements:
  /// its own when view_of_output is -1, else the allocation of output view_of_output (an
  /// earlier output). A caller that allocates so, and says so in TensorRef's storage fields
  /// (run) or by passing these very views (run_addresses), has every output written in
  /// place; other allocations are written by a copy.
  int64_t storage_offset = 0;
  int64_t storage_elements = 0;
  int64_t view_of_output = -1;
};

struct CompileOptions {
  Target target = Target::Cpu;
  /// Options by their names in `coil config` ("cpp.isa", "triton.cudagraphs"), for this
  /// compilation and the graph it makes; over the environment's COIL_* values.
  std::vector<std::pair<std::string, std::string>> options;
  /// When not empty: every stage's dump goes to this folder (graph.txt, ..., kernel_plans.txt),
  /// as the option `trace` does.
  std::string trace_dir;
  /// The values of the graph's symbolic sizes, for a graph traced with dynamic shapes
  /// (`x: "f32[s0, 768]"`, `n: "Sym(s0)"`): it is compiled for these sizes, its SymInt
  /// inputs are not inputs of the compiled graph, and its assertions on sizes are checked
  /// (an Error naming the failed one). A symbol without a value is an Error naming it.
  /// The compiled graph serves the sizes that pass its guards (CompiledGraph::sizes());
  /// run() at others is an Error giving the symbols' values its inputs give and the first
  /// guard they fail, with what relied on it.
  std::vector<std::pair<std::string, int64_t>> sizes;
};

/// One kernel's time in a profiled graph (the option cpp.profile, target cpu; triton.profile,
/// target cuda: one row per step, the GPU's time).
struct KernelTime {
  std::string name;     // kernel0
  std::string summary;  // "pointwise over [64, 256]: add, relu"
  int64_t calls = 0;
  double seconds = 0;   // over every call
};

/// A symbolic size of a graph that runs at other sizes than those compiled for.
struct SymbolInfo {
  std::string name;     // as the graph names it: "s0"
  int64_t input = -1;   // the input one of whose dims is exactly this size, or -1
  int64_t dim = -1;     // that dim
  int64_t compiled = 0; // the value compiled for
  bool specialized = false;  // a guard fixes it to that value: the graph serves no other
};

class CompiledGraph {
 public:
  Target target() const;
  const std::vector<TensorInfo> &inputs() const;   // graph inputs, then constants
  const std::vector<TensorInfo> &outputs() const;  // at the sizes compiled for

  /// A graph of symbolic sizes compiled for target cpu, cuda or cuda-interpret runs at
  /// every size that passes its checks (sizes()), from one compile (on cuda: kernels built
  /// once, a program set up per size): its symbols, in the order outputs_at takes their
  /// values. Empty for a static graph and for target ref, which serves the sizes compiled
  /// for alone.
  const std::vector<SymbolInfo> &symbols() const;
  /// The outputs at `sizes` (a value per symbol of symbols()): their sizes, strides and
  /// storage fields, as outputs() gives them at the sizes compiled for. An Error naming the
  /// check that sizes outside what the graph serves fail.
  std::vector<TensorInfo> outputs_at(std::span<const int64_t> sizes) const;

  /// Runs the graph: `inputs` in the order of inputs(), each of its dtype and sizes, any
  /// strides; `outputs` likewise, written. Safe to call from several threads at once. A
  /// graph with symbols() takes other sizes too: the symbols' values read from the inputs,
  /// every tensor of the sizes they give (outputs_at), an Error naming the check that
  /// sizes it does not serve fail.
  ///
  /// Where the tensors may be: targets ref, cpu and cuda-interpret take host memory only
  /// (device memory is an Error saying so). Target cuda takes the tensors of one call all
  /// in host memory or all on the GPU the graph was loaded on (device 0):
  ///   - device memory: the work is queued on `stream` (a CUstream / cudaStream_t; null:
  ///     the default stream, which is PyTorch's default stream) and run() returns without
  ///     waiting for it. The inputs are read and the outputs written by that stream's work,
  ///     so the caller keeps them alive and untouched until the stream reaches the end of
  ///     the call (PyTorch's caching allocator does, for tensors used on the current
  ///     stream). Outputs are the caller's memory: a later call never writes them. The
  ///     intermediates of every graph on the GPU share one arena (option
  ///     triton.shared_arena), so calls of graphs on different streams take turns; coil
  ///     orders the memory it reuses between them.
  ///     Nothing is allocated per call. A tensor in the layout inputs() or outputs() give,
  ///     256-byte aligned, is read (written) in place while it comes back at the address
  ///     of its first call; once its address moves it is copied through the graph's own
  ///     memory, on the GPU. Tensors of other strides are copied on the GPU, by rows; a
  ///     layout that rows cannot express (negative strides, an output writing two
  ///     elements to one place, more than 4096 pieces) is an Error naming the tensor.
  ///   - host memory (`coil run`, tests): the inputs are copied to the GPU and the outputs
  ///     back, and run() returns when the work is done; `stream` is where the work runs
  ///     (null: a stream of the graph's own).
  void run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, void *stream = nullptr) const;

  /// run() for tensors known to be exactly as inputs() and outputs() give them (dtype,
  /// sizes and strides; with `outputs_as_stored`, every output also in the allocation its
  /// storage fields ask for), in the memory the target runs on (host memory for ref, cpu
  /// and cuda-interpret; device 0's for cuda): only their addresses, in that order. For a caller
  /// whose own checks already hold them so, as torch.compile's guards do for the graphs it
  /// hands over; a tensor of another layout is read or written wrongly. Counts are
  /// checked. Nothing is allocated per call once a thread has made one.
  /// A graph with symbols() runs so at other sizes too: `sizes` (a value per symbol) says
  /// which, and every tensor is as the layouts at those sizes give it (outputs_at).
  void run_addresses(std::span<void *const> inputs, std::span<void *const> outputs, void *stream = nullptr,
                     bool outputs_as_stored = false, std::span<const int64_t> sizes = {}) const;

  /// The median time of one run over `iterations` runs after one to warm up, in seconds:
  /// on the GPU, of the steps alone between CUDA events. Targets cpu and cuda only, on
  /// host tensors.
  double median_seconds(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                        int iterations) const;

  /// Each kernel's plan, as kernel_plans.txt shows them (empty for ref).
  const std::string &plans() const;

  /// For a graph of symbolic sizes, as sizes.txt shows it: the value each symbol was compiled
  /// for and whether the compiled graph serves that value only (specialized), then the guards
  /// a call's sizes must satisfy, each with what relied on it. Empty for a static graph.
  const std::string &sizes() const;

  /// What a user should know about how it runs, one line each (CUDA graphs on or off and
  /// why); empty when nothing.
  std::vector<std::string> notes() const;

  /// With the option cpp.profile (target cpu) or triton.profile (target cuda): each kernel's
  /// calls and time since the graph was compiled or reset_profile(), in call order; empty
  /// otherwise.
  std::vector<KernelTime> profile() const;
  void reset_profile() const;

  struct Impl;
  explicit CompiledGraph(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

/// Compiles `graph_text` (a graph as PyTorch prints it) for `o.target`. `file_name` names
/// the graph in error messages.
CompiledGraph compile(std::string_view graph_text, const CompileOptions &o, std::string_view file_name = "<graph>");

/// The same for the graph in file `path`.
CompiledGraph compile_file(const std::string &path, const CompileOptions &o);

/// How close an output must be to a reference to pass coil's tests: torch.testing's
/// assert_close defaults by dtype (f32 1.3e-6 / 1e-5, f16 1e-3 / 1e-5, bf16 1.6e-2 / 1e-5,
/// f64 1e-7 / 1e-7, integers and bools exact), both scaled by sqrt(n) for an output of a
/// reduction over n elements (TensorInfo::reduced_elements). `coil run --expect` uses it.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance tolerance(ScalarType t, int64_t reduced_elements = 1);

/// The ops coil compiles natively ("aten.add.Tensor", ...), sorted: what a front end need
/// not decompose.
std::vector<std::string> supported_ops();

/// The longest row sort and topk take (2^17, beyond the largest vocabularies a sampler
/// sorts). coil ranks each element by comparing it with its block of 1024 and searching for
/// it in every other block: per element 1024 + 11 * length / 1024 comparisons. A longer row
/// is refused (a front end leaves such an op to another implementation). On an H200, 64 rows
/// of 1024 sort in 70 us (Inductor 64, eager 32), of 256 in 18 (Inductor 36, eager 31).
inline constexpr int64_t kMaxSortLength = int64_t(1) << 17;

/// An Error naming the first option that is unknown or whose value is malformed (and the
/// names or values it could be), as compile() would report it.
void check_options(const std::vector<std::pair<std::string, std::string>> &options);

/// The value option `name` takes under `options` (over the environment's COIL_* values and
/// the defaults), as `coil config` prints it; an Error for an unknown name.
std::string option_value(const std::string &name, const std::vector<std::pair<std::string, std::string>> &options);

}  // namespace coil
