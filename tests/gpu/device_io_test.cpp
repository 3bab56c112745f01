// The public API (include/coil/coil.h) on a real GPU with device tensors in and out: each
// graph is compiled for target cuda through coil::compile, run on the caller's device
// memory and on a stream of the caller's, and compared with the same graph on the reference
// interpreter (target ref, host tensors) with the testing tiers' tolerances. Each check runs
// without and with CUDA graphs (triton.cudagraphs): results on a user stream; outputs the
// caller holds left alone by later calls; calls on two streams that overlap (the workspace
// reused only after the other stream's call is done); inputs and outputs of other strides
// than the compiled ones (copied by rows on the GPU, gaps in the caller's output untouched);
// host tensors still accepted; and the errors for device memory where it cannot go. Not
// part of ctest (CI has no GPU); run it on a GPU machine with Python and triton:
//   cmake -S . -B build-gpu -G Ninja -DCOIL_TESTS=OFF -DCOIL_GPU_TESTS=ON
//   ninja -C build-gpu coil_gpu_device_io_test
//   COIL_TRITON_PYTHON=python3 COIL_CACHE_DIR=$(mktemp -d) build-gpu/tests/gpu/coil_gpu_device_io_test
// Prints PASS or FAIL per check and exits 0 only when every check passed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "coil/coil.h"
#include "io/compare.h"
#include "io/host_tensor.h"
#include "runtime/cuda_driver.h"
#include "support/error.h"
#include "gpu_check.h"

namespace coil {
namespace {

// A matrix product with relu (an extern call), a reduction, and an output that is a view of
// an input, so that every kind of output place is copied out.
const char *kMixed = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[64, 96][96, 1]cuda:0", w: "f32[96, 48][48, 1]cuda:0"):
        mm: "f32[64, 48][48, 1]cuda:0" = torch.ops.aten.mm.default(x, w)
        relu: "f32[64, 48][48, 1]cuda:0" = torch.ops.aten.relu.default(mm)
        exp: "f32[64, 96][96, 1]cuda:0" = torch.ops.aten.exp.default(x)
        sum_1: "f32[64][1]cuda:0" = torch.ops.aten.sum.dim_IntList(exp, [1])
        permute: "f32[96, 64][1, 96]cuda:0" = torch.ops.aten.permute.default(x, [1, 0])
        return (relu, sum_1, permute)
)";

// 64M elements a call (each copy and the kernel take about 0.1 ms on an H200, far longer
// than the host takes to queue a call), for the calls on two streams: unordered, a call on
// one stream would copy its inputs into the workspace while the other stream's call still
// reads it. Its reference is a plain loop (x * 2 + 1 is exact in f32).
const char *kLarge = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8192, 8192][8192, 1]cuda:0"):
        mul: "f32[8192, 8192][8192, 1]cuda:0" = torch.ops.aten.mul.Tensor(x, 2)
        add: "f32[8192, 8192][8192, 1]cuda:0" = torch.ops.aten.add.Tensor(mul, 1)
        return (add,)
)";

