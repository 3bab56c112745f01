// Reductions over any set of dims: one Reduction node reading the input with x vars on
// the kept dims and r vars on the reduced ones; mean and var add a pointwise epilogue.
#include <cmath>

#include "graph/meta/common.h"
#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;
using ir::ReduceOp;

/// Which dims of the input a node reduces, and whether it keeps them.
struct Reduced {
  std::vector<bool> dims;
  bool keepdim = false;
  SymShape sizes;  // sizes of the reduced dims, in order
};

Reduced reduced_of(const TensorRef &in, const Node &n) {
  Reduced r;
  int dim = n.op->schema.find_arg("dim");
  std::optional<std::vector<int64_t>> dims;
  if (dim >= 0 && !n.args[size_t(dim)].is_none()) {
    const Arg &a = n.args[size_t(dim)];
    dims = a.is_int() ? std::vector<int64_t>{a.integer()} : std::vector<int64_t>{};
    if (a.is<ArgList>())
      for (const Arg &d : a.as<ArgList>()) dims->push_back(d.integer());
  }
  r.dims = meta::reduced_dims(dims, in.rank());
  int keep = n.op->schema.find_arg("keepdim");
  r.keepdim = keep >= 0 && n.args[size_t(keep)].as<bool>();
  for (size_t d = 0; d < r.dims.size(); ++d)
    if (r.dims[d]) r.sizes.push_back(in.sizes[d]);
  return r;
}

/// The input's index for output index `x` and reduction index `r`.
std::vector<Expr> input_index(const TensorRef &in, const Reduced &red, const std::vector<Expr> &x,
                              const std::vector<Expr> &r) {
  std::vector<Expr> index;
  size_t xi = 0, ri = 0;
  for (size_t d = 0; d < red.dims.size(); ++d) {
    if (red.dims[d]) {
      index.push_back(r[ri++]);
      if (red.keepdim) ++xi;
    } else {
      index.push_back(x[xi++]);
    }
  }
  return index;
}

/// A reduction of `in` to the type of `out_value`, the values read as `acc` dtype.
std::vector<TensorRef> reduce(Lowering &l, const Node &n, const TensorRef &in, const Reduced &red, ReduceOp op,
                              const TensorType &out, DType acc) {
  return l.reduction(out, red.sizes, op, n.name,
                     [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                       int v = b.load(in.buffer, Lowering::offset(in, input_index(in, red, x, r)), in.dtype);
                       return b.cast(v, acc);
                     });
}

const TensorRef &self(Lowering &l, const Node &n) { return l.ref(arg(n, "self").as<ValueId>()); }

/// sum, prod, amax, amin, max, min, any, all: the result dtype accumulates (f16 and
/// bf16 in f32).
LowerFn simple(ReduceOp op) {
  return [=](Lowering &l, const Node &n) {
    const TensorRef &in = self(l, n);
    const TensorType &out = l.graph().type(n.outputs[0]);
    DType acc = op == ReduceOp::Any || op == ReduceOp::All ? in.dtype : opmath_dtype(out.dtype);
    return reduce(l, n, in, reduced_of(in, n), op, out, acc);
  };
}

/// count = the number of reduced elements; `fn` turns the reduction into the result.
TensorRef epilogue(Lowering &l, const Node &n, size_t output, const std::vector<TensorRef> &parts,
                   const std::function<int(BodyBuilder &, const std::vector<int> &, DType)> &fn) {
  const TensorType &out = l.graph().type(n.outputs[output]);
  DType c = opmath_dtype(out.dtype);
  return l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    std::vector<int> vals;
    for (const TensorRef &p : parts) vals.push_back(b.cast(b.load(p.buffer, Lowering::offset(p, index), p.dtype), c));
    return fn(b, vals, c);
  });
}

SymInt count_of(const Reduced &red) {
  SymInt n = 1;
  for (const SymInt &s : red.sizes) n *= s;
  return n;
}

