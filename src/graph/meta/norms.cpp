// Normalizations and softmax.
//
// Where eager PyTorch and its tracing (the decompositions FakeTensor runs, which print
// the annotations coil checks) disagree on an output's type, these follow the traced
// annotations; where eager refuses an input, so do these.
#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

/// Eager refuses a non-floating input only when a kernel runs: an empty one passes.
void check_floating(const TensorType &t, std::string_view op) {
  COIL_USER_CHECK(is_floating(t.dtype) || t.numel() == 0, op, " needs a floating point input, got ",
                  short_name(t.dtype));
}

bool is_reduced_float(DType t) { return t == DType::F16 || t == DType::BF16; }

using Params = std::vector<std::pair<const char *, const TensorType *>>;

/// The parameters of a norm (weight, bias, running stats) have the input's dtype, or,
/// for an f16/bf16 input where the kernels allow it, may all be f32 ("mixed type");
/// eager refuses anything else.
void check_param_dtypes(const TensorType &x, const Params &params, bool mixed_allowed, std::string_view op) {
  bool mixed = false;
  for (const auto &[name, p] : params) mixed = mixed || (p && p->dtype != x.dtype);
  if (!mixed) return;
  bool f32_ok = mixed_allowed && is_reduced_float(x.dtype);
  for (const auto &[name, p] : params) {
    if (!p) continue;
    COIL_USER_CHECK(p->dtype == (f32_ok ? DType::F32 : x.dtype), op, ": ", name, " is ", short_name(p->dtype),
                    " but the input is ", short_name(x.dtype), " on ", x.device.str(),
                    f32_ok ? "; parameters must have the input's dtype, or all be f32"
                           : "; parameters must have the input's dtype",
                    !mixed_allowed && is_reduced_float(x.dtype)
                        ? " (f32 parameters for an f16 or bf16 input are for CPU only)"
                        : "");
  }
}

bool cpu(const TensorType &x) { return x.device.kind == Device::Kind::CPU; }

/// softmax.int / log_softmax.int: _softmax of the input converted to `dtype` first.
MetaFn softmax_int(std::string op) {
  return [op](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    DType t = a.optional_dtype("dtype").value_or(self.dtype);
    check_floating(TensorType{t, self.sizes, self.strides, self.device}, op);
    wrap_dim(a.integer("dim"), self.rank());
    return std::vector<TensorType>{contiguous(t, self.sizes, self.device)};
  };
}

/// _softmax / _log_softmax: a contiguous output. half_to_float turns an f16 input into
/// an f32 output; PyTorch has it for f16 only, and only on CUDA.
MetaFn softmax(std::string op) {
  return [op](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    check_floating(self, op);
    wrap_dim(a.integer("dim"), self.rank());
    bool half_to_float = a.boolean("half_to_float");
    if (half_to_float) {
      COIL_USER_CHECK(!cpu(self), op,
                      " with half_to_float=True is not supported on CPU");
      COIL_USER_CHECK(self.dtype == DType::F16, op, " with half_to_float=True needs an f16 input, got ",
                      short_name(self.dtype));
    }
    return std::vector<TensorType>{contiguous(half_to_float ? DType::F32 : self.dtype, self.sizes, self.device)};
  };
}

