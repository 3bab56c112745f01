// Reductions: reduced dims with keepdim, the result dtype of each kind, contiguous outputs.
#include <cmath>
#include <sstream>

#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

enum class ReduceDType {
  SumLike,    // integral and bool inputs give i64 (sum, prod, cumsum)
  Keep,       // the input dtype (amax, amin, max, min)
  FloatOnly,  // floating inputs only (mean)
  Logical,    // bool, except that uint8 stays uint8 (any, all)
  Index,      // i64 positions (argmax, argmin)
  IntToFloat, // integral and bool inputs give the default float, f32 (logsumexp)
};

DType reduction_dtype(DType in, std::optional<DType> requested, ReduceDType rule, std::string_view op) {
  switch (rule) {
    case ReduceDType::SumLike:
      if (requested) return *requested;
      return is_integral(in, true) ? DType::I64 : in;
    case ReduceDType::Keep: return in;
    case ReduceDType::FloatOnly:
      // mean computes in the requested dtype, so that one must be floating too.
      if (requested) {
        COIL_USER_CHECK(is_floating(*requested), op, "(): could not infer output dtype. Optional dtype "
                        "must be floating point, got ", short_name(*requested));
        return *requested;
      }
      COIL_USER_CHECK(is_floating(in), op, "(): could not infer output dtype. Input dtype must be "
                      "floating point, got ", short_name(in));
      return in;
    case ReduceDType::Logical: return in == DType::U8 ? DType::U8 : DType::Bool;
    case ReduceDType::Index: return DType::I64;
    case ReduceDType::IntToFloat: return is_floating(in) ? in : DType::F32;
  }
  return in;
}

/// The reduced dims of `self`: wrapped, checked for repeats, every dim when `dims` is
/// absent or empty. A 0-dim tensor accepts dims 0 and -1, but only one of them, as in
/// PyTorch (common's reduced_dims does not see repeats there).
std::vector<bool> reduced_dims(const TensorType &self, const std::optional<std::vector<int64_t>> &dims) {
  if (self.rank() == 0 && dims) {
    for (int64_t d : *dims) wrap_dim(d, 0);
    COIL_USER_CHECK(dims->size() <= 1, "dim 0 appears multiple times in the list of dims");
  }
  return meta::reduced_dims(dims, self.rank());
}

/// Reductions without an identity (max, min, argmax, ...) have no value to give for an
/// empty slice: PyTorch refuses to reduce over a size-0 dim, or over every dim of an
/// empty tensor.
void check_nonempty_slices(const TensorType &self, const std::vector<bool> &reduced, bool every_dim,
                           std::string_view op) {
  if (every_dim) {
    COIL_USER_CHECK(self.numel() != 0, op, "(): Expected reduction dim to be specified for input.numel() "
                    "== 0. Specify the reduction dim with the 'dim' argument.");
    return;
  }
  for (size_t d = 0; d < reduced.size(); ++d)
    COIL_USER_CHECK(!reduced[d] || self.sizes[d] != 0, op, "(): Expected reduction dim ", d,
                    " to have non-zero size.");
}

/// What a reduction op's schema offers: a dim list or a single (maybe optional) dim,
/// keepdim, a dtype.
enum class DimArg { None, List, One, OptionalOne };

struct Reduction {
  std::string op;
  ReduceDType rule = ReduceDType::Keep;
  DimArg dim = DimArg::List;
  bool has_dtype = false;
  bool needs_nonempty = false;      // no identity: max, min, argmax, argmin, amax, amin
  bool empty_list_is_none = false;  // any.dims/all.dims: dim=[] reduces nothing
};

/// The dims a reduction's arguments name; nullopt means every dim.
std::optional<std::vector<int64_t>> dims_arg(const MetaArgs &a, DimArg kind) {
  switch (kind) {
    case DimArg::None: return std::nullopt;
    case DimArg::List: return a.optional_ints("dim");
    case DimArg::One: return std::vector<int64_t>{a.integer("dim")};
    case DimArg::OptionalOne: {
      auto d = a.optional_integer("dim");
      if (!d) return std::nullopt;
      return std::vector<int64_t>{*d};
    }
  }
  return std::nullopt;
}

