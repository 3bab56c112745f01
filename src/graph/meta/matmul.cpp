// Matrix products: mm, bmm, mv and their fused-add forms, and matmul and linear (which
// torch.export leaves in graphs). Operands share one dtype (the BLAS kernels do not
// promote), the contracted sizes agree, and the result is a fresh contiguous tensor.
#include <algorithm>

#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

/// An operand with its argument name, for messages.
struct Named {
  const char *name;
  const TensorType *type;
};

std::string describe(const std::vector<Named> &ops) {
  std::string out;
  for (const Named &op : ops)
    out += str_cat(out.empty() ? "" : ", ", op.name, " ", short_name(op.type->dtype), shape_str(op.type->sizes));
  return out;
}

/// One dtype for every operand, one the kernels exist for: no bool anywhere, no
/// integers on CUDA (cuBLAS has floating point GEMMs only).
DType common_dtype(std::string_view op, const std::vector<Named> &ops) {
  DType dtype = ops[0].type->dtype;
  for (const Named &o : ops)
    COIL_USER_CHECK(o.type->dtype == dtype, op, " expects operands of one dtype, got ", describe(ops));
  COIL_USER_CHECK(dtype != DType::Bool, op, " does not support bool operands");
  COIL_USER_CHECK(is_floating(dtype) || ops[0].type->device.kind == Device::Kind::CPU, op,
                  " of integer operands is only supported on CPU, got ", short_name(dtype), " on ",
                  ops[0].type->device.str());
  return dtype;
}

Device common_device(const std::vector<Named> &ops) {
  std::vector<coil::Operand> operands;
  for (const Named &o : ops) operands.push_back({*o.type, false});
  return meta::common_device(operands);
}

void check_rank(std::string_view op, const Named &o, int64_t rank) {
  COIL_USER_CHECK(o.type->rank() == rank, op, " expects ", o.name, " to be ", rank, "-d, got shape ",
                  shape_str(o.type->sizes));
}

/// The `self` of addmm/baddbmm/addmv is broadcast (expanded) to the product's shape.
void check_expands_to(std::string_view op, const TensorType &self, const SymShape &result) {
  bool ok = self.rank() <= int64_t(result.size());
  size_t offset = result.size() - std::min(result.size(), self.sizes.size());
  for (size_t i = 0; ok && i < self.sizes.size(); ++i)
    ok = self.sizes[i] == 1 || self.sizes[i] == result[offset + i];
  COIL_USER_CHECK(ok, op, ": self of shape ", shape_str(self.sizes), " cannot be broadcast to the result's shape ",
                  shape_str(result));
}

/// [n, k] @ [k, m] -> [n, m]
SymShape mm_shape(std::string_view op, const Named &a, const Named &b) {
  check_rank(op, a, 2);
  check_rank(op, b, 2);
  const SymShape &x = a.type->sizes, &y = b.type->sizes;
  COIL_USER_CHECK(x[1] == y[0], op, ": ", a.name, " of shape ", shape_str(x), " and ", b.name, " of shape ",
                  shape_str(y), " cannot be multiplied (", x[1], " != ", y[0], ")");
  return {x[0], y[1]};
}

/// [b, n, k] @ [b, k, m] -> [b, n, m]
SymShape bmm_shape(std::string_view op, const Named &a, const Named &b) {
  check_rank(op, a, 3);
  check_rank(op, b, 3);
  const SymShape &x = a.type->sizes, &y = b.type->sizes;
  COIL_USER_CHECK(x[0] == y[0] && x[2] == y[1], op, ": ", a.name, " of shape ", shape_str(x), " and ", b.name,
                  " of shape ", shape_str(y), " cannot be multiplied: expected ", b.name, " of shape [", x[0], ", ",
                  x[2], ", *]");
  return {x[0], x[1], y[2]};
}

/// [n, k] @ [k] -> [n]
SymShape mv_shape(std::string_view op, const Named &a, const Named &b) {
  check_rank(op, a, 2);
  check_rank(op, b, 1);
  const SymShape &x = a.type->sizes, &y = b.type->sizes;
  COIL_USER_CHECK(x[1] == y[0], op, ": ", a.name, " of shape ", shape_str(x), " and ", b.name, " of shape ",
                  shape_str(y), " cannot be multiplied (", x[1], " != ", y[0], ")");
  return {x[0]};
}

/// torch.matmul by ranks: [k] @ [k] -> [], [n, k] @ [k] -> [n], [k] @ [k, m] -> [m], and
/// otherwise batch dims broadcast, a 1-d lhs taken as [1, k] and a 1-d rhs as [k, 1],
/// those added dims left out of the result.
SymShape matmul_shape(std::string_view op, const Named &a, const Named &b) {
  const SymShape &x = a.type->sizes, &y = b.type->sizes;
  COIL_USER_CHECK(!x.empty() && !y.empty(), "both arguments to ", op, " need to be at least 1D, but they are ",
                  x.size(), "D and ", y.size(), "D");
  SymShape xm = x.size() == 1 ? SymShape{1, x[0]} : x, ym = y.size() == 1 ? SymShape{y[0], 1} : y;
  int64_t k = xm.back(), k2 = ym[ym.size() - 2];
  COIL_USER_CHECK(k == k2, op, ": ", a.name, " of shape ", shape_str(x), " and ", b.name, " of shape ",
                  shape_str(y), " cannot be multiplied (", k, " != ", k2, ")");
  SymShape out = broadcast_shapes(SymShape(xm.begin(), xm.end() - 2), SymShape(ym.begin(), ym.end() - 2));
  if (x.size() > 1) out.push_back(xm[xm.size() - 2]);
  if (y.size() > 1) out.push_back(ym.back());
  return out;
}

