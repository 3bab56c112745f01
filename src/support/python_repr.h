// Python's repr of floats and strings, so printed graphs read as PyTorch prints them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace coil {

/// repr(float): shortest round-trip digits, fixed notation for exponents in [-4, 16),
/// `1e-05` style otherwise, `inf`, `-inf`, `nan`, and `2.0` rather than `2`.
std::string python_float_repr(double v);

/// repr(str) with single quotes.
std::string python_str_repr(std::string_view s);

/// Parses a Python int or float literal (no sign); nullopt when it is not one or an int
/// does not fit int64.
std::optional<int64_t> parse_python_int(std::string_view s);
std::optional<double> parse_python_float(std::string_view s);

}  // namespace coil