/// A reduction to a fresh contiguous tensor of the reduced shape.
MetaFn reduction(Reduction spec) {
  return [spec](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    auto dims = dims_arg(a, spec.dim);
    bool keepdim = spec.dim != DimArg::None && a.boolean("keepdim");
    auto requested = spec.has_dtype ? a.optional_dtype("dtype") : std::nullopt;
    // argmax/argmin refuse bool inputs on every device (PyTorch's check_argmax_argmin).
    COIL_USER_CHECK(spec.rule != ReduceDType::Index || self.dtype != DType::Bool, spec.op,
                    "(): does not support bool input");
    DType dtype = reduction_dtype(self.dtype, requested, spec.rule, spec.op);
    if (spec.empty_list_is_none && dims && dims->empty())
      return std::vector<TensorType>{contiguous(dtype, self.sizes, self.device)};
    auto reduced = reduced_dims(self, dims);
    if (spec.needs_nonempty) check_nonempty_slices(self, reduced, !dims || dims->empty(), spec.op);
    return std::vector<TensorType>{
        contiguous(dtype, meta::reduced_shape(self.sizes, reduced, keepdim), self.device)};
  };
}

/// max.dim / min.dim: (values of the input's dtype, i64 indices).
MetaFn values_and_indices(std::string op) {
  MetaFn values = reduction({.op = op, .rule = ReduceDType::Keep, .dim = DimArg::One, .needs_nonempty = true});
  return [values](const MetaArgs &a) {
    TensorType v = values(a)[0];
    TensorType indices = v;
    indices.dtype = DType::I64;
    return std::vector<TensorType>{v, indices};
  };
}

/// var and var_mean only take floating inputs; var_mean gives (var, mean) alike.
MetaFn variance(std::string op, size_t outputs) {
  return [op, outputs](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    COIL_USER_CHECK(is_floating(self.dtype), op, " only supports floating point dtypes, got ",
                    short_name(self.dtype));
    auto reduced = reduced_dims(self, a.optional_ints("dim"));
    TensorType out = contiguous(self.dtype, meta::reduced_shape(self.sizes, reduced, a.boolean("keepdim")),
                                self.device);
    return std::vector<TensorType>(outputs, out);
  };
}

/// cumsum, cumprod: a scan keeps the shape; the result is a fresh contiguous tensor, of
/// i64 for integral and bool inputs unless a dtype is given.
MetaFn scan(std::string op) {
  return [op](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    wrap_dim(a.integer("dim"), self.rank());
    DType dtype = reduction_dtype(self.dtype, a.optional_dtype("dtype"), ReduceDType::SumLike, op);
    return std::vector<TensorType>{contiguous(dtype, self.sizes, self.device)};
  };
}

/// sort and sort.stable: values and their i64 positions, shaped and laid out as
/// empty_like(self) (a dense input's strides kept).
std::vector<TensorType> sort(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  wrap_dim(a.integer("dim"), self.rank());
  SymShape strides = preserve_format_strides(self);
  return {TensorType{self.dtype, self.sizes, strides, self.device},
          TensorType{DType::I64, self.sizes, strides, self.device}};
}

/// kthvalue: the k-th smallest along dim (k in [1, size]) and its position, as max.dim.
std::vector<TensorType> kthvalue(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank()), k = a.integer("k");
  int64_t size = self.rank() == 0 ? 1 : int64_t(self.sizes[size_t(dim)]);
  COIL_USER_CHECK(k >= 1 && k <= size, "kthvalue(): selected number k out of range for dimension ", dim, ": k = ", k,
                  ", size ", size);
  return values_and_indices("kthvalue")(a);
}

