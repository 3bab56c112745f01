// The C++ dialect (DESIGN.md, decisions 6 and 7): one translation unit per scheduled
// graph, holding a function per kernel and the entry points of coil/artifact.h.
//
//   static void kernel0(const float *__restrict__ in_ptr0, float *__restrict__ out_ptr0, Error &err) {
//   #pragma omp parallel for num_threads(coil_rt::threads_for(16384))
//     for (int64_t x0 = 0; x0 < 64; ++x0) {
//   #pragma omp simd
//       for (int64_t x1 = 0; x1 < 256; ++x1) {
//         float tmp0 = in_ptr0[x0*256 + x1];
//         ...
//
// Values are named tmpN and never computed twice in one loop body; a buffer a kernel
// keeps internal is passed from the member that computes it to the members that read it
// as a tmp. Tests: tests/unit/cpp_backend_test.cpp, tests/golden/.
#pragma once

#include <string>
#include <vector>

#include "scheduler/scheduler.h"

namespace coil::codegen {

struct CppOptions {
  int vector_bytes = 64;  // the ISA's vector register width, 0 for scalar code
  bool profile = false;   // time each kernel call (the option cpp.profile): coil_profile in coil/artifact.h
  bool prefault = true;   // fault in large outputs' pages ahead of the writes (the option cpp.prefault)
  int lanes = 0;          // lanes of a vector; 0: a register of floats (vector_bytes / 4)
};

struct CppKernelPlan;

/// The translation unit of `s`, each kernel printed as its plan says (cpp_plan.h: one
/// plan per kernel, in order).
std::string generate_cpp(const sched::Schedule &s, const std::vector<CppKernelPlan> &plans, const CppOptions &o = {});

/// The same with the dialect's own plans.
std::string generate_cpp(const sched::Schedule &s, const CppOptions &o = {});

}  // namespace coil::codegen
