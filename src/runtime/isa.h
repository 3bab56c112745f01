// The SIMD instruction set CPU kernels are generated and compiled for (DESIGN.md,
// decisions 6 and 9): found on the host at run time, chosen by the option `cpp.isa`, and
// part of every CPU kernel's cache key. Tests: tests/unit/runtime_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coil {

/// Ordered: an ISA can run the kernels of every ISA before it.
enum class Isa : uint8_t { Scalar, Avx2, Avx512 };

/// The best ISA this CPU has: Avx512 needs avx512f, avx512bw, avx512vl and avx512dq (and
/// AVX2 and FMA, which every such CPU has); Avx2 needs avx2 and fma. Scalar off x86.
Isa host_isa();

/// The ISA of `cpp.isa` ("auto", "avx512", "avx2" or "scalar") on a CPU whose best is
/// `host`; "auto" is `host`. Asking for more than the host has is a UserError naming both.
Isa choose_isa(std::string_view requested, Isa host);

/// choose_isa(options::get_string("cpp.isa"), host_isa()).
Isa selected_isa();

/// The compiler flags that let generated code use `isa`'s instructions (none for Scalar).
std::vector<std::string> isa_flags(Isa isa);

/// "scalar", "avx2" or "avx512": the spelling of `cpp.isa` and of cache keys.
std::string_view isa_name(Isa isa);

/// Bytes in one vector register of `isa`: 64, 32, or 0 for Scalar (no vectors).
int vector_bytes(Isa isa);

}  // namespace coil