/// topk: the k largest (or smallest) values along dim and their i64 positions,
/// contiguous.
std::vector<TensorType> topk(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank()), k = a.integer("k");
  int64_t size = self.rank() == 0 ? 1 : int64_t(self.sizes[size_t(dim)]);
  COIL_USER_CHECK(k >= 0 && k <= size, "topk: k must be in [0, ", size, "] (the size of dim ", dim, "), got ", k);
  SymShape sizes = self.sizes;
  if (self.rank() > 0) sizes[size_t(dim)] = k;
  return {contiguous(self.dtype, sizes, self.device), contiguous(DType::I64, sizes, self.device)};
}

/// The name PyTorch gives a norm's order in its messages: inf, -inf, 2, 0.5.
std::string ord_name(double ord) {
  if (std::isinf(ord)) return ord > 0 ? "inf" : "-inf";
  std::ostringstream s;
  s << ord;
  return s.str();
}

/// _cdist_forward: x1 [B.., P, M] and x2 [B.., R, M] give [broadcast B.., P, R].
std::vector<TensorType> cdist(const MetaArgs &a) {
  const TensorType &x1 = a.tensor("x1"), &x2 = a.tensor("x2");
  COIL_USER_CHECK(x1.rank() >= 2 && x2.rank() >= 2, "cdist only supports at least 2D tensors, got: ", x1.rank(), "D and ",
                  x2.rank(), "D");
  COIL_USER_CHECK(x1.sizes.back() == x2.sizes.back(), "X1 and X2 must have the same number of columns. X1: ",
                  x1.sizes.back(), " X2: ", x2.sizes.back());
  COIL_USER_CHECK(is_floating(x1.dtype) && x2.dtype == x1.dtype, "cdist only supports floating-point dtypes of one kind, got ",
                  short_name(x1.dtype), " and ", short_name(x2.dtype));
  double p = a.floating("p");
  COIL_USER_CHECK(p >= 0, "cdist only supports non-negative p values, got ", p);
  SymShape batch = broadcast_shapes(SymShape(x1.sizes.begin(), x1.sizes.end() - 2), SymShape(x2.sizes.begin(), x2.sizes.end() - 2));
  batch.insert(batch.end(), {x1.sizes[size_t(x1.rank() - 2)], x2.sizes[size_t(x2.rank() - 2)]});
  return {meta::contiguous(x1.dtype, batch, x1.device)};
}

/// _pdist_forward: x [N, M] gives the N (N - 1) / 2 distances of its rows.
std::vector<TensorType> pdist(const MetaArgs &a) {
  const TensorType &x = a.tensor("self");
  COIL_USER_CHECK(x.rank() == 2, "pdist only supports 2D tensors, got: ", x.rank(), "D");
  COIL_USER_CHECK(is_floating(x.dtype), "pdist only supports floating-point dtypes, got ", short_name(x.dtype));
  double p = a.floating("p");
  COIL_USER_CHECK(p >= 0, "pdist only supports non-negative p values, got ", p);
  int64_t n = x.sizes[0];
  return {meta::contiguous(x.dtype, {n <= 1 ? 0 : n * (n - 1) / 2}, x.device)};
}

/// linalg_vector_norm: floating inputs only; a requested dtype must hold the input without
/// narrowing and is the result's; the orders whose reduction has no identity for an empty
/// slice (inf, -inf, negative) refuse one.
std::vector<TensorType> vector_norm(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(is_floating(self.dtype), "linalg.vector_norm: Expected a floating point or complex tensor as "
                  "input. Got ", short_name(self.dtype));
  DType dtype = self.dtype;
  if (auto requested = a.optional_dtype("dtype")) {
    PromotionOperand both[] = {{self.dtype, 1, false}, {*requested, 1, false}};
    COIL_USER_CHECK(is_floating(*requested) && result_type(both) == *requested,
                    "linalg.vector_norm: the dtype of the input (", short_name(self.dtype),
                    ") should be convertible without narrowing to the specified dtype (", short_name(*requested), ")");
    dtype = *requested;
  }
  double ord = a.floating("ord");
  auto dims = a.optional_ints("dim");
  auto reduced = reduced_dims(self, dims);
  if (ord < 0 || std::isinf(ord)) {
    bool every_dim = !dims || dims->empty();
    COIL_USER_CHECK(!every_dim || self.numel() != 0, "linalg.vector_norm cannot compute the ", ord_name(ord),
                    " norm on an empty tensor because the operation does not have an identity");
    for (size_t d = 0; d < reduced.size() && !every_dim; ++d)
      COIL_USER_CHECK(!reduced[d] || self.sizes[d] != 0, "linalg.vector_norm cannot compute the ", ord_name(ord),
                      " norm on the dimension ", d, " because this dimension is empty and the operation does not "
                      "have an identity");
  }
  return {contiguous(dtype, meta::reduced_shape(self.sizes, reduced, a.boolean("keepdim")), self.device)};
}


