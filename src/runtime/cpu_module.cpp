#include "runtime/cpu_module.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <new>

#include "coil/artifact.h"
#include "graph/tensor_type.h"
#include "support/error.h"
#include "support/int_math.h"
#include "support/options.h"

namespace coil {
namespace {

constexpr size_t kStagingAlignment = 64;

// n elements of N bytes, `ds` and `ss` elements apart.
template <int N>
void copy_row(std::byte *dst, int64_t ds, const std::byte *src, int64_t ss, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds * N, src + i * ss * N, N);
}

// The innermost dim: one memcpy when both rows are dense.
void copy_last_dim(std::byte *dst, int64_t ds, const std::byte *src, int64_t ss, int64_t n, int64_t size) {
  if (ds == 1 && ss == 1) {
    std::memcpy(dst, src, size_t(n * size));
    return;
  }
  switch (size) {
    case 1: return copy_row<1>(dst, ds, src, ss, n);
    case 2: return copy_row<2>(dst, ds, src, ss, n);
    case 4: return copy_row<4>(dst, ds, src, ss, n);
    case 8: return copy_row<8>(dst, ds, src, ss, n);
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds * size, src + i * ss * size, size_t(size));
}

void copy_dims(std::byte *dst, const int64_t *ds, const std::byte *src, const int64_t *ss, const int64_t *sizes,
               size_t rank, int64_t size) {
  if (rank == 1) return copy_last_dim(dst, ds[0], src, ss[0], sizes[0], size);
  for (int64_t i = 0; i < sizes[0]; ++i)
    copy_dims(dst + i * ds[0] * size, ds + 1, src + i * ss[0] * size, ss + 1, sizes + 1, rank - 1, size);
}

// Whether two layouts of `sizes` place every element at the same offset.
bool same_layout(std::span<const int64_t> sizes, std::span<const int64_t> a, std::span<const int64_t> b) {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && a[d] != b[d]) return false;
  return true;
}

}  // namespace

void copy_strided(std::byte *dst, std::span<const int64_t> dst_strides, const std::byte *src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes, int64_t itemsize) {
  COIL_ASSERT(dst_strides.size() == sizes.size() && src_strides.size() == sizes.size(), dst_strides.size(), " and ",
              src_strides.size(), " strides for ", sizes.size(), " dims");
  if (sizes.empty()) {
    std::memcpy(dst, src, size_t(itemsize));
    return;
  }
  for (int64_t s : sizes)
    if (s == 0) return;
  copy_dims(dst, dst_strides.data(), src, src_strides.data(), sizes.data(), sizes.size(), itemsize);
}

// ---- loading --------------------------------------------------------------------------------

CpuModule::CpuModule(const std::string &so_path) : lib_(so_path) {
  num_inputs_ = lib_.symbol<int (*)()>("coil_num_inputs");
  num_outputs_ = lib_.symbol<int (*)()>("coil_num_outputs");
  input_ = lib_.symbol<const coil_tensor_desc *(*)(int)>("coil_input");
  output_ = lib_.symbol<const coil_tensor_desc *(*)(int)>("coil_output");
  error_message_ = lib_.symbol<const char *(*)(int)>("coil_error_message");
  profile_ = lib_.optional_symbol<int32_t (*)(coil_kernel_profile *, int32_t)>("coil_profile");
  set_num_threads_ = lib_.symbol<int32_t (*)(int32_t)>("coil_set_num_threads");
  num_threads_ = lib_.symbol<int32_t (*)()>("coil_num_threads");
  reset_profile();
  auto version = lib_.symbol<int (*)()>("coil_abi_version");
  COIL_USER_CHECK(version() == COIL_ABI_VERSION, so_path, " was compiled for artifact ABI ", version(), ", not ",
                  COIL_ABI_VERSION);
  run_ = lib_.symbol<int (*)(const int64_t *, void *const *, void **, void *)>("coil_run_sized");
  check_sizes_ = lib_.symbol<int32_t (*)(const int64_t *)>("coil_check_sizes");
  size_check_ = lib_.symbol<const char *(*)(int32_t)>("coil_size_check");
  layout_ = lib_.symbol<int32_t (*)(int32_t, int32_t, const int64_t *, int64_t *, int64_t *, int64_t *, int64_t *)>(
      "coil_layout");
  arena_bytes_at_ = lib_.symbol<int64_t (*)(const int64_t *)>("coil_arena_bytes_at");
  auto symbol = lib_.symbol<const coil_symbol_desc *(*)(int32_t)>("coil_symbol");
  for (int32_t i = 0, n = lib_.symbol<int32_t (*)()>("coil_num_symbols")(); i < n; ++i) {
    symbols_.push_back(symbol(i)->name);
    compiled_sizes_.push_back(symbol(i)->compiled);
    sources_.push_back({symbol(i)->input, symbol(i)->dim});
  }
  for (int i = 0; i < num_inputs_(); ++i) compiled_.in.push_back(layout_of(*input_(i)));
  for (int i = 0; i < num_outputs_(); ++i) compiled_.out.push_back(layout_of(*output_(i)));
  for (Layout &l : compiled_.in) finish(l, compiled_.staging_bytes);
  for (Layout &l : compiled_.out) finish(l, compiled_.staging_bytes);
  compiled_.arena_bytes = arena_bytes_at_(compiled_sizes_.data());
  int64_t threads = options::get_int("num_threads");
  set_num_threads_(int32_t(std::min<int64_t>(threads, std::numeric_limits<int32_t>::max())));
}

