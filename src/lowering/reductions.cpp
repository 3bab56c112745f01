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
  Shape sizes;  // sizes of the reduced dims, in order
};

Reduced reduced_of(const TensorRef &in, const Node &n) {
  Reduced r;
  int dim = n.op->schema.find_arg("dim");
  std::optional<std::vector<int64_t>> dims;
  if (dim >= 0 && !n.args[size_t(dim)].is_none()) {
    const Arg &a = n.args[size_t(dim)];
    dims = a.is<int64_t>() ? std::vector<int64_t>{a.as<int64_t>()} : std::vector<int64_t>{};
    if (a.is<ArgList>())
      for (const Arg &d : a.as<ArgList>()) dims->push_back(d.as<int64_t>());
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

int64_t count_of(const Reduced &red) {
  int64_t n = 1;
  for (int64_t s : red.sizes) n *= s;
  return n;
}

std::vector<TensorRef> mean(Lowering &l, const Node &n) {
  const TensorRef &in = self(l, n);
  Reduced red = reduced_of(in, n);
  TensorType out = l.graph().type(n.outputs[0]);
  TensorType acc_type = out;
  acc_type.dtype = opmath_dtype(out.dtype);
  auto sum = reduce(l, n, in, red, ReduceOp::Sum, acc_type, acc_type.dtype);
  double count = double(count_of(red));
  return {epilogue(l, n, 0, sum, [&](BodyBuilder &b, const std::vector<int> &v, DType c) {
    return b.binary(Op::TrueDiv, v[0], b.constant(count, c), c);
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
  return a.is<double>() ? a.as<double>() : double(a.as<int64_t>());
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

/// linalg_vector_norm over the reduced dims, in the result's dtype (f16 and bf16 in f32):
///   inf: amax |x|    -inf: amin |x|    0: sum (x != 0)    1: sum |x|
///   2: sqrt(sum x * x)    p: sum(|x|^p)^(1/p)
/// NaN propagates through every order, as in eager (amax/amin propagate it too).
std::vector<TensorRef> vector_norm(Lowering &l, const Node &n) {
  const TensorRef &in = self(l, n);
  Reduced red = reduced_of(in, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  double ord = number(arg(n, "ord"));
  TensorType acc = out;
  acc.dtype = opmath_dtype(out.dtype);
  ReduceOp op = std::isinf(ord) ? (ord > 0 ? ReduceOp::Max : ReduceOp::Min) : ReduceOp::Sum;
  auto parts = l.reduction(acc, red.sizes, op, n.name,
                           [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                             DType c = acc.dtype;
                             int v = b.load(in.buffer, Lowering::offset(in, input_index(in, red, x, r)), in.dtype);
                             v = b.cast(b.cast(v, out.dtype), c);
                             if (ord == 0) return b.cast(b.binary(Op::Ne, v, b.constant(0, c), DType::Bool), c);
                             if (ord == 2) return b.binary(Op::Mul, v, v, c);
                             int magnitude = b.unary(Op::Abs, v, c);
                             if (ord == 1 || std::isinf(ord)) return magnitude;
                             return b.binary(Op::Pow, magnitude, b.constant(ord, c), c);
                           });
  bool root = ord != 0 && ord != 1 && !std::isinf(ord);
  if (!root && acc.dtype == out.dtype) return parts;
  return {epilogue(l, n, 0, parts, [&](BodyBuilder &b, const std::vector<int> &v, DType c) {
    if (!root) return v[0];
    if (ord == 2) return b.unary(Op::Sqrt, v[0], c);
    return b.binary(Op::Pow, v[0], b.constant(1.0 / ord, c), c);
  })};
}

/// cumsum, cumprod: a Scan node along `dim`, combining in the result's dtype (f16 and bf16
/// in f32).
std::vector<TensorRef> scan(Lowering &l, const Node &n, ReduceOp op) {
  const TensorRef &in = self(l, n);
  const TensorType &out = l.graph().type(n.outputs[0]);
  if (in.rank() == 0)  // the prefix of one element is the element
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &index) {
      return Lowering::load_broadcast(b, in, index);
    })};
  TensorRef result = l.new_buffer(out);
  ir::Node node;
  node.kind = ir::NodeKind::Scan;
  node.origin = n.name;
  node.ranges = out.sizes;
  node.reduce_op = op;
  node.scan_dim = int(wrap_dim(arg(n, "dim").as<int64_t>(), in.rank()));
  BodyBuilder b;
  std::vector<Expr> index;
  for (size_t d = 0; d < out.sizes.size(); ++d) index.push_back(Expr(node.x(int(d))));
  b.add_result(b.cast(b.load(in.buffer, Lowering::offset(in, index), in.dtype), opmath_dtype(out.dtype)));
  node.body = b.finish();
  node.outputs = {result.buffer};
  l.program().nodes.push_back(std::move(node));
  return {result};
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
  t["aten.cumsum.default"] = [](Lowering &l, const Node &n) { return scan(l, n, ReduceOp::Sum); };
  t["aten.cumprod.default"] = [](Lowering &l, const Node &n) { return scan(l, n, ReduceOp::Prod); };
  t["aten.linalg_vector_norm.default"] = vector_norm;
}

}  // namespace coil::lowering
