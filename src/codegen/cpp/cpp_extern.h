// Extern kernels of the C++ dialect: matrix products and convolution with their epilogue
// (scheduler/epilogue.h), called through oneDNN with the epilogue as post-ops where coil
// was built with it and oneDNN takes the call (coil/onednn.h), else as the plain loops of
// coil/extern_loops.h with the epilogue applied before each store.
// Tests: tests/unit/onednn_test.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/common/writer.h"
#include "ir/kernel.h"
#include "scheduler/epilogue.h"

namespace coil::codegen {

/// The body of extern kernel `k`; `names` maps its buffers to the kernel's parameters and
/// `symbols` are its size arguments (a oneDNN call makes its primitive per their values).
void emit_extern_kernel(const ir::Program &p, const ir::Kernel &k, const std::map<ir::BufferId, std::string> &names,
                        const std::vector<std::string> &symbols, Writer &w);

/// What runs extern kernel `k`, in words: `oneDNN matmul (post-ops: add p_bias[1, 5],
/// relu)`, or `a plain loop (coil was built without oneDNN)` with the exact reason
/// oneDNN does not take the call (`--explain` prints it for each extern call).
std::string extern_library(const ir::Program &p, const ir::Kernel &k);

/// `name[offset + idx0*stride0 + ...]` of view `v`, widened to a value (bf16/f16 to float).
std::string strided_element(const ir::Program &p, const ir::View &v, const std::string &name, const std::vector<std::string> &idx);

}  // namespace coil::codegen