/// native_layer_norm: (out, mean, rstd), all contiguous. mean and rstd keep the
/// normalized dims as 1; on CPU they have the input's dtype, on CUDA the f32 they are
/// computed in.
std::vector<TensorType> layer_norm(const MetaArgs &a) {
  const TensorType &x = a.tensor("input");
  check_floating(x, "layer_norm");
  SymShape normalized = a.ints("normalized_shape");
  COIL_USER_CHECK(!normalized.empty() && int64_t(normalized.size()) <= x.rank(),
                  "normalized_shape ", shape_str(normalized), " does not fit an input of shape ",
                  shape_str(x.sizes));
  size_t axis = x.sizes.size() - normalized.size();
  COIL_USER_CHECK(SymShape(x.sizes.begin() + long(axis), x.sizes.end()) == normalized,
                  "normalized_shape ", shape_str(normalized), " does not match the trailing dims of ",
                  shape_str(x.sizes));
  const TensorType *weight = a.optional_tensor("weight");
  const TensorType *bias = a.optional_tensor("bias");
  for (const auto &[name, p] : {std::pair{"weight", weight}, std::pair{"bias", bias}})
    COIL_USER_CHECK(!p || p->sizes == normalized, name, " has shape ", p ? shape_str(p->sizes) : "",
                    ", expected ", shape_str(normalized));
  // The CUDA kernel reads the parameters in the input's dtype; only CPU takes f32 ones.
  check_param_dtypes(x, {{"weight", weight}, {"bias", bias}}, cpu(x), "layer_norm");
  SymShape stats = x.sizes;
  for (size_t i = axis; i < stats.size(); ++i) stats[i] = 1;
  DType stat_dtype = cpu(x) ? x.dtype : opmath_dtype(x.dtype);
  return {contiguous(x.dtype, x.sizes, x.device), contiguous(stat_dtype, stats, x.device),
          contiguous(stat_dtype, stats, x.device)};
}

/// c10's suggest_memory_format: channels-last whenever the strides read that way, even
/// when they also read as contiguous (the size-1 cases).
MemoryFormat suggested_format(const TensorType &t) {
  if (!is_channels_last(t.sizes, t.strides)) return MemoryFormat::Contiguous;
  return t.rank() == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
}

/// Tensor::is_contiguous(format): the strides of every dim larger than 1 are those of a
/// fresh tensor in `format`.
bool is_dense_in(const TensorType &t, MemoryFormat format) {
  SymShape expected = strides_for_format(t.sizes, format);
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.sizes[d] > 1 && t.strides[d] != expected[d]) return false;
  return true;
}

void check_group_norm_param(const TensorType *p, const char *name, int64_t channels, const TensorType &x) {
  COIL_USER_CHECK(!p || (p->rank() == 1 && p->sizes[0] == channels), "group_norm expects ", name,
                  " to be a vector of size equal to the number of channels (", channels, "), got ", name,
                  " of shape ", p ? shape_str(p->sizes) : "", " for an input of shape ", shape_str(x.sizes));
}

/// native_group_norm: (out, mean, rstd) with mean and rstd of shape [N, group]. The
/// kernel reads the input densely: on CPU in its own memory format (which the output
/// keeps), on CUDA contiguous.
std::vector<TensorType> group_norm(const MetaArgs &a) {
  const TensorType &x = a.tensor("input");
  const TensorType *weight = a.optional_tensor("weight");
  const TensorType *bias = a.optional_tensor("bias");
  int64_t n = a.integer("N"), c = a.integer("C"), hxw = a.integer("HxW"), group = a.integer("group");
  COIL_USER_CHECK(x.rank() >= 2, "group_norm expects an input of at least 2 dims, got ", shape_str(x.sizes));
  check_floating(x, "group_norm");
  COIL_USER_CHECK(group > 0, "group_norm expects a positive number of groups, got ", group);
  COIL_USER_CHECK(c % group == 0, "group_norm expects the number of channels (", c,
                  ") to be divisible by the number of groups (", group, ")");
  check_group_norm_param(weight, "weight", c, x);
  check_group_norm_param(bias, "bias", c, x);
  COIL_USER_CHECK(x.numel() == checked_numel(SymShape{n, c, hxw}), "group_norm: N * C * HxW = ", n, " * ", c, " * ", hxw,
                  " does not match the ", x.numel(), " elements of the input of shape ", shape_str(x.sizes));
  MemoryFormat format = cpu(x) ? suggested_format(x) : MemoryFormat::Contiguous;
  COIL_USER_CHECK(is_dense_in(x, format), "group_norm expects an input contiguous in ",
                  cpu(x) ? "its memory format (contiguous or channels-last)" : "memory on CUDA", ", got strides ",
                  shape_str(x.strides), " for shape ", shape_str(x.sizes));
  // As for layer_norm, f32 parameters for an f16/bf16 input are for CPU only.
  check_param_dtypes(x, {{"weight", weight}, {"bias", bias}}, cpu(x), "group_norm");
  TensorType out{x.dtype, x.sizes, strides_for_format(x.sizes, format), x.device};
  checked_numel(SymShape{n, group});
  TensorType stats = contiguous(x.dtype, {n, group}, x.device);
  return {out, stats, stats};
}

