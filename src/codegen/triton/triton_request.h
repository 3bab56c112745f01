// What the Triton dialect hands to the kernel builder (runtime/triton_build.h): a kernel's
// source, signature, constexprs, warps and stages. Plain data, below both the generator
// that fills it and the runtime that compiles it. Tests: tests/unit/triton_build_test.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace coil {

/// One kernel argument as Triton types it: "*fp32" (a pointer), "i32", "fp32", "constexpr".
struct TritonArg {
  std::string name;
  std::string type;
};

/// The value of a constexpr argument (block sizes mostly).
using TritonConstant = std::variant<int64_t, double, bool>;

struct TritonCompileRequest {
  std::string name;                                 // the @triton.jit function; stem of its files
  std::string source;                               // a Python module defining it, imports included
  std::vector<TritonArg> signature;                 // every argument, in the function's order
  std::map<std::string, TritonConstant> constexprs;  // a value for each "constexpr" argument
  std::vector<std::string> divisible_by_16;         // arguments known to be multiples of 16
  int num_warps = 4;
  int num_stages = 3;
  int capability = 90;  // compute capability: 90 compiles for sm_90a
};

}  // namespace coil
