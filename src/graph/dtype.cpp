#include "graph/dtype.h"

#include <algorithm>

#include "coil/artifact.h"
#include "support/error.h"

namespace coil {
namespace {

struct DTypeInfo {
  DType type;
  int size;
  std::string_view short_name;
  std::string_view torch_name;
  std::string_view safetensors_name;
  int32_t code;  // enum coil_dtype
};

constexpr DTypeInfo kInfo[] = {
    {DType::Bool, 1, "b8", "bool", "BOOL", COIL_BOOL},       {DType::U8, 1, "u8", "uint8", "U8", COIL_U8},
    {DType::I8, 1, "i8", "int8", "I8", COIL_I8},             {DType::I16, 2, "i16", "int16", "I16", COIL_I16},
    {DType::I32, 4, "i32", "int32", "I32", COIL_I32},        {DType::I64, 8, "i64", "int64", "I64", COIL_I64},
    {DType::F16, 2, "f16", "float16", "F16", COIL_F16},      {DType::BF16, 2, "bf16", "bfloat16", "BF16", COIL_BF16},
    {DType::F32, 4, "f32", "float32", "F32", COIL_F32},      {DType::F64, 8, "f64", "float64", "F64", COIL_F64},
};

const DTypeInfo &info(DType t) {
  for (const auto &i : kInfo)
    if (i.type == t) return i;
  COIL_ASSERT(false, "unknown dtype ", int(t));
}

// Python aliases that torch accepts besides the canonical names.
struct Alias {
  std::string_view name;
  DType type;
};
constexpr Alias kAliases[] = {{"float", DType::F32}, {"double", DType::F64}, {"half", DType::F16},
                              {"long", DType::I64},  {"int", DType::I32},    {"short", DType::I16}};

// Rank of an integral type in PyTorch's lattice; u8 sits beside i8, not above it.
int integral_rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::U8: return 1;
    case DType::I8: return 1;
    case DType::I16: return 2;
    case DType::I32: return 3;
    case DType::I64: return 4;
    case DType::F16:
    case DType::BF16:
    case DType::F32:
    case DType::F64: break;
  }
  COIL_ASSERT(false, "not an integral type");
}

}  // namespace

int itemsize(DType t) { return info(t).size; }

bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}

bool is_integral(DType t, bool include_bool) {
  if (t == DType::Bool) return include_bool;
  return !is_floating(t);
}

std::string_view short_name(DType t) { return info(t).short_name; }
std::string torch_name(DType t) { return "torch." + std::string(info(t).torch_name); }
std::string_view safetensors_name(DType t) { return info(t).safetensors_name; }

int32_t dtype_code(DType t) { return info(t).code; }

std::optional<DType> dtype_from_code(int64_t code) {
  for (const auto &i : kInfo)
    if (i.code == code) return i.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_short_name(std::string_view s) {
  for (const auto &i : kInfo)
    if (i.short_name == s) return i.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_torch_name(std::string_view s) {
  for (const auto &i : kInfo)
    if (i.torch_name == s) return i.type;
  for (const auto &a : kAliases)
    if (a.name == s) return a.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors_name(std::string_view s) {
  for (const auto &i : kInfo)
    if (i.safetensors_name == s) return i.type;
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    // f16 and bf16 share no narrower common type.
    if (itemsize(a) == 2 && itemsize(b) == 2) return DType::F32;
    return itemsize(a) > itemsize(b) ? a : b;
  }
  // u8 with a signed type needs a sign bit: u8 + i8 -> i16.
  if (a == DType::U8 || b == DType::U8) {
    DType other = a == DType::U8 ? b : a;
    return other == DType::I8 ? DType::I16 : other;
  }
  return integral_rank(a) > integral_rank(b) ? a : b;
}

}  // namespace coil
