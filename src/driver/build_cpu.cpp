// The back half for the CPU: plan, generate and build the C++ dialect's translation unit
// (driver/compile.h). Tests: tests/unit/cpp_backend_test.cpp, tests/unit/cpp_plan_test.cpp.
#include <chrono>
#include <iostream>

#include "codegen/cpp/cpp_codegen.h"
#include "driver/compile.h"
#include "runtime/compiler.h"
#include "runtime/isa.h"
#include "support/error.h"
#include "support/options.h"

namespace coil {

CpuBuild build_cpu(const sched::Schedule &s) {
  auto start = std::chrono::steady_clock::now();
  Isa isa = selected_isa();
  codegen::CppOptions o;
  o.vector_bytes = vector_bytes(isa);
  o.profile = options::get_bool("cpp.profile");
  o.prefault = options::get_bool("cpp.prefault");
  int64_t lanes = options::get_int("cpp.vector_lanes");
  COIL_USER_CHECK(lanes == 0 || (lanes >= 2 && lanes <= 64 && (lanes & (lanes - 1)) == 0),
                  "option cpp.vector_lanes is ", lanes, "; expected 0 or a power of two from 2 to 64");
  o.lanes = int(lanes);
  CpuBuild b;
  b.plans = codegen::plan_cpp(s, o, options::get_string("cpp.plan"));
  b.source = codegen::generate_cpp(s, b.plans, o);
  if (options::get_bool("debug")) std::cerr << "coil: generated C++ (" << isa_name(isa) << "):\n" << b.source << "\n";
  SharedObjectRequest r;
  r.source = b.source;
  r.name = "graph";
  r.isa = isa;
  r.precompiled_prelude = true;
  r.flags = {"-lmvec"};  // the vector math functions the prelude declares
  // Kernels that call oneDNN (codegen/cpp/cpp_extern.cpp) include its helpers and link it.
  if (b.source.find("coil_rt::onednn::") != std::string::npos)
    r.flags.insert(r.flags.end(), {"-DCOIL_KERNELS_CALL_ONEDNN", "-ldnnl"});
  b.so_path = build_shared_object(r, &b.cache_hit);
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return b;
}

}  // namespace coil
