// Factories: tensors made from sizes and options (full, empty, arange, iota) and from
// another tensor (the *_like and new_* families).
#include <cmath>
#include <limits>

#include "graph/meta/common.h"

namespace coil {

namespace {

using meta::check_strided;
using meta::contiguous;

/// The options every factory takes: dtype, layout, device (pin_memory does not change
/// the type). Absent dtype and device fall back to the given defaults.
struct Options {
  DType dtype;
  Device device;
};

/// A device argument as the new tensor reports it: a bare `cuda` means the current
/// CUDA device, which graphs print as cuda:0.
Device resolved(Device d) {
  if (d.kind == Device::Kind::CUDA && d.index < 0) d.index = 0;
  return d;
}

Options options(const MetaArgs &a, DType default_dtype, Device default_device) {
  check_strided(a.optional_layout("layout"));
  auto device = a.optional_device("device");
  return {a.optional_dtype("dtype").value_or(default_dtype), device ? resolved(*device) : default_device};
}

/// A fresh tensor of `size` (an int list argument); a negative size is an error.
TensorType fresh(const Options &o, SymShape sizes) {
  checked_numel(sizes);
  return contiguous(o.dtype, std::move(sizes), o.device);
}

/// The dtype torch.full gives a Python number: bool, i64, or the default float.
DType number_dtype(const Arg &value) {
  if (value.is<bool>()) return DType::Bool;
  if (value.is_int()) return DType::I64;
  return kDefaultFloat;
}

/// full, zeros, ones: the size argument and the default dtype.
MetaFn sized_factory(bool infer_from_fill) {
  return [=](const MetaArgs &a) {
    DType dtype = infer_from_fill ? number_dtype(a.arg("fill_value")) : kDefaultFloat;
    return std::vector<TensorType>{fresh(options(a, dtype, Device{}), a.sym_ints("size"))};
  };
}

std::vector<TensorType> empty(const MetaArgs &a) {
  Options o = options(a, kDefaultFloat, Device{});
  auto format = a.optional_memory_format("memory_format").value_or(MemoryFormat::Contiguous);
  COIL_USER_CHECK(format != MemoryFormat::Preserve, "empty: memory_format=preserve_format is not supported; "
                  "expected contiguous_format, channels_last or channels_last_3d");
  SymShape sizes = a.sym_ints("size");
  checked_numel(sizes);
  return {TensorType{o.dtype, sizes, strides_for_format(sizes, format), o.device}};
}

/// empty_permuted: dense, with its dims laid out in memory in the order `physical_layout`
/// states (outermost first): a contiguous tensor of the permuted sizes, permuted back.
std::vector<TensorType> empty_permuted(const MetaArgs &a) {
  Options o = options(a, kDefaultFloat, Device{});
  SymShape sizes = a.sym_ints("size"), layout = a.ints("physical_layout");
  int64_t rank = int64_t(sizes.size());
  COIL_USER_CHECK(int64_t(layout.size()) == rank, "Number of dimensions in size does not match the length of the "
                  "physical_layout; i.e. len(size) = ", rank, " is not equal to len(physical_layout) = ", layout.size());
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < layout.size(); ++i) {
    COIL_USER_CHECK(layout[i] >= 0 && layout[i] < rank, "Dimension out of range (expected to be between 0 and ",
                    rank - 1, ", but got ", layout[i], " at index ", i, ")");
    COIL_USER_CHECK(!seen[size_t(layout[i])], "Duplicate dim not allowed");
    seen[size_t(layout[i])] = true;
  }
  checked_numel(sizes);
  SymShape permuted;
  for (int64_t d : layout) permuted.push_back(sizes[size_t(d)]);
  SymShape packed = contiguous_strides(permuted);
  SymShape strides(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < layout.size(); ++i) strides[size_t(layout[i])] = packed[i];
  return {TensorType{o.dtype, sizes, strides, o.device}};
}

/// empty_strided and new_empty_strided (`op`, for messages): the strides are given.
TensorType strided(std::string_view op, const Options &o, SymShape sizes, SymShape strides) {
  COIL_USER_CHECK(sizes.size() == strides.size(), op, ": size ", shape_str(sizes), " and stride ",
                  shape_str(strides), " must have the same length");
  checked_numel(sizes);
  for (int64_t s : strides)
    COIL_USER_CHECK(s >= 0, op, ": negative stride ", s, " in ", shape_str(strides), "; strides must be non-negative");
  return TensorType{o.dtype, std::move(sizes), std::move(strides), o.device};
}

std::vector<TensorType> empty_strided(const MetaArgs &a) {
  return {strided("empty_strided", options(a, kDefaultFloat, Device{}), a.sym_ints("size"), a.sym_ints("stride"))};
}

/// zeros_like, ones_like, empty_like, full_like: self's sizes, dtype and device unless
/// overridden, and self's layout under preserve_format (the default).
std::vector<TensorType> like(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  Options o = options(a, self.dtype, self.device);
  auto format = a.optional_memory_format("memory_format").value_or(MemoryFormat::Preserve);
  SymShape strides = format == MemoryFormat::Preserve ? dense_order_strides(self)
                                                   : strides_for_format(self.sizes, format);
  return {TensorType{o.dtype, self.sizes, strides, o.device}};
}

/// new_zeros, new_ones, new_empty, new_full: a fresh contiguous tensor of `size` with
/// self's dtype and device unless overridden (never the fill value's type).
std::vector<TensorType> new_sized(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  return {fresh(options(a, self.dtype, self.device), a.sym_ints("size"))};
}

std::vector<TensorType> new_empty_strided(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  return {strided("new_empty_strided", options(a, self.dtype, self.device), a.sym_ints("size"), a.sym_ints("stride"))};
}

std::vector<TensorType> scalar_tensor(const MetaArgs &a) {
  // The value's Python type does not matter: scalar_tensor(3) is f32.
  return {fresh(options(a, kDefaultFloat, Device{}), {})};
}

/// An arange bound or step as written: a Python int (or bool) or float.
struct Number {
  bool is_int;
  int64_t i;
  double d;
};

Number number(const MetaArgs &a, std::string_view name) {
  const Arg &v = a.arg(name);
  if (v.is<double>()) return {false, 0, v.as<double>()};
  int64_t i = v.is<bool>() ? int64_t(v.as<bool>()) : v.integer();
  return {true, i, double(i)};
}

/// Python's int(x) for a finite float: truncation toward zero.
int64_t truncate(const Number &n) {
  if (n.is_int) return n.i;
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  COIL_USER_CHECK(n.d > -kLimit && n.d < kLimit, "arange: ", n.d, " does not fit in int64");
  return int64_t(n.d);
}

int64_t floor_div(__int128 a, __int128 b) {
  __int128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  COIL_USER_CHECK(q >= 0 && q <= std::numeric_limits<int64_t>::max(), "arange: the length overflows int64");
  return int64_t(q);
}

/// The number of elements of arange as torch._refs.arange computes it. Integer results
/// truncate the bounds first; int64 results (and all-int arguments) count with integer
/// arithmetic, other dtypes with ceil((end - start) / step) in double, as ATen does.
int64_t arange_length(const Number &start, const Number &end, const Number &step, DType dtype) {
  bool integer_args = start.is_int && end.is_int && step.is_int;
  if (dtype == DType::I64 || integer_args) {
    int64_t xstart = truncate(start), xend = truncate(end), xstep = truncate(step);
    COIL_USER_CHECK(xstep != 0, "arange: step ", step.d, " truncates to 0 for an integer result; "
                    "expected a step of magnitude at least 1");
    __int128 sign = xstep > 0 ? 1 : -1;
    return floor_div(__int128(xend) - xstart + xstep - sign, xstep);
  }
  if (is_integral(dtype))
    COIL_USER_CHECK(truncate(step) != 0, "arange: step ", step.d, " truncates to 0 for an integer result; "
                    "expected a step of magnitude at least 1");
  double length = std::ceil((end.d - start.d) / step.d);
  COIL_USER_CHECK(length < 9223372036854775808.0, "arange: the length overflows int64");
  return int64_t(length);
}

void check_arange_range(const Number &start, const Number &end, const Number &step) {
  COIL_USER_CHECK(step.d != 0, "arange: step must be nonzero");
  COIL_USER_CHECK(!(step.d > 0 && end.d < start.d) && !(step.d < 0 && end.d > start.d),
                  "arange: the range from ", start.d, " to ", end.d, " does not go in the direction of step ",
                  step.d);
  COIL_USER_CHECK(std::isfinite(start.d) && std::isfinite(end.d), "arange: unsupported range ", start.d, " -> ",
                  end.d, "; expected finite bounds");
  COIL_USER_CHECK(std::isfinite(step.d), "arange: step must be finite, got ", step.d);
}

/// arange, arange.start, arange.start_step; `start` and `step` default to 0 and 1.
MetaFn arange(bool has_start, bool has_step) {
  return [=](const MetaArgs &a) {
    Number start = has_start ? number(a, "start") : Number{true, 0, 0.0};
    Number step = has_step ? number(a, "step") : Number{true, 1, 1.0};
    // arange(s0), arange(0, s0 * 2, 3): a length of symbols when the bounds are integers and
    // the step a positive one.
    if (start.is_int && step.is_int && step.i > 0 && a.arg("end").is_int() && a.sym_integer("end").symbolic()) {
      SymInt end = a.sym_integer("end");
      COIL_USER_CHECK(end >= start.i, "arange: the range from ", start.i, " to ", end,
                      " does not go in the direction of step ", step.i);
      Options o = options(a, DType::I64, Device{});
      return std::vector<TensorType>{fresh(o, {sym_floor_div(end - start.i + (step.i - 1), step.i)})};
    }
    Number end = number(a, "end");
    check_arange_range(start, end, step);
    bool integer_args = start.is_int && end.is_int && step.is_int;
    Options o = options(a, integer_args ? DType::I64 : kDefaultFloat, Device{});
    return std::vector<TensorType>{fresh(o, {arange_length(start, end, step, o.dtype)})};
  };
}

std::vector<TensorType> iota(const MetaArgs &a) {
  DType dtype = *a.optional_dtype("dtype");
  COIL_USER_CHECK(is_integral(dtype), "prims.iota only supports integer dtypes, got ", short_name(dtype));
  COIL_USER_CHECK(a.integer("step") != 0, "prims.iota: step must be nonzero");
  return {fresh(Options{dtype, resolved(*a.optional_device("device"))}, {a.integer("length")})};
}

// ---- random tensors -------------------------------------------------------------------

/// rand, randn: floating dtypes only, as eager checks.
std::vector<TensorType> random_floats(const MetaArgs &a) {
  Options o = options(a, kDefaultFloat, Device{});
  COIL_USER_CHECK(is_floating(o.dtype), "random floats need a floating dtype, got ", short_name(o.dtype));
  return {fresh(o, a.sym_ints("size"))};
}

/// rand_like, randn_like: `like`, floating.
std::vector<TensorType> random_floats_like(const MetaArgs &a) {
  std::vector<TensorType> out = like(a);
  COIL_USER_CHECK(is_floating(out[0].dtype), "random floats need a floating dtype, got ", short_name(out[0].dtype));
  return out;
}

/// randint, randint.low: integers in [low, high), int64 unless told.
std::vector<TensorType> randint(const MetaArgs &a) {
  int64_t low = a.schema().find_arg("low") >= 0 ? a.integer("low") : 0, high = a.integer("high");
  COIL_USER_CHECK(low < high, "randint: expected low < high, got low ", low, " and high ", high);
  Options o = options(a, DType::I64, Device{});
  COIL_USER_CHECK(o.dtype != DType::Bool || high <= 2, "randint: bool values need high <= 2, got ", high);
  return {fresh(o, a.sym_ints("size"))};
}

std::vector<TensorType> randperm(const MetaArgs &a) {
  int64_t n = a.integer("n");
  COIL_USER_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  Options o = options(a, DType::I64, Device{});
  COIL_USER_CHECK(o.dtype != DType::Bool && o.dtype != DType::F16 && o.dtype != DType::BF16,
                  "randperm: dtype ", short_name(o.dtype), " is not supported");
  return {fresh(o, {n})};
}

/// multinomial(self, num_samples, replacement): num_samples category indices (int64) drawn
/// from each row of self's weights (1-d: one row; 2-d: a row per leading index). Without
/// replacement a row's samples are distinct, so there must be as many categories.
std::vector<TensorType> multinomial(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t k = a.integer("num_samples");
  COIL_USER_CHECK(self.sizes.size() == 1 || self.sizes.size() == 2,
                  "multinomial: expected 1-d or 2-d weights, got ", self.sizes.size(), "-d");
  COIL_USER_CHECK(is_floating(self.dtype), "multinomial: expected floating weights, got ", short_name(self.dtype));
  COIL_USER_CHECK(k > 0, "multinomial: expected num_samples > 0, got ", k);
  COIL_USER_CHECK(self.sizes.back() > 0, "multinomial: expected at least one category");
  COIL_USER_CHECK(a.boolean("replacement") || k <= self.sizes.back(), "multinomial: cannot draw ", k,
                  " samples without replacement from ", self.sizes.back(), " categories");
  SymShape sizes = self.sizes;
  sizes.back() = k;
  return {TensorType{DType::I64, sizes, contiguous_strides(sizes), self.device}};
}

/// bernoulli: self's type, contiguous whatever self's layout (eager's legacy contiguous
/// format), floating.
std::vector<TensorType> bernoulli(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(is_floating(self.dtype), "bernoulli: expected a floating tensor, got ", short_name(self.dtype));
  if (a.schema().find_arg("p") >= 0) {
    double p = a.floating("p");
    COIL_USER_CHECK(p >= 0 && p <= 1, "bernoulli: expected 0 <= p <= 1, got ", p);
  }
  return {TensorType{self.dtype, self.sizes, contiguous_strides(self.sizes), self.device}};
}

/// uniform, normal_functional, exponential, cauchy, log_normal: floating numbers of self's
/// dtype, shape and dense layout, drawn with the distribution's parameters checked as eager
/// checks them; geometric's numbers may be integers.
MetaFn distribution_like_self(bool floating_only) {
  return [=](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    const std::string &name = a.schema().name;
    COIL_USER_CHECK(!floating_only || is_floating(self.dtype), name,
                    ": expected a floating tensor, got ", short_name(self.dtype));
    auto positive = [&](const char *param) {
      double v = a.floating(param);
      COIL_USER_CHECK(v > 0, name, " expects ", param, " > 0.0, but found ", param, "=", v);
    };
    if (name == "uniform") {
      double from = a.floating("from"), to = a.floating("to");
      COIL_USER_CHECK(from <= to, "uniform expects to return a [from, to) range, but found from=", from, " > to=", to);
    } else if (name == "normal_functional") {
      COIL_USER_CHECK(a.floating("std") >= 0, "normal expects std >= 0.0, but found std ", a.floating("std"));
    } else if (name == "exponential") {
      positive("lambd");
    } else if (name == "cauchy") {
      positive("sigma");
    } else if (name == "log_normal") {
      positive("std");
    } else if (name == "geometric") {
      double p = a.floating("p");
      COIL_USER_CHECK(p > 0 && p < 1, "geometric expects p to be in (0, 1), but got p=", p);
    }
    return std::vector<TensorType>{TensorType{self.dtype, self.sizes, dense_order_strides(self), self.device}};
  };
}

/// normal with a tensor mean or std: PyTorch's reference, std * samples + mean, where the
/// samples are contiguous of the broadcast shape: the elementwise layout of those two ops,
/// and the promoted dtype of mean and std. normal.float_float: `size`, floating.
std::vector<TensorType> normal(const MetaArgs &a) {
  if (a.schema().find_arg("size") >= 0) {
    COIL_USER_CHECK(a.floating("std") >= 0, "normal expects std >= 0.0, but found std ", a.floating("std"));
    Options o = options(a, kDefaultFloat, Device{});
    COIL_USER_CHECK(is_floating(o.dtype), "normal: expected a floating dtype, got ", short_name(o.dtype));
    return {fresh(o, a.sym_ints("size"))};
  }
  if (!a.arg("std").is<ValueId>())
    COIL_USER_CHECK(a.floating("std") >= 0, "normal expects std >= 0.0, but found std ", a.floating("std"));
  const TensorType *mean = a.arg("mean").is<ValueId>() ? &a.tensor("mean") : nullptr;
  const TensorType *std = a.arg("std").is<ValueId>() ? &a.tensor("std") : nullptr;
  const TensorType &first = mean ? *mean : *std;
  SymShape sizes = mean && std ? broadcast_shapes(mean->sizes, std->sizes) : SymShape(first.sizes);
  std::vector<PromotionOperand> promo;
  for (const TensorType *t : {mean, std}) {
    if (t) COIL_USER_CHECK(is_floating(t->dtype), "normal expects floating-point tensors, got ", short_name(t->dtype));
    promo.push_back(t ? PromotionOperand{t->dtype, t->rank(), false} : PromotionOperand{DType::F64, 0, true});
  }
  TensorType samples = contiguous(first.dtype, sizes, first.device);
  TensorType scaled{samples.dtype, sizes, samples.strides, samples.device};
  if (std) {
    std::vector<const TensorType *> mul = {std, &samples};
    scaled.strides = elementwise_output_strides(sizes, mul);
  }
  TensorType out{result_type(promo), sizes, scaled.strides, first.device};
  if (mean) {
    std::vector<const TensorType *> add = {&scaled, mean};
    out.strides = elementwise_output_strides(sizes, add);
  }
  return {out};
}

/// randint_like: integers in [low, high) like self, of self's dtype unless told.
std::vector<TensorType> randint_like(const MetaArgs &a) {
  int64_t low = a.schema().find_arg("low") >= 0 ? a.integer("low") : 0, high = a.integer("high");
  COIL_USER_CHECK(low < high, "randint_like: expected low < high, got low ", low, " and high ", high);
  return like(a);
}

/// rrelu_with_noise_functional: the output like self, and the noise like noise.
std::vector<TensorType> rrelu_with_noise(const MetaArgs &a) {
  const TensorType &self = a.tensor("self"), &noise = a.tensor("noise");
  COIL_USER_CHECK(is_floating(self.dtype), "rrelu: expected a floating tensor, got ", short_name(self.dtype));
  COIL_USER_CHECK(self.sizes == noise.sizes || !a.boolean("training"),
                  "rrelu: noise must have self's shape in training, got ", shape_str(noise.sizes), " and ",
                  shape_str(self.sizes));
  return {TensorType{self.dtype, self.sizes, dense_order_strides(self), self.device},
          TensorType{noise.dtype, noise.sizes, dense_order_strides(noise), noise.device}};
}

/// native_dropout: the output like the input and the mask of bools kept, both in the
/// input's layout.
std::vector<TensorType> native_dropout(const MetaArgs &a) {
  const TensorType &input = a.tensor("input");
  double p = a.floating("p");
  COIL_USER_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  SymShape strides = dense_order_strides(input);
  return {TensorType{input.dtype, input.sizes, strides, input.device},
          TensorType{DType::Bool, input.sizes, strides, input.device}};
}

/// coil::dropout_keep: a contiguous mask of bools of `size` on the seed's device.
std::vector<TensorType> dropout_keep(const MetaArgs &a) {
  const TensorType &seed = a.tensor("seed");
  COIL_USER_CHECK(seed.dtype == DType::I64 && seed.sizes == SymShape{2}, "coil.dropout_keep: expected the seed as i64[2] ",
                  "(key, first counter), got ", short_name(seed.dtype), shape_str(seed.sizes));
  double p = a.floating("p");
  COIL_USER_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  SymShape sizes = a.sym_ints("size");
  for (int64_t s : sizes) COIL_USER_CHECK(s >= 0, "coil.dropout_keep: negative size in ", shape_str(sizes));
  checked_numel(sizes);
  return {TensorType{DType::Bool, sizes, contiguous_strides(sizes), seed.device}};
}

// The keyword-only options every factory takes, as native_functions.yaml spells them.
constexpr const char *kOptions =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

}  // namespace

