// Indexing and joining: cat, padding, advanced indexing, gather/scatter, embedding,
// flip and the functional scatters that export leaves for in-place slicing.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

bool is_index_dtype(DType t) { return t == DType::I64 || t == DType::I32; }

/// bool and uint8 index tensors are masks: they select where they are true.
bool is_mask_dtype(DType t) { return t == DType::Bool || t == DType::U8; }

void check_index_dtype(std::string_view op, const TensorType &index) {
  COIL_USER_CHECK(is_index_dtype(index.dtype), op, ": index must be int64 or int32, got ", short_name(index.dtype));
}

/// Tensor::suggest_memory_format: channels-last when the strides read as channels-last,
/// even for layouts that are contiguous too (strides.h's suggest_memory_format prefers
/// contiguous there, which torch does not).
MemoryFormat suggested_format(const TensorType &t) {
  if (!is_channels_last(t.sizes, t.strides)) return MemoryFormat::Contiguous;
  return t.rank() == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
}

// ---- cat ----

/// Legacy rule: 1-d tensors of size 0 may be concatenated with tensors of any rank.
bool cat_skips(const TensorType &t) { return t.rank() == 1 && t.sizes[0] == 0; }

/// Channels-last only when every input, skipped ones included, suggests the same
/// channels-last format; anything else gives a contiguous output.
MemoryFormat cat_memory_format(const std::vector<const TensorType *> &tensors) {
  std::optional<MemoryFormat> format;
  for (const TensorType *t : tensors) {
    MemoryFormat f = suggested_format(*t);
    if (f == MemoryFormat::Contiguous || (format && *format != f)) return MemoryFormat::Contiguous;
    format = f;
  }
  return *format;
}

void check_cat_shape(const TensorType &t, size_t i, const TensorType &first, size_t first_index, int64_t dim) {
  COIL_USER_CHECK(t.rank() == first.rank(), "cat: tensor ", i, " has ", t.rank(), " dims but tensor ", first_index,
                  " has ", first.rank(), "; expected tensors of one rank (only 1-d empty tensors may differ)");
  for (int64_t d = 0; d < t.rank(); ++d)
    COIL_USER_CHECK(d == dim || t.sizes[size_t(d)] == first.sizes[size_t(d)], "cat: sizes of tensors must match "
                    "except in dim ", dim, "; tensor ", i, " has size ", shape_str(t.sizes), " but tensor ",
                    first_index, " has ", shape_str(first.sizes));
}

std::vector<TensorType> cat(const MetaArgs &a) {
  auto tensors = a.tensors("tensors");
  COIL_USER_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  std::vector<PromotionOperand> promotion;
  size_t first = tensors.size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorType &t = *tensors[i];
    COIL_USER_CHECK(t.rank() > 0, "cat: zero-dimensional tensor (at position ", i,
                    ") cannot be concatenated; expected tensors with at least one dim");
    COIL_USER_CHECK(t.device == tensors[0]->device, "cat: expected all tensors on one device, found ",
                    tensors[0]->device.str(), " (tensor 0) and ", t.device.str(), " (tensor ", i, ")");
    promotion.push_back({t.dtype, t.rank(), false});
    if (first == tensors.size() && !cat_skips(t)) first = i;
  }
  DType dtype = result_type(promotion);
  // With every input skipped the result is empty and `dim` is never checked.
  if (first == tensors.size()) return {contiguous(dtype, {0}, tensors[0]->device)};

  const TensorType &stencil = *tensors[first];
  int64_t dim = wrap_dim(a.integer("dim"), stencil.rank());
  SymShape sizes = stencil.sizes;
  sizes[size_t(dim)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (cat_skips(*tensors[i])) continue;
    check_cat_shape(*tensors[i], i, stencil, first, dim);
    sizes[size_t(dim)] += tensors[i]->sizes[size_t(dim)];
  }
  checked_numel(sizes);
  SymShape strides = strides_for_format(sizes, cat_memory_format(tensors));
  return {TensorType{dtype, sizes, strides, stencil.device}};
}

// ---- constant_pad_nd ----

/// Pads (or, for negative pads, crops) the last len(pad) / 2 dims: pad[0], pad[1] are
/// the last dim's before and after amounts, pad[2], pad[3] the dim before it, and so on.
std::vector<TensorType> constant_pad_nd(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape pad = a.sym_ints("pad");  // SDPA pads a mask to a multiple of 8: `8 - s0 % 8`
  COIL_USER_CHECK(pad.size() % 2 == 0, "constant_pad_nd: the length of pad must be even, got ", pad.size());
  int64_t padded_dims = int64_t(pad.size() / 2);
  COIL_USER_CHECK(padded_dims <= self.rank(), "constant_pad_nd: pad has ", pad.size(), " values but the input has ",
                  self.rank(), " dims; expected at most two values per dim");
  SymShape sizes = self.sizes;
  bool crop_only = true;
  for (int64_t i = 0; i < padded_dims; ++i) {
    size_t dim = size_t(self.rank() - 1 - i);
    SymInt before = pad[size_t(2 * i)], after = pad[size_t(2 * i + 1)];
    SymInt size = sizes[dim] + before + after;
    COIL_USER_CHECK(size >= 0, "constant_pad_nd: padding ", before, " and ", after, " of dim ", dim, " (size ",
                    sizes[dim], ") gives the negative size ", size);
    sizes[dim] = size;
    crop_only = crop_only && before <= 0 && after <= 0;
  }
  checked_numel(sizes);
  // Only cropping: torch narrows the input (a view with its strides) and clones that.
  if (crop_only) {
    TensorType view{self.dtype, sizes, self.strides, self.device};
    return {TensorType{self.dtype, sizes, preserve_format_strides(view), self.device}};
  }
  return {TensorType{self.dtype, sizes, strides_for_format(sizes, suggested_format(self)), self.device}};
}

