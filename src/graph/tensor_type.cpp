#include "graph/tensor_type.h"

#include <charconv>
#include <limits>
#include <type_traits>

#include "support/error.h"

namespace coil {

std::string Device::str() const {
  std::string s = kind == Kind::CPU ? "cpu" : "cuda";
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

std::optional<Device> Device::parse(std::string_view s) {
  Device d;
  std::string_view kind = s.substr(0, s.find(':'));
  if (kind == "cpu") {
    d.kind = Kind::CPU;
  } else if (kind == "cuda") {
    d.kind = Kind::CUDA;
  } else {
    return std::nullopt;
  }
  if (kind.size() == s.size()) return d;
  std::string_view idx = s.substr(kind.size() + 1);
  auto [end, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), d.index);
  if (ec != std::errc() || end != idx.data() + idx.size() || d.index < 0) return std::nullopt;
  return d;
}

SymInt TensorType::numel() const { return checked_numel(sizes); }

bool TensorType::operator==(const TensorType &o) const {
  return dtype == o.dtype && device == o.device && same(sizes, o.sizes) && same(strides, o.strides);
}

namespace {

template <typename S>
std::string shape_text(const S &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    if constexpr (std::is_same_v<typename S::value_type, SymInt>) out += coil::str(s[i]);
    else out += std::to_string(s[i]);
  }
  return out + "]";
}

template <typename S>
S row_major(const S &sizes) {
  S strides(sizes.size());
  typename S::value_type acc = int64_t(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    // PyTorch treats size-0 dims as size 1 when computing strides.
    if constexpr (std::is_same_v<typename S::value_type, SymInt>) acc = acc * sym_max(sizes[i], 1);
    else acc *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

}  // namespace

std::string shape_str(const Shape &s) { return shape_text(s); }
std::string shape_str(const SymShape &s) { return shape_text(s); }

std::string TensorType::str() const {
  return std::string(short_name(dtype)) + shape_str(sizes) + shape_str(strides) + device.str();
}

Shape contiguous_strides(const Shape &sizes) { return row_major(sizes); }
SymShape contiguous_strides(const SymShape &sizes) { return row_major(sizes); }

int64_t checked_numel(const Shape &sizes) {
  // Also bound the product with size-0 dims counted as 1: strides are computed that way.
  int64_t n = 1, extent = 1;
  for (int64_t s : sizes) {
    COIL_USER_CHECK(s >= 0, "negative size ", s, " in ", shape_str(sizes));
    int64_t e = s > 1 ? s : 1;
    if (extent > std::numeric_limits<int64_t>::max() / e)
      throw UserError(str_cat("the number of elements of ", shape_str(sizes), " overflows int64"));
    extent *= e;
    n *= s;
  }
  return n;
}

SymInt checked_numel(const SymShape &sizes) {
  checked_numel(hints(sizes));  // the checks, at the sizes compiled for
  SymInt n = int64_t(1);
  for (const SymInt &s : sizes) n = n * s;
  return n;
}

SymInt storage_extent(const TensorType &t, const SymInt &offset) {
  SymInt last = offset;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] == 0) return int64_t(0);
    last = last + (t.sizes[d] - 1) * t.strides[d];
  }
  return last + 1;
}

std::pair<int64_t, int64_t> element_span(const Shape &sizes, std::span<const int64_t> strides) {
  int64_t lowest = 0, highest = 0, dense = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 0) return {0, 0};
    int64_t reach = (sizes[d] - 1) * (strides.empty() ? dense : strides[d]);
    (reach < 0 ? lowest : highest) += reach;
    dense *= sizes[d];
  }
  return {lowest, highest};
}

bool allocation_holds(int64_t storage_offset, int64_t storage_elements, int64_t offset, int64_t extent) {
  int64_t before = storage_offset - offset;  // the caller's elements before the allocation
  return storage_offset >= 0 && before >= 0 && before + extent <= storage_elements;
}

int64_t wrap_dim(int64_t dim, int64_t rank) {
  int64_t r = rank == 0 ? 1 : rank;
  COIL_USER_CHECK(dim >= -r && dim < r, "dim ", dim, " is out of range for a tensor of rank ", rank,
                  " (expected a dim in [", -r, ", ", r - 1, "])");
  return dim < 0 ? dim + r : dim;
}

}  // namespace coil
