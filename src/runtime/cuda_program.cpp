#include "runtime/cuda_program.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>

#include "io/graph_tensors.h"
#include "runtime/cuda_extern.h"
#include "runtime/cuda_workspace.h"
#include "support/error.h"
#include "support/int_math.h"
#include "support/options.h"

namespace coil {
namespace {

using codegen::GpuKernel;
using codegen::GpuPlace;
using codegen::GpuStep;
using cuda::CUdeviceptr;
using cuda::CUresult;
using cuda::CUstream;

constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535;


const char *place_name(GpuPlace::Kind k) {
  switch (k) {
    case GpuPlace::Kind::Input: return "input";
    case GpuPlace::Kind::Output: return "output";
    case GpuPlace::Kind::Arena: return "arena";
    case GpuPlace::Kind::Scratch: return "scratch";
  }
  return "?";
}

bool is_pointer(const TritonArg &a) { return !a.type.empty() && a.type[0] == '*'; }

// Runs `f`; an error it throws comes back with context() in front of its message, so that
// every error of a step names the step. A CudaError stays one (callers read its code).
// The context is made only on error: the timed loop of median_seconds goes through here.
template <typename F, typename C>
void in_context(F &&f, C &&context) {
  try {
    f();
  } catch (const cuda::CudaError &e) {
    throw cuda::CudaError(str_cat(context(), ": ", e.message()), e.code());
  } catch (const UserError &e) {
    throw UserError(str_cat(context(), ": ", e.message()), e.loc());
  } catch (const InternalError &e) {
    std::string what = e.what();
    const std::string prefix = "internal error: ";
    if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
    throw InternalError(str_cat(context(), ": ", what));
  }
}

// The synchronous copies of cuda_driver.h run on the legacy default stream, and one from
// pageable memory may return before its DMA has ended; the steps run on a stream that does
// not wait for the legacy one. So: wait for the copies before the first step.
void wait_for_uploads() {
  cuda::check(cuda::driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "copying the inputs to the GPU");
}

cuda::LaunchGrid grid_of(const GpuKernel &k) { return {uint32_t(k.grid[0]), uint32_t(k.grid[1]), uint32_t(k.grid[2])}; }

}  // namespace

// ---------------------------------------------------------------------------------------


// A workspace taken from the pool for one call on `stream` and given back after it: the
// stream first waits (on the GPU) for the workspace's previous call, on whichever stream
// that ran; on the way back the workspace records where this call's work ends, error or not.
class CudaProgram::Lease {
 public:
  Lease(const CudaProgram &owner, CUstream stream) : owner_(owner), stream_(stream) {
    {
      std::lock_guard<std::mutex> lock(owner.pool_mutex_);
      if (!owner.free_workspaces_.empty()) {
        ws_ = std::move(owner.free_workspaces_.back());
        owner.free_workspaces_.pop_back();
      }
    }
    // Another call holds every workspace made so far: this one gets its own.
    if (!ws_) ws_ = owner.make_workspace();
    try {
      // A workspace in the shared arena waits for the other graphs' calls there.
      if (ws_->shared) turn_.emplace(*owner.shared_, stream);
      if (ws_->used) ws_->done.wait_in(stream);
    } catch (...) {
      turn_.reset();
      give_back();
      throw;
    }
  }
  ~Lease() {
    try {
      ws_->done.record(stream_);
      ws_->used = true;
    } catch (const std::exception &) {
      // The stream is unusable: wait for whatever may still use the workspace instead.
      cuda::driver().cuCtxSynchronize();
      ws_->used = false;
    }
    give_back();
    turn_.reset();  // after this call's work: the next graph's call may queue its own
  }
  Lease(const Lease &) = delete;
  Lease &operator=(const Lease &) = delete;

  /// The host waits for the workspace's previous call (before synchronous uploads into it).
  void wait_on_host() const {
    if (ws_->used) ws_->done.synchronize("the previous call on this workspace");
  }

  Workspace &operator*() const { return *ws_; }
  Workspace *operator->() const { return ws_.get(); }

 private:
  void give_back() {
    if (ws_->broken) {  // steps half bound to new addresses: dropped, a later call makes another
      if (ws_->shared) owner_.shared_taken_ = false;
      ws_.reset();
      return;
    }
    std::lock_guard<std::mutex> lock(owner_.pool_mutex_);
    owner_.free_workspaces_.push_back(std::move(ws_));
  }