// ---- advanced indexing ----

/// How advanced indexing lays out its result: `self`'s dims with the indexed ones
/// replaced by the broadcast shape of the index tensors. When the indexed dims are not
/// adjacent, the replacement goes first (NumPy's rule).
struct AdvancedIndex {
  SymShape sizes;    // before + replacement + after
  SymShape strides;  // self's strides for kept dims, 0 for the replacement dims
};

/// Rejects non-integer index tensors, and masks unless `allow_masks`; `op` names the op
/// in messages.
void check_index_tensors(std::string_view op, const std::vector<const TensorType *> &indices, const TensorType &self,
                         bool allow_masks) {
  for (size_t i = 0; i < indices.size(); ++i) {
    const TensorType *index = indices[i];
    if (!index || (allow_masks && is_mask_dtype(index->dtype))) continue;
    COIL_USER_CHECK(!is_mask_dtype(index->dtype), op, ": index ", i, " is a ", short_name(index->dtype),
                    " mask; the result's size depends on how many of its elements are true, which coil cannot "
                    "know before running; expected int64 or int32 indices");
    COIL_USER_CHECK(is_index_dtype(index->dtype), op, ": index ", i, " has dtype ", short_name(index->dtype),
                    "; expected int64 or int32 (or a bool mask)");
    bool cpu = index->device.kind == Device::Kind::CPU;
    COIL_USER_CHECK(cpu || index->device == self.device, op, ": index ", i, " is on ", index->device.str(),
                    " but self is on ", self.device.str(), "; expected indices on cpu or on self's device");
  }
}

SymShape broadcast_indices(std::string_view op, const std::vector<const TensorType *> &indices) {
  SymShape shape;
  for (const TensorType *index : indices) {
    if (!index) continue;
    try {
      shape = broadcast_shapes(shape, index->sizes);
    } catch (const UserError &e) {
      throw UserError(str_cat(op, ": the index tensors cannot be broadcast together: ", e.message()));
    }
  }
  return shape;
}

/// Are the defined indices in one run of adjacent dims?
bool indexed_dims_adjacent(const std::vector<const TensorType *> &indices) {
  size_t first = indices.size(), last = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    first = std::min(first, i);
    last = i;
  }
  for (size_t i = first; i <= last; ++i)
    if (!indices[i]) return false;
  return true;
}

AdvancedIndex advanced_index(std::string_view op, const TensorType &self, std::vector<const TensorType *> indices) {
  COIL_USER_CHECK(!indices.empty(), op, ": expected at least one index, got an empty list");
  COIL_USER_CHECK(int64_t(indices.size()) <= self.rank(), op, ": too many indices for a tensor of rank ",
                  self.rank(), " (got ", indices.size(), ")");
  check_index_tensors(op, indices, self, false);
  bool any = std::any_of(indices.begin(), indices.end(), [](const TensorType *t) { return t != nullptr; });
  COIL_USER_CHECK(any, op, ": every index is None; expected at least one index tensor");
  SymShape replacement = broadcast_indices(op, indices);
  indices.resize(size_t(self.rank()), nullptr);

  // Dim order: as is when the indexed dims are adjacent, else indexed dims first.
  std::vector<size_t> order(indices.size());
  std::iota(order.begin(), order.end(), 0);
  if (!indexed_dims_adjacent(indices))
    std::stable_partition(order.begin(), order.end(), [&](size_t d) { return indices[d] != nullptr; });

  AdvancedIndex out;
  bool replaced = false;
  for (size_t d : order) {
    if (!indices[d]) {
      out.sizes.push_back(self.sizes[d]);
      out.strides.push_back(self.strides[d]);
    } else if (!replaced) {
      out.sizes.insert(out.sizes.end(), replacement.begin(), replacement.end());
      out.strides.insert(out.strides.end(), replacement.size(), 0);
      replaced = true;
    }
  }
  // torch's meta function (which export's annotations come from) mislays 0-d
  // replacements: it files every kept dim as coming before the replacement and so
  // pairs the k kept sizes with the strides of the first k dims (in the order above).
  // Only the layout changes; eager lays such results out as computed above.
  if (replacement.empty())
    for (size_t i = 0; i < out.strides.size(); ++i) out.strides[i] = self.strides[order[i]];
  checked_numel(out.sizes);
  return out;
}

/// index.Tensor: the result is laid out like the indexed view of self (TensorIterator
/// orders the output's dims by self's strides), contiguous when self is empty.
std::vector<TensorType> index(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  AdvancedIndex ix = advanced_index("index", self, a.tensors("indices"));
  if (self.numel() == 0) return {contiguous(self.dtype, ix.sizes, self.device)};
  TensorType src{self.dtype, ix.sizes, ix.strides, self.device};
  return {TensorType{self.dtype, ix.sizes, dense_order_strides(src), self.device}};
}