std::vector<TensorRef> mean(Lowering &l, const Node &n) {
  const TensorRef &in = self(l, n);
  Reduced red = reduced_of(in, n);
  TensorType out = l.graph().type(n.outputs[0]);
  TensorType acc_type = out;
  acc_type.dtype = opmath_dtype(out.dtype);
  auto sum = reduce(l, n, in, red, ReduceOp::Sum, acc_type, acc_type.dtype);
  SymInt count = count_of(red);
  return {epilogue(l, n, 0, sum, [&](BodyBuilder &b, const std::vector<int> &v, DType c) {
    return b.binary(Op::TrueDiv, v[0], size_value(b, count, c), c);
  })};
}

/// var = m2 / max(count - correction, 0), from a Welford reduction.
int variance(BodyBuilder &b, int m2, int count, double correction, DType c) {
  int dof = b.binary(Op::Sub, count, b.constant(correction, c), c);
  dof = b.binary(Op::Maximum, dof, b.constant(0, c), c);
  return b.binary(Op::TrueDiv, m2, dof, c);
}

double correction_of(const Node &n) {
  if (n.op->schema.find_arg("unbiased") >= 0) return arg(n, "unbiased").as<bool>() ? 1 : 0;
  const Arg &a = arg(n, "correction");
  if (a.is_none()) return 1;
  return a.is<double>() ? a.as<double>() : double(a.integer());
}

std::vector<TensorRef> var_mean(Lowering &l, const Node &n, bool with_mean, bool root = false) {
  const TensorRef &in = self(l, n);
  Reduced red = reduced_of(in, n);
  TensorType stats = l.graph().type(n.outputs[0]);
  stats.dtype = opmath_dtype(stats.dtype);
  auto w = reduce(l, n, in, red, ReduceOp::Welford, stats, stats.dtype);
  double correction = correction_of(n);
  std::vector<TensorRef> out = {epilogue(l, n, 0, {w[1], w[2]}, [&](BodyBuilder &b, const std::vector<int> &v, DType c) {
    int var = variance(b, v[0], v[1], correction, c);
    return root ? b.unary(Op::Sqrt, var, c) : var;
  })};
  if (with_mean)
    out.push_back(epilogue(l, n, 1, {w[0]}, [](BodyBuilder &, const std::vector<int> &v, DType) { return v[0]; }));
  return out;
}

/// logsumexp = m + log(sum(exp(x - m))), m the row's max taken as 0 where it is infinite (as
/// eager takes it: a row of -inf gives -inf, a row holding +inf gives +inf, NaN gives NaN).
std::vector<TensorRef> logsumexp(Lowering &l, const Node &n) {
  const TensorRef &in = self(l, n);
  Reduced red = reduced_of(in, n);
  TensorType acc = l.graph().type(n.outputs[0]);
  DType c = acc.dtype = opmath_dtype(acc.dtype);
  TensorRef max = reduce(l, n, in, red, ReduceOp::Max, acc, c)[0];
  auto finite = [](BodyBuilder &b, int m, DType t) {
    return b.where(b.unary(Op::IsInf, m, DType::Bool), b.constant(0, t), m, t);
  };
  TensorRef sum = l.reduction(acc, red.sizes, ReduceOp::Sum, n.name,
                              [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                int v = b.load(in.buffer, Lowering::offset(in, input_index(in, red, x, r)), in.dtype);
                                int m = b.load(max.buffer, Lowering::offset(max, x), max.dtype);
                                return b.unary(Op::Exp, b.binary(Op::Sub, b.cast(v, c), finite(b, m, c), c), c);
                              })[0];
  return {epilogue(l, n, 0, {max, sum}, [&](BodyBuilder &b, const std::vector<int> &v, DType t) {
    return b.binary(Op::Add, b.unary(Op::Log, v[1], t), finite(b, v[0], t), t);
  })};
}

/// max.dim / min.dim: (values, indices), two reductions over the same rows.
LowerFn value_and_index(ReduceOp value_op, ReduceOp index_op) {
  return [=](Lowering &l, const Node &n) {
    const TensorRef &in = self(l, n);
    Reduced red = reduced_of(in, n);
    auto values = reduce(l, n, in, red, value_op, l.graph().type(n.outputs[0]), in.dtype);
    auto indices = reduce(l, n, in, red, index_op, l.graph().type(n.outputs[1]), in.dtype);
    return std::vector<TensorRef>{values[0], indices[0]};
  };
}

