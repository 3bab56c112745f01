// PyTorch's rules for the strides of tensors: fresh outputs of elementwise ops, the
// `*_like` factories, memory formats, and views. They compute on symbolic sizes as on
// integers (graph/sym_int.h): a comparison that the symbols' ranges do not decide is
// decided at the sizes compiled for, and guarded.
#pragma once

#include <algorithm>
#include <optional>
#include <span>

#include "graph/arg.h"
#include "graph/tensor_type.h"

namespace coil {

/// The shape two shapes broadcast to; a UserError naming the dim otherwise.
SymShape broadcast_shapes(const SymShape &a, const SymShape &b);

/// NHWC strides of a 4-d shape (NDHWC for 5-d).
SymShape channels_last_strides(const SymShape &sizes);

/// The dims [N, C, spatial...] of a layout reordered as [N, spatial..., C] (the order a
/// channels-last tensor walks memory in), sizes and strides alike.
template <typename S>
void channels_innermost(S &sizes, S &strides) {
  std::rotate(sizes.begin() + 1, sizes.begin() + 2, sizes.end());
  std::rotate(strides.begin() + 1, strides.begin() + 2, strides.end());
}

/// c10's is_channels_last_strides_2d / _3d: does this layout read as channels-last?
bool is_channels_last(const SymShape &sizes, const SymShape &strides);

/// Tensor::suggest_memory_format.
MemoryFormat suggest_memory_format(const SymShape &sizes, const SymShape &strides);

/// Strides of a fresh tensor of `sizes` in `format` (Contiguous or ChannelsLast*).
SymShape strides_for_format(const SymShape &sizes, MemoryFormat format);

bool is_contiguous(const SymShape &sizes, const SymShape &strides);
bool is_non_overlapping_and_dense(const SymShape &sizes, const SymShape &strides);

/// is_contiguous(memory_format=channels_last / channels_last_3d): NHWC (NDHWC) strides on
/// every dim of size != 1; unlike is_contiguous, an empty tensor does not pass for free.
bool is_channels_last_contiguous(const SymShape &sizes, const SymShape &strides);

/// Packed with the channels (dim 1) innermost, then the spatial dims from the last, then the
/// batch, at any rank from 2; dims of one element may have any stride. The layout the
/// libraries call NHWC (NWC, NDHWC).
bool is_channels_innermost_packed(const SymShape &sizes, const SymShape &strides);

/// empty_like(t) under preserve_format as the graph-facing references compute it: t's
/// dims ordered the way an elementwise op orders them, then packed densely (the dim
/// order of a non-dense input is kept; empty tensors pack row-major).
SymShape dense_order_strides(const TensorType &t);

/// preserve_format for clone, _to_copy and fill: a dense layout (c10 counts every
/// contiguous one, empty tensors included) is kept as it is, anything else gets
/// dense_order_strides.
SymShape preserve_format_strides(const TensorType &t);

/// The strides of `empty_like(t, memory_format)`: preserve_format_strides for
/// Preserve, else a fresh tensor in that format.
SymShape empty_like_strides(const TensorType &t, MemoryFormat format);

/// The strides TensorIterator gives the output of an elementwise op over `operands`
/// broadcast to `shape`: the operands' dimension order, fastest dim first, ties broken
/// by the first operand that orders them.
SymShape elementwise_output_strides(const SymShape &shape, std::span<const TensorType *const> operands);

/// The strides of viewing (sizes, strides) as new_sizes without a copy, or nullopt when
/// the memory layout does not allow it (what `view` rejects and `reshape` copies for).
std::optional<SymShape> view_strides(const SymShape &sizes, const SymShape &strides, const SymShape &new_sizes);

/// The first element and length of slicing a dim of `size` with PyTorch's rules:
/// negative bounds count from the end, then both are clamped into [0, size]; an end of 2^62
/// or more is the dim's end (export writes int64's maximum). Symbolic bounds are compared
/// as SymInts: a clamp that the symbols' ranges do not decide is a guard (`s0 <= 16` for
/// `[:s0]` of a dim of 16), not a specialization.
struct SliceBounds {
  SymInt start = 0;
  SymInt length = 0;
};
SliceBounds slice_bounds(const SymInt &size, std::optional<SymInt> start, std::optional<SymInt> end, int64_t step);

/// diagonal(offset, dim1, dim2) of a tensor of these sizes and strides: dim1 and dim2
/// removed and the diagonal appended as the last dim, which starts `start` elements after
/// the input (not moved when the diagonal is empty, as in eager). A UserError for bad dims.
struct DiagonalView {
  SymShape sizes, strides;
  int64_t start = 0;
};
DiagonalView diagonal_view(const SymShape &sizes, const SymShape &strides, int64_t offset, int64_t dim1, int64_t dim2);

/// Resolves one -1 in a view shape against numel; a UserError when it cannot.
SymShape infer_view_size(const SymShape &new_sizes, const SymInt &numel);

}  // namespace coil