CpuModule::Layout CpuModule::layout_of(const coil_tensor_desc &d) {
  std::optional<DType> t = dtype_from_code(d.dtype);
  COIL_ASSERT(t, "a compiled graph reports dtype code ", d.dtype);
  Layout l;
  l.dtype = *t;
  l.itemsize = itemsize(*t);
  l.sizes.assign(d.sizes, d.sizes + d.rank);
  l.strides.assign(d.strides, d.strides + d.rank);
  l.offset = d.storage_offset;
  l.elements = d.storage_elements;
  l.kind = d.kind;  // inputs: 0, which is COIL_OUTPUT_OWNED
  return l;
}

void CpuModule::finish(Layout &l, size_t &staging_bytes) {
  l.dense.resize(l.sizes.size());
  int64_t dense = 1, extent = 1;  // contiguous strides; storage_extent of the library's
  bool empty = false;
  for (size_t d = l.sizes.size(); d-- > 0;) {
    l.dense[d] = dense;
    dense *= std::max<int64_t>(l.sizes[d], 1);
    extent += (l.sizes[d] - 1) * l.strides[d];
    empty = empty || l.sizes[d] == 0;
  }
  l.whole = l.offset == 0 && l.elements == (empty ? 0 : extent);
  if (l.kind == COIL_OUTPUT_OWNED) {
    l.staging = staging_bytes;
    staging_bytes += size_t(round_up(std::max<int64_t>(l.elements, 1) * l.itemsize, int64_t(kStagingAlignment)));
  }
}

void CpuModule::layouts_at(std::span<const int64_t> sizes, Layouts &into) const {
  into.in.resize(compiled_.in.size());
  into.out.resize(compiled_.out.size());
  into.staging_bytes = 0;
  for (int output = 0; output < 2; ++output) {
    std::vector<Layout> &ls = output ? into.out : into.in;
    for (size_t i = 0; i < ls.size(); ++i) {
      const Layout &c = (output ? compiled_.out : compiled_.in)[i];
      Layout &l = ls[i];
      l.dtype = c.dtype;
      l.itemsize = c.itemsize;
      l.kind = c.kind;
      l.sizes.resize(c.sizes.size());
      l.strides.resize(c.sizes.size());
      int status = layout_(output, int32_t(i), sizes.data(), l.sizes.data(), l.strides.data(), &l.offset, &l.elements);
      COIL_ASSERT(status == COIL_OK, "the compiled graph has no layout for ", output ? "output " : "input ", i);
      finish(l, into.staging_bytes);
    }
  }
  into.arena_bytes = arena_bytes_at_(sizes.data());
}

int64_t CpuModule::arena_bytes() const { return compiled_.arena_bytes; }

