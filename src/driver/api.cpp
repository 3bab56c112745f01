// include/coil/coil.h over the driver: compile() runs the pipeline for a target once and
// keeps what runs it (a loaded CPU library, a loaded GPU program, or the schedule for the
// interpreters); run() checks the caller's tensors against the graph and calls it.
//
// On the CPU a tensor whose layout is the one the library was compiled for is passed as it
// is (no copy, no allocation); any other strides go through a copy (CpuModule::Call of
// runtime/cpu_module.h). The interpreters take dense host tensors, so their inputs and
// outputs are copied. The GPU program takes the caller's device memory and stream as they
// are (runtime/cuda_program.h), or host tensors, copied through the GPU; a call's tensors
// are all in one place, and the targets that run on the host refuse device memory.
// Tests: tests/unit/api_test.cpp, tests/gpu/device_io_test.cpp (a GPU).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "coil/artifact.h"
#include "coil/coil.h"
#include "codegen/gpu/gpu_epilogue.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "ir/interpreter.h"
#include "ir/specialize.h"
#include "lowering/lowering.h"
#include "runtime/cpu_module.h"
#include "runtime/cuda_programs.h"
#include "runtime/triton_interpret.h"
#include "support/error.h"
#include "support/files.h"
#include "support/options.h"

namespace coil {

// ---- names and dtypes --------------------------------------------------------------------

namespace {

// ScalarType's values are coil_dtype's: graph/dtype.h's codes.
ScalarType public_type(DType t) { return ScalarType(dtype_code(t)); }

constexpr const char *kTargetNames[] = {"ref", "cpu", "cuda", "cuda-interpret"};

// Runs `f`, turning coil's internal errors into the public Error.
template <typename F>
auto publicly(F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const UserError &e) {
    throw Error(Error::Kind::Input, e.render());
  } catch (const InternalError &e) {
    throw Error(Error::Kind::Internal, e.what());
  }
}

}  // namespace

DType internal_dtype(ScalarType t) {
  std::optional<DType> d = dtype_from_code(int32_t(t));
  COIL_USER_CHECK(d, "unknown scalar type ", int(t));
  return *d;
}

const char *target_name(Target t) { return kTargetNames[size_t(t)]; }

Target parse_target(std::string_view name) {
  for (size_t i = 0; i < std::size(kTargetNames); ++i)
    if (name == kTargetNames[i]) return Target(i);
  throw Error(Error::Kind::Input, str_cat("unknown target '", name, "'; coil has: ref, cpu, cuda, cuda-interpret"));
}

int64_t element_size(ScalarType t) { return publicly([&] { return int64_t(itemsize(internal_dtype(t))); }); }

std::string memory_name(Memory m) {
  return m.kind == Memory::Kind::Host ? std::string("host") : str_cat("cuda:", m.device);
}

const char *scalar_type_name(ScalarType t) {
  std::optional<DType> d = dtype_from_code(int32_t(t));
  return d ? short_name(*d).data() : "?";
}

// ---- tensors -------------------------------------------------------------------------------