int64_t numel(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t extent(const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
  return numel(sizes) == 0 ? 0 : last + 1;
}

// A float tensor in device memory, laid out by `strides` in an allocation of `extent`
// elements (the gaps hold kGap).
constexpr float kGap = -12345.0f;
struct CallerTensor {
  std::vector<int64_t> sizes, strides;
  std::vector<float> all;  // the allocation's contents on the host
  cuda::DeviceBuffer buffer;

  TensorRef ref() const {
    return {reinterpret_cast<void *>(uintptr_t(buffer.ptr())), ScalarType::Float32, sizes, strides, Memory::cuda(0)};
  }
  // The elements, dense row-major, as the host read them last (after download()).
  HostTensor dense() const {
    HostTensor h = HostTensor::zeros(DType::F32, sizes);
    for_each_offset(sizes, strides, 0, [&](int64_t flat, int64_t at) { h.ptr<float>()[flat] = all[size_t(at)]; });
    return h;
  }
  void download() { buffer.download(all.data(), all.size() * sizeof(float)); }
};

CallerTensor device_tensor(const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides, const HostTensor *values) {
  CallerTensor t{sizes, strides, std::vector<float>(size_t(std::max<int64_t>(extent(sizes, strides), 1)), kGap), {}};
  if (values)
    for_each_offset(sizes, strides, 0, [&](int64_t flat, int64_t at) { t.all[size_t(at)] = values->ptr<float>()[flat]; });
  t.buffer = cuda::DeviceBuffer(t.all.size() * sizeof(float));
  t.buffer.upload(t.all.data(), t.all.size() * sizeof(float));
  return t;
}

HostTensor values(const std::vector<int64_t> &sizes, uint64_t seed) {
  HostTensor h = HostTensor::zeros(DType::F32, sizes);
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int64_t i = 0; i < h.numel(); ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    h.ptr<float>()[i] = float(double(state >> 11) / double(1ULL << 53) * 4 - 2);
  }
  return h;
}

// The graph's outputs for `inputs` on the reference interpreter.
std::vector<HostTensor> reference(const CompiledGraph &ref, const std::vector<HostTensor> &inputs) {
  std::vector<TensorRef> in, out;
  std::vector<HostTensor> results;
  for (const HostTensor &h : inputs)
    in.push_back({const_cast<std::byte *>(h.data.data()), ScalarType::Float32, h.sizes, {}, Memory::host()});
  for (const TensorInfo &o : ref.outputs()) results.push_back(HostTensor::zeros(DType::F32, o.sizes));
  for (HostTensor &h : results) out.push_back({h.data.data(), ScalarType::Float32, h.sizes, {}, Memory::host()});
  ref.run(in, out);
  return results;
}

std::string compare_outputs(const CompiledGraph &g, std::vector<CallerTensor> &got, const std::vector<HostTensor> &want) {
  for (size_t i = 0; i < got.size(); ++i) {
    got[i].download();
    Comparison c = compare(got[i].dense(), want[i], default_tolerance(DType::F32, g.outputs()[i].reduced_elements));
    if (!c.pass)
      return str_cat("output ", i, ": ", c.mismatches, " mismatches, first ", c.first_mismatch, ", max abs error ",
                     c.max_abs_error);
    for_each_offset(got[i].sizes, got[i].strides, 0, [&](int64_t, int64_t at) { got[i].all[size_t(at)] = kGap; });
    for (float v : got[i].all)
      if (v != kGap) return str_cat("output ", i, ": an element outside the tensor's strides was written");
  }
  return "";
}

// The caller's tensors for one call: inputs from `in` in the compiled layouts (or `in_strides`),
// outputs in the compiled layouts (or `out_strides`), all filled with kGap.
struct Call {
  std::vector<CallerTensor> in, out;
  std::vector<TensorRef> in_refs() const {
    std::vector<TensorRef> r;
    for (const CallerTensor &t : in) r.push_back(t.ref());
    return r;
  }
  std::vector<TensorRef> out_refs() const {
    std::vector<TensorRef> r;
    for (const CallerTensor &t : out) r.push_back(t.ref());
    return r;
  }
};

Call make_call(const CompiledGraph &g, const std::vector<HostTensor> &in,
               const std::vector<std::vector<int64_t>> &in_strides = {},
               const std::vector<std::vector<int64_t>> &out_strides = {}) {
  Call c;
  for (size_t i = 0; i < in.size(); ++i)
    c.in.push_back(device_tensor(in[i].sizes, i < in_strides.size() ? in_strides[i] : g.inputs()[i].strides, &in[i]));
  for (size_t i = 0; i < g.outputs().size(); ++i)
    c.out.push_back(device_tensor(g.outputs()[i].sizes,
                                  i < out_strides.size() ? out_strides[i] : g.outputs()[i].strides, nullptr));
  COIL_CU(cuCtxSynchronize);  // the uploads, before a stream that does not wait for them
  return c;
}

