// Reductions: reduced dims with keepdim, the result dtype of each kind, contiguous outputs.
#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

enum class ReduceDType {
  SumLike,    // integral and bool inputs give i64 (sum, prod)
  Keep,       // the input dtype (amax, amin)
  FloatOnly,  // floating inputs only (mean, var)
};

DType reduction_dtype(DType in, std::optional<DType> requested, ReduceDType rule, std::string_view op) {
  if (requested) return *requested;
  switch (rule) {
    case ReduceDType::SumLike: return is_integral(in, true) ? DType::I64 : in;
    case ReduceDType::Keep: return in;
    case ReduceDType::FloatOnly:
      COIL_USER_CHECK(is_floating(in), op, "(): could not infer output dtype. Input dtype must be "
                      "floating point, got ", short_name(in));
      return in;
  }
  return in;
}

/// A reduction over `dim` (an int list, or every dim when absent or empty).
MetaFn reduction(ReduceDType rule, std::string op, bool has_dim = true, bool has_dtype = true) {
  return [=](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    auto dims = has_dim ? a.optional_ints("dim") : std::nullopt;
    bool keepdim = has_dim && a.boolean("keepdim");
    auto requested = has_dtype ? a.optional_dtype("dtype") : std::nullopt;
    DType dtype = reduction_dtype(self.dtype, requested, rule, op);
    auto reduced = meta::reduced_dims(dims, self.rank());
    return std::vector<TensorType>{
        contiguous(dtype, meta::reduced_shape(self.sizes, reduced, keepdim), self.device)};
  };
}

/// var_mean.correction: (var, mean), both of the input's dtype and the reduced shape.
std::vector<TensorType> var_mean(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  reduction_dtype(self.dtype, std::nullopt, ReduceDType::FloatOnly, "var_mean");
  auto reduced = meta::reduced_dims(a.optional_ints("dim"), self.rank());
  TensorType out = contiguous(self.dtype, meta::reduced_shape(self.sizes, reduced, a.boolean("keepdim")),
                              self.device);
  return {out, out};
}

}  // namespace

void register_reduction_ops(Registry &r) {
  r.add("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        reduction(ReduceDType::SumLike, "sum"));
  r.add("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        reduction(ReduceDType::SumLike, "sum", false));
  r.add("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        reduction(ReduceDType::FloatOnly, "mean"));
  r.add("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
        reduction(ReduceDType::Keep, "amax", true, false));
  r.add("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
        reduction(ReduceDType::Keep, "amin", true, false));
  r.add("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
        reduction(ReduceDType::FloatOnly, "var", true, false));
  r.add("var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)",
        var_mean);
}

}  // namespace coil
