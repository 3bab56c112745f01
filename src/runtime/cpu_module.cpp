#include "runtime/cpu_module.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "coil/artifact.h"
#include "graph/tensor_type.h"
#include "runtime/compiler.h"
#include "runtime/isa.h"
#include "support/error.h"
#include "support/options.h"

#include <iostream>

namespace coil {
namespace {

DType dtype_of(int32_t code) {
  static const DType table[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                DType::I32, DType::I16, DType::I8,  DType::U8,   DType::Bool};
  COIL_ASSERT(code >= 0 && code < 10, "a compiled graph reports dtype code ", code);
  return table[code];
}

Shape shape(const int64_t *v, int rank) { return Shape(v, v + rank); }


}  // namespace

struct CpuModule::Prepared {
  std::vector<AlignedBuffer> storage;  // inputs, then owned outputs
  std::vector<void *> inputs;
  std::vector<void *> outputs;
};

CpuModule::CpuModule(const std::string &so_path) : lib_(so_path) {
  num_inputs_ = lib_.symbol<int (*)()>("coil_num_inputs");
  num_outputs_ = lib_.symbol<int (*)()>("coil_num_outputs");
  input_ = lib_.symbol<const coil_tensor_desc *(*)(int)>("coil_input");
  output_ = lib_.symbol<const coil_tensor_desc *(*)(int)>("coil_output");
  run_ = lib_.symbol<int (*)(void *const *, void **)>("coil_run");
  error_message_ = lib_.symbol<const char *(*)(int)>("coil_error_message");
  profile_ = lib_.optional_symbol<int32_t (*)(coil_kernel_profile *, int32_t)>("coil_profile");
  set_num_threads_ = lib_.symbol<int32_t (*)(int32_t)>("coil_set_num_threads");
  num_threads_ = lib_.symbol<int32_t (*)()>("coil_num_threads");
  reset_profile();
  auto version = lib_.symbol<int (*)()>("coil_abi_version");
  COIL_USER_CHECK(version() == COIL_ABI_VERSION, so_path, " was compiled for artifact ABI ", version(), ", not ",
                  COIL_ABI_VERSION);
  int64_t threads = options::get_int("num_threads");
  set_num_threads_(int32_t(std::min<int64_t>(threads, std::numeric_limits<int32_t>::max())));
}

CpuModule::Prepared CpuModule::prepare(const TensorList &inputs) const {
  Prepared p;
  for (int i = 0; i < num_inputs_(); ++i) {
    const coil_tensor_desc &d = *input_(i);
    DType t = dtype_of(d.dtype);
    Shape sizes = shape(d.sizes, d.rank), strides = shape(d.strides, d.rank);
    const HostTensor *h = find_tensor(inputs, d.name);
    COIL_USER_CHECK(h, "missing input tensor '", d.name, "'");
    COIL_USER_CHECK(h->dtype == t && h->sizes == sizes, "input '", d.name, "' is ", h->describe(),
                    " but the graph expects ", short_name(t), shape_str(sizes));
    AlignedBuffer buf(size_t(std::max<int64_t>(d.storage_elements, 1)) * size_t(itemsize(t)));
    int64_t size = itemsize(t);
    const std::byte *src = h->data.data();
    for_each_offset(sizes, strides, d.storage_offset, [&](int64_t flat, int64_t at) {
      std::memcpy(buf.data() + at * size, src + flat * size, size_t(size));
    });
    p.storage.push_back(std::move(buf));
  }
  for (auto &s : p.storage) p.inputs.push_back(s.data());
  for (int i = 0; i < num_outputs_(); ++i) {
    const coil_tensor_desc &d = *output_(i);
    p.outputs.push_back(nullptr);
    if (d.kind != COIL_OUTPUT_OWNED) continue;
    p.storage.emplace_back(size_t(std::max<int64_t>(d.storage_elements, 1)) * size_t(itemsize(dtype_of(d.dtype))));
    p.outputs.back() = p.storage.back().data();
  }
  return p;
}

void CpuModule::call(void *const *inputs, void **outputs) const {
  int status = run_(inputs, outputs);
  COIL_USER_CHECK(status == COIL_OK, "the compiled graph failed: ", error_message_(status));
}

std::vector<HostTensor> CpuModule::run(const TensorList &inputs) const {
  Prepared p = prepare(inputs);
  call(p.inputs.data(), p.outputs.data());
  std::vector<HostTensor> out;
  for (int i = 0; i < num_outputs_(); ++i) {
    const coil_tensor_desc &d = *output_(i);
    DType t = dtype_of(d.dtype);
    HostTensor h = HostTensor::zeros(t, shape(d.sizes, d.rank));
    int64_t size = itemsize(t);
    const auto *base = static_cast<const std::byte *>(p.outputs[size_t(i)]);
    for_each_offset(h.sizes, shape(d.strides, d.rank), d.storage_offset, [&](int64_t flat, int64_t at) {
      std::memcpy(h.data.data() + flat * size, base + at * size, size_t(size));
    });
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<KernelProfile> CpuModule::library_profile() const {
  if (!profile_) return {};
  int32_t n = std::max(profile_(nullptr, 0), 0);  // a library's kernels are fixed: the count holds
  std::vector<coil_kernel_profile> rows(static_cast<size_t>(n));
  profile_(rows.data(), n);
  std::vector<KernelProfile> out;
  for (const coil_kernel_profile &row : rows)
    out.push_back({row.name ? row.name : "", row.summary ? row.summary : "", row.calls, double(row.total_ns) * 1e-9});
  return out;
}

std::vector<KernelProfile> CpuModule::profile() const {
  std::vector<KernelProfile> rows = library_profile();
  for (size_t i = 0; i < rows.size() && i < profile_baseline_.size(); ++i) {
    rows[i].calls -= profile_baseline_[i].calls;
    rows[i].seconds -= profile_baseline_[i].seconds;
  }
  return rows;
}

int CpuModule::num_threads() const { return num_threads_(); }

void CpuModule::reset_profile() { profile_baseline_ = library_profile(); }

double CpuModule::median_seconds(const TensorList &inputs, int iterations) const {
  Prepared p = prepare(inputs);
  std::vector<double> times;
  for (int i = 0; i < std::max(iterations, 1) + 1; ++i) {
    auto start = std::chrono::steady_clock::now();
    call(p.inputs.data(), p.outputs.data());
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) times.push_back(t);  // the first call warms up
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace coil
