// 2-d pooling over (C, H, W) or (N, C, H, W) inputs: output sizes from PyTorch's
// pooling_output_shape, the output in the input's memory format.
#include <limits>

#include "graph/meta/common.h"

namespace coil {
namespace {

/// A (height, width) pair of a pooling parameter.
struct Pair {
  int64_t h = 0, w = 0;
};

/// kernel_size, padding and dilation hold one value for both dims or one per dim; an
/// empty stride means the kernel size.
Pair unpack(std::string_view op, std::string_view name, const Shape &v, std::optional<Pair> if_empty = {}) {
  if (v.empty() && if_empty) return *if_empty;
  COIL_USER_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must be one int or two ints",
                  if_empty ? " (or empty)" : "", ", got ", shape_str(v));
  return {v[0], v.back()};
}

std::string pair_str(Pair p) { return str_cat("[", p.h, ", ", p.w, "]"); }

/// The output takes the input's suggested memory format, as c10 suggests it:
/// channels-last whenever the strides read that way, even when they also read as
/// contiguous (a channels-last [N, C, 1, 1] input gives a channels-last output), where
/// coil's suggest_memory_format says contiguous.
Shape output_strides(const TensorType &x, const Shape &sizes) {
  bool cl = x.rank() == 4 && is_channels_last(x.sizes, x.strides);
  return cl ? channels_last_strides(sizes) : contiguous_strides(sizes);
}

/// Pooling reads (C, H, W) planes: the batch dim may be empty, the others not.
void check_input(std::string_view op, const TensorType &x) {
  COIL_USER_CHECK(x.rank() == 3 || x.rank() == 4, op,
                  " expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape ", shape_str(x.sizes));
  bool empty_plane = false;
  for (int64_t d = x.rank() - 3; d < x.rank(); ++d) empty_plane = empty_plane || x.sizes[size_t(d)] == 0;
  COIL_USER_CHECK(!empty_plane, op, " expects non-empty C, H and W dims (only the batch dim may be 0), got shape ",
                  shape_str(x.sizes));
}

/// pooling_output_shape: windows of the dilated kernel every `stride` over the padded
/// input; in ceil mode a partial window counts, unless it would start past the input
/// and its left padding.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  // In 128 bits: the arguments are the graph's, and any int64 must give an error, not
  // an overflow.
  using Wide = __int128;
  Wide span = Wide(in) + 2 * Wide(pad) - Wide(dilation) * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (div_rtn): the span is negative when the kernel outgrows the input.
  Wide out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= Wide(in) + pad) --out;
  COIL_USER_CHECK(out <= std::numeric_limits<int64_t>::max(), "the pooled size of a dim of size ", in,
                  " overflows int64");
  return int64_t(out);
}

