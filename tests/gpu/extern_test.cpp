// Runs extern calls (matrix products, convolutions) on a real GPU through run_gpu_extern,
// each through the library gpu_extern_library names (cuBLAS, cuDNN, or the host loops),
// and compares every output element with coil's plain loops (coil/extern_loops.h) run
// here on the same inputs. Not part of ctest (CI has no GPU); run it on a GPU machine:
//   cmake -S . -B build-gpu -G Ninja && ninja -C build-gpu coil_gpu_extern_test
//   build-gpu/tests/coil_gpu_extern_test
// Prints PASS or FAIL per check (with the library that ran it) and exits 0 only when
// every check passed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

// The loops' unused thread count without -fopenmp is theirs, not this test's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "coil/extern_loops.h"
#pragma GCC diagnostic pop
#include "graph/strides.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_extern.h"
#include "support/error.h"
#include "gpu_check.h"

namespace coil {
namespace {

using cuda::CUdeviceptr;
using cuda::DeviceBuffer;
using ir::BufferId;
using ir::ExternOp;
using ir::View;

// Values as stored: rounded to the dtype, then held as double.
double round_to(DType t, double v) {
  switch (t) {
    case DType::F16: return coil_rt::f16_to_f32(coil_rt::f32_to_f16(float(v)));
    case DType::BF16: return coil_rt::bf16_to_f32(coil_rt::f32_to_bf16(float(v)));
    case DType::F32: return double(float(v));
    case DType::F64: return v;
    default: return std::nearbyint(v);
  }
}

std::vector<unsigned char> encode(DType t, const std::vector<double> &values) {
  std::vector<unsigned char> bytes(values.size() * size_t(itemsize(t)));
  for (size_t i = 0; i < values.size(); ++i) {
    unsigned char *at = bytes.data() + i * size_t(itemsize(t));
    auto store = [&](auto v) { std::memcpy(at, &v, sizeof v); };
    double v = values[i];
    switch (t) {
      case DType::F16: store(coil_rt::f32_to_f16(float(v))); break;
      case DType::BF16: store(coil_rt::f32_to_bf16(float(v))); break;
      case DType::F32: store(float(v)); break;
      case DType::F64: store(v); break;
      case DType::I32: store(int32_t(v)); break;
      case DType::I64: store(int64_t(v)); break;
      default: COIL_ASSERT(false, "no test data of ", short_name(t));
    }
  }
  return bytes;
}

std::vector<double> decode(DType t, const std::vector<unsigned char> &bytes) {
  std::vector<double> values(bytes.size() / size_t(itemsize(t)));
  for (size_t i = 0; i < values.size(); ++i) {
    const unsigned char *at = bytes.data() + i * size_t(itemsize(t));
    auto load = [&](auto zero) {
      decltype(zero) v;
      std::memcpy(&v, at, sizeof v);
      return v;
    };
    switch (t) {
      case DType::F16: values[i] = coil_rt::f16_to_f32(load(uint16_t())); break;
      case DType::BF16: values[i] = coil_rt::bf16_to_f32(load(uint16_t())); break;
      case DType::F32: values[i] = load(float()); break;
      case DType::F64: values[i] = load(double()); break;
      case DType::I32: values[i] = load(int32_t()); break;
      case DType::I64: values[i] = double(load(int64_t())); break;
      default: COIL_ASSERT(false, "no test data of ", short_name(t));
    }
  }
  return values;
}

// One extern call: its program, the inputs' storage, and what library should run it.
struct Case {
  explicit Case(std::string label) : name(std::move(label)) {}
  std::string name;
  ir::Program p;
  std::map<BufferId, std::vector<double>> values;
  uint32_t seed = 12345;

  double next() {  // deterministic values in [-1, 1)
    seed = seed * 1664525u + 1013904223u;
    return double(seed >> 8) / double(1u << 23) - 1.0;
  }