namespace {

std::vector<int64_t> strides_of(const TensorRef &r) {
  return r.strides.empty() ? contiguous_strides(r.sizes) : r.strides;
}

std::string type_str(ScalarType t, std::span<const int64_t> sizes) {
  return str_cat(scalar_type_name(t), shape_str(Shape(sizes.begin(), sizes.end())));
}

// Checks `given` against what the graph compiled for; `what` is "input" or "output". With
// `any_sizes` (a graph that runs at other sizes, which its run checks) only the rank of its
// sizes.
void check_tensor(const TensorRef &given, const TensorInfo &want, const char *what, bool any_sizes = false) {
  bool sizes_fit = any_sizes ? given.sizes.size() == want.sizes.size() : given.sizes == want.sizes;
  COIL_USER_CHECK(given.dtype == want.dtype && sizes_fit, what, " '", want.name, "' is ", type_str(given.dtype, given.sizes),
                  " but the graph expects ", type_str(want.dtype, want.sizes),
                  any_sizes ? " (at the sizes compiled for)" : "");
  COIL_USER_CHECK(given.strides.empty() || given.strides.size() == given.sizes.size(), what, " '", want.name,
                  "' has ", given.strides.size(), " strides for ", given.sizes.size(), " dims");
  COIL_USER_CHECK(given.data || checked_numel(given.sizes) == 0, what, " '", want.name, "' has no data (a null pointer)");
  if (given.storage_offset == -1 && given.storage_elements == -1) return;
  auto [lowest, highest] = element_span(given.sizes, given.strides);
  COIL_USER_CHECK(given.storage_offset >= 0 && given.storage_elements >= 0 &&
                      (checked_numel(given.sizes) == 0 || (given.storage_offset + lowest >= 0 &&
                                                           given.storage_offset + highest < given.storage_elements)),
                  what, " '", want.name, "' says it lies ", given.storage_offset, " elements into an allocation of ",
                  given.storage_elements, " elements, which its sizes ", shape_str(given.sizes), " and strides ",
                  shape_str(given.strides.empty() ? contiguous_strides(given.sizes) : given.strides),
                  " do not fit in (both -1: unknown)");
}

void check_count(size_t given, size_t want, const char *what) {
  COIL_USER_CHECK(given == want, "the graph has ", want, " ", what, "s; ", given, " were given");
}

// A dense row-major copy of a caller's tensor.
HostTensor dense_copy(const TensorRef &r) {
  HostTensor h = HostTensor::zeros(internal_dtype(r.dtype), r.sizes);
  copy_strided(h.data.data(), contiguous_strides(r.sizes), static_cast<const std::byte *>(r.data), strides_of(r),
               r.sizes, itemsize(h.dtype));
  return h;
}

void write_back(const HostTensor &h, const TensorRef &r) {
  copy_strided(static_cast<std::byte *>(r.data), strides_of(r), h.data.data(), contiguous_strides(h.sizes), h.sizes,
               itemsize(h.dtype));
}

// At the sizes compiled for (hints: a graph of symbolic sizes that serves others checks
// each call's sizes itself).
TensorInfo info_of(const ir::Program &p, const std::string &name, const ir::View &v) {
  TensorInfo info;
  info.name = name;
  info.dtype = public_type(p.buffer(v.buffer).type.dtype);
  info.sizes = hints(v.sizes);
  info.strides = hints(v.strides);
  return info;
}

ir::View whole(const ir::Program &p, ir::BufferId b) {
  const TensorType &t = p.buffer(b).type;
  return {b, t.sizes, t.strides, 0};
}

void set_storage(TensorInfo &info, const ir::Program &p, size_t k, const ir::View &v) {
  std::tie(info.storage_offset, info.storage_elements) = ir::output_allocation(p, v);
  if (std::find(p.inputs.begin(), p.inputs.end(), v.buffer) != p.inputs.end()) return;
  auto home = std::find(p.outputs.begin(), p.outputs.end(), v.buffer) - p.outputs.begin();
  info.view_of_output = size_t(home) < k ? int64_t(home) : -1;
}

}  // namespace

// ---- what runs a compiled graph, per target --------------------------------------------------

struct CompiledGraph::Impl {
  Target target = Target::Cpu;
  std::vector<TensorInfo> inputs, outputs;
  std::string plans;
  std::string sizes;  // size_guards_str of the graph read
  /// A graph of symbolic sizes: where each symbol is read from (input, dim) and the guards
  /// the compiled graph relies on, which explain a call at other sizes.
  struct SymbolSource {
    std::string symbol;
    size_t input, dim;
  };
  std::vector<SymbolSource> symbol_sources;
  std::shared_ptr<const SizeGuards> guards;

  /// The symbols' values the inputs of a call give, by symbol_sources.
  std::map<std::string, int64_t> values_of(std::span<const TensorRef> in) const {
    std::map<std::string, int64_t> values;
    for (const auto &s : symbol_sources)
      if (s.input < in.size() && s.dim < in[s.input].sizes.size()) values.emplace(s.symbol, in[s.input].sizes[s.dim]);
    return values;
  }

