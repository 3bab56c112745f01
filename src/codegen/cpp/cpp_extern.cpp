// Extern kernels of the C++ dialect: a matrix product or a convolution, then its epilogue
// (scheduler/epilogue.h). Where coil was built with oneDNN and oneDNN takes the call, the
// kernel is one oneDNN primitive with the epilogue as post-ops (coil/onednn.h), created
// on the first call:
//
//   static const coil_rt::onednn::Primitive call = coil_rt::onednn::matmul(
//       {dnnl_f32, 2, {7, 13}, {13, 1}}, {dnnl_f32, 2, {13, 5}, {1, 13}}, {dnnl_f32, 2, {7, 5}, {5, 1}}, 1.0f,
//       {coil_rt::onednn::binary(dnnl_binary_add, {dnnl_f32, 2, {1, 5}, {0, 1}}),
//        coil_rt::onednn::eltwise(dnnl_eltwise_relu, 0.0f, 0.0f)},
//       455);
//   if (call.run(in_ptr1, in_ptr2, nullptr, out_ptr0, {in_ptr0})) return;
//
// followed by the plain loop of coil/extern_loops.h, which runs should oneDNN decline at
// run time (a 1x1 convolution in channels last tries a matmul first: ConvolutionAsProduct),
// and which is the whole kernel otherwise; it applies the same post-ops to each element
// before storing it. Attention is no library call: its kernel is coil's
// fused loop (coil/attention.h) on the views' literal sizes and strides:
//
//   static const coil_rt::attention::Shape shape = {2, 12, 1, 128, 128, 64, 64, 0.125, true,
//       {98304, 64, 768, 1}, ...};
//   coil_rt::attention::forward<coil_rt::attention::F32, coil_rt::attention::NoMask>(in_ptr0, ...);
#include "codegen/cpp/cpp_extern.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "codegen/cpp/cpp_ops.h"
#include "graph/strides.h"
#include "support/error.h"
#include "support/options.h"