  const CudaProgram &owner_;
  CUstream stream_;
  std::unique_ptr<Workspace> ws_;
  std::optional<cuda::SharedArena::Turn> turn_;
};

std::shared_ptr<const LoadedKernels> load_kernels(const codegen::GpuProgram &gpu,
                                                  const std::vector<TritonBinary> &binaries) {
  if (binaries.size() != gpu.kernels.size())
    throw InternalError(str_cat("the GPU program has ", gpu.kernels.size(), " kernels but its build has ",
                                binaries.size(), " binaries"));
  const cuda::Device &device = cuda::Device::get();
  auto kernels = std::make_shared<LoadedKernels>();
  for (size_t i = 0; i < gpu.kernels.size(); ++i) {
    in_context(
        [&] {
          auto module = std::make_shared<const cuda::CudaModule>(binaries[i].cubin, gpu.kernels[i].name, device);
          kernels->push_back(std::make_shared<const cuda::CudaKernel>(std::move(module), binaries[i].facts));
        },
        [&] { return str_cat("loading kernel ", gpu.kernels[i].name); });
  }
  return kernels;
}

CudaProgram::CudaProgram(const sched::Schedule &s, codegen::GpuProgram gpu, const std::vector<TritonBinary> &binaries)
    : CudaProgram(s, gpu, load_kernels(gpu, binaries), {}) {}

CudaProgram::CudaProgram(const sched::Schedule &s, codegen::GpuProgram gpu, std::shared_ptr<const LoadedKernels> kernels,
                         const std::map<std::string, int64_t> &values)
    : program_(s.ir.program), gpu_(std::move(gpu)), kernels_(std::move(kernels)) {
  const ir::Program &p = program_;
  if (kernels_->size() != gpu_.kernels.size())
    throw InternalError(str_cat("the GPU program has ", gpu_.kernels.size(), " kernels but ", kernels_->size(),
                                " were loaded"));

  // Every graph input and output has a home even when no step touches it (an input
  // returned as it came, an output that is a view of one).
  size_t ids = p.buffers.size();
  for (const auto &[id, place] : gpu_.places)
    if (id >= 0) ids = std::max(ids, size_t(id) + 1);
  slots_.resize(ids);
  auto buffer_bytes = [&](ir::BufferId b) {
    const TensorType &t = p.buffer(b).type;
    return storage_extent(t) * itemsize(t.dtype);
  };
  for (size_t j = 0; j < p.inputs.size(); ++j)
    slots_[size_t(p.inputs[j])] = {true, GpuPlace::Kind::Input, int(j), 0, buffer_bytes(p.inputs[j])};
  output_owner_.resize(p.outputs.size());
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    ir::BufferId b = p.outputs[k];
    output_owner_[k] = int(std::find(p.outputs.begin(), p.outputs.end(), b) - p.outputs.begin());
    if (!slots_[size_t(b)].placed) slots_[size_t(b)] = {true, GpuPlace::Kind::Output, int(k), 0, buffer_bytes(b)};
  }

