// Views: outputs share the input's storage, so their strides follow from the input's.
#include <algorithm>

#include "graph/meta/common.h"
#include "graph/storage.h"

namespace coil {
namespace {

TensorType with_layout(const TensorType &t, SymShape sizes, SymShape strides) {
  return TensorType{t.dtype, std::move(sizes), std::move(strides), t.device};
}

std::vector<TensorType> permute(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  auto dims = a.ints("dims");
  COIL_USER_CHECK(int64_t(dims.size()) == self.rank(), "permute: the number of dims (",
                  dims.size(), ") does not match the rank of the input (", self.rank(), ")");
  SymShape sizes, strides;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, self.rank());
    COIL_USER_CHECK(!seen[size_t(w)], "permute: dim ", w, " is repeated");
    seen[size_t(w)] = true;
    sizes.push_back(self.sizes[size_t(w)]);
    strides.push_back(self.strides[size_t(w)]);
  }
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> transpose(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape sizes = self.sizes, strides = self.strides;
  if (self.rank() == 0) return {self};
  int64_t d0 = wrap_dim(a.integer("dim0"), self.rank()), d1 = wrap_dim(a.integer("dim1"), self.rank());
  std::swap(sizes[size_t(d0)], sizes[size_t(d1)]);
  std::swap(strides[size_t(d0)], strides[size_t(d1)]);
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> t(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(self.rank() <= 2, "t() expects a tensor with <= 2 dims, got ", self.rank());
  SymShape sizes(self.sizes.rbegin(), self.sizes.rend()), strides(self.strides.rbegin(), self.strides.rend());
  return {with_layout(self, sizes, strides)};
}

/// view and _unsafe_view: no copy, so the layout must allow the new shape.
std::vector<TensorType> view(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape sizes = infer_view_size(a.sym_ints("size"), self.numel());
  auto strides = view_strides(self.sizes, self.strides, sizes);
  COIL_USER_CHECK(strides.has_value(), "view size ", shape_str(sizes),
                  " is not compatible with the input's size ", shape_str(self.sizes), " and stride ",
                  shape_str(self.strides), "; use reshape");
  return {with_layout(self, sizes, *strides)};
}

std::vector<TensorType> expand(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape target = a.sym_ints("size");
  COIL_USER_CHECK(int64_t(target.size()) >= self.rank(), "expand: the number of sizes (",
                  target.size(), ") must be at least the rank of the input (", self.rank(), ")");
  size_t offset = target.size() - self.sizes.size();
  SymShape sizes(target.size()), strides(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    bool new_dim = i < offset;
    SymInt in_size = new_dim ? SymInt(1) : self.sizes[i - offset];
    SymInt want = target[i] == -1 ? in_size : target[i];
    COIL_USER_CHECK(!(new_dim && target[i] == -1), "expand: -1 is not allowed for a new leading dim ", i);
    COIL_USER_CHECK(want >= 0, "expand: invalid size ", target[i], " at dim ", i);
    COIL_USER_CHECK(in_size == want || in_size == 1, "expand: size ", in_size, " at dim ", i,
                    " cannot be expanded to ", want);
    sizes[i] = want;
    strides[i] = new_dim || (in_size == 1 && want != 1) ? SymInt(0) : self.strides[i - offset];
  }
  checked_numel(sizes);
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> unsqueeze(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t d = wrap_dim(a.integer("dim"), self.rank() + 1);
  SymShape sizes = self.sizes, strides = self.strides;
  // The new dim's stride makes it look contiguous with the dim after it.
  SymInt stride = size_t(d) >= sizes.size() ? SymInt(1) : sizes[size_t(d)] * strides[size_t(d)];
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> squeeze_dims(const TensorType &self, const std::vector<bool> &which) {
  SymShape sizes, strides;
  for (size_t i = 0; i < self.sizes.size(); ++i) {
    if (which[i] && self.sizes[i] == 1) continue;
    sizes.push_back(self.sizes[i]);
    strides.push_back(self.strides[i]);
  }
  return {with_layout(self, sizes, strides)};
}

/// slice.Tensor: PyTorch clamps start and end into [0, size] after wrapping negatives.
TensorType slice(const TensorType &self, int64_t dim, std::optional<SymInt> start_arg,
                 std::optional<SymInt> end_arg, int64_t step) {
  COIL_USER_CHECK(self.rank() > 0, "slice() cannot be applied to a 0-dim tensor");
  COIL_USER_CHECK(step > 0, "slice step must be positive, got ", step);
  size_t d = size_t(wrap_dim(dim, self.rank()));
  SymShape sizes = self.sizes, strides = self.strides;
  sizes[d] = slice_bounds(self.sizes[d], start_arg, end_arg, step).length;
  // A stride that overflows only matters when the dim has more than one element.
  int64_t stepped = 0;
  if (__builtin_mul_overflow(strides[d].hint(), step, &stepped)) {
    COIL_USER_CHECK(sizes[d] <= 1, "slice step ", step, " overflows the stride");
  } else {
    strides[d] = strides[d] * step;
  }
  return with_layout(self, sizes, strides);
}

TensorType select(const TensorType &self, int64_t dim, int64_t index) {
  COIL_USER_CHECK(self.rank() > 0, "select() cannot be applied to a 0-dim tensor");
  size_t d = size_t(wrap_dim(dim, self.rank()));
  SymInt size = self.sizes[d];
  COIL_USER_CHECK(index >= -size && index < size, "select(): index ", index, " out of range for tensor of size ",
                  shape_str(self.sizes), " at dimension ", d);
  SymShape sizes = self.sizes, strides = self.strides;
  sizes.erase(sizes.begin() + long(d));
  strides.erase(strides.begin() + long(d));
  return with_layout(self, sizes, strides);
}

/// split_with_sizes: consecutive slices along `dim` whose sizes add up to the dim.
std::vector<TensorType> split_into(const TensorType &self, int64_t dim, const SymShape &chunks) {
  COIL_USER_CHECK(self.rank() > 0, "split() cannot be applied to a 0-dim tensor");
  size_t d = size_t(wrap_dim(dim, self.rank()));
  int64_t total = 0;
  for (int64_t c : chunks) {
    COIL_USER_CHECK(c >= 0, "split sizes must be non-negative, got ", shape_str(chunks));
    COIL_USER_CHECK(!__builtin_add_overflow(total, c, &total), "split sizes overflow: ", shape_str(chunks));
  }
  COIL_USER_CHECK(total == self.sizes[d], "split sizes ", shape_str(chunks), " add up to ", total,
                  " but dim ", d, " has size ", self.sizes[d]);
  std::vector<TensorType> out;
  int64_t start = 0;
  for (int64_t c : chunks) {
    out.push_back(slice(self, int64_t(d), start, start + c, 1));
    start += c;
  }
  return out;
}

std::vector<TensorType> split(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(self.rank() > 0, "split() cannot be applied to a 0-dim tensor");
  int64_t size = self.sizes[size_t(wrap_dim(a.integer("dim"), self.rank()))];
  int64_t split_size = a.integer("split_size");
  COIL_USER_CHECK(split_size > 0 || (split_size == 0 && size == 0), "split_size must be positive, got ",
                  split_size);
  int64_t n = split_size == 0 ? 1 : std::max<int64_t>((size - 1) / split_size + 1, 1);
  SymShape chunks(size_t(n), split_size);
  chunks.back() = size - split_size * (n - 1);
  return split_into(self, a.integer("dim"), chunks);
}

std::vector<TensorType> unbind(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(self.rank() > 0, "unbind() cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(a.integer("dim"), self.rank());
  std::vector<TensorType> out;
  for (int64_t i = 0; i < self.sizes[size_t(d)]; ++i) out.push_back(select(self, d, i));
  return out;
}

/// The name a reader knows a value by: its own, or its node's with the output's index.
std::string value_name(const Graph &g, ValueId v) {
  const Value &value = g.value(v);
  if (!value.name.empty() || value.kind != Value::Kind::NodeOutput) return value.name;
  return str_cat(g.producer(v).name, "[", value.output_index, "]");
}

/// A view must stay inside the storage it shares with its input, as eager checks:
/// compiled code would read past the end of the buffer.
void check_in_storage(const MetaArgs &a, const TensorType &view, int64_t storage_offset) {
  const Graph &g = a.graph();
  ValueId root = placement_of(g, a.value("self")).root;
  const TensorType &storage = g.type(root);
  int64_t elements = storage_elements(view), item = itemsize(view.dtype), needed = 0;
  if (elements == 0) return;  // an empty view reads nothing, wherever it starts
  bool overflows = __builtin_add_overflow(storage_offset, elements, &needed) ||
                   __builtin_mul_overflow(needed, item, &needed);
  int64_t held = storage_elements(storage) * item;
  COIL_USER_CHECK(!overflows && needed <= held, "sizes ", shape_str(view.sizes), " and strides ",
                  shape_str(view.strides), " from storage offset ", storage_offset, " need ",
                  overflows ? "more than 2^63 bytes" : str_cat(needed, " bytes"), " of storage, but the storage of '",
                  value_name(g, root), "' (", storage.str(), ") holds ", held, " bytes");
}

std::vector<TensorType> as_strided(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape sizes = a.sym_ints("size"), strides = a.sym_ints("stride");
  COIL_USER_CHECK(sizes.size() == strides.size(), "as_strided: ", sizes.size(), " sizes but ", strides.size(),
                  " strides");
  for (int64_t st : strides) COIL_USER_CHECK(st >= 0, "as_strided: negative strides are not supported, got ", st);
  std::optional<int64_t> offset = a.optional_integer("storage_offset");
  COIL_USER_CHECK(offset.value_or(0) >= 0, "as_strided: negative storage offset");
  checked_numel(sizes);
  TensorType out = with_layout(self, sizes, strides);
  // Without an offset the view starts where self does.
  check_in_storage(a, out, offset ? SymInt(*offset) : placement_of(a.graph(), a.value("self")).start);
  return {out};
}

/// reshape is a view when the layout allows one and a contiguous copy otherwise.
std::vector<TensorType> reshape(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape sizes = infer_view_size(a.sym_ints("shape"), self.numel());
  auto strides = view_strides(self.sizes, self.strides, sizes);
  return {with_layout(self, sizes, strides ? *strides : contiguous_strides(sizes))};
}

std::vector<TensorType> diagonal(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  DiagonalView v = diagonal_view(self.sizes, self.strides, a.integer("offset"), a.integer("dim1"), a.integer("dim2"));
  return {with_layout(self, v.sizes, v.strides)};
}

/// unfold: the windows of `size` elements every `step` along `dimension`, as a new last
/// dim; a 0-dim tensor is one element.
std::vector<TensorType> unfold(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t size = a.integer("size"), step = a.integer("step");
  int64_t d = wrap_dim(a.integer("dimension"), std::max<int64_t>(self.rank(), 1));
  int64_t extent = self.rank() == 0 ? 1 : int64_t(self.sizes[size_t(d)]);
  COIL_USER_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  COIL_USER_CHECK(size <= extent, "maximum size for tensor at dimension ", d, " is ", extent, " but size is ",
                  size);
  COIL_USER_CHECK(step > 0, "step is ", step, " but must be > 0");
  SymShape sizes = self.sizes, strides = self.strides;
  sizes.push_back(size);
  strides.push_back(self.rank() == 0 ? SymInt(1) : self.strides[size_t(d)]);
  if (self.rank() > 0) {
    sizes[size_t(d)] = (extent - size) / step + 1;
    strides[size_t(d)] = step * self.strides[size_t(d)];
  }
  return {with_layout(self, sizes, strides)};
}

}  // namespace

void register_view_ops(Registry &r) {
  r.add("permute(Tensor(a) self, int[] dims) -> Tensor(a)", permute);
  r.add("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", transpose);
  r.add("t(Tensor(a) self) -> Tensor(a)", t);
  r.add("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", view);
  r.add("_unsafe_view(Tensor self, SymInt[] size) -> Tensor", view);
  r.add("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", expand);
  r.add("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", unsqueeze);
  r.add("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    std::vector<bool> which(size_t(self.rank()), false);
    int64_t d = wrap_dim(a.integer("dim"), self.rank());
    if (self.rank() > 0) which[size_t(d)] = true;
    return squeeze_dims(self, which);
  });
  r.add("squeeze(Tensor(a) self) -> Tensor(a)", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    return squeeze_dims(self, std::vector<bool>(size_t(self.rank()), true));
  });
  r.add("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
        [](const MetaArgs &a) {
          return std::vector<TensorType>{slice(a.tensor("self"), a.integer("dim"), a.optional_sym_integer("start"),
                                               a.optional_sym_integer("end"), a.integer("step"))};
        });
  r.add("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", [](const MetaArgs &a) {
    return std::vector<TensorType>{select(a.tensor("self"), a.integer("dim"), a.integer("index"))};
  });
  r.add("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", split);
  r.add("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
        [](const MetaArgs &a) { return split_into(a.tensor("self"), a.integer("dim"), a.ints("split_sizes")); });
  r.add("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", unbind);
  r.add("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
        as_strided);
  r.add("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", reshape);
  r.add("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", diagonal);
  r.add("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", unfold);
  r.add("alias(Tensor(a) self) -> Tensor(a)", [](const MetaArgs &a) { return std::vector<TensorType>{a.tensor("self")}; });
  r.add("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    std::vector<bool> which(size_t(self.rank()), false);
    for (int64_t d : a.ints("dim"))
      if (self.rank() > 0) which[size_t(wrap_dim(d, self.rank()))] = true;
    return squeeze_dims(self, which);
  });
}

}  // namespace coil