namespace coil::codegen {

using ir::BufferId;
using ir::Node;
using sched::PostOp;
using sched::PostOpKind;

std::string strided_element(const ir::Program &p, const ir::View &v, const std::string &name,
                            const std::vector<std::string> &idx) {
  std::string at = cpp_size(v.offset);
  for (size_t d = 0; d < idx.size(); ++d) at += " + " + idx[d] + "*" + cpp_size(v.strides[d]);
  return from_storage(name + "[" + at + "]", p.buffer(v.buffer).type.dtype);
}

namespace {

// CMake defines COIL_HAVE_ONEDNN where it found oneDNN 2 (the -DCOIL_ONEDNN option).
#ifdef COIL_HAVE_ONEDNN
constexpr bool kBuiltWithOnednn = true;
#else
constexpr bool kBuiltWithOnednn = false;
#endif

bool is_product(const Node &n) {
  return n.extern_op != ir::ExternOp::Convolution && n.extern_op != ir::ExternOp::Attention;
}
bool has_bias(const Node &n) { return is_product(n) && n.operands.size() == 3; }
bool transposed(const Node &n) { return n.attrs.count("transposed") && n.attrs.at("transposed")[0]; }

// ---- the matrix product seen as batches of (rows x inner) by (inner x cols) ---------------

struct Product {
  const ir::View *a, *b, *bias;
  bool batched, vector;
  SymInt batches, rows, inner, cols;
  double alpha, beta;
};

Product product(const Node &n) {
  Product m;
  m.bias = has_bias(n) ? &n.operands[0] : nullptr;
  m.a = &n.operands[m.bias ? 1 : 0];
  m.b = &n.operands[m.bias ? 2 : 1];
  m.batched = m.a->sizes.size() == 3;
  m.vector = m.b->sizes.size() == 1;
  m.batches = m.batched ? m.a->sizes[0] : SymInt(1);
  m.rows = m.a->sizes[m.batched ? 1 : 0];
  m.inner = m.a->sizes.back();
  m.cols = m.vector ? SymInt(1) : m.b->sizes.back();
  m.alpha = n.scalars.count("alpha") ? n.scalars.at("alpha") : 1;
  m.beta = n.scalars.count("beta") ? n.scalars.at("beta") : 1;
  return m;
}

// The call as oneDNN runs it: its result scaled, then post-ops. For addmm and its kin,
// alpha * p + beta * bias is ((alpha / beta) * p + bias) * beta, since oneDNN scales no
// binary operand; then the epilogue.
struct OnednnCall {
  double scale = 1;
  std::vector<PostOp> ops;
};

// linear(a, b) then linear(c, d) -> linear(a*c, b*c + d)
void push_merged(std::vector<PostOp> &ops, const PostOp &op) {
  if (op.kind == PostOpKind::Linear && !ops.empty() && ops.back().kind == PostOpKind::Linear) {
    PostOp &last = ops.back();
    last = {PostOpKind::Linear, last.alpha * op.alpha, last.beta * op.alpha + op.beta, {}};
    return;
  }
  ops.push_back(op);
}

OnednnCall onednn_call(const Node &n, const SymShape &result, const sched::Epilogue &e) {
  OnednnCall call;
  std::vector<PostOp> ops;
  if (is_product(n)) {
    Product m = product(n);
    bool bias = m.bias && m.beta != 0;
    call.scale = bias ? m.alpha / m.beta : m.alpha;
    if (bias) {
      // The bias broadcasts to the result: missing leading dims and dims of size 1 stay put.
      ir::View over{m.bias->buffer, result, SymShape(result.size(), 0), m.bias->offset};
      size_t lead = result.size() - m.bias->sizes.size();
      for (size_t d = lead; d < result.size(); ++d)
        if (!known_eq(m.bias->sizes[d - lead], 1)) over.strides[d] = m.bias->strides[d - lead];
      ops.push_back({PostOpKind::Add, 0, 0, over});
      if (m.beta != 1) ops.push_back({PostOpKind::Linear, m.beta, 0, {}});
    }
  }
  ops.insert(ops.end(), e.ops.begin(), e.ops.end());
  for (const PostOp &op : ops) push_merged(call.ops, op);
  return call;
}

// An eltwise algorithm the chain uses twice with different parameters: oneDNN 2.6 runs
// every one of them with the first one's (checked on its brgemm matmul).
std::optional<PostOpKind> repeated_with_other_parameters(const std::vector<PostOp> &ops) {
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (!ops[i].binary() && ops[i].kind == ops[j].kind && (ops[i].alpha != ops[j].alpha || ops[i].beta != ops[j].beta))
        return ops[i].kind;
  return std::nullopt;
}

// ---- who runs the call -------------------------------------------------------------------

std::string dtype_list(const std::vector<DType> &types) {
  std::string out;
  for (DType t : types)
    if (out.find(short_name(t)) == std::string::npos) out += (out.empty() ? "" : " and ") + std::string(short_name(t));
  return out;
}

// A convolution's dilation as oneDNN counts it (the gaps) and the end padding that yields
// the output's size `ranges`. For a convolution, the remainder of a stride that does not
// divide evenly counts as none (oneDNN rounds the output's size down); a transposed
// convolution's output padding makes it smaller than its start padding, negative where
// wider, which oneDNN's deconvolution takes.
struct ConvolutionGeometry {
  Shape gaps;
  SymShape pad_r;
};

ConvolutionGeometry convolution_geometry(const Node &n, const SymShape &ranges) {
  const ir::View &x = n.operands[0], &wt = n.operands[1];
  const Shape &stride = n.attrs.at("stride"), &padding = n.attrs.at("padding"), &dilation = n.attrs.at("dilation");
  bool swap = transposed(n);
  ConvolutionGeometry g;
  for (size_t d = 0; d + 2 < wt.sizes.size(); ++d) {
    g.gaps.push_back(dilation[d] - 1);
    SymInt window = (wt.sizes[2 + d] - 1) * dilation[d] + 1;
    // The convolution's input is `wide`, its output `narrow` (swapped when transposed).
    const SymInt &wide = swap ? ranges[2 + d] : x.sizes[2 + d], &narrow = swap ? x.sizes[2 + d] : ranges[2 + d];
    SymInt pad = (narrow - 1) * stride[d] + window - wide - padding[d];
    g.pad_r.push_back(swap ? pad : sym_max(pad, 0));
  }
  return g;
}

// Why oneDNN does not run the call, or "" when it does.
std::string why_not_onednn(const ir::Program &p, const ir::Kernel &k, const sched::Epilogue &e) {
  if (!kBuiltWithOnednn) return "coil was built without oneDNN";
  if (!options::get_bool("cpp.onednn")) return "cpp.onednn is off";
  const Node &n = p.nodes[size_t(k.nodes[0])];
  std::string what = is_product(n) ? "matmul" : "convolution";
  std::vector<DType> types;
  for (const ir::View &v : n.operands)
    if (v.buffer >= 0) types.push_back(p.buffer(v.buffer).type.dtype);
  types.push_back(p.buffer(n.outputs[0]).type.dtype);
  DType t = types.front();
  for (DType u : types)
    if (u != t) return "its operands are " + dtype_list(types) + ": oneDNN multiplies one dtype";
  if (t == DType::F16) return "oneDNN 2 has no f16 " + what + " on the CPU";
  if (t != DType::F32 && t != DType::BF16) return str_cat("oneDNN has no ", short_name(t), " ", what);
  for (const PostOp &op : e.ops)
    if (op.binary() && p.buffer(op.operand.buffer).type.dtype == DType::F16)
      return "oneDNN 2 takes no f16 tensor in a post-op";
  if (p.buffer(e.out.buffer).type.dtype == DType::F16) return "oneDNN 2 writes no f16 result";
  const std::vector<PostOp> ops = onednn_call(n, k.ranges, e).ops;
  const TensorType &out = p.buffer(e.out.buffer).type;
  if (t == DType::BF16 && !storage_extent(out).same(checked_numel(out.sizes)) &&
      std::any_of(ops.begin(), ops.end(), [](const PostOp &op) { return op.binary(); }))
    return "oneDNN 2 adds a tensor post-op to a bf16 result with padded rows wrongly (op_baddbmm under "
           "extern.align_product_rows=always)";
  if (auto kind = repeated_with_other_parameters(ops))
    return str_cat("oneDNN 2 would run both ", sched::post_op_name(*kind), " post-ops with the first one's parameters");
  if (is_product(n)) {
    Product m = product(n);
    if (known_eq(m.inner, 0)) return "the product sums over no element";
    for (const ir::View *v : {m.a, m.b})
      for (size_t d = m.batched ? 1 : 0; d < v->sizes.size(); ++d)
        if (known_eq(v->strides[d], 0) && !known_eq(v->sizes[d], 1) && !known_eq(v->sizes[d], 0))
          return "an operand repeats its elements along a matrix dim (stride 0)";
    return "";
  }
  size_t spatial = n.operands[1].sizes.size() - 2;
  if (spatial < 1 || spatial > 3) return str_cat("oneDNN convolves over 1 to 3 dims, not ", spatial);
  return "";
}

// ---- a 1x1 convolution as a matrix product ------------------------------------------------

// A convolution over a window of one element (or a transposed one at stride 1), with no
// padding and one group, whose input and result hold their channels innermost (channels
// last), is a matrix product: each output pixel is the input pixel under it (every
// stride-th) times the weights,
// [N, pixels..., in] x [in, out] = [N, pixels..., out], on strided views of the caller's
// tensors that oneDNN's matmul reads where they are. oneDNN's convolution instead reorders
// the weights into a blocked layout on every call (they may change between calls), which
// at small batches costs more than the convolution itself: 2.9 of the 3.1 ms of a
// 1024 -> 2048 channel 1x1 convolution at batch 2 (ResNet-50's last stage, tiny inputs).
struct ConvolutionAsProduct {
  ir::View src, weights, dst;  // [N, pixels..., in], [1..., in, out], [N, pixels..., out]
  ir::View bias;               // over dst, broadcast but along out; buffer -1 when none
  std::vector<PostOp> ops;     // the epilogue, over the product's dims
  SymInt work = 0;             // multiply-adds
};

// View `v` of a convolution's [N, C, spatial...] seen as [N, spatial..., C].
ir::View channels_innermost(ir::View v) {
  coil::channels_innermost(v.sizes, v.strides);
  return v;
}

// Merges the product's row dims (all but the last two) where every view steps through
// them as through one (a stride-1 convolution's N, H and W): oneDNN's matmul multiplies
// each batch apart, packing the weights again for each, so rows in one batch run several
// times faster than the same rows as a batch of small products.
void merge_rows(ConvolutionAsProduct &c) {
  std::vector<ir::View *> views = {&c.src, &c.weights, &c.dst, &c.bias};
  for (PostOp &op : c.ops)
    if (op.binary()) views.push_back(&op.operand);
  for (size_t d = c.dst.sizes.size() - 2; d-- > 0;) {
    // Dim d (outer) and d + 1 of every view as one.
    bool nested = std::all_of(views.begin(), views.end(), [&](const ir::View *v) {
      return known_eq(v->sizes[d], 1) || known_eq(v->sizes[d + 1], 1) ||
             v->strides[d].same(v->strides[d + 1] * v->sizes[d + 1]);
    });
    if (!nested) continue;
    for (ir::View *v : views) {
      if (known_eq(v->sizes[d + 1], 1)) v->strides[d + 1] = v->strides[d];
      v->sizes[d + 1] *= v->sizes[d];
      v->sizes.erase(v->sizes.begin() + long(d));
      v->strides.erase(v->strides.begin() + long(d));
    }
  }
}

std::optional<ConvolutionAsProduct> convolution_as_product(const Node &n, const SymShape &ranges, const sched::Epilogue &e) {
  if (!options::get_bool("cpp.conv1x1_as_matmul") || n.extern_op != ir::ExternOp::Convolution ||
      n.attrs.at("groups")[0] != 1)
    return std::nullopt;
  const ir::View &x = n.operands[0], &wt = n.operands[1], &bias = n.operands[2];
  const Shape &stride = n.attrs.at("stride"), &padding = n.attrs.at("padding");
  size_t spatial = wt.sizes.size() - 2;
  // A transposed one (the gradient of a convolution's input) is a product at stride 1 only:
  // at a larger stride it leaves the pixels between its inputs' zero.
  bool swap = transposed(n);
  for (size_t d = 0; d < spatial; ++d)
    if (!known_eq(wt.sizes[2 + d], 1) || padding[d] != 0 || (swap && stride[d] != 1)) return std::nullopt;
  auto channels_not_innermost = [](const ir::View &v) { return !known_eq(v.sizes[1], 1) && !known_eq(v.strides[1], 1); };
  if (channels_not_innermost(x) || channels_not_innermost(e.out)) return std::nullopt;
  // Many rows: the reorder is a few percent of the convolution (it moves the weights once,
  // each row multiplies them), and oneDNN's convolution was 1-3% faster than the product at
  // 25,000 rows; below about 4,096 rows the reorder is the larger cost.
  constexpr int64_t kMostRows = 4096;
  SymShape rows = ranges;
  rows.erase(rows.begin() + 1);
  if (checked_numel(rows).hint() > kMostRows || known_eq(checked_numel(ranges), 0)) return std::nullopt;
  ConvolutionAsProduct c;
  c.src = channels_innermost(x);
  for (size_t d = 0; d < spatial; ++d) {
    c.src.sizes[1 + d] = ranges[2 + d];
    c.src.strides[1 + d] = x.strides[2 + d] * stride[d];
  }
  c.weights = {wt.buffer, SymShape(spatial, 1), SymShape(spatial, 0), wt.offset};
  // [out, in] (a transposed convolution's weights: [in, out]) as [in, out].
  size_t in = swap ? 0 : 1, out = 1 - in;
  c.weights.sizes.insert(c.weights.sizes.end(), {wt.sizes[in], wt.sizes[out]});
  c.weights.strides.insert(c.weights.strides.end(), {wt.strides[in], wt.strides[out]});
  c.dst = channels_innermost(e.out);
  c.bias = {bias.buffer, c.dst.sizes, SymShape(c.dst.sizes.size(), 0), bias.offset};
  if (bias.buffer >= 0) c.bias.strides.back() = bias.strides[0];
  for (PostOp op : e.ops) {
    if (op.binary()) op.operand = channels_innermost(op.operand);
    push_merged(c.ops, op);
  }
  merge_rows(c);
  // Rows left in batches (a strided convolution's): each batch packs the weights again,
  // which beyond a few batches costs more than the convolution's one reorder (on 2 cores,
  // 512 -> 512 channels: 12 batches 0.60 against 0.81 ms, 16 batches 0.83 against 0.59).
  constexpr int64_t kMostBatches = 8;
  if (checked_numel(SymShape(c.dst.sizes.begin(), c.dst.sizes.end() - 2)).hint() > kMostBatches) return std::nullopt;
  c.work = checked_numel(ranges) * wt.sizes[in];
  return c;
}

std::string library_name(const Node &n) {
  return is_product(n) ? "oneDNN matmul" : transposed(n) ? "oneDNN transposed convolution" : "oneDNN convolution";
}

// ---- post-ops as C++ ----------------------------------------------------------------------

std::string f32(double v) { return literal(v, DType::F32); }

// Post-op `op` of the running float y (and the tensor's element t) as a C++ expression.
std::string post_op_expr(const PostOp &op, const std::string &t) {
  std::string a = f32(op.alpha), b = f32(op.beta);
  switch (op.kind) {
    case PostOpKind::Relu: return op.alpha == 0 ? "y < 0.0f ? 0.0f : y" : "y < 0.0f ? y * " + a + " : y";
    case PostOpKind::Elu: return "y > 0.0f ? y : " + a + " * std::expm1(y)";
    case PostOpKind::GeluErf: return "y * 0.5f * (std::erf(y * " + f32(M_SQRT1_2) + ") + 1.0f)";
    case PostOpKind::GeluTanh:
      return "y * 0.5f * (std::tanh((y + y * y * y * " + f32(0.044715) + ") * " + f32(std::sqrt(2.0 / M_PI)) + ") + 1.0f)";
    case PostOpKind::Tanh: return "std::tanh(y)";
    case PostOpKind::Sigmoid: return "1.0f / (1.0f + std::exp(-y))";
    case PostOpKind::Silu: return "y / (1.0f + std::exp(-y))";
    case PostOpKind::Hardswish: return "y * std::min(std::max(y + 3.0f, 0.0f), 6.0f) / 6.0f";
    case PostOpKind::Exp: return "std::exp(y)";
    case PostOpKind::Log: return "std::log(y)";
    case PostOpKind::Abs: return "std::fabs(y)";
    case PostOpKind::Sqrt: return "std::sqrt(y)";
    case PostOpKind::Square: return "y * y";
    case PostOpKind::Linear: return a + " * y + " + b;
    case PostOpKind::Clip: return "std::min(std::max(y, " + a + "), " + b + ")";
    case PostOpKind::Pow: return a + " * std::pow(y, " + b + ")";
    case PostOpKind::Add: return "y + " + t;
    case PostOpKind::Sub: return "y - " + t;
    case PostOpKind::Mul: return "y * " + t;
    case PostOpKind::Div: return "y / " + t;
  }
  return "y";
}

// Element `idx` (names of the result's dims) of view `v`, skipping the dims it does not move along.
std::string element(const ir::View &v, const std::string &name, const std::vector<std::string> &idx) {
  std::string at;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!known_eq(v.strides[d], 0))
      at += (at.empty() ? "" : " + ") + idx[d] + (known_eq(v.strides[d], 1) ? "" : "*" + cpp_size(v.strides[d]));
  if (!known_eq(v.offset, 0) || at.empty()) at += (at.empty() ? "" : " + ") + cpp_size(v.offset);
  return name + "[" + at + "]";
}

// The statements that store the call's value v (a double) at result point `idx`: the
// post-ops on a float, as oneDNN applies them, then the store.
std::string store_value(const ir::Program &p, const std::vector<PostOp> &ops, const ir::View &out,
                        const std::map<BufferId, std::string> &names, const std::vector<std::string> &idx) {
  DType t = p.buffer(out.buffer).type.dtype;
  std::string target = element(out, names.at(out.buffer), idx);
  if (ops.empty()) return target + " = " + to_storage(cpp_cast("v", DType::F64, t), t) + ";";
  std::string s = "float y = float(v);";
  for (const PostOp &op : ops) {
    std::string operand;
    if (op.binary())
      operand = from_storage(element(op.operand, names.at(op.operand.buffer), idx), p.buffer(op.operand.buffer).type.dtype);
    s += " y = " + post_op_expr(op, operand) + ";";
  }
  return s + " " + target + " = " + to_storage("y", t) + ";";
}

std::string array(const SymShape &s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + cpp_size(s[i]);
  return out + (s.empty() ? "0}" : "}");
}

// Whether any size of `shapes` is symbolic: its arrays are then computed per call, not static.
bool any_symbolic(std::initializer_list<const SymShape *> shapes) {
  return std::any_of(shapes.begin(), shapes.end(), [](const SymShape *s) { return symbolic(*s); });
}

// An operand read as double, at the last `rank` of the given indices.
std::string getter(const ir::Program &p, const std::map<ir::BufferId, std::string> &names, const ir::View &v,
                   const std::string &params, const std::vector<std::string> &idx) {
  if (v.buffer < 0) return "[](" + params + ") { return 0.0; }";
  std::vector<std::string> tail(idx.end() - long(v.sizes.size()), idx.end());
  for (size_t d = 0; d < v.sizes.size(); ++d)
    if (known_eq(v.sizes[d], 1)) tail[d] = "0";
  return "[&](" + params + ") { return double(" + strided_element(p, v, names.at(v.buffer), tail) + "); }";
}

// The plain loops of coil/extern_loops.h; the bias of addmm and its kin is theirs.
void emit_plain_loop(const ir::Program &p, const Node &n, const sched::Epilogue &e,
                     const std::map<BufferId, std::string> &names, Writer &w) {
  if (!is_product(n)) {
    const ir::View &x = n.operands[0], &wt = n.operands[1], &bias = n.operands[2];
    const TensorType &ot = p.buffer(n.outputs[0]).type;
    size_t spatial = wt.sizes.size() - 2;
    std::vector<std::string> xi = {"b", "c"}, wi = {"o", "i"}, oi = {"b", "c"};
    for (size_t d = 0; d < spatial; ++d) {
      xi.push_back("p[" + std::to_string(d) + "]");
      wi.push_back("k[" + std::to_string(d) + "]");
      oi.push_back("p[" + std::to_string(d) + "]");
    }
    w.line(std::string(any_symbolic({&ot.sizes, &x.sizes, &wt.sizes}) ? "const" : "static const") +
           " int64_t out_sizes[] = " + array(ot.sizes) + ", x_sizes[] = " + array(x.sizes) + ", w_sizes[] = " +
           array(wt.sizes) + ";");
    w.line("static const int64_t stride[] = " + array(n.attrs.at("stride")) + ", padding[] = " + array(n.attrs.at("padding")) +
           ", dilation[] = " + array(n.attrs.at("dilation")) + ";");
    w.line("coil_rt::convolution(" + std::to_string(spatial) + ", out_sizes, x_sizes, w_sizes, stride, padding, dilation, " +
           std::to_string(n.attrs.at("groups")[0]) + ", " + (transposed(n) ? "true" : "false") + ", " +
           (bias.buffer >= 0 ? "true" : "false") + ",");
    w.line("    " + getter(p, names, x, "int64_t b, int64_t c, const int64_t *p", xi) + ",");
    w.line("    " + getter(p, names, wt, "int64_t o, int64_t i, const int64_t *k", wi) + ",");
    w.line("    " + getter(p, names, bias, "int64_t c", {"c"}) + ",");
    w.line("    [&](int64_t b, int64_t c, const int64_t *p, double v) { " + store_value(p, e.ops, e.out, names, oi) + " });");
    return;
  }
  Product m = product(n);
  std::vector<std::string> o = m.vector ? std::vector<std::string>{"i"} : std::vector<std::string>{"b", "i", "j"};
  size_t rank = p.buffer(n.outputs[0]).type.sizes.size();
  std::vector<std::string> otail(o.end() - long(rank), o.end());
  w.line("coil_rt::matmul(" + cpp_size(m.batches) + ", " + cpp_size(m.rows) + ", " + cpp_size(m.inner) +
         ", " + cpp_size(m.cols) + ", " + literal(m.alpha, DType::F64) + ", " + literal(m.beta, DType::F64) + ", " +
         (m.bias ? "true" : "false") + ",");
  w.line("    " + getter(p, names, *m.a, "int64_t b, int64_t i, int64_t k", {"b", "i", "k"}) + ",");
  w.line("    " +
         getter(p, names, *m.b, "int64_t b, int64_t k, int64_t j",
                m.vector ? std::vector<std::string>{"k"} : std::vector<std::string>{"b", "k", "j"}) +
         ",");
  w.line("    " +
         (m.bias ? getter(p, names, *m.bias, "int64_t b, int64_t i, int64_t j", otail)
                 : "[](int64_t, int64_t, int64_t) { return 0.0; }") +
         ",");
  w.line("    [&](int64_t b, int64_t i, int64_t j, double v) { (void)b; (void)j; " +
         store_value(p, e.ops, e.out, names, otail) + " });");
}

// ---- the oneDNN call ----------------------------------------------------------------------

// `{dnnl_f32, 2, {7, 5}, {5, 1}}`; dims the view does not move along become 1 where
// `broadcast` (oneDNN broadcasts a binary operand, a bias, a batch of one).
std::string desc(DType t, SymShape dims, SymShape strides, bool broadcast) {
  if (broadcast)
    for (size_t d = 0; d < dims.size(); ++d)
      if (known_eq(strides[d], 0)) dims[d] = 1;
  // A dim of one element is never stepped along, so its stride is free: oneDNN takes the
  // extent of the others (a stride of 0 there, a batch of one broadcast, makes it decline
  // the call, which then runs the plain loop).
  SymInt extent = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!known_eq(dims[d], 1) && !known_eq(dims[d], 0))
      extent = sym_max(extent, strides[d] * dims[d]);
  for (size_t d = 0; d < dims.size(); ++d)
    if (known_eq(dims[d], 1) && known_eq(strides[d], 0)) strides[d] = extent;
  return std::string("{") + (t == DType::BF16 ? "dnnl_bf16" : "dnnl_f32") + ", " + std::to_string(dims.size()) + ", " +
         array(dims) + ", " + array(strides) + "}";
}

