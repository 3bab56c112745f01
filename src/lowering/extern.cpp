// Matrix products and convolution become Extern nodes: library calls on strided views
// of their operands (a transposed weight stays a view). Their bias and elementwise
// consumers stay separate nodes that the scheduler may hand to the library as epilogues.
// matmul and linear become the mm / mv / bmm / addmm calls of their ranks, with their
// operands' batch dims folded (a view where the strides allow, else a contiguous copy).
// Scaled dot-product attention in all its forms becomes one Attention node (no library:
// each dialect generates the fused kernel) over [B, H, L, E] views of its operands.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"
#include "support/int_math.h"

namespace coil::lowering {
namespace {

using ir::Expr;

ir::View view_of(const TensorRef &r) { return ir::View{r.buffer, r.sizes, r.strides, r.offset}; }

/// An extern call writing one buffer of each of `outs` (in the call's order). Its attr
/// reduction_size (the terms each result sums, for the comparison's tolerance) is taken at
/// the sizes compiled for.
std::vector<TensorRef> extern_node(Lowering &l, const std::string &origin, ir::ExternOp op, std::vector<ir::View> operands,
                                   const std::vector<TensorType> &outs, const SymInt &reduction_size,
                                   std::map<std::string, double> scalars = {}) {
  ir::Node node;
  node.kind = ir::NodeKind::Extern;
  node.extern_op = op;
  node.origin = origin;
  node.ranges = outs.at(0).sizes;
  node.operands = std::move(operands);
  node.scalars = std::move(scalars);
  node.attrs["reduction_size"] = {reduction_size.hint()};
  std::vector<TensorRef> results;
  for (const TensorType &out : outs) {
    results.push_back(l.new_buffer(out));  // produced by the node pushed next
    node.outputs.push_back(results.back().buffer);
  }
  l.program().nodes.push_back(std::move(node));
  return results;
}

/// An Extern node writing a new buffer of type `out` from `operands`.
TensorRef extern_node(Lowering &l, const std::string &origin, ir::ExternOp op, std::vector<ir::View> operands,
                      const TensorType &out, const SymInt &reduction_size, std::map<std::string, double> scalars = {}) {
  return extern_node(l, origin, op, std::move(operands), std::vector<TensorType>{out}, reduction_size, std::move(scalars))[0];
}

/// A product's beta and alpha (those the node's op has) in the result's type, as eager
/// converts them: truncated for integers, tested for truth for bool.
std::map<std::string, double> factors(Lowering &l, const Node &n) {
  DType out = l.graph().type(n.outputs[0]).dtype;
  std::map<std::string, double> scalars;
  for (const char *name : {"beta", "alpha"})
    if (n.op->schema.find_arg(name) >= 0) {
      double v = number(arg(n, name));
      scalars[name] = out == DType::Bool ? double(v != 0) : is_integral(out) ? std::trunc(v) : v;
    }
  return scalars;
}

/// The tensors of `n`'s arguments `names`, an empty ref (buffer -1) for a None.
std::vector<TensorRef> operand_refs(Lowering &l, const Node &n, const std::vector<const char *> &names) {
  std::vector<TensorRef> refs;
  for (const char *name : names) {
    const Arg &a = arg(n, name);
    refs.push_back(a.is_none() ? TensorRef{} : l.ref(a.as<ValueId>()));
  }
  return refs;
}

/// An Extern node over the named tensor arguments (absent optional ones kept as -1).
TensorRef extern_call(Lowering &l, const Node &n, ir::ExternOp op, const std::vector<const char *> &operands,
                      int64_t reduction_size) {
  std::vector<ir::View> views;
  for (const TensorRef &r : operand_refs(l, n, operands)) views.push_back(r.buffer < 0 ? ir::View{} : view_of(r));
  return extern_node(l, n.name, op, std::move(views), l.graph().type(n.outputs[0]), reduction_size, factors(l, n));
}

// ---- matmul and linear ------------------------------------------------------------------

/// `r` with a size-1 dim inserted at `dim`.
TensorRef unsqueeze(TensorRef r, size_t dim) {
  SymInt stride = dim < r.sizes.size() ? r.sizes[dim] * r.strides[dim] : SymInt(1);
  r.sizes.insert(r.sizes.begin() + int64_t(dim), 1);
  r.strides.insert(r.strides.begin() + int64_t(dim), stride);
  return r;
}

/// `r` broadcast to `shape` (dims aligned from the right; broadcast dims read stride 0).
TensorRef expand(TensorRef r, const SymShape &shape) {
  while (r.sizes.size() < shape.size()) r = unsqueeze(r, 0);
  for (size_t d = 0; d < shape.size(); ++d)
    if (r.sizes[d] != shape[d]) {
      r.sizes[d] = shape[d];
      r.strides[d] = 0;
    }
  return r;
}

TensorRef reshaped(Lowering &l, const std::string &origin, const TensorRef &r, const SymShape &sizes);

/// `r` (seen with type's sizes) written in `type`'s layout and dtype: a copy unless it has them.
TensorRef laid_out(Lowering &l, const std::string &origin, const TensorRef &r, const TensorType &type) {
  if (r.sizes == type.sizes && r.strides == type.strides && r.offset == 0 && r.dtype == type.dtype) return r;
  TensorRef src = r.sizes == type.sizes ? r : reshaped(l, origin, r, type.sizes);
  return l.pointwise(type, origin, [&](ir::BodyBuilder &b, const std::vector<Expr> &x) {
    return b.load(src.buffer, Lowering::offset(src, x), src.dtype);
  });
}

/// `r` seen with `sizes` (the same elements in row-major order): a view where its strides
/// allow one, else a contiguous copy.
TensorRef reshaped(Lowering &l, const std::string &origin, const TensorRef &r, const SymShape &sizes) {
  if (auto strides = view_strides(r.sizes, r.strides, sizes)) return TensorRef{r.buffer, r.dtype, sizes, *strides, r.offset};
  TensorRef c = laid_out(l, origin, r,
                         TensorType{r.dtype, r.sizes, contiguous_strides(r.sizes), l.program().buffer(r.buffer).type.device});
  return TensorRef{c.buffer, c.dtype, sizes, contiguous_strides(sizes), 0};
}

// ---- aligned rows --------------------------------------------------------------------------
//
// cuBLAS reads and writes a matrix through a leading dimension (the stride between its rows,
// or its columns), and one that is not a multiple of 16 bytes keeps it off its fast kernels:
// on the H200, GPT-2's language-model head, whose logits have rows of 50,257 elements, ran
// its three products in 7.9 ms against Inductor's 1.5 ms, which pads them. Where the option
// extern.align_product_rows says so (auto: bf16 and f16 on the GPU, matrices of 2^20
// elements or more), such an operand is read from a copy with rows padded to 16 bytes, one
// copy per source view shared by the products that read it (the scheduler fuses it into its
// producer where that is a generated kernel), and such a result is written with padded
// rows: its consumers read it through them (the copy in the graph's layout is inlined into
// them), and only where the value leaves the graph or meets a library is that copy stored.

/// The matrix dims (the last two) of `r` as (rows, columns, row stride, column stride).
struct MatrixLayout {
  int64_t rows, cols, row_stride, col_stride;
};
MatrixLayout matrix_layout(const TensorRef &r) {
  size_t n = r.sizes.size();
  return {r.sizes[n - 2], r.sizes[n - 1], r.strides[n - 2], r.strides[n - 1]};
}

/// Whether a product of `type`'s dtype and device on a matrix of `elements` pads its rows.
bool aligns_rows(Lowering &l, DType dtype, const Device &device, int64_t elements) {
  const std::string &mode = l.options().align_product_rows;
  if (mode == "never" || !is_floating(dtype)) return false;
  // auto: bf16 and f16 products on the GPU, whose tensor-core kernels want the alignment;
  // small matrices are not worth a copy.
  return mode == "always" ||
         (device.kind == Device::Kind::CUDA && itemsize(dtype) == 2 && elements >= (int64_t(1) << 20));
}

/// Elements of `dtype` in 16 bytes.
int64_t alignment_of(DType dtype) { return std::max<int64_t>(16 / itemsize(dtype), 1); }

/// Strides of `sizes` in row-major order with the rows (the second-to-last dim's stride)
/// padded to `align` elements.
Shape padded_strides(const Shape &sizes, int64_t align) {
  Shape strides(sizes.size(), 1);
  size_t n = sizes.size();
  if (n >= 2) strides[n - 2] = round_up(sizes[n - 1], align);
  for (size_t d = n - 2; n >= 3 && d-- > 0;) strides[d] = strides[d + 1] * sizes[d + 1];
  return strides;
}

/// `r` with its last two dims swapped (a view).
TensorRef transposed(TensorRef r) {
  size_t n = r.sizes.size();
  std::swap(r.sizes[n - 1], r.sizes[n - 2]);
  std::swap(r.strides[n - 1], r.strides[n - 2]);
  return r;
}

/// A copy of matrix `r` made by `make` from r in its own orientation (`flip`: r transposed,
/// so that its rows run along its unit stride) with `sizes` (r's orientation), given back
/// in r's; one per source view and sizes, shared by the products that read it.
TensorRef oriented_copy(Lowering &l, const TensorRef &r, bool flip, Shape sizes,
                        const std::function<TensorRef(const TensorRef &source, const Shape &sizes)> &make) {
  TensorRef source = flip ? transposed(r) : r;
  if (flip) std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
  Lowering::CopyKey key{source.buffer, source.offset, source.sizes, source.strides, sizes};
  auto &copies = l.aligned_copies();
  auto it = copies.find(key);
  if (it == copies.end()) it = copies.emplace(key, make(source, sizes)).first;
  return flip ? transposed(it->second) : it->second;
}

/// Whether a layout has a symbolic size or stride. Aligned rows and padded dims are planned in
/// integers: such an operand or result is left as it is (right at every size, perhaps on a
/// slower library kernel), rather than have the plan fix the sizes it was compiled for.
bool symbolic_layout(const SymShape &sizes, const SymShape &strides) { return symbolic(sizes) || symbolic(strides); }

/// A product's matrix operand `r` (rank 2, or 3 with a batch stride): itself when its
/// leading dimension is aligned (or it is small, or its layout is not one a library reads
/// directly), else a view of a copy with aligned rows, in r's orientation.
TensorRef aligned_operand(Lowering &l, const std::string &origin, const TensorRef &r) {
  if (r.rank() < 2 || r.rank() > 3 || symbolic_layout(r.sizes, r.strides) || (r.rank() == 3 && r.strides[0] == 0)) return r;
  // Whether rows are aligned at all is decided at the sizes compiled for (see padded_product).
  const Device &device = l.program().buffer(r.buffer).type.device;
  if (!aligns_rows(l, r.dtype, device, checked_numel(hints(r.sizes)))) return r;
  MatrixLayout m = matrix_layout(r);
  int64_t align = alignment_of(r.dtype);
  bool row_major = m.col_stride == 1 || m.cols == 1, col_major = m.row_stride == 1 || m.rows == 1;
  if ((row_major && (m.row_stride % align == 0 || m.rows == 1)) || (col_major && (m.col_stride % align == 0 || m.cols == 1)))
    return r;
  if (!row_major && !col_major) return r;
  return oriented_copy(l, r, !row_major, r.sizes, [&](const TensorRef &source, const Shape &) {
    TensorType padded{source.dtype, source.sizes, padded_strides(source.sizes, align), device};
    return laid_out(l, origin + " (rows aligned)", source, padded);
  });
}

/// A copy of matrix `r` with sizes `padded` (each at least r's), row-major in r's
/// orientation (rows along r's unit stride), the elements past r's sizes zero.
TensorRef zero_padded(Lowering &l, const std::string &origin, const TensorRef &r, const Shape &padded) {
  bool flip = r.rank() == 2 && r.strides[1] != 1 && r.strides[0] == 1;
  return oriented_copy(l, r, flip, padded, [&](const TensorRef &source, const Shape &sizes) {
    const Device &device = l.program().buffer(source.buffer).type.device;
    return l.pointwise(TensorType{source.dtype, sizes, contiguous_strides(sizes), device}, origin,
                       [&](ir::BodyBuilder &b, const std::vector<Expr> &x) {
      int inside = -1;
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d] == source.sizes[d]) continue;
        int ok = b.binary(ir::Op::Lt, b.index(x[d], DType::I64), b.constant(double(source.sizes[d]), DType::I64), DType::Bool);
        inside = inside < 0 ? ok : b.binary(ir::Op::LogicalAnd, inside, ok, DType::Bool);
      }
      if (inside < 0) return b.load(source.buffer, Lowering::offset(source, x), source.dtype);
      int v = b.masked_load(source.buffer, Lowering::offset(source, x), source.dtype, inside, 0);
      return b.where(inside, v, b.constant(0, source.dtype), source.dtype);
    });
  });
}