/// linear(input, weight, bias) = input @ weight.T + bias: a 2-d weight is [out, in]; a 1-d
/// one (no bias) is a vector; bias broadcasts to the result.
std::vector<TensorType> linear(const MetaArgs &a) {
  const TensorType &weight = a.tensor("weight");
  const TensorType *bias = a.optional_tensor("bias");
  COIL_USER_CHECK(weight.rank() == 2 || (weight.rank() == 1 && !bias), "linear expects weight to be 2-d",
                  bias ? "" : " or 1-d", ", got shape ", shape_str(weight.sizes));
  TensorType transposed = weight;
  std::reverse(transposed.sizes.begin(), transposed.sizes.end());
  Named x{"input", &a.tensor("input")}, w{"weight", &transposed};
  SymShape shape = matmul_shape("linear", x, w);
  checked_numel(shape);
  std::vector<Named> ops = {x, w};
  if (bias) {
    check_expands_to("linear", *bias, shape);
    ops.push_back({"bias", bias});
  }
  return {contiguous(common_dtype("linear", ops), shape, common_device(ops))};
}

/// _trilinear (F.bilinear's form): i1, i2 and i3, each unsqueezed at its expand dims to the
/// product's rank (i1's with expand1), broadcast together and multiplied, summed over sumdim
/// (those dims removed). One dtype, as the products eager runs it through.
std::vector<TensorType> trilinear(const MetaArgs &a) {
  const char *names[] = {"i1", "i2", "i3"}, *expands[] = {"expand1", "expand2", "expand3"};
  int64_t rank = a.tensor("i1").rank() + int64_t(a.ints("expand1").size());
  SymShape full;
  std::vector<Named> ops;
  for (int k = 0; k < 3; ++k) {
    const TensorType &t = a.tensor(names[k]);
    full = broadcast_shapes(full, meta::trilinear_operand(t.sizes, a.ints(expands[k]), rank, "_trilinear"));
    ops.push_back({names[k], &t});
  }
  std::vector<bool> summed(size_t(rank), false);
  for (int64_t d : a.ints("sumdim")) summed[size_t(wrap_dim(d, rank))] = true;
  int64_t unroll = a.integer("unroll_dim");
  COIL_USER_CHECK(unroll >= 0 && unroll < std::max<int64_t>(rank, 1), "_trilinear: unroll_dim must be in [0, ",
                  rank - 1, "], got ", unroll);
  SymShape shape = meta::reduced_shape(full, summed, false);
  checked_numel(shape);
  DType dtype = ops[0].type->dtype;
  for (const Named &o : ops)
    COIL_USER_CHECK(o.type->dtype == dtype, "_trilinear expects operands of one dtype, got ", describe(ops));
  return {contiguous(dtype, shape, common_device(ops))};
}

using ShapeFn = SymShape (*)(std::string_view, const Named &, const Named &);

/// mm / bmm / mv: the product of two named operands.
MetaFn product(std::string op, const char *lhs, const char *rhs, ShapeFn shape_of) {
  return [=](const MetaArgs &a) {
    Named x{lhs, &a.tensor(lhs)}, y{rhs, &a.tensor(rhs)};
    SymShape shape = shape_of(op, x, y);
    checked_numel(shape);
    DType dtype = common_dtype(op, {x, y});
    return std::vector<TensorType>{contiguous(dtype, shape, common_device({x, y}))};
  };
}

/// addmm / baddbmm / addmv: beta * self + alpha * (lhs @ rhs), self broadcast to the
/// product's shape. self shares the dtype too: eager addmv alone would take another
/// (giving vec's dtype), but traced graphs promote it instead, so no annotation of such
/// a node can be trusted.
MetaFn add_product(std::string op, const char *lhs, const char *rhs, ShapeFn shape_of) {
  return [=](const MetaArgs &a) {
    Named self{"self", &a.tensor("self")}, x{lhs, &a.tensor(lhs)}, y{rhs, &a.tensor(rhs)};
    SymShape shape = shape_of(op, x, y);
    checked_numel(shape);
    check_expands_to(op, *self.type, shape);
    DType dtype = common_dtype(op, {self, x, y});
    return std::vector<TensorType>{contiguous(dtype, shape, common_device({self, x, y}))};
  };
}

}  // namespace

void register_matmul_ops(Registry &r) {
  r.add("mm(Tensor self, Tensor mat2) -> Tensor", product("mm", "self", "mat2", mm_shape));
  r.add("bmm(Tensor self, Tensor mat2) -> Tensor", product("bmm", "self", "mat2", bmm_shape));
  r.add("mv(Tensor self, Tensor vec) -> Tensor", product("mv", "self", "vec", mv_shape));
  r.add("matmul(Tensor self, Tensor other) -> Tensor", product("matmul", "self", "other", matmul_shape));
  r.add("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", linear);
  r.add("_trilinear(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, int[] sumdim, "
        "int unroll_dim=1) -> Tensor",
        trilinear);
  r.add("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        add_product("addmm", "mat1", "mat2", mm_shape));
  r.add("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        add_product("baddbmm", "batch1", "batch2", bmm_shape));
  r.add("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        add_product("addmv", "mat", "vec", mv_shape));
  // addbmm: the batch's products summed, [b, n, k] @ [b, k, m] -> [n, m].
  r.add("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        add_product("addbmm", "batch1", "batch2", [](std::string_view op, const Named &a, const Named &b) {
          SymShape shape = bmm_shape(op, a, b);
          return SymShape(shape.begin() + 1, shape.end());
        }));
}

}  // namespace coil