void CpuModule::check_sizes(std::span<const int64_t> sizes) const {
  COIL_ASSERT(sizes.size() == symbols_.size(), sizes.size(), " sizes for ", symbols_.size(), " symbols");
  int32_t failing = check_sizes_(sizes.data());
  if (failing < 0) return;
  std::string given;
  for (size_t i = 0; i < sizes.size(); ++i) given += str_cat(i ? ", " : "", symbols_[i], " = ", sizes[i]);
  throw UserError(sizes_refused(given, size_check_(failing)));
}

std::vector<CpuModule::OutputLayout> CpuModule::outputs_at(std::span<const int64_t> sizes) const {
  check_sizes(sizes);
  std::vector<OutputLayout> out(compiled_.out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].sizes.resize(compiled_.out[i].sizes.size());
    out[i].strides.resize(compiled_.out[i].sizes.size());
    int status = layout_(1, int32_t(i), sizes.data(), out[i].sizes.data(), out[i].strides.data(), &out[i].storage_offset,
                         &out[i].storage_elements);
    COIL_ASSERT(status == COIL_OK, "the compiled graph has no layout for output ", i);
  }
  return out;
}

void CpuModule::call(const int64_t *sizes, void *const *inputs, void **outputs, void *arena) const {
  int status = run_(sizes, inputs, outputs, arena);
  COIL_USER_CHECK(status == COIL_OK, "the compiled graph failed: ", error_message_(status));
}

// ---- one call -------------------------------------------------------------------------------

// What a call needs besides the module: the arrays coil_run takes, what the caller gave, and
// the staging copies. Kept per thread and reused; vectors only grow.
struct CpuModule::Scratch {
  struct Given {
    std::byte *data = nullptr;
    std::span<const int64_t> strides;
    int64_t storage_offset = -1, storage_elements = -1;  // outputs: the caller's allocation, when known
  };
  std::vector<void *> in, out;
  std::vector<Given> given_in, given_out;
  // Memory aligned for the library's vectors that only grows: the staged copies, and the
  // arena of the intermediates of every module's calls on this thread, one after the
  // other (the largest any asked for: a training step's forward and backward hold one).
  struct Growing {
    std::byte *data = nullptr;
    size_t capacity = 0;
    Growing() = default;
    Growing(const Growing &) = delete;
    Growing &operator=(const Growing &) = delete;
    ~Growing() { release(); }
    std::byte *of(int64_t bytes) {
      size_t want = size_t(round_up(std::max<int64_t>(bytes, 1), int64_t(kStagingAlignment)));
      if (want > capacity) {
        release();
        data = static_cast<std::byte *>(::operator new(want, std::align_val_t(kStagingAlignment)));
        capacity = want;
      }
      return data;
    }
    void release() {
      if (data) ::operator delete(data, std::align_val_t(kStagingAlignment));
      data = nullptr;  // a failed allocation after this leaves none
      capacity = 0;
    }
  };
  Growing staging, arena;
  Layouts sized;               // a call's layouts at sizes other than those compiled for
  std::vector<int64_t> sizes;  // and those sizes
  bool busy = false;           // a Call holds it

  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
};

namespace {

// Whether the library can use the caller's memory as it is: every element at the offset
// the library's strides give.
bool fits(std::span<const int64_t> sizes, std::span<const int64_t> strides, const std::byte *data,
          std::span<const int64_t> given) {
  return data && same_layout(sizes, strides, given);
}

}  // namespace

CpuModule::Scratch &CpuModule::thread_scratch() {
  thread_local Scratch s;
  return s;
}

int64_t CpuModule::thread_arena_bytes() { return int64_t(thread_scratch().arena.capacity); }

CpuModule::Call::Call(const CpuModule &m, std::span<const int64_t> sizes)
    : m_(m), s_(thread_scratch()), l_(&m.compiled_), sizes_(m.compiled_sizes_) {
  COIL_ASSERT(!s_.busy, "one call of a compiled graph at a time on a thread");
  COIL_ASSERT(sizes.empty() || sizes.size() == m.symbols_.size(), sizes.size(), " sizes for ", m.symbols_.size(),
              " symbols");
  if (!sizes.empty() && !std::equal(sizes.begin(), sizes.end(), m.compiled_sizes_.begin())) {
    m.check_sizes(sizes);
    s_.sizes.assign(sizes.begin(), sizes.end());
    m.layouts_at(s_.sizes, s_.sized);
    l_ = &s_.sized;
    sizes_ = s_.sizes;
  }
  s_.in.assign(l_->in.size(), nullptr);
  s_.out.assign(l_->out.size(), nullptr);
  s_.given_in.assign(l_->in.size(), {});
  s_.given_out.assign(l_->out.size(), {});
  s_.busy = true;
}

