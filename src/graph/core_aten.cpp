#include "graph/core_aten.h"

#include <map>

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
constexpr const char *kSymbolic = "symbolic sizes are not compiled yet; a graph of static sizes has no use for it";

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
      {"aten.sym_size.int", kSymbolic},
      {"aten.sym_stride.int", kSymbolic},
      {"aten.sym_numel.default", kSymbolic},
      {"aten.sym_storage_offset.default", kSymbolic},
      {"aten._native_batch_norm_legit.default",
       "it updates running_mean and running_var in place; coil compiles functional graphs, where "
       "run_decompositions() gives _native_batch_norm_legit_functional"},
  };
  return table;
}

}  // namespace

std::optional<std::string> refusal(std::string_view target) {
  if (auto it = refusals().find(target); it != refusals().end()) return std::string(it->second);
  std::string_view overload = target.substr(target.rfind('.') + 1);
  if (overload == "out" || (overload.size() > 4 && overload.substr(overload.size() - 4) == "_out"))
    return std::string("it writes into its out= argument; coil compiles functional graphs, where "
                       "run_decompositions() gives the op without out=");
  return std::nullopt;
}

}  // namespace coil
