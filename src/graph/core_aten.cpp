#include "graph/core_aten.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace coil {

const std::vector<std::string_view> &core_aten_ops() {
  static const std::vector<std::string_view> ops = {
#include "graph/core_aten_ops.inc"
  };
  return ops;
}

namespace {

constexpr const char *kDataDependent =
    "its output's size depends on its input's values; coil compiles graphs whose sizes are known when they "
    "are compiled (data-dependent sizes wait for unbacked size symbols)";
constexpr const char *kToHost = "it reads a tensor's value back to the host (.item()); coil's graphs stay on their device";
constexpr const char *kComplex = "complex tensors are not supported";
constexpr const char *kLinearAlgebra =
    "it is a linear algebra factorization or solver, which waits for a binding to LAPACK on the CPU and "
    "cuSOLVER on the GPU (coil's own kernels are not the right tool for it)";
constexpr const char *kSparse = "sparse layouts are not supported: coil's tensors are strided";
constexpr std::string_view kSizeOps[] = {"aten.sym_size.int", "aten.sym_stride.int", "aten.sym_numel.default",
                                         "aten.sym_storage_offset.default"};
constexpr const char *kSizeWithoutAnnotation =
    "a size op, which coil reads as the size its line's annotation states (`n: \"Sym(s0*2)\" = ...`); this line "
    "has no such annotation";

const std::map<std::string_view, const char *, std::less<>> &refusals() {
  static const std::map<std::string_view, const char *, std::less<>> table = {
      {"aten.nonzero.default", kDataDependent},
      {"aten.masked_select.default", kDataDependent},
      {"aten._unique2.default", kDataDependent},
      {"aten.unique_dim.default", kDataDependent},
      {"aten.unique_consecutive.default", kDataDependent},
      {"aten.bincount.default", kDataDependent},
      {"aten._local_scalar_dense.default", kToHost},
      {"aten._fft_r2c.default", kComplex},
      {"aten._fft_c2r.default", kComplex},
      {"aten._fft_c2c.default", kComplex},
      {"aten._to_sparse.default", kSparse},
      {"aten.hash_tensor.default", "its output is uint64, a dtype coil does not have"},
      {"aten._native_batch_norm_legit.default",
       "it updates running_mean and running_var in place; coil compiles functional graphs, where "
       "run_decompositions() gives _native_batch_norm_legit_functional"},
  };
  return table;
}

}  // namespace

/// Whether the op named `target` ("aten.linalg_qr.default") is a linear algebra
/// factorization or solver. Only asked of ops coil does not lower: linalg_vector_norm and
/// the other linalg ops it does are never refused.
static bool is_linear_algebra(std::string_view target) {
  static const std::set<std::string_view, std::less<>> kSolvers = {
      "cholesky", "cholesky_solve", "cholesky_inverse", "geqrf", "ormqr", "lu_unpack", "triangular_solve",
      "_lu_with_info", "lu_solve", "orgqr", "svd", "symeig", "eig", "qr", "logdet", "det", "slogdet", "inverse", "pinverse",
      "matrix_exp", "lstsq"};
  std::string_view name = target.substr(0, target.rfind('.'));
  if (name.substr(0, 5) != "aten.") return false;
  name.remove_prefix(5);
  return name.substr(0, 7) == "linalg_" || name.substr(0, 8) == "_linalg_" || kSolvers.count(name) > 0;
}

bool is_size_op(std::string_view target) {
  return std::find(std::begin(kSizeOps), std::end(kSizeOps), target) != std::end(kSizeOps);
}

std::optional<std::string> refusal(std::string_view target) {
  if (auto it = refusals().find(target); it != refusals().end()) return std::string(it->second);
  if (is_size_op(target)) return std::string(kSizeWithoutAnnotation);
  if (is_linear_algebra(target)) return std::string(kLinearAlgebra);
  std::string_view overload = target.substr(target.rfind('.') + 1);
  if (overload == "out" || (overload.size() > 4 && overload.substr(overload.size() - 4) == "_out"))
    return std::string("it writes into its out= argument; coil compiles functional graphs, where "
                       "run_decompositions() gives the op without out=");
  return std::nullopt;
}

}  // namespace coil