void CpuModule::Call::input_as_laid_out(int i, const void *data) { input(i, data, l_->in.at(size_t(i)).strides); }

void CpuModule::Call::output_as_laid_out(int i, void *data) {
  const Layout &l = l_->out.at(size_t(i));
  output(i, data, l.strides, l.offset, l.elements);
}

std::span<const int64_t> CpuModule::Call::input_sizes(int i) const { return l_->in.at(size_t(i)).sizes; }
std::span<const int64_t> CpuModule::Call::output_sizes(int i) const { return l_->out.at(size_t(i)).sizes; }

CpuModule::Call::~Call() { s_.busy = false; }

void CpuModule::Call::input(int i, const void *data, std::span<const int64_t> strides) {
  COIL_ASSERT(i >= 0 && size_t(i) < l_->in.size(), "input ", i, " of ", l_->in.size());
  const Layout &l = l_->in[size_t(i)];
  COIL_ASSERT(strides.empty() || strides.size() == l.sizes.size(), strides.size(), " strides for ", l.sizes.size(), " dims");
  s_.given_in[size_t(i)] = {const_cast<std::byte *>(static_cast<const std::byte *>(data)),
                            strides.empty() ? std::span<const int64_t>(l.dense) : strides};
}

void CpuModule::Call::output(int i, void *data, std::span<const int64_t> strides, int64_t storage_offset,
                             int64_t storage_elements) {
  COIL_ASSERT(i >= 0 && size_t(i) < l_->out.size(), "output ", i, " of ", l_->out.size());
  const Layout &l = l_->out[size_t(i)];
  COIL_ASSERT(strides.empty() || strides.size() == l.sizes.size(), strides.size(), " strides for ", l.sizes.size(), " dims");
  s_.given_out[size_t(i)] = {static_cast<std::byte *>(data), strides.empty() ? std::span<const int64_t>(l.dense) : strides,
                             storage_offset, storage_elements};
}

// Inputs: the caller's allocation starts storage_offset elements before element 0, or a
// staged copy. Owned outputs: the library writes the whole allocation, so the caller's
// memory takes it only when it holds the allocation (holds); else staging. Aliasing outputs:
// set by the library.
void CpuModule::Call::copy_in() {
  // Whether an owned output given as `g` may be written in place: in its layout, in a
  // caller's allocation that holds the library's whole allocation around it (the view is the
  // whole allocation, or the caller says where its own lies).
  auto holds = [](const Layout &l, const Scratch::Given &g) {
    bool room = l.whole || allocation_holds(g.storage_offset, g.storage_elements, l.offset, l.elements);
    return room && fits(l.sizes, l.strides, g.data, g.strides);
  };
  bool stage = false;
  for (size_t i = 0; i < l_->in.size(); ++i) {
    const Layout &l = l_->in[i];
    stage = stage || !fits(l.sizes, l.strides, s_.given_in[i].data, s_.given_in[i].strides);
  }
  for (size_t i = 0; i < l_->out.size(); ++i) {
    const Layout &l = l_->out[i];
    bool owned = l.kind == COIL_OUTPUT_OWNED;
    stage = stage || (owned && !holds(l, s_.given_out[i]));
  }
  std::byte *staging = stage ? s_.staging.of(int64_t(l_->staging_bytes)) : nullptr;
  for (size_t i = 0; i < l_->in.size(); ++i) {
    const Layout &l = l_->in[i];
    const Scratch::Given &g = s_.given_in[i];
    if (fits(l.sizes, l.strides, g.data, g.strides)) {
      s_.in[i] = g.data - l.offset * l.itemsize;
      continue;
    }
    std::byte *copy = staging + l.staging;
    copy_strided(copy + l.offset * l.itemsize, l.strides, g.data, g.strides, l.sizes, l.itemsize);
    s_.in[i] = copy;
  }
  for (size_t i = 0; i < l_->out.size(); ++i) {
    const Layout &l = l_->out[i];
    const Scratch::Given &g = s_.given_out[i];
    if (l.kind != COIL_OUTPUT_OWNED)
      s_.out[i] = nullptr;
    else if (holds(l, g))
      s_.out[i] = g.data - l.offset * l.itemsize;
    else
      s_.out[i] = staging + l.staging;
  }
}