struct Window {
  Pair kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

/// The checks of PyTorch's pool2d_shape_check, then the output's sizes.
Shape pooled_shape(std::string_view op, const TensorType &x, const Window &w) {
  check_input(op, x);
  COIL_USER_CHECK(w.kernel.h > 0 && w.kernel.w > 0, op, ": kernel_size must be positive, got ", pair_str(w.kernel));
  COIL_USER_CHECK(w.stride.h > 0 && w.stride.w > 0, op, ": stride must be positive, got ", pair_str(w.stride));
  COIL_USER_CHECK(w.dilation.h > 0 && w.dilation.w > 0, op, ": dilation must be positive, got ",
                  pair_str(w.dilation));
  COIL_USER_CHECK(w.padding.h >= 0 && w.padding.w >= 0, op, ": padding must be non-negative, got ",
                  pair_str(w.padding));
  COIL_USER_CHECK(w.padding.h <= w.kernel.h / 2 && w.padding.w <= w.kernel.w / 2, op, ": padding ",
                  pair_str(w.padding), " must be at most half of kernel_size ", pair_str(w.kernel));
  size_t h = size_t(x.rank() - 2);
  int64_t out_h = pooled_size(x.sizes[h], w.kernel.h, w.padding.h, w.stride.h, w.dilation.h, w.ceil_mode);
  int64_t out_w = pooled_size(x.sizes[h + 1], w.kernel.w, w.padding.w, w.stride.w, w.dilation.w, w.ceil_mode);
  COIL_USER_CHECK(out_h >= 1 && out_w >= 1, op, ": input of shape ", shape_str(x.sizes), " is too small for ",
                  "kernel_size ", pair_str(w.kernel), ", stride ", pair_str(w.stride), ", padding ",
                  pair_str(w.padding), " and dilation ", pair_str(w.dilation), ": the output would be ", out_h,
                  "x", out_w);
  Shape out(x.sizes.begin(), x.sizes.end() - 2);
  out.push_back(out_h);
  out.push_back(out_w);
  checked_numel(out);
  return out;
}

Window window(std::string_view op, const MetaArgs &a, bool has_dilation, bool ceil_mode) {
  Window w;
  w.kernel = unpack(op, "kernel_size", a.ints("kernel_size"));
  w.stride = unpack(op, "stride", a.ints("stride"), w.kernel);
  w.padding = unpack(op, "padding", a.ints("padding"));
  w.dilation = has_dilation ? unpack(op, "dilation", a.ints("dilation")) : Pair{1, 1};
  w.ceil_mode = ceil_mode;
  return w;
}

/// max_pool2d_with_indices: (values, i64 indices), both in the input's memory format.
std::vector<TensorType> max_pool2d_with_indices(const MetaArgs &a) {
  const TensorType &x = a.tensor("self");
  Shape sizes = pooled_shape("max_pool2d", x, window("max_pool2d", a, true, a.boolean("ceil_mode")));
  // The CPU kernels take every dtype but bool, the CUDA ones floating point only.
  bool cpu = x.device.kind == Device::Kind::CPU;
  COIL_USER_CHECK(is_floating(x.dtype) || (cpu && x.dtype != DType::Bool), "max_pool2d needs ",
                  cpu ? "a non-bool input on CPU" : "a floating point input on CUDA", ", got ", short_name(x.dtype));
  Shape strides = output_strides(x, sizes);
  return {TensorType{x.dtype, sizes, strides, x.device}, TensorType{DType::I64, sizes, strides, x.device}};
}

/// max_pool2d: the values alone.
std::vector<TensorType> max_pool2d(const MetaArgs &a) { return {max_pool2d_with_indices(a)[0]}; }

/// avg_pool2d: floating inputs, and i64 on CPU.
std::vector<TensorType> avg_pool2d(const MetaArgs &a) {
  const TensorType &x = a.tensor("self");
  Shape sizes = pooled_shape("avg_pool2d", x, window("avg_pool2d", a, false, a.boolean("ceil_mode")));
  auto divisor = a.optional_integer("divisor_override");
  COIL_USER_CHECK(!divisor || *divisor != 0, "avg_pool2d: divisor_override must not be zero");
  bool cpu_long = x.dtype == DType::I64 && x.device.kind == Device::Kind::CPU;
  COIL_USER_CHECK(is_floating(x.dtype) || cpu_long, "avg_pool2d needs a floating point input (or i64 on CPU), got ",
                  short_name(x.dtype), " on ", x.device.str());
  return {TensorType{x.dtype, sizes, output_strides(x, sizes), x.device}};
}

/// _adaptive_avg_pool2d: the trailing (H, W) become output_size; floating inputs only.
std::vector<TensorType> adaptive_avg_pool2d(const MetaArgs &a) {
  const TensorType &x = a.tensor("self");
  Shape size = a.ints("output_size");
  COIL_USER_CHECK(size.size() == 2, "adaptive_avg_pool2d: output_size must have 2 values, got ", shape_str(size));
  COIL_USER_CHECK(size[0] >= 0 && size[1] >= 0, "adaptive_avg_pool2d: output_size must be non-negative, got ",
                  shape_str(size));
  COIL_USER_CHECK(x.rank() == 3 || x.rank() == 4, "adaptive_avg_pool2d expects a 3-d (C, H, W) or 4-d "
                  "(N, C, H, W) input, got shape ", shape_str(x.sizes));
  size_t h = size_t(x.rank() - 2);
  COIL_USER_CHECK(x.sizes[h] > 0 && x.sizes[h + 1] > 0, "adaptive_avg_pool2d expects non-empty H and W dims, "
                  "got shape ", shape_str(x.sizes));
  COIL_USER_CHECK(is_floating(x.dtype), "adaptive_avg_pool2d needs a floating point input, got ",
                  short_name(x.dtype));
  Shape sizes(x.sizes.begin(), x.sizes.end() - 2);
  sizes.insert(sizes.end(), size.begin(), size.end());
  checked_numel(sizes);
  return {TensorType{x.dtype, sizes, output_strides(x, sizes), x.device}};
}

}  // namespace

void register_pooling_ops(Registry &r) {
  // kernel_size, stride, padding and dilation take one or two values (stride also []
  // for "the kernel size"), and graphs print them as given: `avg_pool2d(x, [3])`.
  // `unpack` checks the length.
  const char *window_args = "int[2] kernel_size, int[2] stride=[], int[2] padding=0";
  r.add(str_cat("max_pool2d_with_indices(Tensor self, ", window_args,
                ", int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"),
        max_pool2d_with_indices);
  r.add(str_cat("max_pool2d(Tensor self, ", window_args, ", int[2] dilation=1, bool ceil_mode=False) -> Tensor"),
        max_pool2d);
  r.add(str_cat("avg_pool2d(Tensor self, ", window_args,
                ", bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"),
        avg_pool2d);
  r.add("_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", adaptive_avg_pool2d);
  r.add("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", adaptive_avg_pool2d);
}

}  // namespace coil