/// segment_reduce: floating `data` reduced in segments along `axis`, each segment's length
/// given (lengths) or its bounds (offsets, one more than the segments); lengths and
/// offsets index data's dims before `axis` and then the segments. The output is lengths'
/// shape (offsets' with one fewer in the last dim) followed by data's dims after `axis`,
/// in data's dtype, contiguous.
std::vector<TensorType> segment_reduce(const MetaArgs &a) {
  const TensorType &data = a.tensor("data");
  std::string reduce = *a.optional_str("reduce");
  COIL_USER_CHECK(reduce == "sum" || reduce == "prod" || reduce == "max" || reduce == "min" || reduce == "mean",
                  "segment_reduce: reduce must be sum, prod, max, min or mean, got '", reduce, "'");
  COIL_USER_CHECK(is_floating(data.dtype), "segment_reduce: data must be floating, got ", short_name(data.dtype));
  COIL_USER_CHECK(a.is_none("indices"), "segment_reduce(): indices based reduction is not supported yet.");
  const TensorType *lengths = a.optional_tensor("lengths"), *offsets = a.optional_tensor("offsets");
  COIL_USER_CHECK(lengths || offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  const TensorType &given = lengths ? *lengths : *offsets;
  COIL_USER_CHECK(given.dtype == DType::I64 || given.dtype == DType::I32, "segment_reduce: ",
                  lengths ? "lengths" : "offsets", " must be int32 or int64, got ", short_name(given.dtype));
  int64_t axis = wrap_dim(a.integer("axis"), data.rank());
  SymShape sizes = given.sizes;
  COIL_USER_CHECK(given.rank() == axis + 1 && SymShape(data.sizes.begin(), data.sizes.begin() + axis) ==
                                                  SymShape(sizes.begin(), sizes.end() - 1),
                  "segment_reduce: ", lengths ? "lengths" : "offsets", " of shape ", shape_str(sizes),
                  " must have data's dims before axis ", axis, " (", shape_str(data.sizes), ") and then the segments");
  if (offsets) {
    COIL_USER_CHECK(sizes.back() >= 1, "segment_reduce: offsets needs at least one entry along its last dim");
    sizes.back() -= 1;
  }
  sizes.insert(sizes.end(), data.sizes.begin() + axis + 1, data.sizes.end());
  return {contiguous(data.dtype, sizes, data.device)};
}

}  // namespace