/// argmax/argmin: the index along `dim`, or in the flattened tensor when dim is None.
LowerFn arg_reduction(ReduceOp op) {
  return [=](Lowering &l, const Node &n) {
    const TensorRef &in = self(l, n);
    return reduce(l, n, in, reduced_of(in, n), op, l.graph().type(n.outputs[0]), in.dtype);
  };
}

/// A p-norm (linalg_vector_norm, cdist, pdist) of values v, in dtype c:
///   inf: max |v|    -inf: min |v|    0: sum (v != 0)    1: sum |v|
///   2: sqrt(sum v * v)    p: sum(|v|^p)^(1/p)
/// NaN propagates through every order, as in eager (amax/amin propagate it too).
struct PNorm {
  double ord;
  ReduceOp op() const { return std::isinf(ord) ? (ord > 0 ? ReduceOp::Max : ReduceOp::Min) : ReduceOp::Sum; }
  bool root() const { return ord != 0 && ord != 1 && !std::isinf(ord); }
  /// What the reduction combines for one value.
  int term(BodyBuilder &b, int v, DType c) const {
    if (ord == 0) return b.cast(b.binary(Op::Ne, v, b.constant(0, c), DType::Bool), c);
    if (ord == 2) return b.binary(Op::Mul, v, v, c);
    int magnitude = b.unary(Op::Abs, v, c);
    if (ord == 1 || std::isinf(ord)) return magnitude;
    return b.binary(Op::Pow, magnitude, b.constant(ord, c), c);
  }
  /// The norm from the combined terms.
  int finish(BodyBuilder &b, int total, DType c) const {
    if (!root()) return total;
    if (ord == 2) return b.unary(Op::Sqrt, total, c);
    return b.binary(Op::Pow, total, b.constant(1.0 / ord, c), c);
  }
};

/// linalg_vector_norm over the reduced dims, in the result's dtype (f16 and bf16 in f32).
std::vector<TensorRef> vector_norm(Lowering &l, const Node &n) {
  const TensorRef &in = self(l, n);
  Reduced red = reduced_of(in, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  PNorm norm{number(arg(n, "ord"))};
  TensorType acc = out;
  acc.dtype = opmath_dtype(out.dtype);
  auto parts = l.reduction(acc, red.sizes, norm.op(), n.name,
                           [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                             DType c = acc.dtype;
                             int v = b.load(in.buffer, Lowering::offset(in, input_index(in, red, x, r)), in.dtype);
                             return norm.term(b, b.cast(b.cast(v, out.dtype), c), c);
                           });
  if (!norm.root() && acc.dtype == out.dtype) return parts;
  return {epilogue(l, n, 0, parts, [&](BodyBuilder &b, const std::vector<int> &v, DType c) { return norm.finish(b, v[0], c); })};
}

/// _cdist_forward(x1 [B.., P, M], x2 [B.., R, M], p): the p-norm distance of every row of x1
/// to every row of x2, batch dims broadcast, computed directly (eager's matrix-product form
/// for p = 2 trades accuracy for speed on large inputs; compute_mode is not followed).
std::vector<TensorRef> cdist(Lowering &l, const Node &n) {
  const TensorRef &x1 = l.ref(arg(n, "x1").as<ValueId>()), &x2 = l.ref(arg(n, "x2").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  PNorm norm{number(arg(n, "p"))};
  DType c = opmath_dtype(out.dtype);
  TensorType acc{c, out.sizes, contiguous_strides(out.sizes), out.device};
  size_t batch = out.sizes.size() - 2;
  TensorRef total = l.reduction(acc, {x1.sizes.back()}, norm.op(), n.name + " terms",
                                [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                  std::vector<Expr> at1(x.begin(), x.begin() + long(batch)), at2 = at1;
                                  at1.insert(at1.end(), {x[batch], r[0]});
                                  at2.insert(at2.end(), {x[batch + 1], r[0]});
                                  int a = b.cast(Lowering::load_broadcast(b, x1, at1), c);
                                  int d = b.binary(Op::Sub, a, b.cast(Lowering::load_broadcast(b, x2, at2), c), c);
                                  return norm.term(b, d, c);
                                })[0];
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return norm.finish(b, b.load(total.buffer, Lowering::offset(total, x), c), c);
  })};
}

