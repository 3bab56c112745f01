// oneDNN calls of generated CPU kernels (src/codegen/cpp/cpp_extern.cpp): a matrix product
// or a convolution on strided views of coil's buffers, with the kernel's epilogue as
// post-ops, the whole call one primitive:
//
//   static const coil_rt::onednn::Primitive call = coil_rt::onednn::matmul(src, weights, dst, 1, {post-ops}, work);
//   if (call.run(a, b, nullptr, out, {bias})) return;
//   ... the plain loop of coil/extern_loops.h, should oneDNN have declined ...
//
// A call site creates its primitive once, on the first call (a function-local static),
// and runs it on every call after; in a graph of symbolic sizes, once per sizes it runs at
// (BySizes below). Concurrent coil_run calls on one module are safe
// (coil/artifact.h): the primitive takes its scratchpad from the caller (oneDNN's
// user-managed mode) and keeps no state of a call, so each calling thread runs it with
// a stream, a scratchpad and blocked temporaries of its own. oneDNN's OpenMP threads
// follow coil_rt::threads_for, as the generated loops do.
//
// Convolutions may run in blocked layouts between reorders (see convolution below).
//
// This is oneDNN 2.x's C API: its C++ API (dnnl.hpp) adds 0.6 s to every graph's compile.
// Included only where the kernel build links -ldnnl (coil/extern_loops.h).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "coil/prelude.h"

namespace coil_rt::onednn {

/// A strided tensor: dims and strides in elements (oneDNN's dims of size 1 broadcast).
struct Desc {
  dnnl_data_type_t dtype;
  int rank;
  dnnl_dims_t dims;
  dnnl_dims_t strides;
};

/// A post-op: an eltwise algorithm with its alpha and beta, or a binary one with a tensor.
struct PostOp {
  dnnl_alg_kind_t alg;
  float alpha;
  float beta;
  bool binary;
  Desc operand;
};

inline PostOp eltwise(dnnl_alg_kind_t alg, float alpha = 0, float beta = 0) { return {alg, alpha, beta, false, {}}; }
inline PostOp binary(dnnl_alg_kind_t alg, const Desc &operand) { return {alg, 0, 0, true, operand}; }

namespace detail {

/// The CPU engine, for the life of the module.
inline dnnl_engine_t engine() {
  struct Engine {
    dnnl_engine_t e = nullptr;
    Engine() {
      if (dnnl_engine_create(&e, dnnl_cpu, 0) != dnnl_success) e = nullptr;
    }
    ~Engine() {
      if (e) dnnl_engine_destroy(e);
    }
  };
  static Engine engine;
  return engine.e;
}

/// Memory of a calling thread, 64-byte aligned, grown as needed.
struct Buffer {
  void *data = nullptr;
  size_t bytes = 0;
  Buffer() = default;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { std::free(data); }
  bool reserve(size_t n) {
    if (n <= bytes) return true;
    std::free(data);
    bytes = (n + 63) / 64 * 64;
    data = std::aligned_alloc(64, bytes);
    if (!data) bytes = 0;
    return data != nullptr;
  }
};

/// What a calling thread brings to a run: its stream, its scratchpad, and the blocked
/// copies of a convolution's src, weights and dst.
struct ThreadState {
  dnnl_stream_t stream = nullptr;
  Buffer scratchpad;
  Buffer blocked_src, blocked_weights, blocked_dst;
  ~ThreadState() {
    if (stream) dnnl_stream_destroy(stream);
  }
};

inline ThreadState &thread_state() {
  static thread_local ThreadState state;
  return state;
}

/// oneDNN reads its thread count from OpenMP when it creates and runs a primitive.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : before_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(before_); }