std::string desc(const ir::Program &p, const ir::View &v, bool broadcast, bool as_column = false) {
  SymShape dims = v.sizes, strides = v.strides;
  if (as_column) {  // mv: the vector as a matrix of one column
    dims.push_back(1);
    strides.push_back(1);
  }
  return desc(p.buffer(v.buffer).type.dtype, dims, strides, broadcast);
}

std::string pointer(const std::map<BufferId, std::string> &names, const ir::View &v) {
  return names.at(v.buffer) + (known_eq(v.offset, 0) ? "" : " + " + cpp_size(v.offset));
}

std::string dnnl_alg(PostOpKind k) {
  switch (k) {
    case PostOpKind::Relu: return "dnnl_eltwise_relu";
    case PostOpKind::Elu: return "dnnl_eltwise_elu";
    case PostOpKind::GeluErf: return "dnnl_eltwise_gelu_erf";
    case PostOpKind::GeluTanh: return "dnnl_eltwise_gelu_tanh";
    case PostOpKind::Tanh: return "dnnl_eltwise_tanh";
    case PostOpKind::Sigmoid: return "dnnl_eltwise_logistic";
    case PostOpKind::Silu: return "dnnl_eltwise_swish";
    case PostOpKind::Hardswish: return "dnnl_eltwise_hardswish";
    case PostOpKind::Exp: return "dnnl_eltwise_exp";
    case PostOpKind::Log: return "dnnl_eltwise_log";
    case PostOpKind::Abs: return "dnnl_eltwise_abs";
    case PostOpKind::Sqrt: return "dnnl_eltwise_sqrt";
    case PostOpKind::Square: return "dnnl_eltwise_square";
    case PostOpKind::Linear: return "dnnl_eltwise_linear";
    case PostOpKind::Clip: return "dnnl_eltwise_clip";
    case PostOpKind::Pow: return "dnnl_eltwise_pow";
    case PostOpKind::Add: return "dnnl_binary_add";
    case PostOpKind::Sub: return "dnnl_binary_sub";
    case PostOpKind::Mul: return "dnnl_binary_mul";
    case PostOpKind::Div: return "dnnl_binary_div";
  }
  return "";
}