/// _pdist_forward(x [N, M], p): the distances of rows i < j, pair k in row-major order. Row
/// i's pairs start at s(i) = i (2N - i - 1) / 2, so the pair's row is the number of rows
/// i >= 1 with s(i) <= k (a reduction over the rows), and j = k - s(i) + i + 1.
std::vector<TensorRef> pdist(Lowering &l, const Node &n) {
  const TensorRef &x = self(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  PNorm norm{number(arg(n, "p"))};
  DType c = opmath_dtype(out.dtype);
  int64_t rows = x.sizes[0], pairs = out.sizes[0];
  auto i64 = [](BodyBuilder &b, int64_t v) { return b.constant(double(v), DType::I64); };
  auto start = [&](BodyBuilder &b, int i) {  // s(i), in integers
    int twice = b.binary(Op::Mul, i, b.binary(Op::Sub, i64(b, 2 * rows - 1), i, DType::I64), DType::I64);
    return b.binary(Op::FloorDiv, twice, i64(b, 2), DType::I64);
  };
  TensorType row_type{DType::I64, {pairs}, {1}, out.device};
  TensorRef row = l.reduction(row_type, {std::max<int64_t>(rows - 1, 0)}, ReduceOp::Sum, n.name + " rows",
                              [&](BodyBuilder &b, const std::vector<Expr> &k, const std::vector<Expr> &r) {
                                int i = b.index(r[0] + 1, DType::I64);
                                return b.cast(b.binary(Op::Le, start(b, i), b.index(k[0], DType::I64), DType::Bool),
                                              DType::I64);
                              })[0];
  TensorType acc{c, out.sizes, {1}, out.device};
  TensorRef total = l.reduction(acc, {x.sizes[1]}, norm.op(), n.name + " terms",
                                [&](BodyBuilder &b, const std::vector<Expr> &k, const std::vector<Expr> &r) {
                                  int i = b.load(row.buffer, k[0], DType::I64);
                                  int j = b.binary(Op::Add, b.binary(Op::Sub, b.index(k[0], DType::I64), start(b, i), DType::I64),
                                                   b.binary(Op::Add, i, i64(b, 1), DType::I64), DType::I64);
                                  std::vector<Expr> at = {Expr(ir::indirect_var(0)), r[0]};
                                  int a = b.cast(b.indirect_load(x.buffer, Lowering::offset(x, at), x.dtype, {i}), c);
                                  int other = b.cast(b.indirect_load(x.buffer, Lowering::offset(x, at), x.dtype, {j}), c);
                                  return norm.term(b, b.binary(Op::Sub, a, other, c), c);
                                })[0];
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &k) {
    return norm.finish(b, b.load(total.buffer, k[0], c), c);
  })};
}

/// cumsum, cumprod, logcumsumexp: a Scan node along `dim`, combining in the result's dtype
/// (f16 and bf16 in f32).
std::vector<TensorRef> scan(Lowering &l, const Node &n, ir::ScanOp op) {
  const TensorRef &in = self(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  if (in.rank() == 0)  // the prefix of one element is the element
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      return Lowering::load_broadcast(b, in, index);
    })};
  int dim = int(wrap_dim(arg(n, "dim").integer(), in.rank()));
  return {l.scan(out, dim, op, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
    return b.cast(b.load(in.buffer, Lowering::offset(in, index), in.dtype), opmath_dtype(out.dtype));
  })};
}

