// oneDNN calls of generated CPU kernels (src/codegen/cpp/cpp_extern.cpp): a matrix product
// or a convolution on strided views of coil's buffers, with the kernel's epilogue as
// post-ops, the whole call one primitive:
//
//   static const coil_rt::onednn::Primitive call = coil_rt::onednn::matmul(src, weights, dst, 1, {post-ops}, work);
//   if (call.run(a, b, nullptr, out, {bias})) return;
//   ... the plain loop of coil/extern_loops.h, should oneDNN have declined ...
//
// A call site creates its primitive once, on the first call (a function-local static),
// and runs it on every call after. Concurrent coil_run calls on one module are safe
// (coil/artifact.h): the primitive takes its scratchpad from the caller (oneDNN's
// user-managed mode) and keeps no state of a call, so each calling thread runs it with
// a stream and a scratchpad buffer of its own. oneDNN's OpenMP threads follow
// coil_rt::threads_for, as the generated loops do.
//
// This is oneDNN 2.x's C API: its C++ API (dnnl.hpp) adds 0.6 s to every graph's compile.
// Included only where the kernel build links -ldnnl (coil/extern_loops.h).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
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

/// What a calling thread brings to a run: its stream and its scratchpad.
struct ThreadState {
  dnnl_stream_t stream = nullptr;
  void *scratchpad = nullptr;
  size_t scratchpad_bytes = 0;
  ~ThreadState() {
    if (stream) dnnl_stream_destroy(stream);
    std::free(scratchpad);
  }
  bool reserve(size_t bytes) {
    if (bytes <= scratchpad_bytes) return true;
    std::free(scratchpad);
    scratchpad_bytes = (bytes + 63) / 64 * 64;
    scratchpad = std::aligned_alloc(64, scratchpad_bytes);
    if (!scratchpad) scratchpad_bytes = 0;
    return scratchpad != nullptr;
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

inline bool memory_desc(const Desc &d, dnnl_memory_desc_t *md) {
  return dnnl_memory_desc_init_by_strides(md, d.rank, d.dims, d.dtype, d.strides) == dnnl_success;
}

inline void copy_dims(std::initializer_list<int64_t> from, dnnl_dims_t to) {
  int i = 0;
  for (int64_t v : from) to[i++] = v;
}

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
  friend Primitive matmul(const Desc &, const Desc &, const Desc &, float, std::initializer_list<PostOp>, int64_t);
  friend Primitive convolution(const Desc &, const Desc &, const Desc *, const Desc &, std::initializer_list<int64_t>,
                               std::initializer_list<int64_t>, std::initializer_list<int64_t>,
                               std::initializer_list<int64_t>, std::initializer_list<PostOp>, int64_t);

  // The call's tensors; false when oneDNN takes none of these layouts.
  bool describe(const Desc &src, const Desc &weights, const Desc *bias, const Desc &dst) {
    has_bias_ = bias != nullptr;
    return detail::engine() && detail::memory_desc(src, &src_) && detail::memory_desc(weights, &weights_) &&
           (!bias || detail::memory_desc(*bias, &bias_)) && detail::memory_desc(dst, &dst_);
  }

  // Creates the primitive of op descriptor `op` (over the tensors described; null when
  // oneDNN took no descriptor of them) that scales its result by `scale`, then applies
  // the post-ops; when oneDNN declines, says so on stderr and stays empty.
  void create(const_dnnl_op_desc_t op, float scale, std::initializer_list<PostOp> post_ops, const char *what) {
    detail::ThreadCount threads(threads_);
    dnnl_primitive_attr_t attr = nullptr;
    dnnl_post_ops_t ops = nullptr;
    dnnl_primitive_desc_t pd = nullptr;
    dnnl_status_t s = op ? dnnl_primitive_attr_create(&attr) : dnnl_invalid_arguments;
    if (s == dnnl_success) s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && scale != 1) s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale);
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
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, ops);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(&pd, op, attr, detail::engine(), nullptr);
    if (s == dnnl_success) {
      scratchpad_ = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
      s = dnnl_primitive_create(&primitive_, pd);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) return;
    primitive_ = nullptr;
    std::fprintf(stderr, "coil: oneDNN declined a %s (%s); the kernel runs its plain loop\n", what, dnnl_status2str(s));
  }

  // A memory object over the caller's buffer: a handle, no copy.
  static bool add(std::vector<dnnl_exec_arg_t> &args, int arg, const dnnl_memory_desc_t &md, const void *data) {
    dnnl_memory_t m = nullptr;
    if (dnnl_memory_create(&m, &md, detail::engine(), const_cast<void *>(data)) != dnnl_success) return false;
    args.push_back({arg, m});
    return true;
  }

  int threads_ = 1;
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_desc_t src_{}, weights_{}, bias_{}, dst_{}, scratchpad_{};
  bool has_bias_ = false;
  std::vector<std::pair<int, dnnl_memory_desc_t>> operands_;  // exec arg and tensor of each binary post-op
};