// The call's post-ops, one a line (the last closes the list); the pointers of the binary
// ones' tensors, in order, in `operands`.
void emit_post_ops(const ir::Program &p, const std::vector<PostOp> &ops, bool column,
                   const std::map<BufferId, std::string> &names, std::string &operands, Writer &w) {
  if (ops.empty()) w.line("    {},");
  for (size_t i = 0; i < ops.size(); ++i) {
    const PostOp &op = ops[i];
    std::string line = i == 0 ? "    {" : "     ";
    if (op.binary()) {
      line += "coil_rt::onednn::binary(" + dnnl_alg(op.kind) + ", " + desc(p, op.operand, true, column) + ")";
      operands += (operands.empty() ? "" : ", ") + pointer(names, op.operand);
    } else {
      // Silu is oneDNN's swish with alpha 1: y * sigmoid(alpha * y).
      double alpha = op.kind == PostOpKind::Silu ? 1 : op.alpha;
      line += "coil_rt::onednn::eltwise(" + dnnl_alg(op.kind) + ", " + f32(alpha) + ", " + f32(op.beta) + ")";
    }
    w.line(line + (i + 1 == ops.size() ? "}," : ","));
  }
}

// The first line of a call site's primitive `name`, made by coil_rt::onednn::`made_by`:
// made once, or in a kernel of symbolic sizes once per sizes it runs at (keyed by the
// kernel's `symbols`); primitive_end closes its call.
void start_primitive(Writer &w, const std::string &name, const std::string &made_by,
                     const std::vector<std::string> &symbols) {
  if (symbols.empty()) return w.line("static const coil_rt::onednn::Primitive " + name + " = coil_rt::onednn::" + made_by + "(");
  std::string key;
  for (const std::string &s : symbols) key += (key.empty() ? "" : ", ") + s;
  w.line("static coil_rt::onednn::BySizes " + name + "_by_sizes;");
  w.line("const coil_rt::onednn::Primitive &" + name + " = " + name + "_by_sizes.at({" + key +
         "}, [&] { return coil_rt::onednn::" + made_by + "(");
}
std::string primitive_end(const std::vector<std::string> &symbols) { return symbols.empty() ? ");" : "); });"; }
// A descriptor the primitive reads: a static, or computed per call at symbolic sizes.
std::string desc_decl(const std::vector<std::string> &symbols) {
  return symbols.empty() ? "static const coil_rt::onednn::Desc " : "const coil_rt::onednn::Desc ";
}