/// The product node of `views` writing a result of type `padded` (rows padded, perhaps
/// more rows and columns than `out`), given back as `out` by a copy its readers take in
/// (node attr aligned_rows).
TensorRef unpadded_result(Lowering &l, const std::string &origin, ir::ExternOp op, std::vector<ir::View> views,
                          const TensorType &padded, const TensorType &out, int64_t reduction_size,
                          std::map<std::string, double> scalars) {
  TensorRef result = extern_node(l, origin, op, std::move(views), padded, reduction_size, std::move(scalars));
  l.program().nodes.back().attrs["aligned_rows"] = {1};
  return laid_out(l, origin + " (unpadded)", TensorRef{result.buffer, result.dtype, out.sizes, padded.strides, 0}, out);
}

// Padded dims. With rows aligned, a product whose dims are not multiples of 16 bytes still
// runs cuBLAS's slow kernels (on the H100, BERT's language-model head: 0.83 ms where the
// aligned product takes 0.29): a matrix's unit-stride dim must be a multiple too. Such a
// product (mm or addmm) runs on copies padded with zeros to aligned dims (zeros along the
// contracted dim add nothing; padded rows and columns of the result are never read) when its
// arithmetic outweighs the copies: at least kPaddedFlopsPerByte operations per byte copied,
// so a product over few rows (a language model's head at inference, which only reads its
// weight once) keeps its slow kernel rather than copy that weight at every call.
constexpr int64_t kPaddedFlopsPerByte = 400;

