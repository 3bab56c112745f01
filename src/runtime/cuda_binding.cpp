// Binding a CudaProgram's steps to the tensors a device tensor call gives (see the comment
// below): which tensors are read or written in place, and the launches, extern calls and
// CUDA graph bound anew when one of them moves. Tests: tests/gpu/program_test.cpp (in-place
// binding, copies after a move, no set-up on steady calls) and tests/gpu/device_io_test.cpp.
#include <algorithm>
#include <utility>

#include "runtime/cuda_program.h"
#include "runtime/cuda_workspace.h"
#include "support/error.h"

namespace coil {

using codegen::GpuPlace;
using codegen::GpuStep;
using cuda::CUdeviceptr;

// ---- where a call's tensors are bound --------------------------------------------------
//
// A device tensor call's input or output whose layout is its buffer's, aligned as the
// workspace's own buffers are, is read or written where the caller keeps it: the steps'
// launch arguments, extern calls and CUDA graph are bound to its address. Binding costs
// what loading did (the extern steps that touch the tensor bound again, a graph captured
// again), so it is done when a tensor's address is first seen, not per call: a tensor that
// comes back at the address it was bound to (a parameter, a buffer of PyTorch's caching
// allocator) costs nothing. One whose address moves is bound again where it now is, up to
// kRebinds times (a training loop's first steps place its activations and gradients anew
// until the caching allocator settles: the optimizer's state appears in the first step),
// and after that copied into the workspace's own buffer on every call (Copied). An output
// is bound where its buffer's home is given in an allocation that holds the buffer's whole
// extent (the view is the whole buffer, or the caller says where its allocation lies: a
// training forward's query, key and value, three views of one product); the buffer's other
// views, given around the same buffer start, are then already written. Other outputs,
// empty tensors, and tensors that overlap another of the call stay copied, but for an
// output given the very bytes of an input it may be written over (an optimizer's update of
// its parameter): both are bound there, and the kernel that writes the output reads the
// input there first. An output that is an input, handed that input in its layout, is
// already where it belongs: the input is bound in place and the output copies nothing
// (CudaProgram::run).

namespace {

// How many times a tensor bound in place may move and be bound again before it is copied.
constexpr uint8_t kRebinds = 3;

// The lowest and one past the highest byte a caller's tensor spans; {0, 0} when it is empty.
std::pair<CUdeviceptr, CUdeviceptr> span_of(CUdeviceptr data, const Shape &sizes, std::span<const int64_t> strides,
                                            int64_t item) {
  if (checked_numel(sizes) == 0) return {0, 0};
  auto [lo, hi] = element_span(sizes, strides);
  return {data + CUdeviceptr(lo * item), data + CUdeviceptr((hi + 1) * item)};
}

}  // namespace

bool CudaProgram::has_own(size_t t) const {
  size_t ni = program_.inputs.size();
  if (t < ni) return true;
  const Slot &slot = slots_[size_t(program_.outputs[t - ni])];
  return slot.kind == GpuPlace::Kind::Output && slot.index == int(t - ni);
}

// Tensor `t`'s own buffer in `w`, made the first time a call needs it: never a null
// pointer, even for an empty tensor, as the CPU caller allocates.
CUdeviceptr CudaProgram::own_buffer(Workspace &w, size_t t) const {
  size_t ni = program_.inputs.size();
  if (!has_own(t)) throw InternalError(str_cat("output ", t - ni, " is not its buffer's home and has no buffer of its own"));
  cuda::DeviceBuffer &own = t < ni ? w.inputs[t] : w.outputs[t - ni];
  if (!own.ptr()) {
    own = cuda::DeviceBuffer(size_t(std::max<int64_t>(slots_[size_t(buffer_of(t))].bytes, 1)), *device_);
    own_bytes_.fetch_add(int64_t(own.size()), std::memory_order_relaxed);
  }
  return own.ptr();
}

// Tensor `t` on its own buffer: moved there unless it is already.
void CudaProgram::use_own(Workspace &w, size_t t) const {
  CUdeviceptr own = own_buffer(w, t);
  if (w.address[size_t(buffer_of(t))] != own) move(w, t, own);
}

// Whether tensor `t` (an input, or output t - inputs) of this call is read or written in
// place, moving the workspace's binding as the comment above says.
bool CudaProgram::place(Workspace &w, size_t t, std::span<const DeviceTensor> inputs,
                        std::span<const DeviceTensor> outputs) const {
  const ir::Program &p = program_;
  size_t ni = p.inputs.size();
  Binding &b = w.binding[t];
  if (b == Binding::Copied) return false;
  const DeviceTensor &d = t < ni ? inputs[t] : outputs[t - ni];
  CUdeviceptr at = t < ni ? d.data : buffer_start(t - ni, d);  // where the tensor's buffer would be
  bool fits = at % kCallerAlignment == 0;
  if (t < ni) {
    const TensorType &type = p.buffer(p.inputs[t]).type;
    fits = fits && slots_[size_t(p.inputs[t])].bytes > 0 && same_layout(type.sizes, d.strides, type.strides);
  } else {
    const ir::View &v = output_views_[t - ni];
    fits = fits && holds_buffer(t - ni, d) && same_layout(v.sizes, d.strides, v.strides);
  }
  if (b == Binding::Caller) {
    if (fits && at == w.address[size_t(buffer_of(t))]) return true;
    if (!fits || w.rebinds[t] == kRebinds || overlaps_another(t, inputs, outputs)) {
      b = Binding::Copied;
      use_own(w, t);
      return false;
    }
    ++w.rebinds[t];  // moved: bound again below
  } else if (!fits || overlaps_another(t, inputs, outputs)) {
    if (has_own(t)) use_own(w, t);
    return false;
  }
  b = Binding::Caller;
  move(w, t, at);
  return true;
}

// Where output k's buffer starts when the output is `d`: its view's offset before element 0.
CUdeviceptr CudaProgram::buffer_start(size_t k, const DeviceTensor &d) const {
  int64_t item = itemsize(program_.buffer(program_.outputs[k]).type.dtype);
  return d.data - CUdeviceptr(output_views_[k].offset * item);
}

// Whether output k, given as `d`, may be written in place: it is its buffer's home, and the
// caller's allocation holds the buffer's whole extent around it (the view is the whole
// buffer, or the caller says where its allocation lies).
bool CudaProgram::holds_buffer(size_t k, const DeviceTensor &d) const {
  if (output_in_place_[k]) return true;
  size_t t = program_.inputs.size() + k;
  const Slot &slot = slots_[size_t(buffer_of(t))];
  int64_t item = itemsize(program_.buffer(program_.outputs[k]).type.dtype);
  return has_own(t) && slot.bytes > 0 &&
         allocation_holds(d.storage_offset, d.storage_elements, output_views_[k].offset, slot.bytes / item);
}

// Whether tensor `t`'s bytes meet those of a tensor of the call that the steps write while
// it is in use (any output) or, for an output, that they read (any input).
bool CudaProgram::overlaps_another(size_t t, std::span<const DeviceTensor> inputs,
                                   std::span<const DeviceTensor> outputs) const {
  const ir::Program &p = program_;
  size_t ni = p.inputs.size();
  auto span_at = [&](size_t u) {
    if (u < ni) {
      const TensorType &type = p.buffer(p.inputs[u]).type;
      return span_of(inputs[u].data, type.sizes, inputs[u].strides, itemsize(type.dtype));
    }
    size_t k = u - ni;
    const DeviceTensor &d = outputs[k];
    if (!output_in_place_[k] && holds_buffer(k, d)) {  // the whole buffer is written
      CUdeviceptr start = buffer_start(k, d);
      return std::pair{start, start + CUdeviceptr(slots_[size_t(p.outputs[k])].bytes)};
    }
    const ir::View &v = output_views_[k];
    return span_of(d.data, v.sizes, d.strides, itemsize(p.buffer(p.outputs[k]).type.dtype));
  };
  auto [lo, hi] = span_at(t);
  for (size_t u = t < ni ? ni : 0; u < ni + outputs.size(); ++u) {
    if (u == t || views_of_one_buffer(t, u, outputs)) continue;
    auto [ulo, uhi] = span_at(u);
    if (ulo == lo && uhi == hi && one_tensor_by_design(t, u, outputs)) continue;
    if (ulo < hi && lo < uhi) return true;
  }
  return false;
}

// Whether tensors t and u, given the same bytes, may be (an output and an input): an output
// that may be written over that input, both bound there; or an output that is that input,
// given in its layout, which the call then copies nothing into (CudaProgram::run).
bool CudaProgram::one_tensor_by_design(size_t t, size_t u, std::span<const DeviceTensor> outputs) const {
  size_t ni = program_.inputs.size();
  if ((t < ni) == (u < ni)) return false;
  size_t input = std::min(t, u), output = std::max(t, u) - ni;
  const std::vector<int> &over = writable_over_[output];
  if (std::find(over.begin(), over.end(), int(input)) != over.end()) return true;
  const ir::View &v = output_views_[output];
  return output_input_[output] == int(input) && same_layout(v.sizes, outputs[output].strides, v.strides);
}

// Whether tensors t and u are outputs given as views of one buffer where it lies: both in
// their layouts, around the one address of the buffer's start. The steps write the buffer
// once; the view that is not its home is then already written (CudaProgram::run).
bool CudaProgram::views_of_one_buffer(size_t t, size_t u, std::span<const DeviceTensor> outputs) const {
  size_t ni = program_.inputs.size();
  if (t < ni || u < ni || program_.outputs[t - ni] != program_.outputs[u - ni]) return false;
  auto in_layout = [&](size_t k) {
    const ir::View &v = output_views_[k];
    return same_layout(v.sizes, outputs[k].strides, v.strides);
  };
  return in_layout(t - ni) && in_layout(u - ni) &&
         buffer_start(t - ni, outputs[t - ni]) == buffer_start(u - ni, outputs[u - ni]);
}

ir::BufferId CudaProgram::buffer_of(size_t t) const {
  size_t ni = program_.inputs.size();
  return t < ni ? program_.inputs[t] : program_.outputs[t - ni];
}

void CudaProgram::move(Workspace &w, size_t t, CUdeviceptr to) const {
  ir::BufferId b = buffer_of(t);
  w.address[size_t(b)] = to;
  w.moved.push_back(b);
}

// The steps of `w` on its buffers' addresses, at its first call and after some moved:
// every launch's pointer arguments, the extern steps (each that asked for a moved buffer)
// bound again, the CUDA graph captured again at the next call. Nothing when nothing moved.
// A failure leaves the workspace broken (dropped).
void CudaProgram::rebind(Workspace &w) const {
  if (w.steps_bound && w.moved.empty()) return;
  for (size_t i = 0; i < gpu_.steps.size(); ++i) {
    const GpuStep &st = gpu_.steps[i];
    if (st.kind == GpuStep::Kind::Launch)
      for (size_t a = 0; a < st.args.size(); ++a) w.args[i][a] = w.address[size_t(st.args[a])];
  }
  try {
    for (size_t i = 0; i < gpu_.steps.size(); ++i) {
      if (!externs_[i]) continue;
      const std::vector<ir::BufferId> &asked = w.extern_buffers[i];
      if (!w.steps_bound || std::any_of(w.moved.begin(), w.moved.end(), [&](ir::BufferId b) {
            return std::find(asked.begin(), asked.end(), b) != asked.end();
          }))
        bind_extern(w, i);
    }
  } catch (...) {
    w.broken = true;
    throw;
  }
  w.steps_bound = true;
  w.moved.clear();
  w.graph.reset();
}

// Host tensor calls upload into and download from the workspace's own buffers.
void CudaProgram::bind_own(Workspace &w) const {
  for (size_t t = 0; t < w.binding.size(); ++t) {
    if (!has_own(t)) continue;
    if (w.binding[t] == Binding::Caller) w.binding[t] = Binding::Own;
    use_own(w, t);
  }
  rebind(w);
}

}  // namespace coil