  virtual ~Impl() = default;
  virtual void run(std::span<const TensorRef> in, std::span<const TensorRef> out) const = 0;
  /// With the caller's stream: only the GPU program has a use for it (and for device memory).
  virtual void run_on(std::span<const TensorRef> in, std::span<const TensorRef> out, void *stream) const {
    run(in, out);
  }
  virtual double median_seconds(std::span<const TensorRef> in, std::span<const TensorRef> out, int iterations) const {
    throw UserError(str_cat("timing runs compiled kernels: target ", target_name(target), " has none"));
  }
  virtual std::vector<std::string> notes() const { return {}; }
  virtual std::vector<KernelTime> profile() const { return {}; }
  virtual void reset_profile() const {}
  /// Whether it runs at sizes other than those compiled for (checking them as it runs).
  virtual bool any_sizes() const { return false; }
  /// Its symbols when it does (CompiledGraph::symbols), and its outputs at other sizes.
  std::vector<SymbolInfo> symbols;
  /// The call's sizes, one per symbol, from its inputs (a symbol no input dim holds keeps
  /// its value compiled for: the checks then hold it to that); the thread's vector keeps
  /// its capacity.
  std::span<const int64_t> sizes_of(std::span<const TensorRef> in) const {
    thread_local std::vector<int64_t> sizes;
    sizes.clear();
    for (const SymbolInfo &s : symbols)
      sizes.push_back(s.input >= 0 ? in[size_t(s.input)].sizes[size_t(s.dim)] : s.compiled);
    return sizes;
  }
  /// "s0 = 7, s1 = 128"
  std::string values_str(std::span<const int64_t> sizes) const {
    std::string out;
    for (size_t i = 0; i < sizes.size(); ++i) out += str_cat(i ? ", " : "", symbols[i].name, " = ", sizes[i]);
    return out;
  }
  /// Tensor `info` of a call at `sizes` (the inputs' first, `what` says which) against
  /// `want`, its sizes there.
  void check_sizes_at(std::span<const int64_t> sizes, const TensorRef &given, std::span<const int64_t> want,
                      const TensorInfo &info, const char *what) const {
    COIL_USER_CHECK(std::equal(given.sizes.begin(), given.sizes.end(), want.begin(), want.end()), what, " '", info.name,
                    "' is ", type_str(given.dtype, given.sizes), " but at the sizes of this call (", values_str(sizes),
                    ") the graph expects ", type_str(info.dtype, want));
  }
  virtual std::vector<TensorInfo> outputs_at(std::span<const int64_t> sizes) const {
    COIL_USER_CHECK(sizes.empty(), "the graph compiled for target ", target_name(target),
                    " runs at the sizes compiled for alone; it takes no sizes");
    return outputs;
  }
  /// run_addresses at `sizes`: every tensor as the layouts at those sizes give it (the
  /// outputs in the allocations outputs_at gives when `stored`).
  virtual void run_addresses_at(std::span<const int64_t> sizes, std::span<void *const> in, std::span<void *const> out,
                                void *stream, bool stored) const {
    outputs_at(sizes);  // an Error: this target takes no sizes
  }
};

namespace {

// The targets that run on dense host tensors: the interpreters and the GPU program. Those
// that keep symbolic sizes (the Triton kernels, interpreted or on the GPU) check a call's
// sizes here: the guards at sizes first seen, then every tensor's sizes at them.
struct HostTensorsGraph : CompiledGraph::Impl {
  sched::Schedule schedule;

  TensorList named_inputs(std::span<const TensorRef> in) const {
    TensorList named;
    for (size_t i = 0; i < in.size(); ++i) named.emplace_back(inputs[i].name, dense_copy(in[i]));
    return named;
  }
  void write_outputs(const std::vector<HostTensor> &results, std::span<const TensorRef> out) const {
    COIL_ASSERT(results.size() == out.size(), results.size(), " results for ", out.size(), " outputs");
    for (size_t i = 0; i < out.size(); ++i) write_back(results[i], out[i]);
  }

  bool any_sizes() const override { return !symbols.empty(); }

  /// The symbols' values at `sizes`, which the guards must pass.
  std::map<std::string, int64_t> values_at(std::span<const int64_t> sizes) const {
    COIL_USER_CHECK(sizes.size() == symbols.size(), "the graph has ", symbols.size(), " symbols; ", sizes.size(),
                    " sizes were given");
    std::map<std::string, int64_t> values;
    for (size_t i = 0; i < sizes.size(); ++i) values[symbols[i].name] = sizes[i];
    if (std::optional<SizeGuard> failing = guards->first_failing(values))
      throw UserError(sizes_refused(values_str(sizes), failing->explained()));
    return values;
  }

  std::vector<TensorInfo> outputs_at(std::span<const int64_t> sizes) const override {
    if (!any_sizes()) return Impl::outputs_at(sizes);
    std::map<std::string, int64_t> values = values_at(sizes);
    const ir::Program &p = schedule.ir.program;
    std::vector<TensorInfo> out = outputs;
    for (size_t i = 0; i < out.size(); ++i) {
      const ir::View &v = p.output_views[i];
      out[i].sizes = at_sizes(v.sizes, values);
      out[i].strides = at_sizes(v.strides, values);
      std::tie(out[i].storage_offset, out[i].storage_elements) = ir::output_allocation(p, v, values);
    }
    return out;
  }