inline bool Primitive::run(const void *src, const void *weights, const void *bias, void *dst,
                           std::initializer_list<const void *> operands) const {
  detail::ThreadState &state = detail::thread_state();
  if (!primitive_ || operands.size() != operands_.size()) return false;
  if (!state.stream && dnnl_stream_create(&state.stream, detail::engine(), dnnl_stream_default_flags) != dnnl_success)
    return false;
  size_t scratchpad_bytes = dnnl_memory_desc_get_size(&scratchpad_);
  if (!state.reserve(scratchpad_bytes)) return false;
  std::vector<dnnl_exec_arg_t> args;
  bool ok = add(args, DNNL_ARG_SRC, src_, src) && add(args, DNNL_ARG_WEIGHTS, weights_, weights) &&
            (!has_bias_ || add(args, DNNL_ARG_BIAS, bias_, bias)) && add(args, DNNL_ARG_DST, dst_, dst) &&
            (scratchpad_bytes == 0 || add(args, DNNL_ARG_SCRATCHPAD, scratchpad_, state.scratchpad));
  const void *const *operand = operands.begin();
  for (const auto &[arg, md] : operands_) ok = ok && add(args, arg, md, *operand++);
  dnnl_status_t s = dnnl_invalid_arguments;
  if (ok) {
    detail::ThreadCount threads(threads_);
    s = dnnl_primitive_execute(primitive_, state.stream, int(args.size()), args.data());
    if (s == dnnl_success) s = dnnl_stream_wait(state.stream);
  }
  for (const dnnl_exec_arg_t &a : args) dnnl_memory_destroy(a.memory);
  return s == dnnl_success;
}

/// dst = scale * (src x weights) (matrices, or batches of them: rank 3), then the
/// post-ops. `work` is the multiply-adds, which size the threads as threads_for does.
inline Primitive matmul(const Desc &src, const Desc &weights, const Desc &dst, float scale,
                        std::initializer_list<PostOp> post_ops, int64_t work) {
  Primitive p(work);
  dnnl_matmul_desc_t op;
  bool described = p.describe(src, weights, nullptr, dst) &&
                   dnnl_matmul_desc_init(&op, &p.src_, &p.weights_, nullptr, &p.dst_) == dnnl_success;
  p.create(described ? &op : nullptr, scale, post_ops, "matmul");
  return p;
}

/// A direct convolution (weights [groups,] out, in / groups, window...) with an optional
/// bias over out, then the post-ops. `dilation` counts the gaps as oneDNN does (PyTorch's
/// minus 1); `pad_r` pads the end of each spatial dim so that the output has dst's dims.
inline Primitive convolution(const Desc &src, const Desc &weights, const Desc *bias, const Desc &dst,
                             std::initializer_list<int64_t> stride, std::initializer_list<int64_t> dilation,
                             std::initializer_list<int64_t> pad_l, std::initializer_list<int64_t> pad_r,
                             std::initializer_list<PostOp> post_ops, int64_t work) {
  Primitive p(work);
  dnnl_convolution_desc_t op;
  dnnl_dims_t st, di, pl, pr;
  detail::copy_dims(stride, st);
  detail::copy_dims(dilation, di);
  detail::copy_dims(pad_l, pl);
  detail::copy_dims(pad_r, pr);
  bool described = p.describe(src, weights, bias, dst) &&
                   dnnl_dilated_convolution_forward_desc_init(&op, dnnl_forward_inference, dnnl_convolution_direct,
                                                              &p.src_, &p.weights_, bias ? &p.bias_ : nullptr,
                                                              &p.dst_, st, di, pl, pr) == dnnl_success;
  p.create(described ? &op : nullptr, 1, post_ops, "convolution");
  return p;
}

}  // namespace coil_rt::onednn