void register_reduction_ops(Registry &r) {
  using R = ReduceDType;
  r.add("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        reduction({.op = "sum", .rule = R::SumLike, .has_dtype = true}));
  r.add("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        reduction({.op = "sum", .rule = R::SumLike, .dim = DimArg::None, .has_dtype = true}));
  r.add("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        reduction({.op = "prod", .rule = R::SumLike, .dim = DimArg::One, .has_dtype = true}));
  r.add("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        reduction({.op = "prod", .rule = R::SumLike, .dim = DimArg::None, .has_dtype = true}));
  r.add("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        reduction({.op = "mean", .rule = R::FloatOnly, .has_dtype = true}));
  r.add("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        reduction({.op = "mean", .rule = R::FloatOnly, .dim = DimArg::None, .has_dtype = true}));

  r.add("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
        reduction({.op = "amax", .rule = R::Keep, .needs_nonempty = true}));
  r.add("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
        reduction({.op = "amin", .rule = R::Keep, .needs_nonempty = true}));
  r.add("max(Tensor self) -> Tensor",
        reduction({.op = "max", .rule = R::Keep, .dim = DimArg::None, .needs_nonempty = true}));
  r.add("min(Tensor self) -> Tensor",
        reduction({.op = "min", .rule = R::Keep, .dim = DimArg::None, .needs_nonempty = true}));
  r.add("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        values_and_indices("max"));
  r.add("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        values_and_indices("min"));
  r.add("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
        reduction({.op = "argmax", .rule = R::Index, .dim = DimArg::OptionalOne,
                   .needs_nonempty = true}));
  r.add("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
        reduction({.op = "argmin", .rule = R::Index, .dim = DimArg::OptionalOne,
                   .needs_nonempty = true}));

  for (const char *op : {"any", "all"}) {
    r.add(str_cat(op, "(Tensor self) -> Tensor"), reduction({.op = op, .rule = R::Logical, .dim = DimArg::None}));
    r.add(str_cat(op, ".dim(Tensor self, int dim, bool keepdim=False) -> Tensor"),
          reduction({.op = op, .rule = R::Logical, .dim = DimArg::One}));
    r.add(str_cat(op, ".dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"),
          reduction({.op = op, .rule = R::Logical, .empty_list_is_none = true}));
  }

  r.add("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", sort);
  r.add("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, "
        "Tensor indices)",
        sort);
  r.add("kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
        kthvalue);
  for (const char *op : {"median", "nanmedian"}) {
    r.add(str_cat(op, "(Tensor self) -> Tensor"),
          reduction({.op = op, .rule = R::Keep, .dim = DimArg::None, .needs_nonempty = true}));
    r.add(str_cat(op, ".dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"),
          values_and_indices(op));
  }
  r.add("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", values_and_indices("mode"));
  r.add("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, "
        "Tensor indices)",
        topk);
  r.add("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", scan("cumsum"));
  r.add("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", scan("cumprod"));
  // logcumsumexp: of floats only (eager has no integer kernel), in self's dtype, contiguous.
  r.add("logcumsumexp(Tensor self, int dim) -> Tensor", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    wrap_dim(a.integer("dim"), self.rank());
    COIL_USER_CHECK(is_floating(self.dtype), "logcumsumexp needs a floating point input, got ", short_name(self.dtype));
    return std::vector<TensorType>{contiguous(self.dtype, self.sizes, self.device)};
  });
  // cummax, cummin: the running extremum in self's dtype and its i64 positions, contiguous.
  for (const char *op : {"cummax", "cummin"})
    r.add(str_cat(op, "(Tensor self, int dim) -> (Tensor values, Tensor indices)"), [](const MetaArgs &a) {
      const TensorType &self = a.tensor("self");
      wrap_dim(a.integer("dim"), self.rank());
      return std::vector<TensorType>{contiguous(self.dtype, self.sizes, self.device),
                                     contiguous(DType::I64, self.sizes, self.device)};
    });
  r.add("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", cdist);
  r.add("_pdist_forward(Tensor self, float p=2) -> Tensor", pdist);
  r.add("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        vector_norm);
  r.add("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
        "-> Tensor",
        variance("var", 1));
  r.add("var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
        "-> (Tensor, Tensor)",
        variance("var_mean", 2));
  // The forms torch.export keeps for torch.var_mean(x, dim): unbiased is correction 1 or 0.
  r.add("var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", variance("var", 1));
  r.add("var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)",
        variance("var_mean", 2));
  r.add("std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
        variance("std", 1));
  r.add("std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", variance("std", 1));
  r.add("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
        reduction({.op = "logsumexp", .rule = R::IntToFloat}));
  r.add("segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, "
        "Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
        segment_reduce);
}

}  // namespace coil