  /// Every tensor of a call at `sizes` against the program `p` at `values`, their values
  /// (none where `p` is one at integers).
  void check_sizes(const ir::Program &p, const std::map<std::string, int64_t> &values, std::span<const int64_t> sizes,
                   std::span<const TensorRef> in, std::span<const TensorRef> out) const {
    thread_local std::vector<int64_t> want;  // keeps its capacity: a call allocates nothing here
    for (size_t i = 0; i < in.size(); ++i) {
      at_sizes(p.buffer(p.inputs[i]).type.sizes, values, want);
      check_sizes_at(sizes, in[i], want, inputs[i], "input");
    }
    for (size_t i = 0; i < out.size(); ++i) {
      at_sizes(p.output_views[i].sizes, values, want);
      check_sizes_at(sizes, out[i], want, outputs[i], "output");
    }
  }
};

struct ReferenceGraph : HostTensorsGraph {
  void run(std::span<const TensorRef> in, std::span<const TensorRef> out) const override {
    write_outputs(ir::interpret(schedule.ir, named_inputs(in)), out);
  }
};

// The Triton kernels under Triton's interpreter: one launch plan for every size.
struct InterpretedGraph : HostTensorsGraph {
  codegen::GpuProgram gpu;

  void run(std::span<const TensorRef> in, std::span<const TensorRef> out) const override {
    if (any_sizes()) {
      std::span<const int64_t> sizes = sizes_of(in);
      check_sizes(schedule.ir.program, values_at(sizes), sizes, in, out);
    }
    write_outputs(run_interpreted(schedule, gpu, named_inputs(in)), out);
  }
};

// The GPU program: one per size called at (runtime/cuda_programs.h), its kernels loaded once.
struct CudaGraph : HostTensorsGraph {
  std::unique_ptr<CudaPrograms> programs;

  // The program at a call's sizes: found by comparing integers; at sizes not seen before,
  // the guards checked, then set up.
  std::shared_ptr<const CudaProgram> program_at(std::span<const int64_t> sizes) const {
    if (!any_sizes()) return programs->last();
    if (std::shared_ptr<const CudaProgram> found = programs->find(sizes)) return found;
    values_at(sizes);
    return programs->at(sizes);
  }

  void run(std::span<const TensorRef> in, std::span<const TensorRef> out) const override { run_on(in, out, nullptr); }
  void run_on(std::span<const TensorRef> in, std::span<const TensorRef> out, void *stream) const override {
    std::span<const int64_t> sizes = sizes_of(in);
    std::shared_ptr<const CudaProgram> program = program_at(sizes);
    if (any_sizes()) check_sizes(program->ir(), {}, sizes, in, out);
    auto s = static_cast<cuda::CUstream>(stream);
    if (in.empty() ? out.empty() || out[0].memory.kind == Memory::Kind::Host : in[0].memory.kind == Memory::Kind::Host)
      return write_outputs(program->run(named_inputs(in), s), out);
    Memory here = Memory::cuda(program->device_ordinal());
    // The thread's arrays keep their capacity: a call allocates nothing once they fit.
    thread_local std::vector<DeviceTensor> din, dout;
    din.clear();
    dout.clear();
    for (size_t i = 0; i < in.size(); ++i) din.push_back(device_tensor(in[i], inputs[i].name, "input", here));
    for (size_t i = 0; i < out.size(); ++i) dout.push_back(device_tensor(out[i], outputs[i].name, "output", here));
    program->run(din, dout, s);
  }
  static DeviceTensor device_tensor(const TensorRef &r, const std::string &name, const char *what, Memory here) {
    COIL_USER_CHECK(r.memory == here, what, " '", name, "' is in ", memory_name(r.memory), " memory, but the graph runs on ",
                    memory_name(here));
    return {cuda::CUdeviceptr(reinterpret_cast<uintptr_t>(r.data)), r.strides, r.storage_offset, r.storage_elements};
  }
  // Device addresses of tensors laid out as the program at `sizes` lays them (the outputs in
  // the allocations outputs_at gives), on the current stream of the caller's choosing.
  void run_addresses_at(std::span<const int64_t> sizes, std::span<void *const> in, std::span<void *const> out,
                        void *stream, bool stored) const override {
    std::shared_ptr<const CudaProgram> program = program_at(sizes);
    thread_local std::vector<DeviceTensor> din, dout;
    din.clear();
    dout.clear();
    auto address = [](void *a) { return cuda::CUdeviceptr(reinterpret_cast<uintptr_t>(a)); };
    for (size_t i = 0; i < in.size(); ++i) din.push_back({address(in[i]), program->input_strides(i), -1, -1});
    for (size_t k = 0; k < out.size(); ++k) {
      auto [offset, elements] = stored ? program->output_allocation(k) : std::pair<int64_t, int64_t>{-1, -1};
      dout.push_back({address(out[k]), program->output_strides(k), offset, elements});
    }
    program->run(din, dout, static_cast<cuda::CUstream>(stream));
  }
  double median_seconds(std::span<const TensorRef> in, std::span<const TensorRef>, int iterations) const override {
    return program_at(sizes_of(in))->median_seconds(named_inputs(in), iterations);
  }
  std::vector<std::string> notes() const override {
    std::shared_ptr<const CudaProgram> program = programs->last();
    std::string note = program ? program->graphs_note() : "";
    return note.empty() ? std::vector<std::string>{} : std::vector<std::string>{note};
  }
  std::vector<KernelTime> profile() const override {
    std::vector<KernelTime> out;
    for (const StepTime &t : programs->profile()) out.push_back({t.name, t.summary, t.calls, t.seconds});
    return out;
  }
  void reset_profile() const override { programs->reset_profile(); }
};

// The CPU library, called on the caller's memory where the layouts allow (CpuModule::Call).
struct CpuGraph : CompiledGraph::Impl {
  std::unique_ptr<CpuModule> module;