std::vector<HostTensor> inputs_of(const CompiledGraph &g, uint64_t seed) {
  std::vector<HostTensor> out;
  for (const TensorInfo &t : g.inputs()) out.push_back(values(t.sizes, seed++));
  return out;
}

std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

std::string expect_error(const std::function<void()> &f, const std::string &part) {
  std::string message = error_of(f);
  return message.find(part) != std::string::npos ? "" : str_cat("expected an error with \"", part, "\", got: ", message);
}

void check_mode(const std::string &mode, const std::vector<std::pair<std::string, std::string>> &options) {
  CompileOptions o;
  o.target = Target::Cuda;
  o.options = options;
  CompileOptions r;
  r.target = Target::Reference;
  std::shared_ptr<CompiledGraph> g, ref;
  run_check(mode + "compile", [&] {
    g = std::make_shared<CompiledGraph>(compile(kMixed, o, "mixed.py"));
    ref = std::make_shared<CompiledGraph>(compile(kMixed, r, "mixed.py"));
    return std::string();
  });
  if (!g) return;

  run_check(mode + "device tensors in and out on a user stream", [&] {
    std::vector<HostTensor> in = inputs_of(*g, 1);
    Call c = make_call(*g, in);
    cuda::Stream stream;
    g->run(c.in_refs(), c.out_refs(), stream.get());
    stream.synchronize();
    return compare_outputs(*g, c.out, reference(*ref, in));
  });

  run_check(mode + "outputs held by the caller are not written by later calls", [&] {
    cuda::Stream stream;
    std::vector<std::vector<HostTensor>> in;
    std::vector<Call> calls;
    for (uint64_t i = 0; i < 4; ++i) {
      in.push_back(inputs_of(*g, 10 + 3 * i));
      calls.push_back(make_call(*g, in.back()));
    }
    for (const Call &c : calls) g->run(c.in_refs(), c.out_refs(), stream.get());  // no wait between calls
    stream.synchronize();
    for (size_t i = 0; i < calls.size(); ++i)
      if (std::string p = compare_outputs(*g, calls[i].out, reference(*ref, in[i])); !p.empty())
        return str_cat("call ", i, ": ", p);
    return std::string();
  });

  run_check(mode + "the default stream (null)", [&] {
    std::vector<HostTensor> in = inputs_of(*g, 2);
    Call c = make_call(*g, in);
    g->run(c.in_refs(), c.out_refs(), nullptr);
    COIL_CU(cuCtxSynchronize);
    return compare_outputs(*g, c.out, reference(*ref, in));
  });

  run_check(mode + "inputs and outputs of other strides", [&] {
    std::vector<HostTensor> in = inputs_of(*g, 3);
    // x transposed in memory ([64, 96] with strides [1, 64]); w in rows of 50; relu's rows
    // of 48 in rows of 64, sum_1 every other element, permute contiguous.
    Call c = make_call(*g, in, {{1, 64}, {50, 1}}, {{64, 1}, {2}, {64, 1}});
    cuda::Stream stream;
    g->run(c.in_refs(), c.out_refs(), stream.get());
    stream.synchronize();
    return compare_outputs(*g, c.out, reference(*ref, in));
  });

  run_check(mode + "host tensors through target cuda", [&] {
    std::vector<HostTensor> in = inputs_of(*g, 4);
    std::vector<HostTensor> want = reference(*ref, in);
    std::vector<TensorRef> ins, outs;
    std::vector<HostTensor> got;
    for (const HostTensor &h : in) ins.push_back({const_cast<std::byte *>(h.data.data()), ScalarType::Float32, h.sizes, {}, {}});
    for (const TensorInfo &t : g->outputs()) got.push_back(HostTensor::zeros(DType::F32, t.sizes));
    for (HostTensor &h : got) outs.push_back({h.data.data(), ScalarType::Float32, h.sizes, {}, {}});
    g->run(ins, outs);
    for (size_t i = 0; i < got.size(); ++i) {
      Comparison cmp = compare(got[i], want[i], default_tolerance(DType::F32, g->outputs()[i].reduced_elements));
      if (!cmp.pass) return str_cat("output ", i, ": ", cmp.first_mismatch);
    }
    return std::string();
  });

  run_check(mode + "calls on two streams that overlap", [&] {
    CompiledGraph large = compile(kLarge, o, "large.py");
    cuda::Stream a, b;
    std::vector<std::vector<HostTensor>> in;
    std::vector<Call> calls;
    for (uint64_t i = 0; i < 4; ++i) {
      in.push_back(inputs_of(large, 100 + i));
      calls.push_back(make_call(large, in.back()));
    }
    // Queued from one thread: one workspace, used by both streams in turn.
    for (size_t i = 0; i < calls.size(); ++i)
      large.run(calls[i].in_refs(), calls[i].out_refs(), (i % 2 ? b : a).get());
    a.synchronize();
    b.synchronize();
    for (size_t i = 0; i < calls.size(); ++i) {
      HostTensor want = HostTensor::zeros(DType::F32, in[i][0].sizes);
      for (int64_t e = 0; e < want.numel(); ++e) want.ptr<float>()[e] = in[i][0].ptr<float>()[e] * 2.0f + 1.0f;
      if (std::string p = compare_outputs(large, calls[i].out, {want}); !p.empty())
        return str_cat("call ", i, " (stream ", i % 2 ? "b" : "a", "): ", p);
    }
    return std::string();
  });

  run_check(mode + "errors: where device memory cannot go", [&] {
    std::vector<HostTensor> in = inputs_of(*g, 5);
    Call c = make_call(*g, in);
    std::vector<TensorRef> ins = c.in_refs(), outs = c.out_refs();
    std::string p = expect_error([&] { ref->run(ins, outs); },
                                 "input 'x' is in cuda:0 memory; target ref takes host memory only");
    if (!p.empty()) return p;
    std::vector<TensorRef> mixed = outs;
    HostTensor host_out = HostTensor::zeros(DType::F32, g->outputs()[1].sizes);
    mixed[1] = {host_out.data.data(), ScalarType::Float32, host_out.sizes, {}, {}};
    p = expect_error([&] { g->run(ins, mixed); },
                     "output 'out1' is in host memory but input 'x' in cuda:0 memory: the tensors of one call are all on "
                     "the host or all on one GPU");
    if (!p.empty()) return p;
    std::vector<TensorRef> elsewhere = ins;
    for (TensorRef &t : elsewhere) t.memory = Memory::cuda(1);
    std::vector<TensorRef> elsewhere_out = outs;
    for (TensorRef &t : elsewhere_out) t.memory = Memory::cuda(1);
    p = expect_error([&] { g->run(elsewhere, elsewhere_out); }, "input 'x' is in cuda:1 memory, but the graph runs on cuda:0");
    if (!p.empty()) return p;
    std::vector<TensorRef> overlapping = outs;
    overlapping[0].strides = {0, 1};
    return expect_error([&] { g->run(ins, overlapping); },
                        "output 'out0' of strides [0, 1] cannot be written from the GPU program's buffer of strides "
                        "[48, 1]: the destination's strides [0, 1] write 64 different elements to one place");
  });

  run_check(mode + "the graph still runs after errors", [&] {
    std::vector<HostTensor> in = inputs_of(*g, 6);
    Call c = make_call(*g, in);
    cuda::Stream stream;
    g->run(c.in_refs(), c.out_refs(), stream.get());
    stream.synchronize();
    return compare_outputs(*g, c.out, reference(*ref, in));
  });
}

