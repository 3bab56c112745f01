// The type of a tensor value: element type, sizes, strides and device.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "graph/sym_int.h"

namespace coil {

struct Device {
  enum class Kind : uint8_t { CPU, CUDA };
  Kind kind = Kind::CPU;
  int index = -1;  // -1: the current device of that kind

  bool operator==(const Device &) const = default;
  /// As PyTorch prints it in annotations: `cpu`, `cuda`, `cuda:0`.
  std::string str() const;
  static std::optional<Device> parse(std::string_view s);
};

/// Sizes or strides known as integers: a tensor at run time, a loop's ranges.
using Shape = std::vector<int64_t>;

/// A graph value's type. Its sizes and strides may depend on the graph's symbolic sizes
/// (graph/sym_int.h); a graph without symbols has plain integers throughout.
struct TensorType {
  DType dtype = DType::F32;
  SymShape sizes;
  SymShape strides;
  Device device;

  int64_t rank() const { return int64_t(sizes.size()); }
  SymInt numel() const;
  /// The same dtype, device, and sizes and strides of the same expressions (no guard).
  bool operator==(const TensorType &o) const;
  /// `f32[64, 256][256, 1]cpu`, `f32[s0, 768][768, 1]cpu`: the annotation PyTorch prints.
  std::string str() const;
};

/// `[64, 256]`, `[s0, 768]`
std::string shape_str(const Shape &s);
std::string shape_str(const SymShape &s);

/// Row-major strides of `sizes`.
Shape contiguous_strides(const Shape &sizes);
SymShape contiguous_strides(const SymShape &sizes);

/// Product of sizes; a UserError when it overflows int64.
int64_t checked_numel(const Shape &sizes);
SymInt checked_numel(const SymShape &sizes);

/// Elements a strided allocation of `t` spans when element 0 is `offset` elements in:
/// 1 + the largest offset, 0 for an empty tensor.
SymInt storage_extent(const TensorType &t, const SymInt &offset = 0);

/// The offsets from element 0 of a tensor's lowest and highest elements, for `strides` in
/// elements (empty: contiguous; negative ones reach below element 0); {0, 0} when empty.
std::pair<int64_t, int64_t> element_span(const Shape &sizes, std::span<const int64_t> strides);

/// Whether a caller's allocation of `storage_elements` elements, whose element
/// `storage_offset` is where a view's element 0 is, holds all `extent` elements of an
/// allocation whose element `offset` is that same element 0 (the caller's fields -1:
/// unknown, false).
bool allocation_holds(int64_t storage_offset, int64_t storage_elements, int64_t offset, int64_t extent);

/// Wraps a possibly negative dim into [0, rank); a UserError naming the range otherwise.
/// A rank-0 tensor accepts dims -1 and 0, as PyTorch does.
int64_t wrap_dim(int64_t dim, int64_t rank);

}  // namespace coil
