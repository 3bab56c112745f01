// Normalizations and softmax.
#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

void check_floating(const TensorType &t, std::string_view op) {
  COIL_USER_CHECK(is_floating(t.dtype), op, " needs a floating point input, got ", short_name(t.dtype));
}

/// _softmax / _log_softmax: a contiguous output; half_to_float gives f32 from f16/bf16.
std::vector<TensorType> softmax(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  check_floating(self, "softmax");
  wrap_dim(a.integer("dim"), self.rank());
  bool half_to_float = a.boolean("half_to_float");
  COIL_USER_CHECK(!half_to_float || self.dtype == DType::F16 || self.dtype == DType::BF16,
                  "half_to_float is only for f16 and bf16 inputs, got ", short_name(self.dtype));
  return {contiguous(half_to_float ? DType::F32 : self.dtype, self.sizes, self.device)};
}

/// native_layer_norm: (out, mean, rstd). mean and rstd keep the normalized dims as 1;
/// on CPU they have the input's dtype, on CUDA the f32 they are computed in.
std::vector<TensorType> layer_norm(const MetaArgs &a) {
  const TensorType &x = a.tensor("input");
  check_floating(x, "layer_norm");
  Shape normalized = a.ints("normalized_shape");
  COIL_USER_CHECK(!normalized.empty() && int64_t(normalized.size()) <= x.rank(),
                  "normalized_shape ", shape_str(normalized), " does not fit an input of shape ",
                  shape_str(x.sizes));
  size_t axis = x.sizes.size() - normalized.size();
  COIL_USER_CHECK(Shape(x.sizes.begin() + long(axis), x.sizes.end()) == normalized,
                  "normalized_shape ", shape_str(normalized), " does not match the trailing dims of ",
                  shape_str(x.sizes));
  for (const char *name : {"weight", "bias"}) {
    const TensorType *p = a.optional_tensor(name);
    COIL_USER_CHECK(!p || p->sizes == normalized, name, " has shape ",
                    p ? shape_str(p->sizes) : "", ", expected ", shape_str(normalized));
  }
  Shape stats = x.sizes;
  for (size_t i = axis; i < stats.size(); ++i) stats[i] = 1;
  DType stat_dtype = x.device.kind == Device::Kind::CPU ? x.dtype : opmath_dtype(x.dtype);
  return {contiguous(x.dtype, x.sizes, x.device), contiguous(stat_dtype, stats, x.device),
          contiguous(stat_dtype, stats, x.device)};
}

/// _native_batch_norm_legit_no_training: (out, save_mean, save_invstd); in inference
/// the saved statistics are empty. The output keeps the input's memory format.
std::vector<TensorType> batch_norm_inference(const MetaArgs &a) {
  const TensorType &x = a.tensor("input");
  check_floating(x, "batch_norm");
  COIL_USER_CHECK(x.rank() >= 2, "batch_norm needs an input of rank >= 2, got ", shape_str(x.sizes));
  Shape channels = {x.sizes[1]};
  for (const char *name : {"weight", "bias", "running_mean", "running_var"}) {
    const TensorType *p = a.optional_tensor(name);
    COIL_USER_CHECK(!p || p->sizes == channels, name, " has shape ", p ? shape_str(p->sizes) : "",
                    ", expected ", shape_str(channels));
  }
  Shape strides = strides_for_format(x.sizes, suggest_memory_format(x.sizes, x.strides));
  TensorType empty = contiguous(x.dtype, {0}, x.device);
  return {TensorType{x.dtype, x.sizes, strides, x.device}, empty, empty};
}

}  // namespace

void register_norm_ops(Registry &r) {
  r.add("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", softmax);
  r.add("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", softmax);
  r.add("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
        "float eps) -> (Tensor, Tensor, Tensor)",
        layer_norm);
  r.add("_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
        "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        batch_norm_inference);
}

}  // namespace coil