/// Masks in index_put: each stands for as many dims as it has, whose sizes it must match.
void check_masks(const TensorType &self, const std::vector<const TensorType *> &indices) {
  int64_t dim = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    const TensorType *index = indices[i];
    if (!index || !is_mask_dtype(index->dtype)) {
      ++dim;
      continue;
    }
    COIL_USER_CHECK(dim + index->rank() <= self.rank(), "index_put: too many indices for a tensor of rank ",
                    self.rank(), " (mask ", i, " covers ", index->rank(), " dims from dim ", dim, ")");
    SymShape covered(self.sizes.begin() + dim, self.sizes.begin() + dim + index->rank());
    COIL_USER_CHECK(index->sizes == covered, "index_put: mask ", i, " has shape ", shape_str(index->sizes),
                    " but the dims of self it covers have sizes ", shape_str(covered));
    dim += index->rank();
  }
  COIL_USER_CHECK(dim <= self.rank(), "index_put: too many indices for a tensor of rank ", self.rank(),
                  " (the indices cover ", dim, " dims)");
}

bool expandable_to(const SymShape &from, const SymShape &to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i)
    if (from[from.size() - i] != 1 && from[from.size() - i] != to[to.size() - i]) return false;
  return true;
}

/// index_put (functional): self's type, laid out as empty_like(self). With masks the
/// indexed shape depends on the data, so only the masks' own shapes are checked.
std::vector<TensorType> index_put(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  const TensorType &values = a.tensor("values");
  auto indices = a.tensors("indices");
  COIL_USER_CHECK(values.dtype == self.dtype, "index_put: values have dtype ", short_name(values.dtype),
                  " but self has ", short_name(self.dtype), "; expected the same dtype");
  bool masked = std::any_of(indices.begin(), indices.end(),
                            [](const TensorType *t) { return t && is_mask_dtype(t->dtype); });
  if (masked) {
    check_index_tensors("index_put", indices, self, true);
    check_masks(self, indices);
  } else {
    SymShape target = advanced_index("index_put", self, indices).sizes;
    COIL_USER_CHECK(expandable_to(values.sizes, target), "index_put: values of shape ", shape_str(values.sizes),
                    " cannot be broadcast to the indexed shape ", shape_str(target));
  }
  return {TensorType{self.dtype, self.sizes, dense_order_strides(self), self.device}};
}

// ---- index_select, gather, scatter, embedding ----

std::vector<TensorType> index_select(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  const TensorType &index = a.tensor("index");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank());
  COIL_USER_CHECK(index.rank() <= 1, "index_select: index must be 0-d or 1-d, got ", index.rank(), "-d");
  check_index_dtype("index_select", index);
  SymShape sizes = self.sizes;
  if (self.rank() > 0) {
    sizes[size_t(dim)] = index.numel();
  } else {
    COIL_USER_CHECK(index.numel() == 1, "index_select: indexing a 0-d tensor needs exactly one index, got ",
                    index.numel());
  }
  return {contiguous(self.dtype, sizes, self.device)};
}

/// Size of dim d, a 0-d tensor counting as one dim of size 1 (scatter/gather's rule).
int64_t size_or_one(const TensorType &t, int64_t d) { return t.rank() == 0 ? 1 : int64_t(t.sizes[size_t(d)]); }
int64_t rank_or_one(const TensorType &t) { return std::max<int64_t>(t.rank(), 1); }

/// index.size(d) <= other.size(d) for every dim d (but `skip`); `what` names other.
void check_index_fits(std::string_view op, const TensorType &index, const TensorType &other, std::string_view what,
                      int64_t skip) {
  COIL_USER_CHECK(rank_or_one(index) == rank_or_one(other), op, ": index has ", index.rank(), " dims but ", what,
                  " has ", other.rank(), "; expected the same number of dims");
  for (int64_t d = 0; d < rank_or_one(index); ++d)
    COIL_USER_CHECK(d == skip || size_or_one(index, d) <= size_or_one(other, d), op, ": index of shape ",
                    shape_str(index.sizes), " is larger than ", what, " of shape ", shape_str(other.sizes),
                    " in dim ", d, skip >= 0 ? str_cat("; expected index no larger apart from dim ", skip) : "");
}

std::vector<TensorType> gather(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  const TensorType &index = a.tensor("index");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank());
  // An empty index gathers nothing: torch skips the checks.
  if (index.numel() != 0) {
    check_index_dtype("gather", index);
    check_index_fits("gather", index, self, "self", dim);
  }
  return {contiguous(self.dtype, index.sizes, self.device)};
}

/// scatter.src and scatter.value: a fresh contiguous tensor of self's type.
MetaFn scatter(bool has_src) {
  return [=](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    const TensorType &index = a.tensor("index");
    int64_t dim = wrap_dim(a.integer("dim"), self.rank());
    const TensorType *src = has_src ? &a.tensor("src") : nullptr;
    COIL_USER_CHECK(!src || src->dtype == self.dtype, "scatter: src has dtype ", short_name(src->dtype),
                    " but self has ", short_name(self.dtype), "; expected the same dtype");
    if (index.numel() != 0) {
      check_index_dtype("scatter", index);
      check_index_fits("scatter", index, self, "self", dim);
      if (src) check_index_fits("scatter", index, *src, "src", -1);
    }
    return std::vector<TensorType>{contiguous(self.dtype, self.sizes, self.device)};
  };
}

