// Helpers shared by the meta functions of every op family.
#pragma once

#include <vector>

#include "graph/registry.h"
#include "graph/strides.h"

namespace coil::meta {

/// A fresh contiguous tensor.
inline TensorType contiguous(DType dtype, Shape sizes, Device device) {
  Shape strides = contiguous_strides(sizes);
  return TensorType{dtype, std::move(sizes), std::move(strides), device};
}

/// The device all tensor operands share; 0-dim CPU tensors and Python numbers may be
/// mixed with any device, as in PyTorch.
Device common_device(const std::vector<Operand> &operands);

/// Wraps and deduplicates reduction dims; none or [] means every dim.
std::vector<bool> reduced_dims(const std::optional<std::vector<int64_t>> &dims, int64_t rank);

/// The shape after reducing `reduced` dims of `sizes`, with or without keepdim.
Shape reduced_shape(const Shape &sizes, const std::vector<bool> &reduced, bool keepdim);

// Defined in creation.cpp, used by the indexing family too.

/// torch.empty(sizes, memory_format=format) strides (format is not Preserve).
Shape format_strides(const Shape &sizes, MemoryFormat format);

/// empty_like(t) under preserve_format, as the graph-facing references compute it:
/// t's dims ordered the way an elementwise op orders them, then packed densely (the
/// dim order of non-dense inputs is kept). strides.h's empty_like_strides falls back to
/// the suggested memory format instead; the two should become one.
Shape empty_like_perm_strides(const TensorType &t);

/// clone(t) under preserve_format: dense layouts as they are, else empty_like's.
Shape clone_strides(const TensorType &t);

}  // namespace coil::meta