/// The mm or addmm of `operands` (bias first for addmm) into `out` on zero-padded copies, or
/// nothing when its dims are aligned, it is not worth the copies, or the option says never.
std::optional<TensorRef> padded_product(Lowering &l, const std::string &origin, ir::ExternOp op,
                                        const std::vector<TensorRef> &operands, const TensorType &out,
                                        const std::map<std::string, double> &scalars) {
  if (op != ir::ExternOp::Mm && op != ir::ExternOp::Addmm) return std::nullopt;
  size_t first = op == ir::ExternOp::Addmm ? 1 : 0;
  const TensorRef &a = operands[first], &b = operands[first + 1];
  if (a.rank() != 2 || b.rank() != 2 || a.buffer < 0 || b.buffer < 0 || symbolic_layout(a.sizes, a.strides) ||
      symbolic_layout(b.sizes, b.strides) || symbolic_layout(out.sizes, out.strides) ||
      out.strides != contiguous_strides(out.sizes))
    return std::nullopt;
  // Whether rows are aligned at all is decided by the sizes (a heuristic: the product is
  // right unaligned); a product of symbolic sizes never gets here.
  int64_t hk = a.sizes[1].hint();
  if (!aligns_rows(l, out.dtype, out.device,
                   std::max({checked_numel(hints(out.sizes)), a.sizes[0].hint() * hk, hk * b.sizes[1].hint()})))
    return std::nullopt;
  int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1], align = alignment_of(out.dtype);
  bool a_col_major = a.strides[0] == 1 && a.strides[1] != 1, b_col_major = b.strides[0] == 1 && b.strides[1] != 1;
  // The dims some matrix walks with unit stride: the result's columns, and each operand's.
  int64_t mp = a_col_major ? round_up(m, align) : m, kp = !a_col_major || b_col_major ? round_up(k, align) : k;
  int64_t np = round_up(n, align);
  if ((mp == m && kp == k && np == n) || m == 0 || k == 0 || n == 0) return std::nullopt;
  const std::string &mode = l.options().align_product_rows;
  int64_t copied = (mp != m || kp != k ? mp * kp : 0) + (kp != k || np != n ? kp * np : 0);
  if (mode != "always" && 2 * m * n * k < kPaddedFlopsPerByte * copied * itemsize(out.dtype)) return std::nullopt;
  std::vector<ir::View> views;
  if (op == ir::ExternOp::Addmm) {
    TensorRef bias = operands[0];
    if (bias.buffer >= 0) {
      Shape padded = bias.sizes;
      if (!padded.empty() && padded.back() == n) padded.back() = np;
      if (padded.size() >= 2 && padded[padded.size() - 2] == m) padded[padded.size() - 2] = mp;
      if (padded != bias.sizes) bias = zero_padded(l, origin + " (bias padded)", bias, padded);
    }
    views.push_back(bias.buffer < 0 ? ir::View{} : view_of(bias));
  }
  auto operand = [&](const TensorRef &r, Shape padded) {
    return view_of(padded == r.sizes ? aligned_operand(l, origin, r) : zero_padded(l, origin + " (padded)", r, padded));
  };
  views.push_back(operand(a, {mp, kp}));
  views.push_back(operand(b, {kp, np}));
  return unpadded_result(l, origin, op, std::move(views), {out.dtype, Shape{mp, np}, contiguous_strides(Shape{mp, np}), out.device},
                         out, kp, scalars);
}

/// A matrix product node (Mm, Bmm, Addmm, Baddbmm, Mv, Addmv) of `operands` into a result
/// of `out`, with aligned rows where they are not (see above): its matrix operands read
/// through aligned copies, its result written with padded rows and given back in `out`'s
/// layout by a copy that its readers take in (node attr aligned_rows).
TensorRef product_node(Lowering &l, const std::string &origin, ir::ExternOp op, std::vector<TensorRef> operands,
                       const TensorType &out, const SymInt &reduction_size, std::map<std::string, double> scalars = {}) {
  if (auto padded = padded_product(l, origin, op, operands, out, scalars)) return *padded;
  bool matrices = op == ir::ExternOp::Mm || op == ir::ExternOp::Bmm || op == ir::ExternOp::Addmm || op == ir::ExternOp::Baddbmm;
  size_t first = op == ir::ExternOp::Addmm || op == ir::ExternOp::Baddbmm ? 1 : 0;  // after the bias
  std::vector<ir::View> views;
  for (size_t i = 0; i < operands.size(); ++i) {
    const TensorRef &r = operands[i];
    bool matrix = matrices && i >= first && r.buffer >= 0;
    views.push_back(r.buffer < 0 ? ir::View{} : view_of(matrix ? aligned_operand(l, origin, r) : r));
  }
  int64_t align = alignment_of(out.dtype);
  bool pad = matrices && out.rank() >= 2 && !symbolic_layout(out.sizes, out.strides) &&
             aligns_rows(l, out.dtype, out.device, checked_numel(hints(out.sizes))) &&
             out.strides.back() == 1 && out.sizes.back() > 1 && int64_t(out.strides[out.strides.size() - 2]) % align != 0 &&
             out.strides == contiguous_strides(out.sizes);
  if (!pad) return extern_node(l, origin, op, std::move(views), out, reduction_size, std::move(scalars));
  return unpadded_result(l, origin, op, std::move(views), {out.dtype, out.sizes, padded_strides(out.sizes, align), out.device},
                         out, reduction_size, std::move(scalars));
}

/// [d0, ..., n, k] as [d0 * ... * n, k].
TensorRef rows_of(Lowering &l, const std::string &origin, const TensorRef &r) {
  SymShape rows(r.sizes.begin(), r.sizes.end() - 1);
  return reshaped(l, origin, r, {checked_numel(rows), r.sizes.back()});
}

