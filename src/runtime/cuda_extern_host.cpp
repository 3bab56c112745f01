#include "runtime/cuda_extern_host.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

// The plain loops are the kernels' own; without -fopenmp their pragmas are ignored and
// the fallback runs on one thread.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "coil/extern_loops.h"
#pragma GCC diagnostic pop
#include "codegen/gpu/extern_plan.h"
#include "io/host_tensor.h"
#include "support/error.h"

namespace coil::cuda {
namespace {

using ir::BufferId;
using ir::Node;
using ir::Program;
using ir::View;

// One buffer's storage copied to the host.
struct HostCopy {
  DType dtype = DType::F32;
  CUdeviceptr device = 0;
  std::vector<unsigned char> bytes;

  double get(int64_t i) const {
    const unsigned char *at = bytes.data() + size_t(i) * size_t(itemsize(dtype));
    auto as = [&](auto zero) {
      decltype(zero) v;
      std::memcpy(&v, at, sizeof v);
      return v;
    };
    switch (dtype) {
      case DType::Bool: return as(uint8_t()) != 0 ? 1.0 : 0.0;
      case DType::U8: return double(as(uint8_t()));
      case DType::I8: return double(as(int8_t()));
      case DType::I16: return double(as(int16_t()));
      case DType::I32: return double(as(int32_t()));
      case DType::I64: return double(as(int64_t()));
      case DType::F16: return double(coil_rt::f16_to_f32(as(uint16_t())));
      case DType::BF16: return double(coil_rt::bf16_to_f32(as(uint16_t())));
      case DType::F32: return double(as(float()));
      case DType::F64: return as(double());
    }
    return 0;
  }

