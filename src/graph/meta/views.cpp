// Views: outputs share the input's storage, so their strides follow from the input's.
#include "graph/meta/common.h"

namespace coil {
namespace {

TensorType with_layout(const TensorType &t, Shape sizes, Shape strides) {
  return TensorType{t.dtype, std::move(sizes), std::move(strides), t.device};
}

std::vector<TensorType> permute(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  auto dims = a.ints("dims");
  COIL_USER_CHECK(int64_t(dims.size()) == self.rank(), "permute: the number of dims (",
                  dims.size(), ") does not match the rank of the input (", self.rank(), ")");
  Shape sizes, strides;
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
  Shape sizes = self.sizes, strides = self.strides;
  if (self.rank() == 0) return {self};
  int64_t d0 = wrap_dim(a.integer("dim0"), self.rank()), d1 = wrap_dim(a.integer("dim1"), self.rank());
  std::swap(sizes[size_t(d0)], sizes[size_t(d1)]);
  std::swap(strides[size_t(d0)], strides[size_t(d1)]);
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> t(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(self.rank() <= 2, "t() expects a tensor with <= 2 dims, got ", self.rank());
  Shape sizes(self.sizes.rbegin(), self.sizes.rend()), strides(self.strides.rbegin(), self.strides.rend());
  return {with_layout(self, sizes, strides)};
}

/// view and _unsafe_view: no copy, so the layout must allow the new shape.
std::vector<TensorType> view(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  Shape sizes = infer_view_size(a.ints("size"), self.numel());
  auto strides = view_strides(self.sizes, self.strides, sizes);
  COIL_USER_CHECK(strides.has_value(), "view size ", shape_str(sizes),
                  " is not compatible with the input's size ", shape_str(self.sizes), " and stride ",
                  shape_str(self.strides), "; use reshape");
  return {with_layout(self, sizes, *strides)};
}

std::vector<TensorType> expand(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  Shape target = a.ints("size");
  COIL_USER_CHECK(int64_t(target.size()) >= self.rank(), "expand: the number of sizes (",
                  target.size(), ") must be at least the rank of the input (", self.rank(), ")");
  size_t offset = target.size() - self.sizes.size();
  Shape sizes(target.size()), strides(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    bool new_dim = i < offset;
    int64_t in_size = new_dim ? 1 : self.sizes[i - offset];
    int64_t want = target[i] == -1 ? in_size : target[i];
    COIL_USER_CHECK(!(new_dim && target[i] == -1), "expand: -1 is not allowed for a new leading dim ", i);
    COIL_USER_CHECK(want >= 0, "expand: invalid size ", target[i], " at dim ", i);
    COIL_USER_CHECK(in_size == want || in_size == 1, "expand: size ", in_size, " at dim ", i,
                    " cannot be expanded to ", want);
    sizes[i] = want;
    strides[i] = new_dim || (in_size == 1 && want != 1) ? 0 : self.strides[i - offset];
  }
  checked_numel(sizes);
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> unsqueeze(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t d = wrap_dim(a.integer("dim"), self.rank() + 1);
  Shape sizes = self.sizes, strides = self.strides;
  // The new dim's stride makes it look contiguous with the dim after it.
  int64_t stride = size_t(d) >= sizes.size() ? 1 : sizes[size_t(d)] * strides[size_t(d)];
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return {with_layout(self, sizes, strides)};
}

std::vector<TensorType> squeeze_dims(const TensorType &self, const std::vector<bool> &which) {
  Shape sizes, strides;
  for (size_t i = 0; i < self.sizes.size(); ++i) {
    if (which[i] && self.sizes[i] == 1) continue;
    sizes.push_back(self.sizes[i]);
    strides.push_back(self.strides[i]);
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
  r.add("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    std::vector<bool> which(size_t(self.rank()), false);
    for (int64_t d : a.ints("dim"))
      if (self.rank() > 0) which[size_t(wrap_dim(d, self.rank()))] = true;
    return squeeze_dims(self, which);
  });
}

}  // namespace coil