  // The host program's places, each checked against its buffer.
  for (const auto &[id, place] : gpu_.places) {
    std::string what = str_cat("buffer ", id);
    int64_t bytes = 0;
    if (id >= 0 && size_t(id) < p.buffers.size()) {
      what = str_cat("buffer ", p.buffer(id).name);
      bytes = buffer_bytes(id);
    } else {
      auto dtype = gpu_.scratch_dtypes.find(id);
      auto elements = gpu_.scratch_elements.find(id);
      if (id < 0 || dtype == gpu_.scratch_dtypes.end() || elements == gpu_.scratch_elements.end() ||
          elements->second < 0)
        throw InternalError(str_cat("the GPU program places ", what, " in the ", place_name(place.kind),
                                    ", but it is neither a buffer of the program nor a scratch buffer with a dtype "
                                    "and an element count"));
      if (auto name = gpu_.scratch_names.find(id); name != gpu_.scratch_names.end())
        what = str_cat("scratch buffer ", name->second);
      bytes = elements->second * itemsize(dtype->second);
    }
    Slot &slot = slots_[size_t(id)];
    switch (place.kind) {
      case GpuPlace::Kind::Input:
        if (place.index < 0 || size_t(place.index) >= p.inputs.size() || p.inputs[size_t(place.index)] != id)
          throw InternalError(str_cat("the GPU program places ", what, " in input ", place.index,
                                      ", which does not hold it"));
        break;
      case GpuPlace::Kind::Output:
        if (place.index < 0 || size_t(place.index) >= p.outputs.size() || p.outputs[size_t(place.index)] != id)
          throw InternalError(str_cat("the GPU program places ", what, " in output ", place.index,
                                      ", which does not hold it"));
        break;  // the home set above: the input it is, or its first output
      case GpuPlace::Kind::Arena:
      case GpuPlace::Kind::Scratch:
        if (slot.placed && slot.kind == GpuPlace::Kind::Input)
          throw InternalError(str_cat("the GPU program places ", what, ", a graph input, in the arena"));
        if (place.offset < 0 || place.offset + bytes > gpu_.arena_bytes)
          throw InternalError(str_cat("the GPU program places ", what, " at [", place.offset, ", ",
                                      place.offset + bytes, "), outside its arena of ", gpu_.arena_bytes, " bytes"));
        slot = {true, place.kind, -1, place.offset, bytes};
        break;
    }
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    ir::View v = ir::output_view(p, k);
    TensorType t{p.buffer(p.outputs[k]).type.dtype, v.sizes, v.strides, {}};
    if (v.sizes.size() != v.strides.size() || v.offset < 0 ||
        storage_extent(t, v.offset) * itemsize(t.dtype) > slots_[size_t(p.outputs[k])].bytes)
      throw InternalError(str_cat("output ", k, "'s view ", shape_str(v.sizes), shape_str(v.strides), " at ",
                                  v.offset, " reaches outside its buffer ", p.buffer(p.outputs[k]).name));
  }
  check_program(values);
  for (const GpuStep &st : gpu_.steps) {
    std::vector<CUdeviceptr> &sizes = size_args_.emplace_back();
    if (st.kind != GpuStep::Kind::Launch) continue;
    const GpuKernel &k = gpu_.kernels[size_t(st.kernel)];
    const TritonLaunchFacts &facts = (*kernels_)[size_t(st.kernel)]->facts();
    for (size_t a = 0; a < k.sizes.size(); ++a) {
      int64_t value = values.at(k.sizes[a]);
      CUdeviceptr slot = 0;  // the driver reads the argument's width from its start
      if (facts.args[st.args.size() + a].type == "i32") {
        COIL_USER_CHECK(value >= 0 && value <= std::numeric_limits<int32_t>::max(), "kernel ", k.name, " takes ",
                        k.sizes[a], " as a 32-bit size, but the call's is ", value);
        int32_t narrow = int32_t(value);
        std::memcpy(&slot, &narrow, sizeof narrow);
      } else {
        std::memcpy(&slot, &value, sizeof value);
      }
      sizes.push_back(slot);
    }
  }
  plan_copies();
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const Slot &slot = slots_[size_t(p.outputs[k])];
    const ir::View &v = output_views_[k];
    TensorType t{p.buffer(p.outputs[k]).type.dtype, v.sizes, v.strides, {}};
    output_in_place_.push_back(has_own(p.inputs.size() + k) && slot.bytes > 0 && v.offset == 0 &&
                               storage_extent(t) * itemsize(t.dtype) == slot.bytes);
    writable_over_.push_back(output_in_place_.back() ? sched::inputs_writable_by(s.ir, p.outputs[k]) : std::vector<int>{});
    auto input = std::find(p.inputs.begin(), p.inputs.end(), v.buffer);
    const TensorType &whole = p.buffer(v.buffer).type;
    bool is_input = input != p.inputs.end() && v.offset == 0 && v.sizes == whole.sizes && v.strides == whole.strides;
    output_input_.push_back(is_input ? int(input - p.inputs.begin()) : -1);
  }

  device_ = &cuda::Device::get();
  stream_ = std::make_unique<cuda::Stream>(*device_);
  prepare_externs();
  profile_ = options::get_bool("triton.profile");
  if (profile_) {
    std::map<std::string, const ir::Kernel *> by_name;
    for (const ir::Kernel &k : s.ir.kernels) by_name[k.name] = &k;
    for (size_t i = 0; i < gpu_.steps.size(); ++i) {
      auto k = by_name.find(gpu_.steps[i].schedule_kernel);
      std::string summary = k == by_name.end() ? std::string() : ir::kernel_summary(p, *k->second);
      if (externs_[i]) summary = str_cat(externs_[i]->words(), ", ", summary);
      step_summaries_.push_back(summary);
    }
    step_calls_.assign(gpu_.steps.size(), 0);
    step_seconds_.assign(gpu_.steps.size(), 0);
  }
  decide_graphs();
  if (options::get_bool("triton.shared_arena")) shared_ = cuda::SharedArena::of(*device_);
  free_workspaces_.push_back(make_workspace(std::move(load_handles_)));
}

// Each extern step's plan prepared once: libraries, cuDNN's descriptors and algorithm, the
// workspace. The handles used here become the first workspace's.
void CudaProgram::prepare_externs() {
  load_handles_ = std::make_unique<cuda::ExternHandles>();
  externs_.resize(gpu_.steps.size());
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    if (st.kind != GpuStep::Kind::Extern) continue;
    in_context(
        [&] {
          externs_[i] = std::make_unique<cuda::PreparedExtern>(program_, program_.nodes[size_t(st.node)],
                                                               st.epilogue_or_null(), *st.extern_plan,
                                                               st.schedule_kernel, *load_handles_);
        },
        [&] { return str_cat("preparing ", step_label(i)); });
    extern_workspace_bytes_ = std::max(extern_workspace_bytes_, externs_[i]->workspace_bytes());
  }
}

// Whether the steps replay as one CUDA graph (the option triton.cudagraphs), and why not.
void CudaProgram::decide_graphs() {
  if (!options::get_bool("triton.cudagraphs")) return;
  if (profile_) {
    graphs_note_ = "CUDA graph off: triton.profile times each step, launched one by one";
    return;
  }
  if (!cuda::driver().has_graphs()) {
    graphs_note_ = "CUDA graph off: this driver has no graph functions";
    return;
  }
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    if (externs_[i] && externs_[i]->on_host()) {
      graphs_note_ = str_cat("CUDA graph off: ", st.schedule_kernel, " runs on the host's loops, which a graph cannot hold");
      return;
    }
  }
  graphs_ = true;
  graphs_note_ = str_cat("CUDA graph: the ", gpu_.steps.size(), " steps are captured at the first call and replayed as one launch");
}