/// The product of `a` and `b` as torch.matmul computes it, written contiguous with the
/// result's type `out`; `bias` (broadcast to a row of the result) is added by the library
/// when the product is one addmm.
TensorRef matmul(Lowering &l, const std::string &origin, const TensorRef &a, const TensorRef &b, const TensorType &out,
                 const TensorRef *bias = nullptr) {
  using ir::ExternOp;
  SymInt k = a.sizes.back();
  auto result = [&](const TensorRef &buf) {
    return TensorRef{buf.buffer, buf.dtype, out.sizes, contiguous_strides(out.sizes), 0};
  };
  auto typed = [&](SymShape sizes) { return TensorType{out.dtype, sizes, contiguous_strides(sizes), out.device}; };
  if (b.rank() == 1 && a.rank() >= 2) {  // [..., n, k] @ [k]: one mv over the rows
    TensorRef rows = rows_of(l, origin, a);
    return result(product_node(l, origin, ExternOp::Mv, {rows, b}, typed({rows.sizes[0]}), k));
  }
  if (b.rank() <= 2 && a.rank() != 0) {  // [..., n, k] @ [k, m], and [k] @ [k] or [k, m] as one row
    TensorRef lhs = a.rank() == 1 ? unsqueeze(a, 0) : rows_of(l, origin, a);
    TensorRef rhs = b.rank() == 1 ? unsqueeze(b, 1) : b;
    SymShape shape = {lhs.sizes[0], rhs.sizes[1]};
    if (bias)
      return result(product_node(l, origin, ExternOp::Addmm, {*bias, lhs, rhs}, typed(shape), k,
                                 {{"beta", 1.0}, {"alpha", 1.0}}));
    return result(product_node(l, origin, ExternOp::Mm, {lhs, rhs}, typed(shape), k));
  }
  // Batched: batch dims broadcast and folded into one, then one bmm.
  TensorRef lhs = a.rank() == 1 ? unsqueeze(a, 0) : a, rhs = b.rank() == 1 ? unsqueeze(b, 1) : b;
  SymShape batch = broadcast_shapes(SymShape(lhs.sizes.begin(), lhs.sizes.end() - 2),
                                    SymShape(rhs.sizes.begin(), rhs.sizes.end() - 2));
  SymInt n = lhs.sizes[lhs.sizes.size() - 2], m = rhs.sizes.back(), count = checked_numel(batch);
  auto batched = [&](const TensorRef &r, const SymInt &rows, const SymInt &cols) {
    SymShape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    return reshaped(l, origin, expand(r, full), {count, rows, cols});
  };
  TensorRef x = batched(lhs, n, k), y = batched(rhs, k, m);
  return result(product_node(l, origin, ExternOp::Bmm, {x, y}, typed({count, n, m}), k));
}

/// addbmm(self, batch1 [b, n, k], batch2 [b, k, m]) = beta * self + alpha * sum over the
/// batch of batch1[i] @ batch2[i]: one addmm of batch1 laid out as [n, b * k] (the batch's
/// rows side by side) by batch2 seen as [b * k, m].
std::vector<TensorRef> addbmm(Lowering &l, const Node &n) {
  const TensorRef &self = l.ref(arg(n, "self").as<ValueId>());
  const TensorRef &x = l.ref(arg(n, "batch1").as<ValueId>()), &y = l.ref(arg(n, "batch2").as<ValueId>());
  int64_t batch = x.sizes[0], rows = x.sizes[1], k = x.sizes[2], cols = y.sizes[2];
  TensorRef side_by_side{x.buffer, x.dtype, {rows, batch, k}, {x.strides[1], x.strides[0], x.strides[2]}, x.offset};
  TensorRef lhs = reshaped(l, n.name, side_by_side, {rows, batch * k});
  TensorRef rhs = reshaped(l, n.name, y, {batch * k, cols});
  return {product_node(l, n.name, ir::ExternOp::Addmm, {self, lhs, rhs}, l.graph().type(n.outputs[0]), batch * k,
                       factors(l, n))};
}

std::vector<TensorRef> lower_matmul(Lowering &l, const Node &n) {
  const TensorRef &a = l.ref(arg(n, "self").as<ValueId>()), &b = l.ref(arg(n, "other").as<ValueId>());
  return {matmul(l, n.name, a, b, l.graph().type(n.outputs[0]))};
}

/// linear = input @ weight.T (+ bias): the bias goes into one addmm when it is a row
/// vector and the product one mm; otherwise it is added after the product.
std::vector<TensorRef> lower_linear(Lowering &l, const Node &n) {
  const TensorRef &x = l.ref(arg(n, "input").as<ValueId>());
  TensorRef w = l.ref(arg(n, "weight").as<ValueId>());
  std::reverse(w.sizes.begin(), w.sizes.end());
  std::reverse(w.strides.begin(), w.strides.end());
  const TensorType &out = l.graph().type(n.outputs[0]);
  const Arg &bias_arg = arg(n, "bias");
  if (bias_arg.is_none()) return {matmul(l, n.name, x, w, out)};
  const TensorRef &bias = l.ref(bias_arg.as<ValueId>());
  bool bias_is_row = bias.rank() <= 1 || (bias.rank() == 2 && bias.sizes[0] == 1);
  if (bias_is_row && x.rank() >= 1 && w.rank() == 2) return {matmul(l, n.name, x, w, out, &bias)};
  TensorRef product = matmul(l, n.name, x, w, out);
  DType c = opmath_dtype(out.dtype);
  return {l.pointwise(out, n.name, [&](ir::BodyBuilder &b, const std::vector<ir::Expr> &index) {
    int p = b.cast(Lowering::load_broadcast(b, product, index), c);
    return b.binary(ir::Op::Add, p, b.cast(Lowering::load_broadcast(b, bias, index), c), c);
  })};
}

/// The length of the contracted dim: the last of the first matrix operand.
SymInt inner_size(Lowering &l, const Node &n, const char *name) {
  return l.graph().type(arg(n, name).as<ValueId>()).sizes.back();
}

LowerFn product(ir::ExternOp op, std::vector<const char *> operands, const char *contracted) {
  return [=](Lowering &l, const Node &n) {
    return std::vector<TensorRef>{product_node(l, n.name, op, operand_refs(l, n, operands), l.graph().type(n.outputs[0]),
                                               inner_size(l, n, contracted), factors(l, n))};
  };
}