  void put(int64_t i, double v) {
    unsigned char *at = bytes.data() + size_t(i) * size_t(itemsize(dtype));
    auto store = [&](auto value) { std::memcpy(at, &value, sizeof value); };
    // An integer result out of int64's range has no defined conversion; it becomes the
    // smallest int64, as x86 converts it.
    int64_t whole = std::isfinite(v) && std::fabs(v) < 9.2e18 ? int64_t(v) : INT64_MIN;
    switch (dtype) {
      case DType::Bool: store(uint8_t(v != 0)); break;
      case DType::U8: store(uint8_t(whole)); break;
      case DType::I8: store(int8_t(whole)); break;
      case DType::I16: store(int16_t(whole)); break;
      case DType::I32: store(int32_t(whole)); break;
      case DType::I64: store(whole); break;
      case DType::F16: store(coil_rt::f32_to_f16(float(v))); break;
      case DType::BF16: store(coil_rt::f32_to_bf16(float(v))); break;
      case DType::F32: store(float(v)); break;
      case DType::F64: store(v); break;
    }
  }
};

// Every buffer the node touches, its whole storage (as far as the buffer's type and every
// view of it reach), downloaded after the stream's earlier work.
std::map<BufferId, HostCopy> download(const Program &p, const Node &n, const BufferAddress &address, CUstream stream) {
  std::map<BufferId, int64_t> extents;
  auto reach = [&](BufferId b, int64_t extent) { extents[b] = std::max(extents[b], extent); };
  for (const View &v : n.operands)
    if (v.buffer >= 0) {
      const TensorType &t = p.buffer(v.buffer).type;
      reach(v.buffer, storage_extent(t));
      reach(v.buffer, storage_extent(TensorType{t.dtype, v.sizes, v.strides, t.device}, v.offset));
    }
  reach(n.outputs[0], storage_extent(p.buffer(n.outputs[0]).type));
  COIL_CU(cuStreamSynchronize, stream);
  std::map<BufferId, HostCopy> out;
  for (const auto &[b, extent] : extents) {
    HostCopy &h = out[b];
    h.dtype = p.buffer(b).type.dtype;
    h.device = address(b);
    h.bytes.resize(size_t(extent) * size_t(itemsize(h.dtype)));
    if (!h.bytes.empty())
      check(driver().cuMemcpyDtoH(h.bytes.data(), h.device, h.bytes.size()), "cuMemcpyDtoH",
            str_cat("reading buffer ", p.buffer(b).name, " for the host loops of ", n.origin));
  }
  return out;
}

// Element `idx` of view `v` (dims of one element read at 0).
int64_t element(const View &v, const int64_t *idx) {
  int64_t at = v.offset;
  for (size_t d = 0; d < v.sizes.size(); ++d)
    if (v.sizes[d] != 1) at += idx[d] * v.strides[d];
  return at;
}

// One post-op on the running value y, as the IR computes it (f32 math, in double here).
double post_op(const sched::PostOp &op, double y, double t) {
  using K = sched::PostOpKind;
  float a = float(op.alpha), b = float(op.beta);
  switch (op.kind) {
    case K::Relu: return y < 0 ? a * y : y;
    case K::Elu: return y > 0 ? y : a * std::expm1(y);
    case K::GeluErf: return 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
    case K::GeluTanh: return 0.5 * y * (1 + std::tanh(std::sqrt(2 / M_PI) * (y + 0.044715 * y * y * y)));
    case K::Tanh: return std::tanh(y);
    case K::Sigmoid: return 1 / (1 + std::exp(-y));
    case K::Silu: return y / (1 + std::exp(-y));
    case K::Hardswish: return y * std::min(std::max(y + 3, 0.0), 6.0) / 6;
    case K::Exp: return std::exp(y);
    case K::Log: return std::log(y);
    case K::Abs: return std::fabs(y);
    case K::Sqrt: return std::sqrt(y);
    case K::Square: return y * y;
    case K::Linear: return a * y + b;
    case K::Clip: return std::min(std::max(y, double(a)), double(b));
    case K::Pow: return a * std::pow(y, double(b));
    case K::Add: return y + t;
    case K::Sub: return y - t;
    case K::Mul: return y * t;
    case K::Div: return y / t;
  }
  return y;
}

}  // namespace

void run_extern_on_host(const Program &p, const Node &n, const BufferAddress &address, CUstream stream) {
  std::map<BufferId, HostCopy> host = download(p, n, address, stream);
  const BufferId out_id = n.outputs[0];
  HostCopy &out = host.at(out_id);
  const TensorType &ot = p.buffer(out_id).type;
  const Shape out_sizes = ot.sizes;
  if (n.extern_op != ir::ExternOp::Convolution) {
    codegen::ProductShape s = codegen::product_shape(n);
    const HostCopy &a = host.at(s.a->buffer), &b = host.at(s.b->buffer);
    const HostCopy *bias = s.bias ? &host.at(s.bias->buffer) : nullptr;
    size_t rank = ot.sizes.size();
    // An index (b, i, j) seen by an operand or the output of `rank` dims: its last ones.
    auto tail = [](const int64_t (&bij)[3], size_t r) { return bij + (3 - r); };
    coil_rt::matmul(
        s.batches, s.rows, s.inner, s.cols, s.alpha, s.beta, bias != nullptr,
        [&](int64_t bi, int64_t i, int64_t k) {
          int64_t idx[3] = {bi, i, k};
          return a.get(element(*s.a, tail(idx, s.a->sizes.size())));
        },
        [&](int64_t bi, int64_t k, int64_t j) {
          int64_t idx[3] = {bi, k, j};
          int64_t vec[1] = {k};
          return b.get(element(*s.b, s.vector ? vec : tail(idx, s.b->sizes.size())));
        },
        [&](int64_t bi, int64_t i, int64_t j) {
          int64_t idx[3] = {bi, i, j};
          const int64_t *o = s.vector ? idx + 1 : tail(idx, rank);  // mv's output index is i
          return bias->get(element(*s.bias, o + (rank - s.bias->sizes.size())));
        },
        [&](int64_t bi, int64_t i, int64_t j, double v) {
          int64_t idx[3] = {bi, i, j};
          const int64_t *o = s.vector ? idx + 1 : tail(idx, rank);
          int64_t at = 0;
          for (size_t d = 0; d < rank; ++d) at += o[d] * ot.strides[d];
          out.put(at, v);
        });
  } else {
    // [i0, i1, rest...] of a view, and of the output.
    int spatial = int(ot.sizes.size()) - 2;
    auto at4 = [&](const View &v, int64_t i0, int64_t i1, const int64_t *rest) {
      int64_t idx[5] = {i0, i1, 0, 0, 0};
      for (int d = 0; d < spatial; ++d) idx[2 + d] = rest[d];
      return element(v, idx);
    };
    auto out_at = [&](int64_t i0, int64_t i1, const int64_t *rest) {
      int64_t at = i0 * ot.strides[0] + i1 * ot.strides[1];
      for (int d = 0; d < spatial; ++d) at += rest[d] * ot.strides[2 + d];
      return at;
    };
    const View &xv = n.operands[0];
    const HostCopy &x = host.at(xv.buffer);
    Shape x_sizes = xv.sizes;
    if (n.attrs.count("weight_grad") && n.attrs.at("weight_grad")[0]) {
      const View &dyv = n.operands[1];
      const HostCopy &dy = host.at(dyv.buffer);
      coil_rt::convolution_weight_grad(
          spatial, out_sizes.data(), x_sizes.data(), Shape(dyv.sizes).data(), n.attrs.at("stride").data(),
          n.attrs.at("padding").data(), n.attrs.at("dilation").data(), n.attrs.at("groups")[0],
          [&](int64_t bi, int64_t c, const int64_t *pos) { return x.get(at4(xv, bi, c, pos)); },
          [&](int64_t bi, int64_t c, const int64_t *pos) { return dy.get(at4(dyv, bi, c, pos)); },
          [&](int64_t o, int64_t i, const int64_t *k, double v) { out.put(out_at(o, i, k), v); });
    } else {
      const View &wv = n.operands[1];
      const View *bv = n.operands.size() > 2 && n.operands[2].buffer >= 0 ? &n.operands[2] : nullptr;
      const HostCopy &w = host.at(wv.buffer);
      const HostCopy *bias = bv ? &host.at(bv->buffer) : nullptr;
      bool transposed = n.attrs.count("transposed") && n.attrs.at("transposed")[0];
      coil_rt::convolution(
          spatial, out_sizes.data(), x_sizes.data(), Shape(wv.sizes).data(), n.attrs.at("stride").data(),
          n.attrs.at("padding").data(), n.attrs.at("dilation").data(), n.attrs.at("groups")[0], transposed,
          bias != nullptr, [&](int64_t bi, int64_t c, const int64_t *pos) { return x.get(at4(xv, bi, c, pos)); },
          [&](int64_t o, int64_t i, const int64_t *k) { return w.get(at4(wv, o, i, k)); },
          [&](int64_t c) {
            int64_t idx[1] = {c};
            return bias->get(element(*bv, idx));
          },
          [&](int64_t bi, int64_t c, const int64_t *pos, double v) { out.put(out_at(bi, c, pos), v); });
    }
  }
  if (!out.bytes.empty())
    check(driver().cuMemcpyHtoD(out.device, out.bytes.data(), out.bytes.size()), "cuMemcpyHtoD",
          str_cat("writing the result of ", n.origin, " from the host loops"));
  // A copy from pageable memory may return before it lands: later work on any stream
  // must see the result.
  COIL_CU(cuCtxSynchronize);
}

// The epilogue's post-ops on the host: reads the product's result at `result` (laid out
// as the call's output buffer), every operand, and writes the last value through e.out.
void run_epilogue_on_host(const Program &p, const Node &n, const sched::Epilogue &e, CUdeviceptr result,
                          const BufferAddress &address, CUstream stream) {
  const TensorType &rt = p.buffer(n.outputs[0]).type;
  COIL_CU(cuStreamSynchronize, stream);
  auto fetch = [&](BufferId b, CUdeviceptr at, const TensorType &t) {
    HostCopy h;
    h.dtype = t.dtype;
    h.device = at;
    h.bytes.resize(size_t(storage_extent(t)) * size_t(itemsize(t.dtype)));
    if (!h.bytes.empty())
      check(driver().cuMemcpyDtoH(h.bytes.data(), at, h.bytes.size()), "cuMemcpyDtoH",
            str_cat("reading ", b >= 0 ? p.buffer(b).name : std::string("the product"), " for the epilogue of ", n.origin));
    return h;
  };
  HostCopy y = fetch(-1, result, rt);
  std::map<BufferId, HostCopy> operands;
  for (const sched::PostOp &op : e.ops)
    if (op.binary() && !operands.count(op.operand.buffer))
      operands.emplace(op.operand.buffer, fetch(op.operand.buffer, address(op.operand.buffer), p.buffer(op.operand.buffer).type));
  HostCopy out = fetch(e.out.buffer, address(e.out.buffer), p.buffer(e.out.buffer).type);
  std::vector<int64_t> idx(rt.sizes.size());  // the element's index, one buffer for all
  for_each_offset(rt.sizes, rt.strides, 0, [&](int64_t flat, int64_t at) {
    for (int64_t d = int64_t(idx.size()) - 1, rest = flat; d >= 0; --d) {
      idx[size_t(d)] = rest % rt.sizes[size_t(d)];
      rest /= rt.sizes[size_t(d)];
    }
    double v = y.get(at);
    for (const sched::PostOp &op : e.ops)
      v = double(float(post_op(op, v, op.binary() ? operands.at(op.operand.buffer).get(element(op.operand, idx.data())) : 0)));
    out.put(element(e.out, idx.data()), v);
  });
  if (!out.bytes.empty())
    check(driver().cuMemcpyHtoD(out.device, out.bytes.data(), out.bytes.size()), "cuMemcpyHtoD",
          str_cat("writing the epilogue of ", n.origin, " from the host loops"));
  COIL_CU(cuCtxSynchronize);
}

}  // namespace coil::cuda