  void give(CpuModule::Call &call, std::span<const TensorRef> in, std::span<const TensorRef> out) const {
    for (size_t i = 0; i < in.size(); ++i) call.input(int(i), in[i].data, in[i].strides);
    for (size_t i = 0; i < out.size(); ++i)
      call.output(int(i), out[i].data, out[i].strides, out[i].storage_offset, out[i].storage_elements);
  }

  bool any_sizes() const override { return !module->symbols().empty(); }

  std::vector<TensorInfo> outputs_at(std::span<const int64_t> sizes) const override {
    COIL_USER_CHECK(sizes.size() == symbols.size(), "the graph has ", symbols.size(), " symbols; ", sizes.size(),
                    " sizes were given");
    std::vector<TensorInfo> out = outputs;
    std::vector<CpuModule::OutputLayout> at = module->outputs_at(sizes);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].sizes = at[i].sizes;
      out[i].strides = at[i].strides;
      out[i].storage_offset = at[i].storage_offset;
      out[i].storage_elements = at[i].storage_elements;
    }
    return out;
  }

  // A graph of symbolic sizes: each tensor's sizes against the library's at the call's sizes.
  void check_sizes(const CpuModule::Call &call, std::span<const int64_t> sizes, std::span<const TensorRef> in,
                   std::span<const TensorRef> out) const {
    if (!any_sizes()) return;
    for (size_t i = 0; i < in.size(); ++i) check_sizes_at(sizes, in[i], call.input_sizes(int(i)), inputs[i], "input");
    for (size_t i = 0; i < out.size(); ++i) check_sizes_at(sizes, out[i], call.output_sizes(int(i)), outputs[i], "output");
  }

  void run_addresses_at(std::span<const int64_t> sizes, std::span<void *const> in, std::span<void *const> out,
                        void *, bool) const override {
    COIL_USER_CHECK(sizes.size() == symbols.size(), "the graph has ", symbols.size(), " symbols; ", sizes.size(),
                    " sizes were given");
    CpuModule::Call call(*module, sizes);
    for (size_t i = 0; i < in.size(); ++i) call.input_as_laid_out(int(i), in[i]);
    for (size_t i = 0; i < out.size(); ++i) call.output_as_laid_out(int(i), out[i]);
    call.run();
  }

  void run(std::span<const TensorRef> in, std::span<const TensorRef> out) const override {
    std::span<const int64_t> sizes = sizes_of(in);
    CpuModule::Call call(*module, sizes);
    check_sizes(call, sizes, in, out);
    give(call, in, out);
    call.run();
  }

  double median_seconds(std::span<const TensorRef> in, std::span<const TensorRef> out, int iterations) const override {
    std::span<const int64_t> sizes = sizes_of(in);
    CpuModule::Call call(*module, sizes);
    check_sizes(call, sizes, in, out);
    give(call, in, out);
    return call.median_seconds(iterations);
  }

  std::vector<KernelTime> profile() const override {
    std::vector<KernelTime> out;
    for (const KernelProfile &k : module->profile()) out.push_back({k.name, k.summary, k.calls, k.seconds});
    return out;
  }
  void reset_profile() const override { module->reset_profile(); }
};