void emit_onednn_matmul(const ir::Program &p, const ir::Kernel &k, const Node &n, const sched::Epilogue &e,
                        const std::map<BufferId, std::string> &names, const std::vector<std::string> &symbols, Writer &w) {
  Product m = product(n);
  OnednnCall call = onednn_call(n, k.ranges, e);
  std::string operands;
  start_primitive(w, "call", "matmul", symbols);
  w.line("    " + desc(p, *m.a, m.batched) + ", " + desc(p, *m.b, m.batched, m.vector) + ", " +
         desc(p, e.out, false, m.vector) + ", " + f32(call.scale) + ",");
  emit_post_ops(p, call.ops, m.vector, names, operands, w);
  w.line("    " + cpp_size(m.batches * m.rows * m.cols * m.inner) + primitive_end(symbols));
  w.line("if (call.run(" + pointer(names, *m.a) + ", " + pointer(names, *m.b) + ", nullptr, " + pointer(names, e.out) + ", {" +
         operands + "})) return;");
}

// The product first; oneDNN's convolution after it should oneDNN decline the product or
// have only a reference kernel for it.
void emit_convolution_as_product(const ir::Program &p, const ConvolutionAsProduct &c,
                                 const std::map<BufferId, std::string> &names, const std::vector<std::string> &symbols,
                                 Writer &w) {
  std::string operands;
  bool bias = c.bias.buffer >= 0;
  if (bias) w.line(desc_decl(symbols) + "product_bias = " + desc(p, c.bias, true) + ";");
  start_primitive(w, "product", "matmul", symbols);
  w.line("    " + desc(p, c.src, false) + ", " + desc(p, c.weights, true) + ", " + desc(p, c.dst, false) + ", 1.0f,");
  emit_post_ops(p, c.ops, false, names, operands, w);
  w.line("    " + cpp_size(c.work) + ", true" + (bias ? ", &product_bias" : "") + primitive_end(symbols));
  w.line("if (product.run(" + pointer(names, c.src) + ", " + pointer(names, c.weights) + ", " +
         (bias ? pointer(names, c.bias) : "nullptr") + ", " + pointer(names, c.dst) + ", {" + operands + "})) return;");
}

