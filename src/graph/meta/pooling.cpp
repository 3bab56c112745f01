// 2-d and 3-d pooling over (C, [D,] H, W) or (N, C, [D,] H, W) inputs, and 2-d upsampling:
// output sizes from PyTorch's pooling_output_shape, the output in the input's memory format.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "graph/meta/common.h"

namespace coil {
namespace {

const char *count_words(size_t dims) { return dims == 2 ? "two ints" : "three ints"; }

/// kernel_size, padding and dilation hold one value for every spatial dim or one per dim;
/// an empty stride means the kernel size.
SymShape unpack(std::string_view op, std::string_view name, const SymShape &v, size_t dims,
             std::optional<SymShape> if_empty = {}) {
  if (v.empty() && if_empty) return *if_empty;
  COIL_USER_CHECK(v.size() == 1 || v.size() == dims, op, ": ", name, " must be one int or ", count_words(dims),
                  if_empty ? " (or empty)" : "", ", got ", shape_str(v));
  return v.size() == 1 ? SymShape(dims, v[0]) : v;
}

/// The output takes the input's suggested memory format, as c10 suggests it:
/// channels-last whenever the strides read that way, even when they also read as
/// contiguous (a channels-last [N, C, 1, 1] input gives a channels-last output), where
/// coil's suggest_memory_format says contiguous.
SymShape output_strides(const TensorType &x, const SymShape &sizes) {
  bool cl = (x.rank() == 4 || x.rank() == 5) && is_channels_last(x.sizes, x.strides);
  return cl ? channels_last_strides(sizes) : contiguous_strides(sizes);
}

/// Pooling reads (C, spatial...) planes, with or without a batch dim in front.
void check_rank(std::string_view op, const TensorType &x, size_t dims) {
  const char *layout = dims == 2 ? "(C, H, W)" : "(C, D, H, W)";
  const char *batched = dims == 2 ? "(N, C, H, W)" : "(N, C, D, H, W)";
  COIL_USER_CHECK(x.rank() == int64_t(dims) + 1 || x.rank() == int64_t(dims) + 2, op, " expects a ", dims + 1,
                  "-d ", layout, " or ", dims + 2, "-d ", batched, " input, got shape ", shape_str(x.sizes));
}

/// The batch dim may be empty, the others not.
void check_input(std::string_view op, const TensorType &x, size_t dims) {
  check_rank(op, x, dims);
  bool empty_plane = false;
  for (int64_t d = x.rank() - int64_t(dims) - 1; d < x.rank(); ++d) empty_plane = empty_plane || x.sizes[size_t(d)] == 0;
  COIL_USER_CHECK(!empty_plane, op, " expects non-empty ", dims == 2 ? "C, H and W" : "C, D, H and W",
                  " dims (only the batch dim may be 0), got shape ", shape_str(x.sizes));
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

/// The same for a symbolic input size (floor mode: ceil mode's last window is a
/// comparison of sizes, specialized).
SymInt pooled_size(const SymInt &in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  if (!in.symbolic() || ceil_mode) return pooled_size(int64_t(in), kernel, pad, stride, dilation, ceil_mode);
  return sym_floor_div(in + 2 * pad - dilation * (kernel - 1) - 1, stride) + 1;
}

struct Window {
  SymShape kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

bool all(const SymShape &v, bool (*ok)(int64_t)) { return std::all_of(v.begin(), v.end(), ok); }

/// The checks of PyTorch's pool2d_shape_check (pool3d_shape_check), then the output's sizes.
SymShape pooled_shape(std::string_view op, const TensorType &x, const Window &w) {
  size_t dims = w.kernel.size();
  check_input(op, x, dims);
  auto positive = [](int64_t v) { return v > 0; };
  COIL_USER_CHECK(all(w.kernel, positive), op, ": kernel_size must be positive, got ", shape_str(w.kernel));
  COIL_USER_CHECK(all(w.stride, positive), op, ": stride must be positive, got ", shape_str(w.stride));
  COIL_USER_CHECK(all(w.dilation, positive), op, ": dilation must be positive, got ", shape_str(w.dilation));
  COIL_USER_CHECK(all(w.padding, [](int64_t v) { return v >= 0; }), op, ": padding must be non-negative, got ",
                  shape_str(w.padding));
  for (size_t k = 0; k < dims; ++k)
    COIL_USER_CHECK(w.padding[k] <= w.kernel[k] / 2, op, ": padding ", shape_str(w.padding),
                    " must be at most half of kernel_size ", shape_str(w.kernel));
  SymShape out(x.sizes.begin(), x.sizes.end() - long(dims));
  std::string pooled;
  bool empty = false;
  for (size_t k = 0; k < dims; ++k) {
    SymInt size = pooled_size(x.sizes[x.sizes.size() - dims + k], w.kernel[k], w.padding[k], w.stride[k],
                              w.dilation[k], w.ceil_mode);
    out.push_back(size);
    pooled += str_cat(k ? "x" : "", size);
    empty = empty || size < 1;
  }
  COIL_USER_CHECK(!empty, op, ": input of shape ", shape_str(x.sizes), " is too small for ", "kernel_size ",
                  shape_str(w.kernel), ", stride ", shape_str(w.stride), ", padding ", shape_str(w.padding),
                  " and dilation ", shape_str(w.dilation), ": the output would be ", pooled);
  checked_numel(out);
  return out;
}

Window window(std::string_view op, const MetaArgs &a, size_t dims, bool has_dilation, bool ceil_mode) {
  Window w;
  w.kernel = unpack(op, "kernel_size", a.ints("kernel_size"), dims);
  w.stride = unpack(op, "stride", a.ints("stride"), dims, w.kernel);
  w.padding = unpack(op, "padding", a.ints("padding"), dims);
  w.dilation = has_dilation ? unpack(op, "dilation", a.ints("dilation"), dims) : SymShape(dims, 1);
  w.ceil_mode = ceil_mode;
  return w;
}

/// max_pool2d_with_indices and max_pool3d_with_indices: (values, i64 indices), both in
/// the input's memory format.
std::vector<TensorType> max_pool_with_indices(const MetaArgs &a, size_t dims) {
  const TensorType &x = a.tensor("self");
  std::string op = str_cat("max_pool", dims, "d");
  SymShape sizes = pooled_shape(op, x, window(op, a, dims, true, a.boolean("ceil_mode")));
  // The CPU kernels take every dtype but bool, the CUDA ones floating point only.
  bool cpu = x.device.kind == Device::Kind::CPU;
  COIL_USER_CHECK(is_floating(x.dtype) || (cpu && x.dtype != DType::Bool), op, " needs ",
                  cpu ? "a non-bool input on CPU" : "a floating point input on CUDA", ", got ", short_name(x.dtype));
  SymShape strides = output_strides(x, sizes);
  return {TensorType{x.dtype, sizes, strides, x.device}, TensorType{DType::I64, sizes, strides, x.device}};
}

/// Windows of at most this many elements have their maxima's offsets in int8
/// (coil::max_pool2d_with_offsets).
constexpr int64_t kMaxOffsetWindow = 127;

/// coil::max_pool2d_with_offsets: max_pool2d_with_indices's values, and where in its window
/// each maximum lies as an i8 offset, row-major over the window (python/coil/ops.py).
std::vector<TensorType> max_pool_with_offsets(const MetaArgs &a) {
  std::vector<TensorType> out = max_pool_with_indices(a, 2);
  SymShape kernel = unpack("coil.max_pool2d_with_offsets", "kernel_size", a.ints("kernel_size"), 2);
  COIL_USER_CHECK(kernel[0] * kernel[1] <= kMaxOffsetWindow, "coil.max_pool2d_with_offsets: a window of ",
                  kernel[0] * kernel[1], " elements has offsets beyond int8's (at most ", kMaxOffsetWindow, ")");
  out[1].dtype = DType::I8;
  return out;
}

/// coil::max_pool2d_offsets_backward: the gradient of the input of `input_size`, from the
/// outputs' gradients and the forward's i8 offsets, in grad_output's memory format.
std::vector<TensorType> max_pool_offsets_backward(const MetaArgs &a) {
  const char *op = "coil.max_pool2d_offsets_backward";
  const TensorType &dy = a.tensor("grad_output"), &offsets = a.tensor("offsets");
  SymShape size = a.ints("input_size");
  COIL_USER_CHECK(offsets.dtype == DType::I8 && offsets.sizes == dy.sizes, op, ": expected i8 offsets of grad_output's shape ",
                  shape_str(dy.sizes), ", got ", short_name(offsets.dtype), shape_str(offsets.sizes));
  TensorType x{dy.dtype, size, contiguous_strides(size), dy.device};
  COIL_USER_CHECK(x.rank() == dy.rank() && pooled_shape(op, x, window(op, a, 2, true, a.boolean("ceil_mode"))) == dy.sizes,
                  op, ": grad_output of shape ", shape_str(dy.sizes), " is not the pooling of an input of shape ",
                  shape_str(size));
  COIL_USER_CHECK(is_floating(dy.dtype), op, " needs a floating point gradient, got ", short_name(dy.dtype));
  return {TensorType{dy.dtype, size, output_strides(dy, size), dy.device}};
}

/// avg_pool2d and avg_pool3d: floating inputs, and i64 on CPU.
std::vector<TensorType> avg_pool(const MetaArgs &a, size_t dims) {
  const TensorType &x = a.tensor("self");
  std::string op = str_cat("avg_pool", dims, "d");
  SymShape sizes = pooled_shape(op, x, window(op, a, dims, false, a.boolean("ceil_mode")));
  auto divisor = a.optional_integer("divisor_override");
  COIL_USER_CHECK(!divisor || *divisor != 0, op, ": divisor_override must not be zero");
  bool cpu_long = x.dtype == DType::I64 && x.device.kind == Device::Kind::CPU;
  COIL_USER_CHECK(is_floating(x.dtype) || cpu_long, op, " needs a floating point input (or i64 on CPU), got ",
                  short_name(x.dtype), " on ", x.device.str());
  return {TensorType{x.dtype, sizes, output_strides(x, sizes), x.device}};
}

/// _adaptive_avg_pool2d and _adaptive_avg_pool3d: the trailing spatial dims become
/// output_size; floating inputs only. adaptive_max_pool2d and 3d: the same, and the i64
/// positions of the maxima laid out alike.
std::vector<TensorType> adaptive_pool(const MetaArgs &a, size_t dims, bool max) {
  const TensorType &x = a.tensor("self");
  std::string op = str_cat(max ? "adaptive_max_pool" : "adaptive_avg_pool", dims, "d");
  SymShape size = a.ints("output_size");
  COIL_USER_CHECK(size.size() == dims, op, ": output_size must have ", dims, " values, got ", shape_str(size));
  COIL_USER_CHECK(all(size, [](int64_t v) { return v >= 0; }), op, ": output_size must be non-negative, got ",
                  shape_str(size));
  check_rank(op, x, dims);
  bool empty = false;
  for (size_t k = 0; k < dims; ++k) empty = empty || x.sizes[x.sizes.size() - dims + k] == 0;
  COIL_USER_CHECK(!empty, op, " expects non-empty ", dims == 2 ? "H and W" : "D, H and W", " dims, got shape ",
                  shape_str(x.sizes));
  COIL_USER_CHECK(is_floating(x.dtype), op, " needs a floating point input, got ", short_name(x.dtype));
  SymShape sizes(x.sizes.begin(), x.sizes.end() - long(dims));
  sizes.insert(sizes.end(), size.begin(), size.end());
  checked_numel(sizes);
  TensorType values{x.dtype, sizes, output_strides(x, sizes), x.device};
  if (!max) return {values};
  return {values, TensorType{DType::I64, sizes, values.strides, x.device}};
}

std::vector<TensorType> adaptive_avg_pool(const MetaArgs &a, size_t dims) { return adaptive_pool(a, dims, false); }

/// upsample_nearest2d and upsample_bilinear2d (.vec; .default with output_size and per-dim
/// scales): an (N, C, H, W) input to the output_size given, or to floor(size * scale) per
/// spatial dim, in the input's memory format.
std::vector<TensorType> upsample2d(const MetaArgs &a, std::string_view op) {
  bool vec = a.schema().find_arg("scale_factors") >= 0;
  const TensorType &x = a.tensor(vec ? "input" : "self");
  COIL_USER_CHECK(x.rank() == 4, op, " expects a 4-d (N, C, H, W) input, got shape ", shape_str(x.sizes));
  SymShape size;
  if (!vec) {
    size = a.ints("output_size");
  } else if (auto given = a.optional_ints("output_size")) {
    COIL_USER_CHECK(a.is_none("scale_factors"), op, ": give output_size or scale_factors, not both");
    size = *given;
  } else {
    COIL_USER_CHECK(!a.is_none("scale_factors"), op, ": give output_size or scale_factors");
    const ArgList &scales = a.arg("scale_factors").as<ArgList>();
    COIL_USER_CHECK(scales.size() == 2, op, ": scale_factors must have 2 values, got ", scales.size());
    for (size_t d = 0; d < 2; ++d) {
      const Arg &f = scales[d];
      double scale = f.number();
      COIL_USER_CHECK(scale > 0, op, ": scale_factors must be positive, got ", scale);
      size.push_back(int64_t(std::floor(double(x.sizes[d + 2]) * scale)));
    }
  }
  COIL_USER_CHECK(size.size() == 2 && size[0] > 0 && size[1] > 0, op,
                  ": output_size must be two positive sizes, got ", shape_str(size));
  COIL_USER_CHECK(x.sizes[2] > 0 && x.sizes[3] > 0, op, " expects non-empty H and W dims, got shape ",
                  shape_str(x.sizes));
  SymShape sizes = {x.sizes[0], x.sizes[1], size[0], size[1]};
  checked_numel(sizes);
  return {TensorType{x.dtype, sizes, output_strides(x, sizes), x.device}};
}

/// The pooling backward ops: the gradient of `self`, of its type and memory format.
std::vector<TensorType> pool_backward(const MetaArgs &a, std::string_view op) {
  const TensorType &x = a.tensor("self"), &dy = a.tensor("grad_output");
  check_rank(op, x, 2);
  COIL_USER_CHECK(dy.rank() == x.rank() && SymShape(dy.sizes.begin(), dy.sizes.end() - 2) == SymShape(x.sizes.begin(), x.sizes.end() - 2),
                  op, ": grad_output of shape ", shape_str(dy.sizes), " does not fit the input of shape ", shape_str(x.sizes));
  COIL_USER_CHECK(is_floating(x.dtype), op, " needs a floating point input, got ", short_name(x.dtype));
  return {TensorType{x.dtype, x.sizes, output_strides(x, x.sizes), x.device}};
}

/// col2im: columns [N, C*kh*kw, L] (or [C*kh*kw, L]) folded into [N, C, H, W], L being the
/// number of blocks the window takes over output_size.
std::vector<TensorType> col2im(const MetaArgs &a) {
  const TensorType &x = a.tensor("self");
  SymShape size = a.ints("output_size"), kernel = a.ints("kernel_size"), dilation = a.ints("dilation"),
        padding = a.ints("padding"), stride = a.ints("stride");
  for (const auto &[name, v] : {std::pair{"output_size", size}, std::pair{"kernel_size", kernel},
                                std::pair{"dilation", dilation}, std::pair{"padding", padding}, std::pair{"stride", stride}})
    COIL_USER_CHECK(v.size() == 2, "col2im: ", name, " must have 2 values, got ", shape_str(v));
  COIL_USER_CHECK(kernel[0] > 0 && kernel[1] > 0 && dilation[0] > 0 && dilation[1] > 0 && stride[0] > 0 && stride[1] > 0 &&
                      padding[0] >= 0 && padding[1] >= 0,
                  "col2im: kernel_size, dilation and stride must be positive and padding non-negative");
  COIL_USER_CHECK(x.rank() == 2 || x.rank() == 3, "col2im: expected a 2-d or 3-d input, got shape ", shape_str(x.sizes));
  int64_t per = kernel[0] * kernel[1], channels_in = x.sizes[size_t(x.rank() - 2)];
  COIL_USER_CHECK(channels_in % per == 0, "col2im: dim ", x.rank() - 2, " of the input (", channels_in,
                  ") must be divisible by the kernel's ", per, " elements");
  int64_t blocks = 1;
  for (size_t k = 0; k < 2; ++k) {
    int64_t b = (size[k] + 2 * padding[k] - dilation[k] * (kernel[k] - 1) - 1) / stride[k] + 1;
    COIL_USER_CHECK(b > 0, "col2im: output_size ", shape_str(size), " leaves no block for the kernel");
    blocks *= b;
  }
  COIL_USER_CHECK(x.sizes.back() == blocks, "col2im: the input has ", x.sizes.back(), " blocks, output_size ",
                  shape_str(size), " takes ", blocks);
  SymShape sizes(x.sizes.begin(), x.sizes.end() - 2);
  sizes.insert(sizes.end(), {channels_in / per, size[0], size[1]});
  return {meta::contiguous(x.dtype, sizes, x.device)};
}

/// grid_sampler_2d: input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] gives [N, C, Ho, Wo];
/// grid_sampler_3d: input [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] gives [N, C, Do, Ho, Wo]
/// (bilinear, which is trilinear there, or nearest: bicubic is for 2-d only).
MetaFn grid_sampler(size_t dims) {
  return [dims](const MetaArgs &a) {
    std::string op = str_cat("grid_sampler_", dims, "d");
    const TensorType &x = a.tensor("input"), &grid = a.tensor("grid");
    int64_t rank = int64_t(dims) + 2;
    COIL_USER_CHECK(x.rank() == rank && grid.rank() == rank && grid.sizes.back() == int64_t(dims) &&
                        grid.sizes[0] == x.sizes[0],
                    op, dims == 2 ? ": expected input [N, C, H, W] and grid [N, H_out, W_out, 2], got "
                                  : ": expected input [N, C, D, H, W] and grid [N, D_out, H_out, W_out, 3], got ",
                    shape_str(x.sizes), " and ", shape_str(grid.sizes));
    COIL_USER_CHECK(is_floating(x.dtype) && grid.dtype == x.dtype, op, ": expected input and grid of one floating dtype, got ",
                    short_name(x.dtype), " and ", short_name(grid.dtype));
    int64_t mode = a.integer("interpolation_mode"), padding = a.integer("padding_mode");
    COIL_USER_CHECK(mode >= 0 && mode <= (dims == 2 ? 2 : 1), op, ": interpolation_mode ", mode,
                    dims == 2 ? " is not 0 (bilinear), 1 (nearest) or 2 (bicubic)" : " is not 0 (bilinear) or 1 (nearest)");
    COIL_USER_CHECK(padding >= 0 && padding <= 2, op, ": padding_mode ", padding, " is not 0 (zeros), 1 (border) "
                    "or 2 (reflection)");
    SymShape out = {x.sizes[0], x.sizes[1]};
    for (size_t k = 0; k < dims; ++k) {
      COIL_USER_CHECK(x.sizes[2 + k] > 0, op, ": expected non-empty spatial dims, got shape ", shape_str(x.sizes));
      out.push_back(grid.sizes[1 + k]);
    }
    return std::vector<TensorType>{meta::contiguous(x.dtype, out, x.device)};
  };
}

/// fractional_max_pool2d and 3d: the spatial dims become output_size (each window of
/// kernel_size must fit: output + kernel - 1 <= input); random_samples holds one sample per
/// plane and spatial dim, [N, C, dims] ([1, C, dims] unbatched), of the input's dtype. Values
/// and their i64 positions in the plane, contiguous.
MetaFn fractional_max_pool(size_t dims) {
  return [dims](const MetaArgs &a) {
    std::string op = str_cat("fractional_max_pool", dims, "d");
    const TensorType &x = a.tensor("self"), &samples = a.tensor("random_samples");
    check_input(op, x, dims);
    COIL_USER_CHECK(is_floating(x.dtype), op, " needs a floating point input, got ", short_name(x.dtype));
    SymShape kernel = a.ints("kernel_size"), size = a.ints("output_size");
    COIL_USER_CHECK(kernel.size() == dims && size.size() == dims, op, ": kernel_size and output_size must have ", dims,
                    " values each, got ", shape_str(kernel), " and ", shape_str(size));
    size_t lead = size_t(x.rank()) - dims;
    for (size_t k = 0; k < dims; ++k) {
      int64_t in = x.sizes[lead + k];
      COIL_USER_CHECK(kernel[k] > 0 && size[k] > 0, op, ": kernel_size and output_size must be positive, got ",
                      shape_str(kernel), " and ", shape_str(size));
      COIL_USER_CHECK(size[k] + kernel[k] - 1 <= in, op, ": a window of ", kernel[k], " for ", size[k],
                      " outputs does not fit an input dim of ", in);
    }
    int64_t batch = x.rank() == int64_t(dims) + 2 ? int64_t(x.sizes[0]) : 1, channels = x.sizes[lead - 1];
    SymShape want = {batch, channels, int64_t(dims)};
    COIL_USER_CHECK(samples.sizes == want && samples.dtype == x.dtype, op, ": random_samples must be ",
                    short_name(x.dtype), shape_str(want), ", got ", short_name(samples.dtype), shape_str(samples.sizes));
    SymShape sizes(x.sizes.begin(), x.sizes.begin() + long(lead));
    sizes.insert(sizes.end(), size.begin(), size.end());
    return std::vector<TensorType>{meta::contiguous(x.dtype, sizes, x.device), meta::contiguous(DType::I64, sizes, x.device)};
  };
}

}  // namespace

void register_pooling_ops(Registry &r) {
  // kernel_size, stride, padding and dilation take one value or one per spatial dim
  // (stride also [] for "the kernel size"), and graphs print them as given:
  // `avg_pool2d(x, [3])`. `unpack` checks the length.
  for (size_t dims : {size_t(2), size_t(3)}) {
    std::string window_args = str_cat("int[", dims, "] kernel_size, int[", dims, "] stride=[], int[", dims,
                                      "] padding=0");
    std::string dilation = str_cat(", int[", dims, "] dilation=1, bool ceil_mode=False");
    r.add(str_cat("max_pool", dims, "d_with_indices(Tensor self, ", window_args, dilation, ") -> (Tensor, Tensor)"),
          [dims](const MetaArgs &a) { return max_pool_with_indices(a, dims); });
    r.add(str_cat("avg_pool", dims, "d(Tensor self, ", window_args,
                  ", bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"),
          [dims](const MetaArgs &a) { return avg_pool(a, dims); });
    r.add(str_cat("_adaptive_avg_pool", dims, "d(Tensor self, SymInt[", dims, "] output_size) -> Tensor"),
          [dims](const MetaArgs &a) { return adaptive_avg_pool(a, dims); });
  }
  r.add("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
        "bool ceil_mode=False) -> Tensor",
        [](const MetaArgs &a) { return std::vector<TensorType>{max_pool_with_indices(a, 2)[0]}; });
  r.add("max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
        "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
        [](const MetaArgs &a) { return pool_backward(a, "max_pool2d_with_indices_backward"); });
  r.add("coil::max_pool2d_with_offsets(Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
        "int[2] dilation, bool ceil_mode) -> (Tensor, Tensor)",
        max_pool_with_offsets);
  r.add("coil::max_pool2d_offsets_backward(Tensor grad_output, Tensor offsets, SymInt[] input_size, "
        "int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode) -> Tensor",
        max_pool_offsets_backward);
  r.add("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
        "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
        [](const MetaArgs &a) { return pool_backward(a, "avg_pool2d_backward"); });
  for (size_t dims : {size_t(2), size_t(3)}) {
    r.add(str_cat("grid_sampler_", dims, "d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                  "bool align_corners) -> Tensor"),
          grid_sampler(dims));
    r.add(str_cat("fractional_max_pool", dims, "d(Tensor self, int[", dims, "] kernel_size, int[", dims,
                  "] output_size, Tensor random_samples) -> (Tensor, Tensor)"),
          fractional_max_pool(dims));
  }
  r.add("col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
        "int[2] stride) -> Tensor",
        col2im);
  r.add("_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor",
        [](const MetaArgs &a) { return pool_backward(a, "_adaptive_avg_pool2d_backward"); });
  r.add("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
        [](const MetaArgs &a) { return adaptive_avg_pool(a, 2); });
  for (size_t dims : {2, 3})
    r.add(str_cat("adaptive_max_pool", dims, "d(Tensor self, int[", dims, "] output_size) -> (Tensor, Tensor)"),
          [dims](const MetaArgs &a) { return adaptive_pool(a, dims, true); });
  r.add("upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
        [](const MetaArgs &a) { return upsample2d(a, "upsample_nearest2d"); });
  r.add("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
        "float[]? scale_factors) -> Tensor",
        [](const MetaArgs &a) { return upsample2d(a, "upsample_bilinear2d"); });
  r.add("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor",
        [](const MetaArgs &a) { return upsample2d(a, "upsample_nearest2d"); });
  r.add("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "
        "float? scales_w=None) -> Tensor",
        [](const MetaArgs &a) { return upsample2d(a, "upsample_bilinear2d"); });
  r.add("_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
        "float[]? scale_factors) -> Tensor",
        [](const MetaArgs &a) { return upsample2d(a, "_upsample_bilinear2d_aa"); });
  r.add("_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "
        "float? scales_w=None) -> Tensor",
        [](const MetaArgs &a) { return upsample2d(a, "_upsample_bilinear2d_aa"); });
}

}  // namespace coil