/// index_reduce: source's slices along dim reduced into self's at index: index 1-d with one
/// entry per slice, source shaped as self but along dim; self's dtype, contiguous.
std::vector<TensorType> index_reduce(const MetaArgs &a) {
  const TensorType &self = a.tensor("self"), &index = a.tensor("index"), &source = a.tensor("source");
  std::string reduce = a.optional_str("reduce").value_or("");
  COIL_USER_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
                  "index_reduce: reduce must be prod, mean, amax or amin, got '", reduce, "'");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank());
  COIL_USER_CHECK(index.rank() <= 1, "index_reduce: index must be 0-d or 1-d, got ", index.rank(), "-d");
  check_index_dtype("index_reduce", index);
  COIL_USER_CHECK(source.dtype == self.dtype, "index_reduce: source has dtype ", short_name(source.dtype),
                  " but self has ", short_name(self.dtype), "; expected the same dtype");
  COIL_USER_CHECK(rank_or_one(source) == rank_or_one(self), "index_reduce: source and self need the same rank, got ",
                  source.rank(), " and ", self.rank());
  for (int64_t d = 0; d < source.rank(); ++d)
    COIL_USER_CHECK(d == dim ? source.sizes[size_t(d)] == index.numel() : source.sizes[size_t(d)] == self.sizes[size_t(d)],
                    "index_reduce: source's size ", source.sizes[size_t(d)], " in dim ", d, " should be ",
                    d == dim ? index.numel() : self.sizes[size_t(d)]);
  return {contiguous(self.dtype, self.sizes, self.device)};
}

/// nonzero_static: [size, rank] i64 coordinates.
std::vector<TensorType> nonzero_static(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t size = a.integer("size");
  COIL_USER_CHECK(size >= 0, "nonzero_static: 'size' must be a non-negative integer, got ", size);
  return {contiguous(DType::I64, {size, self.rank()}, self.device)};
}

/// put: self (its layout kept) with source's elements at the flat positions in index.
std::vector<TensorType> put(const MetaArgs &a) {
  const TensorType &self = a.tensor("self"), &index = a.tensor("index"), &source = a.tensor("source");
  check_index_dtype("put", index);
  COIL_USER_CHECK(source.dtype == self.dtype, "put: source has dtype ", short_name(source.dtype), " but self has ",
                  short_name(self.dtype), "; expected the same dtype");
  COIL_USER_CHECK(source.numel() == index.numel(), "put: expected source to have as many elements as index, got ",
                  source.numel(), " and ", index.numel());
  COIL_USER_CHECK(index.numel() == 0 || self.numel() > 0, "put: cannot put into an empty tensor");
  return {TensorType{self.dtype, self.sizes, preserve_format_strides(self), self.device}};
}

/// histc: [bins] counts of self's floating dtype.
std::vector<TensorType> histc(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  int64_t bins = a.integer("bins");
  COIL_USER_CHECK(is_floating(self.dtype), "histc: expected a floating input, got ", short_name(self.dtype));
  COIL_USER_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins);
  double lo = a.floating("min"), hi = a.floating("max");
  COIL_USER_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc(): range of [", lo, ", ", hi, "] is not finite");
  COIL_USER_CHECK(lo <= hi, "torch.histc(): max must be larger than min");
  return {contiguous(self.dtype, {bins}, self.device)};
}

/// The histogram family's bins (histogram, histogramdd's three parts): the data is self's
/// last dim's D coordinates (one, all of self, for histogram), binned per dim either into
/// bin counts over a range (given, or the data's) or by edge tensors. Checks what eager
/// checks before it reads the data; returns the bin count of each dim.
SymShape histogram_bins(const MetaArgs &a, std::string_view op, bool dd) {
  const TensorType &self = a.tensor("self");
  COIL_USER_CHECK(self.dtype == DType::F32 || self.dtype == DType::F64, op, ": expected a float or double input, got ",
                  short_name(self.dtype));
  COIL_USER_CHECK(!dd || self.rank() >= 1, op, ": expected input to have at least one dimension");
  int64_t dims = dd ? int64_t(self.sizes.back()) : 1;
  SymShape bins;
  if (a.schema().args[1].type.base == BaseType::Tensor) {  // edge tensors, not bin counts
    std::vector<const TensorType *> edges = dd ? a.tensors("bins") : std::vector<const TensorType *>{&a.tensor("bins")};
    for (const TensorType *e : edges) {
      COIL_USER_CHECK(e->dtype == self.dtype, op, ": input and bins are expected to have the same dtype, got ",
                      short_name(self.dtype), " and ", short_name(e->dtype));
      COIL_USER_CHECK(e->rank() == 1 && e->numel() > 0, op, ": bins tensors should have one dimension and at least "
                      "1 element, got ", shape_str(e->sizes));
      bins.push_back(e->sizes[0] - 1);
    }
  } else {
    bins = dd ? SymShape(a.ints("bins")) : SymShape{a.integer("bins")};
    for (int64_t b : bins) COIL_USER_CHECK(b > 0, op, ": bins must be > 0, but got ", b);
    if (auto range = a.arg("range"); !range.is_none()) {
      const ArgList &r = range.as<ArgList>();
      COIL_USER_CHECK(int64_t(r.size()) == 2 * dims, op, ": for a ", dims, "-dimensional histogram, range should "
                      "have ", 2 * dims, " elements, but got ", r.size());
      for (size_t d = 0; d + 1 < r.size(); d += 2) {
        double lo = r[d].number(), hi = r[d + 1].number();
        COIL_USER_CHECK(std::isfinite(lo) && std::isfinite(hi), op, ": dimension ", d / 2, "'s range [", lo, ", ", hi,
                        "] is not finite");
        COIL_USER_CHECK(lo <= hi, op, ": min should not exceed max, but got min ", lo, " max ", hi);
      }
    }
  }
  COIL_USER_CHECK(int64_t(bins.size()) == dims, op, ": expected ", dims, " sequences of bin edges (or bin counts) "
                  "for the input's last dim of ", dims, ", got ", bins.size());
  if (const TensorType *w = a.optional_tensor("weight")) {
    SymShape rows = dd ? SymShape(self.sizes.begin(), self.sizes.end() - 1) : SymShape(self.sizes);
    COIL_USER_CHECK(w->dtype == self.dtype && w->sizes == rows, op, ": weight should be ", short_name(self.dtype),
                    shape_str(rows), ", got ", short_name(w->dtype), shape_str(w->sizes));
  }
  return bins;
}