std::vector<TensorRef> convolution(Lowering &l, const Node &n) {
  bool transposed = arg(n, "transposed").as<bool>();
  const TensorType &w = l.graph().type(arg(n, "weight").as<ValueId>());
  // Each output element sums over one input-channel group times one kernel window.
  int64_t window = transposed ? int64_t(w.sizes[0]) / arg(n, "groups").integer() : int64_t(w.sizes[1]);
  for (size_t d = 2; d < w.sizes.size(); ++d) window *= w.sizes[d];
  TensorRef out = extern_call(l, n, ir::ExternOp::Convolution, {"input", "weight", "bias"}, window);
  ir::Node &node = l.program().nodes.back();
  size_t spatial = w.sizes.size() - 2;
  for (const char *name : {"stride", "padding", "dilation", "output_padding"}) {
    std::vector<int64_t> v = ints_of(arg(n, name));
    if (v.size() == 1) v.assign(spatial, v[0]);
    node.attrs[name] = v;
  }
  node.attrs["groups"] = {arg(n, "groups").integer()};
  node.attrs["transposed"] = {transposed ? 1 : 0};
  return {out};
}

/// convolution_backward of a convolution (not a transposed one): grad_input is the
/// transposed convolution of grad_output by the weight (a library call, output_padding
/// making up the rows the forward's stride dropped); grad_weight, for each weight element,
/// the sum over the batch and output positions of grad_output times the input element it
/// met (on the GPU a library call, cuDNN's backward filter pass; on the CPU a product or a
/// convolution of swapped dims; else a reduction, masked where the window reached into
/// padding); grad_bias, grad_output
/// summed over all dims but the channels. Outputs output_mask leaves out are dead fills.
std::vector<TensorRef> convolution_backward(Lowering &l, const Node &n) {
  const TensorRef &dy = l.ref(arg(n, "grad_output").as<ValueId>()), &x = l.ref(arg(n, "input").as<ValueId>());
  const TensorRef &w = l.ref(arg(n, "weight").as<ValueId>());
  COIL_USER_CHECK(!arg(n, "transposed").as<bool>(), "the backward of a transposed convolution is not supported yet");
  size_t spatial = w.sizes.size() - 2;
  auto param = [&](const char *name) {
    std::vector<int64_t> v = ints_of(arg(n, name));
    if (v.size() == 1) v.assign(spatial, v[0]);
    return v;
  };
  std::vector<int64_t> stride = param("stride"), padding = param("padding"), dilation = param("dilation");
  int64_t groups = arg(n, "groups").integer();
  const ArgList &mask = arg(n, "output_mask").as<ArgList>();
  auto unused = [&](size_t i) { return l.fill(l.graph().type(n.outputs[i]), n.name + " (not asked)"); };
  std::vector<TensorRef> outs;
  if (mask[0].as<bool>()) {
    int64_t window = w.sizes[0] / groups;
    std::vector<int64_t> output_padding;
    for (size_t k = 0; k < spatial; ++k) {
      window *= w.sizes[k + 2];
      int64_t reached = (dy.sizes[k + 2] - 1) * stride[k] - 2 * padding[k] + dilation[k] * (w.sizes[k + 2] - 1) + 1;
      output_padding.push_back(x.sizes[k + 2] - reached);
    }
    outs.push_back(extern_node(l, n.name + " grad_input", ir::ExternOp::Convolution, {view_of(dy), view_of(w), ir::View{}},
                               l.graph().type(n.outputs[0]), window));
    ir::Node &node = l.program().nodes.back();
    node.attrs["stride"] = stride;
    node.attrs["padding"] = padding;
    node.attrs["dilation"] = dilation;
    node.attrs["output_padding"] = output_padding;
    node.attrs["groups"] = {groups};
    node.attrs["transposed"] = {1};
  } else {
    outs.push_back(unused(0));
  }
  DType c = opmath_dtype(dy.dtype);
  using ir::Expr;
  const TensorType &grad_weight = l.graph().type(n.outputs[1]);
  // [N, C, pixels...] (every stride-th of x's, as many as dy has) as [rows, C], where that is a view.
  auto pixel_rows = [&](TensorRef r, bool sampled) -> std::optional<TensorRef> {
    for (size_t k = 0; k < spatial; ++k) {
      if (sampled) r.strides[k + 2] *= stride[k];
      r.sizes[k + 2] = dy.sizes[k + 2];
    }
    channels_innermost(r.sizes, r.strides);
    Shape rows = {checked_numel(Shape(r.sizes.begin(), r.sizes.end() - 1)), r.sizes.back()};
    auto strides = view_strides(r.sizes, r.strides, rows);
    if (!strides) return std::nullopt;
    return TensorRef{r.buffer, r.dtype, rows, *strides, r.offset};
  };
  bool one_by_one = std::all_of(w.sizes.begin() + 2, w.sizes.end(), [](int64_t k) { return k == 1; }) &&
                    std::all_of(padding.begin(), padding.end(), [](int64_t p) { return p == 0; });
  std::optional<TensorRef> xs, dys;
  if (mask[1].as<bool>() && groups == 1 && one_by_one && grad_weight.device.kind == Device::Kind::CPU) {
    xs = pixel_rows(x, true);
    dys = pixel_rows(dy, false);
  }
  if (xs && dys) {
    // A 1x1 window whose pixels are rows of x and dy (channels last at stride 1): dW[o, i] =
    // sum over the batch and output pixels of dY[n, o, y] X[n, i, y], one product dY^T X.
    // As the convolution below, its batch of input channels convolved by a window of every
    // pixel, oneDNN ran it 50x slower (the 256 <- 128 channel one of the tiny ResNet-50's
    // training: 50.7 ms). Other layouts keep that convolution, which copies nothing.
    Shape sizes = {grad_weight.sizes[0], grad_weight.sizes[1]};
    TensorRef made = product_node(l, n.name + " grad_weight", ir::ExternOp::Mm, {transposed(*dys), *xs},
                                  TensorType{grad_weight.dtype, sizes, contiguous_strides(sizes), grad_weight.device},
                                  xs->sizes[0]);
    outs.push_back(laid_out(l, n.name + " grad_weight", reshaped(l, n.name + " grad_weight", made, grad_weight.sizes),
                            grad_weight));
  } else if (mask[1].as<bool>() && grad_weight.device.kind == Device::Kind::CUDA && l.options().conv_weight_grad_call) {
    // On the GPU, the library's backward-filter pass (cuDNN's, as eager's and Inductor's),
    // any window, stride, dilation and groups. It writes dw in the order of x and dy:
    // channels last where both are, else contiguous; laid_out copies it where the graph
    // wants it elsewhere. The test is the plan's (codegen/gpu/extern_plan.cpp).
    bool channels_last = x.sizes[1] > 1 && dy.sizes[1] > 1 && is_channels_innermost_packed(x.sizes, x.strides) &&
                         is_channels_innermost_packed(dy.sizes, dy.strides);
    Shape strides = channels_last ? Shape(channels_last_strides(grad_weight.sizes)) : Shape(contiguous_strides(grad_weight.sizes));
    int64_t positions = dy.sizes[0];
    for (size_t k = 0; k < spatial; ++k) positions *= dy.sizes[k + 2];
    TensorRef made = extern_node(l, n.name + " grad_weight", ir::ExternOp::Convolution, {view_of(x), view_of(dy)},
                                 TensorType{grad_weight.dtype, grad_weight.sizes, strides, grad_weight.device}, positions);
    ir::Node &node = l.program().nodes.back();
    node.attrs["stride"] = stride;
    node.attrs["padding"] = padding;
    node.attrs["dilation"] = dilation;
    node.attrs["output_padding"] = std::vector<int64_t>(spatial, 0);
    node.attrs["groups"] = {groups};
    node.attrs["transposed"] = {0};
    node.attrs["weight_grad"] = {1};
    outs.push_back(laid_out(l, n.name + " grad_weight", made, grad_weight));
  } else if (mask[1].as<bool>() && groups == 1 && grad_weight.device.kind == Device::Kind::CPU) {
    // On the CPU, where oneDNN convolves and a generated reduction over the batch and every
    // output position would not keep up: dW[o, i, k] = sum over n, y of
    // dY[n, o, y] X[n, i, y * stride + k * dilation - padding], a convolution of X seen as
    // [i, n, ...] (the batch as its channels) by dY seen as [o, n, ...] (its weights) with the
    // stride and dilation swapped, whose output [i, o, window...] is dW with its first two
    // dims swapped.
    auto swapped = [](TensorRef r) {
      std::swap(r.sizes[0], r.sizes[1]);
      std::swap(r.strides[0], r.strides[1]);
      return r;
    };
    TensorRef xt = swapped(x), dyt = swapped(dy);
    // The input cut to the positions the convolution reads: past them (a stride's
    // remainder) its output would be wider than the kernel's window.
    for (size_t k = 0; k < spatial; ++k)
      xt.sizes[k + 2] = std::min(xt.sizes[k + 2],
                                 (dy.sizes[k + 2] - 1) * stride[k] + (w.sizes[k + 2] - 1) * dilation[k] + 1 - padding[k]);
    Shape sizes = grad_weight.sizes;
    std::swap(sizes[0], sizes[1]);
    int64_t window = dy.sizes[0];
    for (size_t k = 0; k < spatial; ++k) window *= dy.sizes[k + 2];
    TensorRef made = extern_node(l, n.name + " grad_weight", ir::ExternOp::Convolution,
                                 {view_of(xt), view_of(dyt), ir::View{}},
                                 TensorType{grad_weight.dtype, sizes, contiguous_strides(sizes), grad_weight.device}, window);
    ir::Node &node = l.program().nodes.back();
    node.attrs["stride"] = dilation;
    node.attrs["padding"] = padding;
    node.attrs["dilation"] = stride;
    node.attrs["output_padding"] = std::vector<int64_t>(spatial, 0);
    node.attrs["groups"] = {1};
    node.attrs["transposed"] = {0};
    outs.push_back(laid_out(l, n.name + " grad_weight", swapped(made), grad_weight));
  } else if (mask[1].as<bool>()) {
    Shape reduced = {dy.sizes[0]};
    reduced.insert(reduced.end(), dy.sizes.begin() + 2, dy.sizes.end());
    int64_t per_group_in = w.sizes[1], per_group_out = w.sizes[0] / groups;
    outs.push_back(l.reduction(l.graph().type(n.outputs[1]), reduced, ir::ReduceOp::Sum, n.name + " grad_weight",
                               [&](ir::BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                 // o: (out channel, in channel within the group, kernel position...);
                                 // r: (batch, output position...).
                                 std::vector<Expr> at_dy = {r[0], o[0]}, at_x = {r[0], ir::floor_div(o[0], per_group_out) * per_group_in + o[1]};
                                 int ok = -1;
                                 for (size_t k = 0; k < spatial; ++k) {
                                   at_dy.push_back(r[k + 1]);
                                   Expr pos = r[k + 1] * stride[k] - padding[k] + o[k + 2] * dilation[k];
                                   at_x.push_back(pos);
                                   int p = b.index(pos, DType::I64);
                                   int in = b.binary(ir::Op::LogicalAnd,
                                                     b.binary(ir::Op::Ge, p, b.constant(0, DType::I64), DType::Bool),
                                                     b.binary(ir::Op::Lt, p, b.constant(double(x.sizes[k + 2]), DType::I64), DType::Bool),
                                                     DType::Bool);
                                   ok = ok < 0 ? in : b.binary(ir::Op::LogicalAnd, ok, in, DType::Bool);
                                 }
                                 int g = b.cast(b.load(dy.buffer, Lowering::offset(dy, at_dy), dy.dtype), c);
                                 int v = b.cast(b.masked_load(x.buffer, Lowering::offset(x, at_x), x.dtype, ok, 0), c);
                                 return b.where(ok, b.binary(ir::Op::Mul, g, v, c), b.constant(0, c), c);
                               })[0]);
  } else {
    outs.push_back(unused(1));
  }
  if (mask[2].as<bool>()) {
    Shape reduced = {dy.sizes[0]};
    reduced.insert(reduced.end(), dy.sizes.begin() + 2, dy.sizes.end());
    outs.push_back(l.reduction(l.graph().type(n.outputs[2]), reduced, ir::ReduceOp::Sum, n.name + " grad_bias",
                               [&](ir::BodyBuilder &b, const std::vector<Expr> &o, const std::vector<Expr> &r) {
                                 std::vector<Expr> at = {r[0], o[0]};
                                 at.insert(at.end(), r.begin() + 1, r.end());
                                 return b.cast(b.load(dy.buffer, Lowering::offset(dy, at), dy.dtype), c);
                               })[0]);
  } else {
    outs.push_back(unused(2));
  }
  return outs;
}

