// Helpers shared by the meta functions of every op family.
#pragma once

#include <vector>

#include "graph/registry.h"
#include "graph/strides.h"

namespace coil::meta {

/// A fresh contiguous tensor.
inline TensorType contiguous(DType dtype, SymShape sizes, Device device) {
  SymShape strides = contiguous_strides(sizes);
  return TensorType{dtype, std::move(sizes), std::move(strides), device};
}

/// The device all tensor operands share; 0-dim CPU tensors and Python numbers may be
/// mixed with any device, as in PyTorch.
Device common_device(const std::vector<Operand> &operands);

/// A UserError unless `layout` is absent or strided: the only layout coil's tensors have.
void check_strided(std::optional<Layout> layout);

/// Wraps and deduplicates reduction dims; none or [] means every dim.
std::vector<bool> reduced_dims(const std::optional<std::vector<int64_t>> &dims, int64_t rank);

/// The shape after reducing `reduced` dims of `sizes`, with or without keepdim.
SymShape reduced_shape(const SymShape &sizes, const std::vector<bool> &reduced, bool keepdim);

/// An operand of _trilinear at the product's `rank`: 1 at each of its `expand` dims, its
/// own sizes in order at the others. A UserError names `op` when they do not add up.
SymShape trilinear_operand(const SymShape &sizes, const std::vector<int64_t> &expand, int64_t rank, std::string_view op);

}  // namespace coil::meta