std::shared_ptr<CompiledGraph::Impl> build(Graph g, const CompileOptions &o) {
  sched::ScheduleOptions so = sched::ScheduleOptions::from_registry();
  bool gpu = o.target == Target::Cuda || o.target == Target::CudaInterpreter;
  if (gpu) so = codegen::gpu_schedule_options(so);  // epilogues where cuBLASLt takes them
  std::string trace = o.trace_dir.empty() ? options::get_string("trace") : o.trace_dir;
  // Both dialects keep symbolic sizes; the reference interpreter runs the sizes compiled for.
  bool symbolic = o.target != Target::Reference;
  Compilation c = compile_graph(std::move(g), so, trace, symbolic ? CodegenSizes::Symbolic : CodegenSizes::CompiledFor);

  std::shared_ptr<CompiledGraph::Impl> impl;
  std::optional<CudaBuild> cuda_build;
  const std::shared_ptr<SizeGuards> guards = size_guards_of(c.graph);
  switch (o.target) {
    case Target::Reference: impl = std::make_shared<ReferenceGraph>(); break;
    case Target::Cpu: {
      auto cpu = std::make_shared<CpuGraph>();
      CpuBuild b = build_for_cpu(c, trace);
      cpu->module = std::make_unique<CpuModule>(b.so_path);
      cpu->plans = codegen::plans_str(b.plans, c.schedule);
      std::map<std::string, int64_t> fixed = guards ? guards->specialized(guards->values()) : std::map<std::string, int64_t>{};
      for (size_t i = 0; i < cpu->module->symbols().size(); ++i) {
        auto [input, dim] = cpu->module->symbol_source(i);
        const std::string &name = cpu->module->symbols()[i];
        cpu->symbols.push_back({name, input, dim, cpu->module->compiled_sizes()[i], fixed.count(name) > 0});
      }
      impl = cpu;
      break;
    }
    case Target::Cuda: {
      auto cuda = std::make_shared<CudaGraph>();
      cuda_build = build_for_cuda(c, trace);
      dump_sizes(c, trace);  // with what code generation guarded
      cuda->plans = cuda_build->program.plans;
      impl = cuda;  // its programs once its symbols are known, below
      break;
    }
    case Target::CudaInterpreter: {
      auto interpreted = std::make_shared<InterpretedGraph>();
      interpreted->gpu = codegen::generate_triton(c.schedule);
      interpreted->plans = interpreted->gpu.plans;
      dump_sizes(c, trace);  // with what code generation guarded
      impl = interpreted;
      break;
    }
  }
  impl->target = o.target;
  impl->sizes = size_guards_str(c.graph);
  impl->guards = guards;
  // The code is generated: what it checks is final (a size read as a number from here on
  // is a bug that SizeGuards::add reports).
  if (guards) guards->seal();
  const ir::Program &p = c.schedule.ir.program;
  std::map<std::string, const TensorType *> graph_inputs;
  for (ValueId v : c.graph.inputs()) graph_inputs[c.graph.value(v).name] = &c.graph.type(v);
  for (ir::BufferId b : p.inputs) {
    impl->inputs.push_back(info_of(p, p.buffer(b).name, whole(p, b)));
    impl->inputs.back().random_state = p.buffer(b).name == lowering::kRandomStateName;
    auto symbolic = graph_inputs.find(p.buffer(b).name);
    if (!impl->guards || symbolic == graph_inputs.end()) continue;
    for (size_t d = 0; d < symbolic->second->sizes.size(); ++d) {
      const SymInt &s = symbolic->second->sizes[d];
      if (const ir::Atom *a = s.symbolic() ? s.expr().as_atom() : nullptr; a && a->kind() == ir::AtomKind::Symbol)
        impl->symbol_sources.push_back({a->symbol(), impl->inputs.size() - 1, d});
    }
  }
  if (dynamic_cast<HostTensorsGraph *>(impl.get()) && symbolic && impl->guards) {
    // Its symbols: those its program names, each read from an input dim where one is it.
    std::map<std::string, int64_t> fixed = impl->guards->specialized(impl->guards->values());
    for (const std::string &name : ir::symbols_of(c.schedule.ir)) {
      SymbolInfo info{name, -1, -1, impl->guards->values().at(name), fixed.count(name) > 0};
      for (const auto &source : impl->symbol_sources)
        if (source.symbol == name && info.input < 0) info = {name, int64_t(source.input), int64_t(source.dim), info.compiled, info.specialized};
      impl->symbols.push_back(info);
    }
  }
  if (auto *cuda = dynamic_cast<CudaGraph *>(impl.get())) {
    // Its kernels loaded, and a program set up at the sizes compiled for now: what setting
    // up finds wrong shows at compile. A call passes its sizes in the order of `symbols`.
    std::vector<std::string> names;
    std::vector<int64_t> compiled;
    for (const SymbolInfo &s : cuda->symbols) names.push_back(s.name), compiled.push_back(s.compiled);
    cuda->programs = std::make_unique<CudaPrograms>(c.schedule, std::move(cuda_build->program), cuda_build->binaries, names);
    if (cuda->any_sizes()) cuda->program_at(compiled);
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    ir::View v = i < p.output_views.size() ? p.output_views[i] : whole(p, p.outputs[i]);
    impl->outputs.push_back(info_of(p, output_tensor_name(i), v));
    impl->outputs.back().reduced_elements = ir::max_reduction_size(c.lowered, c.lowered.outputs[i]);
    auto input = std::find(p.inputs.begin(), p.inputs.end(), v.buffer);
    const TensorType &t = p.buffer(v.buffer).type;
    bool whole_buffer = known_eq(v.offset, 0) && same(v.sizes, t.sizes) && same(v.strides, t.strides);
    if (input != p.inputs.end() && whole_buffer) impl->outputs.back().same_as_input = int64_t(input - p.inputs.begin());
    if (input == p.inputs.end() && whole_buffer)
      for (int j : sched::inputs_writable_by(c.schedule.ir, v.buffer)) impl->outputs.back().writable_over.push_back(j);
    set_storage(impl->outputs.back(), p, i, v);
  }
  if (auto *host = dynamic_cast<HostTensorsGraph *>(impl.get())) host->schedule = std::move(c.schedule);
  return impl;
}

}  // namespace