/// cummax, cummin: the running extremum (a Max or Min scan; a NaN stays once seen) and, as
/// eager, the position of its last occurrence (of the last NaN after one): a Max scan of
/// the positions whose element reaches the running extremum of its own prefix.
std::vector<TensorRef> running_extremum(Lowering &l, const Node &n, bool max) {
  const TensorRef &in = self(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]), &positions = l.graph().type(n.outputs[1]);
  if (in.rank() == 0)
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) { return Lowering::load_broadcast(b, in, x); }),
            l.fill(positions, n.name + " indices")};
  int dim = int(wrap_dim(arg(n, "dim").integer(), in.rank()));
  DType c = opmath_dtype(out.dtype);
  ir::ScanOp op = max ? ir::ScanOp::Max : ir::ScanOp::Min;
  TensorRef values = l.scan(out, dim, op, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.cast(b.load(in.buffer, Lowering::offset(in, x), in.dtype), c);
  });
  TensorRef indices = l.scan(positions, dim, ir::ScanOp::Max, n.name + " indices", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = b.cast(b.load(in.buffer, Lowering::offset(in, x), in.dtype), c);
    int running = b.cast(b.load(values.buffer, Lowering::offset(values, x), out.dtype), c);
    int reaches = b.binary(max ? Op::Ge : Op::Le, v, running, DType::Bool);
    if (is_floating(c)) reaches = b.binary(Op::LogicalOr, reaches, b.unary(Op::IsNan, v, DType::Bool), DType::Bool);
    return b.where(reaches, b.index(x[size_t(dim)], DType::I64), b.constant(-1, DType::I64), DType::I64);
  });
  return {values, indices};
}

/// _trilinear: the three operands' product summed over sumdim, each operand read at the
/// product's index without its expand dims (a dim it broadcasts at 0), accumulated in the
/// result's dtype (f16 and bf16 in f32; integers wrap). No sumdim: a pointwise product.
std::vector<TensorRef> trilinear(Lowering &l, const Node &n) {
  const TensorType &out = l.graph().type(n.outputs[0]);
  const char *names[] = {"i1", "i2", "i3"}, *expands[] = {"expand1", "expand2", "expand3"};
  int64_t rank = tensor_arg(l, n, "i1").rank() + int64_t(ints_of(arg(n, "expand1")).size());
  std::vector<TensorRef> ins;
  std::vector<Shape> shapes;               // each operand at the product's rank
  std::vector<std::vector<bool>> added;    // its expand dims
  for (int k = 0; k < 3; ++k) {
    ins.push_back(tensor_arg(l, n, names[k]));
    std::vector<int64_t> expand = ints_of(arg(n, expands[k]));
    shapes.push_back(meta::trilinear_operand(ins.back().sizes, expand, rank, "_trilinear"));
    added.emplace_back(size_t(rank), false);
    for (int64_t d : expand) added.back()[size_t(d)] = true;
  }
  std::vector<bool> summed(size_t(rank), false);
  for (int64_t d : ints_of(arg(n, "sumdim"))) summed[size_t(wrap_dim(d, rank))] = true;
  Shape reduced;
  for (int64_t d = 0; d < rank; ++d)
    if (summed[size_t(d)]) reduced.push_back(std::max({shapes[0][size_t(d)], shapes[1][size_t(d)], shapes[2][size_t(d)]}));
  DType c = opmath_dtype(out.dtype);
  auto product = [&](BodyBuilder &b, const std::vector<Expr> &kept, const std::vector<Expr> &r) {
    std::vector<Expr> at;
    for (size_t d = 0, next_kept = 0, next_r = 0; d < size_t(rank); ++d) at.push_back(summed[d] ? r[next_r++] : kept[next_kept++]);
    int v = -1;
    for (size_t k = 0; k < 3; ++k) {
      std::vector<Expr> own;
      for (size_t d = 0; d < size_t(rank); ++d)
        if (!added[k][d]) own.push_back(shapes[k][d] == 1 ? Expr(0) : at[d]);
      int x = b.cast(b.load(ins[k].buffer, Lowering::offset(ins[k], own), ins[k].dtype), c);
      v = v < 0 ? x : b.binary(Op::Mul, v, x, c);
    }
    return v;
  };
  if (reduced.empty())
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) { return b.cast(product(b, x, {}), out.dtype); })};
  return {l.reduction(out, reduced, ReduceOp::Sum, n.name, product)[0]};
}