void emit_onednn_convolution(const ir::Program &p, const ir::Kernel &k, const Node &n, const sched::Epilogue &e,
                             const std::map<BufferId, std::string> &names, const std::vector<std::string> &symbols,
                             Writer &w) {
  const ir::View &x = n.operands[0], &wt = n.operands[1], &bias = n.operands[2];
  int64_t groups = n.attrs.at("groups")[0];
  const Shape &stride = n.attrs.at("stride"), &padding = n.attrs.at("padding");
  ConvolutionGeometry geometry = convolution_geometry(n, k.ranges);
  // Weights [out, in / groups, window...] as oneDNN's [groups, out / groups, in / groups,
  // window...]; a transposed convolution's [in, out / groups, window...] (PyTorch's, the
  // channels of the convolution it transposes) seen with its first two dims swapped.
  SymShape wdims = wt.sizes, wstrides = wt.strides;
  bool swap = transposed(n);
  if (groups > 1) {
    wdims[0] = sym_floor_div(wdims[0], groups);
    wdims.insert(wdims.begin(), groups);
    wstrides.insert(wstrides.begin(), wstrides[0] * wdims[1]);
  }
  if (swap) {
    size_t at = groups > 1 ? 1 : 0;
    std::swap(wdims[at], wdims[at + 1]);
    std::swap(wstrides[at], wstrides[at + 1]);
  }
  std::string operands;
  DType t = p.buffer(x.buffer).type.dtype;
  if (bias.buffer >= 0) w.line(desc_decl(symbols) + "bias = " + desc(p, bias, false) + ";");
  start_primitive(w, "call", "convolution", symbols);
  w.line("    " + desc(p, x, false) + ", " + desc(t, wdims, wstrides, false) + ", " +
         (bias.buffer >= 0 ? "&bias" : "nullptr") + ",");
  w.line("    " + desc(p, e.out, false) + ",");
  w.line("    " + array(stride) + ", " + array(geometry.gaps) + ", " + array(padding) + ", " + array(geometry.pad_r) +
         ",");
  emit_post_ops(p, onednn_call(n, k.ranges, e).ops, false, names, operands, w);
  // The multiply-adds: each output element's window over its input channels (a transposed
  // convolution's, each input element's over its outputs).
  const SymShape &spread = swap ? x.sizes : k.ranges;
  w.line("    " + cpp_size(checked_numel(spread) * checked_numel(SymShape(wt.sizes.begin() + 1, wt.sizes.end()))) +
         (swap ? ", true" : "") + primitive_end(symbols));
  w.line("if (call.run(" + pointer(names, x) + ", " + pointer(names, wt) + ", " +
         (bias.buffer >= 0 ? pointer(names, bias) : "nullptr") + ", " + pointer(names, e.out) + ", {" + operands + "})) return;");
}