 private:
  int before_;
};

using AttrPtr = std::unique_ptr<dnnl_primitive_attr, dnnl_status_t (*)(dnnl_primitive_attr_t)>;
using DescPtr = std::unique_ptr<dnnl_primitive_desc, dnnl_status_t (*)(dnnl_primitive_desc_t)>;

inline DescPtr no_desc() { return DescPtr(nullptr, dnnl_primitive_desc_destroy); }

/// Attributes that take the scratchpad from the caller, as every primitive here does.
inline dnnl_status_t user_scratchpad(AttrPtr *attr) {
  dnnl_primitive_attr_t a = nullptr;
  dnnl_status_t s = dnnl_primitive_attr_create(&a);
  if (s != dnnl_success) return s;
  *attr = AttrPtr(a, dnnl_primitive_attr_destroy);
  return dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
}

inline bool memory_desc(const Desc &d, dnnl_memory_desc_t *md) {
  return dnnl_memory_desc_init_by_strides(md, d.rank, d.dims, d.dtype, d.strides) == dnnl_success;
}

/// `md`'s dims and type in whatever layout oneDNN prefers.
inline dnnl_memory_desc_t any_layout(const dnnl_memory_desc_t &md) {
  dnnl_memory_desc_t any;
  if (dnnl_memory_desc_init_by_tag(&any, md.ndims, md.dims, md.data_type, dnnl_format_tag_any) != dnnl_success)
    return md;
  return any;
}

inline const dnnl_memory_desc_t &query_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what) {
  return *dnnl_primitive_desc_query_md(pd, what, 0);
}

/// The name of the kernel oneDNN implements `pd` with: "jit:avx512_core", "brgconv:...",
/// "gemm:jit", "ref:any"; "" when it does not say.
inline const char *kernel_name(const_dnnl_primitive_desc_t pd) {
  const char *impl = nullptr;
  return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl ? impl : "";
}

/// Whether oneDNN implements `pd` with a reference kernel, the slowest.
inline bool reference(const_dnnl_primitive_desc_t pd) { return std::strstr(kernel_name(pd), "ref"); }

/// Whether oneDNN implements a convolution `pd` with one of its slow kernels: gemm-based
/// ("gemm:jit") or reference ones rather than jit or brgemm.
inline bool slow(const_dnnl_primitive_desc_t pd) {
  const char *impl = kernel_name(pd);
  return std::strstr(impl, "ref") || (std::strstr(impl, "gemm") && !std::strstr(impl, "brg"));
}

inline void copy_dims(std::initializer_list<int64_t> from, dnnl_dims_t to) {
  int i = 0;
  for (int64_t v : from) to[i++] = v;
}

// A memory object over a buffer: a handle, no copy.
inline bool add(std::vector<dnnl_exec_arg_t> &args, int arg, const dnnl_memory_desc_t &md, const void *data) {
  dnnl_memory_t m = nullptr;
  if (dnnl_memory_create(&m, &md, engine(), const_cast<void *>(data)) != dnnl_success) return false;
  args.push_back({arg, m});
  return true;
}

// Runs `p` on `args` when `ok` (all of them were made), then destroys their memory objects.
inline bool execute(dnnl_primitive_t p, dnnl_stream_t stream, const std::vector<dnnl_exec_arg_t> &args, bool ok) {
  dnnl_status_t s = ok ? dnnl_primitive_execute(p, stream, int(args.size()), args.data()) : dnnl_invalid_arguments;
  if (s == dnnl_success) s = dnnl_stream_wait(stream);
  for (const dnnl_exec_arg_t &a : args) dnnl_memory_destroy(a.memory);
  return s == dnnl_success;
}

/// A reorder of one tensor between the caller's layout and the one a convolution runs
/// in; empty (a no-op) when the two are the same.
class Reorder {
 public:
  Reorder() = default;
  Reorder(Reorder &&o) noexcept { *this = static_cast<Reorder &&>(o); }
  Reorder &operator=(Reorder &&o) noexcept {
    std::swap(primitive_, o.primitive_);
    std::swap(from_, o.from_);
    std::swap(to_, o.to_);
    std::swap(scratchpad_, o.scratchpad_);
    std::swap(threads_, o.threads_);
    return *this;
  }
  Reorder(const Reorder &) = delete;
  Reorder &operator=(const Reorder &) = delete;
  ~Reorder() {
    if (primitive_) dnnl_primitive_destroy(primitive_);
  }