// ---- attention --------------------------------------------------------------------------

/// Whether a node or the graph's outputs read `v`.
bool is_read(const Graph &g, ValueId v) {
  for (const Node &n : g.nodes())
    for (ValueId in : g.node_inputs(n))
      if (in == v) return true;
  for (ValueId out : g.outputs())
    if (out == v) return true;
  return false;
}

/// `r` of rank >= 3 as [B, H, rows, cols]: a unit batch dim added to rank 3, the leading
/// dims folded into one past rank 4 (a view where the strides allow, else a copy).
TensorRef as_4d(Lowering &l, const std::string &origin, TensorRef r) {
  if (r.rank() == 3) return unsqueeze(r, 0);
  if (r.rank() == 4) return r;
  SymShape lead(r.sizes.begin(), r.sizes.end() - 3);
  size_t n = r.sizes.size();
  return reshaped(l, origin, r, {checked_numel(lead), r.sizes[n - 3], r.sizes[n - 2], r.sizes[n - 1]});
}

/// Attention's operands as the fused ops and their backward ops name them: query, key and
/// value as [B, H, rows, E] views, the optional mask (broadcastable to the scores
/// [B, H, L, S]), the scale and causality.
struct AttentionOperands {
  TensorRef q, k, v;
  std::optional<TensorRef> mask;
  double scale = 1;
  bool causal = false;