// segment_reduce(data, reduce, lengths | offsets, axis, initial): output [outer..., s,
// inner...] reduces data[outer..., r, inner...] over the r of segment s, [start, end): the
// offsets there, or the lengths' prefix sum (a reduction over the lengths before s). One
// reduction over all of dim `axis`, masked to the segment, gives the combine in opmath; an
// epilogue folds in `initial` (the value of an empty segment; without it the combine's
// identity, and mean's 0 / 0, NaN) and divides mean by the segment's length.
std::vector<TensorRef> segment_reduce(Lowering &l, const Node &n) {
  const TensorRef &data = tensor_arg(l, n, "data");
  const TensorType &out = l.graph().type(n.outputs[0]);
  std::string kind = arg(n, "reduce").as<std::string>();
  bool by_lengths = !arg(n, "lengths").is_none();
  const TensorRef &given = tensor_arg(l, n, by_lengths ? "lengths" : "offsets");
  size_t axis = size_t(given.rank() - 1);
  int64_t segments = out.sizes[axis];
  if (out.numel() == 0) return {l.fill(out, n.name)};
  DType acc = opmath_dtype(out.dtype);
  auto i64 = [](BodyBuilder &b, double v) { return b.constant(v, DType::I64); };
  // The segment of output index x, as a prefix of x: [outer..., s].
  auto segment_of = [&](const std::vector<Expr> &x) { return std::vector<Expr>(x.begin(), x.begin() + long(axis) + 1); };
  std::optional<TensorRef> starts;
  if (by_lengths) {
    TensorType starts_type{DType::I64, given.sizes, contiguous_strides(given.sizes), out.device};
    starts = l.reduction(starts_type, {segments}, ReduceOp::Sum, n.name + " starts",
                         [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                           std::vector<Expr> at = x;
                           at.back() = r[0];
                           int before = b.binary(Op::Lt, b.index(r[0], DType::I64), b.index(x.back(), DType::I64),
                                                 DType::Bool);
                           int length = b.cast(b.load(given.buffer, Lowering::offset(given, at), given.dtype), DType::I64);
                           return b.where(before, length, i64(b, 0), DType::I64);
                         })[0];
  }
  // The segment's bounds [start, end) for output index x.
  auto bounds = [&](BodyBuilder &b, const std::vector<Expr> &x) {
    std::vector<Expr> at = segment_of(x);
    auto read = [&](const TensorRef &t, const std::vector<Expr> &i) {
      return b.cast(b.load(t.buffer, Lowering::offset(t, i), t.dtype), DType::I64);
    };
    if (by_lengths) {
      int start = read(*starts, at);
      return std::pair{start, b.binary(Op::Add, start, read(given, at), DType::I64)};
    }
    std::vector<Expr> next = at;
    next.back() = next.back() + 1;
    return std::pair{read(given, at), read(given, next)};
  };
  struct Combine {
    ReduceOp reduce;
    Op op;
    double identity;
  };
  static const std::map<std::string, Combine, std::less<>> kinds = {
      {"sum", {ReduceOp::Sum, Op::Add, 0}},          {"mean", {ReduceOp::Sum, Op::Add, 0}},
      {"prod", {ReduceOp::Prod, Op::Mul, 1}},        {"max", {ReduceOp::Max, Op::Maximum, -INFINITY}},
      {"min", {ReduceOp::Min, Op::Minimum, INFINITY}}};
  const Combine &c = kinds.at(kind);
  TensorType acc_type{acc, out.sizes, contiguous_strides(out.sizes), out.device};
  TensorRef combined = l.reduction(
      acc_type, {data.sizes[axis]}, c.reduce, n.name,
      [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
        auto [start, end] = bounds(b, x);
        int at = b.index(r[0], DType::I64);
        int inside = b.binary(Op::LogicalAnd, b.binary(Op::Le, start, at, DType::Bool),
                              b.binary(Op::Lt, at, end, DType::Bool), DType::Bool);
        std::vector<Expr> index = x;
        index[axis] = r[0];
        int v = b.cast(b.load(data.buffer, Lowering::offset(data, index), data.dtype), acc);
        return b.where(inside, v, b.constant(c.identity, acc), acc);
      })[0];
  const Arg &initial = arg(n, "initial");
  return {l.pointwise(out, n.name + " epilogue", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    int v = b.load(combined.buffer, Lowering::offset(combined, x), acc);
    auto [start, end] = bounds(b, x);
    int count = b.cast(b.binary(Op::Sub, end, start, DType::I64), acc);
    if (initial.is_none()) return kind == "mean" ? b.binary(Op::TrueDiv, v, count, acc) : v;
    int init = b.constant(number(initial), acc);
    int folded = b.binary(c.op, v, init, acc);
    if (kind == "mean") folded = b.binary(Op::TrueDiv, folded, count, acc);
    int empty = b.binary(Op::Eq, count, b.constant(0, acc), DType::Bool);
    return b.where(empty, init, folded, acc);
  })};
}

}  // namespace

