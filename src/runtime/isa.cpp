#include "runtime/isa.h"

#include "support/error.h"
#include "support/options.h"

namespace coil {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// F16C is not asked for: every AVX2 CPU has it, and clang 14 cannot test for it.
bool host_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool host_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && host_has_avx2();
}
#else
bool host_has_avx2() { return false; }
bool host_has_avx512() { return false; }
#endif

Isa parse_isa(std::string_view name, Isa host) {
  if (name == "auto") return host;
  if (name == "avx512") return Isa::Avx512;
  if (name == "avx2") return Isa::Avx2;
  if (name == "scalar") return Isa::Scalar;
  throw UserError(str_cat("cpp.isa is '", name, "'; expected auto, avx512, avx2 or scalar"));
}

// "avx2 or scalar": what cpp.isa may be on a host whose best is `host`.
std::string allowed_isas(Isa host) {
  switch (host) {
    case Isa::Scalar: return "auto or scalar";
    case Isa::Avx2: return "auto, avx2 or scalar";
    case Isa::Avx512: return "auto, avx512, avx2 or scalar";
  }
  return "";
}

}  // namespace

Isa host_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // needed when called before static constructors have run
#endif
  if (host_has_avx512()) return Isa::Avx512;
  if (host_has_avx2()) return Isa::Avx2;
  return Isa::Scalar;
}

Isa choose_isa(std::string_view requested, Isa host) {
  Isa isa = parse_isa(requested, host);
  if (isa <= host) return isa;
  throw UserError(str_cat("cpp.isa is ", isa_name(isa), " but this CPU's best is ", isa_name(host),
                          "; set cpp.isa to ", allowed_isas(host)));
}

Isa selected_isa() { return choose_isa(options::get_string("cpp.isa"), host_isa()); }

std::vector<std::string> isa_flags(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return {};
    case Isa::Avx2: return {"-mavx2", "-mfma", "-mf16c"};
    case Isa::Avx512:
      // Without the last flag GCC and clang keep auto-vectorized loops at 256 bits.
      return {"-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2",
              "-mfma",     "-mf16c",     "-mprefer-vector-width=512"};
  }
  return {};
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "";
}

int vector_bytes(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return 0;
    case Isa::Avx2: return 32;
    case Isa::Avx512: return 64;
  }
  return 0;
}

}  // namespace coil