  /// The reorder from `from` to `to`; false when oneDNN has none. A copy takes the
  /// threads of a loop over its elements: one for a small one, such as most weights.
  bool create(const dnnl_memory_desc_t &from, const dnnl_memory_desc_t &to) {
    if (dnnl_memory_desc_equal(&from, &to)) return true;
    int64_t elements = 1;
    for (int d = 0; d < to.ndims; ++d) elements *= to.padded_dims[d];
    threads_ = threads_for(elements);
    ThreadCount threads(threads_);
    AttrPtr attr(nullptr, dnnl_primitive_attr_destroy);
    DescPtr pd = no_desc();
    dnnl_primitive_desc_t made = nullptr;
    dnnl_status_t s = user_scratchpad(&attr);
    if (s == dnnl_success) s = dnnl_reorder_primitive_desc_create(&made, &from, engine(), &to, engine(), attr.get());
    pd.reset(made);
    if (s == dnnl_success) s = dnnl_primitive_create(&primitive_, made);
    if (s != dnnl_success) {
      primitive_ = nullptr;
      return false;
    }
    from_ = from;
    to_ = to;
    scratchpad_ = query_md(made, dnnl_query_scratchpad_md);
    return true;
  }

  explicit operator bool() const { return primitive_ != nullptr; }
  size_t scratchpad_bytes() const { return primitive_ ? dnnl_memory_desc_get_size(&scratchpad_) : 0; }
  const dnnl_memory_desc_t &to() const { return to_; }
  const dnnl_memory_desc_t &from() const { return from_; }

  bool run(dnnl_stream_t stream, void *scratchpad, const void *from, void *to) const {
    std::vector<dnnl_exec_arg_t> args;
    bool ok = add(args, DNNL_ARG_FROM, from_, from) && add(args, DNNL_ARG_TO, to_, to) &&
              (scratchpad_bytes() == 0 || add(args, DNNL_ARG_SCRATCHPAD, scratchpad_, scratchpad));
    ThreadCount threads(threads_);
    return execute(primitive_, stream, args, ok);
  }

 private:
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_desc_t from_{}, to_{}, scratchpad_{};
  int threads_ = 1;
};

}  // namespace detail

/// One oneDNN primitive with its memory descriptors; empty when oneDNN declined the call.
class Primitive {
 public:
  explicit Primitive(int64_t work) : threads_(threads_for(work)) {}
  Primitive(Primitive &&o) noexcept { *this = static_cast<Primitive &&>(o); }
  Primitive &operator=(Primitive &&o) noexcept {
    std::swap(threads_, o.threads_);
    std::swap(primitive_, o.primitive_);
    std::swap(src_, o.src_);
    std::swap(weights_, o.weights_);
    std::swap(bias_, o.bias_);
    std::swap(dst_, o.dst_);
    std::swap(scratchpad_, o.scratchpad_);
    std::swap(has_bias_, o.has_bias_);
    std::swap(operands_, o.operands_);
    std::swap(src_in_, o.src_in_);
    std::swap(weights_in_, o.weights_in_);
    std::swap(dst_out_, o.dst_out_);
    return *this;
  }
  Primitive(const Primitive &) = delete;
  Primitive &operator=(const Primitive &) = delete;
  ~Primitive() {
    if (primitive_) dnnl_primitive_destroy(primitive_);
  }

  /// Runs the call on these buffers (`bias` null when there is none; `operands` those of
  /// the binary post-ops, in order); false when it did not run.
  bool run(const void *src, const void *weights, const void *bias, void *dst,
           std::initializer_list<const void *> operands) const;

 private:
  friend Primitive matmul(const Desc &, const Desc &, const Desc &, float, std::initializer_list<PostOp>, int64_t,
                          bool, const Desc *);
  friend Primitive convolution(const Desc &, const Desc &, const Desc *, const Desc &, std::initializer_list<int64_t>,
                               std::initializer_list<int64_t>, std::initializer_list<int64_t>,
                               std::initializer_list<int64_t>, std::initializer_list<PostOp>, int64_t, bool);

  // The call's tensors; false when oneDNN takes none of these layouts.
  bool describe(const Desc &src, const Desc &weights, const Desc *bias, const Desc &dst) {
    has_bias_ = bias != nullptr;
    return detail::engine() && detail::memory_desc(src, &src_) && detail::memory_desc(weights, &weights_) &&
           (!bias || detail::memory_desc(*bias, &bias_)) && detail::memory_desc(dst, &dst_);
  }