// ---- attention ----------------------------------------------------------------------------

std::string attention_type(DType t) {
  switch (t) {
    case DType::F32: return "coil_rt::attention::F32";
    case DType::F64: return "coil_rt::attention::F64";
    case DType::BF16: return "coil_rt::attention::BF16";
    case DType::F16: return "coil_rt::attention::F16";
    case DType::Bool: return "coil_rt::attention::Bool";
    default: COIL_ASSERT(false, "no attention kernel reads ", short_name(t));
  }
  return "";
}

/// Strides as coil_rt::attention::Strides: a [B, H, L] view's with a 0 for the fourth.
std::string strides4(const SymShape &strides) {
  SymShape four = strides;
  four.resize(4, 0);
  return array(four);
}

void emit_attention(const ir::Program &p, const Node &n, const std::map<BufferId, std::string> &names, bool symbolic,
                    Writer &w) {
  ir::AttentionCall c = ir::attention_call(n);
  const ir::View &q = *c.q, &k = *c.k, &v = *c.v;
  // The results' strides: the output and the logsumexp, or the three gradients (zeros for
  // a result the call does not write).
  std::vector<std::string> results;
  for (size_t i = 0; i < 3; ++i)
    results.push_back(i < n.outputs.size() ? strides4(p.buffer(n.outputs[i]).type.strides) : "{0, 0, 0, 0}");
  w.line(str_cat(symbolic ? "const" : "static const", " coil_rt::attention::Shape shape = {", cpp_size(q.sizes[0]), ", ",
                 cpp_size(q.sizes[1]), ", ", c.group, ", ", cpp_size(q.sizes[2]), ", ", cpp_size(k.sizes[2]), ", ",
                 cpp_size(q.sizes[3]), ", ", cpp_size(v.sizes[3]), ", ", literal(c.scale, DType::F64), ", ",
                 c.causal ? "true" : "false", ","));
  w.line(str_cat("    ", array(q.strides), ", ", array(k.strides), ", ", array(v.strides), ", ",
                 c.mask ? array(c.mask->strides) : "{0, 0, 0, 0}", ","));
  w.line(str_cat("    {", results[0], ", ", results[1], ", ", results[2], "}};"));
  std::string types = str_cat("<", attention_type(p.buffer(q.buffer).type.dtype), ", ",
                              c.mask ? attention_type(p.buffer(c.mask->buffer).type.dtype) : "coil_rt::attention::NoMask", ">");
  std::string qkv = str_cat(pointer(names, q), ", ", pointer(names, k), ", ", pointer(names, v), ", ");
  std::string mask = c.mask ? pointer(names, *c.mask) : "nullptr";
  if (!c.gradient())
    return w.line(str_cat("coil_rt::attention::forward", types, "(", qkv, mask, ", ", names.at(n.outputs[0]), ", ",
                          c.writes_logsumexp ? names.at(n.outputs[1]) : "nullptr", ", shape);"));
  std::string T = attention_type(p.buffer(q.buffer).type.dtype);
  w.line(str_cat("const coil_rt::attention::GradOperands<", T, "> grads = {", pointer(names, *c.grad_out), ", ",
                 pointer(names, *c.lse), ", ", pointer(names, *c.delta), ","));
  w.line(str_cat("    ", array(c.grad_out->strides), ", ", strides4(c.lse->strides), ", ", strides4(c.delta->strides), "};"));
  w.line(str_cat("coil_rt::attention::gradients", types, "(", qkv, "grads, ", mask, ", ", names.at(n.outputs[0]), ", ",
                 names.at(n.outputs[1]), ", ", names.at(n.outputs[2]), ", shape);"));
}

}  // namespace

