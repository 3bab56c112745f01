#include "graph/strides.h"

#include <algorithm>
#include <numeric>

namespace coil {

SymShape broadcast_shapes(const SymShape &a, const SymShape &b) {
  size_t n = std::max(a.size(), b.size());
  SymShape out(n);
  for (size_t i = 0; i < n; ++i) {
    // Align from the right: dim i of the result is dim (size - n + i) of each input.
    SymInt da = i + a.size() >= n ? a[i + a.size() - n] : SymInt(1);
    SymInt db = i + b.size() >= n ? b[i + b.size() - n] : SymInt(1);
    if (da != db && da != 1 && db != 1)
      throw UserError(str_cat("shapes ", shape_str(a), " and ", shape_str(b),
                              " cannot be broadcast: dim ", i, " is ", da, " vs ", db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

SymShape channels_last_strides(const SymShape &sizes) {
  COIL_ASSERT(sizes.size() == 4 || sizes.size() == 5, "channels-last needs 4 or 5 dims");
  // Order the dims C, W, H, (D,) N from fastest to slowest. Unlike row-major strides,
  // PyTorch multiplies the sizes as they are: [2, 0, 4, 5] gives [0, 1, 0, 0].
  std::vector<size_t> order = {1};
  for (size_t d = sizes.size() - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  SymShape strides(sizes.size());
  SymInt acc = 1;
  for (size_t d : order) {
    strides[d] = acc;
    acc *= sizes[d];
  }
  return strides;
}

bool is_channels_last(const SymShape &sizes, const SymShape &strides) {
  if (sizes.size() != 4 && sizes.size() != 5) return false;
  if (strides[1] == 0) return false;  // a trivial C dimension defaults to NCHW
  std::vector<size_t> order = {1};
  for (size_t d = sizes.size() - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  SymInt min = 0;
  for (size_t d : order) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N111 tensors and friends are ambiguous: fall back to contiguous.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

MemoryFormat suggest_memory_format(const SymShape &sizes, const SymShape &strides) {
  if (!is_channels_last(sizes, strides)) return MemoryFormat::Contiguous;
  return sizes.size() == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
}

SymShape strides_for_format(const SymShape &sizes, MemoryFormat format) {
  switch (format) {
    case MemoryFormat::ChannelsLast:
      COIL_USER_CHECK(sizes.size() == 4, "channels_last needs a 4-d tensor, got ", shape_str(sizes));
      return channels_last_strides(sizes);
    case MemoryFormat::ChannelsLast3d:
      COIL_USER_CHECK(sizes.size() == 5, "channels_last_3d needs a 5-d tensor, got ", shape_str(sizes));
      return channels_last_strides(sizes);
    case MemoryFormat::Contiguous:
    case MemoryFormat::Preserve: return contiguous_strides(sizes);
  }
  return contiguous_strides(sizes);
}

bool is_contiguous(const SymShape &sizes, const SymShape &strides) {
  // An empty tensor is contiguous whatever its strides, as in PyTorch.
  if (std::any_of(sizes.begin(), sizes.end(), [](const SymInt &s) { return s == 0; })) return true;
  SymInt expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool is_non_overlapping_and_dense(const SymShape &sizes, const SymShape &strides) {
  size_t n = sizes.size();
  if (n == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Size-0/1 dims go last; the rest by increasing stride.
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  SymInt required = 1;
  for (size_t d : perm) {
    if (sizes[d] < 2) return true;
    if (strides[d] != required) return false;
    required *= sizes[d];
  }
  return true;
}

bool is_channels_last_contiguous(const SymShape &sizes, const SymShape &strides) {
  return (sizes.size() == 4 || sizes.size() == 5) && is_channels_innermost_packed(sizes, strides);
}

bool is_channels_innermost_packed(const SymShape &sizes, const SymShape &strides) {
  if (sizes.size() < 2) return false;
  std::vector<size_t> order = {1};
  for (size_t d = sizes.size() - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  SymInt expected = 1;
  for (size_t d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

SymShape dense_order_strides(const TensorType &t) {
  if (t.rank() <= 1) return contiguous_strides(t.sizes);
  // The short cuts of PyTorch's elementwise layout: they decide ambiguous layouts
  // (size-1 dims, empty tensors) before the general ordering.
  bool contiguous = is_contiguous(t.sizes, t.strides);
  bool channels_last = t.rank() == 4 && is_channels_last_contiguous(t.sizes, t.strides);
  if (contiguous && !channels_last) return contiguous_strides(t.sizes);
  if (channels_last && !contiguous) return channels_last_strides(t.sizes);
  const TensorType *operands[] = {&t};
  return elementwise_output_strides(t.sizes, operands);
}

SymShape preserve_format_strides(const TensorType &t) {
  bool dense = is_contiguous(t.sizes, t.strides) || is_channels_last_contiguous(t.sizes, t.strides) ||
               is_non_overlapping_and_dense(t.sizes, t.strides);
  return dense ? SymShape(t.strides) : dense_order_strides(t);
}

SymShape empty_like_strides(const TensorType &t, MemoryFormat format) {
  if (format != MemoryFormat::Preserve) return strides_for_format(t.sizes, format);
  return preserve_format_strides(t);
}

namespace {

// The strides of operand `t` seen through broadcasting to `shape`: 0 on broadcast dims.
SymShape broadcast_strides(const TensorType &t, const SymShape &shape) {
  SymShape s(shape.size(), 0);
  size_t offset = shape.size() - t.sizes.size();
  for (size_t i = 0; i < t.sizes.size(); ++i)
    s[offset + i] = t.sizes[i] == 1 && shape[offset + i] != 1 ? SymInt(0) : t.strides[i];
  return s;
}

}  // namespace

SymShape elementwise_output_strides(const SymShape &shape, std::span<const TensorType *const> operands) {
  size_t n = shape.size();
  if (n <= 1) return contiguous_strides(shape);
  std::vector<SymShape> strides;
  for (const TensorType *t : operands)
    if (t && t->sizes.size() <= n) strides.push_back(broadcast_strides(*t, shape));

  // 1: dim0 should come after dim1 (it is slower), -1: before, 0: no operand decides.
  auto compare = [&](size_t dim0, size_t dim1) {
    for (const SymShape &s : strides) {
      const SymInt &s0 = s[dim0], &s1 = s[dim1];
      if (s0 == 0 || s1 == 0) continue;  // broadcast in one of them: ask the next operand
      if (s0 != s1) return s0 < s1 ? -1 : 1;
      if (shape[dim0] > shape[dim1]) return 1;  // equal strides: the smaller dim goes first
    }
    return 0;
  };
  // perm[0] is the fastest dim; start from the row-major order and insertion-sort.
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (size_t i = 1; i < n; ++i) {
    size_t dim1 = i;
    for (size_t dim0 = i; dim0-- > 0;) {
      int c = compare(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  SymShape out(n);
  SymInt acc = 1;
  for (size_t d : perm) {
    out[d] = acc;
    acc *= sym_max(shape[d], 1);
  }
  return out;
}

std::optional<SymShape> view_strides(const SymShape &sizes, const SymShape &strides, const SymShape &new_sizes) {
  if (sizes.empty()) return SymShape(new_sizes.size(), 1);
  SymInt numel = checked_numel(sizes);
  if (numel == 0 && same(sizes, new_sizes)) return strides;
  if (numel == 0) return contiguous_strides(new_sizes);

  // Walk the old dims from the right in chunks that are contiguous among themselves;
  // each chunk must be matched exactly by a run of new dims.
  SymShape out(new_sizes.size());
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  SymInt chunk_base_stride = strides.back();
  SymInt tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[size_t(d)];
    bool chunk_ends = d == 0 || (sizes[size_t(d - 1)] != 1 &&
                                 strides[size_t(d - 1)] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[size_t(view_d)] == 1)) {
      out[size_t(view_d)] = view_numel * chunk_base_stride;
      view_numel *= new_sizes[size_t(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = strides[size_t(d - 1)];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

SliceBounds slice_bounds(const SymInt &size, std::optional<SymInt> start_arg, std::optional<SymInt> end_arg,
                         int64_t step) {
  if (end_arg && !end_arg->symbolic() && end_arg->hint() >= (int64_t(1) << 62)) end_arg.reset();
  SymInt start = start_arg.value_or(0), end = end_arg.value_or(size);
  if (start_arg && start < 0) start = start + size;
  if (end_arg && end < 0) end = end + size;
  start = start < 0 ? SymInt(0) : start > size ? size : start;
  end = end < start ? start : end > size ? size : end;
  // ceil(len / step) for len >= 0.
  return {start, sym_floor_div(end - start + (step - 1), step)};
}

DiagonalView diagonal_view(const SymShape &sizes, const SymShape &strides, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t rank = int64_t(sizes.size());
  size_t d1 = size_t(wrap_dim(dim1, rank)), d2 = size_t(wrap_dim(dim2, rank));
  COIL_USER_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t length = offset >= 0 ? std::min<int64_t>(sizes[d1], sizes[d2] - offset)
                                : std::min<int64_t>(sizes[d1] + offset, sizes[d2]);
  DiagonalView v;
  length = std::max<int64_t>(length, 0);
  if (length > 0) v.start = offset >= 0 ? offset * strides[d2] : -offset * strides[d1];
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d == d1 || d == d2) continue;
    v.sizes.push_back(sizes[d]);
    v.strides.push_back(strides[d]);
  }
  v.sizes.push_back(length);
  v.strides.push_back(strides[d1] + strides[d2]);
  return v;
}

SymShape infer_view_size(const SymShape &new_sizes, const SymInt &numel) {
  SymShape out = new_sizes;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!(out[i].hint() == -1 && !out[i].symbolic())) continue;
    COIL_USER_CHECK(infer < 0, "only one dimension can be inferred in ", shape_str(new_sizes));
    infer = int(i);
    out[i] = 1;
  }
  for (const SymInt &s : out) COIL_USER_CHECK(s >= 0, "invalid size ", s, " in ", shape_str(new_sizes));
  SymInt known = checked_numel(out);
  if (infer >= 0) {
    COIL_USER_CHECK(known != 0 && sym_mod(numel, known) == 0, "shape ", shape_str(new_sizes),
                    " is invalid for input of size ", numel);
    out[size_t(infer)] = sym_floor_div(numel, known);
  }
  COIL_USER_CHECK(checked_numel(out) == numel, "shape ", shape_str(new_sizes),
                  " is invalid for input of size ", numel);
  return out;
}

}  // namespace coil
