// Extern kernels of the C++ dialect: matrix products and convolution, called through a
// library where coil was built with one, else as the plain loops of coil/extern_loops.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/common/writer.h"
#include "ir/kernel.h"

namespace coil::codegen {

/// The body of extern kernel `k`; `names` maps its buffers to the kernel's parameters.
void emit_extern_kernel(const ir::Program &p, const ir::Kernel &k, const std::map<ir::BufferId, std::string> &names, Writer &w);

/// The line of the kernel's layout comment: which library runs the call.
std::string extern_layout(const ir::Program &p, const ir::Kernel &k);

/// `name[offset + idx0*stride0 + ...]` of view `v`, widened to a value (bf16/f16 to float).
std::string strided_element(const ir::Program &p, const ir::View &v, const std::string &name, const std::vector<std::string> &idx);

}  // namespace coil::codegen
