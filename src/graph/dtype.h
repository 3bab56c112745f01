// Element types, with PyTorch's names and promotion rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace coil {

enum class DType : uint8_t { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64 };

inline constexpr DType kAllDTypes[] = {DType::Bool, DType::U8,  DType::I8,   DType::I16, DType::I32,
                                       DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

/// Bytes per element.
int itemsize(DType t);
bool is_floating(DType t);
/// Integral includes bool only when `include_bool`.
bool is_integral(DType t, bool include_bool = false);

/// The short name PyTorch prints in graph annotations: f32, bf16, i64, b8, ... (a view of
/// a string literal: its data() ends with a NUL).
std::string_view short_name(DType t);
std::optional<DType> dtype_from_short_name(std::string_view s);

/// The Python spelling: torch.float32, torch.bfloat16, torch.bool, ...
std::string torch_name(DType t);
/// Accepts every alias PyTorch accepts: float32/float, float64/double, float16/half,
/// int64/long, int32/int, int16/short, ...; without the `torch.` prefix.
std::optional<DType> dtype_from_torch_name(std::string_view s);

/// The name in a safetensors header: F32, BF16, I64, BOOL, ...
std::string_view safetensors_name(DType t);
std::optional<DType> dtype_from_safetensors_name(std::string_view s);

/// The code of `t` in enum coil_dtype of coil/artifact.h, which compiled CPU graphs report
/// and include/coil/coil.h's ScalarType shares: the one table from codes to dtypes.
int32_t dtype_code(DType t);
/// The dtype whose code is `code`; nothing for a number that is no code.
std::optional<DType> dtype_from_code(int64_t code);

/// torch.promote_types: the smallest type both can be converted to without
/// changing category (bool < integral < floating).
DType promote_types(DType a, DType b);

/// PyTorch's default floating dtype (what a Python float and true division produce).
inline constexpr DType kDefaultFloat = DType::F32;

}  // namespace coil