/// as_strided_scatter: self (its layout kept) whose storage, seen through as_strided(size,
/// stride, storage_offset), takes src; the view must lie within self's elements.
std::vector<TensorType> as_strided_scatter(const MetaArgs &a) {
  const TensorType &self = a.tensor("self"), &src = a.tensor("src");
  SymShape size = a.sym_ints("size"), stride = a.sym_ints("stride");
  int64_t offset = a.optional_integer("storage_offset").value_or(0);
  COIL_USER_CHECK(size.size() == stride.size(), "as_strided_scatter: size ", shape_str(size), " and stride ",
                  shape_str(stride), " differ in rank");
  COIL_USER_CHECK(src.sizes == size, "as_strided_scatter: src has shape ", shape_str(src.sizes), ", expected ",
                  shape_str(size));
  COIL_USER_CHECK(src.dtype == self.dtype, "as_strided_scatter: src has dtype ", short_name(src.dtype),
                  " but self has ", short_name(self.dtype));
  SymShape strides = preserve_format_strides(self);
  COIL_USER_CHECK(is_non_overlapping_and_dense(self.sizes, strides), "as_strided_scatter: self must be dense");
  int64_t last = offset;
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    COIL_USER_CHECK(stride[d] >= 0, "as_strided_scatter: negative strides are not supported, got ", shape_str(stride));
    empty = empty || size[d] == 0;
    if (size[d] > 0) last += (size[d] - 1) * stride[d];
  }
  COIL_USER_CHECK(offset >= 0 && (empty || last < self.numel()), "as_strided_scatter: the view of size ",
                  shape_str(size), ", stride ", shape_str(stride), " at offset ", offset, " reaches past self's ",
                  self.numel(), " elements");
  return {TensorType{self.dtype, self.sizes, strides, self.device}};
}

std::vector<TensorType> embedding(const MetaArgs &a) {
  const TensorType &weight = a.tensor("weight");
  const TensorType &indices = a.tensor("indices");
  COIL_USER_CHECK(weight.rank() == 2, "embedding: weight must be 2-d, got ", weight.rank(), "-d");
  check_index_dtype("embedding", indices);
  SymShape sizes = indices.sizes;
  sizes.push_back(weight.sizes[1]);
  return {contiguous(weight.dtype, sizes, weight.device)};
}

/// masked_scatter: self's type, contiguous (eager clones self contiguous); a bool mask that broadcasts to self, a source of
/// self's dtype.
std::vector<TensorType> masked_scatter(const MetaArgs &a) {
  const TensorType &self = a.tensor("self"), &mask = a.tensor("mask"), &source = a.tensor("source");
  COIL_USER_CHECK(mask.dtype == DType::Bool, "masked_scatter: expected a bool mask, got ", short_name(mask.dtype));
  COIL_USER_CHECK(source.dtype == self.dtype, "masked_scatter: expected source of self's dtype ", short_name(self.dtype),
                  ", got ", short_name(source.dtype));
  COIL_USER_CHECK(broadcast_shapes(self.sizes, mask.sizes) == self.sizes, "masked_scatter: a mask of shape ",
                  shape_str(mask.sizes), " does not broadcast to self's shape ", shape_str(self.sizes));
  return {meta::contiguous(self.dtype, self.sizes, self.device)};
}

