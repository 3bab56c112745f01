// SHA-256 (FIPS 180-4), for the cache's content-addressed keys (DESIGN.md, decision 9).
// Tests: tests/unit/runtime_test.cpp (the standard test vectors).
#pragma once

#include <string>
#include <string_view>

namespace coil {

/// The SHA-256 digest of `data` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace coil
