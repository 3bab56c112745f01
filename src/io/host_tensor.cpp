#include "io/host_tensor.h"

#include <bit>
#include <cstring>
#include <new>

namespace coil {

// ---------------------------------------------------------------------------
// AlignedBuffer

void AlignedBuffer::Free::operator()(std::byte *p) const {
  ::operator delete(p, std::align_val_t{kAlignment});
}

AlignedBuffer::AlignedBuffer(size_t size)
    // operator new(0) still returns a unique pointer, so data() is never null for a
    // live buffer and memcpy/memset on it are always defined.
    : bytes_(static_cast<std::byte *>(::operator new(size, std::align_val_t{kAlignment}))),
      size_(size) {
  std::memset(bytes_.get(), 0, size_);
}

AlignedBuffer::AlignedBuffer(const AlignedBuffer &other) : AlignedBuffer(other.size_) {
  if (size_ > 0) std::memcpy(bytes_.get(), other.bytes_.get(), size_);
}

AlignedBuffer &AlignedBuffer::operator=(const AlignedBuffer &other) {
  if (this != &other) *this = AlignedBuffer(other);
  return *this;
}

AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : bytes_(std::move(other.bytes_)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  bytes_ = std::move(other.bytes_);
  size_ = std::exchange(other.size_, 0);
  return *this;
}

// ---------------------------------------------------------------------------
// HostTensor

namespace {

std::string join_sizes(const std::vector<int64_t> &sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += str_cat(i ? ", " : "", sizes[i]);
  return out + "]";
}

}  // namespace

std::optional<int64_t> try_numel(const std::vector<int64_t> &sizes) {
  int64_t numel = 1;
  bool has_zero = false;
  for (int64_t s : sizes) {
    if (s < 0) return std::nullopt;
    has_zero = has_zero || s == 0;
  }
  if (has_zero) return 0;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(numel, s, &numel)) return std::nullopt;
  return numel;
}

HostTensor HostTensor::zeros(DType dtype, std::vector<int64_t> sizes) {
  for (int64_t s : sizes) COIL_ASSERT(s >= 0, "negative size in ", join_sizes(sizes));
  std::optional<int64_t> numel = try_numel(sizes);
  int64_t nbytes = 0;
  if (!numel || __builtin_mul_overflow(*numel, int64_t{itemsize(dtype)}, &nbytes))
    throw UserError(str_cat("a ", short_name(dtype), join_sizes(sizes),
                            " tensor has more bytes than memory can address"));
  HostTensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  try {
    t.data = AlignedBuffer(static_cast<size_t>(nbytes));
  } catch (const std::bad_alloc &) {
    throw UserError(str_cat("not enough memory for a tensor ", short_name(dtype), join_sizes(t.sizes), " (", nbytes,
                            " bytes)"));
  }
  return t;
}

int64_t HostTensor::numel() const {
  std::optional<int64_t> n = try_numel(sizes);
  COIL_ASSERT(n.has_value(), "invalid sizes ", join_sizes(sizes));
  return *n;
}

size_t HostTensor::nbytes() const {
  return static_cast<size_t>(numel()) * static_cast<size_t>(itemsize(dtype));
}

void HostTensor::check_element_size(size_t element_size) const {
  COIL_ASSERT(element_size == static_cast<size_t>(itemsize(dtype)), "reading ", describe(),
              " with elements of ", element_size, " bytes");
}

double HostTensor::element_as_double(int64_t flat_index) const {
  COIL_ASSERT(flat_index >= 0 && flat_index < numel(), "index ", flat_index, " out of range for ",
              describe());
  const std::byte *p = data.data() + flat_index * itemsize(dtype);
  // memcpy reads the element without type-punning the byte buffer.
  auto load = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (dtype) {
    case DType::Bool: return load(uint8_t{}) != 0 ? 1.0 : 0.0;
    case DType::U8: return load(uint8_t{});
    case DType::I8: return load(int8_t{});
    case DType::I16: return load(int16_t{});
    case DType::I32: return load(int32_t{});
    case DType::I64: return static_cast<double>(load(int64_t{}));
    case DType::F16: return half_to_float(load(uint16_t{}));
    case DType::BF16: return bf16_to_float(load(uint16_t{}));
    case DType::F32: return load(float{});
    case DType::F64: return load(double{});
  }
  COIL_ASSERT(false, "unknown dtype ", int(dtype));
}

std::string HostTensor::describe() const {
  return std::string(short_name(dtype)) + join_sizes(sizes);
}

const HostTensor *find_tensor(const TensorList &tensors, std::string_view name) {
  for (const auto &[n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

// ---------------------------------------------------------------------------
// Half-precision conversions

namespace {

constexpr uint32_t kF32ExpMask = 0x7f800000;
constexpr uint32_t kF32AbsMask = 0x7fffffff;

// Drops the low `shift` bits of `value`, rounding to nearest with ties to even.
uint32_t shift_right_round_even(uint32_t value, int shift) {
  uint32_t kept = value >> shift;
  uint32_t rest = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1))) ++kept;
  return kept;
}

}  // namespace

float half_to_float(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exp = (bits >> 10) & 0x1f;
  uint32_t mant = bits & 0x3ff;
  uint32_t out;
  if (exp == 0x1f) {
    out = sign | kF32ExpMask | (mant << 13);  // inf, or NaN keeping its payload
  } else if (exp != 0) {
    out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  } else if (mant == 0) {
    out = sign;
  } else {
    // Subnormal half: every one is a normal float. Shift the leading 1 up to the
    // implicit-bit position, lowering the exponent once per shift.
    int e = 127 - 15 + 1;
    while (!(mant & 0x400)) {
      mant <<= 1;
      --e;
    }
    out = sign | (uint32_t(e) << 23) | ((mant & 0x3ff) << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t float_to_half(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t abs = x & kF32AbsMask;
  if (abs > kF32ExpMask) return sign | 0x7e00 | uint16_t((abs >> 13) & 0x3ff);  // quiet NaN
  // 65520 is halfway between the largest half, 65504, and 65536: it and everything
  // above it rounds to infinity.
  if (abs >= 0x477ff000) return sign | 0x7c00;
  if (abs >= 0x38800000) {
    // Normal half: rebias the exponent (127 -> 15) and round away 13 mantissa bits; a
    // carry out of the mantissa correctly bumps the exponent.
    uint32_t rebiased = abs - ((127u - 15u) << 23);
    return sign | uint16_t(shift_right_round_even(rebiased, 13));
  }
  // Below 2^-14 the result is subnormal (or zero), counted in units of 2^-24. A float
  // with exponent field e and 24-bit significand m is m * 2^(e-150) = m >> (126 - e)
  // units; below 2^-25 (e < 102) everything rounds to zero.
  uint32_t e = abs >> 23;
  if (e < 102) return sign;
  uint32_t m = (abs & 0x7fffff) | 0x800000;
  return sign | uint16_t(shift_right_round_even(m, int(126 - e)));
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

uint16_t float_to_bf16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  // Rounding could carry a NaN's payload into infinity, so NaN is made quiet instead.
  if ((x & kF32AbsMask) > kF32ExpMask) return uint16_t((x >> 16) | 0x0040);
  // bf16 is the top half of a float; overflow rounds into the infinity pattern.
  return uint16_t(shift_right_round_even(x, 16));
}

}  // namespace coil