/// _embedding_bag: (output [bags, D] of weight's dtype, offset2bag, bag_size, max_indices)
/// with the sizes PyTorch's meta function gives them by device, mode and fast path.
std::vector<TensorType> embedding_bag(const MetaArgs &a) {
  const TensorType &weight = a.tensor("weight"), &indices = a.tensor("indices"), &offsets = a.tensor("offsets");
  check_index_dtype("embedding_bag", indices);
  check_index_dtype("embedding_bag", offsets);
  COIL_USER_CHECK(is_floating(weight.dtype) && weight.rank() == 2, "embedding_bag: expected a 2-d floating weight, got ",
                  short_name(weight.dtype), shape_str(weight.sizes));
  COIL_USER_CHECK(indices.rank() == 1 && offsets.rank() == 1, "embedding_bag: expected 1-d indices and offsets, got ",
                  shape_str(indices.sizes), " and ", shape_str(offsets.sizes));
  int64_t mode = a.integer("mode"), padding = a.integer("padding_idx");
  COIL_USER_CHECK(mode >= 0 && mode <= 2, "embedding_bag: mode ", mode, " is not 0 (sum), 1 (mean) or 2 (max)");
  int64_t bags = offsets.sizes[0];
  if (a.boolean("include_last_offset")) {
    COIL_USER_CHECK(bags >= 1, "include_last_offset: numBags should be at least 1");
    --bags;
  }
  const TensorType *psw = a.optional_tensor("per_sample_weights");
  if (psw)
    COIL_USER_CHECK(mode == 0 && psw->rank() == 1 && psw->sizes[0] == indices.sizes[0],
                    "embedding_bag: per_sample_weights must be 1-d with one weight per index, mode='sum' only");
  int64_t d = weight.sizes[1];
  TensorType out = meta::contiguous(weight.dtype, {bags, d}, weight.device);
  if (weight.device.kind != Device::Kind::CPU) {
    return {out, meta::contiguous(indices.dtype, {indices.sizes[0]}, weight.device),
            meta::contiguous(indices.dtype, offsets.sizes, weight.device),
            meta::contiguous(indices.dtype, mode == 2 ? SymShape{bags, d} : SymShape{0}, weight.device)};
  }
  bool fast = (weight.dtype == DType::F32 || weight.dtype == DType::F16) && weight.strides[1] == 1 && padding < 0 &&
              (!psw || psw->strides[0] == 1);
  int64_t per_index = mode != 0 || !fast ? int64_t(indices.sizes[0]) : 0;
  // _embedding_bag_forward_only's bag_size has one entry per offset on the CPU.
  SymShape bag_sizes = a.schema().name == "_embedding_bag_forward_only" ? SymShape(offsets.sizes) : SymShape{bags};
  return {out, meta::contiguous(offsets.dtype, {per_index}, weight.device), meta::contiguous(offsets.dtype, bag_sizes, weight.device),
          meta::contiguous(offsets.dtype, mode == 2 ? SymShape{bags, d} : SymShape{bags}, weight.device)};
}

/// embedding_dense_backward: [num_weights, D] in grad_output's dtype.
std::vector<TensorType> embedding_backward(const MetaArgs &a) {
  const TensorType &dy = a.tensor("grad_output"), &indices = a.tensor("indices");
  check_index_dtype("embedding_dense_backward", indices);
  int64_t rows = a.integer("num_weights");
  COIL_USER_CHECK(rows >= 0 && dy.rank() == indices.rank() + 1 &&
                      SymShape(dy.sizes.begin(), dy.sizes.end() - 1) == indices.sizes,
                  "embedding_dense_backward: grad_output of shape ", shape_str(dy.sizes), " does not fit indices of shape ",
                  shape_str(indices.sizes), " (expected their shape and one more dim)");
  return {contiguous(dy.dtype, {rows, dy.sizes.back()}, dy.device)};
}

std::vector<TensorType> flip(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  meta::reduced_dims(a.ints("dims"), self.rank());  // validates: in range, no repeats
  return {TensorType{self.dtype, self.sizes, dense_order_strides(self), self.device}};
}

// ---- slice_scatter, select_scatter ----

/// The length of self.slice(dim, start, end, step), with Python's clamping.
int64_t slice_length(int64_t size, std::optional<int64_t> start_arg, std::optional<int64_t> end_arg, int64_t step) {
  int64_t start = start_arg.value_or(0), end = end_arg.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  // ceil((end - start) / step), without overflow for steps near INT64_MAX.
  return end == start ? 0 : (end - start - 1) / step + 1;
}

std::vector<TensorType> slice_scatter(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  const TensorType &src = a.tensor("src");
  COIL_USER_CHECK(self.rank() > 0, "slice_scatter: cannot slice a 0-d tensor");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank());
  int64_t step = a.integer("step");
  COIL_USER_CHECK(step > 0, "slice_scatter: step must be positive, got ", step);
  SymShape slice = self.sizes;
  slice[size_t(dim)] =
      slice_length(self.sizes[size_t(dim)], a.optional_integer("start"), a.optional_integer("end"), step);
  COIL_USER_CHECK(src.sizes == slice, "slice_scatter: src has size ", shape_str(src.sizes),
                  " but the slice of self has size ", shape_str(slice), "; expected them equal");
  return {self};  // clone_preserve_strides: self's strides exactly, even when not dense
}

std::vector<TensorType> select_scatter(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  const TensorType &src = a.tensor("src");
  COIL_USER_CHECK(self.rank() > 0, "select_scatter: cannot select from a 0-d tensor");
  int64_t dim = wrap_dim(a.integer("dim"), self.rank());
  int64_t index = a.integer("index"), size = self.sizes[size_t(dim)];
  COIL_USER_CHECK(index >= -size && index < size, "select_scatter: index ", index, " is out of range for dim ", dim,
                  " of size ", size, " (expected an index in [", -size, ", ", size - 1, "])");
  SymShape slice = self.sizes;
  slice.erase(slice.begin() + dim);
  COIL_USER_CHECK(src.sizes == slice, "select_scatter: src has size ", shape_str(src.sizes),
                  " but the selected slice of self has size ", shape_str(slice), "; expected them equal");
  return {self};  // clone_preserve_strides, as for slice_scatter
}