CudaProgram::~CudaProgram() = default;

// The copies between callers' tensors in the buffers' own layouts and the workspace, planned
// once: the call of a caller that passes those layouts plans nothing.
void CudaProgram::plan_copies() {
  const ir::Program &p = program_;
  for (ir::BufferId b : p.inputs) {
    const TensorType &t = p.buffer(b).type;
    const Shape sizes = t.sizes, strides = t.strides;
    input_strides_.push_back(strides);
    input_copy_errors_.emplace_back();
    input_copies_.push_back(
        cuda::plan_strided_copy(sizes, strides, strides, itemsize(t.dtype), &input_copy_errors_.back()));
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const ir::View &v = output_views_.emplace_back(ir::output_view(p, k));
    output_strides_.push_back(Shape(v.strides));
    output_allocations_.push_back(ir::output_allocation(p, v));
    output_copy_errors_.emplace_back();
    output_copies_.push_back(cuda::plan_strided_copy(Shape(v.sizes), Shape(v.strides), Shape(v.strides),
                                                     itemsize(p.buffer(p.outputs[k]).type.dtype),
                                                     &output_copy_errors_.back()));
  }
}

const cuda::StridedCopy &CudaProgram::input_copy(size_t j, std::span<const int64_t> strides,
                                                 std::optional<cuda::StridedCopy> &adhoc) const {
  const ir::Buffer &b = program_.buffer(program_.inputs[j]);
  const TensorType &t = b.type;
  COIL_USER_CHECK(strides.empty() || strides.size() == t.sizes.size(), "input '", b.name, "' has ", strides.size(),
                  " strides for ", t.sizes.size(), " dims");
  if (same_layout(t.sizes, strides, t.strides)) {
    COIL_USER_CHECK(input_copies_[j], "input '", b.name, "' cannot be copied into the GPU program's buffer: ",
                    input_copy_errors_[j]);
    return *input_copies_[j];
  }
  std::string why;
  Shape given = strides_or_contiguous(t.sizes, strides);
  adhoc = cuda::plan_strided_copy(Shape(t.sizes), given, Shape(t.strides), itemsize(t.dtype), &why);
  COIL_USER_CHECK(adhoc, "input '", b.name, "' of strides ", shape_str(given),
                  " cannot be copied into the GPU program's buffer of strides ", shape_str(t.strides), ": ", why);
  return *adhoc;
}

const cuda::StridedCopy &CudaProgram::output_copy(size_t k, std::span<const int64_t> strides,
                                                  std::optional<cuda::StridedCopy> &adhoc) const {
  const ir::View &v = output_views_[k];
  COIL_USER_CHECK(strides.empty() || strides.size() == v.sizes.size(), "output '", output_tensor_name(k), "' has ",
                  strides.size(), " strides for ", v.sizes.size(), " dims");
  if (same_layout(v.sizes, strides, v.strides)) {
    COIL_USER_CHECK(output_copies_[k], "output '", output_tensor_name(k),
                    "' cannot be copied out of the GPU program's buffer: ", output_copy_errors_[k]);
    return *output_copies_[k];
  }
  std::string why;
  Shape given = strides_or_contiguous(v.sizes, strides);
  adhoc = cuda::plan_strided_copy(Shape(v.sizes), Shape(v.strides), given, itemsize(program_.buffer(program_.outputs[k]).type.dtype),
                                  &why);
  COIL_USER_CHECK(adhoc, "output '", output_tensor_name(k), "' of strides ", shape_str(given),
                  " cannot be written from the GPU program's buffer of strides ", shape_str(v.strides), ": ", why);
  return *adhoc;
}