/// The batch norms over dim 1: (out, save_mean, save_invstd), and for the functional form
/// the updated running_mean and running_var after them. The output is computed elementwise
/// from the input, so it keeps the input's layout. In training the saved statistics are
/// the batch's mean and 1/sqrt(var + eps) per channel: on CUDA in the dtype the kernel
/// computes in; on the CPU in the input's dtype, as PyTorch's meta function says (its CPU
/// kernel returns f32 for a bf16 input with f32 parameters; graphs carry the meta's dtype).
/// In inference they are empty on the CPU, and on CUDA the running mean and the inverse
/// std, in the dtype the kernel computes in. `training`: the op's own argument
/// unless the op fixes it.
std::vector<TensorType> batch_norm(const MetaArgs &a, std::string_view op, std::optional<bool> fixed_training,
                                   bool functional) {
  const TensorType &x = a.tensor("input");
  check_floating(x, op);
  COIL_USER_CHECK(x.rank() >= 2, op, " needs an input of rank >= 2, got ", shape_str(x.sizes));
  bool training = fixed_training.value_or(a.schema().find_arg("training") >= 0 && a.boolean("training"));
  bool running = a.schema().find_arg("running_mean") >= 0;
  COIL_USER_CHECK(running || training, op, " in evaluation mode needs running_mean and running_var");
  SymShape channels = {x.sizes[1]};
  Params params;
  std::vector<const char *> names = {"weight", "bias"};
  if (running) names.insert(names.end(), {"running_mean", "running_var"});
  for (const char *name : names) {
    const TensorType *p = a.optional_tensor(name);
    COIL_USER_CHECK(!p || p->sizes == channels, op, ": ", name, " has shape ", p ? shape_str(p->sizes) : "",
                    ", expected ", shape_str(channels));
    params.emplace_back(name, p);
  }
  check_param_dtypes(x, params, true, op);
  if (training) {
    int64_t per_channel = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != 1) per_channel *= x.sizes[size_t(d)];
    COIL_USER_CHECK(per_channel > 0, op, " in training mode needs at least one value per channel, got shape ",
                    shape_str(x.sizes));
  }
  const TensorType *layout[] = {&x};
  TensorType out{x.dtype, x.sizes, elementwise_output_strides(x.sizes, layout), x.device};
  DType stat_dtype = cpu(x) ? x.dtype : opmath_dtype(x.dtype);
  TensorType stats = cpu(x) && !training ? contiguous(x.dtype, {0}, x.device) : contiguous(stat_dtype, channels, x.device);
  std::vector<TensorType> outs = {out, stats, stats};
  if (functional) {
    // In training, the batch's statistic (in the dtype the kernel computes in) blended with
    // the running one, promoted as PyTorch's meta function promotes them (f32 for bf16
    // statistics). Its CPU kernel returns bf16: a graph traced with real tensors says so
    // (OpDef::typed_by_backend).
    for (const char *name : {"running_mean", "running_var"}) {
      DType t = a.tensor(name).dtype;
      outs.push_back(contiguous(training ? promote_types(opmath_dtype(x.dtype), t) : t, channels, x.device));
    }
  }
  return outs;
}

/// The gradients of a backward op's parameter: its type when given, else `sizes` in the
/// input's dtype (an output output_mask leaves out).
TensorType param_grad(const TensorType *p, const TensorType &x, const SymShape &sizes) {
  return p ? contiguous(p->dtype, p->sizes, p->device) : contiguous(x.dtype, sizes, x.device);
}