  // The attributes of the call: the caller's scratchpad, the result scaled by `scale`,
  // then the post-ops (whose binary operands it records, in the caller's layouts).
  dnnl_status_t attributes(detail::AttrPtr *attr, float scale, std::initializer_list<PostOp> post_ops) {
    dnnl_status_t s = detail::user_scratchpad(attr);
    if (s == dnnl_success && scale != 1) s = dnnl_primitive_attr_set_output_scales(attr->get(), 1, 0, &scale);
    dnnl_post_ops_t ops = nullptr;
    if (s == dnnl_success) s = dnnl_post_ops_create(&ops);
    int index = 0;
    for (const PostOp &op : post_ops) {
      if (s != dnnl_success) break;
      if (!op.binary) {
        s = dnnl_post_ops_append_eltwise(ops, 1.0f, op.alg, op.alpha, op.beta);
      } else {
        dnnl_memory_desc_t md;
        s = detail::memory_desc(op.operand, &md) ? dnnl_post_ops_append_binary(ops, op.alg, &md) : dnnl_invalid_arguments;
        operands_.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, md});
      }
      ++index;
    }
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr->get(), ops);
    if (ops) dnnl_post_ops_destroy(ops);
    return s;
  }

  // Creates the primitive of `pd` (made when `s` is success); when oneDNN declined the
  // call, says so on stderr (unless `quiet`: the caller has another way) and stays empty.
  void create(const detail::DescPtr &pd, dnnl_status_t s, const char *what, bool quiet = false) {
    if (s == dnnl_success) {
      scratchpad_ = detail::query_md(pd.get(), dnnl_query_scratchpad_md);
      s = dnnl_primitive_create(&primitive_, pd.get());
    }
    if (s == dnnl_success) return;
    primitive_ = nullptr;
    if (!quiet)
      std::fprintf(stderr, "coil: oneDNN declined a %s (%s); the kernel runs its plain loop\n", what,
                   dnnl_status2str(s));
  }

  // The reorders from the caller's src and weights into the layouts of `pd`, and from its
  // dst into the caller's; false when oneDNN lacks one of them.
  bool reorders_for(const_dnnl_primitive_desc_t pd) {
    detail::Reorder src, weights, dst;
    if (!src.create(src_, detail::query_md(pd, dnnl_query_src_md)) ||
        !weights.create(weights_, detail::query_md(pd, dnnl_query_weights_md)) ||
        !dst.create(detail::query_md(pd, dnnl_query_dst_md), dst_))
      return false;
    src_in_ = std::move(src);
    weights_in_ = std::move(weights);
    dst_out_ = std::move(dst);
    return true;
  }

  size_t scratchpad_bytes() const {
    return std::max({dnnl_memory_desc_get_size(&scratchpad_), src_in_.scratchpad_bytes(),
                     weights_in_.scratchpad_bytes(), dst_out_.scratchpad_bytes()});
  }

  int threads_ = 1;
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_desc_t src_{}, weights_{}, bias_{}, dst_{}, scratchpad_{};  // the caller's tensors
  bool has_bias_ = false;
  std::vector<std::pair<int, dnnl_memory_desc_t>> operands_;  // exec arg and tensor of each binary post-op
  detail::Reorder src_in_, weights_in_, dst_out_;             // into and out of blocked layouts, if any
};