/// diagonal_scatter: self's type; src is self's diagonal (offset, dim1, dim2): self's sizes
/// without dim1 and dim2, the diagonal's length last.
std::vector<TensorType> diagonal_scatter(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  const TensorType &src = a.tensor("src");
  SymShape diagonal =
      diagonal_view(self.sizes, self.strides, a.integer("offset"), a.integer("dim1"), a.integer("dim2")).sizes;
  COIL_USER_CHECK(src.sizes == diagonal, "diagonal_scatter: src has size ", shape_str(src.sizes),
                  " but the diagonal of self has size ", shape_str(diagonal), "; expected them equal");
  return {self};  // clone_preserve_strides, as for slice_scatter
}

/// bucketize / searchsorted: self's sizes, i64 (i32 with out_int32), contiguous; the
/// boundaries 1-d, or (searchsorted) one row per leading index of self.
std::vector<TensorType> search_sorted(const MetaArgs &a, const char *boundaries_name) {
  const TensorType &self = a.tensor("self"), &bounds = a.tensor(boundaries_name);
  std::string_view op = a.schema().name;
  COIL_USER_CHECK(bounds.rank() >= 1, op, ": ", boundaries_name, " must have at least one dim");
  if (bounds.rank() > 1) {
    SymShape lead(bounds.sizes.begin(), bounds.sizes.end() - 1), self_lead(self.sizes.begin(), self.sizes.end() - (self.rank() ? 1 : 0));
    COIL_USER_CHECK(self.rank() == bounds.rank() && lead == self_lead, op, ": ", boundaries_name, " of shape ",
                    shape_str(bounds.sizes), " and self of shape ", shape_str(self.sizes),
                    " must agree in every dim but the last");
  }
  COIL_USER_CHECK(self.dtype != DType::Bool && bounds.dtype != DType::Bool, op, " does not take bool tensors");
  return {contiguous(a.boolean("out_int32") ? DType::I32 : DType::I64, self.sizes, self.device)};
}

// ---- pad in the modes that read the input again: reflect, replicate, circular ----

/// The padded shape for `mode`, with PyTorch's limits: reflect mirrors without the edge, so
/// each pad must be below its dim's size; circular wraps at most once; reflect and replicate
/// read an element of every padded dim, so none may be empty. The result is contiguous.
std::vector<TensorType> mode_padded(const TensorType &self, const SymShape &pad, const std::string &mode,
                                    std::string_view op) {
  COIL_USER_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular",
                  op, ": unknown padding mode '", mode, "'; expected constant, reflect, replicate or circular");
  COIL_USER_CHECK(pad.size() % 2 == 0, op, ": the length of pad must be even, got ", pad.size());
  int64_t padded_dims = int64_t(pad.size() / 2);
  COIL_USER_CHECK(padded_dims <= self.rank(), op, ": pad has ", pad.size(), " values but the input has ",
                  self.rank(), " dims; expected at most two values per dim");
  SymShape sizes = self.sizes;
  for (int64_t i = 0; i < padded_dims; ++i) {
    size_t dim = size_t(self.rank() - 1 - i);
    int64_t before = pad[size_t(2 * i)], after = pad[size_t(2 * i + 1)], n = sizes[dim];
    if (mode == "reflect")
      COIL_USER_CHECK(before < n && after < n, op, ": padding size should be less than the corresponding input "
                      "dimension, but got: padding (", before, ", ", after, ") at dimension ", dim, " of input ",
                      shape_str(self.sizes));
    if (mode == "circular")
      COIL_USER_CHECK(before <= n && after <= n, op, ": padding value causes wrapping around more than once: ",
                      "padding (", before, ", ", after, ") at dimension ", dim, " of input ", shape_str(self.sizes));
    COIL_USER_CHECK(n > 0, op, ": expected a non-empty dim ", dim, " to pad, input ", shape_str(self.sizes));
    sizes[dim] = n + before + after;
    COIL_USER_CHECK(sizes[dim] >= 0, op, ": padding ", before, " and ", after, " of dim ", dim, " (size ", n,
                    ") gives the negative size ", sizes[dim]);
  }
  checked_numel(sizes);
  return {contiguous(self.dtype, sizes, self.device)};
}

/// pad: constant_pad_nd in mode constant, else mode_padded (which takes no value).
std::vector<TensorType> pad(const MetaArgs &a) {
  std::string mode = a.optional_str("mode").value_or("constant");
  if (mode == "constant") return constant_pad_nd(a);
  COIL_USER_CHECK(a.is_none("value"), "Padding mode \"", mode, "\" doesn't take in value argument.");
  return mode_padded(a.tensor("self"), a.ints("pad"), mode, "pad");
}