  SymShape scores() const { return {q.sizes[0], q.sizes[1], q.sizes[2], k.sizes[2]}; }
};

AttentionOperands attention_operands(Lowering &l, const Node &n, const char *mask) {
  AttentionOperands at;
  at.q = as_4d(l, n.name, l.ref(arg(n, "query").as<ValueId>()));
  at.k = as_4d(l, n.name, l.ref(arg(n, "key").as<ValueId>()));
  at.v = as_4d(l, n.name, l.ref(arg(n, "value").as<ValueId>()));
  const Arg &scale = arg(n, "scale");
  at.scale = scale.is_none() ? 1.0 / std::sqrt(double(at.q.sizes[3])) : number(scale);
  at.causal = arg(n, "is_causal").as<bool>();
  if (mask && !arg(n, mask).is_none()) {
    const TensorRef &m = l.ref(arg(n, mask).as<ValueId>());
    at.mask = m.rank() > 4 ? as_4d(l, n.name, m) : m;
  }
  double dropout = number(arg(n, "dropout_p"));
  COIL_USER_CHECK(dropout == 0, "dropout_p=", dropout, ": coil compiles attention without dropout");
  return at;
}

// ---- attention's calls ----------------------------------------------------------------------
//
// A forward op is one Attention call (ir::AttentionPart::Forward) whose second output is the
// rows' logsumexp when a training graph reads it; a backward op is one call writing the
// three gradients (Backward), after D = rowsum(dO * out), a reduction of its own. Each
// dialect's fused kernel recomputes the scores block by block and never stores them; the
// gradients recompute the probabilities from the logsumexp.

/// The Attention call computing `part` of `at` from `operands` (q, k, v, and for the
/// gradients dO, the logsumexp and D; the mask is added last) into buffers of `outs`.
std::vector<TensorRef> attention_call(Lowering &l, const std::string &origin, const AttentionOperands &at,
                                      ir::AttentionPart part, std::vector<ir::View> operands,
                                      const std::vector<TensorType> &outs) {
  if (at.mask) operands.push_back(view_of(expand(*at.mask, at.scores())));
  // The most terms a result sums: the forward's over the keys' dot products; the
  // gradients' over the query rows (key side) or the keys (query side).
  auto h = [](const SymInt &s) { return s.hint(); };
  int64_t terms = h(at.k.sizes[2]) * h(at.q.sizes[3]);
  if (part == ir::AttentionPart::Backward)
    terms = std::max(h(at.q.sizes[2]), h(at.k.sizes[2])) * std::max(h(at.q.sizes[3]), h(at.v.sizes[3]));
  std::vector<TensorRef> r =
      extern_node(l, origin, ir::ExternOp::Attention, std::move(operands), outs, terms, {{"scale", at.scale}});
  ir::Node &node = l.program().nodes.back();
  node.attrs["causal"] = {at.causal ? 1 : 0};
  node.attrs["kv_group"] = {at.q.sizes[1] / at.k.sizes[1]};
  node.attrs["part"] = {int64_t(part)};
  return r;
}

/// The buffer an attention result of the graph's `type` is written to: that type when it
/// is [B, H, rows, cols] (`four`), else a contiguous one of `four`, reinterpreted after by
/// as_typed.
TensorType attention_buffer(const TensorType &type, const SymShape &four) {
  return type.rank() == 4 ? type : TensorType{type.dtype, four, contiguous_strides(four), type.device};
}

/// A result `r` written through attention_buffer(type, ...), as the graph types it.
TensorRef as_typed(TensorRef r, const TensorType &type) {
  if (type.rank() != 4) r = TensorRef{r.buffer, type.dtype, type.sizes, contiguous_strides(type.sizes), 0};
  return r;
}

/// The logsumexp `lse` ([B, H, L] in the accumulator's type, as the kernels write it) as
/// the graph types the op's output: itself, or rows padded (the memory-efficient op's,
/// padding 0) or [B, H, L, 1] through a copy.
TensorRef logsumexp_as(Lowering &l, const std::string &origin, const TensorRef &lse, const TensorType &type) {
  if (type.sizes == lse.sizes && type.strides == lse.strides && type.dtype == lse.dtype) return lse;  // in place
  const SymShape &rows = lse.sizes;
  return l.pointwise(type, origin + " logsumexp", [&](ir::BodyBuilder &b, const std::vector<Expr> &x) {
    Expr at_row = Lowering::offset(lse, {x[0], x[1], x[2]});
    if (type.sizes[2] == rows[2]) return b.cast(b.load(lse.buffer, at_row, lse.dtype), type.dtype);
    int in = b.binary(ir::Op::Lt, b.index(x[2], DType::I64), size_value(b, rows[2], DType::I64), DType::Bool);
    return b.cast(b.masked_load(lse.buffer, at_row, lse.dtype, in, 0), type.dtype);
  });
}

