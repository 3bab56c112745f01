// Tensors in host memory, as coil's runtime and tests hold them.
//
// A HostTensor is a dtype, a shape and a 64-byte aligned block of bytes laid out
// contiguously in row-major order; it has no strides, offsets or views, because every
// producer (safetensors files, the runtime's outputs) hands over dense data. Elements
// are stored in the host's byte order. The half-precision helpers decode and encode
// f16 and bf16 at the bit level, so comparisons against PyTorch's outputs do not
// depend on compiler support for those types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "support/error.h"

namespace coil {

/// Zero-initialised heap storage of `size()` bytes whose start is 64-byte aligned,
/// so kernels may use aligned vector loads. Copying copies the bytes; a moved-from
/// buffer is empty.
class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() : AlignedBuffer(0) {}
  explicit AlignedBuffer(size_t size);
  AlignedBuffer(const AlignedBuffer &other);
  AlignedBuffer &operator=(const AlignedBuffer &other);
  AlignedBuffer(AlignedBuffer &&other) noexcept;
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;
  ~AlignedBuffer() = default;

  std::byte *data() { return bytes_.get(); }
  const std::byte *data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  std::span<std::byte> bytes() { return {data(), size_}; }
  std::span<const std::byte> bytes() const { return {data(), size_}; }

 private:
  struct Free {
    void operator()(std::byte *p) const;
  };
  std::unique_ptr<std::byte[], Free> bytes_;
  size_t size_ = 0;
};

/// A dense row-major tensor. Whoever builds one keeps `data.size() == nbytes()`;
/// zeros() and the safetensors reader do.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  AlignedBuffer data;

  /// A tensor of zeros. Throws UserError when the byte count does not fit in memory
  /// addresses (a shape like [2^40, 2^40]).
  static HostTensor zeros(DType dtype, std::vector<int64_t> sizes);

  int64_t numel() const;
  /// numel() * itemsize(dtype).
  size_t nbytes() const;

  /// The elements as T; T must have the dtype's size (uint16_t for f16 and bf16).
  template <class T>
  T *ptr() {
    check_element_size(sizeof(T));
    return reinterpret_cast<T *>(data.data());
  }
  template <class T>
  const T *ptr() const {
    check_element_size(sizeof(T));
    return reinterpret_cast<const T *>(data.data());
  }

  /// The element at `flat_index` (row-major) converted to double; bool reads as 0 or 1.
  double element_as_double(int64_t flat_index) const;

  /// The type as PyTorch prints it in graphs: `f32[64, 256]`, `i64[]`.
  std::string describe() const;

 private:
  void check_element_size(size_t element_size) const;
};

/// Named tensors in file order.
using TensorList = std::vector<std::pair<std::string, HostTensor>>;

/// The first tensor called `name`, or null.
const HostTensor *find_tensor(const TensorList &tensors, std::string_view name);

/// The number of elements of `sizes`, or nothing when a size is negative or the
/// product overflows int64 (a zero size makes the product 0 whatever the others are).
std::optional<int64_t> try_numel(const std::vector<int64_t> &sizes);

/// IEEE binary16 <-> binary32. float_to_half rounds to nearest, ties to even;
/// overflow gives infinity and NaN stays NaN (quiet).
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);

/// bfloat16 <-> binary32, with the same rounding and special values.
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

/// Visits the row-major points of `sizes`, calling f(flat, offset): the point's position in
/// row-major order and its element offset under `strides` from `offset`. Nothing for an
/// empty shape's zero points.
template <typename F>
void for_each_offset(const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides, int64_t offset, F &&f) {
  for (int64_t s : sizes)
    if (s == 0) return;
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t flat = 0;
  while (true) {
    int64_t at = offset;
    for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * strides[d];
    f(flat++, at);
    size_t d = idx.size();
    while (d > 0) {
      if (++idx[d - 1] < sizes[d - 1]) break;
      idx[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

}  // namespace coil