inline bool Primitive::run(const void *src, const void *weights, const void *bias, void *dst,
                           std::initializer_list<const void *> operands) const {
  detail::ThreadState &state = detail::thread_state();
  if (!primitive_ || operands.size() != operands_.size()) return false;
  if (!state.stream && dnnl_stream_create(&state.stream, detail::engine(), dnnl_stream_default_flags) != dnnl_success)
    return false;
  if (!state.scratchpad.reserve(scratchpad_bytes())) return false;
  // The tensors the primitive runs on: the caller's, or the thread's blocked copies.
  if (src_in_ && !state.blocked_src.reserve(dnnl_memory_desc_get_size(&src_in_.to()))) return false;
  if (weights_in_ && !state.blocked_weights.reserve(dnnl_memory_desc_get_size(&weights_in_.to()))) return false;
  if (dst_out_ && !state.blocked_dst.reserve(dnnl_memory_desc_get_size(&dst_out_.from()))) return false;
  const void *run_src = src_in_ ? state.blocked_src.data : src;
  const void *run_weights = weights_in_ ? state.blocked_weights.data : weights;
  void *run_dst = dst_out_ ? state.blocked_dst.data : dst;

  void *scratchpad = state.scratchpad.data;
  if (src_in_ && !src_in_.run(state.stream, scratchpad, src, state.blocked_src.data)) return false;
  if (weights_in_ && !weights_in_.run(state.stream, scratchpad, weights, state.blocked_weights.data)) return false;
  std::vector<dnnl_exec_arg_t> args;
  bool ok = detail::add(args, DNNL_ARG_SRC, src_in_ ? src_in_.to() : src_, run_src) &&
            detail::add(args, DNNL_ARG_WEIGHTS, weights_in_ ? weights_in_.to() : weights_, run_weights) &&
            (!has_bias_ || detail::add(args, DNNL_ARG_BIAS, bias_, bias)) &&
            detail::add(args, DNNL_ARG_DST, dst_out_ ? dst_out_.from() : dst_, run_dst) &&
            (dnnl_memory_desc_get_size(&scratchpad_) == 0 ||
             detail::add(args, DNNL_ARG_SCRATCHPAD, scratchpad_, scratchpad));
  const void *const *operand = operands.begin();
  for (const auto &[arg, md] : operands_) ok = ok && detail::add(args, arg, md, *operand++);
  {
    detail::ThreadCount threads(threads_);
    if (!detail::execute(primitive_, state.stream, args, ok)) return false;
  }
  return !dst_out_ || dst_out_.run(state.stream, scratchpad, state.blocked_dst.data, dst);
}

/// dst = scale * (src x weights) (matrices, or batches of them: rank 3 or more, a batch
/// of one broadcast), then the post-ops. `work` is the multiply-adds, which size the
/// threads as threads_for does. `fast_only`: the caller has another way to make the call
/// (a 1x1 convolution seen as a product), so a reference kernel counts as declined, and
/// a declined call is not reported. `bias`: added before the post-ops, of dst's rank, its
/// dims 1 but the last.
inline Primitive matmul(const Desc &src, const Desc &weights, const Desc &dst, float scale,
                        std::initializer_list<PostOp> post_ops, int64_t work, bool fast_only = false,
                        const Desc *bias = nullptr) {
  Primitive p(work);
  detail::ThreadCount threads(p.threads_);
  dnnl_matmul_desc_t op;
  detail::AttrPtr attr(nullptr, dnnl_primitive_attr_destroy);
  detail::DescPtr pd = detail::no_desc();
  dnnl_primitive_desc_t made = nullptr;
  dnnl_status_t s = p.describe(src, weights, bias, dst)
                        ? dnnl_matmul_desc_init(&op, &p.src_, &p.weights_, bias ? &p.bias_ : nullptr, &p.dst_)
                        : dnnl_invalid_arguments;
  if (s == dnnl_success) s = p.attributes(&attr, scale, post_ops);
  if (s == dnnl_success) s = dnnl_primitive_desc_create(&made, &op, attr.get(), detail::engine(), nullptr);
  pd.reset(made);
  if (s == dnnl_success && fast_only && detail::reference(pd.get())) s = dnnl_unimplemented;
  p.create(pd, s, "matmul", fast_only);
  return p;
}