// Every step against its kernel and buffers, before anything is launched: a launch with
// the wrong arguments corrupts memory silently.
void CudaProgram::check_program(const std::map<std::string, int64_t> &values) const {
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    std::string label = str_cat("step ", i);
    if (st.kind == GpuStep::Kind::Launch) {
      if (st.kernel < 0 || size_t(st.kernel) >= gpu_.kernels.size())
        throw InternalError(str_cat(label, " launches kernel ", st.kernel, " of ", gpu_.kernels.size()));
      const GpuKernel &k = gpu_.kernels[size_t(st.kernel)];
      for (int64_t g : k.grid)
        if (g < 0) throw InternalError(str_cat("kernel ", k.name, " has a grid of ", g, " programs along an axis"));
      if (k.grid[0] > kMaxGridX || k.grid[1] > kMaxGridYZ || k.grid[2] > kMaxGridYZ)
        throw UserError(str_cat("kernel ", k.name, " needs a grid of ", k.grid[0], "x", k.grid[1], "x", k.grid[2],
                                " programs; CUDA allows ", kMaxGridX, "x", kMaxGridYZ, "x", kMaxGridYZ));
      const TritonLaunchFacts &facts = (*kernels_)[size_t(st.kernel)]->facts();
      if (facts.args.size() != st.args.size() + k.sizes.size())
        throw InternalError(str_cat("kernel ", k.name, " takes ", facts.args.size(), " arguments, but ", label,
                                    " passes ", st.args.size(), " buffers and ", k.sizes.size(), " sizes"));
      for (size_t a = 0; a < facts.args.size(); ++a) {
        const TritonArg &arg = facts.args[a];
        bool size = a >= st.args.size();
        if (is_pointer(arg) == size || (size && arg.type != "i32" && arg.type != "i64"))
          throw InternalError(str_cat("kernel ", k.name, "'s argument ", arg.name, " is a ", arg.type, ", but ", label,
                                      " passes a ", size ? "size" : "buffer", " there"));
        if (size && !values.count(k.sizes[a - st.args.size()]))
          throw InternalError(str_cat("kernel ", k.name, " takes size ", k.sizes[a - st.args.size()],
                                      ", which the call's sizes do not give"));
      }
      for (int b : st.args)
        if (b < 0 || size_t(b) >= slots_.size() || !slots_[size_t(b)].placed)
          throw InternalError(str_cat("kernel ", k.name, " is passed buffer ", b, ", which the GPU program does not place"));
    } else {
      if (st.node < 0 || size_t(st.node) >= program_.nodes.size() ||
          program_.nodes[size_t(st.node)].kind != ir::NodeKind::Extern)
        throw InternalError(str_cat(label, " (", st.schedule_kernel, ") calls node ", st.node, ", which is not an extern call"));
      if (!st.extern_plan) throw InternalError(str_cat(label, " (", st.schedule_kernel, ") has no extern plan"));
    }
  }
}

std::string CudaProgram::step_label(size_t i) const {
  const GpuStep &st = gpu_.steps[i];
  if (st.kind == GpuStep::Kind::Launch) return str_cat("step ", i, " (kernel ", gpu_.kernels[size_t(st.kernel)].name, ")");
  return str_cat("step ", i, " (", st.schedule_kernel.empty() ? std::string("extern") : st.schedule_kernel, ", ",
                 ir::extern_op_name(program_.nodes[size_t(st.node)].extern_op), ")");
}

std::unique_ptr<CudaProgram::Workspace> CudaProgram::make_workspace(std::unique_ptr<cuda::ExternHandles> handles) const {
  const ir::Program &p = program_;
  device_->make_current();
  auto ws = std::make_unique<Workspace>();
  // The inputs' and outputs' own buffers are made when a call first needs them (own_buffer):
  // a call on tensors bound in place (parameters among them) never doubles their memory.
  ws->inputs.resize(p.inputs.size());
  ws->outputs.resize(p.outputs.size());
  Workspace &w = *ws;
  // The arena, then the extern steps' workspace: in the GPU's shared arena for one
  // workspace of the program (its calls take turns with every other graph's, Lease), else
  // in allocations of the workspace's own (a second call queued while the first is).
  int64_t scratch_at = round_up(gpu_.arena_bytes, int64_t(kCallerAlignment));
  int64_t need = scratch_at + int64_t(extern_workspace_bytes_);
  CUdeviceptr base = 0;
  if (shared_ && need > 0 && !shared_taken_.exchange(true)) {
    try {
      base = shared_->reach(need);
    } catch (...) {
      shared_taken_ = false;
      throw;
    }
    w.shared = true;
    w.extern_scratch = base + CUdeviceptr(scratch_at);
  } else {
    w.arena = std::make_unique<cuda::DeviceArena>(gpu_.arena_bytes, *device_);
    if (extern_workspace_bytes_ > 0) w.extern_workspace = cuda::DeviceBuffer(extern_workspace_bytes_, *device_);
    w.extern_scratch = w.extern_workspace.ptr();
  }
  w.address.assign(slots_.size(), 0);
  for (size_t id = 0; id < slots_.size(); ++id) {
    const Slot &slot = slots_[id];
    if (!slot.placed) continue;
    // An input's or output's address is set when the call places it (runtime/cuda_binding.cpp);
    // the constructor checked that the others lie in the arena.
    if (slot.kind == GpuPlace::Kind::Arena || slot.kind == GpuPlace::Kind::Scratch)
      w.address[id] = w.shared ? base + CUdeviceptr(slot.offset) : w.arena->at(slot.offset, slot.bytes);
  }
  w.args.assign(gpu_.steps.size(), {});
  w.arg_pointers.assign(gpu_.steps.size(), {});
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    if (st.kind != GpuStep::Kind::Launch) continue;
    w.args[i].assign(st.args.size(), 0);
    w.args[i].insert(w.args[i].end(), size_args_[i].begin(), size_args_[i].end());
    // The driver reads each argument through a pointer to its value: the values stay put.
    // The values are filled when the first call binds the steps (rebind).
    for (const CUdeviceptr &value : w.args[i]) w.arg_pointers[i].push_back(&value);
  }
  if (graphs_) w.capture_stream = std::make_unique<cuda::Stream>(*device_);
  size_t tensors = p.inputs.size() + p.outputs.size();
  w.binding.assign(tensors, Binding::Own);
  w.rebinds.assign(tensors, 0);
  w.in_place.assign(tensors, 0);
  w.moved.reserve(tensors);
  // Extern steps on these addresses, with this workspace's handles and scratch.
  w.handles = handles ? std::move(handles) : std::make_unique<cuda::ExternHandles>();
  w.externs.resize(gpu_.steps.size());
  w.extern_buffers.resize(gpu_.steps.size());
  w.address_of = [this, &w](ir::BufferId b) -> CUdeviceptr {
    if (b < 0 || size_t(b) >= slots_.size() || !slots_[size_t(b)].placed)
      throw InternalError(str_cat("the extern call asks for buffer ", b, ", which the GPU program does not place"));
    if (w.asked) w.asked->push_back(b);
    return w.address[size_t(b)];
  };
  return ws;  // its extern steps are bound at its first call, on the addresses placed then
}