// The mixed graph with a symbolic batch: one compile for target cuda run on device tensors
// at several batches (run, and run_addresses at the call's sizes), each against the
// reference interpreter compiled for that batch; then a batch its guards refuse.
// kMixed with its batch symbolic: one program for every batch size.
std::string mixed_symbolic() { return std::regex_replace(kMixed, std::regex("\\b64\\b"), "s0"); }

void check_symbolic(const std::string &mode, const std::vector<std::pair<std::string, std::string>> &options) {
  CompileOptions o;
  o.target = Target::Cuda;
  o.options = options;
  o.sizes = {{"s0", 64}};
  std::shared_ptr<CompiledGraph> g;
  run_check(mode + "symbolic: compile once", [&] {
    g = std::make_shared<CompiledGraph>(compile(mixed_symbolic(), o, "mixed_symbolic.py"));
    if (g->symbols().size() != 1 || g->symbols()[0].name != "s0" || g->symbols()[0].specialized)
      return str_cat("the graph keeps ", g->symbols().size(), " symbols; sizes.txt:\n", g->sizes());
    return std::string();
  });
  if (!g) return;
  for (int64_t batch : {64, 2, 7, 1000, 7}) {
    run_check(mode + str_cat("symbolic: batch ", batch, ", device tensors"), [&] {
      CompileOptions r;
      r.target = Target::Reference;
      r.sizes = {{"s0", batch}};
      CompiledGraph ref = compile(mixed_symbolic(), r, "mixed_symbolic.py");
      std::vector<HostTensor> in = inputs_of(ref, uint64_t(batch));
      std::vector<HostTensor> want = reference(ref, in);
      // The layouts at this batch, as a caller reads them.
      std::vector<int64_t> sizes{batch};
      std::vector<TensorInfo> outs = g->outputs_at(sizes);
      Call c;
      for (size_t i = 0; i < in.size(); ++i) c.in.push_back(device_tensor(in[i].sizes, ref.inputs()[i].strides, &in[i]));
      for (const TensorInfo &t : outs) c.out.push_back(device_tensor(t.sizes, t.strides, nullptr));
      COIL_CU(cuCtxSynchronize);
      cuda::Stream stream;
      g->run(c.in_refs(), c.out_refs(), stream.get());
      stream.synchronize();
      if (std::string problem = compare_outputs(ref, c.out, want); !problem.empty()) return "run: " + problem;
      // By addresses at the call's sizes.
      Call d;
      for (size_t i = 0; i < in.size(); ++i) d.in.push_back(device_tensor(in[i].sizes, ref.inputs()[i].strides, &in[i]));
      for (const TensorInfo &t : outs) d.out.push_back(device_tensor(t.sizes, t.strides, nullptr));
      COIL_CU(cuCtxSynchronize);
      std::vector<void *> ins, outs_at;
      for (CallerTensor &t : d.in) ins.push_back(reinterpret_cast<void *>(t.buffer.ptr()));
      for (CallerTensor &t : d.out) outs_at.push_back(reinterpret_cast<void *>(t.buffer.ptr()));
      g->run_addresses(ins, outs_at, stream.get(), false, sizes);
      stream.synchronize();
      if (std::string problem = compare_outputs(ref, d.out, want); !problem.empty()) return "run_addresses: " + problem;
      return std::string();
    });
  }
  run_check(mode + "symbolic: a batch the guards refuse names the symbol and the check", [&] {
    std::vector<int64_t> one{1};
    return expect_error([&] { g->outputs_at(one); }, "does not serve the sizes s0 = 1");
  });
}

int run() {
  if (!cuda::available()) {
    report("cuda driver", false, cuda::unavailable_reason());
    return 1;
  }
  cuda::Device::get();
  check_mode("", {});
  check_mode("graphs: ", {{"triton.cudagraphs", "1"}});
  check_symbolic("", {});
  check_symbolic("graphs: ", {{"triton.cudagraphs", "1"}});
  std::printf("%s: %d failed\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coil

int main() {
  try {
    return coil::run();
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