// ---- the API ----------------------------------------------------------------------------------

CompiledGraph::CompiledGraph(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Target CompiledGraph::target() const { return impl_->target; }
const std::vector<TensorInfo> &CompiledGraph::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo> &CompiledGraph::outputs() const { return impl_->outputs; }
const std::string &CompiledGraph::plans() const { return impl_->plans; }
const std::string &CompiledGraph::sizes() const { return impl_->sizes; }
const std::vector<SymbolInfo> &CompiledGraph::symbols() const { return impl_->symbols; }
std::vector<TensorInfo> CompiledGraph::outputs_at(std::span<const int64_t> sizes) const {
  return publicly([&] { return impl_->outputs_at(sizes); });
}
std::vector<std::string> CompiledGraph::notes() const { return impl_->notes(); }
std::vector<KernelTime> CompiledGraph::profile() const { return impl_->profile(); }
void CompiledGraph::reset_profile() const { impl_->reset_profile(); }

namespace {

// Where the tensors of one call are: host memory for the targets that run on the host; for
// cuda, all in one place (the GPU program checks which device).
void check_memory(const CompiledGraph::Impl &impl, std::span<const TensorRef> in, std::span<const TensorRef> out) {
  // The i-th tensor of the call, inputs first, with its words for an error.
  auto at = [&](size_t i) -> const TensorRef & { return i < in.size() ? in[i] : out[i - in.size()]; };
  auto words = [&](size_t i) {
    return i < in.size() ? str_cat("input '", impl.inputs[i].name, "'")
                         : str_cat("output '", impl.outputs[i - in.size()].name, "'");
  };
  for (size_t i = 0; i < in.size() + out.size(); ++i) {
    const Memory &m = at(i).memory;
    if (impl.target != Target::Cuda) {
      COIL_USER_CHECK(m.kind == Memory::Kind::Host, words(i), " is in ", memory_name(m), " memory; target ",
                      target_name(impl.target),
                      " takes host memory only (copy the tensor to the host, or compile for target cuda)");
      continue;
    }
    COIL_USER_CHECK(m == at(0).memory, words(i), " is in ", memory_name(m), " memory but ", words(0), " in ",
                    memory_name(at(0).memory), " memory: the tensors of one call are all on the host or all on one GPU");
  }
}

/// For a graph of symbolic sizes called with inputs of other sizes: the symbols' values the
/// inputs give and the first guard of the compiled graph they fail, with what relied on it
/// ("" when the inputs give no value to some symbol, or pass every guard).
std::string explain_sizes(const CompiledGraph::Impl &impl, std::span<const TensorRef> in) {
  if (!impl.guards) return "";
  std::map<std::string, int64_t> values = impl.values_of(in);
  std::set<std::string> needed;
  for (const SizeGuard &g : impl.guards->guards()) ir::collect_symbols(g.expr, needed);
  for (const std::string &s : needed)
    if (!values.count(s)) return "";
  std::optional<SizeGuard> failing = impl.guards->first_failing(values);
  if (!failing) return "";
  std::string given;
  for (const auto &[symbol, value] : values) given += str_cat(given.empty() ? "" : ", ", symbol, " = ", value);
  return str_cat("; the inputs give ", given, ", and the compiled graph serves only sizes where ", failing->str(),
                 " (relied on by ", failing->why.empty() ? "?" : failing->why, ")");
}

void check_call(const CompiledGraph::Impl &impl, std::span<const TensorRef> in, std::span<const TensorRef> out) {
  check_count(in.size(), impl.inputs.size(), "input");
  check_count(out.size(), impl.outputs.size(), "output");
  for (size_t i = 0; i < in.size(); ++i) {
    try {
      check_tensor(in[i], impl.inputs[i], "input", impl.any_sizes());
    } catch (const UserError &e) {
      std::string why = explain_sizes(impl, in);
      if (why.empty()) throw;
      throw UserError(e.message() + why);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) check_tensor(out[i], impl.outputs[i], "output", impl.any_sizes());
  check_memory(impl, in, out);
}

}  // namespace

void CompiledGraph::run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, void *stream) const {
  publicly([&] {
    check_call(*impl_, inputs, outputs);
    impl_->run_on(inputs, outputs, stream);
  });
}

namespace {

// `refs` made the tensors `infos` describe, at `addresses` in `memory` (`stored`: in the
// allocations their storage fields ask for); the vectors keep their capacity from call to call.
void as_compiled(std::vector<TensorRef> &refs, const std::vector<TensorInfo> &infos, std::span<void *const> addresses,
                 Memory memory, bool stored) {
  refs.resize(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    TensorRef &r = refs[i];
    r.data = addresses[i];
    r.dtype = infos[i].dtype;
    r.sizes = infos[i].sizes;
    r.strides = infos[i].strides;
    r.memory = memory;
    r.storage_offset = stored ? infos[i].storage_offset : -1;
    r.storage_elements = stored ? infos[i].storage_elements : -1;
  }
}

}  // namespace

void CompiledGraph::run_addresses(std::span<void *const> inputs, std::span<void *const> outputs, void *stream,
                                  bool outputs_as_stored, std::span<const int64_t> sizes) const {
  publicly([&] {
    check_count(inputs.size(), impl_->inputs.size(), "input");
    check_count(outputs.size(), impl_->outputs.size(), "output");
    if (!sizes.empty()) return impl_->run_addresses_at(sizes, inputs, outputs, stream, outputs_as_stored);
    Memory memory = impl_->target == Target::Cuda ? Memory::cuda(0) : Memory::host();
    thread_local std::vector<TensorRef> in, out;
    as_compiled(in, impl_->inputs, inputs, memory, false);
    as_compiled(out, impl_->outputs, outputs, memory, outputs_as_stored);
    impl_->run_on(in, out, stream);
  });
}

double CompiledGraph::median_seconds(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                                     int iterations) const {
  return publicly([&] {
    check_call(*impl_, inputs, outputs);
    for (const TensorRef &r : inputs)
      COIL_USER_CHECK(r.memory.kind == Memory::Kind::Host, "timing takes host tensors; input in ", memory_name(r.memory),
                      " memory");
    return impl_->median_seconds(inputs, outputs, iterations);
  });
}

CompiledGraph compile(std::string_view graph_text, const CompileOptions &o, std::string_view file_name) {
  return publicly([&] {
    options::ScopedOverrides scope(o.options);
    frontend::SizeValues sizes(o.sizes.begin(), o.sizes.end());
    return CompiledGraph(build(frontend::parse_graph(graph_text, std::string(file_name), &sizes), o));
  });
}

Tolerance tolerance(ScalarType t, int64_t reduced_elements) {
  return publicly([&] { return default_tolerance(internal_dtype(t), reduced_elements); });
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto &[name, lowering] : lowering::lowerings()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

void check_options(const std::vector<std::pair<std::string, std::string>> &options) {
  publicly([&] { options::ScopedOverrides scope(options); });
}

std::string option_value(const std::string &name, const std::vector<std::pair<std::string, std::string>> &options) {
  return publicly([&] {
    options::ScopedOverrides scope(options);
    return options::current(name).first;
  });
}

CompiledGraph compile_file(const std::string &path, const CompileOptions &o) {
  return publicly([&] {
    options::ScopedOverrides scope(o.options);
    frontend::SizeValues sizes(o.sizes.begin(), o.sizes.end());
    return CompiledGraph(build(frontend::parse_graph_file(path, &sizes), o));
  });
}

CompiledGraph compile_parsed(Graph g, const CompileOptions &o) {
  return publicly([&] {
    options::ScopedOverrides scope(o.options);
    return CompiledGraph(build(std::move(g), o));
  });
}

}  // namespace coil