// Extern step `i` bound to `w`'s addresses now, noting which buffers it asked for.
void CudaProgram::bind_extern(Workspace &w, size_t i) const {
  w.extern_buffers[i].clear();
  w.asked = &w.extern_buffers[i];
  try {
    in_context([&] { w.externs[i] = externs_[i]->bind(*w.handles, w.address_of, w.extern_scratch); },
               [&] { return str_cat("preparing ", step_label(i)); });
  } catch (...) {
    w.asked = nullptr;
    throw;
  }
  w.asked = nullptr;
}

// Every input checked before any memory is touched; the tensors in the program's input order.
std::vector<const HostTensor *> CudaProgram::check_host_inputs(const TensorList &inputs) const {
  const ir::Program &p = program_;
  std::vector<const HostTensor *> given;
  for (size_t j = 0; j < p.inputs.size(); ++j) {
    const ir::Buffer &b = p.buffer(p.inputs[j]);
    const HostTensor *h = find_tensor(inputs, b.name);
    COIL_USER_CHECK(h, "missing input tensor '", b.name, "'");
    COIL_USER_CHECK(h->dtype == b.type.dtype && h->sizes == b.type.sizes, "input '", b.name, "' is ", h->describe(),
                    " but the graph expects ", short_name(b.type.dtype), shape_str(b.type.sizes));
    given.push_back(h);
  }
  return given;
}

// The host's dense tensors into the workspace's input buffers, each laid out by its buffer's
// strides on the host, then copied in one piece (synchronously).
void CudaProgram::upload(Workspace &w, const std::vector<const HostTensor *> &given) const {
  const ir::Program &p = program_;
  for (size_t j = 0; j < p.inputs.size(); ++j) {
    const TensorType &t = p.buffer(p.inputs[j]).type;
    int64_t size = itemsize(t.dtype);
    cuda::DeviceBuffer &into = w.inputs[j];
    AlignedBuffer staged(into.size());
    const std::byte *src = given[j]->data.data();
    for_each_offset(t.sizes, t.strides, 0, [&](int64_t flat, int64_t at) {
      std::memcpy(staged.data() + at * size, src + flat * size, size_t(size));
    });
    into.upload(staged.data(), staged.size());
  }
  wait_for_uploads();
}

void CudaProgram::run_step(Workspace &c, CUstream stream, size_t i) const {
  const GpuStep &st = gpu_.steps[i];
  if (st.kind == GpuStep::Kind::Launch) {
    const GpuKernel &k = gpu_.kernels[size_t(st.kernel)];
    (*kernels_)[size_t(st.kernel)]->launch(grid_of(k), c.arg_pointers[i], stream);
  } else {
    externs_[i]->run(*c.externs[i], stream);
  }
}

void CudaProgram::run_steps(Workspace &c, CUstream stream, bool sync_each_step) const {
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    in_context([&] {
      run_step(c, stream, i);
      if (sync_each_step) cuda::check(cuda::driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "waiting for it");
    }, [&] { return step_label(i); });
  }
}

void CudaProgram::run_profiled(Workspace &w, CUstream stream) const {
  size_t n = gpu_.steps.size();
  while (w.marks.size() < n + 1) w.marks.push_back(std::make_unique<cuda::Event>());
  {
    cuda::StreamGate gate(stream);
    w.marks[0]->record(stream);
    for (size_t i = 0; i < n; ++i) {
      in_context([&] { run_step(w, stream, i); }, [&] { return step_label(i); });
      w.marks[i + 1]->record(stream);
    }
  }
  w.marks[n]->synchronize(str_cat("the graph's ", n, " steps"));
  std::lock_guard<std::mutex> lock(profile_mutex_);
  for (size_t i = 0; i < n; ++i) {
    step_calls_[i] += 1;
    step_seconds_[i] += double(w.marks[i + 1]->since(*w.marks[i])) * 1e-3;
  }
}

