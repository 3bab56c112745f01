// The planner of extern calls on the GPU (extern_plan.h): products as strided-batched
// GEMMs in cuBLAS's column-major terms, their epilogues through cuBLASLt, convolutions as
// cuDNN descriptors' sizes and strides; the reason wherever the host loops run instead.
#include "codegen/gpu/extern_plan.h"

#include <algorithm>
#include <climits>
#include <sstream>

#include "codegen/gpu/gpu_epilogue.h"
#include "graph/strides.h"
#include "support/error.h"

namespace coil::codegen {
namespace {

using ir::Node;
using ir::Program;
using ir::View;

// The scratch cuBLASLt is given: 32 MiB, as cuBLAS takes on Hopper.
constexpr int64_t kLtWorkspaceBytes = int64_t(32) << 20;

bool is_matrix_product(const Node &n) { return n.extern_op != ir::ExternOp::Convolution; }

bool library_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Operand dtypes: one dtype the library multiplies, or why not.
std::string dtype_problem(const Program &p, const Node &n, const char *library, DType &dtype) {
  std::vector<DType> types;
  for (const View &v : n.operands)
    if (v.buffer >= 0) types.push_back(p.buffer(v.buffer).type.dtype);
  types.push_back(p.buffer(n.outputs[0]).type.dtype);
  dtype = types.back();
  for (DType t : types)
    if (t != dtype) {
      std::string list;
      for (DType u : types)
        if (list.find(short_name(u)) == std::string::npos) list += (list.empty() ? "" : " and ") + std::string(short_name(u));
      return str_cat("its operands are ", list, ": ", library, " takes one dtype");
    }
  if (!library_dtype(dtype)) return str_cat(library, " has no ", short_name(dtype), " ", is_matrix_product(n) ? "matrix product" : "convolution");
  return "";
}

// ---- products as one strided-batched GEMM ----------------------------------------------------

// A matrix in memory: element (r, c) at r*row_stride + c*col_stride.
struct Mat {
  int64_t rows, cols, row_stride, col_stride;
};

// How cuBLAS reads a matrix: column-major with leading dimension ld, or its transpose.
struct BlasMat {
  bool transposed;
  int64_t ld;
};

// A dim of one element may have any stride: it is never stepped along.
std::optional<BlasMat> as_blas(const Mat &m, bool output = false) {
  bool unit_rows = m.row_stride == 1 || m.rows <= 1;
  bool unit_cols = m.col_stride == 1 || m.cols <= 1;
  if (unit_rows) {
    int64_t ld = m.cols <= 1 ? std::max<int64_t>(1, m.rows) : m.col_stride;
    if (ld >= std::max<int64_t>(1, m.rows) && fits_int(ld)) return BlasMat{false, ld};
  }
  if (output) return std::nullopt;  // cuBLAS writes C as it is, never transposed
  if (unit_cols) {
    int64_t ld = m.rows <= 1 ? std::max<int64_t>(1, m.cols) : m.row_stride;
    if (ld >= std::max<int64_t>(1, m.cols) && fits_int(ld)) return BlasMat{true, ld};
  }
  return std::nullopt;
}

GemmOperand operand(ir::BufferId buffer, int64_t offset, BlasMat mat, int64_t batch_stride) {
  return {buffer, offset, mat.transposed, mat.ld, batch_stride};
}

// The bias's strides over the output's dims, broadcast as PyTorch does: missing leading
// dims and dims of one element do not move (stride 0).
std::vector<int64_t> bias_over(const View &bias, const Shape &out) {
  std::vector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - bias.sizes.size();
  for (size_t d = lead; d < out.size(); ++d)
    if (bias.sizes[d - lead] != 1 && out[d] != 1) strides[d] = bias.strides[d - lead];
  return strides;
}

// The GEMMs that broadcast the bias into C before the product adds to it with beta.
// `over`: the bias's strides as (batch, row, col) of the output; "" or why not.
std::string plan_bias_copy(const ProductShape &s, const std::vector<int64_t> &sc, std::vector<int64_t> over,
                           int64_t ldc, GemmPlan &plan) {
  const GemmCall &g = plan.product;
  bool swapped = plan.swapped;
  int64_t pr = swapped ? over[2] : over[1], pc = swapped ? over[1] : over[2], pb = s.batches > 1 ? over[0] : 0;
  if (pr < 0 || pc < 0 || pb < 0) return "the bias has a negative stride";
  const int64_t m = g.m, ncols = g.n;
  GemmOperand bias_at{s.bias->buffer, s.bias->offset, false, 1, pb};
  GemmOperand ones{-1, 0, false, 1, 0};
  GemmCall copy;
  copy.k = 1;
  copy.alpha = 1;
  copy.beta = 0;
  copy.c = g.c;
  auto set = [](GemmOperand &o, BlasMat mat) { o.transposed = mat.transposed, o.ld = mat.ld; };
  if (pr != 0 && pc == 0) {
    // Along C's rows only: bias column (m x 1) times a row of ones (1 x n).
    copy.m = m, copy.n = ncols, copy.batches = s.batches;
    set(bias_at, *as_blas(Mat{m, 1, pr, 0}));
    set(ones, {false, 1});
    copy.a = bias_at, copy.b = ones;
    plan.bias_copy.push_back(copy);
  } else if (pr == 0 && pc != 0) {
    // Along C's columns only: a column of ones (m x 1) times the bias row (1 x n).
    copy.m = m, copy.n = ncols, copy.batches = s.batches;
    set(ones, {false, std::max<int64_t>(1, m)});
    set(bias_at, *as_blas(Mat{1, ncols, 0, pc}));
    copy.a = ones, copy.b = bias_at;
    plan.bias_copy.push_back(copy);
  } else {
    // A scalar per matrix, or a full matrix: column by column, each column of C (m x 1)
    // the bias's column (or ones) times one element (1 or the bias's scalar). Batches
    // of columns, one call per matrix unless all of them line up as one sequence.
    bool scalar = pr == 0;
    GemmOperand column = scalar ? ones : bias_at, unit = scalar ? bias_at : ones;
    set(column, scalar ? BlasMat{false, std::max<int64_t>(1, m)} : *as_blas(Mat{m, 1, pr, 0}));
    column.batch_stride = scalar ? 0 : pc;
    set(unit, {false, 1});
    unit.batch_stride = 0;
    copy.m = m, copy.n = 1;
    copy.a = column, copy.b = unit;
    copy.c.batch_stride = ldc;
    bool one_sequence = s.batches == 1 || (sc[0] == ncols * ldc && (scalar ? pb == 0 : pb == ncols * pc));
    int64_t calls = one_sequence ? 1 : s.batches;
    copy.batches = one_sequence ? ncols * s.batches : ncols;
    if (!fits_int(copy.batches)) return "the bias would take more GEMM batches than cuBLAS's int takes";
    for (int64_t i = 0; i < calls; ++i) {
      GemmCall each = copy;
      each.c.offset += i * sc[0];
      (scalar ? each.b : each.a).offset += i * pb;
      plan.bias_copy.push_back(each);
    }
  }
  plan.ones = std::max(m, ncols);
  return "";
}

// Fills plan.gemm; "" or why cuBLAS cannot take the product. `empty`: no output element.
std::string plan_product(const Program &p, const Node &n, GpuExternPlan &plan, bool &empty) {
  if (std::string why = dtype_problem(p, n, "cuBLAS", plan.dtype); !why.empty()) return why;
  ProductShape s = product_shape(n);
  const TensorType &out = p.buffer(n.outputs[0]).type;
  empty = s.batches == 0 || s.rows == 0 || s.cols == 0;
  if (empty) return "";
  if (s.inner == 0) return "the product sums over no element";
  for (int64_t v : {s.batches, s.rows, s.inner, s.cols})
    if (!fits_int(v)) return str_cat("a dim of ", v, " elements is more than cuBLAS's int takes");
  // Strides as (batch, row, col); a vector is a matrix of one column.
  auto strides3 = [&](const View &v, bool is_vector) {
    std::vector<int64_t> st = v.strides;
    if (is_vector) st.push_back(0);
    if (st.size() == 2) st.insert(st.begin(), 0);
    return st;
  };
  std::vector<int64_t> sa = strides3(*s.a, false), sb = strides3(*s.b, s.vector);
  std::vector<int64_t> sc = strides3(View{n.outputs[0], out.sizes, out.strides, 0}, s.vector);
  if (!s.batched || s.batches == 1) sa[0] = sb[0] = sc[0] = 0;
  for (const auto *st : {&sa, &sb})
    if (s.batches > 1 && (*st)[0] < 0) return "a batch stride is negative";
  // Batches sharing the second operand (batch stride 0: a linear over a 3-d input, a bmm
  // with an expanded weight) are pairs (batch, row) of the first operand and the output in
  // either order: the batch and row dims trade places where that gives fewer, larger
  // matrices, and where the rows run on from one matrix to the next the batches fold into
  // them: one GEMM of batches x rows rows, not many small ones.
  std::vector<int64_t> bias_batch;  // the bias's (batch, row) strides over the output
  if (s.bias) {
    std::vector<int64_t> over = bias_over(*s.bias, out.sizes);
    if (over.size() == 3) bias_batch = {over[0], over[1]};
  }
  bool exchanged = false, fold = false;
  if (s.batches > 1 && !s.vector && sb[0] == 0) {
    auto exchange = [&] {
      std::swap(s.rows, s.batches);
      std::swap(sa[0], sa[1]);
      std::swap(sc[0], sc[1]);
      if (!bias_batch.empty()) std::swap(bias_batch[0], bias_batch[1]);
      exchanged = !exchanged;
    };
    auto runs_on = [&](const std::vector<int64_t> &st) { return st.empty() || st[0] == s.rows * st[1]; };
    auto folds = [&] { return runs_on(sa) && runs_on(sc) && runs_on(bias_batch) && fits_int(s.batches * s.rows); };
    // The order with more rows first, the other if only it folds.
    if (s.batches > s.rows) exchange();
    if (!folds()) {
      exchange();
      if (!folds()) exchange();
    }
    fold = folds();
    if (fold) {
      s.rows *= s.batches;
      s.batches = 1;
      sa[0] = sb[0] = sc[0] = 0;
    }
  }
  Mat a{s.rows, s.inner, sa[1], sa[2]}, b{s.inner, s.cols, sb[1], sb[2]}, c{s.rows, s.cols, sc[1], sc[2]};

  // Row-major C = A @ B is column-major C^T = B^T A^T: tried first, since a row-major
  // output is the usual one; then C = A @ B for a column-major output.
  for (bool swapped : {true, false}) {
    Mat cc = swapped ? Mat{c.cols, c.rows, c.col_stride, c.row_stride} : c;
    Mat aa = swapped ? Mat{b.cols, b.rows, b.col_stride, b.row_stride} : a;
    Mat bb = swapped ? Mat{a.cols, a.rows, a.col_stride, a.row_stride} : b;
    auto bc = as_blas(cc, true), ba = as_blas(aa), bbm = as_blas(bb);
    if (!bc || !ba || !bbm) continue;
    GemmPlan &gp = plan.gemm;
    GemmCall &g = gp.product;
    g.m = cc.rows;
    g.n = cc.cols;
    g.k = s.inner;
    g.batches = s.batches;
    const View &first = swapped ? *s.b : *s.a, &second = swapped ? *s.a : *s.b;
    g.a = operand(first.buffer, first.offset, *ba, swapped ? sb[0] : sa[0]);
    g.b = operand(second.buffer, second.offset, *bbm, swapped ? sa[0] : sb[0]);
    g.c = operand(n.outputs[0], 0, *bc, sc[0]);
    g.alpha = s.alpha;
    g.beta = s.beta;
    gp.swapped = swapped;
    if (!s.bias || s.beta == 0) return "";
    gp.bias_strides = bias_over(*s.bias, out.sizes);
    std::vector<int64_t> over = gp.bias_strides;
    if (s.vector) over.push_back(0);
    if (over.size() == 2) over.insert(over.begin(), 0);
    if (exchanged) std::swap(over[0], over[1]);
    if (fold) over[0] = 0;
    return plan_bias_copy(s, sc, over, bc->ld, gp);
  }
  auto layout = [](const Mat &m) { return str_cat("strides [", m.row_stride, ", ", m.col_stride, "]"); };
  for (const auto &[name, m] : {std::pair<const char *, Mat>{"first operand", a}, {"second operand", b}})
    if (!as_blas(m) && !as_blas(Mat{m.cols, m.rows, m.col_stride, m.row_stride}))
      return str_cat("the ", name, " has ", layout(m), ": cuBLAS needs a unit stride in one matrix dim");
  return str_cat("the output has ", layout(c), ": cuBLAS needs a unit stride in one matrix dim");
}

// cuBLASLt with the epilogue: "" (plan.gemm, lt_* filled, the result written where the
// epilogue stores) or why not.
std::string plan_lt(const Program &p, const Node &n, const sched::Epilogue &e, GpuExternPlan &plan) {
  if (std::string why = cublaslt_problem(p, n, e); !why.empty()) return why;
  if (plan.dtype == DType::F64) return "cuBLASLt's epilogues here take no f64";
  bool act_relu = false, act_gelu = false;
  std::optional<View> bias;
  for (const sched::PostOp &op : e.ops) {
    if (op.kind == sched::PostOpKind::Add) bias = op.operand;
    act_relu = act_relu || op.kind == sched::PostOpKind::Relu;
    act_gelu = act_gelu || op.kind == sched::PostOpKind::GeluTanh;
  }
  GemmPlan &gp = plan.gemm;
  ProductShape s = product_shape(n);
  // The product's own bias, a vector along the last dim added once (beta 1), is cuBLASLt's.
  if (s.bias && s.beta == 1 && !gp.bias_strides.empty() && gp.bias_strides.back() == 1) {
    bool vector = true;
    for (size_t d = 0; d + 1 < gp.bias_strides.size(); ++d) vector = vector && gp.bias_strides[d] == 0;
    if (vector) {
      bias = *s.bias;
      gp.bias_copy.clear();
      gp.ones = 0;
      gp.product.beta = 0;
    }
  }
  if (bias && !gp.swapped) return "the output is column-major, and cuBLASLt adds a bias along its rows";
  plan.lt_bias = bias;
  plan.lt_epilogue = bias ? (act_relu ? LtEpilogue::ReluBias : act_gelu ? LtEpilogue::GeluBias : LtEpilogue::Bias)
                          : (act_relu ? LtEpilogue::Relu : act_gelu ? LtEpilogue::Gelu : LtEpilogue::None);
  // The result goes where the epilogue stores (gpu_epilogue.h: the same layout).
  gp.product.c.buffer = e.out.buffer;
  gp.product.c.offset = e.out.offset;
  for (GemmCall &g : gp.bias_copy) {
    g.c.buffer = e.out.buffer;
    g.c.offset += e.out.offset;
  }
  return "";
}

// ---- convolutions through cuDNN ---------------------------------------------------------------

// Whether the dims laid out innermost-first in `order` are packed (dims of one element may
// have any stride).
bool packed(const Shape &sizes, const Shape &strides, const std::vector<size_t> &order) {
  int64_t expected = 1;
  for (size_t d : order) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// cuDNN's sizes and strides of a tensor, with a unit height before a single spatial dim.
// A dim of one element gets the stride it would have in the tensor's packed layout
// (channels innermost when the channel stride is 1), as cuDNN recognizes packed ones.
bool to_cudnn(const Shape &sizes, const Shape &strides, size_t spatial, std::vector<int> &s_out, std::vector<int> *st_out) {
  Shape s = sizes, st = strides;
  if (spatial == 1) {
    s.insert(s.begin() + 2, 1);
    st.insert(st.begin() + 2, st[2] * s[3]);
  }
  std::vector<size_t> order;
  bool channels_last = st[1] == 1 && s[1] > 1;
  if (channels_last) order.push_back(1);
  for (size_t d = s.size(); d-- > 2;) order.push_back(d);
  if (!channels_last) order.push_back(1);
  order.push_back(0);
  int64_t inner = 1;
  for (size_t d : order) {
    if (s[d] == 1) st[d] = inner;
    inner *= s[d];
  }
  for (int64_t v : s) {
    if (!fits_int(v)) return false;
    s_out.push_back(int(v));
  }
  if (st_out)
    for (int64_t v : st) {
      if (!fits_int(v)) return false;
      st_out->push_back(int(v));
    }
  return true;
}

// Whether a tensor of cuDNN's sizes and strides is channels-last (NHWC, NDHWC).
bool channels_last(const std::vector<int> &sizes, const std::vector<int> &strides) {
  Shape s(sizes.begin(), sizes.end()), st(strides.begin(), strides.end());
  return s[1] > 1 && is_channels_innermost_packed(s, st);
}

TensorFormat other_format(TensorFormat f) { return f == TensorFormat::NCHW ? TensorFormat::NHWC : TensorFormat::NCHW; }

std::string format_name(TensorFormat f) { return f == TensorFormat::NCHW ? "NCHW" : "NHWC"; }

// The packed strides of cuDNN sizes in format `f`: NCHW row-major, NHWC with the channels
// innermost, then the spatial dims, then the batch.
std::vector<int> packed_strides(const std::vector<int> &sizes, TensorFormat f) {
  std::vector<size_t> order;  // dims from the innermost out
  if (f == TensorFormat::NHWC) order.push_back(1);
  for (size_t i = sizes.size(); i-- > 0;)
    if (f == TensorFormat::NCHW || i != 1) order.push_back(i);
  std::vector<int> strides(sizes.size());
  int step = 1;
  for (size_t i : order) strides[i] = step, step *= sizes[i];
  return strides;
}

// Fills plan.conv; "" or why cuDNN cannot take the convolution. `empty`: no output element.
std::string plan_convolution(const Program &p, const Node &n, GpuExternPlan &plan, bool &empty) {
  if (std::string why = dtype_problem(p, n, "cuDNN", plan.dtype); !why.empty()) return why;
  ConvPlan &c = plan.conv;
  c.transposed = n.attrs.count("transposed") && n.attrs.at("transposed")[0];
  c.weight_grad = n.attrs.count("weight_grad") && n.attrs.at("weight_grad")[0];
  const TensorType &out = p.buffer(n.outputs[0]).type;
  // x, w and y as cuDNN names them: a weight gradient reads x and y (dy) and writes w (dw).
  const View &x = n.operands[0];
  const View written{n.outputs[0], out.sizes, out.strides, 0};
  const View &w = c.weight_grad ? written : n.operands[1], &y = c.weight_grad ? n.operands[1] : written;
  const View *bias = !c.weight_grad && n.operands.size() > 2 && n.operands[2].buffer >= 0 ? &n.operands[2] : nullptr;
  size_t spatial = w.sizes.size() - 2;
  c.bias = bias != nullptr;
  if (spatial < 1 || spatial > 3) return str_cat("cuDNN convolves over 1 to 3 dims, not ", spatial);
  empty = out.numel() == 0;
  if (empty) return "";
  for (const View *v : {&x, &w, &y})
    for (int64_t s : v->sizes)
      if (s == 0) return "an operand has no elements";
  for (const View *v : {&x, &y})
    for (size_t d = 0; d < v->sizes.size(); ++d)
      if (v->strides[d] <= 0 && v->sizes[d] > 1)
        return str_cat(v == &x ? "the input" : "the output's gradient", " repeats its elements along dim ", d,
                       " (stride ", v->strides[d], "), which a cuDNN tensor cannot");
  if (bias && bias->strides[0] <= 0 && bias->sizes[0] > 1)
    return "the bias repeats one element (stride 0), which a cuDNN tensor cannot";
  int64_t groups = n.attrs.at("groups")[0];
  if (!to_cudnn(x.sizes, x.strides, spatial, c.x_sizes, &c.x_strides) || !to_cudnn(w.sizes, w.strides, spatial, c.w_sizes, nullptr) ||
      !to_cudnn(y.sizes, y.strides, spatial, c.y_sizes, &c.y_strides) || !fits_int(groups))
    return "a size or stride is more than cuDNN's int takes";
  // NHWC when the input and the output both are; mixed orders stay as cuDNN's NCHW.
  bool both_nhwc = channels_last(c.x_sizes, c.x_strides) && channels_last(c.y_sizes, c.y_strides);
  c.tensors = both_nhwc ? TensorFormat::NHWC : TensorFormat::NCHW;
  // The weight is a cuDNN filter, which has a layout but no strides, in the tensors' order
  // (a 1x1 weight is packed both ways); packed the other way only, it is repacked per call.
  std::vector<size_t> nchw, nhwc = {1};
  for (size_t d = w.sizes.size(); d-- > 0;) nchw.push_back(d);
  for (size_t d = w.sizes.size(); d-- > 2;) nhwc.push_back(d);
  nhwc.push_back(0);
  bool as_nchw = packed(w.sizes, w.strides, nchw), as_nhwc = packed(w.sizes, w.strides, nhwc);
  if (!as_nchw && !as_nhwc)
    return str_cat("the weight has strides ", shape_str(w.strides), ": a cuDNN filter is packed, in NCHW or NHWC order");
  c.filter = c.tensors;
  c.repack_filter = c.tensors == TensorFormat::NHWC ? !as_nhwc : !as_nchw;
  if (c.repack_filter && c.weight_grad)
    return str_cat("the weight's gradient is packed in ", format_name(other_format(c.tensors)), " order, the tensors in ",
                   format_name(c.tensors), ": cuDNN writes a filter in the tensors' order");
  c.w_strides = packed_strides(c.w_sizes, c.filter);
  if (c.repack_filter) c.w_given_strides = packed_strides(c.w_sizes, other_format(c.filter));
  c.groups = int(groups);
  if (spatial == 1) c.padding = {0}, c.stride = {1}, c.dilation = {1};
  for (const char *name : {"padding", "stride", "dilation"}) {
    std::vector<int> &dst = name[0] == 'p' ? c.padding : name[0] == 's' ? c.stride : c.dilation;
    for (int64_t v : n.attrs.at(name)) {
      if (!fits_int(v)) return str_cat("a ", name, " of ", v, " is more than cuDNN's int takes");
      dst.push_back(int(v));
    }
  }
  if (bias) {
    // The bias as a 1 x C x 1 x 1 tensor that cuDNN broadcasts over the output.
    size_t dims = c.y_sizes.size();
    c.bias_sizes.assign(dims, 1);
    c.bias_strides.assign(dims, 1);
    c.bias_sizes[1] = c.y_sizes[1];
    if (bias->sizes[0] > 1 && !fits_int(bias->strides[0] * c.y_sizes[1])) return "the bias's stride is more than cuDNN's int takes";
    c.bias_strides[1] = bias->sizes[0] > 1 ? int(bias->strides[0]) : 1;
    c.bias_strides[0] = c.bias_sizes[1] * c.bias_strides[1];
  }
  return "";
}

// ---- printing ---------------------------------------------------------------------------------

std::string ints(const std::vector<int> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string workspace_str(int64_t bytes) { return bytes < 0 ? "decided at load" : str_cat(bytes, " bytes"); }

}  // namespace

ProductShape product_shape(const Node &n) {
  ProductShape s;
  bool has_bias = n.operands.size() == 3;
  s.bias = has_bias ? &n.operands[0] : nullptr;
  s.a = &n.operands[has_bias ? 1 : 0];
  s.b = &n.operands[has_bias ? 2 : 1];
  s.batched = s.a->sizes.size() == 3;
  s.vector = s.b->sizes.size() == 1;
  s.batches = s.batched ? int64_t(s.a->sizes[0]) : 1;
  s.rows = s.a->sizes[s.batched ? 1 : 0];
  s.inner = s.a->sizes.back();
  s.cols = s.vector ? 1 : int64_t(s.b->sizes.back());
  s.alpha = n.scalars.count("alpha") ? n.scalars.at("alpha") : 1;
  s.beta = n.scalars.count("beta") ? n.scalars.at("beta") : 1;
  if (!s.bias) s.beta = 0;
  return s;
}

std::string_view lt_epilogue_name(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::None: return "none";
    case LtEpilogue::Relu: return "relu";
    case LtEpilogue::Bias: return "bias";
    case LtEpilogue::ReluBias: return "bias+relu";
    case LtEpilogue::Gelu: return "gelu";
    case LtEpilogue::GeluBias: return "bias+gelu";
  }
  return "?";
}

std::string precision_words(DType t) {
  switch (t) {
    case DType::F32: return "f32, TF32 off";
    case DType::F16: return "f16, f32 accumulation";
    case DType::BF16: return "bf16, f32 accumulation";
    default: return std::string(short_name(t));
  }
}

GpuExternPlan plan_gpu_extern(const Program &p, const Node &n, const sched::Epilogue *epilogue) {
  GpuExternPlan plan;
  plan.has_epilogue = epilogue != nullptr;
  auto host = [&](std::string why) {
    plan.library = GpuExternLibrary::HostLoops;
    plan.host_reason = std::move(why);
    plan.workspace_bytes = 0;
    return plan;
  };
  if (n.kind != ir::NodeKind::Extern || n.outputs.size() != 1) return host("not an extern call");
  try {
    bool empty = false;
    if (!is_matrix_product(n)) {
      if (std::string why = plan_convolution(p, n, plan, empty); !why.empty()) return host(why);
      plan.library = empty                    ? GpuExternLibrary::Nothing
                     : plan.conv.weight_grad  ? GpuExternLibrary::CudnnBackwardFilter
                     : plan.conv.transposed   ? GpuExternLibrary::CudnnBackwardData
                                              : GpuExternLibrary::CudnnForward;
      plan.workspace_bytes = empty ? 0 : -1;
      if (epilogue) plan.epilogue_host_reason = "cuBLASLt runs epilogues of matrix-matrix products, not of convolution";
      return plan;
    }
    if (std::string why = plan_product(p, n, plan, empty); !why.empty()) {
      if (epilogue) plan.epilogue_host_reason = why;
      return host(why);
    }
    if (empty) {
      plan.library = GpuExternLibrary::Nothing;
      return plan;
    }
    plan.library = GpuExternLibrary::CublasGemm;
    // A product's own bias, broadcast by cuBLAS as a GEMM with a vector of ones (a pass over
    // the output before the product's), is cuBLASLt's bias epilogue where it can take it.
    const TensorType &out = p.buffer(n.outputs[0]).type;
    sched::Epilogue own{{}, View{n.outputs[0], out.sizes, out.strides, 0}};
    if (!epilogue && plan.gemm.ones == 0) return plan;
    GpuExternPlan lt = plan;
    if (std::string why = plan_lt(p, n, epilogue ? *epilogue : own, lt); !why.empty()) {
      if (epilogue) plan.epilogue_host_reason = why;
      return plan;
    }
    if (!epilogue && lt.gemm.ones > 0) return plan;
    lt.library = GpuExternLibrary::CublasLt;
    lt.workspace_bytes = kLtWorkspaceBytes;
    return lt;
  } catch (const std::exception &e) {
    return host(e.what());
  }
}

std::string GpuExternPlan::words() const {
  std::string base;
  switch (library) {
    case GpuExternLibrary::Nothing: return "nothing to run: the output has no elements";
    case GpuExternLibrary::HostLoops: base = "host loops: " + host_reason; break;
    case GpuExternLibrary::CublasLt:
      return str_cat("cuBLASLt cublasLtMatmul with epilogue ", lt_epilogue_name(lt_epilogue), " (", precision_words(dtype), ")",
                     gemm.bias_copy.empty() ? "" : ", the product's bias broadcast first by cuBLAS GEMMs");
    case GpuExternLibrary::CublasGemm:
      base = str_cat("cuBLAS cublasGemmStridedBatchedEx (", precision_words(dtype), ")");
      if (!gemm.bias_copy.empty())
        base += str_cat(", the bias broadcast by ", gemm.bias_copy.size() == 1 ? "a GEMM" : "GEMMs", " with a vector of ones");
      break;
    case GpuExternLibrary::CudnnForward:
    case GpuExternLibrary::CudnnBackwardData:
    case GpuExternLibrary::CudnnBackwardFilter: {
      base = str_cat("cuDNN convolution ",
                     conv.weight_grad  ? "backward filter, the weight's gradient"
                     : conv.transposed ? "backward data, as a transposed convolution"
                                       : "forward",
                     " (", format_name(conv.tensors), ", ", precision_words(dtype), ")");
      if (conv.repack_filter)
        base += str_cat(", the weight repacked to ", format_name(conv.filter), " by cudnnTransformTensor");
      if (conv.bias) base += ", the bias by cudnnAddTensor";
      break;
    }
  }
  if (!epilogue_host_reason.empty()) return str_cat("host loops for the epilogue (", epilogue_host_reason, "); the product: ", base);
  return base;
}

std::string GpuExternPlan::str() const {
  // Buffers by id (b3): the plan alone, without its program.
  auto name = [](const GemmOperand &o) { return o.buffer < 0 ? std::string("ones") : str_cat("b", o.buffer); };
  auto op = [&](const GemmOperand &o) {
    return str_cat(name(o), "+", o.offset, o.transposed ? " T" : " N", " ld=", o.ld, " batch_stride=", o.batch_stride);
  };
  auto gemm_line = [&](const GemmCall &g) {
    return str_cat("m=", g.m, " n=", g.n, " k=", g.k, " batches=", g.batches, " alpha=", g.alpha, " beta=", g.beta, "; A ",
                   op(g.a), "; B ", op(g.b), "; C ", op(g.c));
  };
  std::ostringstream out;
  out << words() << "\n";
  switch (library) {
    case GpuExternLibrary::Nothing:
    case GpuExternLibrary::HostLoops: break;
    case GpuExternLibrary::CublasGemm:
    case GpuExternLibrary::CublasLt:
      out << "    gemm " << gemm_line(gemm.product) << "\n";
      for (const GemmCall &g : gemm.bias_copy) out << "    bias copy " << gemm_line(g) << "\n";
      if (gemm.ones > 0) out << "    ones: " << gemm.ones << " elements\n";
      if (lt_bias) out << "    bias vector: b" << lt_bias->buffer << "+" << lt_bias->offset << "\n";
      break;
    case GpuExternLibrary::CudnnForward:
    case GpuExternLibrary::CudnnBackwardData:
    case GpuExternLibrary::CudnnBackwardFilter:
      out << "    x " << ints(conv.x_sizes) << ints(conv.x_strides) << ", w " << ints(conv.w_sizes) << " "
          << format_name(conv.repack_filter ? other_format(conv.filter) : conv.filter)
          << (conv.repack_filter ? str_cat(" repacked to ", format_name(conv.filter)) : "") << (conv.weight_grad ? " (written), dy " : ", y ") << ints(conv.y_sizes) << ints(conv.y_strides) << "\n";
      out << "    padding " << ints(conv.padding) << " stride " << ints(conv.stride) << " dilation " << ints(conv.dilation)
          << " groups " << conv.groups << "\n";
      if (conv.bias) out << "    bias " << ints(conv.bias_sizes) << ints(conv.bias_strides) << "\n";
      break;
  }
  out << "    workspace: " << workspace_str(workspace_bytes) << "\n";
  return out.str();
}

}  // namespace coil::codegen