  BufferId buffer(DType t, Shape sizes, Shape strides = {}, double fill = std::nan("")) {
    if (strides.empty()) strides = contiguous_strides(sizes);
    ir::Buffer b;
    b.name = "buf" + std::to_string(p.buffers.size());
    b.kind = ir::Buffer::Kind::Input;
    b.type = TensorType{t, sizes, strides, {}};
    BufferId id = p.add_buffer(b);
    std::vector<double> &v = values[id];
    v.resize(size_t(storage_extent(b.type)));
    for (double &x : v) x = round_to(t, std::isnan(fill) ? (is_floating(t) ? next() : std::floor(next() * 4)) : fill);
    return id;
  }
  View whole(BufferId b) const {
    const TensorType &t = p.buffer(b).type;
    return View{b, t.sizes, t.strides, 0};
  }
  void node(ExternOp op, std::vector<View> operands, DType out_type, Shape out_sizes, Shape out_strides = {},
            std::map<std::string, double> scalars = {}, std::map<std::string, std::vector<int64_t>> attrs = {}) {
    ir::Node n;
    n.kind = ir::NodeKind::Extern;
    n.extern_op = op;
    n.origin = name;
    n.operands = std::move(operands);
    n.scalars = std::move(scalars);
    n.attrs = std::move(attrs);
    n.ranges = out_sizes;
    n.outputs = {buffer(out_type, out_sizes, out_strides, 0)};
    p.buffers[size_t(n.outputs[0])].kind = ir::Buffer::Kind::Computed;
    p.nodes.push_back(n);
  }
  const ir::Node &the_node() const { return p.nodes.back(); }
};

int64_t at(const View &v, const int64_t *idx) {
  int64_t off = v.offset;
  for (size_t d = 0; d < v.sizes.size(); ++d)
    if (v.sizes[d] != 1) off += idx[d] * v.strides[d];
  return off;
}

// The output's storage as coil's plain loops compute it, rounded to its dtype.
std::vector<double> reference(const Case &c) {
  const ir::Node &n = c.the_node();
  const TensorType &ot = c.p.buffer(n.outputs[0]).type;
  const Shape out_sizes = ot.sizes;
  std::vector<double> out(size_t(storage_extent(ot)), 0.0);
  auto put = [&](const int64_t *o, double v) {
    int64_t off = 0;
    for (size_t d = 0; d < ot.sizes.size(); ++d) off += o[d] * ot.strides[d];
    out[size_t(off)] = round_to(ot.dtype, v);
  };
  auto get = [&](const View &v, const int64_t *idx) { return c.values.at(v.buffer)[size_t(at(v, idx))]; };
  if (n.extern_op == ExternOp::Convolution) {
    const View &x = n.operands[0];
    int spatial = int(ot.sizes.size()) - 2;
    auto full = [&](int64_t i0, int64_t i1, const int64_t *rest) {
      std::vector<int64_t> idx = {i0, i1};
      idx.insert(idx.end(), rest, rest + spatial);
      return idx;
    };
    if (n.attrs.count("weight_grad")) {
      const View &dy = n.operands[1];
      coil_rt::convolution_weight_grad(
          spatial, out_sizes.data(), Shape(x.sizes).data(), Shape(dy.sizes).data(), n.attrs.at("stride").data(),
          n.attrs.at("padding").data(), n.attrs.at("dilation").data(), n.attrs.at("groups")[0],
          [&](int64_t i, int64_t ch, const int64_t *pos) { return get(x, full(i, ch, pos).data()); },
          [&](int64_t i, int64_t ch, const int64_t *pos) { return get(dy, full(i, ch, pos).data()); },
          [&](int64_t o, int64_t i, const int64_t *k, double v) { put(full(o, i, k).data(), v); });
      return out;
    }
    const View &w = n.operands[1], &b = n.operands[2];
    coil_rt::convolution(
        spatial, out_sizes.data(), Shape(x.sizes).data(), Shape(w.sizes).data(), n.attrs.at("stride").data(), n.attrs.at("padding").data(),
        n.attrs.at("dilation").data(), n.attrs.at("groups")[0], n.attrs.at("transposed")[0] != 0, b.buffer >= 0,
        [&](int64_t i, int64_t ch, const int64_t *pos) { return get(x, full(i, ch, pos).data()); },
        [&](int64_t o, int64_t i, const int64_t *k) { return get(w, full(o, i, k).data()); },
        [&](int64_t ch) { return get(b, &ch); },
        [&](int64_t i, int64_t ch, const int64_t *pos, double v) { put(full(i, ch, pos).data(), v); });
    return out;
  }
  bool has_bias = n.operands.size() == 3;
  const View &a = n.operands[has_bias ? 1 : 0], &b = n.operands[has_bias ? 2 : 1];
  bool batched = a.sizes.size() == 3, vector = b.sizes.size() == 1;
  size_t rank = ot.sizes.size();
  double alpha = n.scalars.count("alpha") ? n.scalars.at("alpha") : 1, beta = n.scalars.count("beta") ? n.scalars.at("beta") : 1;
  auto out_index = [&](int64_t (&idx)[3]) -> const int64_t * { return vector ? idx + 1 : idx + (3 - rank); };
  coil_rt::matmul(
      batched ? int64_t(a.sizes[0]) : 1, a.sizes[batched ? 1 : 0], a.sizes.back(), vector ? 1 : int64_t(b.sizes.back()), alpha, beta,
      has_bias,
      [&](int64_t bi, int64_t i, int64_t k) {
        int64_t idx[3] = {bi, i, k};
        return get(a, idx + (3 - a.sizes.size()));
      },
      [&](int64_t bi, int64_t k, int64_t j) {
        int64_t idx[3] = {bi, k, j};
        return get(b, vector ? idx + 1 : idx + (3 - b.sizes.size()));
      },
      [&](int64_t bi, int64_t i, int64_t j) {
        int64_t idx[3] = {bi, i, j};
        const View &bias = n.operands[0];
        return get(bias, out_index(idx) + (rank - bias.sizes.size()));
      },
      [&](int64_t bi, int64_t i, int64_t j, double v) {
        int64_t idx[3] = {bi, i, j};
        put(out_index(idx), v);
      });
  return out;
}

// How a convolution's call must run: cuDNN's execution plan, which assumes 16-byte aligned
// addresses, or its legacy calls, which take an input moved off that alignment by one element.
enum class Dnn { Any, Plan, Legacy };

// Uploads the inputs, runs the call on the GPU, and compares the whole output storage.
void check(Case &c, const std::string &expect_library, const cuda::Stream &stream, Dnn dnn = Dnn::Any) {
  std::string library = cuda::gpu_extern_library(c.p, c.the_node());
  std::string name = c.name + " [" + library + "]";
  try {
    if (library.find(expect_library) == std::string::npos) {
      report(name, false, "expected " + expect_library);
      return;
    }
    const ir::Node &n = c.the_node();
    BufferId out_id = n.outputs[0];
    DType t = c.p.buffer(out_id).type.dtype;
    std::map<BufferId, DeviceBuffer> device;
    std::map<BufferId, CUdeviceptr> addresses;
    for (const auto &[b, v] : c.values) {
      std::vector<unsigned char> bytes = encode(c.p.buffer(b).type.dtype, v);
      CUdeviceptr shift = dnn == Dnn::Legacy && b == n.operands[0].buffer ? CUdeviceptr(itemsize(c.p.buffer(b).type.dtype)) : 0;
      DeviceBuffer d(bytes.size() + 256);
      d.fill(0xff);  // NaN past the storage, and in the output before the call
      if (b != out_id) d.upload(bytes.data(), bytes.size(), size_t(shift));
      addresses[b] = d.ptr() + shift;
      device.emplace(b, std::move(d));
    }
    cuda::ExternHandles handles;
    cuda::PreparedExtern step(c.p, n, nullptr, codegen::plan_gpu_extern(c.p, n, nullptr), "test_kernel", handles);
    DeviceBuffer workspace(std::max<size_t>(step.workspace_bytes(), 1));
    cuda::BoundExternPtr bound = step.bind(handles, [&](BufferId b) { return addresses.at(b); }, workspace.ptr());
    if (dnn != Dnn::Any && cuda::runs_execution_plan(*bound) != (dnn == Dnn::Plan)) {
      report(name, false, dnn == Dnn::Plan ? "expected cuDNN's execution plan (" + step.words() + ")"
                                           : "expected cuDNN's legacy calls");
      return;
    }
    step.run(*bound, stream.get());
    stream.synchronize();
    std::vector<unsigned char> bytes(c.values.at(out_id).size() * size_t(itemsize(t)));
    device.at(out_id).download(bytes.data(), bytes.size());
    std::vector<double> got = decode(t, bytes), want = reference(c);
    // The products sum `inner` terms of magnitude up to 1: the tolerance grows with sqrt(inner).
    int64_t terms = n.attrs.count("reduction_size") ? n.attrs.at("reduction_size")[0] : 64;
    double scale = std::sqrt(double(std::max<int64_t>(terms, 1)));
    double rtol = t == DType::BF16 ? 1.6e-2 : t == DType::F16 ? 2e-3 : t == DType::F64 ? 1e-12 : 1e-5;
    double atol = rtol * scale;
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
        report(name, false,
               str_cat("element ", i, " of ", got.size(), " is ", got[i], ", the host loops give ", want[i]));
        return;
      }
    report(name, true);
  } catch (const std::exception &e) {
    report(name, false, e.what());
  }
}

std::map<std::string, std::vector<int64_t>> conv_attrs(std::vector<int64_t> stride, std::vector<int64_t> padding,
                                                       std::vector<int64_t> dilation, std::vector<int64_t> out_padding,
                                                       int64_t groups, bool transposed, int64_t window) {
  return {{"stride", stride},         {"padding", padding}, {"dilation", dilation}, {"output_padding", out_padding},
          {"groups", {groups}},       {"transposed", {transposed ? 1 : 0}}, {"reduction_size", {window}}};
}

// A convolution of input [N, C, spatial...] by weight sizes `w`, with the output's sizes
// computed as PyTorch does.
void conv_case(Case &c, DType t, Shape x_sizes, Shape w_sizes, std::vector<int64_t> stride, std::vector<int64_t> padding,
               std::vector<int64_t> dilation, std::vector<int64_t> out_padding, int64_t groups, bool transposed,
               bool bias, bool channels_last_input = false, bool channels_last_output = false,
               std::optional<bool> channels_last_weight = std::nullopt) {
  size_t spatial = w_sizes.size() - 2;
  // Channels innermost, then the spatial dims, then the batch.
  auto channels_last = [](const Shape &sizes) {
    Shape strides(sizes.size(), 0);
    int64_t s = 1;
    strides[1] = s, s *= sizes[1];
    for (size_t d = sizes.size(); d-- > 2;) strides[d] = s, s *= sizes[d];
    strides[0] = s;
    return strides;
  };
  Shape x_strides = channels_last_input ? channels_last(x_sizes) : Shape{};
  BufferId x = c.buffer(t, x_sizes, x_strides), w = c.buffer(t, w_sizes, channels_last_weight.value_or(channels_last_output) ? channels_last(w_sizes) : Shape{});
  int64_t cout = transposed ? w_sizes[1] * groups : w_sizes[0];
  Shape out = {x_sizes[0], cout};
  int64_t window = transposed ? w_sizes[0] / groups : w_sizes[1];
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = x_sizes[2 + d], k = w_sizes[2 + d];
    out.push_back(transposed ? (in - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k - 1) + out_padding[d] + 1
                             : (in + 2 * padding[d] - dilation[d] * (k - 1) - 1) / stride[d] + 1);
    window *= k;
  }
  View b = bias ? c.whole(c.buffer(t, {cout})) : View{};
  c.node(ExternOp::Convolution, {c.whole(x), c.whole(w), b}, t, out, channels_last_output ? channels_last(out) : Shape{}, {},
         conv_attrs(stride, padding, dilation, out_padding, groups, transposed, window));
}