std::vector<StepTime> CudaProgram::profile() const {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  std::vector<StepTime> out;
  if (!profile_) return out;
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    std::string name = st.kind == GpuStep::Kind::Launch ? gpu_.kernels[size_t(st.kernel)].name : st.schedule_kernel;
    out.push_back({name, step_summaries_[i], step_calls_[i], step_seconds_[i]});
  }
  return out;
}

void CudaProgram::reset_profile() const {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  std::fill(step_calls_.begin(), step_calls_.end(), 0);
  std::fill(step_seconds_.begin(), step_seconds_.end(), 0.0);
}

std::vector<HostTensor> CudaProgram::read_outputs(const Workspace &c) const {
  const ir::Program &p = program_;
  std::map<ir::BufferId, AlignedBuffer> copied;  // one download per buffer, however many outputs view it
  std::vector<HostTensor> out;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    ir::BufferId b = p.outputs[i];
    const Slot &slot = slots_[size_t(b)];
    auto it = copied.find(b);
    if (it == copied.end()) {
      AlignedBuffer host(size_t(slot.bytes));
      if (slot.bytes > 0)
        cuda::check(cuda::driver().cuMemcpyDtoH(host.data(), c.address[size_t(b)], size_t(slot.bytes)), "cuMemcpyDtoH",
                    str_cat("copying output ", i, " (", p.buffer(b).name, ") back from the GPU"));
      it = copied.emplace(b, std::move(host)).first;
    }
    ir::View v = ir::output_view(p, i);
    DType t = p.buffer(b).type.dtype;
    HostTensor h = HostTensor::zeros(t, v.sizes);
    int64_t size = itemsize(t);
    const std::byte *base = it->second.data();
    for_each_offset(v.sizes, v.strides, v.offset, [&](int64_t flat, int64_t at) {
      std::memcpy(h.data.data() + flat * size, base + at * size, size_t(size));
    });
    out.push_back(std::move(h));
  }
  return out;
}

// With graphs: the first call on a workspace launches its steps one by one on the
// workspace's own stream (libraries set up their handles and scratch there), waits for
// them and captures them; its results are those of the launches, and later calls replay
// the graph alone. The graph is not replayed at once: a step that writes an output over
// an input it reads (an optimizer's update bound to its parameter) would apply twice. A
// capture that fails (a step a graph cannot hold) turns graphs off for the program, with
// the reason in graphs_note(); that call's results are in place.
void CudaProgram::launch_all(Workspace &w, CUstream stream, bool sync_each_step) const {
  if (profile_ && !sync_each_step) return run_profiled(w, stream);
  if (!graphs_ || sync_each_step || graphs_failed_.load()) return run_steps(w, stream, sync_each_step);
  if (!w.graph) {
    CUstream own = w.capture_stream->get();
    w.ready.record(stream);  // the caller's copies into the workspace come first
    w.ready.wait_in(own);
    run_steps(w, own, false);
    cuda::check(cuda::driver().cuStreamSynchronize(own), "cuStreamSynchronize",
                str_cat("running the graph's ", gpu_.steps.size(), " steps"));
    try {
      w.graph = std::make_unique<cuda::Graph>(own, [&] { run_steps(w, own, false); });
    } catch (const UserError &e) {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      graphs_failed_ = true;
      graphs_note_ = str_cat("CUDA graph off: capturing the steps failed (", e.what(), "); the steps are launched one by one");
    }
    return;
  }
  w.graph->launch(stream);
}

void CudaProgram::run(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                      CUstream stream) const {
  const ir::Program &p = program_;
  COIL_USER_CHECK(inputs.size() == p.inputs.size(), "the graph has ", p.inputs.size(), " inputs; ", inputs.size(),
                  " were given");
  COIL_USER_CHECK(outputs.size() == p.outputs.size(), "the graph has ", p.outputs.size(), " outputs; ",
                  outputs.size(), " were given");
  // Every layout checked before anything is queued.
  std::optional<cuda::StridedCopy> adhoc;
  for (size_t j = 0; j < inputs.size(); ++j) input_copy(j, inputs[j].strides, adhoc);
  for (size_t k = 0; k < outputs.size(); ++k) output_copy(k, outputs[k].strides, adhoc);

  device_->make_current();
  Lease lease(*this, stream);
  Workspace &w = *lease;
  size_t ni = inputs.size();
  for (size_t t = 0; t < ni + outputs.size(); ++t) w.in_place[t] = place(w, t, inputs, outputs);
  rebind(w);
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (w.in_place[j]) continue;
    const cuda::StridedCopy &c = input_copy(j, inputs[j].strides, adhoc);
    copies_.fetch_add(1, std::memory_order_relaxed);
    in_context([&] { cuda::enqueue_copy(c, w.inputs[j].ptr(), inputs[j].data, stream, {}); },
               [&] { return str_cat("copying input '", p.buffer(p.inputs[j]).name, "' (", c.str(), ") into the workspace"); });
  }
  bool debug = options::get_bool("debug");
  launch_all(w, stream, debug);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (w.in_place[ni + k]) continue;
    const cuda::StridedCopy &c = output_copy(k, outputs[k].strides, adhoc);
    ir::BufferId b = p.outputs[k];
    CUdeviceptr from = w.address[size_t(b)] + CUdeviceptr(output_views_[k].offset * itemsize(p.buffer(b).type.dtype));
    // An output that is an input bound in place, handed that input's own tensor (a training
    // forward returning what its backward reads): already there.
    if (from == outputs[k].data && same_layout(output_views_[k].sizes, outputs[k].strides, output_views_[k].strides))
      continue;
    copies_.fetch_add(1, std::memory_order_relaxed);
    in_context([&] { cuda::enqueue_copy(c, outputs[k].data, from, stream, {}); },
               [&] { return str_cat("copying output '", output_tensor_name(k), "' (", c.str(), ") out of the workspace"); });
  }
  if (debug)
    cuda::check(cuda::driver().cuStreamSynchronize(stream), "cuStreamSynchronize",
                str_cat("running the graph's ", gpu_.steps.size(), " steps and their copies"));
}