void add_reduction_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.sum.dim_IntList"] = simple(ReduceOp::Sum);
  t["aten.sum.default"] = simple(ReduceOp::Sum);
  t["aten.prod.dim_int"] = simple(ReduceOp::Prod);
  t["aten.prod.default"] = simple(ReduceOp::Prod);
  t["aten.amax.default"] = simple(ReduceOp::Max);
  t["aten.amin.default"] = simple(ReduceOp::Min);
  t["aten.max.default"] = simple(ReduceOp::Max);
  t["aten.min.default"] = simple(ReduceOp::Min);
  for (const char *o : {"default", "dim", "dims"}) {
    t[str_cat("aten.any.", o)] = simple(ReduceOp::Any);
    t[str_cat("aten.all.", o)] = simple(ReduceOp::All);
  }
  t["aten.mean.dim"] = mean;
  t["aten.mean.default"] = mean;
  t["aten.var.correction"] = [](Lowering &l, const Node &n) { return var_mean(l, n, false); };
  t["aten.var_mean.correction"] = [](Lowering &l, const Node &n) { return var_mean(l, n, true); };
  t["aten.var.dim"] = [](Lowering &l, const Node &n) { return var_mean(l, n, false); };
  t["aten.var_mean.dim"] = [](Lowering &l, const Node &n) { return var_mean(l, n, true); };
  t["aten.std.correction"] = [](Lowering &l, const Node &n) { return var_mean(l, n, false, true); };
  t["aten.std.dim"] = [](Lowering &l, const Node &n) { return var_mean(l, n, false, true); };
  t["aten.logsumexp.default"] = logsumexp;
  t["aten.max.dim"] = value_and_index(ReduceOp::Max, ReduceOp::ArgMax);
  t["aten.min.dim"] = value_and_index(ReduceOp::Min, ReduceOp::ArgMin);
  t["aten.argmax.default"] = arg_reduction(ReduceOp::ArgMax);
  t["aten.argmin.default"] = arg_reduction(ReduceOp::ArgMin);
  t["aten.cumsum.default"] = [](Lowering &l, const Node &n) { return scan(l, n, ir::ScanOp::Sum); };
  t["aten.cummax.default"] = [](Lowering &l, const Node &n) { return running_extremum(l, n, true); };
  t["aten.cummin.default"] = [](Lowering &l, const Node &n) { return running_extremum(l, n, false); };
  t["aten.cumprod.default"] = [](Lowering &l, const Node &n) { return scan(l, n, ir::ScanOp::Prod); };
  t["aten._trilinear.default"] = trilinear;
  t["aten.logcumsumexp.default"] = [](Lowering &l, const Node &n) { return scan(l, n, ir::ScanOp::LogAddExp); };
  t["aten.linalg_vector_norm.default"] = vector_norm;
  t["aten._cdist_forward.default"] = cdist;
  t["aten._pdist_forward.default"] = pdist;
  t["aten.segment_reduce.default"] = segment_reduce;
}

}  // namespace coil::lowering