// Every output not already where the caller wants it (written in place, or a view of
// memory that is the caller's in this layout) is copied there.
void CpuModule::Call::copy_out() {
  for (size_t i = 0; i < l_->out.size(); ++i) {
    const Layout &l = l_->out[i];
    const Scratch::Given &g = s_.given_out[i];
    const std::byte *element0 = static_cast<const std::byte *>(s_.out[i]) + l.offset * l.itemsize;
    if (element0 == g.data && same_layout(l.sizes, l.strides, g.strides)) continue;
    copy_strided(g.data, g.strides, element0, l.strides, l.sizes, l.itemsize);
  }
}

void CpuModule::Call::run_library() { m_.call(sizes_.data(), s_.in.data(), s_.out.data(), s_.arena.of(l_->arena_bytes)); }

void CpuModule::Call::run() {
  copy_in();
  run_library();
  copy_out();
}

double CpuModule::Call::median_seconds(int iterations) {
  copy_in();
  std::vector<double> times;
  for (int i = 0; i < std::max(iterations, 1) + 1; ++i) {
    auto start = std::chrono::steady_clock::now();
    run_library();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) times.push_back(t);  // the first call warms up
  }
  copy_out();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// ---- host tensors by name -------------------------------------------------------------------

std::vector<int64_t> CpuModule::sizes_of(const TensorList &inputs) const {
  std::vector<int64_t> sizes = compiled_sizes_;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto [input, dim] = sources_[i];
    if (input < 0) continue;  // the checks compare it with the value compiled for
    const HostTensor *h = find_tensor(inputs, input_(input)->name);
    if (h && size_t(dim) < h->sizes.size()) sizes[i] = h->sizes[size_t(dim)];
  }
  return sizes;
}

std::vector<HostTensor> CpuModule::bind_named(Call &call, const TensorList &inputs) const {
  for (size_t i = 0; i < compiled_.in.size(); ++i) {
    const coil_tensor_desc &d = *input_(int(i));
    std::span<const int64_t> want = call.input_sizes(int(i));
    Shape sizes(want.begin(), want.end());
    const HostTensor *h = find_tensor(inputs, d.name);
    COIL_USER_CHECK(h, "missing input tensor '", d.name, "'");
    COIL_USER_CHECK(h->dtype == compiled_.in[i].dtype && h->sizes == sizes, "input '", d.name, "' is ", h->describe(),
                    " but the graph expects ", short_name(compiled_.in[i].dtype), shape_str(sizes));
    call.input(int(i), h->data.data(), {});
  }
  std::vector<HostTensor> out;
  out.reserve(compiled_.out.size());
  for (size_t i = 0; i < compiled_.out.size(); ++i) {
    std::span<const int64_t> sizes = call.output_sizes(int(i));
    out.push_back(HostTensor::zeros(compiled_.out[i].dtype, Shape(sizes.begin(), sizes.end())));
    call.output(int(i), out.back().data.data(), {});
  }
  return out;
}

std::vector<HostTensor> CpuModule::run(const TensorList &inputs) const {
  Call call(*this, sizes_of(inputs));
  std::vector<HostTensor> out = bind_named(call, inputs);
  call.run();
  return out;
}

double CpuModule::median_seconds(const TensorList &inputs, int iterations) const {
  Call call(*this, sizes_of(inputs));
  std::vector<HostTensor> out = bind_named(call, inputs);
  return call.median_seconds(iterations);
}

// ---- profiles -------------------------------------------------------------------------------

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

}  // namespace coil