void register_creation_ops(Registry &r) {
  r.add(str_cat("full(SymInt[] size, Scalar fill_value, *, ", kOptions, ") -> Tensor"), sized_factory(true));
  r.add(str_cat("zeros(SymInt[] size, *, ", kOptions, ") -> Tensor"), sized_factory(false));
  r.add(str_cat("ones(SymInt[] size, *, ", kOptions, ") -> Tensor"), sized_factory(false));
  r.add(str_cat("empty.memory_format(SymInt[] size, *, ", kOptions, ", MemoryFormat? memory_format=None) -> Tensor"),
        empty);
  r.add(str_cat("empty_strided(SymInt[] size, SymInt[] stride, *, ", kOptions, ") -> Tensor"), empty_strided);
  r.add(str_cat("empty_permuted(SymInt[] size, int[] physical_layout, *, ", kOptions, ") -> Tensor"), empty_permuted);
  r.add(str_cat("scalar_tensor(Scalar s, *, ", kOptions, ") -> Tensor"), scalar_tensor);

  r.add(str_cat("arange(Scalar end, *, ", kOptions, ") -> Tensor"), arange(false, false));
  r.add(str_cat("arange.start(Scalar start, Scalar end, *, ", kOptions, ") -> Tensor"), arange(true, false));
  r.add(str_cat("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ", kOptions, ") -> Tensor"),
        arange(true, true));
  r.add("prims::iota(SymInt length, *, SymInt start, SymInt step, ScalarType dtype, Device device, "
        "bool requires_grad) -> Tensor",
        iota);

  for (const char *name : {"zeros_like", "ones_like", "empty_like"})
    r.add(str_cat(name, "(Tensor self, *, ", kOptions, ", MemoryFormat? memory_format=None) -> Tensor"), like);
  r.add(str_cat("full_like(Tensor self, Scalar fill_value, *, ", kOptions,
                ", MemoryFormat? memory_format=None) -> Tensor"),
        like);

  // Random tensors: drawn by coil's generator (src/lowering/random.cpp).
  r.add(str_cat("rand(SymInt[] size, *, ", kOptions, ") -> Tensor"), random_floats);
  r.add(str_cat("randn(SymInt[] size, *, ", kOptions, ") -> Tensor"), random_floats);
  for (const char *name : {"rand_like", "randn_like"})
    r.add(str_cat(name, "(Tensor self, *, ", kOptions, ", MemoryFormat? memory_format=None) -> Tensor"),
          random_floats_like);
  r.add(str_cat("randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, "
                "Device? device=None, bool? pin_memory=None) -> Tensor"),
        randint);
  r.add(str_cat("randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, "
                "Device? device=None, bool? pin_memory=None) -> Tensor"),
        randint);
  r.add("randperm(SymInt n, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor",
        randperm);
  r.add("multinomial(Tensor self, int num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor",
        multinomial);
  r.add("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", bernoulli);
  r.add("bernoulli.p(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor", bernoulli);
  r.add("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", native_dropout);
  r.add("coil::dropout_keep(Tensor seed, SymInt[] size, float p) -> Tensor", dropout_keep);
  r.add("uniform(Tensor self, float from=0., float to=1., *, Generator? generator=None) -> Tensor",
        distribution_like_self(true));
  r.add("normal_functional(Tensor self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor",
        distribution_like_self(true));
  r.add("exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor",
        distribution_like_self(true));
  r.add("cauchy(Tensor self, float median=0., float sigma=1., *, Generator? generator=None) -> Tensor",
        distribution_like_self(true));
  r.add("log_normal(Tensor self, float mean=1., float std=2., *, Generator? generator=None) -> Tensor",
        distribution_like_self(true));
  r.add("geometric(Tensor self, float p, *, Generator? generator=None) -> Tensor", distribution_like_self(false));
  r.add("normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor", normal);
  r.add("normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor", normal);
  r.add("normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor", normal);
  r.add(str_cat("normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ", kOptions,
                ") -> Tensor"),
        normal);
  r.add(str_cat("randint_like(Tensor self, SymInt high, *, ", kOptions, ", MemoryFormat? memory_format=None) -> Tensor"),
        randint_like);
  r.add(str_cat("randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ", kOptions,
                ", MemoryFormat? memory_format=None) -> Tensor"),
        randint_like);
  r.add("rrelu_with_noise_functional(Tensor self, Tensor noise, Scalar lower=0.125, "
        "Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> (Tensor, Tensor noise_out)",
        rrelu_with_noise);

  for (const char *name : {"new_zeros", "new_ones", "new_empty"})
    r.add(str_cat(name, "(Tensor self, SymInt[] size, *, ", kOptions, ") -> Tensor"), new_sized);
  r.add(str_cat("new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ", kOptions, ") -> Tensor"), new_sized);
  r.add(str_cat("new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ", kOptions, ") -> Tensor"),
        new_empty_strided);
}

}  // namespace coil
