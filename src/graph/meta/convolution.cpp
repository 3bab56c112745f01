// Convolution: output sizes from the window arithmetic, memory format from the input.
#include "graph/meta/common.h"

namespace coil {
namespace {

/// stride/padding/dilation lists may hold one value for every spatial dim.
SymShape expand_param(const SymShape &p, size_t spatial, std::string_view name) {
  if (p.size() == 1) return SymShape(spatial, p[0]);
  COIL_USER_CHECK(p.size() == spatial, name, " has ", p.size(), " values, expected ", spatial);
  return p;
}

std::vector<TensorType> convolution(const MetaArgs &a) {
  const TensorType &x = a.tensor("input");
  const TensorType &w = a.tensor("weight");
  COIL_USER_CHECK(x.rank() >= 3 && x.rank() == w.rank(), "convolution expects input and weight of "
                  "the same rank >= 3, got ", shape_str(x.sizes), " and ", shape_str(w.sizes));
  COIL_USER_CHECK(x.dtype == w.dtype, "convolution input is ", short_name(x.dtype),
                  " but weight is ", short_name(w.dtype));
  size_t spatial = size_t(x.rank() - 2);
  SymShape stride = expand_param(a.ints("stride"), spatial, "stride");
  SymShape padding = expand_param(a.ints("padding"), spatial, "padding");
  SymShape dilation = expand_param(a.ints("dilation"), spatial, "dilation");
  bool transposed = a.boolean("transposed");
  SymShape out_pad = transposed ? expand_param(a.ints("output_padding"), spatial, "output_padding")
                             : SymShape(spatial, 0);
  int64_t groups = a.integer("groups");
  COIL_USER_CHECK(groups > 0, "groups must be positive, got ", groups);
  int64_t in_channels = transposed ? w.sizes[0] : w.sizes[1] * groups;
  COIL_USER_CHECK(x.sizes[1] == in_channels, "input has ", x.sizes[1], " channels but weight ",
                  shape_str(w.sizes), " with groups=", groups, " expects ", in_channels);
  int64_t out_channels = transposed ? w.sizes[1] * groups : w.sizes[0];
  COIL_USER_CHECK(transposed || out_channels % groups == 0, "weight's ", out_channels,
                  " output channels are not divisible by groups=", groups);
  if (const TensorType *b = a.optional_tensor("bias"))
    COIL_USER_CHECK(b->sizes == SymShape{out_channels}, "bias has shape ", shape_str(b->sizes),
                    ", expected [", out_channels, "]");

  SymShape out = {x.sizes[0], out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    COIL_USER_CHECK(stride[i] > 0 && dilation[i] > 0 && padding[i] >= 0,
                    "stride and dilation must be positive and padding non-negative");
    SymInt in = x.sizes[i + 2], k = w.sizes[i + 2];
    SymInt reach = in + 2 * padding[i] - dilation[i] * (k - 1) - 1;  // C++'s division truncates:
    SymInt size = transposed ? (in - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + out_pad[i] + 1
                  : reach >= 0 ? sym_floor_div(reach, stride[i]) + 1
                               : SymInt(int64_t(reach) / stride[i] + 1);
    COIL_USER_CHECK(size > 0, "the output of convolution would be empty along spatial dim ", i,
                    ": input ", in, ", kernel ", k, ", padding ", padding[i], ", dilation ", dilation[i]);
    out.push_back(size);
  }
  // PyTorch keeps channels-last when the input is (on CUDA also when the weight is, if
  // cuDNN takes that layout for the dtype). What a graph's annotation says wins
  // (OpDef::layout_from_backend): which library runs, and in which layout, is its choice.
  bool cl = suggest_memory_format(x.sizes, x.strides) == MemoryFormat::ChannelsLast ||
            (x.device.kind == Device::Kind::CUDA &&
             suggest_memory_format(w.sizes, w.strides) == MemoryFormat::ChannelsLast);
  SymShape strides = cl && out.size() == 4 ? channels_last_strides(out) : contiguous_strides(out);
  return {TensorType{x.dtype, out, strides, x.device}};
}

/// convolution_backward: grad_input of the input's type (in the input's memory format),
/// grad_weight of the weight's, grad_bias [C_out] (of bias_sizes) in grad_output's dtype.
std::vector<TensorType> convolution_backward(const MetaArgs &a) {
  const TensorType &dy = a.tensor("grad_output"), &x = a.tensor("input"), &w = a.tensor("weight");
  COIL_USER_CHECK(x.rank() >= 3 && x.rank() == w.rank() && dy.rank() == x.rank(), "convolution_backward expects "
                  "grad_output, input and weight of one rank >= 3, got ", shape_str(dy.sizes), ", ", shape_str(x.sizes),
                  " and ", shape_str(w.sizes));
  COIL_USER_CHECK(x.dtype == w.dtype && dy.dtype == x.dtype, "convolution_backward expects one dtype, got ",
                  short_name(dy.dtype), ", ", short_name(x.dtype), " and ", short_name(w.dtype));
  COIL_USER_CHECK(dy.sizes[0] == x.sizes[0] && dy.sizes[1] == w.sizes[0], "convolution_backward: grad_output of shape ",
                  shape_str(dy.sizes), " does not fit input ", shape_str(x.sizes), " and weight ", shape_str(w.sizes));
  bool cl = suggest_memory_format(x.sizes, x.strides) == MemoryFormat::ChannelsLast && x.rank() == 4;
  TensorType grad_input{x.dtype, x.sizes, cl ? channels_last_strides(x.sizes) : SymShape(contiguous_strides(x.sizes)), x.device};
  bool wcl = suggest_memory_format(w.sizes, w.strides) == MemoryFormat::ChannelsLast && w.rank() == 4;
  TensorType grad_weight{w.dtype, w.sizes, wcl ? channels_last_strides(w.sizes) : SymShape(contiguous_strides(w.sizes)), w.device};
  SymShape bias = a.optional_ints("bias_sizes").value_or(SymShape{w.sizes[0]});
  return {grad_input, grad_weight, meta::contiguous(dy.dtype, bias, dy.device)};
}

}  // namespace

void register_convolution_ops(Registry &r) {
  r.add("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, "
        "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, "
        "bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        convolution_backward)
      .layout_from_backend = true;
  r.add("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
        "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
        convolution)
      .layout_from_backend = true;
}

}  // namespace coil