std::vector<HostTensor> CudaProgram::run(const TensorList &inputs, CUstream stream) const {
  std::vector<const HostTensor *> given = check_host_inputs(inputs);
  device_->make_current();
  CUstream s = stream ? stream : stream_->get();
  Lease lease(*this, s);
  lease.wait_on_host();
  bind_own(*lease);
  upload(*lease, given);
  bool debug = options::get_bool("debug");
  launch_all(*lease, s, debug);
  // Kernels fail asynchronously: an error shows here, after the last launch, whichever step
  // caused it; with the option debug every step is waited for and the error names it.
  cuda::check(cuda::driver().cuStreamSynchronize(s), "cuStreamSynchronize",
              str_cat("running the graph's ", gpu_.steps.size(),
                      " steps (set COIL_DEBUG=1 to wait for each step and find the one that failed)"));
  return read_outputs(*lease);
}

double CudaProgram::median_seconds(const TensorList &inputs, int iterations) const {
  std::vector<const HostTensor *> given = check_host_inputs(inputs);
  device_->make_current();
  CUstream s = stream_->get();
  Lease lease(*this, s);
  lease.wait_on_host();
  bind_own(*lease);
  upload(*lease, given);
  launch_all(*lease, s, false);  // with graphs: the capture, before the timing
  cuda::check(cuda::driver().cuStreamSynchronize(s), "cuStreamSynchronize",
              str_cat("running the graph's ", gpu_.steps.size(), " steps"));
  // Runs of 10 calls back to back between one pair of events: the host's launches for one
  // call overlap the GPU's work for the one before, as in a model. The first run warms up.
  constexpr int kRun = 10;
  double ms = cuda::median_ms_per_call(s, std::max(iterations / kRun, 1), kRun, [&] { launch_all(*lease, s, false); },
                                       str_cat("the graph's ", gpu_.steps.size(), " steps"));
  return ms * 1e-3;
}

std::string CudaProgram::graphs_note() const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  return graphs_note_;
}

std::vector<std::string> CudaProgram::describe() const {
  std::vector<std::string> out;
  if (std::string note = graphs_note(); !note.empty()) out.push_back(note);
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    if (st.kind == GpuStep::Kind::Launch) {
      const GpuKernel &k = gpu_.kernels[size_t(st.kernel)];
      const TritonLaunchFacts &f = (*kernels_)[size_t(st.kernel)]->facts();
      std::string line = str_cat(k.name, ": Triton, grid ", k.grid[0], "x", k.grid[1], "x", k.grid[2], ", ",
                                 f.num_warps, f.num_warps == 1 ? " warp" : " warps");
      if (f.shared > 0) line += str_cat(", ", f.shared, " bytes of shared memory");
      std::string decisions;
      for (const auto &[name, value] : k.attrs) decisions += str_cat(decisions.empty() ? "" : ", ", name, "=", value);
      if (!decisions.empty()) line += "; " + decisions;
      out.push_back(line);
      continue;
    }
    const ir::Node &n = program_.nodes[size_t(st.node)];
    std::string operands;
    for (const ir::View &v : n.operands)
      if (v.buffer >= 0) operands += str_cat(operands.empty() ? "" : " and ", shape_str(v.sizes));
    std::string line = str_cat(st.schedule_kernel.empty() ? std::string("extern") : st.schedule_kernel, ": ",
                               externs_[i]->words(), ", ",
                               ir::extern_op_name(n.extern_op));
    if (!operands.empty()) line += " of " + operands;
    if (st.epilogue) line += str_cat(" with its epilogue into ", program_.buffer(st.epilogue->out.buffer).name);
    else if (!n.outputs.empty()) line += " into " + shape_str(program_.buffer(n.outputs[0]).type.sizes);
    out.push_back(line);
  }
  return out;
}

}  // namespace coil