/// reflection_pad1d/2d/3d, replication_pad1d/2d/3d: `dims` padded dims of an input with one
/// or two dims more (a batch and channels, or channels alone).
MetaFn fixed_pad(std::string mode, int64_t dims, std::string op) {
  return [=](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    COIL_USER_CHECK(self.rank() == dims + 1 || self.rank() == dims + 2, op, ": expected ", dims + 1, "D or ", dims + 2,
                    "D input, got ", shape_str(self.sizes));
    SymShape padding = a.ints("padding");
    COIL_USER_CHECK(int64_t(padding.size()) == 2 * dims, op, ": expected ", 2 * dims, " padding values, got ",
                    padding.size());
    return mode_padded(self, padding, mode, op);
  };
}

}  // namespace

void register_indexing_ops(Registry &r) {
  r.add("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", pad);
  for (int64_t d = 1; d <= 3; ++d) {
    std::string n = std::to_string(d);
    r.add(str_cat("reflection_pad", n, "d(Tensor self, SymInt[", 2 * d, "] padding) -> Tensor"),
          fixed_pad("reflect", d, str_cat("reflection_pad", n, "d")));
    r.add(str_cat("replication_pad", n, "d(Tensor self, SymInt[", 2 * d, "] padding) -> Tensor"),
          fixed_pad("replicate", d, str_cat("replication_pad", n, "d")));
  }
  r.add("cat(Tensor[] tensors, int dim=0) -> Tensor", cat);
  r.add("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", constant_pad_nd);
  r.add("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", index);
  r.add("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor", index_put);
  r.add("index_select(Tensor self, int dim, Tensor index) -> Tensor", index_select);
  r.add("nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor", nonzero_static);
  r.add("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor", put);
  r.add("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", histc);
  // histogram: (hist [bins], bin_edges [bins + 1]) in self's dtype; histogramdd's parts: its
  // bin edges per dim, and its hist [bins...] from bin counts or from edge tensors.
  auto histogram = [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    int64_t bins = histogram_bins(a, "torch.histogram", false)[0];
    return std::vector<TensorType>{contiguous(self.dtype, {bins}, self.device), contiguous(self.dtype, {bins + 1}, self.device)};
  };
  r.add("histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> (Tensor hist, Tensor bin_edges)",
        histogram);
  r.add("histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> "
        "(Tensor hist, Tensor bin_edges)",
        histogram);
  r.add("_histogramdd_bin_edges(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> Tensor[]",
        [](const MetaArgs &a) {
          const TensorType &self = a.tensor("self");
          std::vector<TensorType> edges;
          for (int64_t b : histogram_bins(a, "torch.histogramdd", true)) edges.push_back(contiguous(self.dtype, {b + 1}, self.device));
          return edges;
        });
  auto histogramdd = [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    return std::vector<TensorType>{contiguous(self.dtype, histogram_bins(a, "torch.histogramdd", true), self.device)};
  };
  r.add("_histogramdd_from_bin_cts(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> Tensor",
        histogramdd);
  r.add("_histogramdd_from_bin_tensors(Tensor self, Tensor[] bins, *, Tensor? weight=None, bool density=False) -> "
        "Tensor",
        histogramdd);
  r.add("as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
        "-> Tensor",
        as_strided_scatter);
  r.add("index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) "
        "-> Tensor",
        index_reduce);
  r.add("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", gather);
  r.add("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", scatter(true));
  r.add("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", scatter(true));
  r.add("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) "
        "-> Tensor",
        [](const MetaArgs &a) {
          std::string reduce = a.optional_str("reduce").value_or("");
          COIL_USER_CHECK(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" ||
                              reduce == "amin",
                          "scatter_reduce: reduce must be sum, prod, mean, amax or amin, got '", reduce, "'");
          return scatter(true)(a);
        });
  r.add("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", scatter(false));
  auto add_or_multiply = [](bool has_src) {
    return [=](const MetaArgs &a) {
      std::string reduce = a.optional_str("reduce").value_or("");
      COIL_USER_CHECK(reduce == "add" || reduce == "multiply", "scatter: reduce must be 'add' or 'multiply', got '",
                      reduce, "'");
      return scatter(has_src)(a);
    };
  };
  r.add("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor", add_or_multiply(true));
  r.add("scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor",
        add_or_multiply(false));
  r.add("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
        "bool sparse=False) -> Tensor",
        embedding);
  r.add("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", masked_scatter);
  // _embedding_bag_forward_only: the same outputs, where no backward will read the last three.
  // offset2bag is empty on the CPU kernel's fast path, which takes bf16 where PyTorch's meta
  // function does not: the graph's annotation says which (OpDef::typed_by_backend).
  for (const char *name : {"_embedding_bag", "_embedding_bag_forward_only"})
    r.add(str_cat(name, "(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, "
                  "bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, "
                  "int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)"),
          embedding_bag)
        .typed_by_backend = {1};
  r.add("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, "
        "bool scale_grad_by_freq) -> Tensor",
        embedding_backward);
  r.add("flip(Tensor self, int[] dims) -> Tensor", flip);
  r.add("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
        "-> Tensor",
        slice_scatter);
  r.add("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", select_scatter);
  r.add("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor",
        [](const MetaArgs &a) { return search_sorted(a, "boundaries"); });
  r.add("searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, "
        "str? side=None, Tensor? sorter=None) -> Tensor",
        [](const MetaArgs &a) { return search_sorted(a, "sorted_sequence"); });
  r.add("diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor", diagonal_scatter);
}

}  // namespace coil