/// A direct convolution (weights [groups,] out, in / groups, window...) with an optional
/// bias over out, then the post-ops. `dilation` counts the gaps as oneDNN does (PyTorch's
/// minus 1); `pad_r` pads the end of each spatial dim so that the output has dst's dims.
///
/// oneDNN's fast convolutions (jit, brgemm) want their tensors in layouts with channels
/// in blocks of 16 (or channels last); on the caller's plain layouts it falls back to gemm
/// or reference kernels, several times slower on few channels. When it does, the call
/// runs in the layouts oneDNN picks for it, between reorders of the caller's src and
/// weights (on every run: the caller may change them) and of the blocked dst back into the
/// caller's layout. The bias and the binary post-ops' operands stay in the caller's
/// layouts; where oneDNN has no fast kernel with them, the call keeps the plain layouts.
///
/// `transposed`: a transposed convolution (oneDNN's deconvolution, the gradient of a
/// convolution's input), weights [groups,] out, in / groups, window... of its own channels;
/// stride, dilation and padding those of the convolution it transposes.
inline Primitive convolution(const Desc &src, const Desc &weights, const Desc *bias, const Desc &dst,
                             std::initializer_list<int64_t> stride, std::initializer_list<int64_t> dilation,
                             std::initializer_list<int64_t> pad_l, std::initializer_list<int64_t> pad_r,
                             std::initializer_list<PostOp> post_ops, int64_t work, bool transposed = false) {
  Primitive p(work);
  detail::ThreadCount threads(p.threads_);
  dnnl_dims_t st, di, pl, pr;
  detail::copy_dims(stride, st);
  detail::copy_dims(dilation, di);
  detail::copy_dims(pad_l, pl);
  detail::copy_dims(pad_r, pr);
  detail::AttrPtr attr(nullptr, dnnl_primitive_attr_destroy);
  // The primitive descriptor of the convolution in these layouts.
  auto conv_desc = [&](const dnnl_memory_desc_t &s, const dnnl_memory_desc_t &w, const dnnl_memory_desc_t &d,
                       detail::DescPtr *pd) {
    dnnl_convolution_desc_t op;
    dnnl_deconvolution_desc_t deconv;
    dnnl_primitive_desc_t made = nullptr;
    const dnnl_memory_desc_t *b = p.has_bias_ ? &p.bias_ : nullptr;
    dnnl_status_t status =
        transposed ? dnnl_dilated_deconvolution_forward_desc_init(&deconv, dnnl_forward_inference,
                                                                  dnnl_deconvolution_direct, &s, &w, b, &d, st, di, pl, pr)
                   : dnnl_dilated_convolution_forward_desc_init(&op, dnnl_forward_inference, dnnl_convolution_direct, &s,
                                                                &w, b, &d, st, di, pl, pr);
    const void *desc = transposed ? static_cast<const void *>(&deconv) : static_cast<const void *>(&op);
    if (status == dnnl_success) status = dnnl_primitive_desc_create(&made, desc, attr.get(), detail::engine(), nullptr);
    pd->reset(made);
    return status;
  };
  detail::DescPtr pd = detail::no_desc();
  dnnl_status_t s = p.describe(src, weights, bias, dst) ? p.attributes(&attr, 1, post_ops) : dnnl_invalid_arguments;
  if (s == dnnl_success) s = conv_desc(p.src_, p.weights_, p.dst_, &pd);
  // Blocked weights and dst with the caller's src first, as PyTorch runs a first
  // convolution: on 3 and 8 channels that runs 1.6x faster than with a blocked src too,
  // which oneDNN's fast kernels need from about 16 channels on.
  for (bool any_src : {false, true}) {
    if (s != dnnl_success || !detail::slow(pd.get())) break;
    detail::DescPtr blocked = detail::no_desc();
    dnnl_memory_desc_t from = any_src ? detail::any_layout(p.src_) : p.src_;
    if (conv_desc(from, detail::any_layout(p.weights_), detail::any_layout(p.dst_), &blocked) != dnnl_success ||
        detail::slow(blocked.get()) || !p.reorders_for(blocked.get()))
      continue;
    pd = std::move(blocked);
  }
  p.create(pd, s, transposed ? "transposed convolution" : "convolution");
  return p;
}

/// The primitives of one call site in a graph of symbolic sizes: one per sizes it runs at
/// (the values of the kernel's symbols), made by `make` on the first call at them and kept
/// for the module's life, so that a return to earlier sizes plans nothing.
class BySizes {
 public:
  template <class Make>
  const Primitive &at(std::initializer_list<int64_t> sizes, const Make &make) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry &e : made_)
      if (std::equal(sizes.begin(), sizes.end(), e.sizes.begin(), e.sizes.end())) return e.primitive;
    made_.push_back(Entry{std::vector<int64_t>(sizes), make()});
    return made_.back().primitive;
  }

 private:
  struct Entry {
    std::vector<int64_t> sizes;
    Primitive primitive;
  };
  std::mutex mutex_;
  std::deque<Entry> made_;  // stable: callers hold references while others add
};

}  // namespace coil_rt::onednn