/// native_layer_norm_backward: (grad_input like the input, contiguous; grad_weight and
/// grad_bias like the parameters).
std::vector<TensorType> layer_norm_backward(const MetaArgs &a) {
  const TensorType &x = a.tensor("input"), &dy = a.tensor("grad_out");
  check_floating(x, "layer_norm_backward");
  COIL_USER_CHECK(dy.sizes == x.sizes, "layer_norm_backward: grad_out has shape ", shape_str(dy.sizes),
                  ", the input ", shape_str(x.sizes));
  SymShape normalized = a.ints("normalized_shape");
  COIL_USER_CHECK(!normalized.empty() && int64_t(normalized.size()) <= x.rank() &&
                      SymShape(x.sizes.end() - long(normalized.size()), x.sizes.end()) == normalized,
                  "layer_norm_backward: normalized_shape ", shape_str(normalized), " does not match the trailing dims of ",
                  shape_str(x.sizes));
  const TensorType *weight = a.optional_tensor("weight"), *bias = a.optional_tensor("bias");
  return {contiguous(x.dtype, x.sizes, x.device), param_grad(weight, x, normalized),
          param_grad(bias ? bias : weight, x, normalized)};
}

/// native_group_norm_backward: (grad_input in the input's layout as the forward's output,
/// grad_weight and grad_bias of [C]).
std::vector<TensorType> group_norm_backward(const MetaArgs &a) {
  const TensorType &x = a.tensor("input"), &dy = a.tensor("grad_out");
  check_floating(x, "group_norm_backward");
  COIL_USER_CHECK(x.rank() >= 2 && dy.sizes == x.sizes, "group_norm_backward: grad_out has shape ", shape_str(dy.sizes),
                  ", the input ", shape_str(x.sizes));
  int64_t c = a.integer("C"), group = a.integer("group");
  COIL_USER_CHECK(group > 0 && c % group == 0 && x.sizes[1] == c, "group_norm_backward: ", c,
                  " channels in ", group, " groups do not fit an input of shape ", shape_str(x.sizes));
  const TensorType *weight = a.optional_tensor("weight");
  check_group_norm_param(weight, "weight", c, x);
  MemoryFormat format = cpu(x) ? suggested_format(x) : MemoryFormat::Contiguous;
  TensorType grad{x.dtype, x.sizes, strides_for_format(x.sizes, format), x.device};
  return {grad, param_grad(weight, x, {c}), param_grad(weight, x, {c})};
}

}  // namespace

void register_norm_ops(Registry &r) {
  r.add("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", softmax("softmax"));
  r.add("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", softmax_int("softmax"));
  r.add("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", softmax_int("log_softmax"));
  r.add("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", softmax("log_softmax"));
  r.add("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        [](const MetaArgs &a) { return std::vector<TensorType>{layer_norm(a)[0]}; });
  r.add("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
        "float eps) -> (Tensor, Tensor, Tensor)",
        layer_norm);
  r.add("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, "
        "Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        layer_norm_backward);
  r.add("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
        "SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        group_norm_backward);
  r.add("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, "
        "int group, float eps) -> (Tensor, Tensor, Tensor)",
        group_norm);
  r.add("_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
        "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        [](const MetaArgs &a) { return batch_norm(a, "_native_batch_norm_legit_no_training", false, false); });
  // _native_batch_norm_legit.default updates its running statistics in place: graphs that
  // coil compiles are functional, and hold _native_batch_norm_legit_functional instead.
  r.add("_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, "
        "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        [](const MetaArgs &a) { return batch_norm(a, "_native_batch_norm_legit", std::nullopt, false); });
  r.add("_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, "
        "Tensor running_mean_out, Tensor running_var_out)",
        [](const MetaArgs &a) { return batch_norm(a, "_native_batch_norm_legit_functional", std::nullopt, true); })
      .typed_by_backend = {3, 4};
  // Batch norm in training as torch.export and AOTAutograd give it since PyTorch 2.4: the
  // functional form's outputs with an empty u8 reserve before the running statistics (the
  // buffer cuDNN's backward would read; coil's backward reads none).
  r.add("_batch_norm_with_update_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor, "
        "Tensor running_mean_out, Tensor running_var_out)",
        [](const MetaArgs &a) {
          std::vector<TensorType> outs = batch_norm(a, "_batch_norm_with_update_functional", true, true);
          outs.insert(outs.begin() + 3, contiguous(DType::U8, {0}, a.tensor("input").device));
          return outs;
        })
      .typed_by_backend = {4, 5};
}

}  // namespace coil