// The weight gradient of a convolution of input [N, C, spatial...] by weight sizes `w`: a
// call reading x and dy (dy's sizes as PyTorch computes the output's), writing dw, all
// three channels-last or all contiguous.
void weight_grad_case(Case &c, DType t, Shape x_sizes, Shape w_sizes, std::vector<int64_t> stride,
                      std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups, bool channels_last) {
  size_t spatial = w_sizes.size() - 2;
  Shape dy_sizes = {x_sizes[0], w_sizes[0]};
  int64_t positions = x_sizes[0];
  for (size_t d = 0; d < spatial; ++d) {
    dy_sizes.push_back((x_sizes[2 + d] + 2 * padding[d] - dilation[d] * (w_sizes[2 + d] - 1) - 1) / stride[d] + 1);
    positions *= dy_sizes.back();
  }
  auto layout = [&](const Shape &sizes) { return channels_last ? Shape(channels_last_strides(sizes)) : Shape{}; };
  BufferId x = c.buffer(t, x_sizes, layout(x_sizes)), dy = c.buffer(t, dy_sizes, layout(dy_sizes));
  auto attrs = conv_attrs(stride, padding, dilation, std::vector<int64_t>(spatial, 0), groups, false, positions);
  attrs["weight_grad"] = {1};
  c.node(ExternOp::Convolution, {c.whole(x), c.whole(dy)}, t, w_sizes, layout(w_sizes), {}, attrs);
}