std::string extern_library(const ir::Program &p, const ir::Kernel &k) {
  sched::Epilogue e = sched::epilogue_of(p, k);
  const Node &n = p.nodes[size_t(k.nodes[0])];
  if (n.extern_op == ir::ExternOp::Attention) {
    ir::AttentionCall c = ir::attention_call(n);
    return str_cat("coil's fused attention loop, ", ir::attention_part_name(c.part),
                   c.writes_logsumexp ? " with the logsumexp" : "", " (blocks of 32 rows by 32 keys; ",
                   c.gradient() ? "the probabilities recomputed from the logsumexp" : "an online softmax",
                   "; the scores never stored)");
  }
  std::string why_not = why_not_onednn(p, k, e);
  if (why_not.empty()) {
    if (auto c = convolution_as_product(n, k.ranges, e))
      return std::string("oneDNN matmul, the 1x1 ") + (transposed(n) ? "transposed " : "") +
             "convolution as a product of its pixels by the weights" +
             (c->bias.buffer >= 0 ? " plus the bias" : "") +
             (c->ops.empty() ? "" : " (post-ops: " + sched::str(p, c->ops) + ")");
    OnednnCall call = onednn_call(n, k.ranges, e);
    std::string scale = call.scale != 1 ? str_cat("scale ", call.scale) : "";
    std::string ops = call.ops.empty() ? "" : "post-ops: " + sched::str(p, call.ops);
    std::string both = scale + (scale.empty() || ops.empty() ? "" : ", ") + ops;
    return library_name(n) + (both.empty() ? "" : " (" + both + ")");
  }
  return "a plain loop (" + why_not + ")" + (e.ops.empty() ? "" : ", post-ops in the loop: " + sched::str(p, e.ops));
}


void emit_extern_kernel(const ir::Program &p, const ir::Kernel &k, const std::map<ir::BufferId, std::string> &names,
                        const std::vector<std::string> &symbols, Writer &w) {
  const Node &n = p.nodes[size_t(k.nodes[0])];
  if (n.extern_op == ir::ExternOp::Attention) {
    COIL_ASSERT(k.nodes.size() == 1, "an attention kernel takes no epilogue");
    return emit_attention(p, n, names, !symbols.empty(), w);
  }
  // lowering/extern.cpp makes weight gradients as calls for the GPU only (cuDNN's backward
  // filter pass); the CPU's are products or convolutions of their own.
  COIL_ASSERT(!n.attrs.count("weight_grad") || !n.attrs.at("weight_grad")[0], "a convolution weight gradient call (",
              n.origin, ") in a CPU kernel");
  sched::Epilogue e = sched::epilogue_of(p, k);
  if (why_not_onednn(p, k, e).empty()) {
    if (auto c = convolution_as_product(n, k.ranges, e)) emit_convolution_as_product(p, *c, names, symbols, w);
    (is_product(n) ? emit_onednn_matmul : emit_onednn_convolution)(p, k, n, e, names, symbols, w);
    w.line("// oneDNN declined the call: the plain loop.");
  }
  emit_plain_loop(p, n, e, names, w);
}

}  // namespace coil::codegen