/// The backward ops of attention: (grad_query, grad_key, grad_value[, grad_bias, which
/// coil does not compute]). `mask` and `grad_name` name the op's mask and incoming gradient.
LowerFn attention_backward(const char *mask, const char *grad_name) {
  return [=](Lowering &l, const Node &n) {
    const Graph &g = l.graph();
    AttentionOperands at = attention_operands(l, n, mask);
    COIL_USER_CHECK(at.k.sizes[1] == at.q.sizes[1], "key and value have ", at.k.sizes[1], " heads, query ",
                    at.q.sizes[1], ": the backward op takes equal heads");
    if (n.outputs.size() > 3)
      COIL_USER_CHECK(!arg(n, "grad_input_mask").as<ArgList>().at(3).as<bool>() || !is_read(g, n.outputs[3]),
                      "the gradient of attn_bias is asked for; coil computes those of query, key and value");
    const std::string &o = n.name;
    const DType f = opmath_dtype(at.q.dtype);
    TensorRef dy = as_4d(l, o, l.ref(arg(n, grad_name).as<ValueId>()));
    TensorRef out = as_4d(l, o, l.ref(arg(n, "out").as<ValueId>()));
    // The logsumexp as [B, H, L]: the op's rows (padded or not), or [B, H, L, 1].
    TensorRef lse = l.ref(arg(n, "logsumexp").as<ValueId>());
    lse.sizes = {at.q.sizes[0], at.q.sizes[1], at.q.sizes[2]};
    lse.strides.resize(3);
    SymShape rows = lse.sizes;
    Device device = g.type(n.outputs[0]).device;
    // The kernels read dO in the operands' dtype and the logsumexp in the accumulator's.
    if (dy.dtype != at.q.dtype) dy = laid_out(l, o, dy, TensorType{at.q.dtype, dy.sizes, contiguous_strides(dy.sizes), device});
    if (lse.dtype != f) lse = laid_out(l, o, lse, TensorType{f, rows, contiguous_strides(rows), device});
    TensorRef d = l.reduction(TensorType{f, rows, contiguous_strides(rows), device}, {dy.sizes[3]}, ir::ReduceOp::Sum,
                              o + " rowsum(grad_out * out)",
                              [&](ir::BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                std::vector<Expr> at_x = {x[0], x[1], x[2], r[0]};
                                int a = b.cast(b.load(dy.buffer, Lowering::offset(dy, at_x), dy.dtype), f);
                                int c = b.cast(b.load(out.buffer, Lowering::offset(out, at_x), out.dtype), f);
                                return b.binary(ir::Op::Mul, a, c, f);
                              })[0];
    std::vector<ir::View> operands = {view_of(at.q), view_of(at.k), view_of(at.v), view_of(dy), view_of(lse), view_of(d)};
    const TensorRef *like[] = {&at.q, &at.k, &at.v};
    std::vector<TensorType> buffers;
    for (size_t i = 0; i < 3; ++i) buffers.push_back(attention_buffer(g.type(n.outputs[i]), like[i]->sizes));
    std::vector<TensorRef> grads = attention_call(l, o + " gradients", at, ir::AttentionPart::Backward, operands, buffers);
    for (size_t i = 0; i < 3; ++i) grads[i] = as_typed(grads[i], g.type(n.outputs[i]));
    if (n.outputs.size() > 3) grads.push_back(l.fill(g.type(n.outputs[3]), o + " (not asked)"));
    return grads;
  };
}

/// scaled_dot_product_attention and the fused ops it dispatches to. `mask` names the
/// optional mask argument (nullptr: the op takes none), `gqa` whether the op has an
/// enable_gqa flag (the fused ops take equal heads only). Of the fused ops' other outputs,
/// logsumexp is computed when a graph reads it, by the same call as the output; the rest
/// (sequence offsets, random state, debug mask) are zeros, which is what an attention
/// without dropout leaves in them for its backward op.
LowerFn attention(const char *mask, bool gqa) {
  return [=](Lowering &l, const Node &n) {
    const Graph &g = l.graph();
    AttentionOperands at = attention_operands(l, n, mask);
    const TensorRef &q = at.q, &k = at.k, &v = at.v;
    bool grouped = gqa && arg(n, "enable_gqa").as<bool>();
    COIL_USER_CHECK(k.sizes[1] == q.sizes[1] || grouped, "key and value have ", k.sizes[1], " heads, query ", q.sizes[1],
                    (gqa ? " (enable_gqa=True shares each key/value head among query heads)" : ""));
    // The output as the graph types it, written through a [B, H, L, Ev] view of its
    // buffer; the rows' logsumexp beside it when the graph reads it.
    const TensorType &type = g.type(n.outputs[0]);
    std::vector<TensorType> buffers = {attention_buffer(type, {q.sizes[0], q.sizes[1], q.sizes[2], v.sizes[3]})};
    bool lse = n.outputs.size() > 1 && is_read(g, n.outputs[1]);
    SymShape rows = {q.sizes[0], q.sizes[1], q.sizes[2]};
    if (lse) {
      // The kernels write the logsumexp in place where the graph's is [B, H, L] in the
      // accumulator's type, whatever its strides.
      const TensorType &graph_lse = g.type(n.outputs[1]);
      DType acc = opmath_dtype(q.dtype);
      bool in_place = graph_lse.sizes == rows && graph_lse.dtype == acc;
      buffers.push_back(in_place ? graph_lse : TensorType{acc, rows, contiguous_strides(rows), type.device});
    }
    std::vector<TensorRef> results =
        attention_call(l, n.name, at, ir::AttentionPart::Forward, {view_of(q), view_of(k), view_of(v)}, buffers);
    std::vector<TensorRef> outs = {as_typed(results[0], type)};
    if (lse) outs.push_back(logsumexp_as(l, n.name, results[1], g.type(n.outputs[1])));
    for (size_t i = outs.size(); i < n.outputs.size(); ++i) {
      // Zeros; the scheduler drops those nothing reads.
      outs.push_back(l.fill(g.type(n.outputs[i]), n.name));
    }
    return outs;
  };
}

}  // namespace

void add_extern_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.mm.default"] = product(ir::ExternOp::Mm, {"self", "mat2"}, "self");
  t["aten.bmm.default"] = product(ir::ExternOp::Bmm, {"self", "mat2"}, "self");
  t["aten.mv.default"] = product(ir::ExternOp::Mv, {"self", "vec"}, "self");
  t["aten.addmm.default"] = product(ir::ExternOp::Addmm, {"self", "mat1", "mat2"}, "mat1");
  t["aten.baddbmm.default"] = product(ir::ExternOp::Baddbmm, {"self", "batch1", "batch2"}, "batch1");
  t["aten.addmv.default"] = product(ir::ExternOp::Addmv, {"self", "mat", "vec"}, "mat");
  t["aten.addbmm.default"] = addbmm;
  t["aten.convolution.default"] = convolution;
  t["aten.convolution_backward.default"] = convolution_backward;
  t["aten.matmul.default"] = lower_matmul;
  t["aten.linear.default"] = lower_linear;
  t["aten.scaled_dot_product_attention.default"] = attention("attn_mask", true);
  t["aten._scaled_dot_product_flash_attention.default"] = attention(nullptr, false);
  t["aten._scaled_dot_product_efficient_attention.default"] = attention("attn_bias", false);
  t["aten._scaled_dot_product_cudnn_attention.default"] = attention("attn_bias", false);
  t["aten._scaled_dot_product_flash_attention_for_cpu.default"] = attention("attn_mask", false);
  t["aten._scaled_dot_product_flash_attention_for_cpu_backward.default"] = attention_backward("attn_mask", "grad_out");
  t["aten._scaled_dot_product_flash_attention_backward.default"] = attention_backward(nullptr, "grad_out");
  t["aten._scaled_dot_product_efficient_attention_backward.default"] = attention_backward("attn_bias", "grad_out_");
  t["aten._scaled_dot_product_cudnn_attention_backward.default"] = attention_backward("attn_bias", "grad_out");
}

}  // namespace coil::lowering