void product(Case &c, ExternOp op, std::vector<View> operands, DType t, Shape out, int64_t inner, Shape out_strides = {},
             std::map<std::string, double> scalars = {}) {
  c.node(op, std::move(operands), t, out, out_strides, scalars);
  c.p.nodes.back().attrs["reduction_size"] = {inner};
}

void run_all() {
  cuda::Device::get();
  cuda::Stream stream;
  std::printf("cuBLAS: %s\ncuDNN: %s\n",
              cuda::cublas_available() ? "loaded" : cuda::cublas_unavailable_reason().c_str(),
              cuda::cudnn_available() ? "loaded" : cuda::cudnn_unavailable_reason().c_str());
  const std::string blas = "cuBLAS", dnn = "cuDNN", host = "host loops";

  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    Case c{str_cat("mm ", short_name(t))};
    BufferId a = c.buffer(t, {33, 47}), b = c.buffer(t, {47, 29});
    product(c, ExternOp::Mm, {c.whole(a), c.whole(b)}, t, {33, 29}, 47);
    check(c, blas, stream);
  }
  {
    Case c{"mm, linear's transposed weight view"};
    BufferId x = c.buffer(DType::F32, {16, 40}), w = c.buffer(DType::F32, {24, 40});
    product(c, ExternOp::Mm, {c.whole(x), View{w, {40, 24}, {1, 40}, 0}}, DType::F32, {16, 24}, 40);
    check(c, blas, stream);
  }
  {
    Case c{"mm, both operands transposed, column-major output"};
    BufferId a = c.buffer(DType::F32, {20, 12}), b = c.buffer(DType::F32, {9, 20});
    product(c, ExternOp::Mm, {View{a, {12, 20}, {1, 12}, 0}, View{b, {20, 9}, {1, 20}, 0}}, DType::F32, {12, 9}, 20,
            {1, 12});
    check(c, blas, stream);
  }
  {
    Case c{"mm, an operand at an offset with a padded leading dim"};
    BufferId a = c.buffer(DType::F32, {10, 64}), b = c.buffer(DType::F32, {30, 8});
    product(c, ExternOp::Mm, {View{a, {10, 30}, {64, 1}, 5}, c.whole(b)}, DType::F32, {10, 8}, 30);
    check(c, blas, stream);
  }
  for (DType t : {DType::F32, DType::BF16}) {
    Case c{str_cat("bmm ", short_name(t))};
    BufferId a = c.buffer(t, {3, 17, 32}), b = c.buffer(t, {3, 32, 9});
    product(c, ExternOp::Bmm, {c.whole(a), c.whole(b)}, t, {3, 17, 9}, 32);
    check(c, blas, stream);
  }
  {
    Case c{"bmm, a weight broadcast over the batch (stride 0), transposed"};
    BufferId a = c.buffer(DType::F16, {4, 11, 24}), b = c.buffer(DType::F16, {7, 24});
    product(c, ExternOp::Bmm, {c.whole(a), View{b, {4, 24, 7}, {0, 1, 24}, 0}}, DType::F16, {4, 11, 7}, 24);
    check(c, blas, stream);
  }
  for (DType t : {DType::F32, DType::F16}) {
    Case c{str_cat("mv ", short_name(t))};
    BufferId a = c.buffer(t, {21, 35}), v = c.buffer(t, {35});
    product(c, ExternOp::Mv, {c.whole(a), c.whole(v)}, t, {21}, 35);
    check(c, blas, stream);
  }
  {
    Case c{"mv, a transposed matrix and a strided vector"};
    BufferId a = c.buffer(DType::F32, {35, 21}), v = c.buffer(DType::F32, {70});
    product(c, ExternOp::Mv, {View{a, {21, 35}, {1, 21}, 0}, View{v, {35}, {2}, 1}}, DType::F32, {21}, 35);
    check(c, blas, stream);
  }
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Case c{str_cat("addmm ", short_name(t), ", bias per column (linear), alpha 0.5, beta 2")};
    BufferId bias = c.buffer(t, {29}), a = c.buffer(t, {33, 47}), w = c.buffer(t, {29, 47});
    product(c, ExternOp::Addmm, {c.whole(bias), c.whole(a), View{w, {47, 29}, {1, 47}, 0}}, t, {33, 29}, 47, {},
            {{"alpha", 0.5}, {"beta", 2}});
    check(c, blas, stream);
  }
  {
    Case c{"addmm, bias per row [rows, 1]"};
    BufferId bias = c.buffer(DType::F32, {33, 1}), a = c.buffer(DType::F32, {33, 47}), b = c.buffer(DType::F32, {47, 29});
    product(c, ExternOp::Addmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::F32, {33, 29}, 47, {},
            {{"alpha", 1}, {"beta", 1}});
    check(c, blas, stream);
  }
  {
    Case c{"addmm, a scalar bias"};
    BufferId bias = c.buffer(DType::BF16, {}), a = c.buffer(DType::BF16, {33, 47}), b = c.buffer(DType::BF16, {47, 29});
    product(c, ExternOp::Addmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::BF16, {33, 29}, 47, {},
            {{"alpha", 1}, {"beta", 1}});
    check(c, blas, stream);
  }
  {
    Case c{"addmm, a full bias read transposed"};
    BufferId bias = c.buffer(DType::F32, {29, 33}), a = c.buffer(DType::F32, {33, 47}), b = c.buffer(DType::F32, {47, 29});
    product(c, ExternOp::Addmm, {View{bias, {33, 29}, {1, 33}, 0}, c.whole(a), c.whole(b)}, DType::F32, {33, 29}, 47, {},
            {{"alpha", -1}, {"beta", 0.25}});
    check(c, blas, stream);
  }
  {
    Case c{"addmm, beta 0 ignores a NaN bias"};
    BufferId bias = c.buffer(DType::F32, {29}, {}, std::numeric_limits<double>::quiet_NaN());
    c.values[bias].assign(c.values[bias].size(), std::numeric_limits<double>::quiet_NaN());
    BufferId a = c.buffer(DType::F32, {33, 47}), b = c.buffer(DType::F32, {47, 29});
    product(c, ExternOp::Addmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::F32, {33, 29}, 47, {},
            {{"alpha", 3}, {"beta", 0}});
    check(c, blas, stream);
  }
  {
    Case c{"baddbmm, a full bias per batch"};
    BufferId bias = c.buffer(DType::F32, {3, 17, 9}), a = c.buffer(DType::F32, {3, 17, 32}), b = c.buffer(DType::F32, {3, 32, 9});
    product(c, ExternOp::Baddbmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::F32, {3, 17, 9}, 32, {},
            {{"alpha", 0.5}, {"beta", -1}});
    check(c, blas, stream);
  }
  {
    Case c{"baddbmm, a full bias transposed in each batch (one call per batch)"};
    BufferId bias = c.buffer(DType::F32, {3, 9, 17}), a = c.buffer(DType::F32, {3, 17, 32}), b = c.buffer(DType::F32, {3, 32, 9});
    product(c, ExternOp::Baddbmm, {View{bias, {3, 17, 9}, {153, 1, 17}, 0}, c.whole(a), c.whole(b)}, DType::F32,
            {3, 17, 9}, 32, {}, {{"alpha", 1}, {"beta", 1}});
    check(c, blas, stream);
  }
  {
    Case c{"baddbmm bf16, a bias per column broadcast over the batch"};
    BufferId bias = c.buffer(DType::BF16, {1, 9}), a = c.buffer(DType::BF16, {3, 17, 32}), b = c.buffer(DType::BF16, {3, 32, 9});
    product(c, ExternOp::Baddbmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::BF16, {3, 17, 9}, 32, {},
            {{"alpha", 1}, {"beta", 1}});
    check(c, blas, stream);
  }
  {
    Case c{"baddbmm, a scalar bias over the batch"};
    BufferId bias = c.buffer(DType::F32, {1}), a = c.buffer(DType::F32, {3, 17, 32}), b = c.buffer(DType::F32, {3, 32, 9});
    product(c, ExternOp::Baddbmm, {c.whole(bias), c.whole(a), c.whole(b)}, DType::F32, {3, 17, 9}, 32, {},
            {{"alpha", 1}, {"beta", 2}});
    check(c, blas, stream);
  }
  {
    Case c{"addmv, a bias per row"};
    BufferId bias = c.buffer(DType::F32, {21}), a = c.buffer(DType::F32, {21, 35}), v = c.buffer(DType::F32, {35});
    product(c, ExternOp::Addmv, {c.whole(bias), c.whole(a), c.whole(v)}, DType::F32, {21}, 35, {},
            {{"alpha", 2}, {"beta", 0.5}});
    check(c, blas, stream);
  }
  {
    Case c{"addmv f16, a scalar bias"};
    BufferId bias = c.buffer(DType::F16, {}), a = c.buffer(DType::F16, {21, 35}), v = c.buffer(DType::F16, {35});
    product(c, ExternOp::Addmv, {c.whole(bias), c.whole(a), c.whole(v)}, DType::F16, {21}, 35, {},
            {{"alpha", 1}, {"beta", 1}});
    check(c, blas, stream);
  }
  // The host loops, on the GPU's memory.
  {
    Case c{"mm i32"};
    BufferId a = c.buffer(DType::I32, {13, 17}), b = c.buffer(DType::I32, {17, 5});
    product(c, ExternOp::Mm, {c.whole(a), c.whole(b)}, DType::I32, {13, 5}, 17);
    check(c, host, stream);
  }
  {
    Case c{"addmm, an operand with no unit stride"};
    BufferId bias = c.buffer(DType::F32, {5}), a = c.buffer(DType::F32, {13, 34}), b = c.buffer(DType::F32, {17, 5});
    product(c, ExternOp::Addmm, {c.whole(bias), View{a, {13, 17}, {34, 2}, 0}, c.whole(b)}, DType::F32, {13, 5}, 17, {},
            {{"alpha", 1}, {"beta", 1}});
    check(c, host, stream);
  }

  // Convolutions.
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Case c{str_cat("conv2d ", short_name(t), ", groups 2, stride 2, padding 1, dilation 2, bias")};
    conv_case(c, t, {2, 4, 11, 13}, {6, 2, 3, 3}, {2, 2}, {1, 1}, {2, 2}, {0, 0}, 2, false, true);
    check(c, dnn, stream);
  }
  {
    Case c{"conv2d f32, channels-last input, no bias"};
    conv_case(c, DType::F32, {2, 8, 10, 10}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, false, true);
    check(c, dnn, stream);
  }
  // Channels-last in and out: NHWC tensors and filter (codegen/gpu/extern_plan.h), no
  // layout change; a 1x1 weight (packed both ways) and a 3x3 one.
  for (DType t : {DType::F32, DType::BF16}) {
    Case c{str_cat("conv2d ", short_name(t), ", channels-last in and out, 1x1, bias")};
    conv_case(c, t, {2, 16, 6, 5}, {24, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, false, true, true, true);
    check(c, "cuDNN convolution forward (NHWC", stream);
  }
  {
    Case c{"conv2d f32, channels-last in and out, 3x3, stride 2"};
    conv_case(c, DType::F32, {2, 8, 9, 9}, {16, 8, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, false, false, true, true);
    check(c, "cuDNN convolution forward (NHWC", stream);
  }
  // cuDNN's execution plan where addresses are aligned, its legacy calls where not.
  for (Dnn path : {Dnn::Plan, Dnn::Legacy}) {
    Case c{str_cat("conv2d bf16, channels-last in and out, 3x3, ", path == Dnn::Plan ? "execution plan" : "legacy calls")};
    conv_case(c, DType::BF16, {2, 16, 7, 6}, {8, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, true, true, true);
    check(c, "cuDNN convolution forward (NHWC", stream, path);
  }
  for (Dnn path : {Dnn::Plan, Dnn::Legacy}) {
    Case c{str_cat("conv_transpose2d f32, stride 2, ", path == Dnn::Plan ? "execution plan" : "legacy calls")};
    conv_case(c, DType::F32, {2, 4, 7, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, true, true);
    check(c, dnn, stream, path);
  }
  // A weight packed the other way than the tensors is repacked per call: ResNet-50's bf16
  // graph (channels-last input and weight, contiguous output), and the converse.
  for (DType t : {DType::BF16, DType::F32}) {
    Case c{str_cat("conv2d ", short_name(t), ", channels-last input and 3x3 weight, contiguous output")};
    conv_case(c, t, {2, 8, 10, 10}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, true, true, false, true);
    check(c, "the weight repacked to NCHW by cudnnTransformTensor", stream);
  }
  {
    Case c{"conv2d bf16, channels-last in and out, contiguous 3x3 weight"};
    conv_case(c, DType::BF16, {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, false, true, true, false);
    check(c, "the weight repacked to NHWC by cudnnTransformTensor", stream);
  }
  {
    Case c{"conv2d f64, depthwise"};
    conv_case(c, DType::F64, {1, 6, 9, 9}, {6, 1, 3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 6, false, true);
    check(c, dnn, stream);
  }
  {
    Case c{"conv1d f32, stride 2, padding 3, bias"};
    conv_case(c, DType::F32, {3, 5, 40}, {7, 5, 5}, {2}, {3}, {1}, {0}, 1, false, true);
    check(c, dnn, stream);
  }
  {
    Case c{"conv3d f32, bias"};
    conv_case(c, DType::F32, {2, 3, 6, 7, 8}, {4, 3, 3, 3, 3}, {1, 1, 2}, {1, 0, 1}, {1, 1, 1}, {0, 0, 0}, 1, false, true);
    check(c, dnn, stream);
  }
  for (DType t : {DType::F32, DType::BF16}) {
    Case c{str_cat("conv_transpose2d ", short_name(t), ", stride 2, padding 1, output_padding 1, groups 2, bias")};
    conv_case(c, t, {2, 4, 7, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 2, true, true);
    check(c, dnn, stream);
  }
  {
    Case c{"conv_transpose1d f32, dilation 2"};
    conv_case(c, DType::F32, {2, 6, 15}, {6, 4, 3}, {1}, {2}, {2}, {0}, 1, true, false);
    check(c, dnn, stream);
  }
  // Weight gradients: cuDNN's backward-filter pass (ResNet's 1x1 and 3x3 in channels
  // last, strided, grouped, depthwise, 1-d and 3-d), and the host loops where it cannot.
  const std::string filter = "cuDNN convolution backward filter, the weight's gradient";
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Case c{str_cat("conv2d weight gradient ", short_name(t), ", channels last, 3x3")};
    weight_grad_case(c, t, {4, 16, 12, 10}, {24, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
    check(c, filter + " (NHWC", stream);
  }
  for (Dnn path : {Dnn::Plan, Dnn::Legacy}) {
    Case c{str_cat("conv2d weight gradient bf16, channels last, 1x1, stride 2, ",
                   path == Dnn::Plan ? "execution plan" : "legacy calls")};
    weight_grad_case(c, DType::BF16, {4, 32, 14, 14}, {64, 32, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, true);
    check(c, filter + " (NHWC", stream, path);
  }
  {
    Case c{"conv2d weight gradient f32, groups 2, stride 2, padding 1, dilation 2"};
    weight_grad_case(c, DType::F32, {2, 4, 11, 13}, {6, 2, 3, 3}, {2, 2}, {1, 1}, {2, 2}, 2, false);
    check(c, filter + " (NCHW", stream);
  }
  {
    Case c{"conv2d weight gradient f64, depthwise"};
    weight_grad_case(c, DType::F64, {2, 6, 9, 9}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, false);
    check(c, filter, stream);
  }
  {
    Case c{"conv1d weight gradient f32, stride 2, padding 3"};
    weight_grad_case(c, DType::F32, {3, 5, 40}, {7, 5, 5}, {2}, {3}, {1}, 1, false);
    check(c, filter, stream);
  }
  {
    Case c{"conv3d weight gradient f32"};
    weight_grad_case(c, DType::F32, {2, 3, 6, 7, 8}, {4, 3, 3, 3, 3}, {1, 1, 2}, {1, 0, 1}, {1, 1, 1}, 1, false);
    check(c, filter, stream);
  }
  {
    Case c{"conv2d weight gradient f32, channels-last tensors, contiguous 3x3 gradient (host loops)"};
    weight_grad_case(c, DType::F32, {2, 8, 6, 6}, {8, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
    c.p.buffers[size_t(c.the_node().outputs[0])].type.strides = contiguous_strides(Shape{8, 8, 3, 3});
    check(c, host, stream);
  }
  {
    Case c{"conv2d i32 (host loops)"};
    conv_case(c, DType::I32, {1, 2, 6, 6}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, true);
    check(c, host, stream);
  }
}

}  // namespace
}  // namespace coil

int main() {
  if (!coil::cuda::available()) {
    std::printf("SKIP: %s\n", coil::cuda::unavailable_reason().c_str());
    return 0;
  }
  try {
    coil::run_all();
  } catch (const std::exception &e) {
    coil::report("setting up", false, e.what());
  }
  std::printf("%d failure(s)\n", coil::failures);
  return coil::failures == 0 ? 0 : 1;
}
